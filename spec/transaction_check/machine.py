"""Transaction check: the state machine: frozen state, actions and the transition table.

One broker, its producers (each of a producer group) and a few transactional messages, on the broker's clock in
milliseconds. The check service runs a pass ``interval_ms`` after the previous one ended (the first one after the
broker started); a pass runs its walk (``walk.run_walk``) at once, except where it must wait for more op messages
(TXN-26): then it is suspended, and END_TRANSACTIONs that land meanwhile land during the pass. Everything the
network does to a request is an action of its own: an END_TRANSACTION in flight is delivered, lost or duplicated
(and a delayed one is simply delivered later); a check in flight reaches its producer or, once that producer has
left, is lost. Producers register with the broker (their heartbeat) and leave it; the consumer of the real topic
receives what COMMITs stored there.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

import attrs

from rocketspec.spec.protocol import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.transaction_check.clauses import CLAUSES
from rocketspec.spec.transaction_check.oracles import (
    check_answer,
    end_transaction,
    first_end_transaction_type,
    half_message_rewrite,
    op_message,
    restore_real_message,
)
from rocketspec.spec.transaction_check.state import (
    Action,
    CheckLost,
    CheckPass,
    ConsumerReceives,
    EndTransactionDelivered,
    EndTransactionDuplicated,
    EndTransactionLost,
    ForgedEndTransaction,
    LocalDecides,
    LocalTransactionEnds,
    ProducerAnswers,
    ProducerLeaves,
    ProducerRegisters,
    SendHalf,
    TimePasses,
    TxnState,
    add_sorted,
    entries_of,
    live_of,
    pending_walk,
    remove_one,
    set_at,
    targets_fit,
    walk_due,
)
from rocketspec.spec.transaction_check.walk import (
    EVENT_OFFSET_MS,
    REAL_TOPIC,
    TICK_MS,
    CheckRequest,
    EndTxnRequest,
    HalfEntry,
    OpEntry,
    Phase,
    RealMessage,
    answer_allowed,
    committed_op_offset,
    half_properties,
)
from rocketspec.spec.transitions import Transition, TransitionTable

# ---------------------------------------------------------------------------------------------------------------
# Guards.


def _send_enabled(state: TxnState, action: SendHalf) -> bool:
    m = action.msg
    return (0 <= m < state.cfg.messages and state.phase[m] == Phase.IDLE
            and all(p != Phase.IDLE for p in state.phase[:m]) and 0 <= action.producer < len(state.cfg.producers)
            and action.queue_id >= 0)


def _local_ends_enabled(state: TxnState, action: LocalTransactionEnds) -> bool:
    ran = action.status is SendStatus.SEND_OK
    return (0 <= action.msg < state.cfg.messages and state.phase[action.msg] == Phase.EXECUTING
            and (ran or (action.state is None and not action.raised)))


def _local_decides_enabled(state: TxnState, action: LocalDecides) -> bool:
    m = action.msg
    return (0 <= m < state.cfg.messages and state.phase[m] == Phase.RETURNED and state.local[m] is None
            and action.state in (TransactionState.COMMIT_MESSAGE, TransactionState.ROLLBACK_MESSAGE))


def _time_enabled(state: TxnState, action: TimePasses) -> bool:
    if action.ms <= 0:
        return False
    if state.walk is None:
        return state.now + action.ms <= state.next_pass
    return not walk_due(state) and state.now + action.ms <= state.walk.wake


def _pass_enabled(state: TxnState, action: CheckPass) -> bool:
    return walk_due(state) and targets_fit(state, pending_walk(state), action.targets)


def _answers_enabled(state: TxnState, action: ProducerAnswers) -> bool:
    c = action.check
    return c in state.checks and c.producer in state.live and answer_allowed(state.local[c.msg], action.state,
                                                                            action.raised)


def _lost_check_enabled(state: TxnState, action: CheckLost) -> bool:
    return action.check in state.checks and action.check.producer not in state.live


def _ignored(request: EndTxnRequest) -> bool:
    """An UNKNOW END_TRANSACTION: the broker does nothing with it (TXN-6), so none is tracked in flight."""
    return request.commit_or_rollback == TRANSACTION_NOT_TYPE and not request.forged


def _in_flight(state: TxnState, action: EndTransactionDelivered | EndTransactionLost) -> bool:
    return action.request in state.requests or _ignored(action.request)


def _duplicated_enabled(state: TxnState, action: EndTransactionDuplicated) -> bool:
    return _ignored(action.request) or (action.request in state.requests and state.duplicates_left > 0)


def _refused(state: TxnState, request: EndTxnRequest) -> bool:
    """Whether the broker must refuse ``request``: a commitOrRollback none of UNKNOW, COMMIT, ROLLBACK (TXN-6), no
    such entry, another group, the wrong queue offset (TXN-7)."""
    if request.commit_or_rollback not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        return True
    q = request.commit_log_offset
    if not 0 <= q < len(state.half):
        return True
    return state.half[q].group != request.group or request.tran_state_table_offset != q


def _forged_enabled(state: TxnState, action: ForgedEndTransaction) -> bool:
    return state.forged_left > 0 and action.entry >= -1 and _refused(state, action.request)


def _registers_enabled(state: TxnState, action: ProducerRegisters) -> bool:
    return 0 <= action.producer < len(state.cfg.producers) and action.producer not in state.live


def _leaves_enabled(state: TxnState, action: ProducerLeaves) -> bool:
    return action.producer in state.live


def _receives_enabled(state: TxnState, action: ConsumerReceives) -> bool:
    return 0 <= action.index < len(state.real) and action.index not in state.consumed


# ---------------------------------------------------------------------------------------------------------------
# Effects.


def _send(state: TxnState, action: SendHalf) -> TxnState:
    """The half message is stored with its real topic and queue recorded and its transaction bits reset, PGROUP the
    sender's group (TXN-2); its local transaction starts."""
    m = action.msg
    rewrite = half_message_rewrite(REAL_TOPIC, action.queue_id, TRANSACTION_PREPARED_TYPE)
    entry = HalfEntry(m, state.now - action.transit_ms, state.now, None, None, rewrite.real_topic,
                      rewrite.real_queue_id, rewrite.sys_flag, state.cfg.producers[action.producer], action.immunity)
    return attrs.evolve(state, half=(*state.half, entry), phase=set_at(state.phase, m, Phase.EXECUTING))


