"""Broker requests: sends, the store's offsets and search, queries, client registration and admin requests.

The area covers what a client observes of a 4.9.8 broker outside pulls, retries and transactions (those have their
own areas):

* the send path (``SendMessageProcessor``, ``AbstractSendMessageProcessor.msgCheck``, ``TopicValidator``,
  ``TopicConfigManager.createTopicInSendMessageMethod``, ``DefaultMessageStore.checkMessage``,
  ``CommitLog.MessageExtEncoder``): checks and their order, implicit topic creation, queue ids, message limits,
  the answer (offset message id, queue offset), batches and what is stored;
* the store's answers (``DefaultMessageStore``, ``ConsumeQueue``, ``IndexService``, ``QueryMessageProcessor``):
  min/max offsets, earliest store time, search by timestamp, query by key, view by offset, tags codes;
* client registration (``ClientManageProcessor``, ``ConsumerManager``, ``ConsumerGroupInfo``,
  ``DefaultConsumerIdsChangeListener``, ``ConsumerManageProcessor``): heartbeats, unregistration, consumer lists and
  NOTIFY_CONSUMER_IDS_CHANGED;
* admin requests (``AdminBrokerProcessor``, ``RebalanceLockManager``, ``SubscriptionGroupManager``): topics,
  subscription groups, queue locks, configuration, runtime info, unknown request codes.

The state machine has two scenarios sharing one state: a broker's store for one topic (sends, batches, topic
creation and deletion, time passing) and one consumer group's connections (heartbeats, unregistrations, closed
connections).

Versions: read in ``rocketmq-all-4.9.8`` and checked against a 4.9.8 broker; the checks and answers are the same in
every 4.9.x release.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.java import is_blank
from rocketspec.spec.message_filter import broker_tag_matches, java_string_hash
from rocketspec.spec.protocol import (
    BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
    DEFAULT_QUERY_MAX_NUM,
    KEY_SEPARATOR,
    MAX_MSGS_NUM_BATCH,
    MAX_PROPERTIES_LENGTH,
    NOT_ALLOWED_SEND_TOPICS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    RANDOM_QUEUE_ID_BOUND,
    RETRY_GROUP_TOPIC_PREFIX,
    STORED_MESSAGE_RESERVE_BYTES,
    SYS_CONSUMER_GROUP_PREFIX,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    TOPIC_MAX_LENGTH,
    VALID_TOPIC_CHARS,
    Property,
    RequestCode,
    ResponseCode,
    suggest_todo,
)
from rocketspec.spec.rebalance import broker_lock_granted

CLAUSES = ClauseTable(
    area="broker_requests",
    prefix="BRK",
    clauses=(
        Clause(
            "BRK-1",
            "A send is checked in this order, the first failure answering: a broker without write permission "
            "refuses a topic configured as an order topic (NO_PERMISSION 'the broker[<ip>] sending message is "
            "forbidden'); a blank topic, one with a character outside [%|a-zA-Z0-9_-] or one longer than 127 "
            "characters is SYSTEM_ERROR with TopicValidator's remark; SCHEDULE_TOPIC_XXXX, the transaction half and "
            "op topics, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC and OFFSET_MOVED_EVENT are NO_PERMISSION "
            "'Sending message to topic[<t>] is forbidden.'; then BRK-2 and BRK-3.",
            "AbstractSendMessageProcessor.msgCheck; TopicValidator.validateTopic, isNotAllowedSendTopic",
        ),
        Clause(
            "BRK-2",
            "A topic the broker lacks is created from the request's default topic (TBW102) when that exists at the "
            "broker with the inherit bit (TBW102 loses it without autoCreateTopicEnable): min(defaultTopicQueueNums, "
            "its writeQueueNums) read and write queues (at least 0), its perm without inherit; failing that a "
            "%RETRY% topic gets 1 read|write queue; otherwise TOPIC_NOT_EXIST 'topic[<t>] not exist, apply first "
            "please!' with the FAQ suggestion.",
            "AbstractSendMessageProcessor.msgCheck; TopicConfigManager.createTopicInSendMessageMethod",
        ),
        Clause(
            "BRK-3",
            "A queueId at or above max(readQueueNums, writeQueueNums) is SYSTEM_ERROR 'request queueId[<id>] is "
            "illegal, <TopicConfig> Producer: <addr>'; a negative queueId becomes a random number modulo "
            "writeQueueNums.",
            "AbstractSendMessageProcessor.msgCheck; SendMessageProcessor.randomQueueId",
        ),
        Clause(
            "BRK-4",
            "The send path does not check the topic's perm (a 4.9.8 broker stores a message sent to a topic without "
            "the write bit; clients skip such queues in their routes); a pull of a topic whose perm lacks the read "
            "bit is NO_PERMISSION 'the topic[<t>] pulling message is forbidden'.",
            "AbstractSendMessageProcessor.msgCheck; PullMessageProcessor.processRequest",
        ),
        Clause(
            "BRK-5",
            "The store refuses with MESSAGE_ILLEGAL, storing nothing: a body over maxMessageSize, a stored message "
            "longer than maxMessageSize + 64 KiB, properties over 32767 characters or UTF-8 bytes, a topic over 127 "
            "characters, a batch body over maxMessageSize.",
            "DefaultMessageStore.checkMessage, checkMessages; CommitLog.MessageExtEncoder.encode; "
            "SendMessageProcessor.handlePutMessageResult",
        ),
        Clause(
            "BRK-6",
            "A stored send answers SUCCESS with msgId = the offset message id (store host IPv4 address and port, "
            "then the commit-log offset, as 32 upper-case hex digits), queueId, and queueOffset = the message's "
            "consume-queue index (0, 1, 2, ... per queue); every send answer carries MSG_REGION and TRACE_ON.",
            "SendMessageProcessor.preSend, handlePutMessageResult; CommitLog.DefaultAppendMessageCallback.doAppend",
        ),
        Clause(
            "BRK-7",
            "SEND_MESSAGE (long field names) and SEND_MESSAGE_V2 (fields a..n) are one request and the batch field, "
            "not the code, selects the batch path (SEND_BATCH_MESSAGE with batch=true from the Java client): the "
            "body's messages are stored in order at consecutive offsets of one queue and the answer carries the "
            "comma-joined msgIds and the first queueOffset; a batch with a transaction type or a DELAY property is "
            "MESSAGE_ILLEGAL (a %RETRY% batch is refused only by the client).",
            "AbstractSendMessageProcessor.parseRequestHeader; SendMessageProcessor.asyncSendBatchMessage; "
            "CommitLog.asyncPutMessages",
        ),
        Clause(
            "BRK-8",
            "A stored message keeps body, flag, sysFlag (MULTI_TAGS added for a MULTI_TAG topic), bornTimestamp, "
            "bornHost, reconsumeTimes and every sent property except WAIT, plus CLUSTER = the broker's cluster name; "
            "a pull returns it with queueId, queueOffset, commitLogOffset, storeTimestamp, storeHost and msgId set.",
            "SendMessageProcessor.asyncSendMessage; MessageDecoder.decode",
        ),
        Clause(
            "BRK-9",
            "The consume-queue tags code of a message is String.hashCode of its TAGS (0 without tags); the broker "
            "filters tag subscriptions by these codes, so a tag with the hash code of a subscribed one passes.",
            "MessageExtBrokerInner.tagsString2tagsCode; ExpressionMessageFilter.isMatchedByConsumeQueue",
        ),
        Clause(
            "BRK-10",
            "GET_MIN_OFFSET / GET_MAX_OFFSET answer the consume queue's min offset and max offset (one past the last "
            "entry), 0 and 0 for a queue never written (any topic and queue id); GET_EARLIEST_MSG_STORETIME answers "
            "the store time of the queue's first message, -1 when it has none.",
            "DefaultMessageStore.getMinOffsetInQueue, getMaxOffsetInQueue, getEarliestMessageTime",
        ),
        Clause(
            "BRK-11",
            "SEARCH_OFFSET_BY_TIMESTAMP binary-searches the queue by store time: a message stored exactly then "
            "(whichever the search meets), else the nearer of the last message before and the first after (the "
            "earlier on a tie); the first when all are later, the last (max offset - 1) when all are earlier, 0 for "
            "an empty queue.",
            "ConsumeQueue.getOffsetInQueueByTime",
        ),
        Clause(
            "BRK-12",
            "QUERY_MESSAGE answers, from the index, the topic's messages whose UNIQ_KEY or a KEYS word has the key's "
            "index hash (|hashCode| of 'topic#key') with an index time in [begin, end]: the newest min(maxNum, 64) "
            "(maxNum 32 with _UNIQUE_KEY_QUERY) in commit-log order, else QUERY_NOT_FOUND; VIEW_MESSAGE_BY_ID answers "
            "the message stored at a commit-log offset, SYSTEM_ERROR 'can not find message by the offset, <o>' when "
            "none is.",
            "QueryMessageProcessor.queryMessage, viewMessageById; DefaultMessageStore.queryMessage; IndexService",
        ),
        Clause(
            "BRK-13",
            "HEART_BEAT registers the connection, with its client id, in every producer and consumer group it names "
            "(a consumer group's subscriptions replace the group's table), creating %RETRY%<group> with retryQueueNums "
            "read|write queues for a group with a config; GET_CONSUMER_LIST_BY_GROUP answers the client ids of the "
            "group's connections, SYSTEM_ERROR 'no consumer for this group, <group>' when it has none.",
            "ClientManageProcessor.heartBeat; ConsumerGroupInfo.updateChannel, updateSubscription; "
            "ConsumerManageProcessor.getConsumerListByGroup",
        ),
        Clause(
            "BRK-14",
            "With the broker's notifyConsumerIdsChangedEnable on, NOTIFY_CONSUMER_IDS_CHANGED (oneway) goes to every "
            "connection of a consumer group after a heartbeat that adds a connection or changes its subscribed "
            "topics, or an UNREGISTER_CLIENT naming it (both only with the group's notifyConsumerIdsChangedEnable), "
            "or after one of its connections closes.",
            "ConsumerManager.registerConsumer, unregisterConsumer, doChannelCloseEvent; "
            "DefaultConsumerIdsChangeListener.handle",
        ),
        Clause(
            "BRK-15",
            "UNREGISTER_CLIENT removes the requesting connection (whatever client id it names) from the producer "
            "group and the consumer group in its header, a group left without connections being dropped, and "
            "answers SUCCESS.",
            "ClientManageProcessor.unregisterClient; ProducerManager.unregisterProducer; "
            "ConsumerManager.unregisterConsumer",
        ),
        Clause(
            "BRK-16",
            "LOCK_BATCH_MQ answers, in lockOKMQSet, the requested queues the client holds after the request (REB-17 "
            "decides each); UNLOCK_BATCH_MQ frees the requested queues the client holds and answers SUCCESS.",
            "AdminBrokerProcessor.lockBatchMQ, unlockBatchMQ; RebalanceLockManager.tryLockBatch, unlockBatch",
        ),
        Clause(
            "BRK-17",
            "UPDATE_AND_CREATE_TOPIC puts the topic config and registers it at the name servers; "
            "DELETE_TOPIC_IN_BROKER removes it and its consume queues (a topic created again starts at offset 0); "
            "both refuse an invalid name (SYSTEM_ERROR, BRK-1's remarks) and a system topic (SYSTEM_ERROR 'The "
            "topic[<t>] is conflict with system topic.'); GET_ALL_TOPIC_CONFIG answers the topic table.",
            "AdminBrokerProcessor.updateAndCreateTopic, deleteTopic, getAllTopicConfig; TopicValidator.isSystemTopic",
        ),
        Clause(
            "BRK-18",
            "GET_BROKER_CONFIG answers SUCCESS with the configuration as 'key=value\\n' lines and its DataVersion "
            "JSON in the version field; GET_BROKER_RUNTIME_INFO answers SUCCESS with a KVTable of runtime values "
            "(brokerVersion, brokerVersionDesc, commitLogMaxOffset, ...).",
            "AdminBrokerProcessor.getBrokerConfig, getBrokerRuntimeInfo; MixAll.properties2String",
        ),
        Clause(
            "BRK-19",
            "A request code the broker does not serve is answered REQUEST_CODE_NOT_SUPPORTED with remark ' request "
            "type <code> not supported' (a name server does not answer at all, NS-10).",
            "AdminBrokerProcessor.getUnknownCmdResponse; BrokerController.registerProcessor",
        ),
        Clause(
            "BRK-20",
            "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP puts the group config of the JSON body and DELETE_SUBSCRIPTIONGROUP "
            "removes it (SUCCESS); a group without a config gets the defaults on first use when "
            "autoCreateSubscriptionGroup (default true) or its name starts with CID_RMQ_SYS_, otherwise a pull, a "
            "send-back or a send to %RETRY%<group> is SUBSCRIPTION_GROUP_NOT_EXIST.",
            "SubscriptionGroupManager.findSubscriptionGroupConfig; AdminBrokerProcessor; PullMessageProcessor; "
            "SendMessageProcessor",
        ),
    ),
)

# Request codes a 4.9.8 broker serves: its registered processors and AdminBrokerProcessor's switch.
BROKER_REQUEST_CODES: frozenset[int] = frozenset({
    RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.CONSUMER_SEND_MSG_BACK, RequestCode.PULL_MESSAGE, RequestCode.SEND_REPLY_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2, RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID,
    RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT, RequestCode.CHECK_CLIENT_CONFIG,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP, RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.END_TRANSACTION, RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.GET_ALL_TOPIC_CONFIG, RequestCode.UPDATE_BROKER_CONFIG, RequestCode.GET_BROKER_CONFIG,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, RequestCode.GET_MAX_OFFSET, RequestCode.GET_MIN_OFFSET,
    RequestCode.GET_EARLIEST_MSG_STORETIME, RequestCode.GET_BROKER_RUNTIME_INFO, RequestCode.LOCK_BATCH_MQ,
    RequestCode.UNLOCK_BATCH_MQ, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, RequestCode.DELETE_SUBSCRIPTIONGROUP,
    RequestCode.GET_TOPIC_STATS_INFO,
    RequestCode.GET_CONSUMER_CONNECTION_LIST, RequestCode.GET_PRODUCER_CONNECTION_LIST,
    RequestCode.GET_ALL_PRODUCER_INFO, RequestCode.GET_CONSUME_STATS, RequestCode.GET_ALL_CONSUMER_OFFSET,
    RequestCode.GET_ALL_DELAY_OFFSET, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
    RequestCode.QUERY_CONSUME_TIME_SPAN, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
    RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, RequestCode.DELETE_EXPIRED_COMMITLOG, RequestCode.CLEAN_UNUSED_TOPIC,
    RequestCode.GET_CONSUMER_RUNNING_INFO, RequestCode.QUERY_CORRECTION_OFFSET, RequestCode.CONSUME_MESSAGE_DIRECTLY,
    RequestCode.CLONE_GROUP_OFFSET, RequestCode.VIEW_BROKER_STATS_DATA, RequestCode.GET_BROKER_CONSUME_STATS,
    RequestCode.QUERY_CONSUME_QUEUE, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
    RequestCode.GET_BROKER_CLUSTER_ACL_INFO, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    RequestCode.RESUME_CHECK_HALF_MESSAGE,
})

BLANK_TOPIC_REMARK = "The specified topic is blank."
ILLEGAL_TOPIC_REMARK = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
LONG_TOPIC_REMARK = "The specified topic is longer than topic max length."


# ------------------------------------------------------------------------------------------------------ sending
@CLAUSES.oracle("BRK-1")
def validate_topic(topic: str) -> str | None:
    """TopicValidator.validateTopic: the SYSTEM_ERROR remark for a bad topic name, None for a valid one (BRK-1).

    pre: len(topic) <= 130
    post: __return__ is not None or (0 < len(topic) <= TOPIC_MAX_LENGTH and all(c in VALID_TOPIC_CHARS for c in topic))
    post: __return__ is None or __return__ in (BLANK_TOPIC_REMARK, ILLEGAL_TOPIC_REMARK, LONG_TOPIC_REMARK)
    post: topic != "" or __return__ == BLANK_TOPIC_REMARK
    post: not all(c in VALID_TOPIC_CHARS for c in topic) or topic == "" or __return__ == (LONG_TOPIC_REMARK if len(topic) > TOPIC_MAX_LENGTH else None)
    """  # noqa: E501
    if is_blank(topic):
        return BLANK_TOPIC_REMARK
    if any(c not in VALID_TOPIC_CHARS for c in topic):
        return ILLEGAL_TOPIC_REMARK
    if len(topic) > TOPIC_MAX_LENGTH:
        return LONG_TOPIC_REMARK
    return None


@CLAUSES.oracle("BRK-1")
def send_check(topic: str, broker_writable: bool, order_topic: bool) -> tuple[ResponseCode, str] | None:
    """The first of msgCheck's name and permission checks that fails, as (code, remark without the broker ip),
    or None when the send goes on to the topic lookup (BRK-1).

    pre: len(topic) <= 130
    post: __return__ is None or __return__[0] in (ResponseCode.NO_PERMISSION, ResponseCode.SYSTEM_ERROR)
    post: broker_writable or not order_topic or __return__[0] is ResponseCode.NO_PERMISSION
    post: __return__ is not None or (validate_topic(topic) is None and topic not in NOT_ALLOWED_SEND_TOPICS)
    post: (not broker_writable and order_topic) or validate_topic(topic) is None or __return__ == (ResponseCode.SYSTEM_ERROR, validate_topic(topic))
    """  # noqa: E501
    if not broker_writable and order_topic:
        return ResponseCode.NO_PERMISSION, "sending message is forbidden"
    remark = validate_topic(topic)
    if remark is not None:
        return ResponseCode.SYSTEM_ERROR, remark
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
    return None


@attrs.frozen
class TopicConf:
    """A topic's queue numbers and perm (``TopicConfig``)."""

    read_queue_nums: int
    write_queue_nums: int
    perm: int


