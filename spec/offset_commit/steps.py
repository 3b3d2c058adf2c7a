"""Offset commit: the guards and effects of the machine's transitions for the brokers' queues, the clients' lives
and assignment, and the helpers they share (``pulls`` has those of pulls and consumption; ``admin`` those of the
admin requests and resets; ``machine`` the table).

The state and the actions are in ``state``; the oracles the effects apply in ``oracles`` (the client side) and
``broker`` (the broker side and the admin answers). Each effect's docstring states its rule and cites the clauses;
its guard says when the action can happen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rocketspec.spec.offset_commit.broker import (
    crash_keeps,
    offset_after_restart,
    offset_by_time,
)
from rocketspec.spec.offset_commit.oracles import (
    NO_OFFSET,
    ProcessQueueState,
    StoreRead,
    broker_commit,
    broker_query_offset,
    local_persist,
    local_persist_all,
    pull_commit_request,
    pull_start,
    read_offset,
    remote_persist_all,
    remove_offset,
    update_offset,
)
from rocketspec.spec.offset_commit.state import (
    BrokerRestarted,
    Client,
    CommitArrives,
    ConsumerCrashed,
    ConsumeRequest,
    ConsumerShutdown,
    ConsumerStarted,
    GroupCreated,
    Heartbeat,
    Held,
    Lane,
    LateOffsetWrite,
    LockedRead,
    LockedStart,
    MessageStored,
    OffsetCorrected,
    OffsetRead,
    OffsetsPersisted,
    OffsetState,
    PersistAll,
    QueueAssigned,
    QueueDropped,
    StalePull,
    but,
)
from rocketspec.spec.protocol import (
    CONSUME_TIMESTAMP_DEFAULT_LAG_MS,
    PULL_FLAG_COMMIT_OFFSET,
    ReadOffsetType,
    ResponseCode,
    is_retry_topic,
)
from rocketspec.spec.versions import VersionProfile

# --- Helpers ------------------------------------------------------------------------------------------------


def _plus(values: tuple[int, ...], *more: int) -> tuple[int, ...]:
    return tuple(sorted((*values, *more)))


def _without_one(values: tuple[int, ...], value: int) -> tuple[int, ...]:
    index = values.index(value)
    return values[:index] + values[index + 1:]


def canonical_requests(requests: Iterable[ConsumeRequest]) -> tuple[ConsumeRequest, ...]:
    """Consume requests in a canonical order: they run in any order, the order only identifies states."""
    return tuple(sorted(requests, key=lambda r: (r.offsets, r.removed is not None, r.removed or 0)))


def first_gap(handled: frozenset[int]) -> int:
    """The smallest offset not in ``handled``."""
    offset = 0
    while offset in handled:
        offset += 1
    return offset


def valid(state: OffsetState, client: int = 0, queue: int = 0) -> bool:
    return 0 <= client < len(state.clients) and 0 <= queue < len(state.queues)


def client_alive(state: OffsetState, client: int) -> bool:
    return 0 <= client < len(state.clients) and state.clients[client].alive


def held_lane(state: OffsetState, client: int, queue: int) -> Held | None:
    """The lane's ProcessQueue if the client runs and holds it, not marked dropped."""
    if not valid(state, client, queue) or not state.clients[client].alive:
        return None
    held = state.lanes[client][queue].held
    return held if held is not None and not held.dropped else None


def _held_set(state: OffsetState, client: int) -> tuple[bool, ...]:
    """Which queues are in the client's processQueueTable (marked dropped or not)."""
    return tuple(lane.held is not None for lane in state.lanes[client])


def start_commit(state: OffsetState, queue: int, offset: int) -> OffsetState:
    """A commit of ``offset`` starts travelling to the broker of ``queue``."""
    q = state.queues[queue]
    return state.with_queue(queue, but(q, in_flight=_plus(q.in_flight, offset)))


