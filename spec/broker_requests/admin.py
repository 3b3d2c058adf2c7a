"""Broker requests: the oracles of client registration and the admin, registry, statistics, reply and maintenance
requests (BRK-13..32), with their contracts (checked by CrossHair)."""
from __future__ import annotations

import enum

import attrs

from rocketspec.spec.broker_requests.clauses import CLAUSES
from rocketspec.spec.broker_requests.oracles import BROKER_REQUEST_CODES, TopicConf, validate_topic
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BENCHMARK_TOPIC,
    BENCHMARK_TOPIC_QUEUE_NUMS,
    BUILTIN_SUBSCRIPTION_GROUPS,
    DEFAULT_MAX_RECONSUME_TIMES,
    DEFAULT_PERM,
    DEFAULT_RETRY_QUEUE_NUMS,
    FILE_RESERVED_TIME_HOURS,
    MAX_DELAY_LEVEL,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    STORE_DELETE_WHEN_HOUR,
    SYS_CONSUMER_GROUP_PREFIX,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_ZLIB,
    SYSFLAG_TRANSACTION_MASK,  # noqa: F401  (a contract names it: CrossHair evaluates it here)
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    TOPIC_CONFIG_DEFAULT_QUEUE_NUMS,
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    TRANSACTION_PREPARED_TYPE,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.rebalance import broker_lock_granted


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


# --------------------------------------------------------------------------------------------- the tables (BRK-21)


@attrs.frozen(cache_hash=True)
class GroupConf:
    """A subscription group's settings (``SubscriptionGroupConfig``) that decide answers: the retry topic's queues,
    the retries before the DLQ, the notify switch, whether it may consume."""

    retry_queue_nums: int = DEFAULT_RETRY_QUEUE_NUMS
    retry_max_times: int = DEFAULT_MAX_RECONSUME_TIMES
    notify: bool = True
    consume_enable: bool = True


def reply_topic(cluster: str) -> str:
    """``<cluster>_REPLY_TOPIC``: where replies are stored (``MixAll.REPLY_TOPIC_POSTFIX``)."""
    return f"{cluster}_REPLY_TOPIC"


@CLAUSES.oracle("BRK-21")
def builtin_topics(cluster: str, broker: str, auto_create_topic: bool, default_topic_queue_nums: int
                   ) -> tuple[tuple[str, TopicConf], ...]:
    """The topic table of a broker just started (``TopicConfigManager``'s constructor): its name, cluster and reply
    topics and the system ones; TBW102 only with autoCreateTopicEnable (BRK-21).

    pre: 0 <= default_topic_queue_nums <= 64
    pre: cluster != broker and "" not in (cluster, broker) and cluster not in (AUTO_CREATE_TOPIC_KEY, SELF_TEST_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, OFFSET_MOVED_EVENT_TOPIC) and broker not in (AUTO_CREATE_TOPIC_KEY, SELF_TEST_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, OFFSET_MOVED_EVENT_TOPIC)
    post: (AUTO_CREATE_TOPIC_KEY in dict(__return__)) == auto_create_topic
    post: len(__return__) == 7 + (1 if auto_create_topic else 0)
    post: all(c.perm in (DEFAULT_PERM, DEFAULT_PERM | PERM_INHERIT) and c.read_queue_nums == c.write_queue_nums for _, c in __return__)
    post: dict(__return__)[broker] == TopicConf(1, 1, DEFAULT_PERM | PERM_INHERIT)
    """  # noqa: E501
    inherit = PERM_INHERIT | PERM_READ | PERM_WRITE
    topics: list[tuple[str, TopicConf]] = [(SELF_TEST_TOPIC, TopicConf(1, 1, DEFAULT_PERM))]
    if auto_create_topic:
        topics.append((AUTO_CREATE_TOPIC_KEY, TopicConf(default_topic_queue_nums, default_topic_queue_nums, inherit)))
    topics += [
        (BENCHMARK_TOPIC, TopicConf(BENCHMARK_TOPIC_QUEUE_NUMS, BENCHMARK_TOPIC_QUEUE_NUMS, DEFAULT_PERM)),
        (cluster, TopicConf(TOPIC_CONFIG_DEFAULT_QUEUE_NUMS, TOPIC_CONFIG_DEFAULT_QUEUE_NUMS, inherit)),
        (broker, TopicConf(1, 1, inherit)),
        (OFFSET_MOVED_EVENT_TOPIC, TopicConf(1, 1, DEFAULT_PERM)),
        (SCHEDULE_TOPIC, TopicConf(MAX_DELAY_LEVEL, MAX_DELAY_LEVEL, DEFAULT_PERM)),
        (reply_topic(cluster), TopicConf(1, 1, DEFAULT_PERM)),
    ]
    return tuple(topics)


