"""Broker requests: the machine's actions: one per request a client or an admin tool sends, and time passing."""

from __future__ import annotations

import attrs

from rocketspec.spec.protocol import AUTO_CREATE_TOPIC_KEY, RequestCode

TOPIC = "T"
GROUP = "G"
# The defaultTopicQueueNums the model's producer asks for (a Java producer asks for 4; fewer keeps the model small).
MODEL_REQUESTED_QUEUES = 2


# ------------------------------------------------------------------------------------------------------- sends
@attrs.frozen
class Send:
    """SEND_MESSAGE(_V2) of one message: the header (topic, queue id, default topic and its queue count, sysFlag,
    unitMode, reconsume times), the body and the properties it carries (TAGS, KEYS, UNIQ_KEY, WAIT=true). ``draw``
    is the broker's random number for a negative queue id. ``client``: a producer built the request (its
    compression and unit flag follow the client's options, BRK-22, BRK-23), ``original`` the body before it
    compressed it; ``producer_addr`` the sender's address as the broker sees it."""

    queue_id: int
    tags: str | None = None
    draw: int = 0
    topic: str = TOPIC
    body: bytes = b""
    keys: str | None = None
    uniq_key: str | None = None
    wait: bool = False
    sys_flag: int = 0
    unit_mode: bool = False
    default_topic: str = AUTO_CREATE_TOPIC_KEY
    default_queues: int = MODEL_REQUESTED_QUEUES
    original: bytes | None = None
    client: bool = False
    producer_addr: str = ""


@attrs.frozen
class SendBatch:
    """A batch of ``count`` messages to one queue (SEND_BATCH_MESSAGE with batch=true): message i has body
    ``body + str(i)`` and, with ``uniq``, UNIQ_KEY ``uniq + str(i)``; the header carries WAIT=true with ``wait`` and a
    DELAY level with ``delay``."""

    queue_id: int
    count: int
    topic: str = TOPIC
    draw: int = 0
    body: bytes = b""
    uniq: str | None = None
    wait: bool = False
    delay: bool = False
    unit_mode: bool = False
    default_topic: str = AUTO_CREATE_TOPIC_KEY
    default_queues: int = MODEL_REQUESTED_QUEUES
    producer_addr: str = ""


@attrs.frozen
class SendReply:
    """SEND_REPLY_MESSAGE(_V2) of a reply to the cluster's reply topic carrying REPLY_TO_CLIENT ``reply_to`` and
    CORRELATION_ID ``correlation``; the requester answers the push SUCCESS (``push_ok``) or not, ``rtt`` ms after."""

    queue_id: int
    reply_to: str | None
    correlation: str = "c"
    topic: str = ""
    body: bytes = b""
    draw: int = 0
    push_ok: bool = True
    rtt: int = 0
    producer_addr: str = ""


# ------------------------------------------------------------------------------------------------------ topics
@attrs.frozen
class CreateTopic:
    """UPDATE_AND_CREATE_TOPIC: ``queues`` read queues, ``write_queues`` write queues (None: as many), the perm, the
    filter type (``filter_ok`` false: a name that is not a TopicFilterType) and topicSysFlag."""

    queues: int
    perm: int
    topic: str = TOPIC
    write_queues: int | None = None
    multi_tag: bool = False
    sys_flag: int = 0
    filter_ok: bool = True


@attrs.frozen
class DeleteTopic:
    """DELETE_TOPIC_IN_BROKER."""

    topic: str = TOPIC


@attrs.frozen
class GetTopicConfig:
    """GET_ALL_TOPIC_CONFIG."""


@attrs.frozen
class GetSystemTopics:
    """GET_SYSTEM_TOPIC_LIST_FROM_BROKER."""


@attrs.frozen
class GetTopicStats:
    """GET_TOPIC_STATS_INFO."""

    topic: str = TOPIC