def persist_entry(state: OffsetState, client: int, queue: int) -> OffsetState:
    """persist(mq): the remote store sends the memory entry, the local one writes it into the file (OFF-11,
    OFF-16)."""
    lane = state.lanes[client][queue]
    if state.config.clustering:
        return state if lane.memory == NO_OFFSET else start_commit(state, queue, lane.memory)
    file = local_persist((lane.file,), (lane.memory,), 0, state.config.profile)[0]
    return state.with_lane(client, queue, but(lane, file=file))


def forget(state: OffsetState, client: int, queue: int) -> OffsetState:
    """removeOffset(mq) (OFF-12, OFF-16)."""
    lane = state.lanes[client][queue]
    config = state.config
    memory = remove_offset((lane.memory,), 0, local=not config.clustering, profile=config.profile)[0]
    return state.with_lane(client, queue, but(lane, memory=memory))


def _persist_all(state: OffsetState, client: int) -> OffsetState:
    """persistAll over the client's processQueueTable (OFF-11, OFF-16)."""
    held = _held_set(state, client)
    lanes = state.lanes[client]
    memory = tuple(lane.memory for lane in lanes)
    if state.config.clustering:
        after, sent = remote_persist_all(memory, held)
        for queue, offset in sent:
            state = start_commit(state, queue, offset)
        for queue, lane in enumerate(state.lanes[client]):
            state = state.with_lane(client, queue, but(lane, memory=after[queue]))
        return state
    files = local_persist_all(tuple(lane.file for lane in lanes), memory, held, state.config.profile)
    for queue, lane in enumerate(lanes):
        state = state.with_lane(client, queue, but(lane, file=files[queue]))
    return state


def waive(state: OffsetState, client: int, queue: int, offset: int) -> OffsetState:
    """Offsets below ``offset`` not yet handled are given up (an admin change, a start by consumeFromWhere)."""
    gap = first_gap(state.handled(client, queue))
    if offset <= gap:
        return state
    skipped = frozenset(range(gap, offset))
    if state.config.clustering:
        q = state.queues[queue]
        return state.with_queue(queue, but(q, waived=q.waived | skipped))
    lane = state.lanes[client][queue]
    return state.with_lane(client, queue, but(lane, waived=lane.waived | skipped))


def mark_handled(state: OffsetState, client: int, queue: int, offsets: Iterable[int]) -> OffsetState:
    """The offsets were handled (consumed, or handed to the retry topic; OFF-17)."""
    done = frozenset(offsets)
    if state.config.clustering:
        q = state.queues[queue]
        return state.with_queue(queue, but(q, done=q.done | done))
    lane = state.lanes[client][queue]
    return state.with_lane(client, queue, but(lane, done=lane.done | done))


# The release whose store corrects a pull past the max offset to the max offset, also when the min offset is 0.
_V4_9_4 = VersionProfile.of("4.9.4")


def overflow_next(max_offset: int, profile: VersionProfile) -> int:
    """The nextBeginOffset of a pull past the max offset of a queue whose min offset is 0 (OFFSET_OVERFLOW_BADLY,
    DefaultMessageStore.getMessage, as PULL-5 states it): the max offset from 4.9.4, 0 before."""
    return max_offset if profile >= _V4_9_4 else 0


def pull_commit(state: OffsetState, client: int, queue: int) -> int | None:
    """The commit a pull of the lane carries now (OFF-9): the memory entry with the commit bit, or None."""
    value, flag = pull_commit_request(state.config.message_model, state.lanes[client][queue].memory)
    return value if flag & PULL_FLAG_COMMIT_OFFSET else None


def allowed_starts(state: OffsetState, client: int, queue: int) -> frozenset[int]:
    """Where the lane's assignment in progress may start (OFF-13, OFF-20): the stored offset read, or by
    consumeFromWhere from the broker's max offset or searchOffset as it answered, at any time since the read."""
    reading = state.lanes[client][queue].reading
    if reading is None:
        return frozenset()
    answer, max_then = reading
    config = state.config
    retry = is_retry_topic(config.queues[queue].topic)
    times = state.queues[queue].times
    if answer != NO_OFFSET:
        return frozenset({pull_start(config.consume_from_where, answer, retry, 0, 0)})
    timestamp = config.consume_timestamp
    if timestamp is None:
        timestamp = state.clients[client].started_ms - CONSUME_TIMESTAMP_DEFAULT_LAG_MS
    return frozenset(
        pull_start(config.consume_from_where, answer, retry, n, offset_by_time(times[:n], timestamp))
        for n in range(min(max_then, len(times)), len(times) + 1)
    )


