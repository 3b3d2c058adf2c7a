"""Pull correction: the machine's state and actions, and the broker's decision for a pull against that state.

The state is one broker's queues of one topic (``readQueueNums`` and ``writeQueueNums`` of them, the larger count)
and, for a clustering push consumer, its group's %RETRY% queue; the configuration the run was drawn with (the
consumer's kind, pullBatchSize, consumeFromWhere, the topic's queue counts and permission); one consumer group's
consumer (push or lite pull), its process queues, offset store, pull requests on the wire or held by the broker and
(lite pull) consume requests; the broker's committed offsets of that group and of a raw puller. Deadlines are kept
as the milliseconds left (``TimePasses`` counts them down), so that a bounded model has finitely many states.
"""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.protocol import (
    BROKER_SUSPEND_MAX_TIME_MS,
    DEFAULT_PERM,
    LITE_PULL_AUTO_COMMIT_INTERVAL_MS,
    LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS,
    LITE_PULL_THRESHOLD_FOR_ALL,
    PERM_WRITE,
    ConsumeFromWhere,
    GetMessageStatus,
    ResponseCode,
)
from rocketspec.spec.pull_correction.oracles import (
    OffsetUpdate,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile


class ConsumerKind(enum.Enum):
    """``DefaultMQPushConsumer`` or ``DefaultLitePullConsumer``."""

    PUSH = "push"
    LITE_PULL = "litePull"


#: A subscription: the tags it takes (None: ``*``, every message).
Subscription = frozenset[str] | None


def takes(subscription: Subscription, tag: str | None) -> bool:
    """Whether a tag subscription takes a message with ``tag`` (the broker compares tag hash codes, the client the
    tags: the same for the distinct tags a run uses)."""
    return subscription is None or (tag is not None and tag in subscription)


@attrs.frozen(cache_hash=True)
class Config:
    """The configuration a run draws (part of the state), and a model's bounds.

    ``batch`` is pullBatchSize; ``read_queues``/``write_queues``/``perm`` the topic's TopicConfig; ``assign`` the queue
    ids a lite pull consumer is assigned by hand (None: it subscribes); ``retry_queue`` whether the push consumer's
    %RETRY% queue is modelled (the last queue); ``flush_sync``: flushDiskType SYNC_FLUSH. ``max_messages`` bounds the
    appends per queue in a model.
    """

    profile: VersionProfile = DEFAULT_PROFILE
    is_slave: bool = False
    offset_check_in_slave: bool = False
    max_messages: int = 3
    cq_file_entries: int = 2
    batch: int = 2
    filtered_messages: bool = True
    consumer: ConsumerKind = ConsumerKind.PUSH
    from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp: int = 0
    read_queues: int = 1
    write_queues: int = 1
    perm: int = DEFAULT_PERM
    subscription: Subscription = frozenset({"A"})
    retry_queue: bool = False
    assign: tuple[int, ...] | None = None
    auto_commit: bool = True
    auto_commit_interval_ms: int = LITE_PULL_AUTO_COMMIT_INTERVAL_MS
    long_polling: bool = True
    flush_sync: bool = False
    pull_threshold_for_all: int = LITE_PULL_THRESHOLD_FOR_ALL

    @property
    def lite(self) -> bool:
        return self.consumer is ConsumerKind.LITE_PULL

    @property
    def topic_queues(self) -> int:
        """The topic's queues in the store: ids ``[0, max(readQueueNums, writeQueueNums))``."""
        return max(self.read_queues, self.write_queues)

    @property
    def queue_count(self) -> int:
        return self.topic_queues + (1 if self.retry_queue else 0)

    @property
    def hold_ms(self) -> int:
        """The consumer's brokerSuspendMaxTimeMillis, the suspendTimeoutMillis of its pulls (PULL-33)."""
        return LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS if self.lite else BROKER_SUSPEND_MAX_TIME_MS

    def subscription_of(self, queue_id: int) -> Subscription:
        """The consumer's subscription of the queue's topic (``*`` for its %RETRY% topic)."""
        return None if self.is_retry(queue_id) else self.subscription

    def is_retry(self, queue_id: int) -> bool:
        return self.retry_queue and queue_id == self.topic_queues

    def topic_of(self, queue_id: int) -> tuple[int, int, int]:
        """(the queue's id in its topic, the topic's readQueueNums, the topic's permission)."""
        if self.is_retry(queue_id):
            return 0, 1, DEFAULT_PERM
        return queue_id, self.read_queues, self.perm

    def writable(self, queue_id: int) -> bool:
        """Whether a producer can write the queue (the retry queue: a send-back)."""
        if self.is_retry(queue_id):
            return True
        return 0 <= queue_id < self.write_queues and bool(self.perm & PERM_WRITE)


@attrs.frozen(cache_hash=True)
class Store:
    """One queue in the broker's store.

    Offsets ``[0, len(tags))`` were written with ``tags[i]`` at store time ``times[i]``. Commit-log data exists from
    ``data_from``; consume-queue files exist from ``cq_from`` (a file start); ``min_offset`` is the consume queue's
    logical minimum, which lags behind deletions until corrected. The first ``durable`` messages are flushed: a crash
    of the broker keeps those only.
    """

    min_offset: int = 0
    cq_from: int = 0
    data_from: int = 0
    tags: tuple[str | None, ...] = ()
    times: tuple[int, ...] = ()
    durable: int = 0

    @property
    def max_offset(self) -> int:
        return len(self.tags)

    @property
    def first_readable(self) -> int:
        """The first offset whose entry and data are both there (max when none is)."""
        return min(max(self.min_offset, self.cq_from, self.data_from), self.max_offset)

    def readable(self, offset: int, subscription: Subscription) -> bool:
        """Whether a pull with ``subscription`` could deliver the message at ``offset`` now."""
        return (
            self.min_offset <= offset < self.max_offset
            and offset >= self.cq_from
            and offset >= self.data_from
            and takes(subscription, self.tags[offset])
        )


@attrs.frozen(cache_hash=True)
class ProcessQueue:
    """A ProcessQueue: cached message offsets and queueOffsetMax (the last offset newly cached)."""

    dropped: bool = False
    cached: frozenset[int] = frozenset()
    offset_max: int = 0


@attrs.frozen(cache_hash=True)
class Answer:
    """A pull's outcome at the broker, with the queue bounds it was decided against. ``status`` is None when a check
    before the store failed (``code`` is then the error; next, min and max are 0); ``code`` None: held."""

    requested: int
    status: GetMessageStatus | None
    code: ResponseCode | None
    next_offset: int
    min_offset: int
    max_offset: int
    delivered: tuple[int, ...] = ()


class Phase(enum.Enum):
    """Where a pull request is: on its way to the broker, held there, or its answer on its way back."""

    SENT = "SENT"
    HELD = "HELD"
    ANSWERED = "ANSWERED"


@attrs.frozen(cache_hash=True)
class Request:
    """A PULL_MESSAGE of the consumer. ``commit``: the commit offset it carries (None: no commit flag). ``live``:
    the consumer still waits for it (a lite pull sent before a seek is not). HELD: ``hold_left`` ms until its hold
    time is over (the check after it times it out, so it may go down to minus one check interval), ``wake_by`` ms
    left before a check must process it again (None: the queue's max is not past its offset)."""

    offset: int
    phase: Phase = Phase.SENT
    commit: int | None = None
    live: bool = True
    answer: Answer | None = None
    hold_left: int = 0
    wake_by: int | None = None


@attrs.frozen(cache_hash=True)
class QueueState:
    """One queue: its store, the broker's committed offsets (the group's, the raw puller's) and the consumer's side.

    ``pq`` None: the consumer does not own the queue. ``pull_offset``: the push PullRequest's nextOffset, the lite
    pull offset (None: -1). ``memory_offset``: the offset store's entry (None: none). ``pull_in``: ms until the next
    pull goes out (None: none scheduled). ``fix``/``fix_in``: the pending OFFSET_ILLEGAL fix; ``removing``: it stored
    the offset, the persist and removeProcessQueue follow at once. ``in_transit``: offset updates on their way to
    the broker. Lite pull: ``assigned``, ``consume_offset`` and ``seek`` (None: -1), ``paused``. ``late``: the next
    pull goes out at one of the pull loop's 1 s looks (it was paused or suspended), not at ``pull_in``.
    """

    store: Store = Store()
    broker_offset: int | None = None
    raw_offset: int | None = None
    durable_offset: int | None = None
    durable_raw: int | None = None
    pq: ProcessQueue | None = None
    pull_offset: int | None = None
    memory_offset: int | None = None
    requests: tuple[Request, ...] = ()
    pull_in: int | None = None
    fix: OffsetUpdate | None = None
    fix_in: int = 0
    removing: bool = False
    in_transit: tuple[int, ...] = ()
    assigned: bool = False
    consume_offset: int | None = None
    seek: int | None = None
    paused: bool = False
    late: bool = False

    @property
    def live_request(self) -> Request | None:
        return next((r for r in self.requests if r.live), None)


#: A lite pull consume request: (queue id, the offsets of its messages).
ConsumeRequest = tuple[int, tuple[int, ...]]


@attrs.frozen(cache_hash=True)
class PullState:
    """The queues and the consumer. ``running``: a consumer runs; ``registered``: the broker knows its group's
    subscription (a heartbeat); ``cache``: the lite pull consume requests, oldest first; ``auto_commit_in``: ms until
    a poll may auto commit again (<= 0: the next one does); ``suspended``: the push consumer is suspended."""

    config: Config
    queues: tuple[QueueState, ...]
    running: bool = True
    registered: bool = True
    cache: tuple[ConsumeRequest, ...] = ()
    auto_commit_in: int = 0
    suspended: bool = False

    def queue(self, queue_id: int) -> QueueState:
        return self.queues[queue_id]

    def with_queue(self, queue_id: int, **changes: object) -> PullState:
        queues = list(self.queues)
        queues[queue_id] = attrs.evolve(queues[queue_id], **changes)  # type: ignore[arg-type]
        return attrs.evolve(self, queues=tuple(queues))

    # The first queue's view, which ``rocketspec spec diagrams`` draws.
    @property
    def pq(self) -> ProcessQueue | None:
        return self.queues[0].pq

    @property
    def held(self) -> int | None:
        held = [r.offset for r in self.queues[0].requests if r.live and r.phase is Phase.HELD]
        return held[0] if held else None

    @property
    def fix(self) -> OffsetUpdate | None:
        return self.queues[0].fix


def initial_state(config: Config, broker_offsets: tuple[int | None, ...] | None = None, *, running: bool = True,
                  registered: bool | None = None) -> PullState:
    """A state with empty queues (``broker_offsets``: the group's committed offset per queue, None: none)."""
    offsets = broker_offsets if broker_offsets is not None else (None,) * config.queue_count
    queues = tuple(QueueState(broker_offset=b) for b in offsets)
    return PullState(config, queues, running=running, registered=running if registered is None else registered)


# --------------------------------------------------------------------------------------------------------------
# Actions
# --------------------------------------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class Append:
    """A message with ``tag`` is stored in the queue at store time ``time``."""

    queue_id: int
    tag: str | None
    time: int


@attrs.frozen(cache_hash=True)
class DeleteCommitLog:
    """The commit-log data of the queue's oldest remaining message is deleted."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class DeleteConsumeQueueFile:
    """The queue's first consume-queue file, all of whose messages are gone, is deleted (never the last file)."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class CorrectMinOffset:
    """correctMinOffset: min moves to the first entry of the first file whose data remains."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class OffsetReset:
    """An operator sets the group's committed offset of the queue (UPDATE_CONSUMER_OFFSET)."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class BrokerRestart:
    """The broker shuts down and starts again from its store, or (``crash``) is killed and starts again."""

    crash: bool = False


@attrs.frozen(cache_hash=True)
class Flushed:
    """The store flushes what it was handed to the disk (the periodic flush, or before deleting old data)."""


@attrs.frozen(cache_hash=True)
class OffsetsPersisted:
    """The broker writes its committed offsets to the disk (every 5 s, and when it shuts down)."""


@attrs.frozen(cache_hash=True)
class Heartbeat:
    """The broker registers the running consumer's group and subscription (HEARTBEAT)."""


@attrs.frozen(cache_hash=True)
class Unregistered:
    """The broker forgets the stopped consumer's group (UNREGISTER_CLIENT, or its connection closed)."""


@attrs.frozen(cache_hash=True)
class ConsumerStarts:
    """A consumer starts; ``fresh``: of a group new to the broker (no committed offset, an empty %RETRY% queue)."""

    fresh: bool


@attrs.frozen(cache_hash=True)
class ConsumerStops:
    """The consumer shuts down, or crashes (``crash``), while none of its pulls is on the wire."""

    crash: bool


@attrs.frozen(cache_hash=True)
class Rebalance:
    """A rebalance adds the queue to the process-queue table, starting at ``start`` (computePullFromWhere)."""

    queue_id: int
    start: int


@attrs.frozen(cache_hash=True)
class Assign:
    """The lite pull consumer's queue is assigned (from its rebalance, or by ``assign``) and its pull task starts."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class PullSent:
    """The consumer sends PULL_MESSAGE for the queue at ``offset``."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class Pull:
    """The broker processes the queue's earliest request at ``offset`` for the first time: ``answer`` (held if no
    code)."""

    queue_id: int
    offset: int
    answer: Answer


@attrs.frozen(cache_hash=True)
class Wake:
    """The hold service finds the queue's max past a held request's offset and processes it again."""

    queue_id: int
    offset: int
    answer: Answer


@attrs.frozen(cache_hash=True)
class HoldTimeout:
    """A held request's hold time is over: it is processed again."""

    queue_id: int
    offset: int
    answer: Answer


@attrs.frozen(cache_hash=True)
class Answered:
    """The answer of the queue's earliest answered request at ``offset`` reaches the consumer."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class Consume:
    """The push consumer's consume service finishes the cached message at ``offset`` and stores its progress."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class PersistSent:
    """The offset store sends the queue's offset to the broker (UPDATE_CONSUMER_OFFSET)."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class Persist:
    """The broker receives the queue's oldest offset update on the wire and commits it."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class DelayedFix:
    """10 s after OFFSET_ILLEGAL: updateOffset(next, false)."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class QueueRemoved:
    """After the fix stored the offset and persisted it: removeProcessQueue (persist, removeOffset)."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class Poll:
    """The user polls the lite pull consumer."""


@attrs.frozen(cache_hash=True)
class Commit:
    """The user commits the lite pull consumer's consume offsets, or the given ``offsets`` ((queue id, offset)
    pairs: commitSync(Map, persist)); ``persist``: and sends them to the broker now."""

    persist: bool
    offsets: tuple[tuple[int, int], ...] | None = None


@attrs.frozen(cache_hash=True)
class Seek:
    """The user seeks the lite pull consumer's queue to ``offset``."""

    queue_id: int
    offset: int


@attrs.frozen(cache_hash=True)
class RawPull:
    """Another client's PULL_MESSAGE (no suspension): at ``offset`` of topic queue ``queue_id`` (any id), ``max_msgs``
    messages, the tags ``subscription`` (sent with the subscription flag, or not), committing ``commit`` (None: no
    commit flag); the broker answers ``answer``. Its group is RAW, or the consumer's (``as_consumer``, then asking
    for a subscription version ``newer`` than the registered one, or not); the topic may not exist
    (``topic_exists``); an SQL92 subscription (``sql``) may not parse (``parses``)."""

    queue_id: int
    offset: int
    max_msgs: int
    subscription: Subscription
    subscription_flag: bool
    commit: int | None
    answer: Answer
    as_consumer: bool = False
    newer: bool = False
    topic_exists: bool = True
    sql: bool = False
    parses: bool = True


@attrs.frozen(cache_hash=True)
class PauseQueue:
    """The user pauses (``paused``) or resumes the lite pull consumer's queue."""

    queue_id: int
    paused: bool


@attrs.frozen(cache_hash=True)
class Suspend:
    """The user suspends (``suspended``) or resumes the push consumer."""

    suspended: bool


@attrs.frozen(cache_hash=True)
class QueueDestroyed:
    """CLEAN_EXPIRED_CONSUMEQUEUE destroys the queue, all of whose messages left the commit log."""

    queue_id: int


@attrs.frozen(cache_hash=True)
class TimePasses:
    """``ms`` milliseconds pass."""

    ms: int


Action = (
    Append | DeleteCommitLog | DeleteConsumeQueueFile | CorrectMinOffset | OffsetReset | BrokerRestart | Heartbeat
    | Unregistered | ConsumerStarts | ConsumerStops | Rebalance | Assign | PullSent | Pull | Wake | HoldTimeout
    | Answered | Consume | PersistSent | Persist | DelayedFix | QueueRemoved | Poll | Commit | Seek | RawPull
    | PauseQueue | Suspend | QueueDestroyed | Flushed | OffsetsPersisted | TimePasses
)