@CLAUSES.oracle("BRK-2")
def topic_created_on_send(
    topic: str,
    default_topic: TopicConf | None,
    default_is_auto_create_key: bool,
    auto_create_topic_enable: bool,
    requested_queue_nums: int,
) -> TopicConf | None:
    """The config a send creates for a topic the broker lacks, or None (TOPIC_NOT_EXIST) (BRK-2).

    ``default_topic`` is the broker's config of the request's default topic (None: it has none);
    ``default_is_auto_create_key``: that default topic is TBW102.

    pre: -4 <= requested_queue_nums <= 64
    pre: default_topic is None or 0 <= default_topic.perm <= 15
    post: __return__ is None or __return__.perm & PERM_INHERIT == 0
    post: __return__ is None or __return__.read_queue_nums == __return__.write_queue_nums >= 0
    post: __return__ is not None or not topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    post: default_topic is None or not (default_topic.perm & PERM_INHERIT) or (default_is_auto_create_key and not auto_create_topic_enable) or __return__ == TopicConf(max(0, min(requested_queue_nums, default_topic.write_queue_nums)), max(0, min(requested_queue_nums, default_topic.write_queue_nums)), default_topic.perm & ~PERM_INHERIT)
    """  # noqa: E501
    if default_topic is not None:
        perm = default_topic.perm
        if default_is_auto_create_key and not auto_create_topic_enable:
            perm = PERM_READ | PERM_WRITE
        if perm & PERM_INHERIT:
            queues = max(0, min(requested_queue_nums, default_topic.write_queue_nums))
            return TopicConf(queues, queues, perm & ~PERM_INHERIT)
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return TopicConf(1, 1, PERM_READ | PERM_WRITE)
    return None


