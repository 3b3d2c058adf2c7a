"""Consume retry: the state machine as a transition table: guards, effects (``effects``) and candidate generators."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from rocketspec.spec.consume_retry.batches import latest_move_ms, orderly_batch_size, pull_sizes, resumption_deadline
from rocketspec.spec.consume_retry.clauses import CLAUSES
from rocketspec.spec.consume_retry.effects import (
    batch_of,
    broker_answers,
    broker_restarts,
    dead_letter_sent,
    deliver,
    fallback_fails,
    fallback_stored,
    listener_returns,
    local_group,
    local_reconsume,
    locks_refused,
    parked_at,
    parked_left,
    publish,
    pulled,
    resumed,
    schedule_delivers,
    send_back_fails,
    sending,
    time_passes,
)
from rocketspec.spec.consume_retry.oracles import schedule_due
from rocketspec.spec.consume_retry.state import (
    DLQ,
    RETRY,
    SCHEDULE,
    TOPIC,
    Action,
    BrokerAnswers,
    BrokerRestarts,
    DeadLetterOutcome,
    DeadLetterSent,
    Deliver,
    FallbackFails,
    FallbackStored,
    Key,
    ListenerReturns,
    LocalReconsume,
    LocksRefused,
    Publish,
    Pulled,
    Queue,
    RetryState,
    ScheduleDelivers,
    SendBackFails,
    Stage,
    TimePasses,
)
from rocketspec.spec.protocol import SCHEDULE_FIRST_DELAY_MS, ConsumeOrderlyStatus, ConsumeStatus
from rocketspec.spec.transitions import Transition, TransitionTable

#: The topics the group's consumer subscribes (RETRY-19); %DLQ%G is not one of them (RETRY-27).
CONSUMED_TOPICS = (TOPIC, RETRY)

# ------------------------------------------------------------------------------------------------------------
# Guards
# ------------------------------------------------------------------------------------------------------------


def _stored_at_ok(state: RetryState, stored_at_ms: int | None) -> bool:
    return stored_at_ms is None or 0 <= stored_at_ms <= state.now_ms


def _consumed_queues(state: RetryState) -> list[Queue]:
    return sorted({(s.key[0], s.key[1]) for s in state.stored if s.key[0] in CONSUMED_TOPICS})


def _next_request(state: RetryState, queue: Queue) -> tuple[int, ...] | None:
    """The concurrent consumer's next consume request of ``queue`` (RETRY-28)."""
    return next((offsets for q, offsets in state.requests if q == queue), None)


def _orderly_batch(state: RetryState, queue: Queue) -> tuple[int, ...]:
    """The offsets of the orderly consumer's next batch of ``queue`` (RETRY-29)."""
    front = state.front(queue)
    return tuple(range(front, front + orderly_batch_size(state.pull_next(queue) - front, state.config.batch_max)))


def _publish_enabled(state: RetryState, action: Publish) -> bool:
    return 0 <= action.queue_id < state.config.queues


def _pulled_enabled(state: RetryState, action: Pulled) -> bool:
    queue, offsets = (action.topic, action.queue_id), action.offsets
    if action.topic not in CONSUMED_TOPICS or not offsets:
        return False
    start = state.pull_next(queue)
    available = len(state.stored_in(*queue)) - start
    return offsets == tuple(range(start, start + len(offsets))) and len(offsets) in pull_sizes(max(available, 0))


def _deliver_enabled(state: RetryState, action: Deliver) -> bool:
    queue, offsets = (action.topic, action.queue_id), action.offsets
    if action.topic not in CONSUMED_TOPICS or not offsets:
        return False
    if not state.config.orderly:
        return _next_request(state, queue) == offsets
    if any(b.queue == queue for b in state.batches):
        return False
    back = resumed(state, queue)
    if back is not None and state.now_ms < back.due_ms:
        return False
    return offsets == _orderly_batch(state, queue)


def _local_enabled(state: RetryState, action: LocalReconsume) -> bool:
    return local_group(state, action.members) is not None


def _returns_enabled(state: RetryState, action: ListenerReturns) -> bool:
    batch = batch_of(state, action.members)
    if batch is None or batch.answered:
        return False
    kind = ConsumeOrderlyStatus if state.config.orderly else ConsumeStatus
    return (action.status is None or isinstance(action.status, kind)) and action.ack_index >= -1


def _broker_enabled(state: RetryState, action: BrokerAnswers) -> bool:
    return sending(state, action.key, Stage.BROKER) is not None and _stored_at_ok(state, action.stored_at_ms)


def _send_back_fails_enabled(state: RetryState, action: SendBackFails) -> bool:
    return sending(state, action.key, Stage.BROKER) is not None and state.faults_left > 0


def _fallback_enabled(state: RetryState, action: FallbackStored) -> bool:
    return (sending(state, action.key, Stage.FALLBACK) is not None and (not action.retried or state.faults_left > 0)
            and _stored_at_ok(state, action.stored_at_ms))