# --- Guards and effects: the queue's broker -----------------------------------------------------------------


def _stored_enabled(state: OffsetState, action: MessageStored) -> bool:
    if not valid(state, 0, action.queue):
        return False
    q = state.queues[action.queue]
    if q.times and action.ts_ms < q.times[-1]:
        return False
    return q.owed != 0 or not is_retry_topic(state.config.queues[action.queue].topic)


def _stored(state: OffsetState, action: MessageStored) -> OffsetState:
    """A message is stored at the queue's max offset with its store time (OFF-22); a retry queue receives only the
    copies sent back to it (OFF-30)."""
    q = state.queues[action.queue]
    owed = q.owed - 1 if q.owed > 0 else q.owed
    return state.with_queue(action.queue, but(q, times=(*q.times, action.ts_ms), owed=owed))


def _commit_enabled(state: OffsetState, action: CommitArrives) -> bool:
    return valid(state, 0, action.queue) and action.offset in state.queues[action.queue].in_flight


def _commit_arrives(state: OffsetState, action: CommitArrives) -> OffsetState:
    """A travelling commit reaches the broker, which overwrites the stored offset, also with a lower one (OFF-8)."""
    q = state.queues[action.queue]
    stored, _lower_logged = broker_commit(q.stored, action.offset)
    return state.with_queue(action.queue, but(q, stored=stored, in_flight=_without_one(q.in_flight,
                                                                                                action.offset)))


def _broker_known(state: OffsetState, action: Any) -> bool:
    return action.broker in state.config.brokers


def _offsets_persisted(state: OffsetState, action: OffsetsPersisted) -> OffsetState:
    """The broker writes its offset table, and the subscription groups it created, to disk (OFF-22)."""
    for queue in state.config.on(action.broker):
        q = state.queues[queue]
        state = state.with_queue(queue, but(q, persisted=q.stored, cloned_persisted=q.cloned))
    saved = state.group_saved | {action.broker} if action.broker in state.group_at \
        else state.group_saved - {action.broker}
    return but(state, group_saved=saved)


def _restart_enabled(state: OffsetState, action: BrokerRestarted) -> bool:
    if not _broker_known(state, action):
        return False
    queues = state.config.on(action.broker)
    if len(action.kept) != len(queues):
        return False
    for queue, kept in zip(queues, action.kept, strict=True):
        times = state.queues[queue].times
        least = crash_keeps(times, action.at_ms, state.config.sync_flush) if action.crashed else len(times)
        if not least <= kept <= len(times):
            return False
    return True


def _restarted(state: OffsetState, action: BrokerRestarted) -> OffsetState:
    """The broker restarts (OFF-22): after a clean stop (which persisted everything) all stays; after a crash the
    offset table is the last one persisted, the subscription groups too, an unflushed tail of each queue may be
    gone (SYNC_FLUSH: nothing; what is lost is given up) and the retry copies due may come again or not. Its
    consumer connections are forgotten (OFF-29)."""
    crashed = action.crashed
    for queue, kept in zip(state.config.on(action.broker), action.kept, strict=True):
        q = state.queues[queue]
        survived = frozenset(range(kept))
        # What was lost goes with its handling; a consumer that was past it skips whatever is stored at its offsets
        # again: given up.
        lost = frozenset(range(kept, q.max_offset))
        stored = offset_after_restart(q.stored, q.persisted, crashed)
        cloned = offset_after_restart(q.cloned, q.cloned_persisted, crashed)
        owed = -1 if crashed and is_retry_topic(state.config.queues[queue].topic) else q.owed
        state = state.with_queue(queue, but(
            q, times=q.times[:kept], stored=stored, persisted=stored, cloned=cloned, cloned_persisted=cloned,
            done=q.done & survived, waived=(q.waived & survived) | lost, owed=owed))
        for client in range(len(state.clients)):
            lane = state.lanes[client][queue]
            state = state.with_lane(client, queue, but(lane, done=lane.done & survived,
                                                                waived=(lane.waived & survived) | lost))
    broker = action.broker
    known = (broker in state.group_saved) if crashed else (broker in state.group_at)
    group_at = state.group_at | {broker} if known else state.group_at - {broker}
    group_saved = state.group_saved | {broker} if known else state.group_saved - {broker}
    clients = tuple(but(c, online=c.online - {broker}) for c in state.clients)
    return but(state, clients=clients, group_at=group_at, group_saved=group_saved,
                        restarts=state.restarts + 1)