def builtin_groups() -> tuple[str, ...]:
    """The subscription groups a broker starts with (``SubscriptionGroupManager.init``, BRK-21)."""
    return BUILTIN_SUBSCRIPTION_GROUPS


def broker_system_topics(cluster: str, broker: str) -> tuple[str, ...]:
    """The topics a broker adds to TopicValidator's system set at start: its cluster, its name, its reply topic."""
    return cluster, broker, reply_topic(cluster)


# ------------------------------------------------------------------------------------------ the clients (BRK-22, 23)
@CLAUSES.oracle("BRK-22")
def client_sys_flag(body_len: int, compress_over: int, batch: bool, prepared: bool = False) -> int:
    """The sysFlag a producer sends a message with: COMPRESSED | ZLIB when it compresses the body (a single message
    of at least ``compress_over`` bytes), the prepared transaction type for a half message (BRK-22).

    pre: 0 <= body_len <= 2**20 and 0 <= compress_over <= 2**20
    post: bool(__return__ & SYSFLAG_COMPRESSED) == (not batch and body_len >= compress_over)
    post: (__return__ & SYSFLAG_COMPRESSION_ZLIB == SYSFLAG_COMPRESSION_ZLIB) == bool(__return__ & SYSFLAG_COMPRESSED)
    post: (__return__ & SYSFLAG_TRANSACTION_MASK != 0) == prepared
    """
    flag = 0
    if not batch and body_len >= compress_over:
        flag |= SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZLIB
    if prepared:
        flag |= TRANSACTION_PREPARED_TYPE
    return flag


@CLAUSES.oracle("BRK-23")
def created_topic_sys_flag(unit_mode: bool, topic: str) -> int:
    """The topicSysFlag of a topic a send creates: UNIT in unit mode, UNIT_SUB for a %RETRY% topic (BRK-23).

    post: unit_mode or __return__ == 0
    post: not unit_mode or __return__ == (TOPIC_SYS_FLAG_UNIT_SUB if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else TOPIC_SYS_FLAG_UNIT)
    """  # noqa: E501
    if not unit_mode:
        return 0
    return TOPIC_SYS_FLAG_UNIT_SUB if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else TOPIC_SYS_FLAG_UNIT


@CLAUSES.oracle("BRK-23")
def retry_topic_sys_flag(unit_mode: bool) -> int:
    """The topicSysFlag of the %RETRY% topic a heartbeat creates for a group (BRK-23).

    post: __return__ == (TOPIC_SYS_FLAG_UNIT_SUB if unit_mode else 0)
    """
    return TOPIC_SYS_FLAG_UNIT_SUB if unit_mode else 0


# ------------------------------------------------------------------------------------------ configuration (BRK-24)
#: The keys of the model's settings UPDATE_BROKER_CONFIG may change, with their Java type.
BOOL_SETTINGS: frozenset[str] = frozenset({"autoCreateTopicEnable", "autoCreateSubscriptionGroup",
                                           "notifyConsumerIdsChangedEnable", "storeReplyMessageEnable"})
