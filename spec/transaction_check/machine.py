"""Transaction check: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TypeVar

import attrs

from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.protocol import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_OP_BATCH,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.transaction_check.clauses import CLAUSES
from rocketspec.spec.transaction_check.oracles import (
    STOPS,
    CheckDecision,
    OpScan,
    advance_op_offset,
    check_answer,
    check_decision,
    end_transaction,
    fill_op_remove_map,
    first_end_transaction_type,
    half_message_rewrite,
    next_check_times,
    op_message,
    restore_real_message,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------------
# State machine: one broker, one producer group, a few transactional messages.
#
# Time runs in ticks of TICK_MS, one check interval each (RocketMQ: 60 s, with a 6 s timeout; the model scales
# the timeout and immunity times to its own interval): tick t begins with a check pass at t * TICK_MS, and
# everything else that happens in tick t happens at t * TICK_MS + EVENT_OFFSET_MS. So a message's age at a pass
# is never a whole number of ticks and the timeout and immunity comparisons never tie (a tie only delays the
# check by a millisecond in RocketMQ, see FETCH_MORE_OPS in _check_pass). A pass runs atomically: END_TRANSACTIONs
# land between passes, which makes every op a pass reads born before the pass began (so the last-op clause of
# TXN-19 is false), and a resolution that RocketMQ could see land mid-walk has the same effect here as one that
# lands just after the pass.

PRODUCER_GROUP = "TXN_PRODUCER_GROUP"
FOREIGN_GROUP = "OTHER_PRODUCER_GROUP"
REAL_TOPIC = "TopicTest"
TICK_MS = 1000
EVENT_OFFSET_MS = TICK_MS // 2


@attrs.frozen
class Config:
    """Model parameters: ``messages`` transactional sends, broker settings in ticks, race budgets.

    ``immunity`` gives each message's CHECK_IMMUNITY_TIME_IN_SECONDS (None: absent; with 1 s ticks a value
    is a number of ticks); ``duplicates`` bounds how many END_TRANSACTIONs the network may duplicate and
    ``forged`` how many COMMITs a producer of another group may send naming a half entry. Unless
    ``stale_checks``, a check still unanswered when the next check of the same message goes out is lost (a
    bound: RocketMQ may answer it late, which is the same race as a late END_TRANSACTION from the sender).
    """

    messages: int = 2
    check_max: int = 2
    timeout_ms: int = TICK_MS
    max_time: int = 4
    send_window: int = 1
    immunity: tuple[int | None, ...] = (None, None)
    op_batch: int = TRANSACTION_OP_BATCH
    duplicates: int = 1
    forged: int = 0
    stale_checks: bool = False
    profile: VersionProfile = DEFAULT_PROFILE


@attrs.frozen
class HalfEntry:
    """One entry of the half queue (the original half message or a re-appended copy); times in ms."""

    msg: int
    born: int
    stored: int
    check_times: int | None
    prepared_offset: int | None
    real_topic: str
    real_queue_id: str
    sys_flag: int


@attrs.frozen(order=True)
class EndTxnRequest:
    """An END_TRANSACTION in flight. In the model a half entry's commit-log offset is its half queue offset."""

    group: str
    commit_or_rollback: int
    tran_state_table_offset: int
    commit_log_offset: int
    from_check: bool


@attrs.frozen(order=True)
class CheckRequest:
    """A CHECK_TRANSACTION_STATE in flight to the producer group, naming the re-appended copy ``entry``."""

    msg: int
    entry: int


@attrs.frozen(order=True)
class RealMessage:
    """A message stored in its real topic by a COMMIT."""

    msg: int
    topic: str
    queue_id: int
    sys_flag: int
    properties: tuple[tuple[str, str], ...]


class Phase(enum.IntEnum):
    """Where the original sender is with one message."""

    IDLE = 0
    EXECUTING = 1  # half message stored, local transaction running
    RETURNED = 2  # executeLocalTransaction returned and its END_TRANSACTION went out