def _local_ends(state: TxnState, action: LocalTransactionEnds) -> TxnState:
    """The sender's END_TRANSACTION names the original entry with the local transaction's answer: COMMIT, ROLLBACK,
    or UNKNOW for anything else, null and an exception included; a half message stored with another status than
    SEND_OK is rolled back (TXN-4)."""
    m = action.msg
    kind = first_end_transaction_type(action.status, action.state, action.raised)
    decided = action.state in (TransactionState.COMMIT_MESSAGE, TransactionState.ROLLBACK_MESSAGE)
    local = action.state if decided and not action.raised else None
    state = attrs.evolve(state, phase=set_at(state.phase, m, Phase.RETURNED), local=set_at(state.local, m, local))
    if kind == TRANSACTION_NOT_TYPE:
        # The broker ignores UNKNOW (TXN-6): the request is not tracked, its delivery (at any time) is a no-op.
        return state
    q = entries_of(state, m)[0]
    request = EndTxnRequest(state.half[q].group, kind, q, q, False)
    return attrs.evolve(state, requests=add_sorted(state.requests, request))


def _local_decides(state: TxnState, action: LocalDecides) -> TxnState:
    """An undecided local transaction decides, for good: checks answer it from now on (TXN-21)."""
    return attrs.evolve(state, local=set_at(state.local, action.msg, action.state))


def _time(state: TxnState, action: TimePasses) -> TxnState:
    """The clock moves, never past the next pass or the moment a waiting walk goes on (TXN-12, TXN-26)."""
    return attrs.evolve(state, now=state.now + action.ms)


def _pass(state: TxnState, action: CheckPass) -> TxnState:
    """The walk runs: a pass begins now (reading the half and op offsets of CID_RMQ_SYS_TRANS), or the waiting one
    goes on by reading the next op batch (TXN-12, TXN-13, TXN-26). It decides at each half offset (TXN-14, TXN-15,
    TXN-16, TXN-17, TXN-18, TXN-19): each check re-appends the message with its next count and goes to the producer
    the action names, one of the group's registered producers (none: no check, the count is spent all the same,
    TXN-19, TXN-23). Once the walk
    ends, the half offset and the op offset are committed (TXN-20) and the next pass begins one interval later
    (TXN-26); a walk that must wait for op messages is suspended instead (TXN-26)."""
    outcome = pending_walk(state)
    checks = list(state.checks)
    checks_sent = list(state.checks_sent)
    for (msg, entry, _group), target in zip(outcome.checks, action.targets, strict=True):
        checks_sent[msg] += 1
        if target is None:
            continue
        if not state.cfg.stale_checks:
            checks = [c for c in checks if c.msg != msg]
        checks.append(CheckRequest(msg, entry, target))
    state = attrs.evolve(state, half=outcome.half, discarded=outcome.discarded, checks=tuple(sorted(checks)),
                         checks_sent=tuple(checks_sent))
    if outcome.waiting is not None:
        return attrs.evolve(state, walk=outcome.waiting)
    return attrs.evolve(state, walk=None, half_offset=outcome.offset,
                        op_offset=committed_op_offset(state.op_offset, outcome.scan),
                        next_pass=state.now + state.cfg.interval_ms)