INT_SETTINGS: frozenset[str] = frozenset({"maxMessageSize", "defaultTopicQueueNums", "brokerPermission"})
#: Settings the model only reports back (GET_BROKER_CONFIG) once UPDATE_BROKER_CONFIG changed them: key, Java type,
#: 4.9.8's default.
REPORTED_SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("cleanFileForciblyEnable", "boolean", "true"), ("deleteWhen", "String", f"{STORE_DELETE_WHEN_HOUR:02d}"),
    ("fileReservedTime", "int", str(FILE_RESERVED_TIME_HOURS)),
)
#: Keys UPDATE_BROKER_CONFIG always refuses (``AdminBrokerProcessor.initConfigBlackList`` and its default list).
CONFIG_BLACK_LIST: frozenset[str] = frozenset({"configBlackList", "brokerConfigPath", "rocketmqHome"})
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_DIGITS = "0123456789"


@CLAUSES.oracle("BRK-24")
def config_update_refused(keys: tuple[str, ...]) -> bool:
    """Whether UPDATE_BROKER_CONFIG with a body of these keys is NO_PERMISSION (BRK-24).

    pre: len(keys) <= 3
    post: __return__ == any(k in CONFIG_BLACK_LIST for k in keys)
    """
    return any(key in CONFIG_BLACK_LIST for key in keys)


@CLAUSES.oracle("BRK-24")
def parse_setting(key: str, text: str) -> int | bool | None:
    """The value a key of the model's settings takes from an UPDATE_BROKER_CONFIG body (``properties2Object``):
    a boolean is ``Boolean.parseBoolean`` (only "true", any case, is true); an int ``Integer.parseInt`` (sign and
    digits in range), None when it does not parse or the key is not one of the settings (ignored) (BRK-24).

    pre: len(text) <= 12
    post: key not in BOOL_SETTINGS or __return__ == (text.lower() == "true")
    post: key in BOOL_SETTINGS or key in INT_SETTINGS or __return__ is None
    post: key not in INT_SETTINGS or __return__ is None or (isinstance(__return__, int) and str(__return__).lstrip("-") == text.lstrip("+-").lstrip("0").rjust(1, "0"))
    post: key not in INT_SETTINGS or text.lstrip("+-") == "" or not all(c in _DIGITS for c in text.lstrip("+-")) or text[1:2] in ("+", "-") or not _INT_MIN <= int(text) <= _INT_MAX or __return__ == int(text)
    """  # noqa: E501
    if key in BOOL_SETTINGS:
        return text.lower() == "true"
    if key not in INT_SETTINGS:
        return None
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or any(c not in _DIGITS for c in digits):
        return None
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        return None
    return value


@CLAUSES.oracle("BRK-24")
def reported_value(java_type: str, text: str, current: str) -> str:
    """The text GET_BROKER_CONFIG shows for a setting of ``java_type`` that an UPDATE_BROKER_CONFIG line set to
    ``text`` (``properties2Object`` takes it, the getter shows it): a boolean as parseBoolean reads it, an int that
    parses in decimal, a String as it is; an int that does not parse leaves ``current`` (BRK-24).

    pre: java_type in ("boolean", "int", "String") and len(text) <= 8
    post: java_type != "String" or __return__ == text
    post: java_type != "boolean" or __return__ == ("true" if text.lower() == "true" else "false")
    post: java_type != "int" or __return__ == current or __return__ == str(int(text))
    """
    if java_type == "boolean":
        return "true" if text.lower() == "true" else "false"
    if java_type == "int":
        value = parse_setting("maxMessageSize", text)
        return current if value is None else str(value)
    return text


# ------------------------------------------------------------------------------------------- store answers (BRK-25)
@CLAUSES.oracle("BRK-25")
def topic_stats(write_queue_nums: int, store_times: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, int, int], ...]:
    """GET_TOPIC_STATS_INFO's (min offset, max offset, last update) per write queue, from the store times of each
    queue's messages (queue i: ``store_times[i]``, missing: empty) (BRK-25).

    pre: 0 <= write_queue_nums <= 4 and len(store_times) <= 4 and all(len(t) <= 3 for t in store_times)
    post: len(__return__) == write_queue_nums
    post: all(row[0] == 0 for row in __return__)
    post: all(row[1] == (len(store_times[i]) if i < len(store_times) else 0) for i, row in enumerate(__return__))
    post: all((row[2] == 0) == (row[1] == 0) or store_times[i][-1] == 0 for i, row in enumerate(__return__))
    """
    rows = []
    for queue_id in range(write_queue_nums):
        times = store_times[queue_id] if queue_id < len(store_times) else ()
        rows.append((0, len(times), times[-1] if times else 0))
    return tuple(rows)


