"""Offset commit: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.offset_commit.clauses import CLAUSES
from rocketspec.spec.offset_commit.oracles import (
    NO_OFFSET,
    ProcessQueueState,
    StoreRead,
    broker_commit,
    broker_query_offset,
    broker_stores_pull_commit,
    concurrent_consume_result,
    local_persist,
    local_persist_all,
    make_message_to_consume_again,
    orderly_commit,
    pull_commit_request,
    put_messages,
    read_offset,
    remove_offset,
    take_messages,
    update_offset,
)
from rocketspec.spec.protocol import MessageModel, ReadOffsetType, ResponseCode
from rocketspec.spec.versions import DEFAULT_PROFILE, V4_9_8, VersionProfile

# --- State machine ------------------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class Config:
    """A machine's fixed parameters: message model, orderly or concurrent, release, sizes (the queue's
    messages, the pull batch, consumeMessageBatchMaxSize), how many send-backs may fail, and whether a
    dropped ProcessQueue's consume thread may write late (OFF-12)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    orderly: bool = False
    profile: VersionProfile = DEFAULT_PROFILE
    messages: int = 3
    pull_batch: int = 2
    consume_batch: int = 1
    max_send_back_failures: int = 0
    late_writes: bool = False

    @property
    def clustering(self) -> bool:
        return self.message_model == MessageModel.CLUSTERING

    @property
    def forgets(self) -> bool:
        """Whether persist(mq) and removeOffset(mq) act: remote store always, local from 4.9.8 (OFF-16)."""
        return self.clustering or self.profile >= V4_9_8


@attrs.frozen(cache_hash=True)
class ConsumeRequest:
    """A concurrent consume request: its messages and, once its listener returned, the removeMessage result
    still to be written into the memory entry (``removed``; None while the listener runs)."""

    offsets: tuple[int, ...]
    removed: int | None = None


@attrs.frozen(cache_hash=True)
class Held:
    """The queue while the consumer holds it: its ProcessQueue, the next pull offset, the consume requests,
    and whether a consume thread of an earlier, dropped ProcessQueue wrote into the memory entry since the
    queue was added (``late_write``, OFF-18)."""

    pq: ProcessQueueState
    next_offset: int
    requests: tuple[ConsumeRequest, ...] = ()
    late_write: bool = False


@attrs.frozen(cache_hash=True)
class OffsetState:
    """One queue's offsets: ``stored`` (broker table, or the local file when broadcasting), the commits
    travelling to the broker (``in_flight``, sorted), the client's ``memory`` entry (both NO_OFFSET when
    there is none), the queue while held (None before, after a drop, after a crash), the removeMessage
    results of dropped ProcessQueues whose consume threads passed the isDropped check and may still write
    (``late``, sorted), the offsets handled so far (``done``, OFF-17), and counters of crashes, drops and
    failed send-backs."""

    config: Config
    stored: int = NO_OFFSET
    in_flight: tuple[int, ...] = ()
    memory: int = NO_OFFSET
    held: Held | None = None
    late: tuple[int, ...] = ()
    done: frozenset[int] = frozenset()
    crashes: int = 0
    drops: int = 0
    send_back_failures: int = 0

    def but(self, **changes: object) -> OffsetState:
        """A copy with ``changes``: attrs.evolve without its introspection, since it runs on every step."""
        fields = {
            "config": self.config,
            "stored": self.stored,
            "in_flight": self.in_flight,
            "memory": self.memory,
            "held": self.held,
            "late": self.late,
            "done": self.done,
            "crashes": self.crashes,
            "drops": self.drops,
            "send_back_failures": self.send_back_failures,
        }
        fields.update(changes)
        return OffsetState(**fields)  # type: ignore[arg-type]


@attrs.frozen
class PullFound:
    """A pull returns FOUND with the next batch; it carried the commit of OFF-9."""


@attrs.frozen
class PullNoNewMessage:
    """A pull at the end of the queue returns NO_NEW_MSG; it carried the commit of OFF-9."""


@attrs.frozen
class ConsumeFinished:
    """A concurrent listener returned for ``request``; sending ``send_back_failed`` back failed (OFF-4)."""

    request: ConsumeRequest
    send_back_failed: tuple[int, ...] = ()


@attrs.frozen
class OffsetUpdated:
    """The consume thread of ``request`` writes its removeMessage result into the memory entry."""

    request: ConsumeRequest


@attrs.frozen
class TakeMessages:
    """Orderly: the consume thread takes the next batch."""


@attrs.frozen
class OrderlyConsumed:
    """Orderly: the listener returned SUCCESS (``success``) or SUSPEND_CURRENT_QUEUE_A_MOMENT."""

    success: bool


@attrs.frozen
class PersistAll:
    """The periodic persist task runs."""


@attrs.frozen
class CommitArrives:
    """A travelling commit of ``offset`` (a persist, or carried by a pull) reaches the broker."""

    offset: int


@attrs.frozen
class ConsumerCrashed:
    """The consumer process dies: memory entry, ProcessQueue and consume threads are gone."""


@attrs.frozen
class QueueDropped:
    """Rebalance (or pull idling) takes the queue away from the consumer."""