def _fallback_fails_enabled(state: RetryState, action: FallbackFails) -> bool:
    return sending(state, action.key, Stage.FALLBACK) is not None and state.faults_left > 0


def _dead_letter_enabled(state: RetryState, action: DeadLetterSent) -> bool:
    if sending(state, action.key, Stage.DEAD_LETTER) is None or not _stored_at_ok(state, action.stored_at_ms):
        return False
    return action.outcome is DeadLetterOutcome.STORED or state.faults_left > 0


def _schedule_enabled(state: RetryState, action: ScheduleDelivers) -> bool:
    parked = parked_at(state, action)
    return (parked is not None and state.now_ms >= state.schedule_from_ms
            and schedule_due(parked.stored_at_ms, parked.level, state.now_ms, state.config.delay_table))


def _restart_enabled(state: RetryState, action: BrokerRestarts) -> bool:
    return True


def _locks_enabled(state: RetryState, action: LocksRefused) -> bool:
    return state.config.orderly


def _deadline(state: RetryState) -> int | None:
    """The latest time the clock may reach before something due must happen (RETRY-3, RETRY-17, RETRY-24,
    RETRY-32, RETRY-33)."""
    locked = not (state.config.orderly and state.locks_refused)
    times = [t for t in (resumption_deadline(w.due_ms, locked) for w in state.waiting) if t is not None]
    times += [latest_move_ms(s.due_ms, state.schedule_from_ms) for s in parked_left(state)]
    return min(times) if times else None


def _time_enabled(state: RetryState, action: TimePasses) -> bool:
    deadline = _deadline(state)
    return action.ms > 0 and (deadline is None or state.now_ms + action.ms <= deadline)


# ------------------------------------------------------------------------------------------------------------
# Candidates: the actions worth trying under a model's bounds.
# ------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Bounds:
    """What a model tries: how many messages are published, the listener's answers, the RPC faults, whether the
    broker restarts (once, while something is parked) and refuses the orderly consumer's locks (once, while a batch
    is suspended)."""

    messages: int = 1
    listener_levels: tuple[int, ...] = (0, 1, -1)
    context_ms: tuple[int, ...] = (-1,)
    restarts: bool = False
    lock_faults: bool = False


def _publish_candidates(state: RetryState, bounds: Bounds) -> Iterable[Publish]:
    if len(state.chains) < bounds.messages:
        yield from (Publish(q) for q in range(state.config.queues))


def _pulled_candidates(state: RetryState, bounds: Bounds) -> Iterable[Pulled]:
    for topic, queue_id in _consumed_queues(state):
        start = state.pull_next((topic, queue_id))
        for n in pull_sizes(max(len(state.stored_in(topic, queue_id)) - start, 0)):
            yield Pulled(topic, queue_id, tuple(range(start, start + n)))


def _deliver_candidates(state: RetryState, bounds: Bounds) -> Iterable[Deliver]:
    for queue in _consumed_queues(state):
        offsets = _orderly_batch(state, queue) if state.config.orderly else _next_request(state, queue)
        if offsets:
            yield Deliver(queue[0], queue[1], offsets)


def _local_candidates(state: RetryState, bounds: Bounds) -> Iterable[LocalReconsume]:
    for w in state.waiting:
        yield LocalReconsume(w.members[:state.config.batch_max])


def _returns_candidates(state: RetryState, bounds: Bounds) -> Iterable[ListenerReturns]:
    for b in state.batches:
        if b.answered:
            continue
        if state.config.orderly:
            yield ListenerReturns(b.members, ConsumeOrderlyStatus.SUCCESS)
            for ms in bounds.context_ms:
                yield ListenerReturns(b.members, ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT, context_ms=ms)
            continue
        yield ListenerReturns(b.members, ConsumeStatus.CONSUME_SUCCESS)
        yield ListenerReturns(b.members, ConsumeStatus.CONSUME_SUCCESS, ack_index=-1)
        if len(b.members) > 1:
            yield ListenerReturns(b.members, ConsumeStatus.CONSUME_SUCCESS, ack_index=0)
        yield ListenerReturns(b.members, None)
        yield from (ListenerReturns(b.members, ConsumeStatus.RECONSUME_LATER, delay_level=level)
                    for level in bounds.listener_levels)


def _in_flight(state: RetryState) -> Iterable[Key]:
    return (b.pending[0] for b in state.batches if b.answered and b.pending)


def _broker_candidates(state: RetryState, bounds: Bounds) -> Iterable[BrokerAnswers]:
    return (BrokerAnswers(k) for k in _in_flight(state))


def _send_back_fails_candidates(state: RetryState, bounds: Bounds) -> Iterable[SendBackFails]:
    return (SendBackFails(k) for k in _in_flight(state))


def _fallback_candidates(state: RetryState, bounds: Bounds) -> Iterable[FallbackStored]:
    for k in _in_flight(state):
        yield FallbackStored(k)
        yield FallbackStored(k, retried=True)


def _fallback_fails_candidates(state: RetryState, bounds: Bounds) -> Iterable[FallbackFails]:
    return (FallbackFails(k) for k in _in_flight(state))