def _answers(state: TxnState, action: ProducerAnswers) -> TxnState:
    """The producer answers the check from its local state with an END_TRANSACTION (fromTransactionCheck) naming the
    copy the check named and its own group; a null answer sends nothing (TXN-21)."""
    c = action.check
    state = attrs.evolve(state, checks=remove_one(state.checks, c))
    kind = check_answer(action.state, action.raised)
    if kind is None or kind == TRANSACTION_NOT_TYPE:
        # Nothing sent, or an UNKNOW the broker ignores (TXN-6, not tracked).
        return state
    request = EndTxnRequest(state.cfg.producers[c.producer], kind, c.entry, c.entry, True)
    return attrs.evolve(state, requests=add_sorted(state.requests, request))


def _check_lost(state: TxnState, action: CheckLost) -> TxnState:
    """A check to a producer that left is lost: only a later check asks again (TXN-19)."""
    return attrs.evolve(state, checks=remove_one(state.checks, action.check))


def _deliver(state: TxnState, request: EndTxnRequest) -> TxnState:
    q = request.commit_log_offset
    entry = state.half[q] if 0 <= q < len(state.half) else None
    outcome = end_transaction(
        request.commit_or_rollback,
        request.group,
        request.tran_state_table_offset,
        request.commit_log_offset,
        found=entry is not None,
        stored_group=entry.group if entry is not None else "",
        stored_queue_offset=q,
        stored_commit_log_offset=q,
        from_transaction_check=request.from_check,
    )
    if entry is None or outcome.response != ResponseCode.SUCCESS:
        return state
    m = entry.msg
    if outcome.stores_real:
        stored = half_properties(entry)
        restored = restore_real_message(stored, entry.sys_flag, state.cfg.profile)
        real = RealMessage(m, restored.topic, restored.queue_id, restored.sys_flag, restored.properties, stored)
        state = attrs.evolve(state, real=(*state.real, real))
    if outcome.writes_op:
        state = attrs.evolve(state, ops=(*state.ops, OpEntry(int(op_message(0, q).body), state.now)))
    racy = q != entries_of(state, m)[-1] or state.walk is not None
    return attrs.evolve(
        state,
        accepted=set_at(state.accepted, m, state.accepted[m] + 1),
        racy=state.racy | {m} if racy else state.racy,
    )


def _delivered(state: TxnState, action: EndTransactionDelivered) -> TxnState:
    """The broker applies :func:`end_transaction` to the half entry at the request's commit-log offset: a COMMIT
    stores the restored real message (TXN-8) and the op, a ROLLBACK the op only (TXN-9, TXN-10), UNKNOW nothing
    (TXN-6), a request that does not match the entry nothing (TXN-7); nothing remembers earlier resolutions
    (TXN-11)."""
    if _ignored(action.request):
        return state
    return _deliver(attrs.evolve(state, requests=remove_one(state.requests, action.request)), action.request)


def _lost(state: TxnState, action: EndTransactionLost) -> TxnState:
    """A lost END_TRANSACTION changes nothing at the broker: the message waits for a check (TXN-11, TXN-19)."""
    if _ignored(action.request):
        return state
    return attrs.evolve(state, requests=remove_one(state.requests, action.request))


def _duplicated(state: TxnState, action: EndTransactionDuplicated) -> TxnState:
    """A second copy of the request is in flight; the broker may apply both (TXN-11)."""
    if _ignored(action.request):
        return state
    q = action.request.commit_log_offset
    racy = state.racy | {state.half[q].msg} if 0 <= q < len(state.half) else state.racy
    return attrs.evolve(state, requests=add_sorted(state.requests, action.request),
                        duplicates_left=state.duplicates_left - 1, racy=racy)


def _forged(state: TxnState, action: ForgedEndTransaction) -> TxnState:
    """A request the broker must refuse by its commitOrRollback (TXN-6), producer group or offsets (TXN-7) is in
    flight; nothing at the broker remembers it (TXN-11)."""
    return attrs.evolve(state, requests=add_sorted(state.requests, action.request), forged_left=state.forged_left - 1)


def _registers(state: TxnState, action: ProducerRegisters) -> TxnState:
    """The producer's channel joins its group's table: checks of the group may go to it (TXN-19)."""
    return attrs.evolve(state, live=state.live | {action.producer})


