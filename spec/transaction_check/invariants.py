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
from rocketspec.spec.transaction_check.machine import TRANSITIONS, Bounds
from rocketspec.spec.transaction_check.oracles import consumable, next_check_times, transaction_value
from rocketspec.spec.transaction_check.state import (
    Action,
    CheckPass,
    EndTransactionDelivered,
    TxnState,
    entries_of,
    initial_state,
    resolved,
)
from rocketspec.spec.transaction_check.walk import EVENT_OFFSET_MS, PRODUCER_GROUP, REAL_TOPIC, TICK_MS, Config
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------------
# Invariants.


def _only_committed_reach_real_topic(state: TxnState) -> bool:
    return all(
        state.local[r.msg] is TransactionState.COMMIT_MESSAGE and consumable(r.sys_flag) for r in state.real
    ) and all(0 <= i < len(state.real) for i in state.consumed)


def _real_messages_faithful(state: TxnState) -> bool:
    keeps_tran_msg = not state.cfg.profile.at_least("4.6.1")
    for r in state.real:
        names = {k for k, _ in r.properties}
        sent = state.half[entries_of(state, r.msg)[0]]
        if (r.topic, str(r.queue_id)) != (REAL_TOPIC, sent.real_queue_id) or sent.real_topic != REAL_TOPIC:
            return False
        if transaction_value(r.sys_flag) != TRANSACTION_COMMIT_TYPE:
            return False
        if Property.REAL_TOPIC in names or Property.REAL_QUEUE_ID in names:
            return False
        if (Property.TRANSACTION_PREPARED in names) != keeps_tran_msg:
            return False
        stored = dict(r.stored_properties)
        if (stored.get(Property.REAL_TOPIC), stored.get(Property.PRODUCER_GROUP)) != (REAL_TOPIC, sent.group):
            return False
    return True


def _checks_bounded(state: TxnState) -> bool:
    bound = max(state.cfg.check_max, 1)
    if any(n > bound for n in state.checks_sent):
        return False
    return all(e.check_times is None or e.check_times <= bound for e in state.half)


def _checks_go_to_the_group(state: TxnState) -> bool:
    return all(state.cfg.producers[c.producer] == state.half[c.entry].group for c in state.checks)


def _discarded_message_not_re_appended(state: TxnState) -> bool:
    return all(entries_of(state, state.half[q].msg)[-1] == q for q in state.discarded)


def _half_offset_safe(state: TxnState) -> bool:
    discarded = {state.half[q].msg for q in state.discarded}
    for m in range(state.cfg.messages):
        entries = entries_of(state, m)
        if not entries or m in discarded or resolved(state, m):
            continue
        if entries[-1] < state.half_offset:
            return False
    return True


def _op_offset_safe(state: TxnState) -> bool:
    if not 0 <= state.op_offset <= len(state.ops):
        return False
    return all(op.half_offset < state.half_offset for op in state.ops[:state.op_offset])


def _resolved_at_most_once(state: TxnState) -> bool:
    for m in range(state.cfg.messages):
        if m in state.racy:
            continue
        if state.accepted[m] > 1 or sum(1 for r in state.real if r.msg == m) > 1:
            return False
    return True


def _clock_within_schedule(state: TxnState) -> bool:
    if state.walk is None:
        return state.now <= state.next_pass
    walk = state.walk
    return walk.start <= state.now <= walk.wake and state.half_offset <= walk.offset < len(state.half)


INVARIANTS: tuple[Invariant[TxnState], ...] = (
    Invariant("only committed messages reach the real topic", ("TXN-22", "TXN-3", "TXN-7", "TXN-9", "TXN-21"),
              _only_committed_reach_real_topic),
    Invariant("real messages keep the original topic and queue", ("TXN-8", "TXN-2"), _real_messages_faithful),
    Invariant("checks per message are bounded", ("TXN-23", "TXN-15"), _checks_bounded),
    Invariant("a check goes to a producer of the message's group", ("TXN-19", "TXN-21"), _checks_go_to_the_group),
    Invariant("a discarded message is not re-appended", ("TXN-23", "TXN-16"), _discarded_message_not_re_appended),
    Invariant("the half offset never skips an unresolved message", ("TXN-24", "TXN-17", "TXN-18", "TXN-19"),
              _half_offset_safe),
    Invariant("the op offset never passes a pending op", ("TXN-20", "TXN-13", "TXN-14"), _op_offset_safe),
    Invariant("race-free messages are resolved at most once", ("TXN-25", "TXN-11", "TXN-13", "TXN-14"),
              _resolved_at_most_once),
    Invariant("the clock never runs past a pass or a waiting walk", ("TXN-12", "TXN-26"), _clock_within_schedule),
)


