"""Consume retry: the machine's state and actions: one consumer of group ``G``, the broker's stores, the clock.

The state holds the configuration (:class:`RetryConfig`, drawn at the start of a run: the broker's delay table, the
consumer's maxReconsumeTimes, orderly or concurrent, consumeMessageBatchMaxSize, ...), every message the broker
stored in ``T``, ``%RETRY%G``, ``SCHEDULE_TOPIC_XXXX`` and ``%DLQ%G`` (:class:`Stored`), the schedule service's
offset per level, what the consumer holds (:class:`Held`: in a batch handed to the listener, waiting for a local
re-consume, or suspended with an orderly batch), its batches (:class:`Batch`) and the offsets it committed, and per
message of ``T`` (a *chain*) its deliveries and copies (:class:`ChainHistory`, what the invariants read).

A message is named by its :data:`Key` ``(topic, queue id, queue offset)``; the consumer's messages by the key of
the stored message they were pulled from. Properties are the ones the area is about (:data:`TRACKED`), sorted;
message ids in them are symbolic: ``uniq:<chain>`` (the original's UNIQ_KEY) and ``offset:<topic>:<queue>:<offset>``
(a stored message's offset id).
"""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.consume_retry.oracles import ACK_INDEX_DEFAULT, effective_max_reconsume_times
from rocketspec.spec.protocol import (
    DEFAULT_MAX_RECONSUME_TIMES,
    DEFAULT_RETRY_QUEUE_NUMS,
    DEFAULT_SUSPEND_CURRENT_QUEUE_MS,
    DELAY_LEVEL_MILLIS,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    VERSION_V4_9_8,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
    Property,
)

GROUP = "G"
TOPIC = "T"
RETRY = RETRY_GROUP_TOPIC_PREFIX + GROUP
DLQ = DLQ_GROUP_TOPIC_PREFIX + GROUP
SCHEDULE = SCHEDULE_TOPIC

Key = tuple[str, int, int]
Queue = tuple[str, int]
Props = tuple[tuple[str, str], ...]
#: The properties the machine follows (what a consumer of the area observes).
TRACKED = (
    Property.DELAY_TIME_LEVEL, Property.MAX_RECONSUME_TIMES, Property.ORIGIN_MESSAGE_ID, Property.RECONSUME_TIME,
    Property.RETRY_TOPIC,
)


def tracked(props: dict[str, str] | Props) -> Props:
    """The followed properties of ``props``, sorted by name."""
    items = props.items() if isinstance(props, dict) else props
    return tuple(sorted((k, v) for k, v in items if k in TRACKED))


def uniq_id(chain: int) -> str:
    """The symbolic UNIQ_KEY of chain ``chain``'s messages."""
    return f"uniq:{chain}"


def offset_id(key: Key) -> str:
    """The symbolic offset message id of the stored message ``key``."""
    return f"offset:{key[0]}:{key[1]}:{key[2]}"


@attrs.frozen
class RetryConfig:
    """The run's configuration: broker (delay table, the group's retryMaxTimes and retryQueueNums) and consumer.

    ``max_reconsume_times`` is the consumer's setting (-1: the default); ``limit`` what it means (RETRY-22).
    """

    delay_table: tuple[int, ...] = DELAY_LEVEL_MILLIS
    max_reconsume_times: int = -1
    orderly: bool = False
    batch_max: int = 1
    message_model: MessageModel = MessageModel.CLUSTERING
    client_version: int = VERSION_V4_9_8
    group_max: int = DEFAULT_MAX_RECONSUME_TIMES
    retry_queue_nums: int = DEFAULT_RETRY_QUEUE_NUMS
    suspend_ms: int = DEFAULT_SUSPEND_CURRENT_QUEUE_MS
    queues: int = 1

    @property
    def limit(self) -> int:
        return effective_max_reconsume_times(self.max_reconsume_times, self.orderly)

    @property
    def max_level(self) -> int:
        return len(self.delay_table)


@attrs.frozen
class Stored:
    """A message the broker stored; in SCHEDULE_TOPIC_XXXX with its ``level``, real topic and queue, and the time
    it is due (its store time plus the level's delay)."""

    key: Key
    chain: int
    reconsume_times: int
    stored_at_ms: int
    properties: Props = ()
    level: int = 0
    real: Queue = ("", 0)
    due_ms: int = 0


