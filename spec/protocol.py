"""Protocol constants of RocketMQ 4.x: codes, names and tables, defined once.

Everything here is a fact of the wire protocol or of RocketMQ's defaults, read from ``rocketmq-all-4.9.8``
(``RequestCode``, ``ResponseCode``, ``MessageConst``, the config classes' defaults). The spec, the reference
implementation, the conformance suite and the trace checker all import these names; nothing else in the project
restates a code or a table.
"""

from __future__ import annotations

import enum


class RequestCode(enum.IntEnum):
    """Remoting request codes (``RequestCode.java``)."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329


class ResponseCode(enum.IntEnum):
    """Remoting response codes (``ResponseCode.java`` and ``RemotingSysResponseCode.java``)."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    FLOW_CONTROL = 215


class LanguageCode(enum.IntEnum):
    """``language`` field of a remoting header (``LanguageCode.java``)."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12


class SerializeType(enum.IntEnum):
    """High byte of a frame's mark word."""

    JSON = 0
    ROCKETMQ = 1


# Remoting frame facts.
MAX_FRAME_BYTES = 16 * 1024 * 1024
RPC_RESPONSE_FLAG = 0x1
RPC_ONEWAY_FLAG = 0x2
# RemotingCommand.serializeTypeConfigInThisServer (rocketmq.serialize.type unset): what a peer writes the commands it
# creates itself in (the requests it sends, its flow-control answers); only a processor's answer takes its request's.
OWN_SERIALIZE_TYPE = SerializeType.JSON

# MQVersion ordinals that servers compare against.
VERSION_V3_0_11 = 37
VERSION_V3_4_9 = 121
VERSION_V4_9_0 = 393
VERSION_V4_9_4 = 401
VERSION_V4_9_8 = 409
VERSION_V3_0_7_SNAPSHOT = 28  # oldest client a broker sends RESET_CONSUMER_CLIENT_OFFSET to (Broker2Client.resetOffset)
VERSION_V3_1_8_SNAPSHOT = 62  # oldest client a broker forwards admin calls to (AdminBrokerProcessor.callConsumer)


def _version_names() -> tuple[str, ...]:
    """``MQVersion.Version`` names by ordinal: 3.0.0's pre-releases, then SNAPSHOT/release pairs per patch (3.0.1-15,
    3.1.x and 3.2.x from 0, other 3.x from 1, 4.x and 5.x from 0), then HIGHER_VERSION (613 names)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6))]
    for beta in range(6, 10):
        names += [f"V3_0_0_BETA{beta}_SNAPSHOT", f"V3_0_0_BETA{beta}"]
    names.append("V3_0_0_FINAL")
    for major in (3, 4, 5):
        for minor in range(10):
            if (major, minor) == (3, 0):
                patches = range(1, 16)
            elif major == 3 and minor > 2:
                patches = range(1, 10)
            else:
                patches = range(10)
            for patch in patches:
                names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_VERSION_NAMES = _version_names()


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``: the version name of an ordinal; beyond the table, HIGHER_VERSION."""
    if 0 <= version < len(_VERSION_NAMES):
        return _VERSION_NAMES[version]
    return _VERSION_NAMES[-1]


class CommunicationMode(enum.Enum):
    """How a producer sends: the mode decides the number of attempts (``CommunicationMode.java``)."""

    SYNC = "SYNC"
    ASYNC = "ASYNC"
    ONEWAY = "ONEWAY"


class SendStatus(enum.Enum):
    """Outcome a producer reports for a message the broker accepted (``SendStatus.java``)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class GetMessageStatus(enum.Enum):
    """Status of the store's getMessage (``GetMessageStatus.java``)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class PutMessageStatus(enum.Enum):
    """Status of the store's putMessage (``PutMessageStatus.java``)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    LMQ_CONSUME_QUEUE_NUM_EXCEEDED = "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"


#: Put statuses with the message stored (``handlePutMessageResult`` and ``sendFinalMessage`` count them as stored).
STORED_PUT_STATUSES: frozenset[PutMessageStatus] = frozenset({
    PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
})


class PullStatus(enum.Enum):
    """Client-side pull result (``PullStatus.java``)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


