"""Consume retry: a failed message goes back to ``%RETRY%<group>`` with growing delays, then ``%DLQ%<group>``.

Covers what happens to a message a push consumer failed to consume: the listener result and ``ackIndex``
(``ConsumeMessageConcurrentlyService.processConsumeResult``); the CONSUMER_SEND_MSG_BACK request and the
broker's decision (``SendMessageProcessor.asyncConsumerSendMsgBack``: group checks, ``retryQueueNums <= 0``
drops the message, the maximum from the group or the request, the dead-letter threshold, delay level
``3 + reconsumeTimes``, the new copy with ``reconsumeTimes + 1``); the client's fallback when that request
fails (``DefaultMQPushConsumerImpl.sendMessageBack``: a plain send to ``%RETRY%<group>``, which the broker
handles in ``SendMessageProcessor.handleRetryAndDLQ``); the local re-consume after 5 s when both fail; delayed
delivery (``CommitLog`` put with a delay level; ``ScheduleMessageService``: the level table, clamping, the due
time, the move back to ``REAL_TOPIC``); how a consumer shows a retried message (``resetRetryAndNamespace``);
the consume timeout (``ProcessQueue.cleanExpiredMsg``); and orderly consumption's suspend and dead-letter
path (``ConsumeMessageOrderlyService``).

The state machine follows one message of one consumer group through its whole retry chain: deliveries,
listener results, send back answered or failed, the fallback stored or failed, time passing until a delayed
copy is due, until it is consumed, dead-lettered or dropped.

Version notes (4.9.0-4.9.8): a request that carries no maxReconsumeTimes from a client of version >= V3_4_9
made the broker fail (SYSTEM_ERROR) in 4.9.0 for CONSUMER_SEND_MSG_BACK and in 4.9.0-4.9.2 for a plain send to
a retry topic; the dead-letter topic was created write-only in 4.9.0-4.9.1 and read-write from 4.9.2; the
orderly consumer's dead-letter message lost ORIGIN_MESSAGE_ID before 4.9.4. Everything else here is the same
in 4.9.x.
"""

from __future__ import annotations