@CLAUSES.oracle("BRK-25")
def consume_queue_answer(written: bool, length: int, index: int, count: int
                         ) -> tuple[ResponseCode, str | None, tuple[int, ...] | None]:
    """QUERY_CONSUME_QUEUE's code, remark and the queue offsets of the entries it answers (None: no body) for a
    queue of ``length`` entries, written or not (BRK-25). The remark names the index and the queue; here the
    placeholders ``{index}`` and ``{queue}`` stand for them.

    pre: 0 <= length <= 5 and -2 <= index <= 7 and -1 <= count <= 6
    post: written or __return__[0] is ResponseCode.SYSTEM_ERROR
    post: not written or __return__[0] is ResponseCode.SUCCESS
    post: __return__[2] is None or list(__return__[2]) == list(range(index, min(length, index + max(count, 0))))
    post: not written or (__return__[2] is None) == (not 0 <= index < length)
    """
    if not written:
        return ResponseCode.SYSTEM_ERROR, "{queue} is not exist!", None
    if not 0 <= index < length:
        return ResponseCode.SUCCESS, "Index {index} of {queue} is not exist!", None
    return ResponseCode.SUCCESS, None, tuple(range(index, min(length, index + max(count, 0))))


# ------------------------------------------------------------------------------------------- runtime info (BRK-26)
@CLAUSES.oracle("BRK-26")
def runtime_values(commit_log_end: int, messages: int, earliest: int) -> tuple[tuple[str, str], ...]:
    """The GET_BROKER_RUNTIME_INFO values the store decides, as text (BRK-26): ``earliest`` is the first stored
    message's store time (-1: none).

    pre: 0 <= commit_log_end and 0 <= messages and (messages == 0) == (commit_log_end == 0) and earliest >= -1
    post: dict(__return__)["commitLogMinOffset"] == ("-1" if messages == 0 else "0")
    post: dict(__return__)["commitLogMaxOffset"] == str(commit_log_end)
    post: dict(__return__)["msgPutTotalTodayNow"] == str(messages)
    """
    return (
        ("brokerVersion", "409"),
        ("brokerVersionDesc", "V4_9_8"),
        ("commitLogMaxOffset", str(commit_log_end)),
        ("commitLogMinOffset", "-1" if messages == 0 else "0"),
        ("earliestMessageTimeStamp", str(earliest)),
        ("msgPutTotalTodayNow", str(messages)),
    )