class ConsumeFromWhere(enum.Enum):
    """Where a consumer group with no stored offset starts (``ConsumeFromWhere.java``, non-deprecated values)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class MessageModel(enum.Enum):
    """Clustering shares a group's queues; broadcasting gives every consumer every queue."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeType(enum.Enum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"


class ConsumeStatus(enum.Enum):
    """What a listener returns (concurrent consumption)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener returns (``ConsumeOrderlyStatus.java``, non-deprecated values)."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ReadOffsetType(enum.Enum):
    """Where an offset store reads a queue's consume offset from (``ReadOffsetType.java``)."""

    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class TransactionState(enum.Enum):
    """A producer's answer about a local transaction (``LocalTransactionState.java``)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


# END_TRANSACTION commitOrRollback values (MessageSysFlag).
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC

# Stored message sysFlag bits (MessageSysFlag).
SYSFLAG_COMPRESSED = 0x1
SYSFLAG_MULTI_TAGS = 0x2
SYSFLAG_TRANSACTION_MASK = 0xC
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
SYSFLAG_INNER_BATCH = 0x80

# Pull request sysFlag bits (PullSysFlag).
PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_FLAG_CLASS_FILTER = 0x8
PULL_FLAG_LITE_PULL = 0x10

# Topic permission bits (PermName).
PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1
DEFAULT_PERM = PERM_READ | PERM_WRITE

# Topic and group names.
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
TRANS_SYS_GROUP = "CID_RMQ_SYS_TRANS"
TRANS_OP_REMOVE_TAG = "d"
TRANS_CHECK_MAX_TIME_QUEUE_NUMS = 1
AUTO_CREATE_TOPIC_KEY = "TBW102"
DEFAULT_TOPIC_QUEUE_NUMS = 4
BROKER_DEFAULT_TOPIC_QUEUE_NUMS = 8  # BrokerConfig.defaultTopicQueueNums: TBW102's queues (clients ask for 4)


class Property:
    """Message property names (``MessageConst.java``)."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT_STORE_MSG_OK = "WAIT"
    DELAY_TIME_LEVEL = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QUEUE_ID = "REAL_QID"
    TRANSACTION_PREPARED = "TRAN_MSG"
    PRODUCER_GROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    RECONSUME_TIME = "RECONSUME_TIME"
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIME = "CONSUME_START_TIME"
    TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    CLUSTER = "CLUSTER"
    CORRELATION_ID = "CORRELATION_ID"
    MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    MESSAGE_TTL = "TTL"
    REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    MESSAGE_TYPE = "MSG_TYPE"
    INSTANCE_ID = "INSTANCE_ID"


# Message property encoding: name\x01value pairs joined by \x02.
NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

# Stored message layout (MessageDecoder).
MESSAGE_MAGIC_CODE = 0xDAA320A7
CONSUME_QUEUE_ENTRY_BYTES = 20

# Delay levels 1..18 of ScheduleMessageService, in milliseconds (index 0 is level 1).
DELAY_LEVEL_NAMES: tuple[str, ...] = (
    "1s", "5s", "10s", "30s", "1m", "2m", "3m", "4m", "5m", "6m", "7m", "8m", "9m", "10m", "20m", "30m", "1h", "2h",
)
DELAY_LEVEL_MILLIS: tuple[int, ...] = (
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000, 480_000, 540_000,
    600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
)
MAX_DELAY_LEVEL = len(DELAY_LEVEL_MILLIS)

# Latency fault tolerance table of MQFaultStrategy.
LATENCY_MAX_MS: tuple[int, ...] = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION_MS: tuple[int, ...] = (0, 0, 30000, 60000, 120000, 180000, 600000)
FAILED_CALL_LATENCY_MS = 30000

# Producer defaults (DefaultMQProducer).
DEFAULT_SEND_MSG_TIMEOUT_MS = 3000
DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED = 2
DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED = 2
COMPRESS_MSG_BODY_OVER_BYTES = 4096
DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK = False
DEFAULT_SEND_LATENCY_FAULT_ENABLE = False
# Broker error codes a SYNC send retries (DefaultMQProducer.retryResponseCodes; a fixed switch before 4.9.2).
DEFAULT_RETRY_RESPONSE_CODES: frozenset[int] = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
})

