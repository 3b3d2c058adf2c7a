"""Offset commit: the state machine as a transition table: guard, effect and candidate generator per action kind.

The state and the actions are in ``state``, the guards and effects in ``steps`` (queues, clients, assignment, pulls,
consumption) and ``admin`` (admin requests, resets). The candidate generators propose what the bounded explorer
tries under :class:`Bounds`; the kinds only an environment produces (admin requests, heartbeats, broker restarts and
persists, failed pulls) have none: the lockstep machine (``tests/test_stateful_offset_commit.py``) drives them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs

from rocketspec.spec.offset_commit import admin, pulls, steps
from rocketspec.spec.offset_commit.clauses import CLAUSES
from rocketspec.spec.offset_commit.oracles import NO_OFFSET
from rocketspec.spec.offset_commit.state import (
    Action,
    AdminCommit,
    AllOffsetsAsked,
    BrokerConsumeStatsAsked,
    BrokerRestarted,
    CommitArrives,
    ConnectionsAsked,
    ConsumeFinished,
    ConsumerCrashed,
    ConsumerShutdown,
    ConsumerStarted,
    ConsumerStatusAsked,
    ConsumeStatsAsked,
    GroupCreated,
    GroupDeleted,
    Heartbeat,
    LateOffsetWrite,
    LockedRead,
    LockedStart,
    MessageStored,
    OffsetCorrected,
    OffsetQueried,
    OffsetRead,
    OffsetResetAsked,
    OffsetsCloned,
    OffsetsPersisted,
    OffsetState,
    OffsetUpdated,
    OrderlyConsumed,
    OtherGroupUpdated,
    PersistAll,
    PullFailed,
    PullFound,
    PullNoNewMessage,
    PullOffsetMoved,
    PullSent,
    QueueAssigned,
    QueueDropped,
    ResetApplied,
    ResetReceived,
    StalePullAnswered,
    TakeMessages,
    TimeSpanAsked,
)
from rocketspec.spec.protocol import is_retry_topic
from rocketspec.spec.transitions import Transition, TransitionTable

# --- Candidates: the actions worth trying under a model's bounds ---------------------------------------------


@attrs.frozen
class Bounds:
    """What a model tries: up to ``max_crashes`` crashes (or, with ``shutdowns``, clean shutdowns) and ``max_drops``
    drops, ``max_in_flight`` commits
    travelling at once (a commit is sent only while fewer travel, and a persist only when its values do not travel
    already: a second copy reaches no new broker value), up to ``max_messages`` messages per queue (a producer
    stores more until then), ``max_restarts`` broker crashes (each losing the last message, with the broker's
    persists in between) and ``max_admin`` admin changes (an offset set to either end, a reset to the end or the
    start, a clone, a group deleted; heartbeats then put the clients online)."""

    max_crashes: int = 1
    max_drops: int = 1
    max_in_flight: int = 2
    max_messages: int = 0
    max_restarts: int = 0
    max_admin: int = 0
    shutdowns: bool = False
    quick_broker: bool = True


def _busy(state: OffsetState, client: int, bounds: Bounds) -> bool:
    """Whether ``quick_broker`` holds the client's own consumption back: a pull or a read of it is unanswered."""
    if not bounds.quick_broker:
        return False
    return any((lane.held is not None and lane.held.pull is not None) or lane.reading is not None
               for lane in state.lanes[client])


def _room(state: OffsetState, queue: int, bounds: Bounds) -> bool:
    return len(state.queues[queue].in_flight) < bounds.max_in_flight


def _lanes(state: OffsetState) -> Iterator[tuple[int, int]]:
    return itertools.product(range(len(state.clients)), range(len(state.queues)))


def _stored_candidates(state: OffsetState, bounds: Bounds) -> Iterator[MessageStored]:
    for queue, q in enumerate(state.queues):
        last = q.times[-1] if q.times else 0
        retry = is_retry_topic(state.config.queues[queue].topic)
        if (retry and q.owed > 0) or (not retry and len(q.times) < bounds.max_messages):
            yield MessageStored(queue, last + 1)