def topic_not_exist_remark(topic: str) -> str:
    """The remark of a send's TOPIC_NOT_EXIST (BRK-2)."""
    return f"topic[{topic}] not exist, apply first please!{suggest_todo()}"


@CLAUSES.oracle("BRK-3")
def send_queue_id(queue_id: int, read_queue_nums: int, write_queue_nums: int, draw: int) -> int | None:
    """The queue a send goes to, or None (SYSTEM_ERROR) for an illegal queue id (BRK-3). ``draw`` is the broker's
    random number in [0, 99999999).

    pre: -8 <= queue_id <= 64 and 0 <= read_queue_nums <= 64 and 1 <= write_queue_nums <= 64
    pre: 0 <= draw < RANDOM_QUEUE_ID_BOUND
    post: (__return__ is None) == (queue_id >= max(read_queue_nums, write_queue_nums))
    post: __return__ is None or queue_id < 0 or __return__ == queue_id
    post: __return__ is None or queue_id >= 0 or 0 <= __return__ < write_queue_nums
    """
    if queue_id >= max(read_queue_nums, write_queue_nums):
        return None
    if queue_id < 0:
        return draw % write_queue_nums
    return queue_id


class RequestKind(enum.Enum):
    """Which path a request takes at the broker."""

    SEND = "SEND"
    PULL = "PULL"