@attrs.frozen
class QueueAssigned:
    """The queue is assigned to the consumer again, or the restarted consumer takes it."""


@attrs.frozen
class LateOffsetWrite:
    """A consume thread of a dropped ProcessQueue, which passed the isDropped check before the drop, writes
    its removeMessage result ``offset`` only now (OFF-12: the check and the write are not atomic); or a pull
    of the dropped ProcessQueue, with nothing cached, is answered NO_NEW_MSG and correctTagsOffset writes its
    next offset (OFF-12: the pull callback does not check isDropped)."""

    offset: int


Action = (
    PullFound | PullNoNewMessage | ConsumeFinished | OffsetUpdated | TakeMessages | OrderlyConsumed
    | PersistAll | CommitArrives | ConsumerCrashed | QueueDropped | QueueAssigned | LateOffsetWrite
)


def _pull_commit(state: OffsetState) -> tuple[int, ...]:
    """The commit a pull sends now, if any (OFF-9 on the client, OFF-10 on a master broker)."""
    commit_offset, flag = pull_commit_request(state.config.message_model, state.memory)
    if broker_stores_pull_commit(flag, first_processing=True, is_slave=False, passed_checks=True):
        return (commit_offset,)
    return ()


def _plus(values: tuple[int, ...], *more: int) -> tuple[int, ...]:
    return tuple(sorted((*values, *more)))


def _without_one(values: tuple[int, ...], value: int) -> tuple[int, ...]:
    index = values.index(value)
    return values[:index] + values[index + 1:]


def _requests(requests: Iterable[ConsumeRequest]) -> tuple[ConsumeRequest, ...]:
    """Consume requests in a canonical order: they run in any order, the order only identifies states."""
    return tuple(sorted(requests, key=lambda r: (r.offsets, r.removed is not None, r.removed or 0)))