@attrs.frozen
class TxnState:
    """Broker, producer and network state, plus ghost counters the invariants read.

    ``ops`` are the half offsets named by the op messages, in op-queue order; ``discarded`` the half offsets
    moved to TRANS_CHECK_MAX_TIME_TOPIC. Ghosts: ``checks_sent`` and ``accepted`` (END_TRANSACTIONs answered
    SUCCESS) per message, and ``racy``, the messages one of whose END_TRANSACTIONs was duplicated or named an
    entry that a later copy had superseded when it was accepted (TXN-25).
    """

    cfg: Config
    now: int = 0
    phase: tuple[Phase, ...] = ()
    local: tuple[TransactionState | None, ...] = ()
    half: tuple[HalfEntry, ...] = ()
    ops: tuple[int, ...] = ()
    half_offset: int = 0
    op_offset: int = 0
    real: tuple[RealMessage, ...] = ()
    discarded: tuple[int, ...] = ()
    checks: tuple[CheckRequest, ...] = ()
    requests: tuple[EndTxnRequest, ...] = ()
    duplicates_left: int = 0
    forged_left: int = 0
    checks_sent: tuple[int, ...] = ()
    accepted: tuple[int, ...] = ()
    racy: frozenset[int] = frozenset()


@attrs.frozen
class SendHalf:
    """The producer sends message ``msg`` as a half message (stored at once)."""

    msg: int


@attrs.frozen
class LocalTransactionEnds:
    """executeLocalTransaction returns ``state`` for ``msg`` and the sender's END_TRANSACTION goes out.

    A COMMIT or ROLLBACK is final; after UNKNOW the local transaction decides later (:class:`LocalDecides`).
    A local commit that checks can see before the sender's END_TRANSACTION is sent is the same, for the
    broker, as that END_TRANSACTION being delivered late.
    """

    msg: int
    state: TransactionState


@attrs.frozen
class LocalDecides:
    """A local transaction that returned UNKNOW commits or rolls back; its state never changes again."""

    msg: int
    state: TransactionState


@attrs.frozen
class Tick:
    """A check interval passes: the clock moves to the next tick and the check service runs a pass."""


@attrs.frozen
class ProducerAnswers:
    """A producer of the group answers ``check`` from its local state and the broker processes the answer.

    Answering later is the same as answering at once and the END_TRANSACTION arriving late, since a local
    state only ever goes from undecided to final. ``twice``: the network duplicated the answer.
    """

    check: CheckRequest
    twice: bool = False


@attrs.frozen
class EndTransactionDelivered:
    """The broker processes ``request``; ``twice``: the network duplicated it and the copy follows at once.

    When the copy arrives does not matter to the broker: it finds the same half entry whenever it comes.
    """

    request: EndTxnRequest
    twice: bool = False


@attrs.frozen
class ForgedEndTransaction:
    """A producer of another group sends a COMMIT naming half entry ``entry``."""

    entry: int


Action = (
    SendHalf
    | LocalTransactionEnds
    | LocalDecides
    | Tick
    | ProducerAnswers
    | EndTransactionDelivered
    | ForgedEndTransaction
)


def initial_state(cfg: Config) -> TxnState:
    """Nothing sent yet."""
    n = cfg.messages
    return TxnState(
        cfg=cfg,
        phase=(Phase.IDLE,) * n,
        local=(None,) * n,
        duplicates_left=cfg.duplicates,
        forged_left=cfg.forged,
        checks_sent=(0,) * n,
        accepted=(0,) * n,
    )


T = TypeVar("T")