# --- Guards and effects: a client's life --------------------------------------------------------------------


def _started_enabled(state: OffsetState, action: ConsumerStarted) -> bool:
    return 0 <= action.client < len(state.clients) and not state.clients[action.client].alive


def _started(state: OffsetState, action: ConsumerStarted) -> OffsetState:
    """The client starts with an empty memory table; broadcasting loads its file into it (OFF-24, OFF-16)."""
    client = action.client
    state = state.with_client(client, Client(alive=True, started_ms=action.at_ms))
    for queue, lane in enumerate(state.lanes[client]):
        memory = lane.file if not state.config.clustering else NO_OFFSET
        state = state.with_lane(client, queue, Lane(memory=memory, file=lane.file, done=lane.done,
                                                    waived=lane.waived))
    return state


def _alive_enabled(state: OffsetState, action: Any) -> bool:
    return client_alive(state, action.client)


def _gone(state: OffsetState, client: int) -> OffsetState:
    """The client's process state goes: memory, ProcessQueues, stale pulls, late writes (OFF-24)."""
    state = state.with_client(client, Client())
    for queue, lane in enumerate(state.lanes[client]):
        state = state.with_lane(client, queue, Lane(file=lane.file, done=lane.done, waived=lane.waived))
    return state


def _shutdown(state: OffsetState, action: ConsumerShutdown) -> OffsetState:
    """A clean shutdown: persistAll over processQueueTable, unregister, every ProcessQueue dropped without a
    per-queue persist (OFF-24, OFF-11, OFF-16)."""
    after = _gone(_persist_all(state, action.client), action.client)
    return but(after, crashes=state.crashes + 1)


def _crashed(state: OffsetState, action: ConsumerCrashed) -> OffsetState:
    """The process dies: nothing is persisted; commits already travelling may still arrive (OFF-24, OFF-17)."""
    return but(_gone(state, action.client), crashes=state.crashes + 1)


def _heartbeat_enabled(state: OffsetState, action: Heartbeat) -> bool:
    return client_alive(state, action.client) and _broker_known(state, action)


def _heartbeat(state: OffsetState, action: Heartbeat) -> OffsetState:
    """The client is online at the broker (OFF-29)."""
    client = state.clients[action.client]
    return state.with_client(action.client, but(client, online=client.online | {action.broker}))


def _created_enabled(state: OffsetState, action: GroupCreated) -> bool:
    return action.broker in state.config.brokers and action.broker not in state.group_at


def _group_created(state: OffsetState, action: GroupCreated) -> OffsetState:
    """The broker knows the group's subscription settings from now on (OFF-29); they are written with its next
    persist (OFF-22)."""
    return but(state, group_at=state.group_at | {action.broker})


def _persist_all_effect(state: OffsetState, action: PersistAll) -> OffsetState:
    """persistAll every 5 s over processQueueTable: the remote store sends each held queue's memory entry and
    forgets the entries of queues not held, the local store writes them into the file; nothing when no queue is
    held (OFF-11, OFF-16)."""
    return _persist_all(state, action.client)


# --- Guards and effects: assignment and drops ---------------------------------------------------------------