# ------------------------------------------------------------------------------------------------ stats (BRK-27)
@CLAUSES.oracle("BRK-27")
def stats_samples(counts: tuple[tuple[int, int, int], ...], boot: int, now: int, period: int, keep: int
                  ) -> tuple[tuple[int, int, int], ...]:
    """The (timestamp, times, value) samples an item's list holds at ``now``: one per tick (``boot`` + k *
    ``period``) after the item's first increment, the first preceded by a zero sample a period earlier, the last
    ``keep`` kept; ``counts`` are the increments (at, value, times), in time order, none at a tick (BRK-27).

    pre: len(counts) <= 3 and 0 < period <= 30 and 2 <= keep <= 4 and 0 <= boot <= now <= boot + 100
    pre: all(counts[i][0] <= counts[i + 1][0] for i in range(len(counts) - 1)) and all((c[0] - boot) % period != 0 and boot <= c[0] <= now for c in counts)
    post: len(__return__) <= keep
    post: counts != () or __return__ == ()
    post: all(__return__[i][0] + period == __return__[i + 1][0] for i in range(len(__return__) - 1))
    post: __return__ == () or __return__[-1][0] <= now
    post: __return__ == () or __return__[-1][2] == sum(c[1] for c in counts if c[0] < __return__[-1][0])
    """  # noqa: E501
    if not counts:
        return ()
    first = counts[0][0]
    tick = boot + ((first - boot) // period + 1) * period
    if tick > now:
        return ()
    samples = [(tick - period, 0, 0)]
    while tick <= now:
        value = sum(c[1] for c in counts if c[0] < tick)
        times = sum(c[2] for c in counts if c[0] < tick)
        samples.append((tick, times, value))
        tick += period
    return tuple(samples[-keep:])


@CLAUSES.oracle("BRK-27")
def stats_snapshot(samples: tuple[tuple[int, int, int], ...]) -> tuple[int, float, float]:
    """``StatsItem.computeStatsData``: (sum, tps, avgpt) over a list of (timestamp, times, value) samples taken a
    period or more apart (BRK-27).

    pre: len(samples) <= 3 and all(samples[i][0] < samples[i + 1][0] for i in range(len(samples) - 1))
    pre: all(0 <= s[0] <= 2**50 and 0 <= s[1] <= 9 and 0 <= s[2] <= 99 for s in samples)
    post: samples != () or __return__ == (0, 0.0, 0.0)
    post: samples == () or __return__[0] == samples[-1][2] - samples[0][2]
    post: len(samples) < 2 or samples[-1][1] != samples[0][1] or __return__[2] == 0.0
    """
    if not samples:
        return 0, 0.0, 0.0
    first, last = samples[0], samples[-1]
    total = last[2] - first[2]
    span = last[0] - first[0]
    tps = total * 1000.0 / span if span else (float("nan") if total == 0 else float("inf") * total)
    times = last[1] - first[1]
    return total, tps, total / times if times > 0 else 0.0


# ------------------------------------------------------------------------------------------------ reply (BRK-28)
@CLAUSES.oracle("BRK-28")
def reply_answer(reply_to: str | None, channel_found: bool, push_ok: bool) -> tuple[ResponseCode, str | None]:
    """The code and remark of a SEND_REPLY_MESSAGE answer once its push is decided (BRK-28).

    post: (__return__[0] is ResponseCode.SUCCESS) == (reply_to is not None and channel_found and push_ok)
    post: __return__[0] is not ResponseCode.SUCCESS or __return__[1] is None
    post: reply_to is not None or __return__[1] == "reply message properties[REPLY_TO_CLIENT] is null"
    """
    if reply_to is None:
        return ResponseCode.SYSTEM_ERROR, "reply message properties[REPLY_TO_CLIENT] is null"
    if not channel_found:
        return ResponseCode.SYSTEM_ERROR, f"push reply message fail, channel of <{reply_to}> not found."
    if not push_ok:
        return ResponseCode.SYSTEM_ERROR, f"push reply message to {reply_to}fail."
    return ResponseCode.SUCCESS, None


# ----------------------------------------------------------------------------------------------- offsets (BRK-30)
@CLAUSES.oracle("BRK-30")
def consumer_offset_answer(committed: int | None, min_offset: int) -> tuple[ResponseCode, int | None]:
    """QUERY_CONSUMER_OFFSET: (SUCCESS, the committed offset), (SUCCESS, 0) for a queue never committed whose min
    offset is at most 0, else (QUERY_NOT_FOUND, None) (BRK-30).

    pre: committed is None or committed >= 0
    post: committed is None or __return__ == (ResponseCode.SUCCESS, committed)
    post: committed is not None or __return__ == ((ResponseCode.SUCCESS, 0) if min_offset <= 0 else (ResponseCode.QUERY_NOT_FOUND, None))
    """  # noqa: E501
    if committed is not None:
        return ResponseCode.SUCCESS, committed
    if min_offset <= 0:
        return ResponseCode.SUCCESS, 0
    return ResponseCode.QUERY_NOT_FOUND, None


@CLAUSES.oracle("BRK-30")
def correction_offsets(offsets: tuple[tuple[str, int, int], ...], filter_groups: tuple[str, ...],
                       min_offsets: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """QUERY_CORRECTION_OFFSET's (queue id, offset) pairs for one topic: for each queue, the least offset committed
    by a group not in ``filter_groups`` that is at least the queue's min offset (``min_offsets[q]``, 0 past the
    end); ``offsets`` are (group, queue id, offset) of the topic (BRK-30).

    pre: len(offsets) <= 3 and len(filter_groups) <= 2 and len(min_offsets) <= 2 and all(0 <= o[1] < 3 for o in offsets)
    post: all(any(o[0] not in filter_groups and o[1] == q and o[2] == v for o in offsets) for q, v in __return__)
    post: all(v <= o[2] for q, v in __return__ for o in offsets if o[1] == q and o[0] not in filter_groups)
    post: list(__return__) == sorted(__return__) and len({q for q, _ in __return__}) == len(__return__)
    """
    found: dict[int, int] = {}
    for group, queue_id, offset in offsets:
        if group in filter_groups:
            continue
        low = min_offsets[queue_id] if queue_id < len(min_offsets) else 0
        if offset >= low:
            found[queue_id] = min(offset, found.get(queue_id, offset))
    return tuple(sorted(found.items()))


# --------------------------------------------------------------------------------------------------- ACL (BRK-31)
#: What a broker without aclEnable answers each ACL update with (it has no access validator).
ACL_FAILURES: dict[int, ResponseCode] = {
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
    RequestCode.DELETE_ACL_CONFIG: ResponseCode.DELETE_ACL_CONFIG_FAILED,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
}


@CLAUSES.oracle("BRK-31")
def acl_failure_code(code: int) -> ResponseCode | None:
    """The code a broker without aclEnable answers an ACL update with; None for GET_BROKER_CLUSTER_ACL_INFO (never
    answered) and any other request (BRK-31).

    post: __return__ is None or __return__.name.endswith("_FAILED")
    post: (__return__ is None) == (code not in (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG))
    post: code != RequestCode.GET_BROKER_CLUSTER_ACL_INFO or __return__ is None
    """  # noqa: E501
    return ACL_FAILURES.get(code)


# --------------------------------------------------------------------------------------------- bad input (BRK-32)
#: The (request code, header field) pairs whose absence a 4.9.8 broker answers SYSTEM_ERROR, changing nothing.
MALFORMED_REQUESTS: frozenset[tuple[int, str]] = frozenset({
    (RequestCode.GET_TOPIC_STATS_INFO, "topic"), (RequestCode.GET_EARLIEST_MSG_STORETIME, "topic"),
    (RequestCode.GET_EARLIEST_MSG_STORETIME, "queueId"), (RequestCode.QUERY_CONSUME_QUEUE, "topic"),
    (RequestCode.UPDATE_AND_CREATE_TOPIC, "readQueueNums"), (RequestCode.UPDATE_AND_CREATE_TOPIC, "writeQueueNums"),
    (RequestCode.UPDATE_AND_CREATE_TOPIC, "perm"), (RequestCode.QUERY_MESSAGE, "maxNum"),
    (RequestCode.QUERY_MESSAGE, "beginTimestamp"), (RequestCode.QUERY_MESSAGE, "endTimestamp"),
    (RequestCode.VIEW_MESSAGE_BY_ID, "offset"),
})


@CLAUSES.oracle("BRK-32")
def malformed_answer(code: int, missing: str, topic_valid: bool) -> ResponseCode | None:
    """The code a request without the header field ``missing`` is answered with, or None when the model does not
    say (BRK-32); an UPDATE_AND_CREATE_TOPIC's name is checked before its numbers are unboxed.

    post: __return__ is None or __return__ is ResponseCode.SYSTEM_ERROR
    post: (__return__ is None) == ((code, missing) not in MALFORMED_REQUESTS or (code == RequestCode.UPDATE_AND_CREATE_TOPIC and not topic_valid))
    """  # noqa: E501
    if (code, missing) not in MALFORMED_REQUESTS:
        return None
    if code == RequestCode.UPDATE_AND_CREATE_TOPIC and not topic_valid:
        return None
    return ResponseCode.SYSTEM_ERROR