@attrs.frozen
class OffsetQuery:
    """GET_MIN_OFFSET ("min"), GET_MAX_OFFSET ("max"), GET_EARLIEST_MSG_STORETIME ("earliest") or
    SEARCH_OFFSET_BY_TIMESTAMP ("search", at ``timestamp``) of one queue."""

    kind: str
    topic: str = TOPIC
    queue_id: int = 0
    timestamp: int = 0


@attrs.frozen
class QueryConsumeQueue:
    """QUERY_CONSUME_QUEUE: ``count`` entries of a queue from ``index``, with ``group``'s subscription."""

    topic: str = TOPIC
    queue_id: int = 0
    index: int = 0
    count: int = 1
    group: str | None = None


@attrs.frozen
class ConsumedBy:
    """QUERY_TOPIC_CONSUME_BY_WHO."""

    topic: str = TOPIC


# ------------------------------------------------------------------------------------------------------ groups
@attrs.frozen
class CreateGroup:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with these settings."""

    group: str = GROUP
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    notify: bool = True
    consume_enable: bool = True


@attrs.frozen
class DeleteGroup:
    """DELETE_SUBSCRIPTIONGROUP."""

    group: str = GROUP


@attrs.frozen
class GetGroups:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG."""


# ----------------------------------------------------------------------------------------------------- clients
@attrs.frozen
class Heartbeat:
    """HEART_BEAT over ``connection`` with client id ``client_id`` (empty: the connection's name): consumer data for
    ``group`` (None: none) subscribing ``topics`` with its unitMode, and producer data for ``producer`` (None:
    none). ``client``: a client built it (its unitMode follows the client's option, BRK-23); ``malformed``: the body
    is not a HeartbeatData."""

    connection: str
    topics: frozenset[str] = frozenset()
    group: str | None = GROUP
    producer: str | None = None
    client_id: str = ""
    unit_mode: bool = False
    client: bool = False
    malformed: bool = False


@attrs.frozen
class UnregisterClient:
    """UNREGISTER_CLIENT over ``connection`` naming the consumer group ``group`` and producer group ``producer``
    (None: not named) and the client id ``client_id`` (empty: the connection's)."""

    connection: str
    group: str | None = GROUP
    producer: str | None = None
    client_id: str = ""


@attrs.frozen
class ConnectionClosed:
    """A client connection closes."""

    connection: str


@attrs.frozen
class ConsumerList:
    """GET_CONSUMER_LIST_BY_GROUP."""

    group: str = GROUP


@attrs.frozen
class ConsumerConnections:
    """GET_CONSUMER_CONNECTION_LIST."""

    group: str = GROUP


@attrs.frozen
class ProducerConnections:
    """GET_PRODUCER_CONNECTION_LIST."""

    group: str = "PG"


@attrs.frozen
class ConsumeStats:
    """GET_CONSUME_STATS of a group, for one topic or (None) every topic it has offsets on."""

    group: str = GROUP
    topic: str | None = TOPIC


@attrs.frozen
class ProducerInfo:
    """GET_ALL_PRODUCER_INFO."""


@attrs.frozen
class LockBatch:
    """LOCK_BATCH_MQ: ``client_id`` asks for the queues ``queues`` of ``topic`` for ``group`` (``malformed``: a
    body that is not a LockBatchRequestBody)."""

    client_id: str
    queues: tuple[int, ...]
    group: str = GROUP
    topic: str = TOPIC
    malformed: bool = False


@attrs.frozen
class UnlockBatch:
    """UNLOCK_BATCH_MQ: ``client_id`` frees the queues ``queues`` of ``topic`` for ``group`` (``malformed``: a body
    that is not an UnlockBatchRequestBody)."""

    client_id: str
    queues: tuple[int, ...]
    group: str = GROUP
    topic: str = TOPIC
    malformed: bool = False


