"""Offset commit: the machine's state and actions (frozen, hashable).

The state is a group's offsets over a set of queues (on one or more brokers, the group's retry queues among them)
and the consumer clients that hold them: per queue what the broker has (messages and their store times, the group's
committed offset, the offset table as last persisted, the commits travelling to it, what the group handled), per
client whether it runs and where it is online, and per client and queue a *lane*: the client's memory entry, the
ProcessQueue while it holds the queue, the pulls of ProcessQueues it dropped that may still be answered, and, for
broadcasting, its local offset file's entry and what it handled. ``answer`` holds what the last admin request that
reports offsets got (OFF-25, OFF-27, OFF-28, OFF-29).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from rocketspec.spec.offset_commit.oracles import NO_OFFSET, ProcessQueueState, StoreRead
from rocketspec.spec.protocol import ConsumeFromWhere, MessageModel, is_retry_topic
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.versions import DEFAULT_PROFILE, V4_9_8, VersionProfile

#: The topic and group of the machines' default configuration.
TOPIC = "TopicTest"
BROKER = "broker-a"


@attrs.frozen(cache_hash=True)
class Config:
    """A machine's fixed parameters: the consumer settings (message model, orderly, consumeFromWhere with its
    timestamp (None: the default, 30 minutes before each client started), pullBatchSize,
    consumeMessageBatchMaxSize), the broker's flushDiskType, the release, the queues and
    how many consumer clients there are; and two explorer bounds: how many send-backs may fail (OFF-4) and whether a
    dropped ProcessQueue's consume thread may write late (OFF-12)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    orderly: bool = False
    profile: VersionProfile = DEFAULT_PROFILE
    queues: tuple[MessageQueue, ...] = (MessageQueue(TOPIC, BROKER, 0),)
    clients: int = 1
    pull_batch: int = 2
    consume_batch: int = 1
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp: int | None = None
    sync_flush: bool = False
    max_send_back_failures: int = 0
    late_writes: bool = False

    @property
    def clustering(self) -> bool:
        return self.message_model == MessageModel.CLUSTERING

    @property
    def forgets(self) -> bool:
        """Whether persist(mq) and removeOffset(mq) act: remote store always, local from 4.9.8 (OFF-16)."""
        return self.clustering or self.profile >= V4_9_8

    @property
    def brokers(self) -> tuple[str, ...]:
        """The brokers of the queues, in order of first appearance."""
        return tuple(dict.fromkeys(q.broker_name for q in self.queues))

    def index(self, mq: MessageQueue) -> int:
        return self.queues.index(mq)

    def on(self, broker: str) -> tuple[int, ...]:
        """The indexes of the queues of ``broker``."""
        return tuple(i for i, q in enumerate(self.queues) if q.broker_name == broker)

    def retry_queue(self, broker: str) -> int | None:
        """The index of the group's retry queue on ``broker`` (None: not among the queues)."""
        found = [i for i in self.on(broker) if is_retry_topic(self.queues[i].topic)]
        return found[0] if found else None


@attrs.frozen(cache_hash=True)
class QueueState:
    """A queue on its broker: the store times of its messages (by offset; the max offset is their count), the
    group's committed offset (``stored``) and the one in the offset table last persisted, the commits travelling to
    it (sorted), the offsets the group handled (``done``, clustering) and gave up by an admin change or a start by
    consumeFromWhere (``waived``), the retry copies on their way to it (``owed``; -1 after its broker crashed: any
    number), and the offset of the group its offsets were cloned to (and as persisted)."""

    times: tuple[int, ...] = ()
    stored: int = NO_OFFSET
    persisted: int = NO_OFFSET
    in_flight: tuple[int, ...] = ()
    done: frozenset[int] = frozenset()
    waived: frozenset[int] = frozenset()
    owed: int = 0
    cloned: int = NO_OFFSET
    cloned_persisted: int = NO_OFFSET

    @property
    def max_offset(self) -> int:
        return len(self.times)