def _commit_candidates(state: OffsetState, bounds: Bounds) -> Iterator[CommitArrives]:
    for queue, q in enumerate(state.queues):
        for offset in sorted(set(q.in_flight)):
            yield CommitArrives(queue, offset)


def _late_candidates(state: OffsetState, bounds: Bounds) -> Iterator[LateOffsetWrite]:
    for client, queue in _lanes(state):
        for offset in sorted(set(state.lanes[client][queue].late)):
            yield LateOffsetWrite(client, queue, offset)


def _crash_candidates(state: OffsetState, bounds: Bounds) -> Iterator[ConsumerCrashed]:
    if state.crashes < bounds.max_crashes:
        yield from (ConsumerCrashed(c) for c in range(len(state.clients)))


def _start_candidates(state: OffsetState, bounds: Bounds) -> Iterator[ConsumerStarted]:
    yield from (ConsumerStarted(c) for c in range(len(state.clients)))


def _read_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OffsetRead]:
    yield from (OffsetRead(c, q) for c, q in _lanes(state))


def _assign_candidates(state: OffsetState, bounds: Bounds) -> Iterator[QueueAssigned]:
    for client, queue in _lanes(state):
        for start in sorted(steps.allowed_starts(state, client, queue)):
            yield QueueAssigned(client, queue, start)


def _locked_read_candidates(state: OffsetState, bounds: Bounds) -> Iterator[LockedRead]:
    if state.config.orderly:
        yield from (LockedRead(c, q) for c, q in _lanes(state))


def _locked_start_candidates(state: OffsetState, bounds: Bounds) -> Iterator[LockedStart]:
    if state.config.orderly:
        for client, queue in _lanes(state):
            for start in sorted(steps.allowed_starts(state, client, queue)):
                yield LockedStart(client, queue, start)


def _sends(state: OffsetState, client: int, queue: int) -> bool:
    """Whether a persist or a drop of the lane sends a commit (the bounds hold those back when commits crowd)."""
    return state.config.clustering and state.lanes[client][queue].memory != NO_OFFSET


def _pull_candidates(state: OffsetState, bounds: Bounds) -> Iterator[PullSent]:
    for client, queue in _lanes(state):
        held = state.lanes[client][queue].held
        commit = steps.pull_commit(state, client, queue)
        if held is not None and (commit is None or _room(state, queue, bounds)):
            yield PullSent(client, queue, held.next_offset, commit)


def _answer_candidates(state: OffsetState, bounds: Bounds) -> Iterator[PullFound | PullNoNewMessage
                                                                           | PullOffsetMoved]:
    """The broker answers a pull as its queue is now: FOUND, NO_NEW_MSG at the end, OFFSET_ILLEGAL past it."""
    for client, queue in _lanes(state):
        held = state.lanes[client][queue].held
        if held is None or held.pull is None:
            continue
        max_offset = state.queues[queue].max_offset
        if held.pull < max_offset:
            yield PullFound(client, queue, min(state.config.pull_batch, max_offset - held.pull), max_offset)
        elif held.pull == max_offset or max_offset == 0:
            yield PullNoNewMessage(client, queue, max_offset)
        else:
            yield PullOffsetMoved(client, queue, steps.overflow_next(max_offset, state.config.profile))


def _found_candidates(state: OffsetState, bounds: Bounds) -> Iterator[PullFound]:
    yield from (a for a in _answer_candidates(state, bounds) if isinstance(a, PullFound))


def _no_new_candidates(state: OffsetState, bounds: Bounds) -> Iterator[PullNoNewMessage]:
    yield from (a for a in _answer_candidates(state, bounds) if isinstance(a, PullNoNewMessage))


def _moved_candidates(state: OffsetState, bounds: Bounds) -> Iterator[PullOffsetMoved]:
    yield from (a for a in _answer_candidates(state, bounds) if isinstance(a, PullOffsetMoved))