# Consumer defaults (DefaultMQPushConsumer, RebalanceImpl, ProcessQueue).
DEFAULT_MAX_RECONSUME_TIMES = 16
REBALANCE_INTERVAL_MS = 20_000
PULL_MAX_IDLE_MS = 120_000
CLIENT_LOCK_EXPIRY_MS = 30_000
CLIENT_LOCK_RENEW_MS = 20_000
BROKER_LOCK_EXPIRY_MS = 60_000
PERSIST_CONSUMER_OFFSET_INTERVAL_MS = 5_000
PULL_THRESHOLD_FOR_QUEUE = 1000
PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB = 100
CONSUME_CONCURRENTLY_MAX_SPAN = 2000
PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL = 50
PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL = 20
# ClientConfig.pullTimeDelayMillsWhenException: DefaultMQPushConsumerImpl's own 3000 is overwritten with it.
PULL_TIME_DELAY_MS_WHEN_EXCEPTION = 1000
OFFSET_ILLEGAL_REMOVE_DELAY_MS = 10_000
# MQClientInstance.resetOffset: the ProcessQueues dropped, then TimeUnit.SECONDS.sleep(10) before the offsets change.
RESET_OFFSET_CLIENT_WAIT_MS = 10_000
CONSUME_TIMESTAMP_DEFAULT_LAG_MS = 30 * 60 * 1000
SEND_BACK_LOCAL_RETRY_DELAY_MS = 5_000
UNLOCK_DELAY_MS_WHEN_CACHED = 20_000
PULL_BATCH_SIZE = 32
BROKER_SUSPEND_MAX_TIME_MS = 15_000
CONSUMER_TIMEOUT_MS_WHEN_SUSPEND = 30_000
DEFAULT_SUSPEND_CURRENT_QUEUE_MS = 1_000
DEFAULT_CONSUME_TIMEOUT_MINUTES = 15
# Subscription group defaults (SubscriptionGroupConfig) and dead-letter queues per group (DLQ_NUMS_PER_GROUP).
DEFAULT_RETRY_QUEUE_NUMS = 1
DLQ_NUMS_PER_GROUP = 1

# Broker transaction defaults (BrokerConfig).
TRANSACTION_CHECK_INTERVAL_MS = 60_000
TRANSACTION_TIMEOUT_MS = 6_000
TRANSACTION_CHECK_MAX = 15
TRANSACTION_OP_BATCH = 32
TRANSACTION_MAX_PROCESS_TIME_MS = 60_000
FILE_RESERVED_TIME_HOURS = 72

# Name server.
BROKER_REGISTER_INTERVAL_MS = 30_000
BROKER_CHANNEL_EXPIRED_MS = 120_000
NAMESRV_SCAN_INTERVAL_MS = 10_000
NAMESRV_SCAN_INITIAL_DELAY_MS = 5_000  # NamesrvController: the first scan for expired brokers
# TopicSysFlag: a topic's unit bits (the name server's unit topic lists).
TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x2

# Store limits of getMessage batches.
MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY = 256 * 1024
MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY = 32
MAX_TRANSFER_BYTES_ON_MESSAGE_IN_DISK = 64 * 1024
MAX_TRANSFER_COUNT_ON_MESSAGE_IN_DISK = 8
CONSUME_QUEUE_FILE_ENTRIES = 300_000
MAX_FILTER_SCAN_BYTES = 16_000

# Broker pull defaults (BrokerConfig, PullRequestHoldService, SubscriptionGroupConfig, MixAll).
SHORT_POLLING_TIME_MS = 1_000
LONG_POLLING_CHECK_INTERVAL_MS = 5_000
MASTER_ID = 0
WHICH_BROKER_WHEN_CONSUME_SLOWLY = 1