@attrs.frozen(cache_hash=True)
class ConsumeRequest:
    """A concurrent consume request: its messages and, once its listener returned, the removeMessage result
    still to be written into the memory entry (``removed``; None while the listener runs)."""

    offsets: tuple[int, ...]
    removed: int | None = None


@attrs.frozen(cache_hash=True)
class Held:
    """A ProcessQueue in processQueueTable: its state, the next pull offset, the consume requests, whether a write
    of an earlier, dropped ProcessQueue raised the memory entry since it was added (``late_write``, OFF-18), the
    offset of its pull in flight (None: none), whether it is marked dropped while still in the table (an
    OFFSET_ILLEGAL answer, OFF-23, with the offset to correct to in ``moved_to``; a reset, OFF-26), and whether its
    pulls may start (``started``; an orderly one's first pull reads its start offset again first, OFF-31)."""

    pq: ProcessQueueState
    next_offset: int
    requests: tuple[ConsumeRequest, ...] = ()
    late_write: bool = False
    pull: int | None = None
    dropped: bool = False
    moved_to: int | None = None
    started: bool = True


@attrs.frozen(cache_hash=True)
class StalePull:
    """A pull of a ProcessQueue that was dropped while it was in flight: its offset, and whether the ProcessQueue
    held no message (msgCount 0), which makes a NO_NEW_MSG answer write its offset (OFF-12)."""

    offset: int
    empty: bool


@attrs.frozen(cache_hash=True)
class Lane:
    """One client's view of one queue: its memory entry (NO_OFFSET: none), the ProcessQueue while held, stale
    pulls, the removeMessage results late consume threads may still write (``late``), an assignment in progress
    (``reading``: the readOffset answer and the queue's max offset then, OFF-13) and whether a late write raised
    the memory entry meanwhile (``raised``), and for broadcasting the local file's entry and what this client
    handled or gave up."""

    memory: int = NO_OFFSET
    held: Held | None = None
    stale: tuple[StalePull, ...] = ()
    late: tuple[int, ...] = ()
    reading: tuple[int, int] | None = None
    raised: bool = False
    file: int = NO_OFFSET
    done: frozenset[int] = frozenset()
    waived: frozenset[int] = frozenset()


@attrs.frozen(cache_hash=True)
class Client:
    """A consumer client: running or not (and since when), pulls suspended (``paused``, OFF-26), the brokers it is
    online at (OFF-29), a reset the brokers sent it (``reset_sent``) and the reset it received and applies 10 s
    later (``reset``): the (queue, offset) pairs."""

    alive: bool = False
    started_ms: int = 0
    paused: bool = False
    online: frozenset[str] = frozenset()
    reset_sent: tuple[tuple[int, int], ...] | None = None
    reset: tuple[tuple[int, int], ...] | None = None


@attrs.frozen(cache_hash=True)
class Answer:
    """What an admin request got: the request, the response code, and its rows (sorted tuples; their meaning is
    the request's, see the machine), with ``total`` for a total (GET_BROKER_CONSUME_STATS's lag)."""

    request: str
    code: int
    rows: tuple[tuple[object, ...], ...] = ()
    total: int | None = None