def _stale_candidates(state: OffsetState, bounds: Bounds) -> Iterator[StalePullAnswered]:
    for client, queue in _lanes(state):
        max_offset = state.queues[queue].max_offset
        for offset in sorted({s.offset for s in state.lanes[client][queue].stale}):
            yield StalePullAnswered(client, queue, offset, "FOUND" if offset < max_offset else "NO_NEW_MSG")


def _subsets(offsets: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    for size in range(len(offsets) + 1):
        yield from itertools.combinations(offsets, size)


def _finish_candidates(state: OffsetState, bounds: Bounds) -> Iterator[ConsumeFinished]:
    config = state.config
    retries = config.clustering and state.send_back_failures < config.max_send_back_failures
    for client, queue in _lanes(state):
        held = state.lanes[client][queue].held
        if _busy(state, client, bounds):
            continue
        for request in () if held is None else held.requests:
            if request.removed is not None:
                continue
            for failed in _subsets(request.offsets) if retries else [()]:
                yield ConsumeFinished(client, queue, request.offsets, not failed, failed)


def _update_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OffsetUpdated]:
    for client, queue in _lanes(state):
        held = state.lanes[client][queue].held
        if _busy(state, client, bounds):
            continue
        for request in () if held is None else held.requests:
            if request.removed is not None:
                yield OffsetUpdated(client, queue, request.offsets)


def _take_candidates(state: OffsetState, bounds: Bounds) -> Iterator[TakeMessages]:
    if state.config.orderly:
        yield from (TakeMessages(c, q) for c, q in _lanes(state) if not _busy(state, c, bounds))


def _orderly_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OrderlyConsumed]:
    if state.config.orderly:
        for client, queue in _lanes(state):
            if _busy(state, client, bounds):
                continue
            yield OrderlyConsumed(client, queue, True)
            yield OrderlyConsumed(client, queue, False)


def _persist_candidates(state: OffsetState, bounds: Bounds) -> Iterator[PersistAll]:
    for client in range(len(state.clients)):
        if _busy(state, client, bounds):
            continue
        values = [(q, lane.memory) for q, lane in enumerate(state.lanes[client])
                  if lane.held is not None and lane.memory != NO_OFFSET]
        if not values:
            continue
        if state.config.clustering:
            if all(m in state.queues[q].in_flight for q, m in values):
                continue
            if not all(_room(state, q, bounds) for q, _m in values):
                continue
        yield PersistAll(client)


def _drop_candidates(state: OffsetState, bounds: Bounds) -> Iterator[QueueDropped]:
    if state.drops >= bounds.max_drops:
        return
    for client, queue in _lanes(state):
        if _room(state, queue, bounds) or not _sends(state, client, queue):
            yield QueueDropped(client, queue)


def _corrected_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OffsetCorrected]:
    yield from (OffsetCorrected(c, q) for c, q in _lanes(state))


def _shutdown_candidates(state: OffsetState, bounds: Bounds) -> Iterator[ConsumerShutdown]:
    if bounds.shutdowns and state.crashes < bounds.max_crashes:
        for client in range(len(state.clients)):
            if all(_room(state, q, bounds) or not _sends(state, client, q) for q in range(len(state.queues))):
                yield ConsumerShutdown(client)


def _heartbeat_candidates(state: OffsetState, bounds: Bounds) -> Iterator[Heartbeat]:
    if bounds.max_admin > 0:
        for client, c in enumerate(state.clients):
            yield from (Heartbeat(client, b) for b in state.config.brokers if b not in c.online)


def _persisted_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OffsetsPersisted]:
    if bounds.max_restarts > 0:
        for broker in state.config.brokers:
            queues = state.config.on(broker)
            if any(state.queues[q].persisted != state.queues[q].stored for q in queues):
                yield OffsetsPersisted(broker)