class Path(enum.Enum):
    """Who made a copy: the broker (CONSUMER_SEND_MSG_BACK), the consumer's fallback, an orderly dead letter."""

    BROKER = "BROKER"
    CLIENT = "CLIENT"
    ORDERLY = "ORDERLY"


@attrs.frozen
class Delivery:
    """A hand-over to the listener: the reconsumeTimes shown, when, whether a local re-consume, from which queue."""

    reconsume_times: int
    at_ms: int
    local: bool
    queue: Queue = (TOPIC, 0)


@attrs.frozen
class Copy:
    """A new stored message of a chain: bound for the DLQ or not, its reconsumeTimes, when and how it was made.

    ``context_level``: the delayLevel the listener asked for; ``deliveries_before``: the chain's deliveries so far;
    ``retried``: stored by a retried attempt of the consumer's own send (RETRY-16); ``made_from``: the count the
    consumer showed.
    """

    dead: bool
    reconsume_times: int
    stored_at_ms: int
    path: Path
    context_level: int
    deliveries_before: int
    retried: bool = False
    made_from: int = 0


@attrs.frozen
class ChainHistory:
    """What happened to one message of ``T``: its deliveries and copies, and whether a delivery succeeded."""

    deliveries: tuple[Delivery, ...] = ()
    copies: tuple[Copy, ...] = ()
    consumed: bool = False


@attrs.frozen
class Held:
    """A message the consumer holds: pulled from ``source``, showing ``reconsume_times`` and ``properties``."""

    source: Key
    chain: int
    reconsume_times: int
    properties: Props = ()


class Stage(enum.Enum):
    """The send in flight for a batch's first pending member."""

    BROKER = "BROKER"  # CONSUMER_SEND_MSG_BACK
    FALLBACK = "FALLBACK"  # the concurrent consumer's own send to %RETRY%G
    DEAD_LETTER = "DEAD_LETTER"  # the orderly consumer's dead-letter send to %RETRY%G


@attrs.frozen
class Batch:
    """Messages handed to the listener together (keys of their sources, in order), and, once answered, the sends
    still to make (``pending``, in order; the first one's send is ``stage``), the concurrent members whose both sends
    failed, whether the orderly batch suspends and its context's suspendCurrentQueueTimeMillis."""

    queue: Queue
    members: tuple[Key, ...]
    local: bool = False
    answered: bool = False
    context_level: int = 0
    context_ms: int = -1
    pending: tuple[Key, ...] = ()
    stage: Stage = Stage.BROKER
    back_failed: tuple[Key, ...] = ()
    suspend: bool = False


@attrs.frozen
class Waiting:
    """Messages back in the consumer's hands later: a local re-consume group (concurrent, in order) or a suspended
    orderly batch of ``queue``, due at ``due_ms``."""

    queue: Queue
    members: tuple[Key, ...]
    due_ms: int