@attrs.frozen(cache_hash=True)
class OffsetState:
    """The offsets of one group: the queues, the clients and their lanes (``lanes[client][queue]``), which brokers
    know the group's subscription settings (``group_at``; as last persisted: ``group_saved``), counters of clients
    stopped (crashed or shut down), drops, failed send-backs, broker restarts and admin changes (explorer bounds),
    and the last admin answer."""

    config: Config
    queues: tuple[QueueState, ...]
    clients: tuple[Client, ...]
    lanes: tuple[tuple[Lane, ...], ...]
    group_at: frozenset[str] = frozenset()
    group_saved: frozenset[str] = frozenset()
    crashes: int = 0
    drops: int = 0
    send_back_failures: int = 0
    restarts: int = 0
    admin: int = 0
    answer: Answer | None = None

    def lane(self, client: int, queue: int) -> Lane:
        return self.lanes[client][queue]

    def with_lane(self, client: int, queue: int, lane: Lane) -> OffsetState:
        row = self.lanes[client]
        lanes = (*self.lanes[:client], (*row[:queue], lane, *row[queue + 1:]), *self.lanes[client + 1:])
        return but(self, lanes=lanes)

    def with_queue(self, queue: int, value: QueueState) -> OffsetState:
        return but(self, queues=(*self.queues[:queue], value, *self.queues[queue + 1:]))

    def with_client(self, client: int, value: Client) -> OffsetState:
        return but(self, clients=(*self.clients[:client], value, *self.clients[client + 1:]))

    # The one-queue, one-client view the machine's first form had (and the area's examples use).
    @property
    def stored(self) -> int:
        return self.queues[0].stored

    @property
    def in_flight(self) -> tuple[int, ...]:
        return self.queues[0].in_flight

    @property
    def memory(self) -> int:
        return self.lanes[0][0].memory

    @property
    def held(self) -> Held | None:
        return self.lanes[0][0].held

    @property
    def late(self) -> tuple[int, ...]:
        return self.lanes[0][0].late

    @property
    def done(self) -> frozenset[int]:
        return self.handled(0, 0)

    def handled(self, client: int, queue: int) -> frozenset[int]:
        """What counts as handled for ``client``'s lane of ``queue`` (OFF-17): the group's (clustering) or the
        client's own (broadcasting) handled and given-up offsets."""
        if self.config.clustering:
            return self.queues[queue].done | self.queues[queue].waived
        lane = self.lanes[client][queue]
        return lane.done | lane.waived


T = TypeVar("T")

# The fields of the state's classes, in constructor order (built once, here).
_FIELDS: MappingProxyType[type, tuple[str, ...]] = MappingProxyType({
    cls: tuple(a.name for a in attrs.fields(cls))
    for cls in (QueueState, ConsumeRequest, Held, StalePull, Lane, Client, Answer, OffsetState)})


def but(obj: T, **changes: Any) -> T:
    """A copy of the frozen state part ``obj`` with ``changes``: attrs.evolve without its introspection, since the
    explorer runs it several times on every step."""
    cls = type(obj)
    return cls(*[changes[n] if n in changes else getattr(obj, n) for n in _FIELDS[cls]])


def initial_state(config: Config, messages: Iterable[int] = (), alive: bool = True) -> OffsetState:
    """The machine's start: every queue holding ``messages`` (their store times, the same for each queue), the
    clients running (``alive``) and online nowhere yet, nothing committed."""
    times = tuple(messages)
    queues = tuple(QueueState(times=times if not is_retry_topic(q.topic) else ()) for q in config.queues)
    clients = tuple(Client(alive=alive) for _ in range(config.clients))
    lanes = tuple(tuple(Lane() for _ in config.queues) for _ in range(config.clients))
    return OffsetState(config, queues, clients, lanes)


# --- Actions ------------------------------------------------------------------------------------------------
# ``client`` is a client's index, ``queue`` a queue's index in ``Config.queues``, ``broker`` a broker's name.


@attrs.frozen
class MessageStored:
    """The broker stores a message in ``queue`` at ``ts_ms`` (a producer's, or a retry copy, OFF-30)."""

    queue: int
    ts_ms: int


@attrs.frozen
class ConsumerStarted:
    """The client starts at ``at_ms`` (OFF-24)."""

    client: int
    at_ms: int = 0


@attrs.frozen
class ConsumerShutdown:
    """The client shuts down cleanly (OFF-24)."""

    client: int


@attrs.frozen
class ConsumerCrashed:
    """The client's process dies (OFF-24)."""

    client: int


@attrs.frozen
class Heartbeat:
    """A heartbeat of the client reaches ``broker`` (OFF-29)."""

    client: int
    broker: str


@attrs.frozen
class GroupCreated:
    """``broker`` creates the group's subscription settings, missing until then: a heartbeat, a pull or an
    unregister named the group (OFF-29)."""

    broker: str


@attrs.frozen
class OffsetRead:
    """The rebalance adds ``queue`` to the client: removeDirtyOffset, then readOffset(READ_FROM_STORE) is answered
    (OFF-13); ``failed``: the broker answered an error instead (NOT_FOUND) or nothing (FAILED), a fault of the
    environment (None: it answered as OFF-7 says)."""

    client: int
    queue: int
    failed: StoreRead | None = None