@CLAUSES.oracle("BRK-4")
def topic_perm_answer(kind: RequestKind, topic: str, perm: int) -> tuple[ResponseCode, str] | None:
    """The refusal a topic's perm causes, or None (BRK-4): only a pull checks it.

    pre: 0 <= perm <= 15
    post: kind is not RequestKind.SEND or __return__ is None
    post: kind is not RequestKind.PULL or (__return__ is None) == bool(perm & PERM_READ)
    post: __return__ is None or __return__[0] is ResponseCode.NO_PERMISSION
    """
    if kind is RequestKind.PULL and not perm & PERM_READ:
        return ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden"
    return None


@CLAUSES.oracle("BRK-5")
def stored_message_length(body_len: int, topic_len: int, properties_len: int, sys_flag: int = 0) -> int:
    """``CommitLog.calMsgLength``: the bytes a message takes in the commit log (BRK-5).

    pre: 0 <= body_len <= 2**26 and 0 <= topic_len <= 255 and 0 <= properties_len <= 2**16
    post: __return__ == body_len + topic_len + properties_len + 91 + (12 if sys_flag & SYSFLAG_BORNHOST_V6 else 0) + (12 if sys_flag & SYSFLAG_STOREHOST_V6 else 0)
    """  # noqa: E501
    born = 20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8
    store = 20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8
    fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
    return fixed + 4 + body_len + 1 + topic_len + 2 + properties_len


@CLAUSES.oracle("BRK-5")
def message_illegal(
    body_len: int, topic: str, properties: str, max_message_size: int, sys_flag: int = 0
) -> bool:
    """Whether the store refuses a message with MESSAGE_ILLEGAL (BRK-5).

    pre: 0 <= body_len <= 2**24 and 1 <= max_message_size <= 2**23
    pre: len(topic) <= 140 and len(properties) <= 8
    post: body_len <= max_message_size or __return__
    post: len(topic) <= TOPIC_MAX_LENGTH or __return__
    post: not __return__ or body_len > max_message_size or len(topic) > TOPIC_MAX_LENGTH or len(properties.encode("utf-8")) > MAX_PROPERTIES_LENGTH or stored_message_length(body_len, len(topic.encode("utf-8")), len(properties.encode("utf-8")), sys_flag) > max_message_size + STORED_MESSAGE_RESERVE_BYTES
    """  # noqa: E501
    # Java compares String.length(): UTF-16 code units.
    if len(topic) > TOPIC_MAX_LENGTH or len(properties.encode("utf-16-le")) // 2 > MAX_PROPERTIES_LENGTH:
        return True
    props = len(properties.encode("utf-8"))
    if props > MAX_PROPERTIES_LENGTH or body_len > max_message_size:
        return True
    length = stored_message_length(body_len, len(topic.encode("utf-8")), props, sys_flag)
    return length > max_message_size + STORED_MESSAGE_RESERVE_BYTES


@CLAUSES.oracle("BRK-6")
def offset_msg_id(store_ip: int, store_port: int, commit_log_offset: int) -> str:
    """The offset message id of a message stored at ``commit_log_offset`` by a broker at ``store_ip`` (an IPv4
    address as a 32-bit number) and ``store_port`` (BRK-6).

    pre: 0 <= store_ip < 2**32 and 0 <= store_port < 2**16 and 0 <= commit_log_offset < 2**63
    post: len(__return__) == 32
    post: int(__return__, 16) == (store_ip << 96) | (store_port << 64) | commit_log_offset
    post: __return__ == __return__.upper()
    """
    return f"{store_ip:08X}{store_port:08X}{commit_log_offset:016X}"


class SendPath(enum.Enum):
    SINGLE = "SINGLE"
    BATCH = "BATCH"


@CLAUSES.oracle("BRK-7")
def send_path(code: int, batch_field: bool) -> SendPath | None:
    """Which path a send request takes: the header's batch field decides, for all three codes; None for a code
    that is not a send (BRK-7).

    post: (__return__ is None) == (code not in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE))
    post: __return__ is None or (__return__ is SendPath.BATCH) == batch_field
    """  # noqa: E501
    if code not in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        return None
    return SendPath.BATCH if batch_field else SendPath.SINGLE


@CLAUSES.oracle("BRK-7")
def batch_refused(sys_flag: int, delay_level: int) -> bool:
    """Whether the store refuses a batch with MESSAGE_ILLEGAL for its kind (BRK-7).

    pre: 0 <= sys_flag < 2**16 and -2 <= delay_level <= 20
    post: __return__ == (sys_flag & SYSFLAG_TRANSACTION_MASK != 0 or delay_level > 0)
    """
    return sys_flag & SYSFLAG_TRANSACTION_MASK != 0 or delay_level > 0


@CLAUSES.oracle("BRK-7")
def batch_answer(first_queue_offset: int, msg_ids: tuple[str, ...]) -> tuple[str, int]:
    """The (msgId, queueOffset) fields of a stored batch's answer (BRK-7).

    pre: first_queue_offset >= 0 and 1 <= len(msg_ids) <= 4 and all(len(m) == 32 and "," not in m for m in msg_ids)
    post: __return__[0].split(",") == list(msg_ids)
    post: __return__[1] == first_queue_offset
    """
    return ",".join(msg_ids), first_queue_offset


@CLAUSES.oracle("BRK-8")
def stored_properties(sent: tuple[tuple[str, str], ...], cluster: str) -> tuple[tuple[str, str], ...]:
    """The properties a single send stores: the sent ones without WAIT, and CLUSTER (BRK-8).

    pre: len(sent) <= 3 and len({name for name, _ in sent}) == len(sent)
    post: (Property.CLUSTER, cluster) in __return__
    post: all(name != Property.WAIT_STORE_MSG_OK for name, _ in __return__)
    post: all(p in __return__ for p in sent if p[0] not in (Property.WAIT_STORE_MSG_OK, Property.CLUSTER))
    post: len({name for name, _ in __return__}) == len(__return__)
    """
    props: dict[str, str] = {}
    for name, value in sent:
        props[name] = value
    props[Property.CLUSTER] = cluster
    props.pop(Property.WAIT_STORE_MSG_OK, None)
    return tuple(props.items())


@CLAUSES.oracle("BRK-9")
def tags_code(tags: str | None) -> int:
    """``tagsString2tagsCode``: the consume-queue tags code of a message (BRK-9).

    post: tags not in (None, "") or __return__ == 0
    post: tags is None or __return__ == java_string_hash(tags)
    post: -2**31 <= __return__ < 2**31
    """
    if not tags:
        return 0
    return java_string_hash(tags)


@CLAUSES.oracle("BRK-9")
def tag_subscription_passes(sub_string: str | None, tags: str | None) -> bool:
    """Whether the broker hands a message with ``tags`` to a tag subscription (BRK-9).

    pre: sub_string is None or len(sub_string) <= 8
    pre: tags is None or len(tags) <= 4
    post: tags in (None, "") or sub_string != tags or __return__
    post: sub_string not in (None, "", "*") or __return__
    """
    return broker_tag_matches(sub_string, tags_code(tags))