import enum
import itertools

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.java import int64, is_blank, parse_long
from rocketspec.spec.protocol import (
    DEFAULT_CONSUME_TIMEOUT_MINUTES,
    DEFAULT_MAX_RECONSUME_TIMES,
    DEFAULT_RETRY_QUEUE_NUMS,
    DEFAULT_SUSPEND_CURRENT_QUEUE_MS,
    DELAY_LEVEL_MILLIS,
    DLQ_GROUP_TOPIC_PREFIX,
    DLQ_NUMS_PER_GROUP,
    MAX_DELAY_LEVEL,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V3_0_11,
    VERSION_V3_4_9,
    VERSION_V4_9_8,
    ConsumeStatus,
    MessageModel,
    Property,
    ResponseCode,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

CLAUSES = ClauseTable(
    area="consume_retry",
    prefix="RETRY",
    clauses=(
        Clause(
            "RETRY-1",
            "Delay levels 1..n are the entries of messageDelayLevel (default 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m"
            " 7m 8m 9m 10m 20m 30m 1h 2h), each a Java long with unit s, m, h or d; the max level is n; a "
            "bad entry stops the store from loading.",
            "ScheduleMessageService.parseDelayLevel; MessageStoreConfig.messageDelayLevel",
        ),
        Clause(
            "RETRY-2",
            "A put with DELAY > 0 (non-transactional or committed) is stored in SCHEDULE_TOPIC_XXXX queue "
            "level-1 with REAL_TOPIC/REAL_QID, a level above the max being rewritten to the max; DELAY <= 0 "
            "is not delayed.",
            "CommitLog.asyncPutMessage; ScheduleMessageService.delayLevel2QueueId",
        ),
        Clause(
            "RETRY-3",
            "A delayed message is due at store time + delay(level) (a due time beyond now + delay counts as "
            "now) and is then re-put to REAL_TOPIC/REAL_QID, not delayed again, reconsumeTimes unchanged; its stored "
            "properties still show DELAY, REAL_TOPIC and REAL_QID (cleared from the map after the string is written).",
            "ScheduleMessageService.DeliverDelayedMessageTimerTask.executeOnTimeup/correctDeliverTimestamp, "
            "messageTimeup; CommitLog.checkMessageAndReturnSize",
        ),
        Clause(
            "RETRY-4",
            "CONSUMER_SEND_MSG_BACK checks in order: group unknown (autoCreateSubscriptionGroup off) -> "
            "SUBSCRIPTION_GROUP_NOT_EXIST, broker not writable -> NO_PERMISSION, retryQueueNums <= 0 -> "
            "SUCCESS, %RETRY% topic not writable -> NO_PERMISSION, no message at the offset -> SYSTEM_ERROR.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; "
            "SubscriptionGroupManager.findSubscriptionGroupConfig; seed 001 §6.2",
        ),
        Clause(
            "RETRY-5",
            "With retryQueueNums <= 0 (default 1) the broker answers SUCCESS and stores nothing: the client "
            "counts the message as sent back and it is never delivered again.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; SubscriptionGroupConfig; seed 001 §6.2",
        ),
        Clause(
            "RETRY-6",
            "The max reconsume times is the group's retryMaxTimes (default 16), replaced by the request's "
            "maxReconsumeTimes when the request version >= V3_4_9 (121) and the header carries it.",
            "SendMessageProcessor.asyncConsumerSendMsgBack",
            versions="4.9.0: a version >= 121 request without maxReconsumeTimes fails with SYSTEM_ERROR; "
            "4.9.1+: the group's value is used",
        ),
        Clause(
            "RETRY-7",
            "If the stored reconsumeTimes >= max or the request delayLevel < 0 the copy goes to %DLQ%<group>"
            " (1 queue, queue 0) without delay.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; seed 001 §6.2",
        ),
        Clause(
            "RETRY-8",
            "Otherwise the copy goes to %RETRY%<group>, queue random in [0, retryQueueNums), delay level = "
            "the request delayLevel if > 0 else 3 + stored reconsumeTimes (then clamped by RETRY-2).",
            "SendMessageProcessor.asyncConsumerSendMsgBack; seed 001 §6.2",
        ),
        Clause(
            "RETRY-9",
            "The copy is a new message with reconsumeTimes = stored + 1, RETRY_TOPIC = the original topic "
            "unless set, ORIGIN_MESSAGE_ID kept unless blank else the stored message id; put OK -> SUCCESS "
            "else SYSTEM_ERROR.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; seed 001 §6.2",
        ),
        Clause(
            "RETRY-10",
            "Missing topics are created on send back: %RETRY%<group> with retryQueueNums queues, perm RW; "
            "%DLQ%<group> with 1 queue.",
            "TopicConfigManager.createTopicInSendMessageBackMethod; SendMessageProcessor",
            versions="4.9.0-4.9.1: %DLQ% perm write-only (2); 4.9.2+: perm read-write (6) and the DLQ copy "
            "carries DELAY 0",
        ),
        Clause(
            "RETRY-11",
            "A plain send to %RETRY%<group>: unknown group -> SUBSCRIPTION_GROUP_NOT_EXIST; max as RETRY-6; "
            "header reconsumeTimes (absent: 0) >= max -> %DLQ%<group> queue 0; the stored reconsumeTimes is "
            "the header's.",
            "SendMessageProcessor.handleRetryAndDLQ/asyncSendMessage",
            versions="4.9.0-4.9.2: a version >= 121 request without maxReconsumeTimes fails with "
            "SYSTEM_ERROR; 4.9.3+: the group's value is used",
        ),
        Clause(
            "RETRY-12",
            "On that dead-letter path the request's properties are applied after the switch, so a DELAY > 0 "
            "still routes the copy through SCHEDULE_TOPIC_XXXX (REAL_TOPIC %DLQ%<group>) before it lands in "
            "the DLQ.",
            "SendMessageProcessor.asyncSendMessage (handleRetryAndDLQ before setProperties); CommitLog",
        ),
        Clause(
            "RETRY-13",
            "Listener result: exception or null -> RECONSUME_LATER; CONSUME_SUCCESS -> messages "
            "0..min(ackIndex, n-1) succeed (ackIndex default Integer.MAX_VALUE, >= -1) and the rest failed; "
            "RECONSUME_LATER -> all failed.",
            "ConsumeMessageConcurrentlyService.processConsumeResult/ConsumeRequest.run; "
            "ConsumeConcurrentlyContext; seed 001 §6.1",
        ),
        Clause(
            "RETRY-14",
            "Broadcasting: failed messages are logged and dropped, never sent back nor consumed again.",
            "ConsumeMessageConcurrentlyService.processConsumeResult; seed 001 §6.1",
        ),
        Clause(
            "RETRY-15",
            "Clustering: each failed message is sent back with CONSUMER_SEND_MSG_BACK: group, commit-log "
            "offset, delayLevel = context delayLevelWhenNextConsume (default 0), originMsgId, originTopic, "
            "max (-1 -> 16).",
            "ConsumeMessageConcurrentlyService.sendMessageBack; MQClientAPIImpl.consumerSendMessageBack; "
            "seed 001 §6.2",
        ),
        Clause(
            "RETRY-16",
            "If that fails the client sends %RETRY%<group> itself: the message's properties, RETRY_TOPIC, "
            "RECONSUME_TIME n+1, MAX_RECONSUME_TIMES, no TRAN_MSG, DELAY 3+n; header reconsumeTimes n+1 and "
            "max. The producer moves RECONSUME_TIME and MAX_RECONSUME_TIMES into the header and deletes them "
            "from the message, so a retried attempt of that send carries neither: header reconsumeTimes 0, no "
            "max (the broker uses the group's, RETRY-11).",
            "DefaultMQPushConsumerImpl.sendMessageBack; DefaultMQProducerImpl.sendDefaultImpl/sendKernelImpl",
        ),
        Clause(
            "RETRY-17",
            "If the fallback fails too the message's reconsumeTimes is raised by 1 locally and it is "
            "consumed again after 5000 ms; it stays in the process queue so the offset does not pass it.",
            "ConsumeMessageConcurrentlyService.processConsumeResult/submitConsumeRequestLater; "
            "seed 001 §6.1",
        ),
        Clause(
            "RETRY-18",
            "The broker builds its copy from the stored message found by offset, so local raises are lost "
            "when a later send back succeeds (copy = stored + 1), while the fallback uses the local count.",
            "SendMessageProcessor.asyncConsumerSendMsgBack (lookMessageByOffset); MQClientAPIImpl",
        ),
        Clause(
            "RETRY-19",
            "Clustering consumers subscribe %RETRY%<group> with *; a message pulled from %RETRY%<group> that"
            " has RETRY_TOPIC is shown with that topic.",
            "DefaultMQPushConsumerImpl.copySubscription/resetRetryAndNamespace; seed 001 §三",
        ),
        Clause(
            "RETRY-20",
            "A concurrently consumed message whose consumption started more than consumeTimeout (15) minutes"
            " ago is sent back with delay level 3 and removed from the process queue (not for orderly "
            "consumers).",
            "ProcessQueue.cleanExpiredMsg",
        ),
        Clause(
            "RETRY-21",
            "Orderly SUSPEND_CURRENT_QUEUE_A_MOMENT: a message at reconsumeTimes >= max is sent to the retry"
            " topic (dead letter); one under max or whose send failed gets +1 and suspends the batch for "
            "re-consumption.",
            "ConsumeMessageOrderlyService.processConsumeResult/checkReconsumeTimes",
        ),
        Clause(
            "RETRY-22",
            "maxReconsumeTimes -1 (the default) means 16 for concurrent consumers and Integer.MAX_VALUE for "
            "orderly ones; any other value is used as is.",
            "DefaultMQPushConsumerImpl.getMaxReconsumeTimes; "
            "ConsumeMessageOrderlyService.getMaxReconsumeTimes",
        ),
        Clause(
            "RETRY-23",
            "The orderly dead-letter message is a send to %RETRY%<group> like RETRY-16 but with "
            "RECONSUME_TIME n (so the broker dead-letters it).",
            "ConsumeMessageOrderlyService.sendMessageBack",
            versions="4.9.0-4.9.3: ORIGIN_MESSAGE_ID only if the message had one; 4.9.4+: kept or set to the"
            " message id",
        ),
        Clause(
            "RETRY-24",
            "An orderly suspension lasts the context suspendCurrentQueueTimeMillis (-1: the consumer's, "
            "default 1000) clamped to [10, 30000] ms.",
            "ConsumeMessageOrderlyService.submitConsumeRequestLater; ConsumeOrderlyContext",
        ),
        Clause(
            "RETRY-25",
            "Each delivery shows reconsumeTimes one more than the delivery before, except a broker copy made"
            " after local re-consumes, which shows the last stored value + 1, and a copy a retried fallback "
            "send stored, which shows 0 (RETRY-16).",
            "consequence of RETRY-9, RETRY-16, RETRY-17, RETRY-18",
        ),
        Clause(
            "RETRY-26",
            "A retry copy is delivered no earlier than delay(level) after it was stored (level: the "
            "send-back request's if > 0, else 3 + the count it was made from, clamped); a local re-consume "
            "no earlier than 5000 ms after the failure.",
            "consequence of RETRY-2, RETRY-3, RETRY-8, RETRY-16, RETRY-17",
        ),
        Clause(
            "RETRY-27",
            "A message in %DLQ%<group> is never delivered to the group again (nothing subscribes to it); its"
            " chain ends there.",
            "consequence of RETRY-7, RETRY-12, RETRY-19; seed 001 §6.2",
        ),
    ),
)

# Java's Integer.MAX_VALUE: the default ackIndex and the orderly consumer's unlimited reconsume times.
INTEGER_MAX_VALUE = 2**31 - 1
ACK_INDEX_DEFAULT = INTEGER_MAX_VALUE
# The broker's (and the fallback's) first retry level: 3 (10 s) for reconsumeTimes 0, one more per retry.
RETRY_BASE_DELAY_LEVEL = 3
# ProcessQueue.cleanExpiredMsg sends an expired message back with this fixed level.
EXPIRED_SEND_BACK_DELAY_LEVEL = 3
SUSPEND_MIN_MS = 10
SUSPEND_MAX_MS = 30_000
PERM_RW = PERM_READ | PERM_WRITE

_UNIT_MILLIS: tuple[tuple[str, int], ...] = (("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000))


# ------------------------------------------------------------------------------------------------------------
# Delay levels and the schedule service
# ------------------------------------------------------------------------------------------------------------


def _parse_java_long(text: str) -> int:
    """``Long.parseLong``, raising where Java throws ``NumberFormatException``."""
    value = parse_long(text)
    if value is None:
        raise ValueError(f"not a Java long: {text!r}")
    return value


@CLAUSES.oracle("RETRY-1")
def parse_delay_levels(text: str) -> tuple[int, ...]:
    """The delay of each level, in ms, from a ``messageDelayLevel`` string (RETRY-1).

    The string is split on single spaces (Java ``split``: trailing empty items dropped); each item is a Java
    long followed by one unit letter ``s``, ``m``, ``h`` or ``d`` (the product wraps like Java ``long``).
    Level ``i`` is item ``i``; the max level is the number of items. Anything else raises ``ValueError``: the
    broker cannot load its store.

    pre: len(text) <= 3
    raises: ValueError
    post: all(i[-1:] in "smhd" for i in text.split(" ")[:len(__return__)]) and len(__return__) <= len(text)
    """
    if text == "":
        raise ValueError("an empty messageDelayLevel has one empty item")
    items = text.split(" ")
    while items and items[-1] == "":
        items.pop()
    units = dict(_UNIT_MILLIS)
    result: list[int] = []
    for item in items:
        if item == "" or item[-1] not in units:
            raise ValueError(f"bad delay level item {item!r}")
        result.append(int64(units[item[-1]] * _parse_java_long(item[:-1])))
    return tuple(result)


@CLAUSES.oracle("RETRY-2")
def effective_delay_level(level: int, max_level: int = MAX_DELAY_LEVEL) -> int:
    """The level the store delays a put with ``DELAY = level`` by; 0 means not delayed (RETRY-2).

    Levels above ``max_level`` are rewritten to ``max_level``; levels <= 0 are not delayed.

    pre: 1 <= max_level <= 64
    post: 0 <= __return__ <= max_level
    post: (__return__ == 0) == (level <= 0)
    post: level <= 0 or __return__ == level or (level > max_level and __return__ == max_level)
    """
    if level <= 0:
        return 0
    if level > max_level:
        return max_level
    return level


@CLAUSES.oracle("RETRY-2")
def schedule_queue_id(level: int) -> int:
    """The SCHEDULE_TOPIC_XXXX queue of a put with ``DELAY = level`` (> 0): the clamped level - 1 (RETRY-2).

    pre: level >= 1
    post: 0 <= __return__ < MAX_DELAY_LEVEL
    post: level > MAX_DELAY_LEVEL or __return__ == level - 1
    """
    return effective_delay_level(level) - 1


@CLAUSES.oracle("RETRY-1", "RETRY-2")
def delay_millis(level: int, table: tuple[int, ...] = DELAY_LEVEL_MILLIS) -> int:
    """How long a put with ``DELAY = level`` (>= 1) waits in the schedule topic, in ms (RETRY-1, RETRY-2).

    The level is clamped to the table's size (the max level) first.

    pre: level >= 1
    pre: 1 <= len(table) <= 18
    post: __return__ in table
    post: level < len(table) or __return__ == table[-1]
    post: level >= len(table) or __return__ == table[level - 1]
    """
    return table[effective_delay_level(level, len(table)) - 1]


@CLAUSES.oracle("RETRY-3")
def schedule_due(stored_at_ms: int, level: int, now_ms: int) -> bool:
    """Whether a message stored at ``stored_at_ms`` with ``level`` is moved to its real topic at ``now_ms``.

    It is due at ``stored_at_ms + delay_millis(level)``; a due time later than ``now_ms + delay`` (the clock
    went back) is corrected to ``now_ms`` (RETRY-3).

    pre: 1 <= level <= 2 * MAX_DELAY_LEVEL
    pre: 0 <= stored_at_ms <= 10**13 and 0 <= now_ms <= 10**13
    post: not __return__ or now_ms - stored_at_ms >= DELAY_LEVEL_MILLIS[0] or now_ms < stored_at_ms
    post: __return__ or now_ms - stored_at_ms < DELAY_LEVEL_MILLIS[-1]
    post: __return__ or now_ms >= stored_at_ms
    """
    delay = delay_millis(level)
    deliver_at = stored_at_ms + delay
    if deliver_at > now_ms + delay:
        deliver_at = now_ms
    return deliver_at - now_ms <= 0


# ------------------------------------------------------------------------------------------------------------
# The broker: CONSUMER_SEND_MSG_BACK and plain sends to a retry topic
# ------------------------------------------------------------------------------------------------------------


class Target(enum.Enum):
    """Where a send back leaves the message."""

    RETRY = "RETRY"  # a copy in %RETRY%<group> (through the schedule topic when delayed)
    DLQ = "DLQ"  # a copy in %DLQ%<group>
    DROPPED = "DROPPED"  # SUCCESS, nothing stored
    NONE = "NONE"  # an error answer, nothing stored


@attrs.frozen
class SendBackResult:
    """The broker's answer and what it stored.

    ``queue_nums``: the copy's queue is drawn at random from ``[0, queue_nums)`` (0: the queue the request
    named); ``delay_level``: the level the store delays the copy by (already clamped, 0 = stored directly);
    ``reconsume_times``: the copy's (-1: nothing stored).
    """

    code: ResponseCode
    target: Target
    topic: str = ""
    queue_nums: int = 0
    delay_level: int = 0
    reconsume_times: int = -1


def _nothing(code: ResponseCode, target: Target = Target.NONE) -> SendBackResult:
    return SendBackResult(code, target)


def _max_reconsume_times(
    header_max: int | None, request_version: int, group_max: int, profile: VersionProfile,
    missing_header_fails_before: str,
) -> int | None:
    """The reconsume limit a broker applies (RETRY-6): the header's from clients of V3_4_9 on, else the group's.

    None when a new client's header lacks it and the release unboxes the missing Integer (the
    NullPointerException becomes a SYSTEM_ERROR answer); later releases fall back to the group's limit.
    """
    if request_version < VERSION_V3_4_9:
        return group_max
    if header_max is not None:
        return header_max
    return None if not profile.at_least(missing_header_fails_before) else group_max


@CLAUSES.oracle("RETRY-4", "RETRY-5", "RETRY-6", "RETRY-7", "RETRY-8", "RETRY-9")
def consumer_send_back(
    reconsume_times: int,
    delay_level: int = 0,
    header_max_reconsume_times: int | None = DEFAULT_MAX_RECONSUME_TIMES,
    request_version: int = VERSION_V4_9_8,
    group: str = "G",
    group_known: bool = True,
    broker_writable: bool = True,
    retry_queue_nums: int = DEFAULT_RETRY_QUEUE_NUMS,
    retry_topic_writable: bool = True,
    message_found: bool = True,
    group_retry_max_times: int = DEFAULT_MAX_RECONSUME_TIMES,
    put_ok: bool = True,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> SendBackResult:
    """The broker's answer to CONSUMER_SEND_MSG_BACK for a message stored with ``reconsume_times``.

    Checks in order (RETRY-4): unknown group -> SUBSCRIPTION_GROUP_NOT_EXIST; broker not writable ->
    NO_PERMISSION; ``retry_queue_nums <= 0`` -> SUCCESS, dropped (RETRY-5); retry topic not writable ->
    NO_PERMISSION; no message at the offset -> SYSTEM_ERROR. The max is the group's, or the header's when
    ``request_version >= V3_4_9`` and present (RETRY-6; 4.9.0 fails when absent). ``reconsume_times >= max``
    or ``delay_level < 0`` -> %DLQ%<group>, not delayed (RETRY-7); else %RETRY%<group> delayed by
    ``delay_level`` if > 0 else ``3 + reconsume_times``, clamped (RETRY-8). The copy has
    ``reconsume_times + 1`` (RETRY-9); a failed put answers SYSTEM_ERROR.

    pre: 0 <= reconsume_times <= 40 and -2 <= delay_level <= 40
    pre: header_max_reconsume_times is None or -2 <= header_max_reconsume_times <= 40
    pre: -2 <= group_retry_max_times <= 40 and -1 <= retry_queue_nums <= 4 and len(group) <= 2
    post: (__return__.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) == (not group_known)
    post: __return__.target != Target.DROPPED or retry_queue_nums <= 0
    post: (__return__.target in (Target.RETRY, Target.DLQ)) == (__return__.code == ResponseCode.SUCCESS and __return__.topic != "")
    post: __return__.target not in (Target.RETRY, Target.DLQ) or __return__.reconsume_times == reconsume_times + 1
    post: __return__.target != Target.RETRY or reconsume_times < (header_max_reconsume_times if request_version >= VERSION_V3_4_9 and header_max_reconsume_times is not None else group_retry_max_times)
    post: __return__.target != Target.DLQ or delay_level < 0 or reconsume_times >= (header_max_reconsume_times if request_version >= VERSION_V3_4_9 and header_max_reconsume_times is not None else group_retry_max_times)
    post: __return__.target != Target.RETRY or 1 <= __return__.delay_level <= MAX_DELAY_LEVEL
    post: __return__.target != Target.RETRY or delay_level != 0 or __return__.delay_level == min(reconsume_times + RETRY_BASE_DELAY_LEVEL, MAX_DELAY_LEVEL)
    post: __return__.target != Target.DLQ or (__return__.delay_level == 0 and __return__.queue_nums == 1)
    post: __return__.target != Target.RETRY or __return__.topic == RETRY_GROUP_TOPIC_PREFIX + group
    """  # noqa: E501
    if not group_known:
        return _nothing(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
    if not broker_writable:
        return _nothing(ResponseCode.NO_PERMISSION)
    if retry_queue_nums <= 0:
        return _nothing(ResponseCode.SUCCESS, Target.DROPPED)
    if not retry_topic_writable:
        return _nothing(ResponseCode.NO_PERMISSION)
    if not message_found:
        return _nothing(ResponseCode.SYSTEM_ERROR)
    max_times = _max_reconsume_times(
        header_max_reconsume_times, request_version, group_retry_max_times, profile, missing_header_fails_before="4.9.1"
    )
    if max_times is None:
        return _nothing(ResponseCode.SYSTEM_ERROR)
    if not put_ok:
        return _nothing(ResponseCode.SYSTEM_ERROR)
    if reconsume_times >= max_times or delay_level < 0:
        return SendBackResult(
            ResponseCode.SUCCESS, Target.DLQ, DLQ_GROUP_TOPIC_PREFIX + group, DLQ_NUMS_PER_GROUP, 0,
            reconsume_times + 1,
        )
    if delay_level == 0:
        delay_level = RETRY_BASE_DELAY_LEVEL + reconsume_times
    return SendBackResult(
        ResponseCode.SUCCESS, Target.RETRY, RETRY_GROUP_TOPIC_PREFIX + group, retry_queue_nums,
        effective_delay_level(delay_level), reconsume_times + 1,
    )


@CLAUSES.oracle("RETRY-9")
def send_back_properties(
    topic: str, retry_topic: str | None, origin_message_id: str | None, message_id: str
) -> tuple[str, str]:
    """``(RETRY_TOPIC, ORIGIN_MESSAGE_ID)`` of the broker's copy of a stored message (RETRY-9).

    RETRY_TOPIC is kept if the stored message has it, else set to the stored message's topic;
    ORIGIN_MESSAGE_ID is kept unless blank (null or only Java whitespace, :func:`~rocketspec.spec.java.is_blank`), else set to the
    stored message's id.

    pre: len(topic) <= 2 and len(message_id) <= 2
    pre: origin_message_id is None or len(origin_message_id) <= 1
    post: __return__[0] is (topic if retry_topic is None else retry_topic) and __return__[1] in (message_id, origin_message_id)
    """  # noqa: E501
    first_topic = topic if retry_topic is None else retry_topic
    if origin_message_id is None or is_blank(origin_message_id):
        return (first_topic, message_id)
    return (first_topic, origin_message_id)


@CLAUSES.oracle("RETRY-6", "RETRY-11", "RETRY-12")
def retry_topic_send(
    header_reconsume_times: int | None,
    delay_level: int,
    header_max_reconsume_times: int | None = DEFAULT_MAX_RECONSUME_TIMES,
    request_version: int = VERSION_V4_9_8,
    group: str = "G",
    group_known: bool = True,
    group_retry_max_times: int = DEFAULT_MAX_RECONSUME_TIMES,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> SendBackResult:
    """Where the broker stores a plain SEND_MESSAGE to ``%RETRY%<group>`` carrying ``DELAY = delay_level``.

    Unknown group -> SUBSCRIPTION_GROUP_NOT_EXIST. The max is the group's, or the header's when the request
    version >= V3_4_9 and it is present (RETRY-6; absent fails in 4.9.0-4.9.2) (RETRY-11). The header
    reconsumeTimes (absent: 0) >= max -> %DLQ%<group>, else %RETRY%<group>; either way the copy keeps the
    header's reconsumeTimes, and the DELAY property still applies, also on the dead-letter path (RETRY-12).

    pre: header_reconsume_times is None or 0 <= header_reconsume_times <= 40
    pre: header_max_reconsume_times is None or -2 <= header_max_reconsume_times <= 40
    pre: -2 <= delay_level <= 40 and -2 <= group_retry_max_times <= 40 and len(group) <= 2
    post: (__return__.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) == (not group_known)
    post: __return__.code != ResponseCode.SUCCESS or __return__.reconsume_times == (header_reconsume_times or 0)
    post: __return__.code != ResponseCode.SUCCESS or __return__.delay_level == max(0, min(delay_level, MAX_DELAY_LEVEL))
    post: __return__.target != Target.DLQ or (header_reconsume_times or 0) >= (header_max_reconsume_times if request_version >= VERSION_V3_4_9 and header_max_reconsume_times is not None else group_retry_max_times)
    post: __return__.target != Target.RETRY or (header_reconsume_times or 0) < (header_max_reconsume_times if request_version >= VERSION_V3_4_9 and header_max_reconsume_times is not None else group_retry_max_times)
    """  # noqa: E501
    if not group_known:
        return _nothing(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
    max_times = _max_reconsume_times(
        header_max_reconsume_times, request_version, group_retry_max_times, profile, missing_header_fails_before="4.9.3"
    )
    if max_times is None:
        return _nothing(ResponseCode.SYSTEM_ERROR)
    times = 0 if header_reconsume_times is None else header_reconsume_times
    level = effective_delay_level(delay_level)
    if times >= max_times:
        # The DELAY the broker reset is overwritten by the request's own properties (RETRY-12).
        return SendBackResult(
            ResponseCode.SUCCESS, Target.DLQ, DLQ_GROUP_TOPIC_PREFIX + group, DLQ_NUMS_PER_GROUP, level, times
        )
    return SendBackResult(
        ResponseCode.SUCCESS, Target.RETRY, RETRY_GROUP_TOPIC_PREFIX + group, 0, level, times
    )


@CLAUSES.oracle("RETRY-10")
def send_back_topic_config(
    target: Target, retry_queue_nums: int, profile: VersionProfile = DEFAULT_PROFILE
) -> tuple[int, int]:
    """``(queue nums, perm)`` a send back creates a missing ``target`` topic with (RETRY-10).

    %RETRY%<group>: ``retry_queue_nums`` queues, read-write. %DLQ%<group>: one queue, write-only in
    4.9.0-4.9.1, read-write from 4.9.2. An existing topic keeps its own configuration.

    pre: target in (Target.RETRY, Target.DLQ)
    post: target != Target.DLQ or __return__[0] == 1
    post: __return__[1] & PERM_WRITE == PERM_WRITE
    post: target != Target.RETRY or __return__ == (retry_queue_nums, PERM_READ | PERM_WRITE)
    """
    if target is Target.RETRY:
        return (retry_queue_nums, PERM_RW)
    return (DLQ_NUMS_PER_GROUP, PERM_RW if profile.at_least("4.9.2") else PERM_WRITE)


# ------------------------------------------------------------------------------------------------------------
# The consumer
# ------------------------------------------------------------------------------------------------------------


@attrs.frozen
class ConsumeOutcome:
    """What a concurrent consumer does with a batch after the listener returned.

    Messages ``0..succeeded-1`` are done; ``send_back`` (clustering) go to CONSUMER_SEND_MSG_BACK; ``dropped``
    (broadcasting) are logged and forgotten.
    """

    succeeded: int
    send_back: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()


@CLAUSES.oracle("RETRY-13", "RETRY-14", "RETRY-15")
def after_listener(
    status: ConsumeStatus | None,
    batch_size: int,
    message_model: MessageModel = MessageModel.CLUSTERING,
    ack_index: int = ACK_INDEX_DEFAULT,
) -> ConsumeOutcome:
    """The concurrent consumer's handling of a listener result for a batch of ``batch_size`` (RETRY-13..15).

    ``status`` None (the listener threw or returned null) counts as RECONSUME_LATER. CONSUME_SUCCESS: messages
    up to ``min(ack_index, batch_size - 1)`` succeeded; RECONSUME_LATER: none did (RETRY-13). The failed
    messages are sent back in clustering mode (RETRY-15) and dropped in broadcasting mode (RETRY-14). An empty
    batch is left alone. ``ack_index < -1`` is outside the protocol (the Java client throws).

    pre: 0 <= batch_size <= 4
    pre: -1 <= ack_index <= 8 or ack_index == ACK_INDEX_DEFAULT
    post: __return__.succeeded + len(__return__.send_back) + len(__return__.dropped) == batch_size
    post: status is ConsumeStatus.CONSUME_SUCCESS or __return__.succeeded == 0
    post: message_model is MessageModel.CLUSTERING or __return__.send_back == ()
    post: message_model is MessageModel.BROADCASTING or __return__.dropped == ()
    post: all(i >= __return__.succeeded for i in __return__.send_back + __return__.dropped)
    post: status is not ConsumeStatus.CONSUME_SUCCESS or ack_index < batch_size - 1 or __return__.succeeded == batch_size
    """  # noqa: E501
    if batch_size == 0:
        return ConsumeOutcome(0)
    ack = -1
    if status is ConsumeStatus.CONSUME_SUCCESS:
        ack = min(ack_index, batch_size - 1)
    failed = tuple(range(ack + 1, batch_size))
    if message_model is MessageModel.BROADCASTING:
        return ConsumeOutcome(ack + 1, dropped=failed)
    return ConsumeOutcome(ack + 1, send_back=failed)


@CLAUSES.oracle("RETRY-15", "RETRY-22")
def effective_max_reconsume_times(configured: int, orderly: bool = False) -> int:
    """The max a consumer uses and sends: -1 means 16 (concurrent) or Integer.MAX_VALUE (orderly) (RETRY-22).

    The concurrent consumer sends this value in CONSUMER_SEND_MSG_BACK (RETRY-15).

    pre: -3 <= configured <= INTEGER_MAX_VALUE
    post: configured == -1 or __return__ == configured
    post: configured != -1 or __return__ == (INTEGER_MAX_VALUE if orderly else DEFAULT_MAX_RECONSUME_TIMES)
    """
    if configured != -1:
        return configured
    return INTEGER_MAX_VALUE if orderly else DEFAULT_MAX_RECONSUME_TIMES


@attrs.frozen
class ClientRetryMessage:
    """A message a consumer sends to ``%RETRY%<group>`` itself, as the broker receives it.

    ``properties`` sorted by name, as on the wire (RECONSUME_TIME and MAX_RECONSUME_TIMES stay in them on the
    first attempt: the producer copies them into the header after serialising, then deletes them from the
    message, so a retried attempt has neither); ``delay_level`` is the DELAY property;
    ``header_max_reconsume_times`` None: not in the header.
    """

    topic: str
    properties: tuple[tuple[str, str], ...]
    header_reconsume_times: int
    header_max_reconsume_times: int | None
    delay_level: int


@CLAUSES.oracle("RETRY-16", "RETRY-23")
def client_retry_message(
    real_topic: str,
    reconsume_times: int,
    max_reconsume_times: int,
    group: str = "G",
    properties: tuple[tuple[str, str], ...] = (),
    message_id: str = "",
    orderly: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
    retried: bool = False,
) -> ClientRetryMessage:
    """The send a consumer makes to ``%RETRY%<group>`` for a message it shows with ``reconsume_times``.

    Concurrent fallback (RETRY-16): the message's own ``properties`` (so ORIGIN_MESSAGE_ID only if it already
    had one: the id set first is lost when the property map is replaced), RETRY_TOPIC = ``real_topic``,
    RECONSUME_TIME = n + 1, MAX_RECONSUME_TIMES, TRAN_MSG removed, DELAY = 3 + n. Orderly dead letter
    (RETRY-23): the same with RECONSUME_TIME = n; from 4.9.4 ORIGIN_MESSAGE_ID is kept or set to
    ``message_id``. The producer puts RECONSUME_TIME and MAX_RECONSUME_TIMES into the request header and deletes
    them from the message: ``retried`` (the first attempt failed, the producer sends again) gives the message as
    a later attempt carries it, with neither property, header reconsumeTimes 0 and no max (RETRY-16).

    pre: 0 <= reconsume_times <= 40 and -2 <= max_reconsume_times <= 40
    pre: properties == () and len(group) <= 2 and len(real_topic) <= 2
    post: __return__.header_reconsume_times == (0 if retried else reconsume_times + (0 if orderly else 1))
    post: (__return__.header_max_reconsume_times is None) == retried
    post: (Property.RECONSUME_TIME in dict(__return__.properties)) != retried
    post: dict(__return__.properties)[Property.RETRY_TOPIC] == real_topic
    post: Property.TRANSACTION_PREPARED not in dict(__return__.properties)
    post: dict(__return__.properties)[Property.DELAY_TIME_LEVEL] == str(__return__.delay_level)
    post: __return__.delay_level == RETRY_BASE_DELAY_LEVEL + reconsume_times
    """
    props = dict(properties)
    if orderly and profile.at_least("4.9.4"):
        origin = props.get(Property.ORIGIN_MESSAGE_ID)
        props[Property.ORIGIN_MESSAGE_ID] = message_id if origin is None or is_blank(origin) else origin
    header_times = reconsume_times if orderly else reconsume_times + 1
    delay_level = RETRY_BASE_DELAY_LEVEL + reconsume_times
    props[Property.RETRY_TOPIC] = real_topic
    props[Property.RECONSUME_TIME] = str(header_times)
    props[Property.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    props.pop(Property.TRANSACTION_PREPARED, None)
    props[Property.DELAY_TIME_LEVEL] = str(delay_level)
    header_max: int | None = max_reconsume_times
    if retried:
        # sendKernelImpl cleared both properties after the first attempt serialised them.
        del props[Property.RECONSUME_TIME], props[Property.MAX_RECONSUME_TIMES]
        header_times, header_max = 0, None
    return ClientRetryMessage(
        RETRY_GROUP_TOPIC_PREFIX + group, tuple(sorted(props.items())), header_times, header_max, delay_level,
    )


@CLAUSES.oracle("RETRY-19")
def visible_topic(stored_topic: str, retry_topic: str | None, group: str) -> str:
    """The topic a consumer of ``group`` shows for a pulled message (RETRY-19).

    A message pulled from ``%RETRY%<group>`` that carries RETRY_TOPIC shows RETRY_TOPIC; any other shows its
    own topic.

    pre: len(stored_topic) <= 10 and len(group) <= 3
    post: retry_topic is None or stored_topic != RETRY_GROUP_TOPIC_PREFIX + group or __return__ == retry_topic
    post: __return__ is stored_topic or __return__ is retry_topic
    """
    if retry_topic is not None and stored_topic == RETRY_GROUP_TOPIC_PREFIX + group:
        return retry_topic
    return stored_topic


@CLAUSES.oracle("RETRY-20")
def consume_expired(
    consume_start_ms: int, now_ms: int, consume_timeout_minutes: int = DEFAULT_CONSUME_TIMEOUT_MINUTES
) -> bool:
    """Whether a concurrently consumed message is sent back and removed for taking too long (RETRY-20).

    True when more than ``consume_timeout_minutes`` have passed since the consumption started; the message is
    then sent back with :data:`EXPIRED_SEND_BACK_DELAY_LEVEL`. Orderly consumers never expire messages.

    pre: 0 <= consume_start_ms <= 10**13 and 0 <= now_ms <= 10**13 and 1 <= consume_timeout_minutes <= 10**4
    post: __return__ == (now_ms - consume_start_ms > consume_timeout_minutes * 60_000)
    post: not __return__ or now_ms > consume_start_ms
    """
    return now_ms - consume_start_ms > consume_timeout_minutes * 60 * 1000


# ------------------------------------------------------------------------------------------------------------
# Orderly consumption
# ------------------------------------------------------------------------------------------------------------


@attrs.frozen
class OrderlySuspend:
    """The orderly consumer's handling of SUSPEND_CURRENT_QUEUE_A_MOMENT for one batch.

    ``suspend``: the whole batch is consumed again after the suspension (else, with autoCommit, it is
    committed);
    ``reconsume_times``: the messages' counts afterwards; ``dead_lettered``: indices sent to the retry topic
    with RECONSUME_TIME >= max (the broker puts them in the DLQ).
    """

    suspend: bool
    reconsume_times: tuple[int, ...]
    dead_lettered: tuple[int, ...]


@CLAUSES.oracle("RETRY-21")
def orderly_suspend(
    reconsume_times: tuple[int, ...], max_reconsume_times: int, send_ok: tuple[bool, ...]
) -> OrderlySuspend:
    """SUSPEND_CURRENT_QUEUE_A_MOMENT for a batch (RETRY-21); ``send_ok[i]``: whether message i's send worked.

    A message at ``reconsume_times >= max`` is sent to the retry topic (dead letter): if the send fails it
    gets +1 and the batch suspends. A message under the max gets +1 and the batch suspends. A message sent
    successfully is still re-consumed with the batch when another message suspends it.

    pre: len(reconsume_times) == len(send_ok) <= 4
    pre: all(0 <= t <= 40 for t in reconsume_times) and -2 <= max_reconsume_times <= 40
    post: __return__.suspend == (len(__return__.dead_lettered) < len(reconsume_times))
    post: all(reconsume_times[i] >= max_reconsume_times and send_ok[i] for i in __return__.dead_lettered)
    post: all((i in __return__.dead_lettered) == (a == b) for i, (a, b) in enumerate(zip(reconsume_times, __return__.reconsume_times)))
    """  # noqa: E501
    times: list[int] = []
    dead: list[int] = []
    suspend = False
    for i, (n, ok) in enumerate(zip(reconsume_times, send_ok, strict=True)):
        if n >= max_reconsume_times and ok:
            dead.append(i)
            times.append(n)
        else:
            suspend = True
            times.append(n + 1)
    return OrderlySuspend(suspend, tuple(times), tuple(dead))


@CLAUSES.oracle("RETRY-24")
def suspend_millis(context_ms: int, consumer_ms: int = DEFAULT_SUSPEND_CURRENT_QUEUE_MS) -> int:
    """How long an orderly queue is suspended (RETRY-24): ``context_ms`` (-1: ``consumer_ms``) in [10, 30000].

    pre: -10**6 <= context_ms <= 10**6 and -10**6 <= consumer_ms <= 10**6
    post: SUSPEND_MIN_MS <= __return__ <= SUSPEND_MAX_MS
    post: context_ms == -1 or not SUSPEND_MIN_MS <= context_ms <= SUSPEND_MAX_MS or __return__ == context_ms
    post: context_ms != -1 or not SUSPEND_MIN_MS <= consumer_ms <= SUSPEND_MAX_MS or __return__ == consumer_ms
    """
    millis = consumer_ms if context_ms == -1 else context_ms
    return max(SUSPEND_MIN_MS, min(millis, SUSPEND_MAX_MS))


# ------------------------------------------------------------------------------------------------------------
# State machine: one message of one group through its retry chain
# ------------------------------------------------------------------------------------------------------------

GROUP = "G"
TOPIC = "T"


class Phase(enum.Enum):
    """Where the message is."""

    READY = "READY"  # stored in a topic the group consumes (the original or %RETRY%), not yet pulled
    CONSUMING = "CONSUMING"  # handed to the listener
    SENDING_BACK = "SENDING_BACK"  # CONSUMER_SEND_MSG_BACK in flight
    FALLBACK = "FALLBACK"  # the consumer's own send to %RETRY%<group> in flight
    LOCAL_WAIT = "LOCAL_WAIT"  # both failed: consumed again locally when due
    SCHEDULED = "SCHEDULED"  # a copy in SCHEDULE_TOPIC_XXXX until due
    CONSUMED = "CONSUMED"
    DEAD = "DEAD"  # in %DLQ%<group>
    DISCARDED = "DISCARDED"  # dropped: broadcasting failure, or retryQueueNums <= 0

    @property
    def final(self) -> bool:
        return self in (Phase.CONSUMED, Phase.DEAD, Phase.DISCARDED)


class Path(enum.Enum):
    """Who made a copy: the broker (CONSUMER_SEND_MSG_BACK) or the client (fallback send)."""

    BROKER = "BROKER"
    CLIENT = "CLIENT"


@attrs.frozen
class Delivery:
    """A hand-over to the listener: the reconsumeTimes it showed, when, and if it was a local re-consume."""

    reconsume_times: int
    at_ms: int
    local: bool


@attrs.frozen
class Copy:
    """A new stored message of the chain: dead letter or retry, its reconsumeTimes, when and how it was made.

    ``context_level`` is the delayLevel the listener asked for; ``deliveries_before`` the deliveries so far;
    ``retried``: stored by a retried attempt of the client's send (RETRY-16), made from the consumer's count
    ``made_from``.
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
class RetryState:
    """One message of group ``GROUP`` (topic ``TOPIC``) and its consumer.

    ``consumer_max``: the consumer's max (sent in requests); ``client_version``: its request version;
    ``group_max``/``retry_queue_nums``: the group's broker config. ``stored_times``: reconsumeTimes of the
    stored message the consumer holds or will pull (``start_times`` at first); ``local_times``: what the
    consumer shows. ``due_ms`` belongs to SCHEDULED and LOCAL_WAIT, ``scheduled_level`` and ``stored_at_ms``
    to SCHEDULED; ``faults_left`` bounds the RPC failures still to be injected.
    """

    message_model: MessageModel
    client_version: int
    consumer_max: int
    group_max: int
    retry_queue_nums: int
    start_times: int
    phase: Phase = Phase.READY
    now_ms: int = 0
    stored_times: int = 0
    local_times: int = 0
    context_level: int = 0
    stored_at_ms: int = 0
    scheduled_level: int = 0
    due_ms: int = 0
    faults_left: int = 0
    copies: tuple[Copy, ...] = ()
    deliveries: tuple[Delivery, ...] = ()


@attrs.frozen
class Pull:
    """The consumer pulls the stored message and hands it to the listener."""


@attrs.frozen
class ListenerReturns:
    """The listener returns ``status`` (None: it threw), having set ``ack_index`` and the ``delay_level``."""

    status: ConsumeStatus | None
    ack_index: int = ACK_INDEX_DEFAULT
    delay_level: int = 0


@attrs.frozen
class BrokerAnswers:
    """The broker handles CONSUMER_SEND_MSG_BACK and answers."""


@attrs.frozen
class SendBackFails:
    """CONSUMER_SEND_MSG_BACK times out or fails on the wire (an injected fault)."""


@attrs.frozen
class FallbackStored:
    """The consumer's own send to %RETRY%<group> reaches the broker, which stores it.

    ``retried``: its first attempt failed (an injected fault) and the producer's retry stored it (RETRY-16).
    """

    retried: bool = False


@attrs.frozen
class FallbackFails:
    """The consumer's own send fails too (an injected fault)."""


@attrs.frozen
class TimePasses:
    """The clock moves to the next due time."""


@attrs.frozen
class ScheduleDelivers:
    """The schedule service moves the due copy to its real topic."""


@attrs.frozen
class LocalReconsume:
    """The consumer's 5 s timer fires: the message is consumed again."""


Action = (
    Pull | ListenerReturns | BrokerAnswers | SendBackFails | FallbackStored | FallbackFails | TimePasses
    | ScheduleDelivers | LocalReconsume
)


def _broker_max(state: RetryState) -> int:
    return state.consumer_max if state.client_version >= VERSION_V3_4_9 else state.group_max


@CLAUSES.oracle("RETRY-3", "RETRY-17", "RETRY-27")
def enabled(state: RetryState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state``.

    Nothing happens once the message is consumed, dead-lettered (RETRY-27) or dropped. A scheduled copy moves
    only when due (RETRY-3); a local re-consume only after its 5 s (RETRY-17); injected faults only while the
    budget lasts.
    """
    phase = state.phase
    match action:
        case Pull():
            return phase is Phase.READY
        case ListenerReturns():
            return phase is Phase.CONSUMING
        case BrokerAnswers():
            return phase is Phase.SENDING_BACK
        case SendBackFails():
            return phase is Phase.SENDING_BACK and state.faults_left > 0
        case FallbackStored(retried=retried):
            return phase is Phase.FALLBACK and (not retried or state.faults_left > 0)
        case FallbackFails():
            return phase is Phase.FALLBACK and state.faults_left > 0
        case TimePasses():
            return phase in (Phase.SCHEDULED, Phase.LOCAL_WAIT) and state.now_ms < state.due_ms
        case ScheduleDelivers():
            return phase is Phase.SCHEDULED and schedule_due(
                state.stored_at_ms, state.scheduled_level, state.now_ms
            )
        case LocalReconsume():
            return phase is Phase.LOCAL_WAIT and state.now_ms >= state.due_ms
    return False


def _store_copy(state: RetryState, result: SendBackResult, path: Path, retried: bool = False) -> RetryState:
    dead = result.target is Target.DLQ
    copy = Copy(dead, result.reconsume_times, state.now_ms, path, state.context_level, len(state.deliveries),
                retried, state.local_times)
    base = attrs.evolve(
        state, stored_times=result.reconsume_times, local_times=result.reconsume_times,
        stored_at_ms=state.now_ms, copies=(*state.copies, copy),
    )
    if result.delay_level > 0:
        return attrs.evolve(
            base, phase=Phase.SCHEDULED, scheduled_level=result.delay_level,
            due_ms=state.now_ms + delay_millis(result.delay_level),
        )
    return attrs.evolve(
        base, phase=Phase.DEAD if dead else Phase.READY, scheduled_level=0, due_ms=state.now_ms
    )


@CLAUSES.oracle("RETRY-5", "RETRY-13", "RETRY-14", "RETRY-15", "RETRY-16", "RETRY-17", "RETRY-18")
def step(state: RetryState, action: Action) -> RetryState:
    """The state after ``action`` (which must be enabled).

    The listener result is handled by :func:`after_listener` (RETRY-13, RETRY-14); a failure in clustering
    mode is sent back (RETRY-15) and answered by :func:`consumer_send_back`, which reads the stored
    reconsumeTimes (RETRY-18) and may drop the message (RETRY-5); a failed send back makes the consumer send
    :func:`client_retry_message` itself (a retried attempt without its count), handled by
    :func:`retry_topic_send` (RETRY-16); when that fails too
    the message is re-consumed locally with reconsumeTimes + 1 after 5000 ms (RETRY-17).
    """
    require_enabled(enabled, state, action, Action)
    match action:
        case Pull():
            delivery = Delivery(state.stored_times, state.now_ms, local=False)
            return attrs.evolve(
                state, phase=Phase.CONSUMING, local_times=state.stored_times,
                deliveries=(*state.deliveries, delivery),
            )
        case ListenerReturns(status=status, ack_index=ack_index, delay_level=level):
            outcome = after_listener(status, 1, state.message_model, ack_index)
            if outcome.succeeded:
                return attrs.evolve(state, phase=Phase.CONSUMED)
            if outcome.dropped:
                return attrs.evolve(state, phase=Phase.DISCARDED)
            return attrs.evolve(state, phase=Phase.SENDING_BACK, context_level=level)
        case BrokerAnswers():
            result = consumer_send_back(
                state.stored_times, state.context_level, state.consumer_max, state.client_version, GROUP,
                retry_queue_nums=state.retry_queue_nums, group_retry_max_times=state.group_max,
            )
            if result.target is Target.DROPPED:
                return attrs.evolve(state, phase=Phase.DISCARDED)
            if result.code != ResponseCode.SUCCESS:
                return attrs.evolve(state, phase=Phase.FALLBACK)
            return _store_copy(state, result, Path.BROKER)
        case SendBackFails():
            return attrs.evolve(state, phase=Phase.FALLBACK, faults_left=state.faults_left - 1)
        case FallbackStored(retried=retried):
            message = client_retry_message(TOPIC, state.local_times, state.consumer_max, GROUP, retried=retried)
            result = retry_topic_send(
                message.header_reconsume_times, message.delay_level, message.header_max_reconsume_times,
                state.client_version, GROUP, group_retry_max_times=state.group_max,
            )
            if retried:
                state = attrs.evolve(state, faults_left=state.faults_left - 1)
            return _store_copy(state, result, Path.CLIENT, retried)
        case FallbackFails():
            return attrs.evolve(
                state, phase=Phase.LOCAL_WAIT, local_times=state.local_times + 1,
                due_ms=state.now_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS, faults_left=state.faults_left - 1,
            )
        case TimePasses():
            return attrs.evolve(state, now_ms=state.due_ms)
        case ScheduleDelivers():
            dead = bool(state.copies) and state.copies[-1].dead
            return attrs.evolve(state, phase=Phase.DEAD if dead else Phase.READY)
        case LocalReconsume():
            delivery = Delivery(state.local_times, state.now_ms, local=True)
            return attrs.evolve(state, phase=Phase.CONSUMING, deliveries=(*state.deliveries, delivery))
    raise ValueError(f"unknown action {action!r}")


# ------------------------------------------------------------------------------------------------------------
# Invariants (computed from the protocol tables, not from the oracles above)
# ------------------------------------------------------------------------------------------------------------


def _expected_level(copy: Copy) -> int:
    # The broker honours a positive level the listener asked for; otherwise (and always for the client's own
    # send) the level is 3 + the previous count, i.e. the copy's count + 2.
    asked = copy.context_level if copy.path is Path.BROKER else 0
    level = asked if asked > 0 else copy.reconsume_times + 2
    if copy.retried:
        # A retried client send keeps DELAY 3 + the consumer's count but restarts its count at 0 (RETRY-16).
        level = copy.made_from + 3
    return min(level, len(DELAY_LEVEL_MILLIS))


def _dlq_exactly_at_threshold(state: RetryState) -> bool:
    limit = _broker_max(state)
    for copy in state.copies:
        if copy.path is Path.BROKER:
            should_die = copy.reconsume_times - 1 >= limit or copy.context_level < 0
        elif copy.retried:
            # Neither count nor max reaches the broker: 0 against the group's retryMaxTimes (RETRY-16, RETRY-11).
            should_die = 0 >= state.group_max
        else:
            should_die = copy.reconsume_times >= limit
        if copy.dead != should_die:
            return False
    return True


def _delivery_sequence(state: RetryState) -> bool:
    deliveries = state.deliveries
    if deliveries and deliveries[0].reconsume_times != state.start_times:
        return False
    restarts = {c.deliveries_before for c in state.copies if c.retried}
    last_store = deliveries[0].reconsume_times if deliveries else 0
    for n, (before, after) in enumerate(itertools.pairwise(deliveries), start=1):
        if n in restarts:
            # The copy a retried fallback send stored starts again at 0 (RETRY-16).
            if after.reconsume_times != 0:
                return False
            last_store = 0
            continue
        one_more = after.reconsume_times == before.reconsume_times + 1
        if after.local:
            if not one_more:
                return False
            continue
        if not (one_more or (before.local and after.reconsume_times == last_store + 1)):
            return False
        last_store = after.reconsume_times
    return True


def _redelivery_not_early(state: RetryState) -> bool:
    live = [c for c in state.copies if not c.dead]
    store_deliveries = [d for d in state.deliveries if not d.local][1:]
    for copy, delivery in zip(live, store_deliveries, strict=False):
        if delivery.at_ms < copy.stored_at_ms + DELAY_LEVEL_MILLIS[_expected_level(copy) - 1]:
            return False
    for before, after in itertools.pairwise(state.deliveries):
        if after.local and after.at_ms < before.at_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS:
            return False
    return True


def _dead_is_final(state: RetryState) -> bool:
    for n, copy in enumerate(state.copies):
        if copy.dead:
            return (
                n == len(state.copies) - 1
                and len(state.deliveries) == copy.deliveries_before
                and state.phase in (Phase.SCHEDULED, Phase.DEAD)
            )
    return state.phase is not Phase.DEAD


def _broadcast_drops(state: RetryState) -> bool:
    if state.message_model is not MessageModel.BROADCASTING:
        return True
    return not state.copies and len(state.deliveries) <= 1 and state.phase not in (
        Phase.SENDING_BACK, Phase.FALLBACK, Phase.LOCAL_WAIT,
    )


def _copies_count_up_by_one(before: RetryState, _action: Action, after: RetryState) -> bool:
    if len(after.copies) == len(before.copies):
        return True
    copy = after.copies[-1]
    source = before.stored_times if copy.path is Path.BROKER else before.local_times
    expected = 0 if copy.retried else source + 1
    return len(after.copies) == len(before.copies) + 1 and copy.reconsume_times == expected


def _no_retry_queue_discards(before: RetryState, action: Action, after: RetryState) -> bool:
    if not isinstance(action, BrokerAnswers) or before.retry_queue_nums > 0:
        return True
    return after.phase is Phase.DISCARDED and after.copies == before.copies


def _final_is_final(before: RetryState, _action: Action, after: RetryState) -> bool:
    return not before.phase.final


def _retry_copy_is_delayed(before: RetryState, _action: Action, after: RetryState) -> bool:
    # A new copy bound for %RETRY% always passes through the schedule topic; so does a client's dead letter.
    if len(after.copies) == len(before.copies):
        return True
    copy = after.copies[-1]
    via_schedule = not copy.dead or copy.path is Path.CLIENT
    scheduled = after.phase is Phase.SCHEDULED
    return scheduled == via_schedule and (after.phase is Phase.DEAD) == (not via_schedule)


INVARIANTS: tuple[Invariant[RetryState], ...] = (
    Invariant("dlq exactly at the threshold", ("RETRY-6", "RETRY-7", "RETRY-8", "RETRY-11"),
              _dlq_exactly_at_threshold),
    Invariant("deliveries count up by one", ("RETRY-25", "RETRY-17", "RETRY-18"), _delivery_sequence),
    Invariant("redelivery not before its delay", ("RETRY-26", "RETRY-2", "RETRY-3", "RETRY-8", "RETRY-16"),
              _redelivery_not_early),
    Invariant("dead letter is final", ("RETRY-27", "RETRY-7"), _dead_is_final),
    Invariant("broadcasting drops failures", ("RETRY-14",), _broadcast_drops),
)

STEP_INVARIANTS: tuple[StepInvariant[RetryState, Action], ...] = (
    StepInvariant("each copy is one more", ("RETRY-9", "RETRY-16", "RETRY-18"), _copies_count_up_by_one),
    StepInvariant("retryQueueNums <= 0 drops", ("RETRY-5", "RETRY-4"), _no_retry_queue_discards),
    StepInvariant("nothing after the end", ("RETRY-27", "RETRY-5", "RETRY-14"), _final_is_final),
    StepInvariant("retry copies are delayed", ("RETRY-8", "RETRY-12", "RETRY-7"), _retry_copy_is_delayed),
)


def _candidates(levels: tuple[int, ...]) -> tuple[Action, ...]:
    listener: list[Action] = [
        ListenerReturns(ConsumeStatus.CONSUME_SUCCESS),
        ListenerReturns(ConsumeStatus.CONSUME_SUCCESS, ack_index=-1),
        ListenerReturns(None),
    ]
    listener += [ListenerReturns(ConsumeStatus.RECONSUME_LATER, delay_level=level) for level in levels]
    return (
        Pull(), *listener, BrokerAnswers(), SendBackFails(), FallbackStored(), FallbackStored(retried=True),
        FallbackFails(), TimePasses(), ScheduleDelivers(), LocalReconsume(),
    )


def model(
    max_reconsume_times: int = 3,
    faults: int = 4,
    listener_levels: tuple[int, ...] = (0, 1, -1),
    high_start: int | None = 15,
) -> Model[RetryState, Action]:
    """One message through its retry chain, for each of these starting points.

    A new client (maxReconsumeTimes ``max_reconsume_times`` sent in requests) and an old one (version
    V3_0_11, so the group's retryMaxTimes = ``max_reconsume_times`` rules); a group with retryQueueNums 0; a
    broadcasting consumer; and, when ``high_start`` is set, a message already at that reconsumeTimes with a
    max of ``high_start + 2`` so that delay levels pass the table's end. ``faults`` RPC failures may be
    injected (a failed first attempt of the client's send that a retry then stores counts as one, explored for
    the first copy of a chain that starts at 0); the listener may ask for each of ``listener_levels`` when it
    fails.
    """
    def start(model_: MessageModel, version: int, consumer_max: int, group_max: int, queues: int,
              times: int = 0) -> RetryState:
        return RetryState(model_, version, consumer_max, group_max, queues, times, stored_times=times,
                          local_times=times, faults_left=faults)

    new, old = VERSION_V4_9_8, VERSION_V3_0_11
    group_default, queues = DEFAULT_MAX_RECONSUME_TIMES, DEFAULT_RETRY_QUEUE_NUMS
    initial = [
        start(MessageModel.CLUSTERING, new, max_reconsume_times, group_default, queues),
        start(MessageModel.CLUSTERING, old, group_default, max_reconsume_times, queues),
        start(MessageModel.CLUSTERING, new, max_reconsume_times, group_default, 0),
        start(MessageModel.BROADCASTING, new, max_reconsume_times, group_default, queues),
    ]
    if high_start is not None:
        initial.append(start(MessageModel.CLUSTERING, new, high_start + 2, group_default, queues, high_start))
    candidates = _candidates(listener_levels)
    unretried = tuple(a for a in candidates if a != FallbackStored(retried=True))

    def actions(state: RetryState) -> tuple[Action, ...]:
        # A retried fallback send restarts the count at 0 (RETRY-16), which makes chains long: it is explored
        # for the first copy of a chain that starts at 0 only.
        return candidates if state.start_times == 0 and not state.copies else unretried

    return Model(
        area="consume_retry",
        bounds=(
            f"1 message, max {max_reconsume_times} (new and old client), retryQueueNums 1 and 0, "
            f"broadcasting, start {high_start}; {faults} RPC faults; listener levels {listener_levels}; "
            "a retried fallback send for a chain's first copy"
        ),
        initial=tuple(initial),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