def _read_enabled(state: OffsetState, action: OffsetRead) -> bool:
    if not valid(state, action.client, action.queue):
        return False
    client = state.clients[action.client]
    lane = state.lanes[action.client][action.queue]
    # A read that failed (-2) left the queue out: the next rebalance reads again. (A rebalance under way goes on
    # when a reset suspends the consumer: only the next one waits for the resume.)
    reading_done = lane.reading is None or lane.reading[0] == -2
    failure_ok = action.failed is None or state.config.clustering
    return client.alive and lane.held is None and reading_done and failure_ok


def _read(state: OffsetState, action: OffsetRead) -> OffsetState:
    """removeDirtyOffset, then readOffset(READ_FROM_STORE) (OFF-13, OFF-6): the broker's QUERY_CONSUMER_OFFSET
    answer (OFF-7: a queue whose messages are all in memory answers 0 for a group with no offset; an error answer
    reads as no offset, -1, and no answer as -2) or the local file's entry (OFF-16), cached when found."""
    return _read_store(forget(state, action.client, action.queue), action)


def _read_store(state: OffsetState, action: OffsetRead | LockedRead) -> OffsetState:
    """readOffset(READ_FROM_STORE) into the lane's ``reading`` (OFF-6, OFF-7, OFF-16)."""
    lane = state.lanes[action.client][action.queue]
    q = state.queues[action.queue]
    config = state.config
    if config.clustering:
        code, offset = broker_query_offset(q.stored, 0, False)
        found = StoreRead.FOUND if code == ResponseCode.SUCCESS else StoreRead.NOT_FOUND
        found = found if action.failed is None else action.failed
    else:
        offset = lane.file
        found = StoreRead.NOT_FOUND if offset == NO_OFFSET else StoreRead.FOUND
    answer, memory = read_offset(ReadOffsetType.READ_FROM_STORE, lane.memory, found, max(offset, 0),
                                 config.clustering)
    return state.with_lane(action.client, action.queue,
                           but(lane, memory=memory, reading=(answer, q.max_offset), raised=False))


def _assign_enabled(state: OffsetState, action: QueueAssigned) -> bool:
    if not valid(state, action.client, action.queue) or not state.clients[action.client].alive:
        return False
    lane = state.lanes[action.client][action.queue]
    return lane.held is None and action.start >= 0 and action.start in allowed_starts(state, action.client,
                                                                                        action.queue)


def _assigned(state: OffsetState, action: QueueAssigned) -> OffsetState:
    """The ProcessQueue is added and pulls start at the offset read, or, with none, where consumeFromWhere says
    (OFF-13, OFF-19, OFF-20, OFF-21); what such a start skips is given up."""
    lane = state.lanes[action.client][action.queue]
    assert lane.reading is not None
    held = Held(ProcessQueueState(), action.start, late_write=lane.raised, started=not state.config.orderly)
    state = state.with_lane(action.client, action.queue, but(lane, held=held, reading=None, raised=False))
    if lane.reading[0] == NO_OFFSET:
        state = waive(state, action.client, action.queue, action.start)
    return state


def _locked_read_enabled(state: OffsetState, action: LockedRead) -> bool:
    held = held_lane(state, action.client, action.queue)
    if held is None or held.started or held.pull is not None or state.clients[action.client].paused:
        return False
    reading = state.lanes[action.client][action.queue].reading
    return (reading is None or reading[0] == -2) and (action.failed is None or state.config.clustering)


def _locked_read(state: OffsetState, action: LockedRead) -> OffsetState:
    """Orderly: the first pull of the locked ProcessQueue reads the offset again, readOffset(READ_FROM_STORE),
    without removeDirtyOffset (OFF-31, OFF-6, OFF-7)."""
    return _read_store(state, action)


def _locked_start_enabled(state: OffsetState, action: LockedStart) -> bool:
    held = held_lane(state, action.client, action.queue)
    if held is None or held.started or state.lanes[action.client][action.queue].reading is None:
        return False
    return action.start >= 0 and action.start in allowed_starts(state, action.client, action.queue)


