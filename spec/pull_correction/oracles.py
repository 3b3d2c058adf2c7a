"""Pull correction: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.protocol import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUME_QUEUE_ENTRY_BYTES,
    CONSUME_QUEUE_FILE_ENTRIES,
    LONG_POLLING_CHECK_INTERVAL_MS,
    MASTER_ID,
    MAX_FILTER_SCAN_BYTES,
    MAX_TRANSFER_BYTES_ON_MESSAGE_IN_DISK,
    MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY,
    MAX_TRANSFER_COUNT_ON_MESSAGE_IN_DISK,
    MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY,
    PULL_BATCH_SIZE,
    PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL,
    PULL_TIME_DELAY_MS_WHEN_EXCEPTION,
    SHORT_POLLING_TIME_MS,
    WHICH_BROKER_WHEN_CONSUME_SLOWLY,
    GetMessageStatus,
    PullStatus,
    ResponseCode,
)
from rocketspec.spec.pull_correction.clauses import CLAUSES
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# Statuses whose next begin offset is scan progress rather than a correction.
SCAN_STATUSES = (GetMessageStatus.FOUND, GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING)
# The codes the client turns into a PullStatus.
PULL_CODES = (
    ResponseCode.SUCCESS,
    ResponseCode.PULL_NOT_FOUND,
    ResponseCode.PULL_RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED,
)
# Statuses answered PULL_NOT_FOUND: the first two only for a pull at offset 0, the last two (WAIT_STATUSES) always.
NOT_FOUND_STATUSES = (
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE,
    GetMessageStatus.OFFSET_FOUND_NULL,
    GetMessageStatus.OFFSET_OVERFLOW_ONE,
)
WAIT_STATUSES = (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE)
# What PULL_OFFSET_MOVED may become (a plain slave downgrades it).
MOVED_CODES = (ResponseCode.PULL_OFFSET_MOVED, ResponseCode.PULL_RETRY_IMMEDIATELY)
SUBSCRIPTION_STATE_CODES = (
    ResponseCode.SUBSCRIPTION_NOT_EXIST,
    ResponseCode.SUBSCRIPTION_NOT_LATEST,
    ResponseCode.FILTER_DATA_NOT_EXIST,
    ResponseCode.FILTER_DATA_NOT_LATEST,
)
NO_MESSAGE_STATUSES = (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG)
ERROR_DELAYS_MS = (PULL_TIME_DELAY_MS_WHEN_EXCEPTION, PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL)
# The release whose OFFSET_OVERFLOW_BADLY correction is always max (PULL-5).
V4_9_4 = VersionProfile.of("4.9.4")
# maxFilterMessageCount is max(16000, maxMsgNums * 20) bytes of consume-queue entries.
MIN_SCAN_ENTRIES = MAX_FILTER_SCAN_BYTES // CONSUME_QUEUE_ENTRY_BYTES


# --------------------------------------------------------------------------------------------------------------
# The store's decision
# --------------------------------------------------------------------------------------------------------------


class CqEntry(enum.Enum):
    """One consume-queue entry as a scan meets it.

    ``MATCH``: its message is in the commit log and passes the filter; ``NO_MATCH``: filtered out (by the
    consume queue's tags code or the commit log's properties). ``GONE_*`` entries point at commit-log data that
    was deleted, and pass (``GONE_MATCH``) or fail the consume-queue filter; deletion runs from the head, so
    they come before every entry whose data remains.
    """

    MATCH = "MATCH"
    NO_MATCH = "NO_MATCH"
    GONE_MATCH = "GONE_MATCH"
    GONE_NO_MATCH = "GONE_NO_MATCH"


GONE_ENTRIES = (CqEntry.GONE_MATCH, CqEntry.GONE_NO_MATCH)


@attrs.frozen
class ScanOutcome:
    """What a consume-queue scan found: its status, the entries it went over and the messages it took."""

    status: GetMessageStatus
    entries_scanned: int
    messages: int


@attrs.frozen
class StoreDecision:
    """``GetMessageResult`` as far as offsets go: the status, the next begin offset and the messages found."""

    status: GetMessageStatus
    next_begin_offset: int
    messages: int = 0


def _batch_full(taken: int, max_msg_nums: int, message_bytes: int, in_memory: bool) -> bool:
    if taken == 0:
        return False
    if max_msg_nums <= taken:
        return True
    byte_limit = MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY if in_memory else MAX_TRANSFER_BYTES_ON_MESSAGE_IN_DISK
    count_limit = MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY if in_memory else MAX_TRANSFER_COUNT_ON_MESSAGE_IN_DISK
    return (taken + 1) * message_bytes > byte_limit or taken > count_limit - 1


@CLAUSES.oracle("PULL-8", "PULL-9")
def scan_queue(
    entries: tuple[CqEntry, ...],
    *,
    max_msg_nums: int = PULL_BATCH_SIZE,
    message_bytes: int = 1024,
    in_memory: bool = True,
) -> ScanOutcome:
    """Scan consume-queue ``entries`` (from the requested offset to the end of its buffer) (PULL-8, PULL-9).

    An entry is examined only while the batch is not full: ``max_msg_nums`` messages, or 32 messages / 256 KiB
    in memory (8 / 64 KiB on disk), checked once a message was taken; at most ``max(800, max_msg_nums)`` entries
    are looked at. A filtered entry sets NO_MATCHED_MESSAGE and a gone entry MESSAGE_WAS_REMOVING while nothing
    was taken; a taken message sets FOUND. After a gone entry is read, the store skips the rest of that deleted
    commit-log file; the gone entries of one scan are taken to share one file (the count and the messages do not
    depend on it, only which of the two statuses names an empty scan). Messages are ``message_bytes`` each.

    pre: 1 <= len(entries) <= 3
    pre: 1 <= max_msg_nums <= 4
    pre: 1 <= message_bytes <= 300000
    pre: all(entries[i - 1] in GONE_ENTRIES or entries[i] not in GONE_ENTRIES for i in range(1, len(entries)))
    post: 1 <= __return__.entries_scanned <= len(entries) and (__return__.entries_scanned == len(entries) or __return__.messages >= 1)
    post: __return__.messages == entries[:__return__.entries_scanned].count(CqEntry.MATCH) <= max_msg_nums
    post: (__return__.status == GetMessageStatus.FOUND) == (__return__.messages > 0)
    post: __return__.messages or CqEntry.GONE_MATCH in entries or __return__.status == GetMessageStatus.NO_MATCHED_MESSAGE
    """  # noqa: E501
    status = GetMessageStatus.NO_MATCHED_MESSAGE
    limit = max(MIN_SCAN_ENTRIES, max_msg_nums)
    taken = 0
    scanned = 0
    skipping_removed_file = False
    for entry in entries[:limit]:
        gone = entry in GONE_ENTRIES
        if skipping_removed_file and gone:
            scanned += 1
            continue
        if _batch_full(taken, max_msg_nums, message_bytes, in_memory):
            break
        scanned += 1
        if entry in (CqEntry.NO_MATCH, CqEntry.GONE_NO_MATCH):
            if taken == 0:
                status = GetMessageStatus.NO_MATCHED_MESSAGE
            continue
        if entry is CqEntry.GONE_MATCH:
            if taken == 0:
                status = GetMessageStatus.MESSAGE_WAS_REMOVING
            skipping_removed_file = True
            continue
        taken += 1
        status = GetMessageStatus.FOUND
        skipping_removed_file = False
    return ScanOutcome(status, scanned, taken)


@CLAUSES.oracle("PULL-8")
def full_batch(
    offset: int,
    max_offset: int,
    *,
    max_msg_nums: int = PULL_BATCH_SIZE,
    cq_file_entries: int = CONSUME_QUEUE_FILE_ENTRIES,
) -> ScanOutcome:
    """The scan of a queue whose entries all match and are in memory, messages small (PULL-8).

    The buffer runs to the end of the offset's consume-queue file or to ``max_offset``; the batch takes
    ``min(max_msg_nums, 32)`` messages at most; every scanned entry is taken.

    pre: 0 <= offset < max_offset <= 10**6
    pre: 1 <= max_msg_nums <= 1024
    pre: 1 <= cq_file_entries <= 64
    post: __return__.status == GetMessageStatus.FOUND
    post: __return__.messages == __return__.entries_scanned
    post: 1 <= __return__.entries_scanned <= max_offset - offset
    post: __return__.entries_scanned <= min(max_msg_nums, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
    post: (offset + __return__.entries_scanned) % cq_file_entries == 0 or __return__.entries_scanned == max_offset - offset or __return__.entries_scanned == min(max_msg_nums, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
    """  # noqa: E501
    in_buffer = min(max_offset - offset, cq_file_entries - offset % cq_file_entries)
    taken = min(in_buffer, max(MIN_SCAN_ENTRIES, max_msg_nums), max_msg_nums, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
    return ScanOutcome(GetMessageStatus.FOUND, taken, taken)


@CLAUSES.oracle("PULL-7")
def next_offset_correction(old_offset: int, new_offset: int, *, is_slave: bool, offset_check_in_slave: bool) -> int:
    """The offset the store reports after a correction from ``old_offset`` to ``new_offset`` (PULL-7).

    post: __return__ in (old_offset, new_offset)
    post: (__return__ == new_offset) or (is_slave and not offset_check_in_slave)
    post: (__return__ == old_offset) or not is_slave or offset_check_in_slave
    """
    if not is_slave or offset_check_in_slave:
        return new_offset
    return old_offset


def roll_next_file(offset: int, cq_file_entries: int) -> int:
    """The first offset of the consume-queue file after the one holding ``offset`` (``rollNextFile``)."""
    return offset + cq_file_entries - offset % cq_file_entries


@CLAUSES.oracle("PULL-1", "PULL-2", "PULL-3", "PULL-4", "PULL-5", "PULL-6", "PULL-7")
def bounds_decision(
    offset: int,
    min_offset: int,
    max_offset: int,
    *,
    has_queue: bool = True,
    entry_readable: bool = True,
    is_slave: bool = False,
    offset_check_in_slave: bool = False,
    cq_file_entries: int = CONSUME_QUEUE_FILE_ENTRIES,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> StoreDecision | None:
    """The store's decision when the offset cannot be read, else None: a scan decides (PULL-1 to PULL-7).

    In order: no queue (``has_queue`` false) → NO_MATCHED_LOGIC_QUEUE, next 0 (PULL-1); ``max_offset == 0`` →
    NO_MESSAGE_IN_QUEUE, next 0 (PULL-2); ``offset < min`` → OFFSET_TOO_SMALL, next min (PULL-3); ``offset ==
    max`` → OFFSET_OVERFLOW_ONE, next offset (PULL-4); ``offset > max`` → OFFSET_OVERFLOW_BADLY, next max, or
    before 4.9.4 min when min is 0 (PULL-5); the entry's consume-queue file gone (``entry_readable`` false) →
    OFFSET_FOUND_NULL, next the start of the following file (PULL-6). Every such next goes through
    :func:`next_offset_correction` (PULL-7): a slave without ``offset_check_in_slave`` reports ``offset``.
    Only a consume-queue file that is not the last can be gone, hence the precondition on ``entry_readable``.

    pre: 0 <= min_offset <= max_offset <= 10**6
    pre: 0 <= offset <= 10**6
    pre: 1 <= cq_file_entries <= 10**6
    pre: entry_readable or not min_offset <= offset < max_offset or offset // cq_file_entries < (max_offset - 1) // cq_file_entries
    post: (__return__ is None) == (has_queue and min_offset <= offset < max_offset and entry_readable)
    post: __return__ is None or __return__.messages == 0
    post: (__return__ is not None and __return__.status == GetMessageStatus.OFFSET_TOO_SMALL) == (has_queue and 0 < max_offset and offset < min_offset)
    post: (__return__ is not None and __return__.status == GetMessageStatus.OFFSET_OVERFLOW_ONE) == (has_queue and 0 < max_offset == offset)
    post: (__return__ is not None and __return__.status == GetMessageStatus.OFFSET_OVERFLOW_BADLY) == (has_queue and 0 < max_offset < offset)
    post: __return__ is None or not has_queue or min_offset <= __return__.next_begin_offset <= max_offset or __return__.next_begin_offset == offset and is_slave and not offset_check_in_slave
    post: __return__ is None or not is_slave or offset_check_in_slave or __return__.next_begin_offset == offset
    post: __return__ is None or __return__.status != GetMessageStatus.OFFSET_TOO_SMALL or is_slave and not offset_check_in_slave or __return__.next_begin_offset == min_offset
    post: __return__ is None or __return__.status != GetMessageStatus.OFFSET_OVERFLOW_BADLY or is_slave and not offset_check_in_slave or __return__.next_begin_offset == (0 if min_offset == 0 and profile < V4_9_4 else max_offset)
    """  # noqa: E501

    def corrected(new_offset: int) -> int:
        return next_offset_correction(
            offset, new_offset, is_slave=is_slave, offset_check_in_slave=offset_check_in_slave
        )

    if not has_queue:
        return StoreDecision(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, corrected(0))
    if max_offset == 0:
        return StoreDecision(GetMessageStatus.NO_MESSAGE_IN_QUEUE, corrected(0))
    if offset < min_offset:
        return StoreDecision(GetMessageStatus.OFFSET_TOO_SMALL, corrected(min_offset))
    if offset == max_offset:
        return StoreDecision(GetMessageStatus.OFFSET_OVERFLOW_ONE, corrected(offset))
    if offset > max_offset:
        # ISSUE #4215: correcting to 0 made consumers re-consume the whole queue; 4.9.4 always corrects to max.
        if min_offset == 0 and profile < V4_9_4:
            return StoreDecision(GetMessageStatus.OFFSET_OVERFLOW_BADLY, corrected(min_offset))
        return StoreDecision(GetMessageStatus.OFFSET_OVERFLOW_BADLY, corrected(max_offset))
    if not entry_readable:
        return StoreDecision(GetMessageStatus.OFFSET_FOUND_NULL, corrected(roll_next_file(offset, cq_file_entries)))
    return None


@CLAUSES.oracle("PULL-1", "PULL-2", "PULL-3", "PULL-4", "PULL-5", "PULL-6", "PULL-7", "PULL-8", "PULL-25")
def store_status(
    offset: int,
    min_offset: int,
    max_offset: int,
    *,
    has_queue: bool = True,
    entry_readable: bool = True,
    scan: ScanOutcome | None = None,
    is_slave: bool = False,
    offset_check_in_slave: bool = False,
    cq_file_entries: int = CONSUME_QUEUE_FILE_ENTRIES,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> StoreDecision:
    """The store's status and next begin offset for a pull at ``offset`` (PULL-1 to PULL-8, PULL-25).

    :func:`bounds_decision` when the offset cannot be read (PULL-1, PULL-2, PULL-3, PULL-4, PULL-5, PULL-6,
    PULL-7); otherwise the ``scan`` of the consume queue decides (default: :func:`full_batch`, every entry
    matching) and next = offset + entries scanned, real progress that is not corrected, on a slave either
    (PULL-8). On a master, or a slave with ``offset_check_in_slave``, the next offset is then always within
    [min, max] (PULL-25).

    pre: 0 <= min_offset <= max_offset <= 64
    pre: 0 <= offset <= 64
    pre: 1 <= cq_file_entries <= 8
    pre: entry_readable or not min_offset <= offset < max_offset or offset // cq_file_entries < (max_offset - 1) // cq_file_entries
    pre: scan is None or not min_offset <= offset < max_offset or 1 <= scan.entries_scanned <= max_offset - offset
    pre: scan is None or scan.status in SCAN_STATUSES
    post: __return__.status != GetMessageStatus.FOUND or __return__.next_begin_offset > offset
    post: not has_queue or min_offset <= __return__.next_begin_offset <= max_offset or __return__.next_begin_offset == offset and is_slave and not offset_check_in_slave
    """  # noqa: E501
    decision = bounds_decision(
        offset,
        min_offset,
        max_offset,
        has_queue=has_queue,
        entry_readable=entry_readable,
        is_slave=is_slave,
        offset_check_in_slave=offset_check_in_slave,
        cq_file_entries=cq_file_entries,
        profile=profile,
    )
    if decision is not None:
        return decision
    outcome = scan if scan is not None else full_batch(offset, max_offset, cq_file_entries=cq_file_entries)
    return StoreDecision(outcome.status, offset + outcome.entries_scanned, outcome.messages)


# --------------------------------------------------------------------------------------------------------------
# The broker's answer
# --------------------------------------------------------------------------------------------------------------


@CLAUSES.oracle("PULL-16", "PULL-17")
def pull_precheck(
    *,
    broker_readable: bool = True,
    group_exists: bool = True,
    group_consume_enable: bool = True,
    topic_exists: bool = True,
    topic_readable: bool = True,
    queue_id: int = 0,
    read_queue_nums: int = 4,
    has_subscription_flag: bool = True,
    subscription_parses: bool = True,
    group_info_exists: bool = True,
    broadcasting: bool = False,
    consume_broadcast_enable: bool = True,
    subscription_exists: bool = True,
    broker_sub_version: int = 0,
    request_sub_version: int = 0,
    tag_expression: bool = True,
    filter_data_exists: bool = True,
    filter_data_version: int = 0,
    property_filter_enable: bool = False,
    store_available: bool = True,
) -> ResponseCode | None:
    """The code a pull fails with before (or instead of) a store decision, or None to go on (PULL-16, PULL-17).

    First failure wins (PULL-16): broker permission not readable → NO_PERMISSION; no subscription group config
    → SUBSCRIPTION_GROUP_NOT_EXIST; group consumeEnable off → NO_PERMISSION; no topic config → TOPIC_NOT_EXIST;
    topic permission not readable → NO_PERMISSION; queueId outside [0, readQueueNums) → SYSTEM_ERROR. Then
    (PULL-17) with the subscription flag an unparsable expression → SUBSCRIPTION_PARSE_FAILED; without it: no
    consumer group info → SUBSCRIPTION_NOT_EXIST; broadcasting while the group forbids it → NO_PERMISSION; no
    subscription for the topic → SUBSCRIPTION_NOT_EXIST; broker's subVersion older than the request's →
    SUBSCRIPTION_NOT_LATEST; for a non-tag expression no filter data → FILTER_DATA_NOT_EXIST, older filter data →
    FILTER_DATA_NOT_LATEST. A non-tag expression with enablePropertyFilter off → SYSTEM_ERROR; a store that
    returns no result (shut down, not readable) → SYSTEM_ERROR.

    pre: -8 <= queue_id <= 64 and 0 <= read_queue_nums <= 64
    post: broker_readable or __return__ == ResponseCode.NO_PERMISSION
    post: not broker_readable or group_exists or __return__ == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    post: __return__ is not None or (group_exists and group_consume_enable and topic_exists and topic_readable)
    post: __return__ is not None or (0 <= queue_id < read_queue_nums and store_available)
    post: __return__ is not None or tag_expression or property_filter_enable
    post: __return__ != ResponseCode.SYSTEM_ERROR or not 0 <= queue_id < read_queue_nums or not store_available or not (tag_expression or property_filter_enable)
    post: __return__ not in SUBSCRIPTION_STATE_CODES or not has_subscription_flag
    post: __return__ != ResponseCode.SUBSCRIPTION_PARSE_FAILED or has_subscription_flag
    """  # noqa: E501
    if not broker_readable:
        return ResponseCode.NO_PERMISSION
    if not group_exists:
        return ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    if not group_consume_enable:
        return ResponseCode.NO_PERMISSION
    if not topic_exists:
        return ResponseCode.TOPIC_NOT_EXIST
    if not topic_readable:
        return ResponseCode.NO_PERMISSION
    if queue_id < 0 or queue_id >= read_queue_nums:
        return ResponseCode.SYSTEM_ERROR
    if has_subscription_flag:
        if not subscription_parses:
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED
    else:
        if not group_info_exists:
            return ResponseCode.SUBSCRIPTION_NOT_EXIST
        if broadcasting and not consume_broadcast_enable:
            return ResponseCode.NO_PERMISSION
        if not subscription_exists:
            return ResponseCode.SUBSCRIPTION_NOT_EXIST
        if broker_sub_version < request_sub_version:
            return ResponseCode.SUBSCRIPTION_NOT_LATEST
        if not tag_expression:
            if not filter_data_exists:
                return ResponseCode.FILTER_DATA_NOT_EXIST
            if filter_data_version < request_sub_version:
                return ResponseCode.FILTER_DATA_NOT_LATEST
    if not tag_expression and not property_filter_enable:
        return ResponseCode.SYSTEM_ERROR
    if not store_available:
        return ResponseCode.SYSTEM_ERROR
    return None


@attrs.frozen
class BrokerAnswer:
    """What the broker does with a store decision: a response ``code``, or none while the request is held.

    ``hold_ms`` is how long a held request may wait; ``suggest_broker_id`` is the response header's
    suggestWhichBrokerId; ``offset_moved_event`` says whether an OffsetMovedEvent is written.
    """

    code: ResponseCode | None
    suggest_broker_id: int
    hold_ms: int = 0
    offset_moved_event: bool = False

    @property
    def held(self) -> bool:
        return self.code is None


def _status_code(status: GetMessageStatus, requested_offset: int) -> ResponseCode:
    if status is GetMessageStatus.FOUND:
        return ResponseCode.SUCCESS
    if status in (GetMessageStatus.MESSAGE_WAS_REMOVING, GetMessageStatus.NO_MATCHED_MESSAGE):
        return ResponseCode.PULL_RETRY_IMMEDIATELY
    if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
        return ResponseCode.PULL_OFFSET_MOVED if requested_offset != 0 else ResponseCode.PULL_NOT_FOUND
    if status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE):
        return ResponseCode.PULL_NOT_FOUND
    return ResponseCode.PULL_OFFSET_MOVED


@CLAUSES.oracle("PULL-10", "PULL-11", "PULL-12", "PULL-13", "PULL-14")
def response_code(
    status: GetMessageStatus,
    *,
    requested_offset: int,
    is_slave: bool = False,
    slave_read_enable: bool = False,
    offset_check_in_slave: bool = False,
    suspend: bool = True,
    broker_allow_suspend: bool = True,
    long_polling_enable: bool = True,
    suspend_timeout_ms: int = BROKER_SUSPEND_MAX_TIME_MS,
    short_polling_ms: int = SHORT_POLLING_TIME_MS,
    suggest_pulling_from_slave: bool = False,
    group_broker_id: int = MASTER_ID,
    which_broker_when_consume_slowly: int = WHICH_BROKER_WHEN_CONSUME_SLOWLY,
) -> BrokerAnswer:
    """The broker's answer to a store ``status`` for a pull at ``requested_offset`` (PULL-10 to PULL-14).

    The code follows the status (PULL-10). On a slave without ``offset_check_in_slave`` PULL_OFFSET_MOVED turns
    into PULL_RETRY_IMMEDIATELY and suggests ``group_broker_id``; otherwise it writes an OffsetMovedEvent
    (PULL-11). ``slave_read_enable`` only moves the suggestion (PULL-12). PULL_NOT_FOUND is held instead of
    answered when the request has the ``suspend`` flag and this is its first processing
    (``broker_allow_suspend``; a woken request is processed again with it false, PULL-13, PULL-14), for
    ``suspend_timeout_ms`` with long polling, else ``short_polling_ms``.

    pre: requested_offset >= 0 and 0 <= suspend_timeout_ms <= 10**9 and 0 <= short_polling_ms <= 10**9
    pre: 0 <= group_broker_id <= 16 and 0 <= which_broker_when_consume_slowly <= 16
    post: (__return__.code is None) == (suspend and broker_allow_suspend and status in NOT_FOUND_STATUSES and (status in WAIT_STATUSES or requested_offset == 0))
    post: __return__.code is not None or __return__.hold_ms == (suspend_timeout_ms if long_polling_enable else short_polling_ms)
    post: __return__.code != ResponseCode.PULL_OFFSET_MOVED or not is_slave or offset_check_in_slave
    post: (__return__.code == ResponseCode.SUCCESS) == (status == GetMessageStatus.FOUND)
    post: __return__.offset_moved_event == (__return__.code == ResponseCode.PULL_OFFSET_MOVED)
    post: status not in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY) or __return__.code in MOVED_CODES
    post: status != GetMessageStatus.OFFSET_OVERFLOW_ONE or __return__.code in (None, ResponseCode.PULL_NOT_FOUND)
    post: slave_read_enable or __return__.suggest_broker_id in (MASTER_ID, group_broker_id)
    post: __return__.code is None or __return__.code in PULL_CODES
    """  # noqa: E501
    code = _status_code(status, requested_offset)
    if slave_read_enable:
        suggest = which_broker_when_consume_slowly if suggest_pulling_from_slave else group_broker_id
    else:
        # A slave without slaveReadEnable also sets PULL_RETRY_IMMEDIATELY here, but the status switch that
        # follows overwrites every code: only this suggestion survives.
        suggest = MASTER_ID
    if code is ResponseCode.PULL_NOT_FOUND and suspend and broker_allow_suspend:
        hold = suspend_timeout_ms if long_polling_enable else short_polling_ms
        return BrokerAnswer(None, suggest, hold_ms=hold)
    if code is ResponseCode.PULL_OFFSET_MOVED:
        if is_slave and not offset_check_in_slave:
            return BrokerAnswer(ResponseCode.PULL_RETRY_IMMEDIATELY, group_broker_id)
        return BrokerAnswer(code, suggest, offset_moved_event=True)
    return BrokerAnswer(code, suggest)


class HoldOutcome(enum.Enum):
    """What one check of the hold service does with a held request."""

    WAKE = "WAKE"
    TIMEOUT = "TIMEOUT"
    KEEP = "KEEP"


@CLAUSES.oracle("PULL-14")
def held_request_outcome(
    max_offset: int, pull_from_offset: int, *, matched: bool = True, timed_out: bool = False
) -> HoldOutcome:
    """What a check (an arrival, or the periodic check) does with a request held at ``pull_from_offset`` (PULL-14).

    It is processed again (WAKE) when the queue's max offset is past its offset and the arrival ``matched`` its
    filter (the periodic check passes no tags code, which every tag filter matches); else again on TIMEOUT once
    its hold time is over; else it stays held (KEEP). Processing again removes it: it is answered once.

    pre: 0 <= max_offset <= 10**9 and 0 <= pull_from_offset <= 10**9
    post: (__return__ == HoldOutcome.WAKE) == (max_offset > pull_from_offset and matched)
    post: (__return__ == HoldOutcome.KEEP) == (not timed_out and not (max_offset > pull_from_offset and matched))
    """
    if max_offset > pull_from_offset and matched:
        return HoldOutcome.WAKE
    if timed_out:
        return HoldOutcome.TIMEOUT
    return HoldOutcome.KEEP


@CLAUSES.oracle("PULL-15")
def arrival_wakes_held(*, is_slave: bool, long_polling_enable: bool) -> bool:
    """Whether a message arriving in a queue notifies the requests held on it (PULL-15).

    post: __return__ == (long_polling_enable and not is_slave)
    """
    return not is_slave and long_polling_enable


@CLAUSES.oracle("PULL-15")
def hold_check_interval_ms(*, long_polling_enable: bool, short_polling_ms: int = SHORT_POLLING_TIME_MS) -> int:
    """How often the hold service checks every held request (PULL-15).

    pre: 0 <= short_polling_ms <= 10**9
    post: __return__ == (LONG_POLLING_CHECK_INTERVAL_MS if long_polling_enable else short_polling_ms)
    """
    return LONG_POLLING_CHECK_INTERVAL_MS if long_polling_enable else short_polling_ms


@CLAUSES.oracle("PULL-18")
def commit_flag(*, clustering: bool, memory_offset: int) -> bool:
    """Whether a push consumer's pull carries its memory offset for the broker to commit (PULL-18).

    ``memory_offset`` is ``readOffset(READ_FROM_MEMORY)``: -1 when the store has none.

    pre: memory_offset >= -1
    post: __return__ == (clustering and memory_offset > 0)
    """
    return clustering and memory_offset > 0


@CLAUSES.oracle("PULL-18")
def broker_commits(*, broker_allow_suspend: bool, has_commit_flag: bool, is_slave: bool) -> bool:
    """Whether processing a pull commits the request's commitOffset (PULL-18).

    Only a first processing (a woken held request is processed again without it), with the commit flag, on a
    master; it happens whatever the result, held requests included.

    post: __return__ == (broker_allow_suspend and has_commit_flag and not is_slave)
    """
    return broker_allow_suspend and has_commit_flag and not is_slave


# --------------------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------------------


@CLAUSES.oracle("PULL-19")
def pull_status(code: ResponseCode) -> PullStatus | None:
    """The client's PullStatus for a pull response ``code``, or None when it raises MQBrokerException (PULL-19).

    post: (__return__ is None) == (code not in PULL_CODES)
    post: (__return__ == PullStatus.OFFSET_ILLEGAL) == (code == ResponseCode.PULL_OFFSET_MOVED)
    post: (__return__ == PullStatus.FOUND) == (code == ResponseCode.SUCCESS)
    """
    if code is ResponseCode.SUCCESS:
        return PullStatus.FOUND
    if code is ResponseCode.PULL_NOT_FOUND:
        return PullStatus.NO_NEW_MSG
    if code is ResponseCode.PULL_RETRY_IMMEDIATELY:
        return PullStatus.NO_MATCHED_MSG
    if code is ResponseCode.PULL_OFFSET_MOVED:
        return PullStatus.OFFSET_ILLEGAL
    return None


@attrs.frozen
class OffsetUpdate:
    """``offsetStore.updateOffset(mq, offset, increaseOnly)``."""

    offset: int
    increase_only: bool


@attrs.frozen
class Reaction:
    """What a push consumer does with one pull result.

    ``next_offset``: the pull request's next offset. ``update``: an offset store update made now. ``enqueue``:
    the found messages go to the process queue and the consume service. ``drop``: the process queue is dropped
    now. ``fix``: the update made ``OFFSET_ILLEGAL_REMOVE_DELAY_MS`` later, followed by persist and
    removeProcessQueue. ``repull_delay_ms``: when the request is pulled again (None: never).
    """

    next_offset: int
    update: OffsetUpdate | None = None
    enqueue: bool = False
    drop: bool = False
    fix: OffsetUpdate | None = None
    repull_delay_ms: int | None = 0


@CLAUSES.oracle("PULL-20", "PULL-21", "PULL-22", "PULL-23")
def client_reaction(
    status: PullStatus | None,
    next_begin_offset: int,
    process_queue_empty: bool,
    *,
    request_offset: int,
    found_messages: int = 1,
    pull_interval_ms: int = 0,
    flow_control: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> Reaction:
    """A push consumer's reaction to a pull result (PULL-20 to PULL-23).

    FOUND: next = ``next_begin_offset``; the ``found_messages`` left after the client's tag re-filter are
    enqueued and the request pulled again at once, or after ``pull_interval_ms`` if positive; with none left,
    at once (PULL-20). NO_NEW_MSG / NO_MATCHED_MSG: next = ``next_begin_offset``, and if the process queue holds
    no message the offset store takes it increase-only; pull again at once (PULL-21). OFFSET_ILLEGAL: next =
    ``next_begin_offset``, drop the process queue now, and after ``OFFSET_ILLEGAL_REMOVE_DELAY_MS`` store it
    with increaseOnly false, persist, remove the process queue; never pull this request again (PULL-22). An
    error (``status`` None: an exception, or a code :func:`pull_status` does not map): keep ``request_offset``,
    pull again after 1000 ms, or after 20 ms since 4.9.5 when it is a FLOW_CONTROL response (``flow_control``)
    (PULL-23).

    pre: 0 <= next_begin_offset <= 10**9 and 0 <= request_offset <= 10**9
    pre: 0 <= found_messages <= 64 and 0 <= pull_interval_ms <= 10**9
    post: (status == PullStatus.OFFSET_ILLEGAL) == __return__.drop
    post: not __return__.drop or __return__.fix == OffsetUpdate(next_begin_offset, False)
    post: not __return__.drop or (__return__.repull_delay_ms is None and __return__.update is None)
    post: __return__.drop or __return__.repull_delay_ms is not None
    post: status is not None or __return__.next_offset == request_offset
    post: status is None or __return__.next_offset == next_begin_offset
    post: __return__.update is None or (__return__.update.increase_only and process_queue_empty)
    post: status not in NO_MESSAGE_STATUSES or (__return__.update is None) == (not process_queue_empty)
    post: status in NO_MESSAGE_STATUSES or __return__.update is None
    post: __return__.enqueue == (status == PullStatus.FOUND and found_messages > 0)
    post: status is not None or __return__.repull_delay_ms in ERROR_DELAYS_MS
    """
    if status is PullStatus.FOUND:
        if found_messages == 0:
            return Reaction(next_begin_offset)
        return Reaction(next_begin_offset, enqueue=True, repull_delay_ms=max(pull_interval_ms, 0))
    if status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
        update = OffsetUpdate(next_begin_offset, True) if process_queue_empty else None
        return Reaction(next_begin_offset, update=update)
    if status is PullStatus.OFFSET_ILLEGAL:
        # Not increase-only: the correction may move backwards (OFFSET_OVERFLOW_BADLY), and an increase-only
        # store would keep the bad offset and fail the same way after the rebalance.
        return Reaction(
            next_begin_offset, drop=True, fix=OffsetUpdate(next_begin_offset, False), repull_delay_ms=None
        )
    if flow_control and profile.at_least("4.9.5"):
        return Reaction(request_offset, repull_delay_ms=PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL)
    return Reaction(request_offset, repull_delay_ms=PULL_TIME_DELAY_MS_WHEN_EXCEPTION)


def apply_offset_update(current: int | None, update: OffsetUpdate) -> int:
    """``RemoteBrokerOffsetStore.updateOffset`` on one queue: set when absent or not increase-only, else raise."""
    if current is None or not update.increase_only:
        return update.offset
    return max(current, update.offset)