def _leaves(state: TxnState, action: ProducerLeaves) -> TxnState:
    """The producer's channel leaves the table: no check goes to it, and checks in flight to it are lost (TXN-19)."""
    return attrs.evolve(state, live=state.live - {action.producer})


def _receives(state: TxnState, action: ConsumerReceives) -> TxnState:
    """The consumer gets a message a COMMIT stored in the real topic: nothing else is consumable (TXN-3, TXN-22)."""
    return attrs.evolve(state, consumed=state.consumed | {action.index})


# ---------------------------------------------------------------------------------------------------------------
# Candidates: the actions worth trying under a model's bounds.


@attrs.frozen
class Bounds:
    """What a model tries. Environment actions (sends, answers, deliveries, forgeries, registrations) happen at
    ``event_offset_ms`` into an interval of ``tick_ms`` (the explorer's phase; 0: at the pass times too) and sends
    only until ``send_window_ms``; time ends at ``end_ms``. ``lose``: END_TRANSACTIONs may be lost; ``churn``:
    producers may leave and register again; ``consume``: the consumer's receipts are explored; ``hurry``: a check's
    answer and a duplicated request are delivered (or lost) before anything else (see ``_urgent``)."""

    tick_ms: int = TICK_MS
    event_offset_ms: int = EVENT_OFFSET_MS
    send_window_ms: int = TICK_MS + EVENT_OFFSET_MS
    end_ms: int = 4 * TICK_MS + EVENT_OFFSET_MS
    lose: bool = False
    churn: bool = False
    consume: bool = False
    hurry: bool = True


def _urgent(state: TxnState, bounds: Bounds) -> tuple[EndTxnRequest, ...]:
    """Under ``bounds.hurry``, the requests the explorer delivers (or loses) before anything else happens: a check's
    answer and a duplicated request's copies (the races they take part in are those of the check, or of the one
    request, being late)."""
    if not bounds.hurry or not state.requests:
        return ()
    return tuple(r for r in sorted(set(state.requests)) if r.from_check or state.requests.count(r) > 1)


def _event_time(state: TxnState, bounds: Bounds) -> bool:
    return ((state.now - state.cfg.start_ms) % bounds.tick_ms == bounds.event_offset_ms and state.now <= bounds.end_ms
            and not _urgent(state, bounds))


def _send_candidates(state: TxnState, bounds: Bounds) -> Iterator[SendHalf]:
    if not _event_time(state, bounds) or state.now > bounds.send_window_ms:
        return
    for m in range(state.cfg.messages):
        if state.phase[m] == Phase.IDLE:
            for p in range(len(state.cfg.producers)):
                yield SendHalf(m, p, immunity=state.cfg.immunity[m] if m < len(state.cfg.immunity) else None)
            return


def _local_ends_candidates(state: TxnState, bounds: Bounds) -> Iterator[LocalTransactionEnds]:
    if _event_time(state, bounds):
        for m, phase in enumerate(state.phase):
            if phase == Phase.EXECUTING:
                for s in TransactionState:
                    yield LocalTransactionEnds(m, s)


def _local_decides_candidates(state: TxnState, bounds: Bounds) -> Iterator[LocalDecides]:
    if _event_time(state, bounds):
        for m in range(state.cfg.messages):
            yield LocalDecides(m, TransactionState.COMMIT_MESSAGE)
            yield LocalDecides(m, TransactionState.ROLLBACK_MESSAGE)


def _time_candidates(state: TxnState, bounds: Bounds) -> Iterator[TimePasses]:
    if _urgent(state, bounds):
        return
    limit = state.next_pass if state.walk is None else state.walk.wake
    to_event = (bounds.event_offset_ms - (state.now - state.cfg.start_ms)) % bounds.tick_ms
    target = min(limit, state.now + (to_event or bounds.tick_ms))
    if target <= bounds.end_ms:
        yield TimePasses(target - state.now)


def _pass_candidates(state: TxnState, bounds: Bounds) -> Iterator[CheckPass]:
    if not walk_due(state) or state.now > bounds.end_ms or _urgent(state, bounds):
        return
    checks = pending_walk(state).checks
    choices: list[list[int | None]] = [[*live_of(state, group)] or [None] for _m, _e, group in checks]
    for targets in product(*choices):
        yield CheckPass(tuple(targets))


def _answers_candidates(state: TxnState, bounds: Bounds) -> Iterator[ProducerAnswers]:
    if _event_time(state, bounds):
        for c in sorted(set(state.checks)):
            yield ProducerAnswers(c, state.local[c.msg] or TransactionState.UNKNOW)