def retry_topic(group: str) -> str:
    """The retry topic of a consumer group."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """The dead-letter topic of a consumer group."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def split_addr(addr: str) -> tuple[str, int]:
    """A remoting address ``HOST:PORT`` (``[v6]:PORT`` too) as (host, port), the port 1..65535; ``ValueError``
    when it is not one. The one parser of the addresses users and routes give (name servers, brokers, upstreams)."""
    host, sep, port = addr.rpartition(":") if isinstance(addr, str) else ("", "", "")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT, not {addr!r}")
    return host, int(port)


# ---- Reference implementation facts (RocketMQ defaults the broker and clients need; added by the refimpl) ----
DEFAULT_NAMESRV_PORT = 9876
# A broker also listens on its port - 2 (BrokerController's fastRemotingServer, the clients' VIP channel).
VIP_CHANNEL_PORT_OFFSET = 2
# BrokerController.registerProcessor: the fast remoting server (the VIP channel) has every processor of the main one
# but PULL_MESSAGE's; its default processor (AdminBrokerProcessor) answers those REQUEST_CODE_NOT_SUPPORTED.
VIP_CHANNEL_UNSERVED_CODES: frozenset[int] = frozenset({RequestCode.PULL_MESSAGE})
DEFAULT_BROKER_PORT = 10911
DEFAULT_CLUSTER_NAME = "DefaultCluster"
HEARTBEAT_BROKER_INTERVAL_MS = 30_000
POLL_NAME_SERVER_INTERVAL_MS = 30_000
CLIENT_CHANNEL_EXPIRED_MS = 120_000
CLIENT_SCAN_INTERVAL_MS = 10_000
SCHEDULE_TICK_MS = 100
# Clients (ClientConfig, DefaultMQProducer, MixAll, Validators, TopicValidator, MessageConst).
MQ_CLIENT_API_TIMEOUT_MS = 3_000
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
DEFAULT_INSTANCE_NAME = "DEFAULT"
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
NOT_ALLOWED_SEND_TOPICS: frozenset[str] = frozenset({
    SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
})
PROPERTY_MSG_REGION = "MSG_REGION"
PROPERTY_TRACE_SWITCH = "TRACE_ON"
DEFAULT_TRACE_REGION_ID = "DefaultRegion"
PROPERTY_TRANSACTION_ID = "__transactionId__"
# The FAQ link RocketMQ appends to some error remarks (FAQUrl.suggestTodo: "\nSee <url> for further details.").
FAQ_URL = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str = FAQ_URL) -> str:
    """``FAQUrl.suggestTodo``: the line RocketMQ appends to some error remarks."""
    return f"\nSee {url} for further details."

# 4.9.8 producers also write the compression type into sysFlag bits 8-10 (MessageSysFlag.COMPRESSION_ZLIB_TYPE).
SYSFLAG_COMPRESSION_ZLIB = 0x3 << 8
SYSFLAG_COMPRESSION_TYPE_MASK = 0x7 << 8


class ClientErrorCode(enum.IntEnum):
    """Codes an ``MQClientException`` carries for client-side failures (``ClientErrorCode.java``)."""

    CONNECT_BROKER_EXCEPTION = 10001
    ACCESS_BROKER_TIMEOUT = 10002
    BROKER_NOT_EXIST_EXCEPTION = 10003
    NO_NAME_SERVER_EXCEPTION = 10004
    NOT_FOUND_TOPIC_EXCEPTION = 10005
    REQUEST_TIMEOUT_EXCEPTION = 10006
    CREATE_REPLY_MESSAGE_EXCEPTION = 10007