# ------------------------------------------------------------------------------------------- store answers
@CLAUSES.oracle("BRK-10")
def queue_offsets(store_times: tuple[int, ...]) -> tuple[int, int, int]:
    """(GET_MIN_OFFSET, GET_MAX_OFFSET, GET_EARLIEST_MSG_STORETIME) of a queue holding messages stored at
    ``store_times`` from offset 0 (BRK-10).

    pre: len(store_times) <= 4
    post: __return__[0] == 0 and __return__[1] == len(store_times)
    post: store_times != () or __return__[2] == -1
    post: store_times == () or __return__[2] == store_times[0]
    """
    return 0, len(store_times), store_times[0] if store_times else -1


@CLAUSES.oracle("BRK-11")
def search_offset(store_times: tuple[int, ...], timestamp: int) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP over a queue whose messages, from offset 0, were stored at ``store_times``
    (non-decreasing) (BRK-11).

    pre: len(store_times) <= 5
    pre: all(store_times[i] <= store_times[i + 1] for i in range(len(store_times) - 1))
    post: store_times != () or __return__ == 0
    post: store_times == () or 0 <= __return__ < len(store_times)
    post: timestamp not in store_times or store_times[__return__] == timestamp
    post: timestamp in store_times or store_times == () or store_times[__return__] == max([t for t in store_times if t < timestamp], default=store_times[0]) or store_times[__return__] == min([t for t in store_times if t > timestamp], default=store_times[-1])
    post: store_times == () or timestamp > store_times[-1] or __return__ < len(store_times) - 1 or store_times[-1] >= timestamp
    post: store_times == () or store_times[0] <= timestamp or __return__ == 0
    post: store_times == () or store_times[-1] >= timestamp or __return__ == len(store_times) - 1
    """  # noqa: E501
    low, high = 0, len(store_times) - 1
    left = right = -1
    left_time = right_time = -1
    while high >= low:
        mid = (low + high) // 2
        stored = store_times[mid]
        if stored == timestamp:
            return mid
        if stored > timestamp:
            high, right, right_time = mid - 1, mid, stored
        else:
            low, left, left_time = mid + 1, mid, stored
    if not store_times:
        return 0
    if left == -1:
        return right
    if right == -1:
        return left
    return right if abs(timestamp - left_time) > abs(timestamp - right_time) else left


def index_hash(topic: str, key: str) -> int:
    """``IndexFile.indexKeyHashMethod`` of 'topic#key': |String.hashCode| (Integer.MIN_VALUE gives 0)."""
    h = abs(java_string_hash(f"{topic}#{key}"))
    return 0 if h >= 2**31 else h


@attrs.frozen
class IndexedMessage:
    """A stored message as the index sees it: topic, KEYS, UNIQ_KEY, index time, commit-log offset."""

    topic: str
    keys: str | None
    uniq_key: str | None
    index_time: int
    commit_log_offset: int


@CLAUSES.oracle("BRK-12")
def query_by_key(
    messages: tuple[IndexedMessage, ...], topic: str, key: str, max_num: int, begin: int, end: int,
    unique_key_flag: bool = False,
) -> tuple[int, ...]:
    """The commit-log offsets QUERY_MESSAGE answers (empty: QUERY_NOT_FOUND) over ``messages`` in commit-log order
    (BRK-12).

    pre: len(messages) <= 3 and 0 <= max_num <= 80
    pre: all(messages[i].commit_log_offset < messages[i + 1].commit_log_offset for i in range(len(messages) - 1))
    post: len(__return__) <= min(DEFAULT_QUERY_MAX_NUM if unique_key_flag else max_num, MAX_MSGS_NUM_BATCH)
    post: list(__return__) == sorted(__return__)
    post: all(any(m.commit_log_offset == o and m.topic == topic and begin <= m.index_time <= end for m in messages) for o in __return__)
    """  # noqa: E501
    limit = min(DEFAULT_QUERY_MAX_NUM if unique_key_flag else max_num, MAX_MSGS_NUM_BATCH)
    wanted = index_hash(topic, key)
    found: list[int] = []
    for message in reversed(messages):  # the index chain runs newest first
        if len(found) >= limit:
            break
        if message.topic != topic or not begin <= message.index_time <= end:
            continue
        words = [message.uniq_key] if message.uniq_key is not None else []
        words += [w for w in (message.keys or "").split(KEY_SEPARATOR) if w]
        if any(index_hash(topic, w) == wanted for w in words):
            found.append(message.commit_log_offset)
    return tuple(sorted(found))


@CLAUSES.oracle("BRK-12")
def view_message_answer(commit_log_offset: int, stored_offsets: tuple[int, ...]) -> tuple[ResponseCode, str | None]:
    """VIEW_MESSAGE_BY_ID's code and remark for a commit-log offset (BRK-12).

    pre: len(stored_offsets) <= 3
    post: (__return__[0] is ResponseCode.SUCCESS) == (commit_log_offset in stored_offsets)
    post: __return__[0] is ResponseCode.SUCCESS or __return__[1] == f"can not find message by the offset, {commit_log_offset}"
    """  # noqa: E501
    if commit_log_offset in stored_offsets:
        return ResponseCode.SUCCESS, None
    return ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {commit_log_offset}"


# --------------------------------------------------------------------------------------------- client registry
@CLAUSES.oracle("BRK-13")
def consumer_list_answer(client_ids: tuple[str, ...], group: str) -> tuple[ResponseCode, tuple[str, ...] | str]:
    """GET_CONSUMER_LIST_BY_GROUP: (SUCCESS, client ids) or (SYSTEM_ERROR, remark) (BRK-13).

    pre: len(client_ids) <= 3
    post: (__return__[0] is ResponseCode.SUCCESS) == (client_ids != ())
    post: __return__[0] is not ResponseCode.SUCCESS or __return__[1] == client_ids
    post: __return__[0] is ResponseCode.SUCCESS or __return__[1] == "no consumer for this group, " + group
    """
    if client_ids:
        return ResponseCode.SUCCESS, client_ids
    return ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}"


class GroupEvent(enum.Enum):
    """What changed a consumer group's connections."""

    HEARTBEAT = "HEARTBEAT"
    UNREGISTER = "UNREGISTER"
    CHANNEL_CLOSED = "CHANNEL_CLOSED"


@CLAUSES.oracle("BRK-14")
def notify_targets(
    event: GroupEvent, changed: bool, connections_after: tuple[str, ...], group_notify: bool, broker_notify: bool
) -> tuple[str, ...]:
    """The connections sent NOTIFY_CONSUMER_IDS_CHANGED after an event in a consumer group (BRK-14).

    ``changed``: for a heartbeat, a connection was added or the subscribed topics changed; for an unregistration,
    the group was registered at the broker; for a closed connection, it was one of the group's.

    pre: len(connections_after) <= 3
    post: broker_notify or __return__ == ()
    post: changed or __return__ == ()
    post: __return__ == () or __return__ == connections_after
    post: event is not GroupEvent.CHANNEL_CLOSED or not (changed and broker_notify) or __return__ == connections_after
    post: event is GroupEvent.CHANNEL_CLOSED or group_notify or __return__ == ()
    """
    if not changed or not broker_notify:
        return ()
    if event is not GroupEvent.CHANNEL_CLOSED and not group_notify:
        return ()
    return connections_after