@attrs.frozen
class QueueAssigned:
    """The ProcessQueue is added and pulls start at ``start`` (OFF-13, OFF-20)."""

    client: int
    queue: int
    start: int


@attrs.frozen
class LockedRead:
    """Orderly: the first pull of the locked ProcessQueue reads the offset again (OFF-31); ``failed`` as for
    :class:`OffsetRead`."""

    client: int
    queue: int
    failed: StoreRead | None = None


@attrs.frozen
class LockedStart:
    """Orderly: that read's start offset becomes the pull offset, ``start`` (OFF-31)."""

    client: int
    queue: int
    start: int


@attrs.frozen
class PullSent:
    """The client sends a pull at ``offset`` carrying ``commit`` (None: no commit bit, OFF-9)."""

    client: int
    queue: int
    offset: int
    commit: int | None


@attrs.frozen
class PullFound:
    """The pull is answered FOUND with ``count`` messages, the broker's max offset then ``max_offset``."""

    client: int
    queue: int
    count: int
    max_offset: int


@attrs.frozen
class PullNoNewMessage:
    """The pull is answered NO_NEW_MSG (at the end of the queue, whose max offset was ``max_offset``, OFF-14)."""

    client: int
    queue: int
    max_offset: int


@attrs.frozen
class PullOffsetMoved:
    """The pull is answered OFFSET_ILLEGAL with ``next_offset`` (OFF-23)."""

    client: int
    queue: int
    next_offset: int


@attrs.frozen
class PullFailed:
    """The pull at ``offset`` fails (no answer, a broker error): the client pulls again later."""

    client: int
    queue: int
    offset: int


@attrs.frozen
class StalePullAnswered:
    """A pull at ``offset`` of a dropped ProcessQueue (one that held no message when ``empty``; None: either) is
    answered with ``status`` (a PullStatus name, or ERROR) (OFF-12)."""

    client: int
    queue: int
    offset: int
    status: str
    empty: bool | None = None


@attrs.frozen
class ConsumeFinished:
    """A concurrent listener returned for the request of ``offsets`` (``success``: CONSUME_SUCCESS, else
    RECONSUME_LATER); sending ``send_back_failed`` back failed (OFF-4)."""

    client: int
    queue: int
    offsets: tuple[int, ...]
    success: bool = True
    send_back_failed: tuple[int, ...] = ()


@attrs.frozen
class OffsetUpdated:
    """The consume thread of the request of ``offsets`` writes its removeMessage result (OFF-4, OFF-5)."""

    client: int
    queue: int
    offsets: tuple[int, ...]


@attrs.frozen
class TakeMessages:
    """Orderly: the consume thread takes the next batch (OFF-15)."""

    client: int
    queue: int


@attrs.frozen
class OrderlyConsumed:
    """Orderly: the listener returned SUCCESS (``success``) or SUSPEND_CURRENT_QUEUE_A_MOMENT (OFF-15)."""

    client: int
    queue: int
    success: bool


@attrs.frozen
class PersistAll:
    """The client's periodic persist task runs (OFF-11, OFF-16)."""

    client: int


@attrs.frozen
class CommitArrives:
    """A travelling commit of ``offset`` (a persist, a pull's, an admin's) reaches the broker of ``queue``."""

    queue: int
    offset: int


@attrs.frozen
class QueueDropped:
    """The rebalance (or pull idling) takes ``queue`` away from the client (OFF-12)."""

    client: int
    queue: int


@attrs.frozen
class LateOffsetWrite:
    """A consume thread of a dropped ProcessQueue, which passed the isDropped check before the drop, writes its
    removeMessage result ``offset`` only now (OFF-12: the check and the write are not atomic)."""

    client: int
    queue: int
    offset: int


@attrs.frozen
class OffsetCorrected:
    """The task an OFFSET_ILLEGAL answer scheduled runs (OFF-23)."""

    client: int
    queue: int


