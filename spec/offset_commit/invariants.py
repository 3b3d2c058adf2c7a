"""Offset commit: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.offset_commit.machine import TRANSITIONS, Bounds
from rocketspec.spec.offset_commit.oracles import NO_OFFSET
from rocketspec.spec.offset_commit.state import (
    TOPIC,
    Action,
    AdminCommit,
    BrokerRestarted,
    CommitArrives,
    Config,
    ConsumerShutdown,
    GroupDeleted,
    Heartbeat,
    LateOffsetWrite,
    LockedRead,
    LockedStart,
    OffsetCorrected,
    OffsetRead,
    OffsetResetAsked,
    OffsetsCloned,
    OffsetsPersisted,
    OffsetState,
    OrderlyConsumed,
    PullOffsetMoved,
    PullSent,
    QueueAssigned,
    ResetApplied,
    ResetReceived,
    TakeMessages,
    initial_state,
)
from rocketspec.spec.offset_commit.steps import first_gap
from rocketspec.spec.protocol import ConsumeFromWhere, MessageModel
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.transitions import Transition
from rocketspec.spec.versions import DEFAULT_PROFILE, V4_9_3

# --- Invariants ---------------------------------------------------------------------------------------------


def first_unhandled(state: OffsetState, client: int = 0, queue: int = 0) -> int:
    """The smallest offset of ``queue`` neither handled nor given up, as ``client`` counts (OFF-17)."""
    return first_gap(state.handled(client, queue))


def _lanes(state: OffsetState) -> Iterator[tuple[int, int]]:
    for client in range(len(state.clients)):
        for queue in range(len(state.queues)):
            yield client, queue


def at_least_once(state: OffsetState) -> bool:
    """OFF-17: no stored offset (the broker's, or each client's file when broadcasting) and no memory entry passes a
    message that was neither handled nor given up."""
    for client, queue in _lanes(state):
        gap = first_unhandled(state, client, queue)
        lane = state.lanes[client][queue]
        stored = state.queues[queue].stored if state.config.clustering else lane.file
        if stored > gap or lane.memory > gap:
            return False
    return True


def memory_within_process_queue(state: OffsetState) -> bool:
    """OFF-18, OFF-3, OFF-14, OFF-15: in each ProcessQueue held (not marked dropped, its pulls started), every
    removeMessage result waiting to be written and the memory entry are at most the smallest message still cached
    or taken, and the memory entry at most the pull offset. The memory part does not apply after a late write
    (OFF-12), nor to broadcasting before 4.9.8 (OFF-18's versions)."""
    for client, queue in _lanes(state):
        lane = state.lanes[client][queue]
        held = lane.held
        if held is None or held.dropped or not held.started:
            continue
        floor = min((*held.pq.cached, *held.pq.taken), default=held.next_offset)
        if any(r.removed is not None and r.removed > floor for r in held.requests):
            return False
        if lane.memory == NO_OFFSET or not state.config.forgets or held.late_write:
            continue
        if lane.memory > floor or lane.memory > held.next_offset:
            return False
    return True


def no_message_lost(state: OffsetState) -> bool:
    """OFF-19, OFF-1, OFF-4: in each ProcessQueue held (not marked dropped, its pulls started), every message below
    the pull offset that is not handled is cached or taken, and (concurrent) exactly the cached messages are in
    consume requests whose listener has not returned."""
    for client, queue in _lanes(state):
        held = state.lanes[client][queue].held
        if held is None or held.dropped or not held.started:
            continue
        handled = state.handled(client, queue)
        waiting = set(held.pq.cached) | set(held.pq.taken)
        if any(o not in handled and o not in waiting for o in range(held.next_offset)):
            return False
        if state.config.orderly:
            continue
        due = {o for r in held.requests if r.removed is None for o in r.offsets}
        if set(held.pq.cached) != due:
            return False
    return True


def stopped_clients_hold_nothing(state: OffsetState) -> bool:
    """OFF-24, OFF-29: a client not running has no memory entry, no ProcessQueue, no pull in flight, is online at
    no broker and has no reset pending; a paused one is resetting (OFF-26)."""
    for client, c in enumerate(state.clients):
        if c.paused and c.reset is None:
            return False
        if c.alive:
            continue
        if c.online or c.reset is not None or c.reset_sent is not None:
            return False
        if any(lane.memory != NO_OFFSET or lane.held is not None or lane.stale or lane.late
               for lane in state.lanes[client]):
            return False
    return True


def memory_only_rises(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-5, OFF-4: while a ProcessQueue stays held, its memory entry never moves back (increaseOnly; the orderly
    commit overwrites, but with ever larger values), unless a late write raised it (OFF-12): an orderly commit then
    overwrites it with a lower value."""
    for client, queue in _lanes(before):
        was, now = before.lanes[client][queue], after.lanes[client][queue]
        if was.held is None or now.held is None or was.held.dropped or now.held.dropped or was.held.late_write:
            continue
        if not was.held.started:  # an orderly first pull's read caches what the broker has, lower or not (OFF-31)
            continue
        if now.memory < was.memory:
            return False
    return True


def broker_overwrites(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-8: after a commit arrives the stored offset is exactly its value, lower or not."""
    if not isinstance(action, CommitArrives):
        return True
    return after.queues[action.queue].stored == action.offset


def _sent(before: OffsetState, after: OffsetState, queue: int) -> list[int]:
    sent = list(after.queues[queue].in_flight)
    for value in before.queues[queue].in_flight:
        sent.remove(value)
    return sent


def pull_commits_memory(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-9, OFF-10: a clustering pull sends at most one commit, the memory entry, and only when it is > 0;
    a broadcasting pull commits nothing."""
    if not isinstance(action, PullSent):
        return True
    memory = before.lanes[action.client][action.queue].memory
    sent = _sent(before, after, action.queue)
    if not before.config.clustering or memory <= 0:
        return sent == []
    return sent == [memory]


def resumes_at_stored_offset(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-13, OFF-19, OFF-6, OFF-7, OFF-20, OFF-31: a read in clustering answers the broker offset (0 when there is
    none, the queue's messages being in memory) and caches it; a queue added back (and an orderly one's first pull)
    with an offset read starts there, no later than its first unhandled message; without one it starts where
    consumeFromWhere says, and FIRST at 0."""
    if isinstance(action, OffsetRead):
        reading = after.lanes[action.client][action.queue].reading
        if reading is None:
            return False
        if not before.config.clustering or action.failed is not None:
            return True
        expected = max(before.queues[action.queue].stored, 0)
        return reading[0] == expected and after.lanes[action.client][action.queue].memory == expected
    if not isinstance(action, QueueAssigned | LockedStart):
        return True
    reading = before.lanes[action.client][action.queue].reading
    assert reading is not None
    if reading[0] == NO_OFFSET:
        first = before.config.consume_from_where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        return not first or action.start == 0
    return action.start == reading[0] <= first_unhandled(before, action.client, action.queue)


def corrections_persist_and_forget(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-23, OFF-26: an OFFSET_ILLEGAL correction and an applied reset leave the queue out of processQueueTable with
    no memory entry (4.9.8), their offset persisted: sent to the broker, or written into the file."""
    if isinstance(action, OffsetCorrected):
        held = before.lanes[action.client][action.queue].held
        assert held is not None and held.moved_to is not None
        targets = [(action.queue, held.moved_to)]
    elif isinstance(action, ResetApplied):
        reset = before.clients[action.client].reset or ()
        targets = [(q, o) for q, o in reset if before.lanes[action.client][q].held is not None]
    else:
        return True
    for queue, offset in targets:
        lane = after.lanes[action.client][queue]
        if lane.held is not None or (before.config.forgets and lane.memory != NO_OFFSET):
            return False
        persisted = offset in _sent(before, after, queue) if before.config.clustering else lane.file == offset
        if not persisted:
            return False
    return True


def shutdown_persists(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-24, OFF-11: a clean shutdown sends (writes) the memory entry of every queue it held."""
    if not isinstance(action, ConsumerShutdown):
        return True
    for queue, lane in enumerate(before.lanes[action.client]):
        if lane.held is None or lane.memory == NO_OFFSET:
            continue
        if before.config.clustering and lane.memory not in _sent(before, after, queue):
            return False
        if not before.config.clustering and after.lanes[action.client][queue].file != lane.memory:
            return False
    return True


def admin_changes_apply(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-30, OFF-29: an admin commit travels like any other; a clone copies the group's offsets of the topic; a
    deleted group has no offset left on the broker; a heartbeat puts its client online."""
    if isinstance(action, AdminCommit):
        return _sent(before, after, action.queue) == [action.offset]
    if isinstance(action, OffsetsCloned):
        queues = [q for q in before.config.on(action.broker) if before.config.queues[q].topic == TOPIC]
        if all(before.queues[q].stored == NO_OFFSET for q in queues):
            return all(after.queues[q].cloned == before.queues[q].cloned for q in queues)
        return all(after.queues[q].cloned == before.queues[q].stored for q in queues)
    if isinstance(action, GroupDeleted):
        return all(after.queues[q].stored == NO_OFFSET for q in before.config.on(action.broker))
    if isinstance(action, Heartbeat):
        return action.broker in after.clients[action.client].online
    return True


INVARIANTS: tuple[Invariant[OffsetState], ...] = (
    Invariant("at_least_once", ("OFF-17", "OFF-8", "OFF-11", "OFF-16"), at_least_once),
    Invariant(
        "memory_within_process_queue", ("OFF-18", "OFF-3", "OFF-14", "OFF-15"), memory_within_process_queue
    ),
    Invariant("no_message_lost", ("OFF-19", "OFF-1", "OFF-4", "OFF-12"), no_message_lost),
    Invariant("stopped_clients_hold_nothing", ("OFF-24", "OFF-29", "OFF-26"), stopped_clients_hold_nothing),
)

STEP_INVARIANTS: tuple[StepInvariant[OffsetState, Action], ...] = (
    StepInvariant("memory_only_rises", ("OFF-5", "OFF-4"), memory_only_rises),
    StepInvariant("broker_overwrites", ("OFF-8",), broker_overwrites),
    StepInvariant("pull_commits_memory", ("OFF-9", "OFF-10"), pull_commits_memory),
    StepInvariant(
        "resumes_at_stored_offset", ("OFF-13", "OFF-19", "OFF-6", "OFF-7", "OFF-20", "OFF-31"),
        resumes_at_stored_offset,
    ),
    StepInvariant("corrections_persist_and_forget", ("OFF-23", "OFF-26"), corrections_persist_and_forget),
    StepInvariant("shutdown_persists", ("OFF-24", "OFF-11"), shutdown_persists),
    StepInvariant("admin_changes_apply", ("OFF-30", "OFF-29"), admin_changes_apply),
)


# --- Model --------------------------------------------------------------------------------------------------

ONE_QUEUE = (MessageQueue(TOPIC, "broker-a", 0),)


def default_variants(messages: int = 2, pull_batch: int = 1) -> tuple[Config, ...]:
    """The machines :func:`model` explores by default: clustering concurrent with one message per consume
    request (RocketMQ's default), with a late write after a drop (OFF-12), and with two messages per request plus a
    failing send-back (OFF-4); clustering orderly; broadcasting under 4.9.8 and 4.9.3 (OFF-16, OFF-18). All start
    from the first offset (a stored offset decides where they resume)."""
    clustering, broadcasting = MessageModel.CLUSTERING, MessageModel.BROADCASTING
    first = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET

    def config(model: MessageModel, orderly: bool = False, profile: object = DEFAULT_PROFILE, batch: int = 1,
               **more: object) -> Config:
        return Config(model, orderly, profile, ONE_QUEUE, 1, pull_batch, batch, first, **more)  # type: ignore[arg-type]

    return (
        config(clustering),
        config(clustering, late_writes=True),
        config(clustering, batch=2, max_send_back_failures=1),
        config(clustering, True),
        config(broadcasting),
        config(broadcasting, profile=V4_9_3),
    )


def extra_variants() -> tuple[tuple[Config, Bounds, int], ...]:
    """Extra machines, each with its own bounds and messages: a clustering consumer whose broker crashes and loses
    its last message, so that a consumer past it is corrected (OFF-22, OFF-23); admin changes and a reset while
    online (OFF-25, OFF-26, OFF-30), in clustering from the last offset (the default, OFF-7: a fresh queue starts at
    0 anyway) and in broadcasting from a timestamp before every message (OFF-20, OFF-21); a broadcasting consumer
    from the last offset of a fresh local file, while a producer adds messages and the consumer shuts down and
    starts again (OFF-20, OFF-24)."""
    clustering, broadcasting = MessageModel.CLUSTERING, MessageModel.BROADCASTING
    where = ConsumeFromWhere

    def config(model: MessageModel, start: ConsumeFromWhere, pull_batch: int = 2) -> Config:
        return Config(model, False, DEFAULT_PROFILE, ONE_QUEUE, 1, pull_batch, 1, start)

    crash = Bounds(max_crashes=0, max_drops=0, max_restarts=1)
    admin = Bounds(max_crashes=0, max_drops=0, max_admin=1)
    fresh = Bounds(max_crashes=1, max_drops=1, max_messages=3, shutdowns=True)
    return (
        (config(clustering, where.CONSUME_FROM_FIRST_OFFSET), crash, 2),
        (config(clustering, where.CONSUME_FROM_LAST_OFFSET), admin, 2),
        (config(broadcasting, where.CONSUME_FROM_TIMESTAMP), admin, 2),
        (config(broadcasting, where.CONSUME_FROM_LAST_OFFSET), fresh, 1),
    )


def _proposing(config: Config, bounds: Bounds) -> tuple[Transition[OffsetState, Bounds], ...]:
    """The transitions whose candidates can come up in ``config`` under ``bounds`` (the others' generators would
    propose nothing): a shortcut of the explorer's, the same candidates in the same order."""
    admin = (Heartbeat, ResetReceived, ResetApplied, AdminCommit, OffsetResetAsked, OffsetsCloned, GroupDeleted)
    skipped: set[type] = set()
    if bounds.max_admin <= 0:
        skipped.update(admin)
    if bounds.max_restarts <= 0:
        skipped.update((BrokerRestarted, OffsetsPersisted, OffsetCorrected, PullOffsetMoved))
    if not config.orderly:
        skipped.update((TakeMessages, OrderlyConsumed, LockedRead, LockedStart))
    if not config.late_writes:
        skipped.add(LateOffsetWrite)
    if not bounds.shutdowns:
        skipped.add(ConsumerShutdown)
    return tuple(t for t in TRANSITIONS.transitions if t.kind not in skipped)


def model(
    messages: int = 2,
    pull_batch: int = 1,
    max_crashes: int = 1,
    max_drops: int = 1,
    max_in_flight: int = 2,
    variants: tuple[Config, ...] | None = None,
    extra: Iterable[tuple[Config, Bounds, int]] | None = None,
) -> Model[OffsetState, Action]:
    """One queue of ``messages`` messages pulled ``pull_batch`` at a time, with up to ``max_crashes`` crashes,
    ``max_drops`` drops and ``max_in_flight`` commits travelling at once, for each of ``variants`` (by default
    :func:`default_variants`, the late-write and send-back ones without crashes, which have nothing to do with
    them); and the ``extra`` machines (config, bounds, messages; by default :func:`extra_variants` when
    ``variants`` is not given)."""
    base = Bounds(max_crashes, max_drops, max_in_flight)
    machines: list[tuple[Config, Bounds, int]] = []
    for config in default_variants(messages, pull_batch) if variants is None else variants:
        calm = variants is None and (config.late_writes or config.max_send_back_failures > 0)
        machines.append((config, Bounds(0, max_drops, max_in_flight) if calm else base, messages))
    machines.extend(extra_variants() if extra is None and variants is None else extra or ())
    plans: dict[Config, tuple[Bounds, tuple[Transition[OffsetState, Bounds], ...]]] = {}
    for config, bounds, _count in machines:
        if config in plans:
            raise ValueError(f"a machine repeats a variant: {config}")
        plans[config] = (bounds, _proposing(config, bounds))

    def actions(state: OffsetState) -> Iterator[Action]:
        bounds, transitions = plans[state.config]
        for transition in transitions:
            yield from transition.candidates(state, bounds)

    description = (
        f"1 queue x {messages} messages, pull batch {pull_batch}, <= {max_crashes} crash(es), "
        f"<= {max_drops} drop(s), <= {max_in_flight} commits in flight; {len(machines)} variant(s)"
        " (with broker crashes, admin changes, consumeFromWhere)"
    )
    initial = [initial_state(config, range(count)) for config, _bounds, count in machines]
    return TRANSITIONS.model(base, description, initial, INVARIANTS, STEP_INVARIANTS, actions=actions)