def _restart_candidates(state: OffsetState, bounds: Bounds) -> Iterator[BrokerRestarted]:
    if state.restarts >= bounds.max_restarts:
        return
    for broker in state.config.brokers:
        queues = state.config.on(broker)
        last = max((t for q in queues for t in state.queues[q].times), default=0)
        kept = tuple(max(state.queues[q].max_offset - 1, 0) for q in queues)
        yield BrokerRestarted(broker, True, kept, last + 1)


def _reset_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OffsetResetAsked]:
    if state.admin < bounds.max_admin:
        for broker in state.config.brokers:
            yield OffsetResetAsked(broker, -1, False)
            yield OffsetResetAsked(broker, 0, True)


def _reset_received_candidates(state: OffsetState, bounds: Bounds) -> Iterator[ResetReceived]:
    yield from (ResetReceived(c) for c in range(len(state.clients)))


def _reset_applied_candidates(state: OffsetState, bounds: Bounds) -> Iterator[ResetApplied]:
    yield from (ResetApplied(c) for c in range(len(state.clients)))


def _admin_commit_candidates(state: OffsetState, bounds: Bounds) -> Iterator[AdminCommit]:
    if state.admin < bounds.max_admin:
        for queue, q in enumerate(state.queues):
            yield from (AdminCommit(queue, offset) for offset in sorted({0, q.max_offset}))


def _clone_candidates(state: OffsetState, bounds: Bounds) -> Iterator[OffsetsCloned]:
    if state.admin < bounds.max_admin:
        yield from (OffsetsCloned(b) for b in state.config.brokers)


def _delete_candidates(state: OffsetState, bounds: Bounds) -> Iterator[GroupDeleted]:
    if state.admin < bounds.max_admin:
        yield from (GroupDeleted(b) for b in state.config.brokers)


# --- The table ----------------------------------------------------------------------------------------------


