"""Broker requests: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.broker_requests.clauses import CLAUSES
from rocketspec.spec.java import is_blank
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.message_filter import broker_tag_matches
from rocketspec.spec.protocol import (
    DEFAULT_QUERY_MAX_NUM,
    KEY_SEPARATOR,
    MAX_MSGS_NUM_BATCH,
    MAX_PROPERTIES_LENGTH,
    NOT_ALLOWED_SEND_TOPICS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    RANDOM_QUEUE_ID_BOUND,  # noqa: F401  (a contract names it: CrossHair evaluates it here)
    RETRY_GROUP_TOPIC_PREFIX,
    STORED_MESSAGE_RESERVE_BYTES,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
    TOPIC_MAX_LENGTH,
    VALID_TOPIC_CHARS,
    Property,
    RequestCode,
    ResponseCode,
    suggest_todo,
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
def send_check(topic: str, broker_writable: bool, order_topic: bool, broker_ip: str = "<ip>"
               ) -> tuple[ResponseCode, str] | None:
    """The first of msgCheck's name and permission checks that fails, as (code, remark), or None when the send goes
    on to the topic lookup (BRK-1). ``broker_ip`` is the broker's brokerIP1.

    pre: len(topic) <= 130
    post: __return__ is None or __return__[0] in (ResponseCode.NO_PERMISSION, ResponseCode.SYSTEM_ERROR)
    post: broker_writable or not order_topic or __return__[0] is ResponseCode.NO_PERMISSION
    post: __return__ is not None or (validate_topic(topic) is None and topic not in NOT_ALLOWED_SEND_TOPICS)
    post: (not broker_writable and order_topic) or validate_topic(topic) is None or __return__ == (ResponseCode.SYSTEM_ERROR, validate_topic(topic))
    """  # noqa: E501
    if not broker_writable and order_topic:
        return ResponseCode.NO_PERMISSION, f"the broker[{broker_ip}] sending message is forbidden"
    remark = validate_topic(topic)
    if remark is not None:
        return ResponseCode.SYSTEM_ERROR, remark
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
    return None


@attrs.frozen(cache_hash=True)
class TopicConf:
    """A topic's queue numbers and perm, and its filter type (MULTI_TAG or not), topicSysFlag and order flag
    (``TopicConfig``)."""

    read_queue_nums: int
    write_queue_nums: int
    perm: int
    multi_tag: bool = False
    sys_flag: int = 0
    order: bool = False


@CLAUSES.oracle("BRK-2")
def topic_created_on_send(
    topic: str,
    default_topic: TopicConf | None,
    default_is_auto_create_key: bool,
    auto_create_topic_enable: bool,
    requested_queue_nums: int,
    topic_sys_flag: int = 0,
) -> TopicConf | None:
    """The config a send creates for a topic the broker lacks, or None (TOPIC_NOT_EXIST) (BRK-2); it takes the
    default topic's filter type and ``topic_sys_flag`` (BRK-23).

    ``default_topic`` is the broker's config of the request's default topic (None: it has none);
    ``default_is_auto_create_key``: that default topic is TBW102.

    pre: -4 <= requested_queue_nums <= 64 and 0 <= topic_sys_flag <= 3
    pre: default_topic is None or 0 <= default_topic.perm <= 15
    post: __return__ is None or __return__.perm & PERM_INHERIT == 0
    post: __return__ is None or __return__.read_queue_nums == __return__.write_queue_nums >= 0
    post: __return__ is None or __return__.sys_flag == topic_sys_flag
    post: __return__ is not None or not topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    post: default_topic is None or not (default_topic.perm & PERM_INHERIT) or (default_is_auto_create_key and not auto_create_topic_enable) or (__return__ is not None and (__return__.read_queue_nums, __return__.write_queue_nums, __return__.perm, __return__.multi_tag) == (max(0, min(requested_queue_nums, default_topic.write_queue_nums)), max(0, min(requested_queue_nums, default_topic.write_queue_nums)), default_topic.perm & ~PERM_INHERIT, default_topic.multi_tag))
    """  # noqa: E501
    if default_topic is not None:
        perm = default_topic.perm
        if default_is_auto_create_key and not auto_create_topic_enable:
            perm = PERM_READ | PERM_WRITE
        if perm & PERM_INHERIT:
            queues = max(0, min(requested_queue_nums, default_topic.write_queue_nums))
            return TopicConf(queues, queues, perm & ~PERM_INHERIT, default_topic.multi_tag, topic_sys_flag)
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return TopicConf(1, 1, PERM_READ | PERM_WRITE, sys_flag=topic_sys_flag)
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


def perm_text(perm: int) -> str:
    """``PermName.perm2String``: R, W and X for the read, write and inherit bits, ``-`` for each missing one."""
    return (("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-")
            + ("X" if perm & PERM_INHERIT else "-"))


@CLAUSES.oracle("BRK-3")
def illegal_queue_remark(queue_id: int, topic: str, conf: TopicConf, producer: str) -> str:
    """The SYSTEM_ERROR remark of a send to an illegal queue id: the id, ``TopicConfig.toString`` and the producer's
    address (BRK-3).

    pre: 0 <= conf.perm <= 7 and len(topic) <= 8
    post: __return__.startswith(f"request queueId[{queue_id}] is illegal, TopicConfig [topicName={topic}, ")
    post: __return__.endswith(f"order={'true' if conf.order else 'false'}] Producer: {producer}")
    post: f"readQueueNums={conf.read_queue_nums}, writeQueueNums={conf.write_queue_nums}, perm={perm_text(conf.perm)}" in __return__
    """  # noqa: E501
    filter_type = "MULTI_TAG" if conf.multi_tag else "SINGLE_TAG"
    return (f"request queueId[{queue_id}] is illegal, TopicConfig [topicName={topic}, "
            f"readQueueNums={conf.read_queue_nums}, writeQueueNums={conf.write_queue_nums}, "
            f"perm={perm_text(conf.perm)}, topicFilterType={filter_type}, topicSysFlag={conf.sys_flag}, "
            f"order={'true' if conf.order else 'false'}] Producer: {producer}")


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


def illegal_message_remark(max_message_size: int) -> str:
    """The remark of a send the store refuses with MESSAGE_ILLEGAL (BRK-5)."""
    return (f"the message is illegal, maybe msg body or properties length not matched. msg body length limit "
            f"{max_message_size}B, msg properties length limit 32KB.")


@CLAUSES.oracle("BRK-5")
def properties_length(properties: tuple[tuple[str, str], ...]) -> int:
    """The UTF-8 length of ``messageProperties2String`` of these properties: ``name\\x01value`` joined by
    ``\\x02`` (BRK-5).

    pre: len(properties) <= 3
    post: __return__ == len(chr(2).join(f"{k}{chr(1)}{v}" for k, v in properties).encode("utf-8"))
    post: properties != () or __return__ == 0
    """
    if not properties:
        return 0
    return sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) + 1 for k, v in properties) + len(properties) - 1


@CLAUSES.oracle("BRK-7")
def batch_body_length(entries: tuple[tuple[int, int], ...]) -> int:
    """The length of a batch body (``MessageDecoder.encodeMessages``) of messages with these (body length,
    properties length): each a 20-byte header, the body, a 2-byte properties length and the properties (BRK-7).

    pre: len(entries) <= 4 and all(b >= 0 and p >= 0 for b, p in entries)
    post: __return__ == sum(22 + b + p for b, p in entries)
    """
    return sum(4 + 4 + 4 + 4 + 4 + body + 2 + props for body, props in entries)


@CLAUSES.oracle("BRK-7")
def batch_stored_properties_length(own: int, batch: int) -> int:
    """The properties length of one message of a stored batch: its own, the batch's (the header's properties and
    CLUSTER) appended, with a separator between when both are there (``MessageExtBatchEncoder``) (BRK-7).

    pre: own >= 0 and batch >= 0
    post: __return__ == own + batch + (1 if own > 0 and batch > 0 else 0)
    """
    return own + batch + (1 if own > 0 and batch > 0 else 0)


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


@CLAUSES.oracle("BRK-12")
def index_time(first_store_time: int, store_time: int) -> int:
    """The time an index entry is read back with: the index's first store time plus the whole seconds since then
    (``IndexFile.putKey`` keeps seconds; a lookup compares ``beginTimestamp + timeDiff * 1000``) (BRK-12).

    pre: 0 <= first_store_time <= store_time <= first_store_time + 10**7
    post: first_store_time <= __return__ <= store_time
    post: (__return__ - first_store_time) % 1000 == 0
    post: store_time - __return__ < 1000
    """
    return first_store_time + (store_time - first_store_time) // 1000 * 1000


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