# Broker (SendMessageRequestHeaderV2, TopicValidator, TopicConfigManager, SubscriptionGroupManager, MixAll).
SEND_MESSAGE_V2_FIELDS: dict[str, str] = {
    "a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums", "e": "queueId",
    "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties", "j": "reconsumeTimes", "k": "unitMode",
    "l": "maxReconsumeTimes", "m": "batch", "n": "brokerName",
}
# Java enum constants in ordinal order (heartbeat JSON may carry ordinals: the C++ client sends integers).
CONSUME_TYPE_ORDINALS: tuple[str, ...] = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY")
MESSAGE_MODEL_ORDINALS: tuple[str, ...] = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE_ORDINALS: tuple[str, ...] = (
    "CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST", "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP",
)
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
BENCHMARK_TOPIC_QUEUE_NUMS = 1024
OFFSET_MOVED_EVENT_TOPIC = "OFFSET_MOVED_EVENT"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
# TopicValidator.SYSTEM_TOPIC_SET before a broker adds its cluster, broker and reply topics (and its trace topic).
SYSTEM_TOPICS: frozenset[str] = frozenset({
    AUTO_CREATE_TOPIC_KEY, SCHEDULE_TOPIC, BENCHMARK_TOPIC, TRANS_HALF_TOPIC, TRACE_TOPIC, TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT_TOPIC,
})
# TopicValidator.VALID_CHAR_BIT_MAP: the characters of ^[%|a-zA-Z0-9_-]+$ (topic and group names).
VALID_TOPIC_CHARS: frozenset[str] = frozenset("%|-_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
# CommitLog.MessageExtEncoder: a stored message may exceed maxMessageSize (the body limit) by this much.
STORED_MESSAGE_RESERVE_BYTES = 64 * 1024
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"
TOPIC_CONFIG_DEFAULT_QUEUE_NUMS = 16  # TopicConfig.defaultReadQueueNums / defaultWriteQueueNums
TOPIC_FILTER_SINGLE_TAG = "SINGLE_TAG"
TOPIC_FILTER_MULTI_TAG = "MULTI_TAG"
SUB_ALL = "*"
EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"  # ExpressionType.SQL92: MessageSelector.bySql
SYS_CONSUMER_GROUP_PREFIX = "CID_RMQ_SYS_"
NAMESPACE_SEPARATOR = "%"  # NamespaceUtil: namespace%resource (ClientConfig.namespace)
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"  # NamesrvUtil: the name server's order-topic KV namespace
# NamesrvConfig + NettyServerConfig of 4.9.8 with their defaults, as GET_NAMESRV_CONFIG lists them (paths blank: a
# test double writes no files; listenPort is the port the name server listens on).
NAMESRV_CONFIG_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("clusterTest", "false"), ("configBlackList", "configBlackList;configStorePath;kvConfigPath"),
    ("configStorePath", ""), ("kvConfigPath", ""), ("listenPort", str(DEFAULT_NAMESRV_PORT)),
    ("orderMessageEnable", "false"),
    ("productEnvName", "center"), ("rocketmqHome", ""), ("serverAsyncSemaphoreValue", "64"),
    ("serverCallbackExecutorThreads", "0"), ("serverChannelMaxIdleTimeSeconds", "120"),
    ("serverOnewaySemaphoreValue", "256"), ("serverPooledByteBufAllocatorEnable", "true"),
    ("serverSelectorThreads", "3"), ("serverSocketBacklog", "1024"), ("serverSocketRcvBufSize", "0"),
    ("serverSocketSndBufSize", "0"), ("serverWorkerThreads", "8"), ("useEpollNativeSelector", "false"),
    ("writeBufferHighWaterMark", "0"), ("writeBufferLowWaterMark", "0"),
)
# DefaultRequestProcessor.initConfigBlackList: keys UPDATE_NAMESRV_CONFIG always refuses, besides configBlackList's.
NAMESRV_CONFIG_ALWAYS_BLACK: tuple[str, ...] = ("configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome")
BUILTIN_SUBSCRIPTION_GROUPS: tuple[str, ...] = (
    "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER",
)
BROKER_REGISTER_INITIAL_DELAY_MS = 10_000
BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS = 5_000
# Store (CommitLog, MessageStoreConfig, MessageConst, DefaultMessageStore.checkMessage).
BLANK_MAGIC_CODE = 0xCBD43194  # CommitLog.BLANK_MAGIC_CODE (-875286124): end-of-file filler of a commit-log segment
COMMITLOG_END_FILE_MIN_BLANK_LENGTH = 8
MAX_PROPERTIES_LENGTH = 32767  # Short.MAX_VALUE: stored properties length field is an int16
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR between KEYS
# Message index and QUERY_MESSAGE (MessageStoreConfig maxHashSlotNum, maxMsgsNumBatch, defaultQueryMaxNum;
# MixAll.UNIQUE_MSG_QUERY_FLAG, the ext field of a query by unique key).
INDEX_HASH_SLOT_NUM = 5_000_000
MAX_MSGS_NUM_BATCH = 64
DEFAULT_QUERY_MAX_NUM = 32
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
# MixAll.REPLY_MESSAGE_FLAG (MSG_TYPE of a reply); Broker2Client.callClient's timeout for PUSH_REPLY_MESSAGE_TO_CLIENT.
REPLY_MESSAGE_FLAG = "reply"
BROKER_CALL_CLIENT_TIMEOUT_MS = 10_000
FLUSH_INTERVAL_COMMITLOG_MS = 500
FLUSH_INTERVAL_CONSUME_QUEUE_MS = 1_000
# DefaultMessageStore housekeeping: cleanResourceInterval, and deleteWhen ("04": expired files go at 4 o'clock).
STORE_CLEAN_RESOURCE_INTERVAL_MS = 10_000
STORE_DELETE_WHEN_HOUR = 4
# ScheduleMessageService: first run of each level's task after start, offset persistence (flushDelayOffsetInterval,
# first run after 10 s). A task that finds nothing due runs again after SCHEDULE_TICK_MS (DELAY_FOR_A_WHILE).
SCHEDULE_FIRST_DELAY_MS = 1_000
FLUSH_DELAY_OFFSET_INTERVAL_MS = 10_000
# ThreadLocalRandom.nextInt(99999999) % queueNums: how brokers pick a random retry / DLQ / check-max queue.
RANDOM_QUEUE_ID_BOUND = 99_999_999
# TransactionalMessageServiceImpl: half messages read one at a time, one retry when a half read finds nothing.
TRANSACTION_HALF_PULL_NUMS = 1
TRANSACTION_MAX_RETRY_WHEN_HALF_NULL = 1