def _locked_start(state: OffsetState, action: LockedStart) -> OffsetState:
    """Orderly: the read's start (OFF-20) is the pull offset, and pulls start (OFF-31); what it skips of a fresh
    start is given up."""
    lane = state.lanes[action.client][action.queue]
    assert lane.held is not None and lane.reading is not None
    held = but(lane.held, next_offset=action.start, started=True)
    state = state.with_lane(action.client, action.queue, but(lane, held=held, reading=None))
    if lane.reading[0] == NO_OFFSET:
        state = waive(state, action.client, action.queue, action.start)
    return state


def _drop_enabled(state: OffsetState, action: QueueDropped) -> bool:
    return held_lane(state, action.client, action.queue) is not None


def held_stale(lane: Lane, held: Held) -> tuple[StalePull, ...]:
    """The lane's stale pulls once ``held`` leaves (its pull in flight, if any, becomes one)."""
    if held.pull is None:
        return lane.stale
    return (*lane.stale, StalePull(held.pull, held.pq.msg_count == 0))


def _dropped(state: OffsetState, action: QueueDropped) -> OffsetState:
    """OFF-12: marked dropped, persist(mq), removeOffset(mq) (the local store's from 4.9.8, OFF-16). The dropped
    ProcessQueue's consume requests go with it, except that a thread whose removeMessage result is ready may have
    passed the isDropped check already and write it later (``late``); its pull in flight may still be answered (a
    stale pull)."""
    client, queue = action.client, action.queue
    lane = state.lanes[client][queue]
    held = lane.held
    assert held is not None
    # Of the results ready, the largest is the one a late write can do most with (increaseOnly): the machine keeps
    # that one.
    ready = [r.removed for r in held.requests if r.removed is not None]
    late = _plus(lane.late, max(ready)) if ready and state.config.late_writes else lane.late
    state = state.with_lane(client, queue, but(lane, held=None, late=late, stale=held_stale(lane, held)))
    state = forget(persist_entry(state, client, queue), client, queue)
    return but(state, drops=state.drops + 1)


def _late_enabled(state: OffsetState, action: LateOffsetWrite) -> bool:
    return client_alive(state, action.client) and valid(state, action.client, action.queue) and \
        action.offset in state.lanes[action.client][action.queue].late


def _late_write(state: OffsetState, action: LateOffsetWrite) -> OffsetState:
    """A consume thread of a dropped ProcessQueue that passed the isDropped check writes its result now, into
    whatever memory entry there is (OFF-12; increaseOnly, OFF-5)."""
    lane = state.lanes[action.client][action.queue]
    held = lane.held
    late_held = None if held is None else but(held, late_write=True)
    return state.with_lane(action.client, action.queue, but(
        lane, memory=update_offset(lane.memory, action.offset, True), held=late_held,
        late=_without_one(lane.late, action.offset), raised=lane.raised or lane.reading is not None))


def _corrected_enabled(state: OffsetState, action: OffsetCorrected) -> bool:
    if not client_alive(state, action.client) or not valid(state, action.client, action.queue):
        return False
    held = state.lanes[action.client][action.queue].held
    return held is not None and held.dropped and held.moved_to is not None


def _corrected(state: OffsetState, action: OffsetCorrected) -> OffsetState:
    """OFF-23: 10 s after an OFFSET_ILLEGAL answer, updateOffset(nextBeginOffset, increaseOnly=false), persist(mq),
    then removeProcessQueue: persist(mq) and removeOffset(mq) again, and the ProcessQueue leaves the table; what it
    cached below that offset is never consumed (given up)."""
    client, queue = action.client, action.queue
    lane = state.lanes[client][queue]
    assert lane.held is not None and lane.held.moved_to is not None
    held_to = lane.held.moved_to
    state = state.with_lane(client, queue, but(lane, memory=update_offset(lane.memory, held_to, False)))
    state = persist_entry(persist_entry(state, client, queue), client, queue)
    state = forget(state, client, queue)
    lane = state.lanes[client][queue]
    # The dropped ProcessQueue's messages below the corrected offset are never consumed: given up.
    return waive(state.with_lane(client, queue, but(lane, held=None)), client, queue, held_to)