def _set(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    return (*t[:i], v, *t[i + 1:])


def _remove_one(t: tuple[T, ...], item: T) -> tuple[T, ...]:
    i = t.index(item)
    return (*t[:i], *t[i + 1:])


def _entries_of(state: TxnState, msg: int) -> list[int]:
    return [q for q, e in enumerate(state.half) if e.msg == msg]


def _resolved(state: TxnState, msg: int) -> bool:
    entries = set(_entries_of(state, msg))
    return any(q in entries for q in state.ops)


def _half_properties(entry: HalfEntry) -> tuple[tuple[str, str], ...]:
    props = [
        (Property.TRANSACTION_PREPARED, "true"),
        (Property.PRODUCER_GROUP, PRODUCER_GROUP),
        (Property.REAL_TOPIC, entry.real_topic),
        (Property.REAL_QUEUE_ID, entry.real_queue_id),
    ]
    if entry.check_times is not None:
        props.append((Property.TRANSACTION_CHECK_TIMES, str(entry.check_times)))
    return tuple(props)


@CLAUSES.oracle("TXN-4", "TXN-12", "TXN-21")
def enabled(state: TxnState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state`` (TXN-4, TXN-12, TXN-21).

    Messages are sent in index order within the first ``send_window`` ticks; a local transaction returns once
    and decides at most once (TXN-4); time ends at ``max_time`` ticks, one check pass each (TXN-12); a producer
    answers only checks that were sent, in any order and as late as it likes (TXN-21).
    """
    match action:
        case SendHalf(msg=m):
            return (
                state.phase[m] == Phase.IDLE
                and all(p != Phase.IDLE for p in state.phase[:m])
                and state.now <= state.cfg.send_window
            )
        case LocalTransactionEnds(msg=m):
            return state.phase[m] == Phase.EXECUTING
        case LocalDecides(msg=m, state=s):
            return (
                state.phase[m] == Phase.RETURNED
                and state.local[m] is None
                and s in (TransactionState.COMMIT_MESSAGE, TransactionState.ROLLBACK_MESSAGE)
            )
        case Tick():
            return state.now < state.cfg.max_time
        case ProducerAnswers(check=c, twice=twice):
            return c in state.checks and (not twice or state.duplicates_left > 0)
        case EndTransactionDelivered(request=r, twice=twice):
            return r in state.requests and (not twice or state.duplicates_left > 0)
        case ForgedEndTransaction(entry=q):
            return state.forged_left > 0 and 0 <= q < len(state.half)
    return False


def _deliver(state: TxnState, request: EndTxnRequest) -> TxnState:
    q = request.commit_log_offset
    entry = state.half[q] if 0 <= q < len(state.half) else None
    outcome = end_transaction(
        request.commit_or_rollback,
        request.group,
        request.tran_state_table_offset,
        request.commit_log_offset,
        found=entry is not None,
        stored_group=PRODUCER_GROUP,
        stored_queue_offset=q,
        stored_commit_log_offset=q,
        from_transaction_check=request.from_check,
    )
    if entry is None or outcome.response != ResponseCode.SUCCESS:
        return state
    m = entry.msg
    if outcome.stores_real:
        restored = restore_real_message(_half_properties(entry), entry.sys_flag, state.cfg.profile)
        real = RealMessage(m, restored.topic, restored.queue_id, restored.sys_flag, restored.properties)
        state = attrs.evolve(state, real=tuple(sorted((*state.real, real))))
    if outcome.writes_op:
        state = attrs.evolve(state, ops=(*state.ops, int(op_message(0, q).body)))
    superseded = q != _entries_of(state, m)[-1]
    return attrs.evolve(
        state,
        accepted=_set(state.accepted, m, state.accepted[m] + 1),
        racy=state.racy | {m} if superseded else state.racy,
    )


def _deliver_maybe_twice(state: TxnState, request: EndTxnRequest, twice: bool) -> TxnState:
    state = _deliver(state, request)
    if not twice:
        return state
    state = _deliver(state, request)
    q = request.commit_log_offset
    racy = state.racy | {state.half[q].msg} if 0 <= q < len(state.half) else state.racy
    return attrs.evolve(state, duplicates_left=state.duplicates_left - 1, racy=racy)


def _read_ops(state: TxnState, scan: OpScan, op_from: int, mini_offset: int) -> tuple[OpScan, int, bool]:
    """fillOpRemoveMap over one batch from ``op_from``: the new scan, the next op offset, whether it was empty."""
    batch = state.ops[op_from:op_from + state.cfg.op_batch]
    if not batch:
        # NO_NEW_MSG: no message list, and the next begin offset stays where it was.
        return scan, op_from, True
    pairs = tuple((op_from + k, q) for k, q in enumerate(batch))
    return fill_op_remove_map(scan, pairs, mini_offset), op_from + len(batch), False


def _take_done(scan: OpScan, half_offset: int, count_done: bool) -> OpScan:
    remove = dict(scan.remove)
    op_offset = remove.pop(half_offset)
    done = tuple(sorted((*scan.done, op_offset))) if count_done else scan.done
    return OpScan(tuple(sorted(remove.items())), done)


def _check_pass(state: TxnState) -> TxnState:
    """One pass of TransactionalMessageServiceImpl.check over the half queue, at the start of the current tick."""
    cfg = state.cfg
    start = state.now * TICK_MS
    now_ms = start
    half = list(state.half)
    discarded = list(state.discarded)
    checks = list(state.checks)
    checks_sent = list(state.checks_sent)
    scan, op_next, ops_empty = _read_ops(state, OpScan(), state.op_offset, state.half_offset)
    i = state.half_offset
    while i < len(half):  # past the end: NO_NEW_MSG ends the walk
        entry = half[i]
        remove = dict(scan.remove)
        decision = check_decision(
            now=now_ms,
            pass_start=start,
            born=entry.born,
            stored=entry.stored,
            in_remove_map=i in remove,
            check_times=entry.check_times,
            immunity_seconds=cfg.immunity[entry.msg],
            prepared_offset=entry.prepared_offset,
            prepared_in_remove_map=entry.prepared_offset in remove,
            ops_empty=ops_empty,
            # Every op was born before this atomic pass began, so any such value gives the same decision.
            last_op_born=start,
            check_max=cfg.check_max,
            transaction_timeout=cfg.timeout_ms,
        )
        if decision in STOPS:
            break
        if decision is CheckDecision.FETCH_MORE_OPS:
            was_empty, op_before = ops_empty, op_next
            scan, op_next, ops_empty = _read_ops(state, scan, op_next, state.half_offset)
            if was_empty and ops_empty and op_next == op_before:
                # Nothing new to read: RocketMQ spins on this offset until the clock moves on.
                now_ms += 1
            continue
        if decision is CheckDecision.SKIP_DONE:
            scan = _take_done(scan, i, cfg.profile.at_least("4.6.0"))
        elif decision is CheckDecision.IMMUNITY_DONE:
            assert entry.prepared_offset is not None
            scan = _take_done(scan, entry.prepared_offset, True)
        elif decision is CheckDecision.DISCARD:
            discarded.append(i)
        else:
            # CHECK or IMMUNITY_PUT_BACK (RETRY needs a failing store, which the model does not have).
            prepared = entry.prepared_offset
            if decision is CheckDecision.IMMUNITY_PUT_BACK and prepared is None:
                prepared = i
            half.append(attrs.evolve(
                entry, stored=now_ms, check_times=next_check_times(entry.check_times, cfg.check_max),
                prepared_offset=prepared,
            ))
            if decision is CheckDecision.CHECK:
                if not cfg.stale_checks:
                    checks = [c for c in checks if c.msg != entry.msg]
                checks.append(CheckRequest(entry.msg, len(half) - 1))
                checks_sent[entry.msg] += 1
        i += 1
    return attrs.evolve(
        state,
        half=tuple(half),
        discarded=tuple(discarded),
        checks=tuple(sorted(checks)),
        checks_sent=tuple(checks_sent),
        half_offset=i,
        op_offset=advance_op_offset(state.op_offset, scan.done),
    )


@CLAUSES.oracle(
    "TXN-2", "TXN-4", "TXN-8", "TXN-9", "TXN-10", "TXN-11", "TXN-13", "TXN-14", "TXN-17", "TXN-19", "TXN-20",
    "TXN-21",
)
def step(state: TxnState, action: Action) -> TxnState:
    """The state after ``action`` (enabled in ``state``).

    Sending stores the rewritten half message (TXN-2); the sender's END_TRANSACTION names the original entry
    (TXN-4); delivery applies :func:`end_transaction`, storing the restored real message (TXN-8) and the op
    (TXN-9, TXN-10), with no memory of earlier resolutions (TXN-11); a pass reads op batches (TXN-13), walks
    the half queue with :func:`check_decision` (TXN-14, TXN-17, TXN-19) and commits both offsets (TXN-20);
    the producer answers a check about the copy it names (TXN-21).
    """
    require_enabled(enabled, state, action, Action)
    match action:
        case SendHalf(msg=m):
            rewrite = half_message_rewrite(REAL_TOPIC, m, TRANSACTION_PREPARED_TYPE)
            now_ms = state.now * TICK_MS + EVENT_OFFSET_MS
            entry = HalfEntry(
                m, now_ms, now_ms, None, None, rewrite.real_topic, rewrite.real_queue_id, rewrite.sys_flag
            )
            return attrs.evolve(state, half=(*state.half, entry), phase=_set(state.phase, m, Phase.EXECUTING))
        case LocalTransactionEnds(msg=m, state=s):
            kind = first_end_transaction_type(SendStatus.SEND_OK, s)
            local = None if s is TransactionState.UNKNOW else s
            state = attrs.evolve(state, phase=_set(state.phase, m, Phase.RETURNED), local=_set(state.local, m, local))
            if kind == TRANSACTION_NOT_TYPE:
                # The broker ignores UNKNOW (TXN-6): sending it or not leaves the same state.
                return state
            q = _entries_of(state, m)[0]
            request = EndTxnRequest(PRODUCER_GROUP, kind, q, q, False)
            return attrs.evolve(state, requests=tuple(sorted((*state.requests, request))))
        case LocalDecides(msg=m, state=s):
            return attrs.evolve(state, local=_set(state.local, m, s))
        case Tick():
            return _check_pass(attrs.evolve(state, now=state.now + 1))
        case ProducerAnswers(check=c, twice=twice):
            state = attrs.evolve(state, checks=_remove_one(state.checks, c))
            answer = check_answer(state.local[c.msg] or TransactionState.UNKNOW)
            if answer not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
                return state
            return _deliver_maybe_twice(state, EndTxnRequest(PRODUCER_GROUP, answer, c.entry, c.entry, True), twice)
        case EndTransactionDelivered(request=r, twice=twice):
            return _deliver_maybe_twice(attrs.evolve(state, requests=_remove_one(state.requests, r)), r, twice)
        case ForgedEndTransaction(entry=q):
            request = EndTxnRequest(FOREIGN_GROUP, TRANSACTION_COMMIT_TYPE, q, q, False)
            return attrs.evolve(
                state, requests=tuple(sorted((*state.requests, request))), forged_left=state.forged_left - 1
            )
    raise ValueError(f"unknown action {action!r}")


def candidate_actions(state: TxnState) -> Iterable[Action]:
    """Every action that may be enabled in ``state``."""
    for m in range(state.cfg.messages):
        yield SendHalf(m)
        for s in TransactionState:
            yield LocalTransactionEnds(m, s)
        yield LocalDecides(m, TransactionState.COMMIT_MESSAGE)
        yield LocalDecides(m, TransactionState.ROLLBACK_MESSAGE)
    yield Tick()
    for c in sorted(set(state.checks)):
        yield ProducerAnswers(c)
        yield ProducerAnswers(c, twice=True)
    for r in sorted(set(state.requests)):
        yield EndTransactionDelivered(r)
        yield EndTransactionDelivered(r, twice=True)
    for q in range(len(state.half)):
        yield ForgedEndTransaction(q)