# Consumer facts shared by the spec and the reference implementation.
CONSISTENT_HASH_VIRTUAL_NODES = 10
LITE_PULL_AUTO_COMMIT_INTERVAL_MS = 5_000
LITE_PULL_MIN_AUTO_COMMIT_INTERVAL_MS = 1_000
LITE_PULL_THRESHOLD_FOR_ALL = 10_000
LITE_PULL_TIME_DELAY_MS_WHEN_EXCEPTION = PULL_TIME_DELAY_MS_WHEN_EXCEPTION  # the same ClientConfig setting
# DefaultLitePullConsumer's own defaults where they differ from DefaultMQPushConsumer's (pullBatchSize 32, 15 s).
LITE_PULL_BATCH_SIZE = 10
LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS = 20_000
DEFAULT_CONSUME_THREADS = 20
# MixAll.DEFAULT_CONSUMER_GROUP: a user group must not take this name.
DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"


# ---- Server request executors: how a 4.9.8 broker bounds the work clients give it ----
class Executor(enum.Enum):
    """The thread pool a request runs on (BrokerController.registerProcessor); each has a bounded queue."""

    SEND = "send"
    PULL = "pull"
    REPLY = "reply"
    QUERY = "query"
    HEARTBEAT = "heartbeat"
    CLIENT_MANAGE = "clientManage"
    CONSUMER_MANAGE = "consumerManage"
    END_TRANSACTION = "endTransaction"
    ADMIN = "admin"  # the default processor: every other code, unknown ones too
    NAMESRV = "namesrv"  # a name server's one default processor