def _lost_check_candidates(state: TxnState, bounds: Bounds) -> Iterator[CheckLost]:
    if _event_time(state, bounds):
        yield from (CheckLost(c) for c in sorted(set(state.checks)))


def _delivered_candidates(state: TxnState, bounds: Bounds) -> Iterator[EndTransactionDelivered]:
    urgent = _urgent(state, bounds)
    if urgent or _event_time(state, bounds):
        yield from (EndTransactionDelivered(r) for r in urgent or sorted(set(state.requests)))


def _lost_candidates(state: TxnState, bounds: Bounds) -> Iterator[EndTransactionLost]:
    urgent = _urgent(state, bounds)
    if bounds.lose and (urgent or _event_time(state, bounds)):
        yield from (EndTransactionLost(r) for r in urgent or sorted(set(state.requests)))


def _duplicated_candidates(state: TxnState, bounds: Bounds) -> Iterator[EndTransactionDuplicated]:
    if _event_time(state, bounds):
        yield from (EndTransactionDuplicated(r) for r in sorted(set(state.requests)) if r.commit_or_rollback)


def _forged_candidates(state: TxnState, bounds: Bounds) -> Iterator[ForgedEndTransaction]:
    if state.forged_left and _event_time(state, bounds):
        yield from (ForgedEndTransaction(q) for q in range(len(state.half)))


def _registers_candidates(state: TxnState, bounds: Bounds) -> Iterator[ProducerRegisters]:
    if bounds.churn and _event_time(state, bounds):
        yield from (ProducerRegisters(p) for p in range(len(state.cfg.producers)))


def _leaves_candidates(state: TxnState, bounds: Bounds) -> Iterator[ProducerLeaves]:
    if bounds.churn and _event_time(state, bounds):
        yield from (ProducerLeaves(p) for p in sorted(state.live))


def _receives_candidates(state: TxnState, bounds: Bounds) -> Iterator[ConsumerReceives]:
    if bounds.consume and _event_time(state, bounds):
        yield from (ConsumerReceives(i) for i in range(len(state.real)))


# ---------------------------------------------------------------------------------------------------------------
# The machine.

TRANSITIONS: TransitionTable[TxnState, Action, Bounds] = TransitionTable("transaction_check", CLAUSES, (
    Transition(SendHalf, _send_enabled, _send, _send_candidates, ("TXN-2",)),
    Transition(LocalTransactionEnds, _local_ends_enabled, _local_ends, _local_ends_candidates, ("TXN-4",)),
    Transition(LocalDecides, _local_decides_enabled, _local_decides, _local_decides_candidates, ("TXN-21",)),
    Transition(TimePasses, _time_enabled, _time, _time_candidates, ("TXN-12", "TXN-26")),
    Transition(CheckPass, _pass_enabled, _pass, _pass_candidates,
               ("TXN-12", "TXN-13", "TXN-14", "TXN-15", "TXN-16", "TXN-17", "TXN-18", "TXN-19", "TXN-20",
                "TXN-23", "TXN-26"), label="check pass"),
    Transition(ProducerAnswers, _answers_enabled, _answers, _answers_candidates, ("TXN-21",)),
    Transition(CheckLost, _lost_check_enabled, _check_lost, _lost_check_candidates, ("TXN-19",)),
    Transition(EndTransactionDelivered, _in_flight, _delivered, _delivered_candidates,
               ("TXN-6", "TXN-7", "TXN-8", "TXN-9", "TXN-10", "TXN-11")),
    Transition(EndTransactionLost, _in_flight, _lost, _lost_candidates, ("TXN-11", "TXN-19")),
    Transition(EndTransactionDuplicated, _duplicated_enabled, _duplicated, _duplicated_candidates, ("TXN-11",)),
    Transition(ForgedEndTransaction, _forged_enabled, _forged, _forged_candidates, ("TXN-6", "TXN-7", "TXN-11")),
    Transition(ProducerRegisters, _registers_enabled, _registers, _registers_candidates, ("TXN-19",)),
    Transition(ProducerLeaves, _leaves_enabled, _leaves, _leaves_candidates, ("TXN-19",)),
    Transition(ConsumerReceives, _receives_enabled, _receives, _receives_candidates, ("TXN-3", "TXN-22")),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step


def candidate_actions(state: TxnState, bounds: Bounds | None = None) -> Iterator[Action]:
    """Every action worth trying in ``state`` under ``bounds`` (default: the explorer's)."""
    return TRANSITIONS.candidates(state, bounds if bounds is not None else Bounds())