@attrs.frozen
class RetryState:
    """The consumer of group ``G``, the broker's stores and the clock (see the module docstring).

    ``pulled``: per consumed queue, one past the last offset pulled into the process queue; ``requests``: the
    concurrent consumer's consume requests not handed to the listener yet, in order (queue, offsets); ``fronts``:
    per consumed queue, one past the last offset handed over from the store (concurrent) or the first unfinished
    offset (orderly); ``committed``: the offsets the consumer committed; ``schedule``: per delay level the schedule
    service's next offset; ``schedule_from_ms``: when the schedule service's tasks (re)started run first (after a
    broker restart); ``locks_refused``: the broker refused or failed the orderly consumer's lock requests (since then
    its suspended batches may come back late); ``faults_left`` bounds the RPC failures still to be injected.
    """

    config: RetryConfig
    now_ms: int = 0
    stored: tuple[Stored, ...] = ()
    schedule: tuple[tuple[int, int], ...] = ()
    held: tuple[Held, ...] = ()
    batches: tuple[Batch, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    pulled: tuple[tuple[Queue, int], ...] = ()
    requests: tuple[tuple[Queue, tuple[int, ...]], ...] = ()
    fronts: tuple[tuple[Queue, int], ...] = ()
    committed: tuple[tuple[Queue, int], ...] = ()
    chains: tuple[ChainHistory, ...] = ()
    schedule_from_ms: int = 0
    locks_refused: bool = False
    faults_left: int = 0

    def find(self, key: Key) -> Stored | None:
        return next((s for s in self.stored if s.key == key), None)

    def holding(self, key: Key) -> Held | None:
        return next((h for h in self.held if h.source == key), None)

    def front(self, queue: Queue) -> int:
        return dict(self.fronts).get(queue, 0)

    def pull_next(self, queue: Queue) -> int:
        return dict(self.pulled).get(queue, 0)

    def stored_in(self, topic: str, queue_id: int) -> tuple[Stored, ...]:
        return tuple(s for s in self.stored if s.key[:2] == (topic, queue_id))

    def schedule_next(self, level: int) -> int:
        return dict(self.schedule).get(level, 0)


# ------------------------------------------------------------------------------------------------------------
# Actions
# ------------------------------------------------------------------------------------------------------------


class DeadLetterOutcome(enum.Enum):
    """How an orderly dead-letter send ends: its first attempt stored; a retried attempt stored (the first failed:
    no count in the header, RETRY-16); every attempt failed."""

    STORED = "STORED"
    RETRIED = "RETRIED"
    FAILED = "FAILED"


@attrs.frozen
class Publish:
    """A producer stores a new message in ``T`` queue ``queue_id``."""

    queue_id: int = 0


@attrs.frozen
class Pulled:
    """A pull of ``topic`` queue ``queue_id`` finds the messages at ``offsets``: they enter the process queue."""

    topic: str
    queue_id: int
    offsets: tuple[int, ...]


@attrs.frozen
class Deliver:
    """The consumer hands messages of ``topic`` queue ``queue_id`` at ``offsets`` to the listener in one batch."""

    topic: str
    queue_id: int
    offsets: tuple[int, ...]


@attrs.frozen
class LocalReconsume:
    """The 5 s timer of a local re-consume fires: ``members`` are handed to the listener again, in one batch."""

    members: tuple[Key, ...]


@attrs.frozen
class ListenerReturns:
    """The listener returns ``status`` (None: it threw or returned null) for the batch ``members``, having set the
    context's ackIndex and delayLevelWhenNextConsume (concurrent) or suspendCurrentQueueTimeMillis (orderly)."""

    members: tuple[Key, ...]
    status: ConsumeStatus | ConsumeOrderlyStatus | None
    ack_index: int = ACK_INDEX_DEFAULT
    delay_level: int = 0
    context_ms: int = -1


@attrs.frozen
class BrokerAnswers:
    """The broker handles CONSUMER_SEND_MSG_BACK for ``key`` (storing its copy at ``stored_at_ms``, None: now)."""

    key: Key
    stored_at_ms: int | None = None


@attrs.frozen
class SendBackFails:
    """CONSUMER_SEND_MSG_BACK for ``key`` times out or fails on the wire (an injected fault)."""

    key: Key


@attrs.frozen
class FallbackStored:
    """The consumer's own send of ``key`` to %RETRY%G is stored (at ``stored_at_ms``); ``retried``: by a retried
    attempt, its first having failed (an injected fault, RETRY-16)."""

    key: Key
    retried: bool = False
    stored_at_ms: int | None = None


@attrs.frozen
class FallbackFails:
    """The consumer's own send of ``key`` fails too (an injected fault)."""

    key: Key


@attrs.frozen
class DeadLetterSent:
    """The orderly consumer's dead-letter send of ``key`` ends as ``outcome`` (its copy stored at ``stored_at_ms``)."""

    key: Key
    outcome: DeadLetterOutcome
    stored_at_ms: int | None = None


@attrs.frozen
class ScheduleDelivers:
    """The schedule service moves the message of delay ``level`` at ``offset`` to its real topic."""

    level: int
    offset: int


@attrs.frozen
class BrokerRestarts:
    """The broker is shut down cleanly and started again at once."""


@attrs.frozen
class LocksRefused:
    """The broker refuses or fails the orderly consumer's next queue lock requests (its locks lapse meanwhile)."""


@attrs.frozen
class TimePasses:
    """The clock moves ``ms`` forward."""

    ms: int


Action = (
    Publish | Pulled | Deliver | LocalReconsume | ListenerReturns | BrokerAnswers | SendBackFails | FallbackStored
    | FallbackFails | DeadLetterSent | ScheduleDelivers | BrokerRestarts | LocksRefused | TimePasses
)
