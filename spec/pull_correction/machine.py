"""Pull correction: the state machine as a transition table, ``TRANSITIONS``: for each action kind its guard and
effect (``effects``, ``pulls``), the candidates a model tries under its ``Bounds``, the clauses it implements and its
label. The state and the actions are in ``state``; ``enabled``, ``step`` and ``candidates`` are the table's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from rocketspec.spec.pull_correction.clauses import (
    CLAUSES,
)
from rocketspec.spec.pull_correction.effects import (
    append,
    append_enabled,
    assign,
    assign_enabled,
    correct_min,
    correct_min_enabled,
    delete_commit_log,
    delete_commit_log_enabled,
    delete_cq_file,
    delete_cq_file_enabled,
    destroyed,
    destroyed_enabled,
    flushed,
    flushed_enabled,
    heartbeat,
    heartbeat_enabled,
    offset_reset,
    offset_reset_enabled,
    persisted,
    persisted_enabled,
    raw_answer,
    raw_pull,
    raw_pull_enabled,
    rebalance,
    rebalance_enabled,
    restart,
    restart_enabled,
    starts,
    starts_enabled,
    stops,
    stops_enabled,
    time,
    time_enabled,
    unregistered,
    unregistered_enabled,
)
from rocketspec.spec.pull_correction.pulls import (
    answered,
    answered_enabled,
    commit,
    commit_enabled,
    consume,
    consume_enabled,
    consumer_answer,
    fix,
    fix_enabled,
    pause,
    pause_enabled,
    persist,
    persist_enabled,
    persist_sent,
    persist_sent_enabled,
    poll,
    poll_enabled,
    pull,
    pull_enabled,
    pull_sent,
    pull_sent_enabled,
    removed,
    removed_enabled,
    seek,
    seek_enabled,
    suspend,
    suspend_enabled,
    timeout,
    timeout_enabled,
    wake,
    wake_enabled,
)
from rocketspec.spec.pull_correction.state import (
    Action,
    Answered,
    Append,
    Assign,
    BrokerRestart,
    Commit,
    Consume,
    ConsumerStarts,
    ConsumerStops,
    CorrectMinOffset,
    DelayedFix,
    DeleteCommitLog,
    DeleteConsumeQueueFile,
    Flushed,
    Heartbeat,
    HoldTimeout,
    OffsetReset,
    OffsetsPersisted,
    PauseQueue,
    Persist,
    PersistSent,
    Phase,
    Poll,
    Pull,
    PullSent,
    PullState,
    QueueDestroyed,
    QueueRemoved,
    QueueState,
    RawPull,
    Rebalance,
    Seek,
    Suspend,
    TimePasses,
    Unregistered,
    Wake,
)
from rocketspec.spec.pull_correction.views import (
    CHECK_MS,
    consumer_queues,
    failed_answer,
    live,
    next_pull_offset,
    pull_exact,
    rebalance_start,
)
from rocketspec.spec.transitions import Transition, TransitionTable

# --------------------------------------------------------------------------------------------------------------
# Candidates: the actions worth trying under a model's bounds.
# --------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Bounds:
    """What a model tries: the tags of appended messages (only the first when no message is filtered out), offsets
    an operator resets to, consumer stops and starts, broker restarts, raw pulls, lite pull commits and seeks (to the
    queue's min and max), pauses and suspensions, and time passing to the next deadline."""

    tags: tuple[str, ...] = ("A", "B")
    resets: tuple[int, ...] = ()
    lifecycle: bool = False
    restarts: bool = False
    raw: bool = False
    commits: bool = True
    seeks: bool = True
    time: bool = True
    pauses: bool = False


def _queues(state: PullState) -> range:
    return range(state.config.queue_count)


def _append_candidates(state: PullState, bounds: Bounds) -> Iterator[Append]:
    tags = bounds.tags if state.config.filtered_messages else bounds.tags[:1]
    for q in _queues(state):
        for tag in tags:
            yield Append(q, tag, state.queues[q].store.max_offset)


def _per_queue(kind: type[Any]) -> Callable[[PullState, Bounds], Iterator[Action]]:
    def candidates(state: PullState, bounds: Bounds) -> Iterator[Action]:
        for q in _queues(state):
            yield kind(q)
    return candidates


def _reset_candidates(state: PullState, bounds: Bounds) -> Iterator[OffsetReset]:
    for q in range(state.config.topic_queues):
        for offset in bounds.resets:
            yield OffsetReset(q, offset)


def _restart_candidates(state: PullState, bounds: Bounds) -> Iterator[BrokerRestart]:
    if bounds.restarts:
        yield BrokerRestart()
        yield BrokerRestart(crash=True)


def _flushed_candidates(state: PullState, bounds: Bounds) -> Iterator[Flushed]:
    if bounds.restarts and any(qs.store.durable < qs.store.max_offset for qs in state.queues):
        yield Flushed()


def _persisted_candidates(state: PullState, bounds: Bounds) -> Iterator[OffsetsPersisted]:
    if bounds.restarts and any(qs.durable_offset != qs.broker_offset or qs.durable_raw != qs.raw_offset
                               for qs in state.queues):
        yield OffsetsPersisted()


def _heartbeat_candidates(state: PullState, bounds: Bounds) -> Iterator[Heartbeat]:
    if not state.registered:
        yield Heartbeat()


def _unregistered_candidates(state: PullState, bounds: Bounds) -> Iterator[Unregistered]:
    yield Unregistered()


def _starts_candidates(state: PullState, bounds: Bounds) -> Iterator[ConsumerStarts]:
    if bounds.lifecycle:
        yield ConsumerStarts(False)
        yield ConsumerStarts(True)


def _stops_candidates(state: PullState, bounds: Bounds) -> Iterator[ConsumerStops]:
    if bounds.lifecycle:
        yield ConsumerStops(False)
        yield ConsumerStops(True)


def _rebalance_candidates(state: PullState, bounds: Bounds) -> Iterator[Rebalance]:
    for q in consumer_queues(state):
        if state.queues[q].pq is None:
            yield Rebalance(q, rebalance_start(state, q))


def _pull_sent_candidates(state: PullState, bounds: Bounds) -> Iterator[PullSent]:
    for q in _queues(state):
        qs = state.queues[q]
        if live(state, q) and qs.pull_in == 0 and qs.live_request is None:
            yield PullSent(q, next_pull_offset(state, q))


def _offsets_in(qs: QueueState, phase: Phase) -> list[int]:
    return sorted({r.offset for r in qs.requests if r.phase is phase})


def _pull_candidates(state: PullState, bounds: Bounds) -> Iterator[Pull]:
    for q in _queues(state):
        for offset in _offsets_in(state.queues[q], Phase.SENT):
            yield Pull(q, offset, consumer_answer(state, q, offset, True))


def _held_candidates(kind: type[Any]) -> Callable[[PullState, Bounds], Iterator[Action]]:
    def candidates(state: PullState, bounds: Bounds) -> Iterator[Action]:
        for q in _queues(state):
            for offset in _offsets_in(state.queues[q], Phase.HELD):
                yield kind(q, offset, consumer_answer(state, q, offset, False))
    return candidates


def _answered_candidates(state: PullState, bounds: Bounds) -> Iterator[Answered]:
    for q in _queues(state):
        for offset in _offsets_in(state.queues[q], Phase.ANSWERED):
            yield Answered(q, offset)


def _consume_candidates(state: PullState, bounds: Bounds) -> Iterator[Consume]:
    for q in _queues(state):
        pq = state.queues[q].pq
        if pq is not None:
            for offset in sorted(pq.cached):
                yield Consume(q, offset)


def _persist_sent_candidates(state: PullState, bounds: Bounds) -> Iterator[PersistSent]:
    for q in _queues(state):
        qs = state.queues[q]
        last = qs.in_transit[-1] if qs.in_transit else qs.broker_offset
        if qs.memory_offset is not None and (qs.memory_offset != last or (qs.removing and len(qs.in_transit) < 2)):
            yield PersistSent(q, qs.memory_offset)


def _persist_candidates(state: PullState, bounds: Bounds) -> Iterator[Persist]:
    for q in _queues(state):
        sent = state.queues[q].in_transit
        if sent:
            yield Persist(q, sent[0])


def _poll_candidates(state: PullState, bounds: Bounds) -> Iterator[Poll]:
    if state.cache:
        yield Poll()


def _commit_candidates(state: PullState, bounds: Bounds) -> Iterator[Commit]:
    if bounds.commits:
        yield Commit(False)


def _seek_candidates(state: PullState, bounds: Bounds) -> Iterator[Seek]:
    if bounds.seeks:
        for q in _queues(state):
            if any(not r.live for r in state.queues[q].requests):
                continue  # one seek at a time: the pulls it left behind are answered first
            store = state.queues[q].store
            for offset in sorted({store.min_offset, store.max_offset}):
                yield Seek(q, offset)


def _raw_candidates(state: PullState, bounds: Bounds) -> Iterator[RawPull]:
    if bounds.raw:
        for offset in (0, state.queues[0].store.max_offset + 1):
            action = RawPull(0, offset, 1, None, True, None, failed_answer(offset))
            yield attrs.evolve(action, answer=raw_answer(state, action))


def _pause_candidates(state: PullState, bounds: Bounds) -> Iterator[PauseQueue]:
    if bounds.pauses:
        for q in _queues(state):
            yield PauseQueue(q, not state.queues[q].paused)


def _suspend_candidates(state: PullState, bounds: Bounds) -> Iterator[Suspend]:
    if bounds.pauses:
        yield Suspend(not state.suspended)


def next_deadline(state: PullState) -> int | None:
    """The nearest time by which something must happen: a pull or fix due, the check that must time a held request
    out or wake it (None: nothing must). A model lets time jump there (an auto commit waits for a later poll)."""
    times: list[int] = []
    for qs in state.queues:
        if pull_exact(state, qs) and qs.pull_in and qs.live_request is None:
            times.append(qs.pull_in)
        if qs.fix is not None and qs.fix_in:
            times.append(qs.fix_in)
        for r in qs.requests:
            if r.phase is Phase.HELD:
                times += [t for t in (r.hold_left + CHECK_MS, r.wake_by or 0) if t > 0]
    return min(times) if times else None


def _time_candidates(state: PullState, bounds: Bounds) -> Iterator[TimePasses]:
    if bounds.time:
        ms = next_deadline(state)
        if ms is not None:
            yield TimePasses(ms)


# --------------------------------------------------------------------------------------------------------------
# The machine.

TRANSITIONS: TransitionTable[PullState, Action, Bounds] = TransitionTable("pull_correction", CLAUSES, (
    Transition(Append, append_enabled, append, _append_candidates, ("PULL-14", "PULL-15")),
    Transition(DeleteCommitLog, delete_commit_log_enabled, delete_commit_log, _per_queue(DeleteCommitLog),
               ("PULL-6", "PULL-9")),
    Transition(DeleteConsumeQueueFile, delete_cq_file_enabled, delete_cq_file, _per_queue(DeleteConsumeQueueFile),
               ("PULL-6",)),
    Transition(CorrectMinOffset, correct_min_enabled, correct_min, _per_queue(CorrectMinOffset), ("PULL-3",)),
    Transition(OffsetReset, offset_reset_enabled, offset_reset, _reset_candidates, ("PULL-24", "PULL-3", "PULL-5")),
    Transition(BrokerRestart, restart_enabled, restart, _restart_candidates,
               ("PULL-38", "PULL-23", "PULL-42", "PULL-44")),
    Transition(Flushed, flushed_enabled, flushed, _flushed_candidates, ("PULL-42",)),
    Transition(OffsetsPersisted, persisted_enabled, persisted, _persisted_candidates, ("PULL-42",)),
    Transition(Heartbeat, heartbeat_enabled, heartbeat, _heartbeat_candidates, ("PULL-17",)),
    Transition(Unregistered, unregistered_enabled, unregistered, _unregistered_candidates, ("PULL-39", "PULL-17")),
    Transition(ConsumerStarts, starts_enabled, starts, _starts_candidates, ("PULL-24", "PULL-28", "PULL-37")),
    Transition(ConsumerStops, stops_enabled, stops, _stops_candidates, ("PULL-39",)),
    Transition(Rebalance, rebalance_enabled, rebalance, _rebalance_candidates, ("PULL-24", "PULL-28", "PULL-29")),
    Transition(Assign, assign_enabled, assign, _per_queue(Assign), ("PULL-31", "PULL-37")),
    Transition(PullSent, pull_sent_enabled, pull_sent, _pull_sent_candidates, ("PULL-18", "PULL-31", "PULL-33")),
    Transition(Pull, pull_enabled, pull, _pull_candidates,
               ("PULL-16", "PULL-17", "PULL-18", "PULL-13", "PULL-10", "PULL-11", "PULL-12")),
    Transition(Wake, wake_enabled, wake, _held_candidates(Wake), ("PULL-14", "PULL-18")),
    Transition(HoldTimeout, timeout_enabled, timeout, _held_candidates(HoldTimeout), ("PULL-13", "PULL-14")),
    Transition(Answered, answered_enabled, answered, _answered_candidates,
               ("PULL-19", "PULL-20", "PULL-21", "PULL-22", "PULL-23", "PULL-32")),
    Transition(Consume, consume_enabled, consume, _consume_candidates, ("PULL-34", "PULL-27")),
    Transition(PersistSent, persist_sent_enabled, persist_sent, _persist_sent_candidates, ("PULL-22", "PULL-35")),
    Transition(Persist, persist_enabled, persist, _persist_candidates, ("PULL-22", "PULL-24", "PULL-35")),
    Transition(DelayedFix, fix_enabled, fix, _per_queue(DelayedFix), ("PULL-22",)),
    Transition(QueueRemoved, removed_enabled, removed, _per_queue(QueueRemoved), ("PULL-22", "PULL-24")),
    Transition(Poll, poll_enabled, poll, _poll_candidates, ("PULL-34", "PULL-35")),
    Transition(Commit, commit_enabled, commit, _commit_candidates, ("PULL-35",)),
    Transition(Seek, seek_enabled, seek, _seek_candidates, ("PULL-36", "PULL-31")),
    Transition(RawPull, raw_pull_enabled, raw_pull, _raw_candidates,
               ("PULL-1", "PULL-2", "PULL-3", "PULL-4", "PULL-5", "PULL-6", "PULL-7", "PULL-8", "PULL-9", "PULL-10",
                "PULL-11", "PULL-12", "PULL-16", "PULL-17", "PULL-18")),
    Transition(PauseQueue, pause_enabled, pause, _pause_candidates, ("PULL-40",)),
    Transition(Suspend, suspend_enabled, suspend, _suspend_candidates, ("PULL-40",)),
    Transition(QueueDestroyed, destroyed_enabled, destroyed, _per_queue(QueueDestroyed),
               ("PULL-41", "PULL-2", "PULL-5")),
    Transition(TimePasses, time_enabled, time, _time_candidates,
               ("PULL-14", "PULL-15", "PULL-22", "PULL-23", "PULL-34")),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step
#: Every candidate action of a state under a model's bounds (not yet guarded).
candidates = TRANSITIONS.candidates