BROKER_EXECUTOR_OF: dict[int, Executor] = {
    RequestCode.SEND_MESSAGE: Executor.SEND,
    RequestCode.SEND_MESSAGE_V2: Executor.SEND,
    RequestCode.SEND_BATCH_MESSAGE: Executor.SEND,
    RequestCode.CONSUMER_SEND_MSG_BACK: Executor.SEND,
    RequestCode.PULL_MESSAGE: Executor.PULL,
    RequestCode.SEND_REPLY_MESSAGE: Executor.REPLY,
    RequestCode.SEND_REPLY_MESSAGE_V2: Executor.REPLY,
    RequestCode.QUERY_MESSAGE: Executor.QUERY,
    RequestCode.VIEW_MESSAGE_BY_ID: Executor.QUERY,
    RequestCode.HEART_BEAT: Executor.HEARTBEAT,
    RequestCode.UNREGISTER_CLIENT: Executor.CLIENT_MANAGE,
    RequestCode.CHECK_CLIENT_CONFIG: Executor.CLIENT_MANAGE,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: Executor.CONSUMER_MANAGE,
    RequestCode.UPDATE_CONSUMER_OFFSET: Executor.CONSUMER_MANAGE,
    RequestCode.QUERY_CONSUMER_OFFSET: Executor.CONSUMER_MANAGE,
    RequestCode.END_TRANSACTION: Executor.END_TRANSACTION,
}

# BrokerConfig.*ThreadPoolQueueCapacity. The admin executor and the name server's are unbounded in 4.9.8
# (LinkedBlockingQueue); a server that must stay up whatever clients do bounds them too (rocketspec's choice).
EXECUTOR_QUEUE_CAPACITY: dict[Executor, int] = {
    Executor.SEND: 10_000,
    Executor.PULL: 100_000,
    Executor.REPLY: 10_000,
    Executor.QUERY: 20_000,
    Executor.HEARTBEAT: 50_000,
    Executor.CLIENT_MANAGE: 1_000_000,
    Executor.CONSUMER_MANAGE: 1_000_000,
    Executor.END_TRANSACTION: 100_000,
    Executor.ADMIN: 10_000,
    Executor.NAMESRV: 10_000,
}

# BrokerFastFailure: a request that waited this long in its queue is answered SYSTEM_BUSY instead of run
# (BrokerConfig.waitTimeMillsIn{Send,Pull,Heartbeat,Transaction}Queue, brokerFastFailureEnable true).
EXECUTOR_MAX_WAIT_MS: dict[Executor, int] = {
    Executor.SEND: 200,
    Executor.PULL: 5_000,
    Executor.HEARTBEAT: 31_000,
    Executor.END_TRANSACTION: 3_000,
}

# SYSTEM_BUSY remarks: NettyRemotingAbstract (queue full) and BrokerFastFailure (waited too long; %d ms, queue size).
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
TIMEOUT_CLEAN_QUEUE_REMARK = ("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
                              "{waited}ms, size of queue: {size}")

# NettyServerConfig.serverChannelMaxIdleTimeSeconds: a server closes a connection idle (no read, no write) this long.
SERVER_CHANNEL_MAX_IDLE_S = 120

# ---- Plain ACL (acl module of 4.9.8: SessionCredentials, Permission, AclConstants) ----
# Ext fields a signing client (AclClientRPCHook) adds; the signature covers every other field and the body.
ACL_ACCESS_KEY = "AccessKey"
ACL_SIGNATURE = "Signature"
ACL_SECURITY_TOKEN = "SecurityToken"


class AclPerm(enum.IntFlag):
    """``Permission``: what an account holds on a topic or group (DENY wins), and what a request needs."""

    DENY = 1
    ANY = 2
    PUB = 4
    SUB = 8


# Permission.ADMIN_CODE: requests only an admin account may send.
ACL_ADMIN_REQUEST_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.UPDATE_BROKER_CONFIG, RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, RequestCode.DELETE_SUBSCRIPTIONGROUP,
})
# AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: keys must be longer than this.
ACL_KEY_MIN_LENGTH = 6

# ---- Broker statistics (BrokerStatsManager, StatsItem of 4.9.8) ----
# The stats names a broker counts a stored send under (the send path's handlePutMessageResult).
STATS_TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
STATS_TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
STATS_BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
# StatsItem's sample lists: (name, sampling period ms, samples kept): every 10 s, 10 min and 1 h from the start.
STATS_SAMPLING: tuple[tuple[str, int, int], ...] = (("minute", 10_000, 7), ("hour", 600_000, 7), ("day", 3_600_000, 25))