@attrs.frozen
class ResetReceived:
    """The client gets the RESET_CONSUMER_CLIENT_OFFSET its broker sent (OFF-26)."""

    client: int


@attrs.frozen
class ResetApplied:
    """The client's reset applies its offsets, 10 s after it was received (OFF-26)."""

    client: int


@attrs.frozen
class OffsetsPersisted:
    """``broker`` writes its offset table (and the subscription groups it created) to disk (OFF-22)."""

    broker: str


@attrs.frozen
class BrokerRestarted:
    """``broker`` restarts, cleanly or after a crash at ``at_ms``; its queues keep ``kept`` messages each (OFF-22)."""

    broker: str
    crashed: bool
    kept: tuple[int, ...]
    at_ms: int


@attrs.frozen
class AdminCommit:
    """An admin sends UPDATE_CONSUMER_OFFSET of ``offset`` for ``queue`` (OFF-30)."""

    queue: int
    offset: int


@attrs.frozen
class OffsetQueried:
    """An admin sends QUERY_CONSUMER_OFFSET for ``queue`` (OFF-7)."""

    queue: int


@attrs.frozen
class OffsetResetAsked:
    """An admin sends INVOKE_BROKER_TO_RESET_OFFSET for the topic of the first queue to ``broker`` (OFF-25)."""

    broker: str
    timestamp: int
    force: bool


@attrs.frozen
class ConsumeStatsAsked:
    """An admin sends GET_CONSUME_STATS for the group (``topic``: the one asked, None: all) to ``broker`` (OFF-27)."""

    broker: str
    topic: str | None = None


@attrs.frozen
class BrokerConsumeStatsAsked:
    """An admin sends GET_BROKER_CONSUME_STATS to ``broker`` (OFF-27)."""

    broker: str


@attrs.frozen
class AllOffsetsAsked:
    """An admin sends GET_ALL_CONSUMER_OFFSET to ``broker`` (OFF-27)."""

    broker: str


@attrs.frozen
class TimeSpanAsked:
    """An admin sends QUERY_CONSUME_TIME_SPAN for ``topic`` to ``broker`` at ``now_ms`` (OFF-28)."""

    broker: str
    topic: str
    now_ms: int


@attrs.frozen
class ConnectionsAsked:
    """An admin sends GET_CONSUMER_CONNECTION_LIST for the group to ``broker`` (OFF-29)."""

    broker: str


@attrs.frozen
class ConsumerStatusAsked:
    """An admin sends INVOKE_BROKER_TO_GET_CONSUMER_STATUS for the topic of the first queue to ``broker``
    (OFF-29)."""

    broker: str


@attrs.frozen
class OffsetsCloned:
    """An admin sends CLONE_GROUP_OFFSET of the first queue's topic from the group to another group (OFF-30)."""

    broker: str


@attrs.frozen
class OtherGroupUpdated:
    """An admin creates or updates another group's subscription settings at ``broker``, which writes its whole
    subscription group table (OFF-22)."""

    broker: str


@attrs.frozen
class GroupDeleted:
    """An admin sends DELETE_SUBSCRIPTIONGROUP with removeOffset for the group to ``broker`` (OFF-30)."""

    broker: str


Action = (
    MessageStored | ConsumerStarted | ConsumerShutdown | ConsumerCrashed | Heartbeat | GroupCreated | OffsetRead
    | QueueAssigned | LockedRead | LockedStart
    | PullSent | PullFound | PullNoNewMessage | PullOffsetMoved | PullFailed | StalePullAnswered | ConsumeFinished
    | OffsetUpdated | TakeMessages | OrderlyConsumed | PersistAll | CommitArrives | QueueDropped | LateOffsetWrite
    | OffsetCorrected | ResetReceived | ResetApplied | OffsetsPersisted | BrokerRestarted | AdminCommit
    | OffsetQueried | OffsetResetAsked | ConsumeStatsAsked | BrokerConsumeStatsAsked | AllOffsetsAsked
    | TimeSpanAsked | ConnectionsAsked | ConsumerStatusAsked | OffsetsCloned | GroupDeleted | OtherGroupUpdated
)
