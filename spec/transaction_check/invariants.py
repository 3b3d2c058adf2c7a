"""Transaction check: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_OP_BATCH,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
    TransactionState,
)
from rocketspec.spec.transaction_check.machine import (
    PRODUCER_GROUP,
    REAL_TOPIC,
    TICK_MS,
    Action,
    Config,
    EndTransactionDelivered,
    EndTxnRequest,
    ProducerAnswers,
    Tick,
    TxnState,
    _entries_of,
    _resolved,
    candidate_actions,
    enabled,
    initial_state,
    step,
)
from rocketspec.spec.transaction_check.oracles import check_answer, consumable, next_check_times, transaction_value
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------------
# Invariants.


def _only_committed_reach_real_topic(state: TxnState) -> bool:
    return all(
        state.local[r.msg] is TransactionState.COMMIT_MESSAGE and consumable(r.sys_flag) for r in state.real
    )


def _real_messages_faithful(state: TxnState) -> bool:
    keeps_tran_msg = not state.cfg.profile.at_least("4.6.1")
    for r in state.real:
        names = {k for k, _ in r.properties}
        if (r.topic, r.queue_id) != (REAL_TOPIC, r.msg):
            return False
        if transaction_value(r.sys_flag) != TRANSACTION_COMMIT_TYPE:
            return False
        if Property.REAL_TOPIC in names or Property.REAL_QUEUE_ID in names:
            return False
        if (Property.TRANSACTION_PREPARED in names) != keeps_tran_msg:
            return False
    return True


def _checks_bounded(state: TxnState) -> bool:
    bound = max(state.cfg.check_max, 1)
    if any(n > bound for n in state.checks_sent):
        return False
    return all(e.check_times is None or e.check_times <= bound for e in state.half)


def _discarded_message_not_re_appended(state: TxnState) -> bool:
    return all(_entries_of(state, state.half[q].msg)[-1] == q for q in state.discarded)


def _half_offset_safe(state: TxnState) -> bool:
    discarded = {state.half[q].msg for q in state.discarded}
    for m in range(state.cfg.messages):
        entries = _entries_of(state, m)
        if not entries or m in discarded or _resolved(state, m):
            continue
        if entries[-1] < state.half_offset:
            return False
    return True


def _op_offset_safe(state: TxnState) -> bool:
    if not 0 <= state.op_offset <= len(state.ops):
        return False
    return all(q < state.half_offset for q in state.ops[:state.op_offset])


def _resolved_at_most_once(state: TxnState) -> bool:
    for m in range(state.cfg.messages):
        if m in state.racy:
            continue
        if state.accepted[m] > 1 or sum(1 for r in state.real if r.msg == m) > 1:
            return False
    return True


INVARIANTS: tuple[Invariant[TxnState], ...] = (
    Invariant("only committed messages reach the real topic", ("TXN-22", "TXN-3", "TXN-7", "TXN-9", "TXN-21"),
              _only_committed_reach_real_topic),
    Invariant("real messages keep the original topic and queue", ("TXN-8", "TXN-2"), _real_messages_faithful),
    Invariant("checks per message are bounded", ("TXN-23", "TXN-15"), _checks_bounded),
    Invariant("a discarded message is not re-appended", ("TXN-23", "TXN-16"), _discarded_message_not_re_appended),
    Invariant("the half offset never skips an unresolved message", ("TXN-24", "TXN-17", "TXN-18", "TXN-19"),
              _half_offset_safe),
    Invariant("the op offset never passes a pending op", ("TXN-20", "TXN-13", "TXN-14"), _op_offset_safe),
    Invariant("race-free messages are resolved at most once", ("TXN-25", "TXN-11", "TXN-13", "TXN-14"),
              _resolved_at_most_once),
)


def _delivered(before: TxnState, action: Action) -> tuple[EndTxnRequest | None, int]:
    """The END_TRANSACTION ``action`` makes the broker process, and how many times."""
    match action:
        case EndTransactionDelivered(request=r, twice=twice):
            return r, 2 if twice else 1
        case ProducerAnswers(check=c, twice=twice):
            kind = check_answer(before.local[c.msg] or TransactionState.UNKNOW)
            if kind in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
                return EndTxnRequest(PRODUCER_GROUP, kind, c.entry, c.entry, True), 2 if twice else 1
    return None, 0


def _real_only_from_accepted_commit(before: TxnState, action: Action, after: TxnState) -> bool:
    grown = len(after.real) - len(before.real)
    if grown == 0:
        return True
    request, times = _delivered(before, action)
    return (
        request is not None
        and grown == times
        and request.commit_or_rollback == TRANSACTION_COMMIT_TYPE
        and request.group == PRODUCER_GROUP
        and len(after.ops) == len(before.ops) + times
    )


def _op_names_resolved_entry(before: TxnState, action: Action, after: TxnState) -> bool:
    grown = len(after.ops) - len(before.ops)
    if grown == 0:
        return True
    request, times = _delivered(before, action)
    return (
        request is not None
        and grown == times
        and all(q == request.tran_state_table_offset for q in after.ops[-grown:])
        and request.commit_or_rollback in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE)
    )


def _offsets_monotone(before: TxnState, action: Action, after: TxnState) -> bool:
    return after.half_offset >= before.half_offset and after.op_offset >= before.op_offset


def _checks_name_new_copies(before: TxnState, action: Action, after: TxnState) -> bool:
    sent = sum(after.checks_sent) - sum(before.checks_sent)
    if sent == 0:
        return True
    if not isinstance(action, Tick):
        return False
    new = [c for c in after.checks if c.entry >= len(before.half)]
    if len(new) != sent:
        return False
    for c in new:
        copy = after.half[c.entry]
        sources = [e for e in after.half[:c.entry] if e.msg == c.msg]
        source = sources[-1]
        if copy.msg != c.msg or copy.born != source.born:
            return False
        if copy.check_times != next_check_times(source.check_times, before.cfg.check_max):
            return False
    return True


STEP_INVARIANTS: tuple[StepInvariant[TxnState, Action], ...] = (
    StepInvariant("only an accepted COMMIT stores a real message", ("TXN-8", "TXN-9", "TXN-11", "TXN-7"),
                  _real_only_from_accepted_commit),
    StepInvariant("an op names the resolved entry", ("TXN-10", "TXN-9"), _op_names_resolved_entry),
    StepInvariant("half and op offsets never go back", ("TXN-20",), _offsets_monotone),
    StepInvariant("a check names a fresh copy with the next count", ("TXN-19", "TXN-15", "TXN-21"),
                  _checks_name_new_copies),
)


def model(
    messages: int = 2,
    check_max: int = 2,
    timeout_ms: int = TICK_MS,
    max_time: int = 4,
    send_window: int = 1,
    immunity: tuple[int | None, ...] | None = None,
    op_batch: int = TRANSACTION_OP_BATCH,
    duplicates: int = 1,
    forged: int = 0,
    stale_checks: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> Model[TxnState, Action]:
    """The transaction machine at small bounds (defaults: 2 messages, checkMax 2, timeout 1 tick, 4 ticks)."""
    if immunity is None:
        immunity = (None,) * messages
    cfg = Config(
        messages, check_max, timeout_ms, max_time, send_window, immunity, op_batch, duplicates, forged,
        stale_checks, profile,
    )
    return Model(
        area="transaction_check",
        bounds=(
            f"{messages} messages sent by tick {send_window}, checkMax {check_max}, timeout {timeout_ms} ms, "
            f"{max_time} ticks of {TICK_MS} ms, "
            f"immunity {immunity}, op batch {op_batch}, {duplicates} duplicate(s), {forged} forged COMMIT(s), "
            f"{'stale' if stale_checks else 'no stale'} check answers, RocketMQ {profile}"
        ),
        initial=(initial_state(cfg),),
        actions=candidate_actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