# ----------------------------------------------------------------------------------------------------- offsets
@attrs.frozen
class CommitOffset:
    """UPDATE_CONSUMER_OFFSET."""

    group: str = GROUP
    topic: str = TOPIC
    queue_id: int = 0
    offset: int = 0


@attrs.frozen
class QueryOffset:
    """QUERY_CONSUMER_OFFSET."""

    group: str = GROUP
    topic: str = TOPIC
    queue_id: int = 0


@attrs.frozen
class CorrectionOffset:
    """QUERY_CORRECTION_OFFSET of ``topic`` with ``filter_groups`` (comma-joined on the wire)."""

    topic: str = TOPIC
    filter_groups: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------- configuration
@attrs.frozen
class GetBrokerConfig:
    """GET_BROKER_CONFIG."""


@attrs.frozen
class UpdateBrokerConfig:
    """UPDATE_BROKER_CONFIG with a properties body of these (key, value) lines."""

    entries: tuple[tuple[str, str], ...]


@attrs.frozen
class RuntimeInfo:
    """GET_BROKER_RUNTIME_INFO."""


@attrs.frozen
class ViewStats:
    """VIEW_BROKER_STATS_DATA of one stats item."""

    name: str
    key: str


# ----------------------------------------------------------------------------------------------------- queries
@attrs.frozen
class QueryMessage:
    """QUERY_MESSAGE by ``key`` (a KEYS word or, with ``unique``, a UNIQ_KEY) in [begin, end]."""

    topic: str = TOPIC
    key: str = ""
    max_num: int = 32
    begin: int = 0
    end: int = 0
    unique: bool = False


@attrs.frozen
class ViewMessage:
    """VIEW_MESSAGE_BY_ID of a commit-log offset (None: the header has none)."""

    offset: int | None


@attrs.frozen
class ResumeHalf:
    """RESUME_CHECK_HALF_MESSAGE of the message id of a commit-log offset (None: an id that does not decode)."""

    offset: int | None


@attrs.frozen
class Maintenance:
    """A maintenance or ACL request of this code with no header: CLEAN_EXPIRED_CONSUMEQUEUE,
    DELETE_EXPIRED_COMMITLOG, CLEAN_UNUSED_TOPIC, GET_ALL_DELAY_OFFSET, the ACL updates,
    GET_BROKER_CLUSTER_ACL_INFO; any other code is one the broker does not serve (BRK-19)."""

    code: int = RequestCode.CLEAN_UNUSED_TOPIC


@attrs.frozen
class Malformed:
    """A request of ``code`` for ``topic`` without its header field ``missing``."""

    code: int
    missing: str
    topic: str = TOPIC


@attrs.frozen
class OrderTopicConfig:
    """The name server's ORDER_TOPIC_CONFIG gets (PUT_KV_CONFIG) or loses (DELETE_KV_CONFIG) ``topic``: what the
    broker's next registration answer tells it (an environment change: the request goes to the name server)."""

    topic: str
    order: bool


# -------------------------------------------------------------------------------------------------------- time
@attrs.frozen
class TimePasses:
    """The clock advances ``ms`` (the store's clock: store times, stats samples)."""

    ms: int = 1


Action = (
    Send | SendBatch | SendReply | CreateTopic | DeleteTopic | GetTopicConfig | GetSystemTopics | GetTopicStats
    | OffsetQuery | QueryConsumeQueue | ConsumedBy | CreateGroup | DeleteGroup | GetGroups | Heartbeat
    | UnregisterClient | ConnectionClosed | ConsumerList | ConsumerConnections | ConsumeStats | ProducerConnections
    | ProducerInfo | LockBatch | UnlockBatch | CommitOffset | QueryOffset | CorrectionOffset | GetBrokerConfig
    | UpdateBrokerConfig | RuntimeInfo | ViewStats | QueryMessage | ViewMessage | ResumeHalf | Maintenance
    | Malformed | OrderTopicConfig | TimePasses
)