# ------------------------------------------------------------------------------------------------------- admin
@CLAUSES.oracle("BRK-16")
def lock_batch_answer(
    requested: tuple[int, ...], holders: tuple[tuple[int, str, int], ...], client_id: str
) -> tuple[int, ...]:
    """LOCK_BATCH_MQ's lockOKMQSet: the requested queues (by id) the client holds after the request, given the
    current ``holders`` as (queue, client id, idle ms) (BRK-16).

    pre: len(requested) <= 3 and len(holders) <= 2 and all(h[2] >= 0 for h in holders)
    pre: client_id in ("10.0.0.1@1", "10.0.0.2@2") and all(h[1] in ("10.0.0.1@1", "10.0.0.2@2") for h in holders)
    post: set(__return__) <= set(requested)
    post: all(q in __return__ for q in requested if not any(h[0] == q for h in holders))
    post: all(q in __return__ for q in requested if any(h[0] == q and h[1] == client_id for h in holders))
    """
    granted: list[int] = []
    for queue in dict.fromkeys(requested):
        holder = next(((h[1], h[2]) for h in holders if h[0] == queue), None)
        if broker_lock_granted(None if holder is None else holder[0], 0 if holder is None else holder[1], client_id):
            granted.append(queue)
    return tuple(granted)


@CLAUSES.oracle("BRK-17")
def is_system_topic(topic: str, broker_topics: tuple[str, ...] = ()) -> bool:
    """``TopicValidator.isSystemTopic``: the built-in system topics, the ``rmq_sys_`` prefix, and the topics a
    broker adds at start (``broker_topics``: its cluster, broker name, reply and trace topics) (BRK-17).

    pre: len(broker_topics) <= 3
    post: not topic.startswith(SYSTEM_TOPIC_PREFIX) or __return__
    post: topic not in SYSTEM_TOPICS or __return__
    post: not __return__ or topic in SYSTEM_TOPICS or topic in broker_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)
    """
    return topic in SYSTEM_TOPICS or topic in broker_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)


@CLAUSES.oracle("BRK-17")
def admin_topic_check(topic: str, broker_topics: tuple[str, ...] = ()) -> tuple[ResponseCode, str] | None:
    """The refusal of UPDATE_AND_CREATE_TOPIC / DELETE_TOPIC_IN_BROKER for a topic name, or None (BRK-17).

    pre: len(topic) <= 130 and len(broker_topics) <= 2
    post: __return__ is None or __return__[0] is ResponseCode.SYSTEM_ERROR
    post: (__return__ is None) == (validate_topic(topic) is None and not is_system_topic(topic, broker_topics))
    """
    remark = validate_topic(topic)
    if remark is not None:
        return ResponseCode.SYSTEM_ERROR, remark
    if is_system_topic(topic, broker_topics):
        return ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."
    return None


@CLAUSES.oracle("BRK-18")
def broker_config_body(config: tuple[tuple[str, str | None], ...]) -> str:
    """GET_BROKER_CONFIG's body: ``key=value\\n`` for every key with a value, in the given order (BRK-18).

    pre: len(config) <= 3 and all(chr(10) not in k and chr(10) not in (v or "") for k, v in config)
    post: __return__.count(chr(10)) == sum(1 for _, v in config if v is not None)
    post: all(f"{k}={v}" + chr(10) in __return__ for k, v in config if v is not None)
    """
    return "".join(f"{key}={value}\n" for key, value in config if value is not None)


@CLAUSES.oracle("BRK-19")
def unsupported_answer(code: int) -> tuple[ResponseCode, str] | None:
    """The broker's answer to a request code it does not serve, or None for one it serves (BRK-19).

    post: (__return__ is None) == (code in BROKER_REQUEST_CODES)
    post: __return__ is None or __return__ == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {code} not supported")
    post: code != RequestCode.REGISTER_BROKER or __return__ is not None
    """  # noqa: E501
    if code in BROKER_REQUEST_CODES:
        return None
    return ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {code} not supported"


@CLAUSES.oracle("BRK-20")
def group_config_exists(group: str, has_config: bool, auto_create_subscription_group: bool) -> bool:
    """Whether the broker finds (or creates with defaults) a subscription group config; a pull, a send-back or a
    send to the group's retry topic without one is SUBSCRIPTION_GROUP_NOT_EXIST (BRK-20).

    post: not has_config or __return__
    post: not auto_create_subscription_group or __return__
    post: __return__ == (has_config or auto_create_subscription_group or group.startswith(SYS_CONSUMER_GROUP_PREFIX))
    """
    return has_config or auto_create_subscription_group or group.startswith(SYS_CONSUMER_GROUP_PREFIX)


# ------------------------------------------------------------------------------------------------ state machine
STORE, CLIENTS = "store", "clients"
TOPIC = "T"
# The defaultTopicQueueNums the model's producer asks for (a Java producer asks for 4; fewer keeps the model small).
MODEL_REQUESTED_QUEUES = 2
MAX_MESSAGES = 3
MAX_TIME = 2
CONNECTIONS = ("c1", "c2")
SUBSCRIPTIONS: tuple[frozenset[str], ...] = (frozenset({"T"}), frozenset({"T", "U"}))
GROUP = "G"


@attrs.frozen
class Stored:
    """A message in a consume queue: its tags and store time."""

    tags: str | None
    store_time: int


@attrs.frozen
class SendAnswer:
    """A send's answer: code, queue id and queue offset (SUCCESS), number of messages stored."""

    code: ResponseCode
    queue_id: int = -1
    queue_offset: int = -1
    stored: int = 0


@attrs.frozen
class BrokerState:
    """``scenario`` "store": TBW102 with ``auto_create`` (BROKER_DEFAULT_TOPIC_QUEUE_NUMS queues, inherit), the
    model topic's config and its consume queues (``queues[i]``: queue i), the clock, the last send answer.
    ``scenario`` "clients": one consumer group's connections, its subscribed topics, whether %RETRY% exists, the
    group config's notify switch and the connections notified by the last step."""

    scenario: str
    auto_create: bool = True
    topic: TopicConf | None = None
    queues: tuple[tuple[Stored, ...], ...] = ()
    now: int = 0
    answer: SendAnswer | None = None
    group_notify: bool = True
    connections: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()
    retry_topic: bool = False
    notified: tuple[str, ...] = ()


@attrs.frozen
class Send:
    """A single send to the model topic (queue id -1: the broker picks with ``draw``)."""

    queue_id: int
    tags: str | None = None
    draw: int = 0


@attrs.frozen
class SendBatch:
    """A batch of ``count`` messages to one queue."""

    queue_id: int
    count: int


@attrs.frozen
class CreateTopic:
    """UPDATE_AND_CREATE_TOPIC for the model topic."""

    queues: int
    perm: int


@attrs.frozen
class DeleteTopic:
    """DELETE_TOPIC_IN_BROKER for the model topic."""


@attrs.frozen
class TimePasses:
    """The store clock advances one tick."""


@attrs.frozen
class Heartbeat:
    """A connection's heartbeat naming the group with these subscribed topics."""

    connection: str
    topics: frozenset[str]


