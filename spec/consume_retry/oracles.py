"""Consume retry: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.consume_retry.clauses import CLAUSES
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
    VERSION_V3_4_9,
    VERSION_V4_9_8,
    ConsumeStatus,
    MessageModel,
    Property,
    ResponseCode,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

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


@CLAUSES.oracle("RETRY-1", "RETRY-3")
def schedule_due(stored_at_ms: int, level: int, now_ms: int, table: tuple[int, ...] = DELAY_LEVEL_MILLIS) -> bool:
    """Whether a message stored at ``stored_at_ms`` with ``level`` is moved to its real topic at ``now_ms``.

    It is due at ``stored_at_ms + delay_millis(level, table)`` (the broker's messageDelayLevel, RETRY-1); a due
    time later than ``now_ms + delay`` (the clock went back) is corrected to ``now_ms`` (RETRY-3).

    pre: 1 <= level <= 2 * MAX_DELAY_LEVEL
    pre: 0 <= stored_at_ms <= 10**13 and 0 <= now_ms <= 10**13
    pre: 1 <= len(table) <= 3 and all(0 <= t <= 10**9 for t in table)
    post: not __return__ or now_ms - stored_at_ms >= min(table) or now_ms < stored_at_ms
    post: __return__ or now_ms - stored_at_ms < max(table)
    post: __return__ or now_ms >= stored_at_ms
    """
    delay = delay_millis(level, table)
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


@CLAUSES.oracle("RETRY-1", "RETRY-4", "RETRY-5", "RETRY-6", "RETRY-7", "RETRY-8", "RETRY-9")
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
    max_level: int = MAX_DELAY_LEVEL,
) -> SendBackResult:
    """The broker's answer to CONSUMER_SEND_MSG_BACK for a message stored with ``reconsume_times``.

    Checks in order (RETRY-4): unknown group -> SUBSCRIPTION_GROUP_NOT_EXIST; broker not writable ->
    NO_PERMISSION; ``retry_queue_nums <= 0`` -> SUCCESS, dropped (RETRY-5); retry topic not writable ->
    NO_PERMISSION; no message at the offset -> SYSTEM_ERROR. The max is the group's, or the header's when
    ``request_version >= V3_4_9`` and present (RETRY-6; 4.9.0 fails when absent). ``reconsume_times >= max``
    or ``delay_level < 0`` -> %DLQ%<group>, not delayed (RETRY-7); else %RETRY%<group> delayed by
    ``delay_level`` if > 0 else ``3 + reconsume_times``, clamped (RETRY-8). The copy has
    ``reconsume_times + 1`` (RETRY-9); a failed put answers SYSTEM_ERROR. ``max_level`` is the broker's max delay
    level (the length of its messageDelayLevel, RETRY-1).

    pre: 0 <= reconsume_times <= 40 and -2 <= delay_level <= 40 and 1 <= max_level <= 40
    pre: header_max_reconsume_times is None or -2 <= header_max_reconsume_times <= 40
    pre: -2 <= group_retry_max_times <= 40 and -1 <= retry_queue_nums <= 4 and len(group) <= 2
    post: (__return__.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) == (not group_known)
    post: __return__.target != Target.DROPPED or retry_queue_nums <= 0
    post: (__return__.target in (Target.RETRY, Target.DLQ)) == (__return__.code == ResponseCode.SUCCESS and __return__.topic != "")
    post: __return__.target not in (Target.RETRY, Target.DLQ) or __return__.reconsume_times == reconsume_times + 1
    post: __return__.target != Target.RETRY or reconsume_times < (header_max_reconsume_times if request_version >= VERSION_V3_4_9 and header_max_reconsume_times is not None else group_retry_max_times)
    post: __return__.target != Target.DLQ or delay_level < 0 or reconsume_times >= (header_max_reconsume_times if request_version >= VERSION_V3_4_9 and header_max_reconsume_times is not None else group_retry_max_times)
    post: __return__.target != Target.RETRY or 1 <= __return__.delay_level <= max_level
    post: __return__.target != Target.RETRY or delay_level != 0 or __return__.delay_level == min(reconsume_times + RETRY_BASE_DELAY_LEVEL, max_level)
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
        effective_delay_level(delay_level, max_level), reconsume_times + 1,
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


@CLAUSES.oracle("RETRY-1", "RETRY-6", "RETRY-11", "RETRY-12")
def retry_topic_send(
    header_reconsume_times: int | None,
    delay_level: int,
    header_max_reconsume_times: int | None = DEFAULT_MAX_RECONSUME_TIMES,
    request_version: int = VERSION_V4_9_8,
    group: str = "G",
    group_known: bool = True,
    group_retry_max_times: int = DEFAULT_MAX_RECONSUME_TIMES,
    profile: VersionProfile = DEFAULT_PROFILE,
    max_level: int = MAX_DELAY_LEVEL,
) -> SendBackResult:
    """Where the broker stores a plain SEND_MESSAGE to ``%RETRY%<group>`` carrying ``DELAY = delay_level``.

    Unknown group -> SUBSCRIPTION_GROUP_NOT_EXIST. The max is the group's, or the header's when the request
    version >= V3_4_9 and it is present (RETRY-6; absent fails in 4.9.0-4.9.2) (RETRY-11). The header
    reconsumeTimes (absent: 0) >= max -> %DLQ%<group>, else %RETRY%<group>; either way the copy keeps the
    header's reconsumeTimes, and the DELAY property still applies, also on the dead-letter path (RETRY-12), clamped
    to the broker's ``max_level`` (RETRY-1).

    pre: header_reconsume_times is None or 0 <= header_reconsume_times <= 40
    pre: 1 <= max_level <= 40
    pre: header_max_reconsume_times is None or -2 <= header_max_reconsume_times <= 40
    pre: -2 <= delay_level <= 40 and -2 <= group_retry_max_times <= 40 and len(group) <= 2
    post: (__return__.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) == (not group_known)
    post: __return__.code != ResponseCode.SUCCESS or __return__.reconsume_times == (header_reconsume_times or 0)
    post: __return__.code != ResponseCode.SUCCESS or __return__.delay_level == max(0, min(delay_level, max_level))
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
    level = effective_delay_level(delay_level, max_level)
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