@CLAUSES.oracle("OFF-4", "OFF-9", "OFF-12", "OFF-13", "OFF-14", "OFF-15")
def enabled(state: OffsetState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state`` (OFF-4, OFF-9, OFF-12, OFF-13, OFF-14, OFF-15).

    Consume results exist only for requests of the held ProcessQueue; of a dropped one, only a late write
    may remain (OFF-12).
    """
    held = state.held
    config = state.config
    if isinstance(action, QueueAssigned):
        return held is None
    if isinstance(action, CommitArrives):
        return action.offset in state.in_flight
    if isinstance(action, LateOffsetWrite):
        return action.offset in state.late
    if isinstance(action, ConsumerCrashed):
        return True
    if held is None:
        return False
    if isinstance(action, (QueueDropped, PersistAll)):
        return True
    if isinstance(action, PullFound):
        return held.next_offset < config.messages
    if isinstance(action, PullNoNewMessage):
        return held.next_offset >= config.messages
    if isinstance(action, ConsumeFinished):
        return (
            not config.orderly
            and action.request in held.requests
            and action.request.removed is None
            and set(action.send_back_failed) <= set(action.request.offsets)
            and (config.clustering or not action.send_back_failed)
        )
    if isinstance(action, OffsetUpdated):
        return action.request in held.requests and action.request.removed is not None
    if isinstance(action, TakeMessages):
        return config.orderly and not held.pq.taken and bool(held.pq.cached)
    if isinstance(action, OrderlyConsumed):
        return config.orderly and bool(held.pq.taken)
    return False


@CLAUSES.oracle("OFF-4", "OFF-9", "OFF-11", "OFF-12", "OFF-13", "OFF-14", "OFF-15", "OFF-16")
def step(state: OffsetState, action: Action) -> OffsetState:
    """The state after the enabled ``action``.

    Pulls and their commits (OFF-9), consume results (OFF-4, OFF-15), persists (OFF-11, OFF-16), drops
    (OFF-12), assignment (OFF-13), NO_NEW_MSG (OFF-14).
    """
    require_enabled(enabled, state, action, Action)
    config = state.config
    held = state.held
    if isinstance(action, CommitArrives):
        stored, _lower_logged = broker_commit(state.stored, action.offset)
        return state.but(stored=stored, in_flight=_without_one(state.in_flight, action.offset))
    if isinstance(action, ConsumerCrashed):
        return state.but(memory=NO_OFFSET, held=None, late=(), crashes=state.crashes + 1)
    if isinstance(action, LateOffsetWrite):
        memory = update_offset(state.memory, action.offset, True)
        late_held = None if held is None else Held(held.pq, held.next_offset, held.requests, True)
        return state.but(memory=memory, held=late_held, late=_without_one(state.late, action.offset))
    if isinstance(action, QueueAssigned):
        return _assigned(state)
    if held is None:
        raise ValueError(f"{action!r} needs the queue held")
    if isinstance(action, QueueDropped):
        return _dropped(state)
    if isinstance(action, PersistAll):
        if state.memory == NO_OFFSET:
            return state
        if config.clustering:
            return state.but(in_flight=_plus(state.in_flight, state.memory))
        file = local_persist_all((state.stored,), (state.memory,), (True,), config.profile)
        return state.but(stored=file[0])
    if isinstance(action, PullFound):
        end = min(held.next_offset + config.pull_batch, config.messages)
        batch = tuple(range(held.next_offset, end))
        pq, _dispatch = put_messages(held.pq, batch)
        queued = held.requests
        if not config.orderly:
            # submitConsumeRequest cuts the pulled list into requests of consumeMessageBatchMaxSize.
            size = config.consume_batch
            chunks = (ConsumeRequest(batch[i:i + size]) for i in range(0, len(batch), size))
            queued = _requests((*queued, *chunks))
        pulled = Held(pq, end, queued, held.late_write)
        return state.but(in_flight=_plus(state.in_flight, *_pull_commit(state)), held=pulled)
    if isinstance(action, PullNoNewMessage):
        memory = state.memory
        if held.pq.msg_count == 0:
            memory = update_offset(memory, held.next_offset, True)
        return state.but(in_flight=_plus(state.in_flight, *_pull_commit(state)), memory=memory)
    if isinstance(action, ConsumeFinished):
        request = action.request
        failed = tuple(o in action.send_back_failed for o in request.offsets)
        pq, commit, retried = concurrent_consume_result(held.pq, request.offsets, failed,
                                                        config.message_model)
        requests = list(held.requests)
        requests.remove(request)
        if commit != NO_OFFSET:
            requests.append(ConsumeRequest(request.offsets, commit))
        if retried:
            requests.append(ConsumeRequest(retried))
        return state.but(
            done=state.done | (set(request.offsets) - set(retried)),
            held=Held(pq, held.next_offset, _requests(requests), held.late_write),
            send_back_failures=state.send_back_failures + (1 if retried else 0),
        )
    if isinstance(action, OffsetUpdated):
        requests = list(held.requests)
        requests.remove(action.request)
        written = action.request.removed
        if written is None:
            raise ValueError(f"{action!r}: the listener has not returned")
        memory = update_offset(state.memory, written, True)
        unwritten = Held(held.pq, held.next_offset, tuple(requests), held.late_write)
        return state.but(memory=memory, held=unwritten)
    if isinstance(action, TakeMessages):
        pq, _taken = take_messages(held.pq, config.consume_batch)
        return state.but(held=Held(pq, held.next_offset, held.requests, held.late_write))
    if isinstance(action, OrderlyConsumed):
        if not action.success:
            again = make_message_to_consume_again(held.pq, held.pq.taken)
            return state.but(held=Held(again, held.next_offset, held.requests, held.late_write))
        pq, commit = orderly_commit(held.pq)
        return state.but(
            memory=update_offset(state.memory, commit, False),
            done=state.done | set(held.pq.taken),
            held=Held(pq, held.next_offset, held.requests, held.late_write),
        )
    raise ValueError(f"not an offset_commit action: {action!r}")


def _dropped(state: OffsetState) -> OffsetState:
    """OFF-12: marked dropped, persist(mq), removeOffset(mq). The dropped ProcessQueue's consume requests go
    with it, except that a thread whose removeMessage result is ready may have passed the isDropped check
    already and write it later (``late``); so may a pull in flight when nothing is cached: a NO_NEW_MSG
    answer makes correctTagsOffset write the pull offset."""
    config = state.config
    assert state.held is not None
    # Of the results ready, the largest is the one a late write can do most with (increaseOnly): the
    # machine keeps that one.
    ready = [r.removed for r in state.held.requests if r.removed is not None]
    if state.held.pq.msg_count == 0:
        ready.append(state.held.next_offset)
    late = _plus(state.late, max(ready)) if ready and config.late_writes else state.late
    in_flight, stored = state.in_flight, state.stored
    if config.clustering:
        if state.memory != NO_OFFSET:
            in_flight = _plus(in_flight, state.memory)
    else:
        stored = local_persist((stored,), (state.memory,), 0, config.profile)[0]
    memory = remove_offset((state.memory,), 0, local=not config.clustering, profile=config.profile)[0]
    return state.but(
        in_flight=in_flight, stored=stored, memory=memory, held=None, late=late, drops=state.drops + 1
    )


def _assigned(state: OffsetState) -> OffsetState:
    """OFF-13: removeDirtyOffset, readOffset(READ_FROM_STORE), pull from there (from 0 when there is none)."""
    config = state.config
    memory = remove_offset((state.memory,), 0, local=not config.clustering, profile=config.profile)[0]
    if config.clustering:
        # The whole queue is still in memory, so a group with no offset is answered 0 (OFF-7).
        code, offset = broker_query_offset(state.stored, 0, False)
        found = StoreRead.FOUND if code == ResponseCode.SUCCESS else StoreRead.NOT_FOUND
    else:
        offset = state.stored
        found = StoreRead.NOT_FOUND if state.stored == NO_OFFSET else StoreRead.FOUND
    answer, memory = read_offset(ReadOffsetType.READ_FROM_STORE, memory, found, max(offset, 0),
                                 config.clustering)
    # -1 goes to consumeFromWhere: this consumer starts at the first message (CONSUME_FROM_FIRST_OFFSET).
    start = answer if answer >= 0 else 0
    return state.but(memory=memory, held=Held(ProcessQueueState(), start))