@attrs.frozen
class UnregisterClient:
    """UNREGISTER_CLIENT naming the group, sent over the connection."""

    connection: str


@attrs.frozen
class ConnectionClosed:
    """A client connection closes."""

    connection: str


Action = Send | SendBatch | CreateTopic | DeleteTopic | TimePasses | Heartbeat | UnregisterClient | ConnectionClosed
_STORE_ACTIONS = (Send, SendBatch, CreateTopic, DeleteTopic, TimePasses)
_CLIENT_ACTIONS = (Heartbeat, UnregisterClient, ConnectionClosed)


def _message_count(state: BrokerState) -> int:
    return sum(len(q) for q in state.queues)


@CLAUSES.oracle("BRK-2", "BRK-13", "BRK-14", "BRK-15", "BRK-17")
def enabled(state: BrokerState, action: Action) -> bool:
    """Store requests in the store scenario, client registration in the clients scenario; sends while the model's
    message bound allows (BRK-2, BRK-17); a connection closes only while it is registered (BRK-13, BRK-14,
    BRK-15)."""
    if state.scenario == STORE:
        if not isinstance(action, _STORE_ACTIONS):
            return False
        if isinstance(action, Send):
            return _message_count(state) < MAX_MESSAGES
        if isinstance(action, SendBatch):
            return _message_count(state) + action.count <= MAX_MESSAGES
        if isinstance(action, TimePasses):
            return state.now < MAX_TIME
        return True
    if not isinstance(action, _CLIENT_ACTIONS):
        return False
    if isinstance(action, ConnectionClosed):
        return action.connection in state.connections
    return True


def _send_target(state: BrokerState) -> tuple[BrokerState, TopicConf | None]:
    """msgCheck's topic lookup: the model topic, created from TBW102 when it is missing (BRK-2)."""
    if state.topic is not None:
        return state, state.topic
    default = TopicConf(BROKER_DEFAULT_TOPIC_QUEUE_NUMS, BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
                        PERM_INHERIT | PERM_READ | PERM_WRITE) if state.auto_create else None
    created = topic_created_on_send(TOPIC, default, True, state.auto_create, MODEL_REQUESTED_QUEUES)
    if created is None:
        return state, None
    queues: tuple[tuple[Stored, ...], ...] = ((),) * max(created.read_queue_nums, created.write_queue_nums)
    return attrs.evolve(state, topic=created, queues=queues), created


def _append(state: BrokerState, queue_id: int, messages: tuple[Stored, ...]) -> BrokerState:
    queues = list(state.queues)
    queues[queue_id] = queues[queue_id] + messages
    return attrs.evolve(state, queues=tuple(queues))


def _store_step(state: BrokerState, action: Action) -> BrokerState:
    if isinstance(action, TimePasses):
        return attrs.evolve(state, now=state.now + 1, answer=None)
    if isinstance(action, CreateTopic):
        conf = TopicConf(action.queues, action.queues, action.perm)
        queues = state.queues + ((),) * (action.queues - len(state.queues))
        return attrs.evolve(state, topic=conf, queues=queues, answer=None)
    if isinstance(action, DeleteTopic):
        return attrs.evolve(state, topic=None, queues=(), answer=None)
    assert isinstance(action, Send | SendBatch)
    state, conf = _send_target(state)
    if conf is None:
        return attrs.evolve(state, answer=SendAnswer(ResponseCode.TOPIC_NOT_EXIST))
    draw = action.draw if isinstance(action, Send) else 0
    queue_id = send_queue_id(action.queue_id, conf.read_queue_nums, conf.write_queue_nums, draw)
    if queue_id is None:
        return attrs.evolve(state, answer=SendAnswer(ResponseCode.SYSTEM_ERROR))
    if isinstance(action, Send):
        batch: tuple[Stored, ...] = (Stored(action.tags, state.now),)
    else:
        batch = tuple(Stored(None, state.now) for _ in range(action.count))
    offset = len(state.queues[queue_id])
    state = _append(state, queue_id, batch)
    return attrs.evolve(state, answer=SendAnswer(ResponseCode.SUCCESS, queue_id, offset, len(batch)))


def _clients_step(state: BrokerState, action: Action) -> BrokerState:
    if isinstance(action, Heartbeat):
        added = action.connection not in state.connections
        connections = state.connections | {action.connection}
        changed = added or action.topics != state.topics
        targets = notify_targets(GroupEvent.HEARTBEAT, changed, tuple(sorted(connections)), state.group_notify, True)
        # The group config exists (auto-created), so the heartbeat creates %RETRY%<group>.
        return attrs.evolve(state, connections=connections, topics=action.topics, retry_topic=True, notified=targets)
    if isinstance(action, UnregisterClient):
        known = bool(state.connections)
        connections = state.connections - {action.connection}
        topics = state.topics if connections else frozenset()
        targets = notify_targets(GroupEvent.UNREGISTER, known, tuple(sorted(connections)), state.group_notify, True)
        return attrs.evolve(state, connections=connections, topics=topics, notified=targets)
    assert isinstance(action, ConnectionClosed)
    connections = state.connections - {action.connection}
    topics = state.topics if connections else frozenset()
    targets = notify_targets(GroupEvent.CHANNEL_CLOSED, True, tuple(sorted(connections)), state.group_notify, True)
    return attrs.evolve(state, connections=connections, topics=topics, notified=targets)


@CLAUSES.oracle("BRK-2", "BRK-3", "BRK-6", "BRK-7", "BRK-13", "BRK-14", "BRK-15", "BRK-17")
def step(state: BrokerState, action: Action) -> BrokerState:
    """Apply a send, a batch, an admin topic request or time (BRK-2, BRK-3, BRK-6, BRK-7, BRK-17), or a
    heartbeat, an unregistration or a closed connection (BRK-13, BRK-14, BRK-15)."""
    require_enabled(enabled, state, action, Action)
    if state.scenario == STORE:
        return _store_step(state, action)
    return _clients_step(state, action)


# ------------------------------------------------------------------------------------------------- invariants
def _store_times(queue: tuple[Stored, ...]) -> tuple[int, ...]:
    return tuple(m.store_time for m in queue)


def _offsets_answer_the_queues(state: BrokerState) -> bool:
    for queue in state.queues:
        low, high, earliest = queue_offsets(_store_times(queue))
        if (low, high) != (0, len(queue)) or earliest != (queue[0].store_time if queue else -1):
            return False
    return True


def _search_finds_nearest(state: BrokerState) -> bool:
    for queue in state.queues:
        times = _store_times(queue)
        for ts in range(-1, MAX_TIME + 2):
            found = search_offset(times, ts)
            if not times:
                if found != 0:
                    return False
                continue
            earlier = [i for i, t in enumerate(times) if t < ts]
            later = [i for i, t in enumerate(times) if t > ts]
            if ts in times:
                ok = times[found] == ts
            elif not earlier:
                ok = found == 0
            elif not later:
                ok = found == len(times) - 1
            else:
                before, after = earlier[-1], later[0]
                ok = found == (after if ts - times[before] > times[after] - ts else before)
            if not ok:
                return False
    return True