def _delivered(action: Action) -> tuple[int, int] | None:
    """(commitOrRollback, entry) of the END_TRANSACTION ``action`` makes the broker process, if any."""
    if isinstance(action, EndTransactionDelivered):
        return action.request.commit_or_rollback, action.request.tran_state_table_offset
    return None


def _real_only_from_accepted_commit(before: TxnState, action: Action, after: TxnState) -> bool:
    grown = len(after.real) - len(before.real)
    if grown == 0:
        return True
    delivered = _delivered(action)
    return (
        delivered is not None
        and grown == 1
        and delivered[0] == TRANSACTION_COMMIT_TYPE
        and isinstance(action, EndTransactionDelivered)
        and action.request.group == before.half[delivered[1]].group
        and len(after.ops) == len(before.ops) + 1
    )


def _op_names_resolved_entry(before: TxnState, action: Action, after: TxnState) -> bool:
    grown = len(after.ops) - len(before.ops)
    if grown == 0:
        return True
    delivered = _delivered(action)
    return (
        delivered is not None
        and grown == 1
        and after.ops[-1].half_offset == delivered[1]
        and delivered[0] in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE)
    )


def _offsets_monotone(before: TxnState, action: Action, after: TxnState) -> bool:
    return (after.half_offset >= before.half_offset and after.op_offset >= before.op_offset
            and after.now >= before.now)


def _checks_name_new_copies(before: TxnState, action: Action, after: TxnState) -> bool:
    sent = sum(after.checks_sent) - sum(before.checks_sent)
    if sent == 0:
        return True
    if not isinstance(action, CheckPass):
        return False
    new = [c for c in after.checks if c.entry >= len(before.half)]
    if len(new) != sum(1 for t in action.targets if t is not None) or len(action.targets) != sent:
        return False
    for c in new:
        copy = after.half[c.entry]
        source = [e for e in after.half[:c.entry] if e.msg == c.msg][-1]
        if copy.msg != c.msg or copy.born != source.born or copy.stored != after.now:
            return False
        if copy.check_times != next_check_times(source.check_times, before.cfg.check_max):
            return False
    return True


STEP_INVARIANTS: tuple[StepInvariant[TxnState, Action], ...] = (
    StepInvariant("only an accepted COMMIT stores a real message", ("TXN-8", "TXN-9", "TXN-11", "TXN-7"),
                  _real_only_from_accepted_commit),
    StepInvariant("an op names the resolved entry", ("TXN-10", "TXN-9"), _op_names_resolved_entry),
    StepInvariant("half and op offsets and the clock never go back", ("TXN-20", "TXN-12"), _offsets_monotone),
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
    duplicates: int = 0,
    forged: int = 0,
    stale_checks: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
    producers: tuple[str, ...] = (PRODUCER_GROUP,),
    event_offset_ms: int = EVENT_OFFSET_MS,
    lose: bool = False,
    churn: bool = False,
    consume: bool = False,
) -> Model[TxnState, Action]:
    """The transaction machine at small bounds (defaults: 2 messages, checkMax 2, a pass every 1000 ms with a 1000 ms
    timeout, sends in the first ``send_window`` + 1 intervals, passes until ``max_time`` intervals, no duplicated
    request: the duplicates' races are explored by smaller models, ``duplicates=1``). Environment
    actions happen ``event_offset_ms`` into an interval (0: at the pass times, where ages tie with the timeout and
    walks wait, TXN-26)."""
    if immunity is None:
        immunity = (None,) * messages
    cfg = Config(messages, check_max, timeout_ms, TICK_MS, immunity, op_batch, producers, duplicates, forged,
                 stale_checks, 0, profile)
    bounds = Bounds(TICK_MS, event_offset_ms, send_window * TICK_MS + event_offset_ms,
                    max_time * TICK_MS + event_offset_ms, lose, churn, consume)
    return TRANSITIONS.model(
        bounds,
        (
            f"{messages} messages sent by {bounds.send_window_ms} ms, checkMax {check_max}, timeout {timeout_ms} ms, "
            f"a pass every {TICK_MS} ms until {bounds.end_ms} ms, events {event_offset_ms} ms into an interval, "
            f"immunity {immunity}, op batch {op_batch}, producers {producers}, {duplicates} duplicate(s), "
            f"{forged} forged COMMIT(s), {'stale' if stale_checks else 'no stale'} check answers"
            f"{', lost requests' if lose else ''}{', producers come and go' if churn else ''}"
            f"{', consumer' if consume else ''}, RocketMQ {profile}"
        ),
        (initial_state(cfg),),
        INVARIANTS,
        STEP_INVARIANTS,
    )
