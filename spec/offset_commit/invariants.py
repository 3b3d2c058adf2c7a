"""Offset commit: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.offset_commit.machine import (
    Action,
    CommitArrives,
    Config,
    ConsumeFinished,
    ConsumerCrashed,
    LateOffsetWrite,
    OffsetState,
    OffsetUpdated,
    OrderlyConsumed,
    PersistAll,
    PullFound,
    PullNoNewMessage,
    QueueAssigned,
    QueueDropped,
    TakeMessages,
    _pull_commit,
    enabled,
    step,
)
from rocketspec.spec.offset_commit.oracles import NO_OFFSET
from rocketspec.spec.protocol import MessageModel
from rocketspec.spec.versions import DEFAULT_PROFILE, V4_9_3

# --- Invariants ---------------------------------------------------------------------------------------------


def first_unhandled(state: OffsetState) -> int:
    """The smallest offset not yet handled (OFF-17)."""
    offset = 0
    while offset in state.done:
        offset += 1
    return offset


def at_least_once(state: OffsetState) -> bool:
    """OFF-17: neither the stored offset nor the memory entry passes a message never handled."""
    gap = first_unhandled(state)
    return state.stored <= gap and state.memory <= gap


def memory_within_process_queue(state: OffsetState) -> bool:
    """OFF-18, OFF-3, OFF-14, OFF-15: while held, every removeMessage result waiting to be written and the
    memory entry are at most the smallest message still cached or taken, and the memory entry at most the
    pull offset. The memory part does not apply after a late write (OFF-12), nor to broadcasting before
    4.9.8 (OFF-18's versions)."""
    held = state.held
    if held is None:
        return True
    floor = min((*held.pq.cached, *held.pq.taken), default=held.next_offset)
    if any(r.removed is not None and r.removed > floor for r in held.requests):
        return False
    if state.memory == NO_OFFSET or not state.config.forgets or held.late_write:
        return True
    return state.memory <= floor and state.memory <= held.next_offset


def no_message_lost(state: OffsetState) -> bool:
    """OFF-19, OFF-1, OFF-4: while held, every unhandled message below the pull offset is cached or taken, and
    (concurrent) exactly the cached messages are in consume requests whose listener has not returned."""
    held = state.held
    if held is None:
        return True
    waiting = set(held.pq.cached) | set(held.pq.taken)
    if any(o not in state.done and o not in waiting for o in range(held.next_offset)):
        return False
    if state.config.orderly:
        return True
    due = {o for r in held.requests if r.removed is None for o in r.offsets}
    return set(held.pq.cached) == due


def memory_only_rises(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-5, OFF-4: while the queue stays held, the memory entry never moves back (increaseOnly; the orderly
    commit overwrites, but with ever larger values)."""
    if before.held is None or after.held is None:
        return True
    return after.memory >= before.memory


def broker_overwrites(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-8: after a commit arrives the stored offset is exactly its value, lower or not."""
    if not isinstance(action, CommitArrives):
        return True
    return after.stored == action.offset


def pull_commits_memory(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-9, OFF-10: a clustering pull sends at most one commit, the memory entry, and only when it is > 0;
    a broadcasting pull commits nothing."""
    if not isinstance(action, (PullFound, PullNoNewMessage)):
        return True
    sent = list(after.in_flight)
    for value in before.in_flight:
        sent.remove(value)
    if not before.config.clustering or before.memory <= 0:
        return sent == []
    return sent == [before.memory]


def resumes_at_stored_offset(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-13, OFF-19, OFF-6, OFF-7: a queue added back starts no later than its first unhandled message; in
    clustering exactly at the broker offset (0 when there is none), which the memory entry then holds."""
    if not isinstance(action, QueueAssigned) or after.held is None:
        return True
    start = after.held.next_offset
    if start > first_unhandled(before):
        return False
    if not before.config.clustering:
        return True
    expected = max(before.stored, 0)
    return start == expected and after.memory == expected


INVARIANTS: tuple[Invariant[OffsetState], ...] = (
    Invariant("at_least_once", ("OFF-17", "OFF-8", "OFF-11", "OFF-16"), at_least_once),
    Invariant(
        "memory_within_process_queue", ("OFF-18", "OFF-3", "OFF-14", "OFF-15"), memory_within_process_queue
    ),
    Invariant("no_message_lost", ("OFF-19", "OFF-1", "OFF-4", "OFF-12"), no_message_lost),
)

STEP_INVARIANTS: tuple[StepInvariant[OffsetState, Action], ...] = (
    StepInvariant("memory_only_rises", ("OFF-5", "OFF-4"), memory_only_rises),
    StepInvariant("broker_overwrites", ("OFF-8",), broker_overwrites),
    StepInvariant("pull_commits_memory", ("OFF-9", "OFF-10"), pull_commits_memory),
    StepInvariant(
        "resumes_at_stored_offset", ("OFF-13", "OFF-19", "OFF-6", "OFF-7"), resumes_at_stored_offset
    ),
)


def default_variants(messages: int = 3, pull_batch: int = 2) -> tuple[Config, ...]:
    """The machines :func:`model` explores by default: clustering concurrent with one message per consume
    request (RocketMQ's default), with two plus one failing send-back (OFF-4), and with a late write after a
    drop (OFF-12, on one message fewer to stay small); clustering orderly; broadcasting under 4.9.8 and 4.9.3
    (OFF-16, OFF-18)."""
    clustering, broadcasting = MessageModel.CLUSTERING, MessageModel.BROADCASTING
    return (
        Config(clustering, False, DEFAULT_PROFILE, messages, pull_batch, 1),
        Config(clustering, False, DEFAULT_PROFILE, max(messages - 1, 1), pull_batch, 1, late_writes=True),
        Config(clustering, False, DEFAULT_PROFILE, messages, pull_batch, 2, max_send_back_failures=1),
        Config(clustering, True, DEFAULT_PROFILE, messages, pull_batch, 1),
        Config(broadcasting, False, DEFAULT_PROFILE, messages, pull_batch, 1),
        Config(broadcasting, False, V4_9_3, messages, pull_batch, 1),
    )


def _subsets(offsets: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    for size in range(len(offsets) + 1):
        yield from itertools.combinations(offsets, size)


def model(
    messages: int = 3,
    pull_batch: int = 2,
    max_crashes: int = 1,
    max_drops: int = 1,
    max_in_flight: int = 2,
    variants: tuple[Config, ...] | None = None,
) -> Model[OffsetState, Action]:
    """One queue of ``messages`` messages pulled ``pull_batch`` at a time, with up to ``max_crashes`` crashes,
    ``max_drops`` drops and ``max_in_flight`` commits travelling at once, for each of ``variants`` (by
    default :func:`default_variants`)."""
    machines = default_variants(messages, pull_batch) if variants is None else variants

    def actions(state: OffsetState) -> Iterator[Action]:
        config = state.config
        for offset in sorted(set(state.in_flight)):
            yield CommitArrives(offset)
        for offset in sorted(set(state.late)):
            yield LateOffsetWrite(offset)
        if state.crashes < max_crashes:
            yield ConsumerCrashed()
        held = state.held
        if held is None:
            yield QueueAssigned()
            return
        # Bounds, not rules: a commit is sent only while fewer than max_in_flight travel, and a persist only
        # when its value is not travelling already (a second copy reaches no new broker value).
        room = len(state.in_flight) < max_in_flight
        sends = config.clustering and state.memory != NO_OFFSET
        if state.memory != NO_OFFSET and (room or not sends) and state.memory not in state.in_flight:
            yield PersistAll()
        if (room or not sends) and state.drops < max_drops:
            yield QueueDropped()
        if room or not _pull_commit(state):
            yield PullFound()
            yield PullNoNewMessage()
        retries = config.clustering and state.send_back_failures < config.max_send_back_failures
        for request in held.requests:
            if request.removed is not None:
                yield OffsetUpdated(request)
                continue
            for failed in _subsets(request.offsets) if retries else [()]:
                yield ConsumeFinished(request, failed)
        if config.orderly:
            yield TakeMessages()
            yield OrderlyConsumed(True)
            yield OrderlyConsumed(False)

    bounds = (
        f"1 queue x {messages} messages, pull batch {pull_batch}, <= {max_crashes} crash(es), "
        f"<= {max_drops} drop(s), <= {max_in_flight} commits in flight; {len(machines)} variant(s)"
    )
    return Model(
        area="offset_commit",
        bounds=bounds,
        initial=tuple(OffsetState(config) for config in machines),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