def _tags_pass_their_subscription(state: BrokerState) -> bool:
    for queue in state.queues:
        for message in queue:
            if message.tags and not tag_subscription_passes(message.tags, message.tags):
                return False
            if tags_code(message.tags) != (java_string_hash(message.tags) if message.tags else 0):
                return False
    return True


def _queues_match_topic(state: BrokerState) -> bool:
    if state.scenario != STORE:
        return True
    if state.topic is None:
        return state.queues == ()
    return len(state.queues) >= max(state.topic.read_queue_nums, state.topic.write_queue_nums)


def _send_answer_is_the_offset(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch):
        return True
    answer = after.answer
    if answer is None:
        return False
    if answer.code is not ResponseCode.SUCCESS:
        return _message_count(after) == _message_count(before)
    count = 1 if isinstance(action, Send) else action.count
    before_queue = before.queues[answer.queue_id] if answer.queue_id < len(before.queues) else ()
    after_queue = after.queues[answer.queue_id]
    return (answer.queue_offset == len(before_queue) and answer.stored == count
            and after_queue[:answer.queue_offset] == before_queue and len(after_queue) == len(before_queue) + count
            and _message_count(after) == _message_count(before) + count)


def _queue_id_rules(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch) or after.topic is None or after.answer is None:
        return True
    conf = after.topic
    if action.queue_id >= max(conf.read_queue_nums, conf.write_queue_nums):
        return after.answer.code is ResponseCode.SYSTEM_ERROR and _message_count(after) == _message_count(before)
    if action.queue_id < 0:
        return after.answer.queue_id == action.draw % conf.write_queue_nums  # type: ignore[union-attr]
    return after.answer.queue_id == action.queue_id


def _auto_create_from_default(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch) or before.topic is not None:
        return True
    if not before.auto_create:
        return after.topic is None and after.answer == SendAnswer(ResponseCode.TOPIC_NOT_EXIST)
    queues = min(MODEL_REQUESTED_QUEUES, BROKER_DEFAULT_TOPIC_QUEUE_NUMS)
    return after.topic == TopicConf(queues, queues, PERM_READ | PERM_WRITE)


def _send_ignores_topic_perm(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send) or before.topic is None or action.queue_id < 0:
        return True
    if action.queue_id >= max(before.topic.read_queue_nums, before.topic.write_queue_nums):
        return True
    return after.answer is not None and after.answer.code is ResponseCode.SUCCESS


def _admin_topic_requests(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, DeleteTopic):
        return after.topic is None and after.queues == ()
    if isinstance(action, CreateTopic):
        return after.topic == TopicConf(action.queues, action.queues, action.perm) and after.queues[
            :len(before.queues)] == before.queues
    return True


def _heartbeat_registers(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Heartbeat):
        return True
    ids = tuple(sorted(after.connections))
    return (action.connection in after.connections and after.topics == action.topics and after.retry_topic
            and consumer_list_answer(ids, GROUP) == (ResponseCode.SUCCESS, ids))


def _notifications(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, Heartbeat):
        changed = action.connection not in before.connections or action.topics != before.topics
        expected = sorted(after.connections) if changed and before.group_notify else []
    elif isinstance(action, UnregisterClient):
        expected = sorted(after.connections) if before.connections and before.group_notify else []
    elif isinstance(action, ConnectionClosed):
        expected = sorted(after.connections)
    else:
        return after.notified == ()
    return list(after.notified) == expected and set(after.notified) <= after.connections


def _unregister_removes(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, UnregisterClient | ConnectionClosed):
        return True
    if action.connection in after.connections or after.connections != before.connections - {action.connection}:
        return False
    code, _ = consumer_list_answer(tuple(sorted(after.connections)), GROUP)
    return after.connections or (after.topics == frozenset() and code is ResponseCode.SYSTEM_ERROR)


INVARIANTS: tuple[Invariant[BrokerState], ...] = (
    Invariant("min/max offsets and earliest store time follow the queue", ("BRK-10",), _offsets_answer_the_queues),
    Invariant("search by timestamp finds the exact or nearest message", ("BRK-11",), _search_finds_nearest),
    Invariant("a tagged message passes its own tag subscription", ("BRK-9",), _tags_pass_their_subscription),
    Invariant("the topic's queues exist while the topic does", ("BRK-2", "BRK-17"), _queues_match_topic),
)

STEP_INVARIANTS: tuple[StepInvariant[BrokerState, Action], ...] = (
    StepInvariant("a stored send answers its queue offset", ("BRK-6", "BRK-7"), _send_answer_is_the_offset),
    StepInvariant("queue ids: illegal refused, negative random", ("BRK-3",), _queue_id_rules),
    StepInvariant("a missing topic is created from TBW102 or refused", ("BRK-2",), _auto_create_from_default),
    StepInvariant("a send does not check the topic perm", ("BRK-4",), _send_ignores_topic_perm),
    StepInvariant("admin create/delete topic", ("BRK-17",), _admin_topic_requests),
    StepInvariant("a heartbeat registers the connection", ("BRK-13",), _heartbeat_registers),
    StepInvariant("NOTIFY_CONSUMER_IDS_CHANGED goes to the group after a change", ("BRK-14",), _notifications),
    StepInvariant("unregistering removes the connection", ("BRK-15",), _unregister_removes),
)


def model(max_messages: int = MAX_MESSAGES) -> Model[BrokerState, Action]:
    """The store scenario (auto creation on and off; single sends to queues -1, 0, 1, 2 with and without tags,
    batches of 2, topic creation with 1 queue read-only or 2 queues read|write, deletion, two clock ticks, at most
    ``max_messages`` messages) and the clients scenario (two connections, two subscription sets, group notify on
    and off)."""
    store_actions: tuple[Action, ...] = (
        Send(0, "A"), Send(1), Send(-1, None, RANDOM_QUEUE_ID_BOUND - 2), Send(MODEL_REQUESTED_QUEUES), SendBatch(0, 2),
        CreateTopic(1, PERM_READ), CreateTopic(2, PERM_READ | PERM_WRITE), DeleteTopic(), TimePasses(),
    )
    client_actions: tuple[Action, ...] = (
        *(Heartbeat(c, s) for c in CONNECTIONS for s in SUBSCRIPTIONS),
        *(UnregisterClient(c) for c in CONNECTIONS),
        *(ConnectionClosed(c) for c in CONNECTIONS),
    )

    def actions(state: BrokerState) -> Iterator[Action]:
        if state.scenario == STORE:
            if _message_count(state) > max_messages:
                return iter(())
            return iter(store_actions)
        return iter(client_actions)

    return Model(
        area="broker_requests",
        bounds=f"store: 1 topic, <= {max_messages} messages, {MAX_TIME} ticks, auto-create on/off; clients: "
               f"{len(CONNECTIONS)} connections x {len(SUBSCRIPTIONS)} subscriptions, group notify on/off",
        initial=(BrokerState(STORE, auto_create=True), BrokerState(STORE, auto_create=False),
                 BrokerState(CLIENTS, group_notify=True), BrokerState(CLIENTS, group_notify=False)),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