TRANSITIONS: TransitionTable[OffsetState, Action, Bounds] = TransitionTable(
    area="offset_commit",
    clauses=CLAUSES,
    transitions=(
        Transition(CommitArrives, steps._commit_enabled, steps._commit_arrives, _commit_candidates, ("OFF-8",)),
        Transition(LateOffsetWrite, steps._late_enabled, steps._late_write, _late_candidates,
                   ("OFF-12", "OFF-5")),
        Transition(ConsumerCrashed, steps._alive_enabled, steps._crashed, _crash_candidates, ("OFF-24", "OFF-17")),
        Transition(ConsumerStarted, steps._started_enabled, steps._started, _start_candidates,
                   ("OFF-24", "OFF-16")),
        Transition(ConsumerShutdown, steps._alive_enabled, steps._shutdown, _shutdown_candidates,
                   ("OFF-24", "OFF-11", "OFF-16")),
        Transition(MessageStored, steps._stored_enabled, steps._stored, _stored_candidates, ("OFF-22", "OFF-30")),
        Transition(Heartbeat, steps._heartbeat_enabled, steps._heartbeat, _heartbeat_candidates, clauses=("OFF-29",)),
        Transition(GroupCreated, steps._created_enabled, steps._group_created, clauses=("OFF-29", "OFF-22")),
        Transition(OffsetRead, steps._read_enabled, steps._read, _read_candidates,
                   ("OFF-13", "OFF-6", "OFF-7", "OFF-16"), label="removeDirtyOffset, readOffset"),
        Transition(QueueAssigned, steps._assign_enabled, steps._assigned, _assign_candidates,
                   ("OFF-13", "OFF-19", "OFF-20", "OFF-21")),
        Transition(LockedRead, steps._locked_read_enabled, steps._locked_read, _locked_read_candidates,
                   ("OFF-31", "OFF-6", "OFF-7")),
        Transition(LockedStart, steps._locked_start_enabled, steps._locked_start, _locked_start_candidates,
                   ("OFF-31", "OFF-20")),
        Transition(StalePullAnswered, pulls._stale_enabled, pulls._stale_answered, _stale_candidates,
                   ("OFF-12", "OFF-14")),
        Transition(PersistAll, steps._alive_enabled, steps._persist_all_effect, _persist_candidates,
                   ("OFF-11", "OFF-16")),
        Transition(QueueDropped, steps._drop_enabled, steps._dropped, _drop_candidates, ("OFF-12", "OFF-16")),
        Transition(PullSent, pulls._pull_sent_enabled, pulls._pull_sent, _pull_candidates, ("OFF-9", "OFF-10")),
        Transition(PullFound, pulls._found_enabled, pulls._found, _found_candidates,
                   ("OFF-1", "OFF-2", "OFF-4", "OFF-9")),
        Transition(PullNoNewMessage, pulls._no_new_enabled, pulls._no_new, _no_new_candidates, ("OFF-14",)),
        Transition(PullOffsetMoved, pulls._moved_enabled, pulls._moved, _moved_candidates, ("OFF-23",)),
        Transition(PullFailed, pulls._failed_enabled, pulls._failed, clauses=("OFF-9", "OFF-10")),
        Transition(OffsetCorrected, steps._corrected_enabled, steps._corrected, _corrected_candidates,
                   ("OFF-23",)),
        Transition(ConsumeFinished, pulls._finished_enabled, pulls._consume_finished, _finish_candidates,
                   ("OFF-4", "OFF-17", "OFF-30")),
        Transition(OffsetUpdated, pulls._updated_enabled, pulls._offset_updated, _update_candidates,
                   ("OFF-4", "OFF-5")),
        Transition(TakeMessages, pulls._take_enabled, pulls._take, _take_candidates, ("OFF-15",)),
        Transition(OrderlyConsumed, pulls._orderly_enabled, pulls._orderly_consumed, _orderly_candidates,
                   ("OFF-15",)),
        Transition(OffsetsPersisted, steps._broker_known, steps._offsets_persisted, _persisted_candidates,
                   clauses=("OFF-22",)),
        Transition(BrokerRestarted, steps._restart_enabled, steps._restarted, _restart_candidates,
                   clauses=("OFF-22", "OFF-29")),
        Transition(ResetReceived, admin._reset_received_enabled, admin._reset_received, _reset_received_candidates,
                   clauses=("OFF-26",)),
        Transition(ResetApplied, admin._reset_applied_enabled, admin._reset_applied, _reset_applied_candidates,
                   clauses=("OFF-26",)),
        Transition(AdminCommit, admin._admin_commit_enabled, admin._admin_commit, _admin_commit_candidates,
                   clauses=("OFF-30", "OFF-8")),
        Transition(OffsetQueried, admin._queue_known, admin._queried, clauses=("OFF-7",)),
        Transition(OffsetResetAsked, admin._reset_enabled, admin._reset_asked, _reset_candidates,
                   clauses=("OFF-25", "OFF-21")),
        Transition(ConsumeStatsAsked, admin._known, admin._consume_stats, clauses=("OFF-27",)),
        Transition(BrokerConsumeStatsAsked, admin._known, admin._broker_stats, clauses=("OFF-27",)),
        Transition(AllOffsetsAsked, admin._known, admin._all_offsets, clauses=("OFF-27",)),
        Transition(TimeSpanAsked, admin._known, admin._time_span, clauses=("OFF-28",)),
        Transition(ConnectionsAsked, admin._known, admin._connections, clauses=("OFF-29",)),
        Transition(ConsumerStatusAsked, admin._known, admin._consumer_status, clauses=("OFF-29",)),
        Transition(OffsetsCloned, admin._known, admin._cloned, _clone_candidates, clauses=("OFF-30",)),
        Transition(GroupDeleted, admin._known, admin._group_deleted, _delete_candidates, clauses=("OFF-30",)),
        Transition(OtherGroupUpdated, admin._known, admin._other_group_updated, clauses=("OFF-22",)),
    ),
)
enabled = TRANSITIONS.enabled
step = TRANSITIONS.step