def _dead_letter_candidates(state: RetryState, bounds: Bounds) -> Iterable[DeadLetterSent]:
    return (DeadLetterSent(k, outcome) for k in _in_flight(state) for outcome in DeadLetterOutcome)


def _schedule_candidates(state: RetryState, bounds: Bounds) -> Iterable[ScheduleDelivers]:
    levels = {s.level for s in state.stored if s.key[0] == SCHEDULE}
    return (ScheduleDelivers(level, state.schedule_next(level)) for level in sorted(levels))


def _restart_candidates(state: RetryState, bounds: Bounds) -> Iterable[BrokerRestarts]:
    # Once, when a parked copy comes due before the schedule's first run after it (the case RETRY-32 is about).
    first_run = state.now_ms + SCHEDULE_FIRST_DELAY_MS
    if bounds.restarts and not state.schedule_from_ms and any(s.due_ms < first_run for s in parked_left(state)):
        yield BrokerRestarts()


def _locks_candidates(state: RetryState, bounds: Bounds) -> Iterable[LocksRefused]:
    if bounds.lock_faults and not state.locks_refused and state.waiting:
        yield LocksRefused()


def _time_candidates(state: RetryState, bounds: Bounds) -> Iterable[TimePasses]:
    """Time moves to the next moment something is due (the earliest due time after now)."""
    times = [w.due_ms for w in state.waiting]
    times += [max(s.due_ms, state.schedule_from_ms) for s in parked_left(state)]
    later = [t for t in times if t > state.now_ms]
    if later:
        yield TimePasses(min(later) - state.now_ms)
    first = min((w.due_ms for w in state.waiting), default=None)
    if state.config.orderly and state.locks_refused and first is not None and state.now_ms <= first:
        yield TimePasses(first + 1 - state.now_ms)  # a suspended batch waiting for its lock: a moment past its end


# ------------------------------------------------------------------------------------------------------------
# The machine.
# ------------------------------------------------------------------------------------------------------------

TRANSITIONS: TransitionTable[RetryState, Action, Bounds] = TransitionTable("consume_retry", CLAUSES, (
    Transition(Publish, _publish_enabled, publish, _publish_candidates, ("RETRY-19", "RETRY-28", "RETRY-29")),
    Transition(Pulled, _pulled_enabled, pulled, _pulled_candidates, ("RETRY-28", "RETRY-29", "RETRY-31")),
    Transition(Deliver, _deliver_enabled, deliver, _deliver_candidates,
               ("RETRY-19", "RETRY-21", "RETRY-24", "RETRY-27", "RETRY-28", "RETRY-29")),
    Transition(LocalReconsume, _local_enabled, local_reconsume, _local_candidates,
               ("RETRY-17", "RETRY-25", "RETRY-28")),
    Transition(ListenerReturns, _returns_enabled, listener_returns, _returns_candidates,
               ("RETRY-13", "RETRY-14", "RETRY-15", "RETRY-17", "RETRY-21", "RETRY-22", "RETRY-24", "RETRY-28",
                "RETRY-29")),
    Transition(BrokerAnswers, _broker_enabled, broker_answers, _broker_candidates,
               ("RETRY-2", "RETRY-4", "RETRY-5", "RETRY-6", "RETRY-7", "RETRY-8", "RETRY-9", "RETRY-16",
                "RETRY-18")),
    Transition(SendBackFails, _send_back_fails_enabled, send_back_fails, _send_back_fails_candidates,
               ("RETRY-16",)),
    Transition(FallbackStored, _fallback_enabled, fallback_stored, _fallback_candidates,
               ("RETRY-2", "RETRY-11", "RETRY-12", "RETRY-16")),
    Transition(FallbackFails, _fallback_fails_enabled, fallback_fails, _fallback_fails_candidates,
               ("RETRY-17", "RETRY-30")),
    Transition(DeadLetterSent, _dead_letter_enabled, dead_letter_sent, _dead_letter_candidates,
               ("RETRY-11", "RETRY-12", "RETRY-16", "RETRY-21", "RETRY-23", "RETRY-30")),
    Transition(ScheduleDelivers, _schedule_enabled, schedule_delivers, _schedule_candidates,
               ("RETRY-1", "RETRY-3", "RETRY-12", "RETRY-27", "RETRY-32")),
    Transition(BrokerRestarts, _restart_enabled, broker_restarts, _restart_candidates, ("RETRY-3", "RETRY-32")),
    Transition(LocksRefused, _locks_enabled, locks_refused, _locks_candidates, ("RETRY-24", "RETRY-33")),
    Transition(TimePasses, _time_enabled, time_passes, _time_candidates,
               ("RETRY-3", "RETRY-17", "RETRY-24", "RETRY-26", "RETRY-32", "RETRY-33")),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step

__all__ = ["CONSUMED_TOPICS", "DLQ", "RETRY", "TRANSITIONS", "Bounds", "enabled", "step"]
