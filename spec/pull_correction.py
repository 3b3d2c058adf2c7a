"""Pull offset correction: how a broker answers a pull at an offset and how a push consumer reacts.

The area follows one pull from end to end:

* the store's decision (``DefaultMessageStore.getMessage``): a ``GetMessageStatus`` and the next begin offset,
  corrected towards the queue's bounds by ``nextOffsetCorrection`` on a master (or a slave with
  ``offsetCheckInSlave``), or the progress of a scan of the consume queue (``next = offset + entries scanned``);
* the broker's answer (``PullMessageProcessor.processRequest``): pre-checks in order, status → response code,
  the slave downgrade of ``PULL_OFFSET_MOVED``, the suggested broker id, long-poll suspension
  (``PullRequestHoldService``) and the commit of the consumer's offset carried by the request;
* the client (``MQClientAPIImpl.processPullResponse``, ``DefaultMQPushConsumerImpl.pullMessage``'s
  ``PullCallback``): code → ``PullStatus`` and the reaction (next offset, ``updateOffset`` with or without
  ``increaseOnly``, the ``OFFSET_ILLEGAL`` drop and the persist + remove 10 s later, the re-pull delay), and the
  rebalance that adds the queue back from the broker's stored offset.

The state machine is one queue of one broker (master or slave) whose bounds move (messages are appended,
commit-log data is deleted, consume-queue files are deleted, the minimum offset is corrected) and one push
consumer pulling it with long polling, an in-memory offset store, the broker's stored offset and a process queue.

Versions (read in ``rocketmq-all-4.9.0`` .. ``rocketmq-all-4.9.8``): the ``OFFSET_OVERFLOW_BADLY`` correction
changed in 4.9.4 (ISSUE #4215): 4.9.0-4.9.3 (and seed 001) correct to ``min`` when ``min == 0`` and to ``max``
otherwise; 4.9.4+ always to ``max``. A ``FLOW_CONTROL`` pull error is retried after 20 ms since 4.9.5 (1000 ms,
before, as any other error). ``PullMessageProcessor`` and ``PullRequestHoldService`` behave the same in all 4.9.x.

Note on seed 001 §4.3.3: it says the consumer stores an ``OFFSET_ILLEGAL`` correction only when it is larger than its
progress; the code (all 4.9.x) stores it with ``increaseOnly = false``, which this spec follows (PULL-22).
Descriptions of the protocol say a slave without ``slaveReadEnable`` answers ``PULL_RETRY_IMMEDIATELY``: the processor
does set that code, but the status mapping that follows overwrites it, so only the suggested broker changes (PULL-11,
PULL-12).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
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
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

CLAUSES = ClauseTable(
    area="pull_correction",
    prefix="PULL",
    clauses=(
        Clause(
            "PULL-1",
            "With no consume queue for the topic and queue id the store answers NO_MATCHED_LOGIC_QUEUE, next "
            "= correction(offset, 0), min = max = 0 (findConsumeQueue creates queues on demand, so 4.9 stores "
            "do not reach it in practice).",
            "DefaultMessageStore.getMessage",
        ),
        Clause(
            "PULL-2",
            "A consume queue whose max offset is 0 answers NO_MESSAGE_IN_QUEUE with next = correction(offset, "
            "0), checked before any comparison with min.",
            "DefaultMessageStore.getMessage; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-3",
            "An offset below the queue's min offset answers OFFSET_TOO_SMALL with next = correction(offset, "
            "min).",
            "DefaultMessageStore.getMessage; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-4",
            "An offset equal to the queue's max offset answers OFFSET_OVERFLOW_ONE with next = offset (the "
            "consumer waits there for the next message).",
            "DefaultMessageStore.getMessage; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-5",
            "An offset above the queue's max offset answers OFFSET_OVERFLOW_BADLY with next = correction(offset,"
            " max) (4.9.4+); 4.9.0-4.9.3 use correction(offset, min) when min == 0, else correction(offset, max).",
            "DefaultMessageStore.getMessage (ISSUE #4215); seed 001 §4.3.2 第四步",
            versions="4.9.0-4.9.3: min if min == 0 else max; 4.9.4+: max",
        ),
        Clause(
            "PULL-6",
            "An offset in [min, max) whose consume-queue file is gone (deleted, min not yet corrected) answers "
            "OFFSET_FOUND_NULL with next = correction(offset, start of the next consume-queue file).",
            "DefaultMessageStore.getMessage; ConsumeQueue.getIndexBuffer, rollNextFile",
        ),
        Clause(
            "PULL-7",
            "correction(old, new) is new on a master or on a slave with offsetCheckInSlave (default false), "
            "else old: a plain slave never moves the consumer.",
            "DefaultMessageStore.nextOffsetCorrection; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-8",
            "Otherwise the store scans entries from offset to the end of the offset's consume-queue file or "
            "max, at most max(800, maxMsgNums), stopping before an entry once the batch is full; next = offset + "
            "entries scanned, uncorrected.",
            "DefaultMessageStore.getMessage, isTheBatchFull",
        ),
        Clause(
            "PULL-9",
            "A scan that takes a message is FOUND; otherwise its status is that of the last entry examined: "
            "filtered out gives NO_MATCHED_MESSAGE, commit-log data gone gives MESSAGE_WAS_REMOVING.",
            "DefaultMessageStore.getMessage",
        ),
        Clause(
            "PULL-10",
            "Status to code: FOUND → SUCCESS; NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING → PULL_RETRY_IMMEDIATELY; "
            "OFFSET_FOUND_NULL, OFFSET_OVERFLOW_ONE → PULL_NOT_FOUND; OFFSET_TOO_SMALL, OFFSET_OVERFLOW_BADLY → "
            "PULL_OFFSET_MOVED; NO_MATCHED_LOGIC_QUEUE, NO_MESSAGE_IN_QUEUE → PULL_OFFSET_MOVED if the requested "
            "offset is not 0, else PULL_NOT_FOUND.",
            "PullMessageProcessor.processRequest; seed 001 §4.3.2 第八步",
        ),
        Clause(
            "PULL-11",
            "On a slave without offsetCheckInSlave PULL_OFFSET_MOVED becomes PULL_RETRY_IMMEDIATELY (suggesting "
            "the group's brokerId, no OffsetMovedEvent); slaveReadEnable does not change the code.",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "PULL-12",
            "The suggested broker id is, with slaveReadEnable, whichBrokerWhenConsumeSlowly (1) if the store "
            "suggests pulling from a slave else the group's brokerId (0), and without it the master (0).",
            "PullMessageProcessor.processRequest; SubscriptionGroupConfig",
        ),
        Clause(
            "PULL-13",
            "PULL_NOT_FOUND on a first processing of a request with the suspend flag is held, not answered, for "
            "suspendTimeoutMillis (15000 from a push consumer) with long polling, else shortPollingTimeMills.",
            "PullMessageProcessor.processRequest; seed 001 §4.3.4",
        ),
        Clause(
            "PULL-14",
            "A held request is processed again, without suspension, when the queue's max offset passes its "
            "offset and the arrival matches, or when its hold time is over; it is answered exactly once.",
            "PullRequestHoldService.notifyMessageArriving, checkHoldRequest; seed 001 §4.3.4",
        ),
        Clause(
            "PULL-15",
            "A message arrival wakes held requests only on a master with long polling; the periodic check runs "
            "every 5 s with long polling, else every shortPollingTimeMills.",
            "DefaultMessageStore.ReputMessageService.doReput; PullRequestHoldService.run",
        ),
        Clause(
            "PULL-16",
            "Checks before the store, first failure wins: broker not readable, group missing, group consume "
            "disabled, topic missing, topic not readable, queueId outside [0, readQueueNums).",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "PULL-17",
            "Then subscription checks (parse, group info, broadcast, subscription, version, filter data), a "
            "non-tag expression with the property filter off, and a store that refuses the read.",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "PULL-18",
            "The broker commits the request's commitOffset iff it is a first processing, the commit flag is set "
            "and it is not a slave, whatever the result; a push consumer sets the flag iff clustering and its "
            "memory offset > 0.",
            "PullMessageProcessor.processRequest; DefaultMQPushConsumerImpl.pullMessage; seed 001 §4.3.2 第九步",
        ),
        Clause(
            "PULL-19",
            "The client maps SUCCESS → FOUND, PULL_NOT_FOUND → NO_NEW_MSG, PULL_RETRY_IMMEDIATELY → NO_MATCHED_MSG,"
            " PULL_OFFSET_MOVED → OFFSET_ILLEGAL; any other code is an MQBrokerException.",
            "MQClientAPIImpl.processPullResponse",
        ),
        Clause(
            "PULL-20",
            "FOUND: next = nextBeginOffset, the re-filtered messages go to the process queue and the consume "
            "service, pull again at once (after pullInterval if > 0 and messages remain); no offset update.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback; PullAPIWrapper.processPullResult; seed 001 §4.3.3",
        ),
        Clause(
            "PULL-21",
            "NO_NEW_MSG and NO_MATCHED_MSG: next = nextBeginOffset, updateOffset(next, increaseOnly=true) if the "
            "process queue holds no message, pull again at once.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback, correctTagsOffset; seed 001 §4.3.3",
        ),
        Clause(
            "PULL-22",
            "OFFSET_ILLEGAL: next = nextBeginOffset, the process queue is dropped at once, and 10 s later "
            "updateOffset(next, increaseOnly=false), persist and removeProcessQueue; no pull again.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback; RebalanceImpl.removeProcessQueue",
        ),
        Clause(
            "PULL-23",
            "A pull error keeps the request's offset and pulls again after pullTimeDelayMillsWhenException (1000"
            " ms: ClientConfig's value, which the push consumer copies over its own 3000); since 4.9.5 FLOW_CONTROL"
            " after 20 ms.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback.onException; ClientConfig",
            versions="4.9.0-4.9.4: every error 1000 ms; 4.9.5+: FLOW_CONTROL 20 ms, others 1000 ms",
        ),
        Clause(
            "PULL-24",
            "A rebalance that finds an assigned queue without a process queue drops the memory offset and "
            "resumes from computePullFromWhere, i.e. the broker's stored offset when there is one.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; RebalancePushImpl.computePullFromWhereWithException",
        ),
        Clause(
            "PULL-25",
            "Property: every answer of a master (or a slave with offsetCheckInSlave) puts the next offset within"
            " [min, max] of the queue at response time; a FOUND answer's next offset exceeds the requested one.",
            "consequence of PULL-1 to PULL-10",
        ),
        Clause(
            "PULL-26",
            "Property: PULL_OFFSET_MOVED is answered only for a requested offset outside [min, max] of the "
            "queue, so a consumer at a valid offset is never dropped.",
            "consequence of PULL-2 to PULL-5 and PULL-10",
        ),
        Clause(
            "PULL-27",
            "Property: no answer moves the consumer past a readable message that matches its subscription "
            "without delivering it.",
            "consequence of PULL-3 to PULL-9 and PULL-20 to PULL-22",
        ),
    ),
)

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


# --------------------------------------------------------------------------------------------------------------
# The state machine
# --------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Config:
    """Fixed parameters of one exploration: the broker serving the pulls and the bounds."""

    profile: VersionProfile = DEFAULT_PROFILE
    is_slave: bool = False
    offset_check_in_slave: bool = False
    max_messages: int = 3
    cq_file_entries: int = 2
    batch: int = 2
    filtered_messages: bool = True


@attrs.frozen
class Store:
    """One queue in the serving broker's store.

    Offsets ``[0, len(matches))`` were written; ``matches[i]`` says whether message ``i`` matches the consumer's
    subscription. Commit-log data exists from ``data_from``; consume-queue files exist from ``cq_from`` (a file
    start); ``min_offset`` is the consume queue's logical minimum, which lags behind deletions until corrected.
    """

    min_offset: int = 0
    cq_from: int = 0
    data_from: int = 0
    matches: tuple[bool, ...] = ()

    @property
    def max_offset(self) -> int:
        return len(self.matches)

    def readable(self, offset: int) -> bool:
        """Whether a pull could deliver the message at ``offset`` now."""
        return (
            self.min_offset <= offset < self.max_offset
            and offset >= self.cq_from
            and offset >= self.data_from
            and self.matches[offset]
        )


@attrs.frozen
class ProcessQueue:
    """The consumer's ProcessQueue: cached message offsets and the highest offset ever put (queueOffsetMax)."""

    dropped: bool = False
    cached: frozenset[int] = frozenset()
    offset_max: int = 0


@attrs.frozen
class PullState:
    """One store queue, one push consumer pulling it (clustering), the broker's stored offset.

    ``pq`` None: no process queue (before the first rebalance, or removed). ``held``: the offset of the pull
    the broker holds. ``memory_offset``: the consumer's offset store (None: no entry). ``fix``: the pending
    OFFSET_ILLEGAL fix, run 10 s after the answer.
    """

    config: Config
    store: Store
    broker_offset: int
    pq: ProcessQueue | None = None
    pull_offset: int = 0
    held: int | None = None
    memory_offset: int | None = None
    fix: OffsetUpdate | None = None


@attrs.frozen
class Answer:
    """A pull's outcome at the broker, with the queue bounds it was decided against."""

    requested: int
    status: GetMessageStatus
    code: ResponseCode | None
    next_offset: int
    min_offset: int
    max_offset: int
    delivered: tuple[int, ...] = ()


@attrs.frozen
class Append:
    """A message is written to the queue (``matches``: it matches the consumer's subscription)."""

    matches: bool


@attrs.frozen
class DeleteCommitLog:
    """The commit-log data of the oldest remaining message of the queue is deleted."""


@attrs.frozen
class DeleteConsumeQueueFile:
    """The first consume-queue file, all of whose messages are gone, is deleted (never the last file)."""


@attrs.frozen
class CorrectMinOffset:
    """correctMinOffset: min moves to the first entry of the first file whose data remains."""


@attrs.frozen
class Pull:
    """The consumer pulls at its next offset and the broker processes the request: ``answer`` (held if no code)."""

    answer: Answer


@attrs.frozen
class Wake:
    """The hold service finds the queue's max past a held request's offset and processes it again."""

    answer: Answer


@attrs.frozen
class HoldTimeout:
    """A held request's hold time is over: it is processed again."""

    answer: Answer


@attrs.frozen
class Consume:
    """The consume service finishes the cached message at ``offset`` and commits the process queue's progress."""

    offset: int


@attrs.frozen
class PersistAll:
    """The 5 s persistAll sends the memory offset of the queue (still in the process queue table) to the broker."""


@attrs.frozen
class DelayedFix:
    """10 s after OFFSET_ILLEGAL: updateOffset(next, false), persist, removeProcessQueue."""


@attrs.frozen
class Rebalance:
    """A rebalance finds the assigned queue without a process queue and adds it back."""


Action = (
    Append | DeleteCommitLog | DeleteConsumeQueueFile | CorrectMinOffset | Pull | Wake | HoldTimeout | Consume
    | PersistAll | DelayedFix | Rebalance
)


def _last_file_start(store: Store, file_entries: int) -> int:
    return ((store.max_offset - 1) // file_entries) * file_entries


def _can_delete_cq_file(state: PullState) -> bool:
    store, f = state.store, state.config.cq_file_entries
    # A file goes when its last entry's data is gone; the last file of a queue is never deleted.
    return (
        store.max_offset > 0
        and store.cq_from + f <= store.data_from
        and store.cq_from < _last_file_start(store, f)
    )


def _corrected_min(state: PullState) -> int:
    store, f = state.store, state.config.cq_file_entries
    first = max(store.cq_from, store.data_from)
    if first < min(store.cq_from + f, store.max_offset):
        return first
    return store.min_offset


def decide(state: PullState, offset: int, broker_allow_suspend: bool) -> Answer:
    """The broker's outcome for a pull at ``offset`` against ``state``'s store, through the oracles."""
    cfg, store = state.config, state.store
    readable = offset >= store.cq_from
    scan = None
    entries: tuple[CqEntry, ...] = ()
    if store.min_offset <= offset < store.max_offset and readable:
        end = min(store.max_offset, roll_next_file(offset, cfg.cq_file_entries))
        entries = tuple(
            (CqEntry.MATCH if store.matches[j] else CqEntry.NO_MATCH)
            if j >= store.data_from
            else (CqEntry.GONE_MATCH if store.matches[j] else CqEntry.GONE_NO_MATCH)
            for j in range(offset, end)
        )
        scan = scan_queue(entries, max_msg_nums=cfg.batch)
    decision = store_status(
        offset,
        store.min_offset,
        store.max_offset,
        entry_readable=readable,
        scan=scan,
        is_slave=cfg.is_slave,
        offset_check_in_slave=cfg.offset_check_in_slave,
        cq_file_entries=cfg.cq_file_entries,
        profile=cfg.profile,
    )
    answer = response_code(
        decision.status,
        requested_offset=offset,
        is_slave=cfg.is_slave,
        offset_check_in_slave=cfg.offset_check_in_slave,
        broker_allow_suspend=broker_allow_suspend,
    )
    delivered: tuple[int, ...] = ()
    if decision.status is GetMessageStatus.FOUND and scan is not None:
        delivered = tuple(offset + k for k in range(scan.entries_scanned) if entries[k] is CqEntry.MATCH)
    return Answer(
        offset,
        decision.status,
        answer.code,
        decision.next_begin_offset,
        store.min_offset,
        store.max_offset,
        delivered,
    )


def _live(state: PullState) -> bool:
    return state.pq is not None and not state.pq.dropped


@CLAUSES.oracle("PULL-13", "PULL-14", "PULL-22", "PULL-24")
def enabled(state: PullState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state`` (PULL-13, PULL-14, PULL-22, PULL-24).

    A live process queue with no held request pulls; only a held request is woken (max past its offset) or
    times out; the OFFSET_ILLEGAL fix runs once; a rebalance re-adds the queue only when it has no process
    queue and no fix is pending. A pull's answer must be the broker's decision for the state.
    """
    store, cfg = state.store, state.config
    match action:
        case Append(matches=m):
            return store.max_offset < cfg.max_messages and (m or cfg.filtered_messages)
        case DeleteCommitLog():
            return store.data_from < store.max_offset
        case DeleteConsumeQueueFile():
            return _can_delete_cq_file(state)
        case CorrectMinOffset():
            return _corrected_min(state) != store.min_offset
        case Pull(answer=a):
            return _live(state) and state.held is None and a == decide(state, state.pull_offset, True)
        case Wake(answer=a):
            return (
                state.held is not None
                and held_request_outcome(store.max_offset, state.held) is HoldOutcome.WAKE
                and a == decide(state, state.held, False)
            )
        case HoldTimeout(answer=a):
            return state.held is not None and a == decide(state, state.held, False)
        case Consume(offset=o):
            return _live(state) and state.pq is not None and o in state.pq.cached
        case PersistAll():
            return (
                state.pq is not None
                and state.memory_offset is not None
                and state.memory_offset != state.broker_offset
            )
        case DelayedFix():
            return state.fix is not None
        case Rebalance():
            return state.pq is None and state.fix is None
    return False


def _react(state: PullState, answer: Answer) -> PullState:
    assert answer.code is not None and state.pq is not None
    status = pull_status(answer.code)
    pq = state.pq
    reaction = client_reaction(
        status,
        answer.next_offset,
        not pq.cached,
        request_offset=answer.requested,
        found_messages=len(answer.delivered),
        profile=state.config.profile,
    )
    memory = state.memory_offset
    if reaction.enqueue:
        pq = attrs.evolve(
            pq, cached=pq.cached | frozenset(answer.delivered), offset_max=max(pq.offset_max, *answer.delivered)
        )
    if reaction.update is not None:
        memory = apply_offset_update(memory, reaction.update)
    if reaction.drop:
        pq = attrs.evolve(pq, dropped=True)
    return attrs.evolve(
        state, pq=pq, pull_offset=reaction.next_offset, held=None, memory_offset=memory, fix=reaction.fix
    )


@CLAUSES.oracle("PULL-13", "PULL-14", "PULL-18", "PULL-20", "PULL-21", "PULL-22", "PULL-24")
def step(state: PullState, action: Action) -> PullState:
    """The state after an enabled ``action`` (PULL-13, PULL-14, PULL-18, PULL-20, PULL-21, PULL-22, PULL-24).

    A pull commits the memory offset on a master (PULL-18), then is held (PULL-13) or answered; a woken or
    timed-out request is answered without a commit (PULL-14); the consumer reacts (PULL-20, PULL-21, PULL-22); the fix
    stores, persists and removes (PULL-22); a rebalance resumes from the broker's offset (PULL-24).
    """
    require_enabled(enabled, state, action, Action)
    store, cfg = state.store, state.config
    match action:
        case Append(matches=m):
            return attrs.evolve(state, store=attrs.evolve(store, matches=(*store.matches, m)))
        case DeleteCommitLog():
            return attrs.evolve(state, store=attrs.evolve(store, data_from=store.data_from + 1))
        case DeleteConsumeQueueFile():
            return attrs.evolve(state, store=attrs.evolve(store, cq_from=store.cq_from + cfg.cq_file_entries))
        case CorrectMinOffset():
            return attrs.evolve(state, store=attrs.evolve(store, min_offset=_corrected_min(state)))
        case Pull(answer=a):
            broker_offset = state.broker_offset
            memory = -1 if state.memory_offset is None else state.memory_offset
            flag = commit_flag(clustering=True, memory_offset=memory)
            if broker_commits(broker_allow_suspend=True, has_commit_flag=flag, is_slave=cfg.is_slave):
                broker_offset = memory
            state = attrs.evolve(state, broker_offset=broker_offset)
            if a.code is None:
                return attrs.evolve(state, held=a.requested)
            return _react(state, a)
        case Wake(answer=a) | HoldTimeout(answer=a):
            return _react(state, a)
        case Consume(offset=o):
            assert state.pq is not None
            rest = state.pq.cached - {o}
            progress = min(rest) if rest else state.pq.offset_max + 1
            memory = apply_offset_update(state.memory_offset, OffsetUpdate(progress, True))
            return attrs.evolve(state, pq=attrs.evolve(state.pq, cached=rest), memory_offset=memory)
        case PersistAll():
            assert state.memory_offset is not None
            return attrs.evolve(state, broker_offset=state.memory_offset)
        case DelayedFix():
            assert state.fix is not None
            memory = apply_offset_update(state.memory_offset, state.fix)
            # persist, then removeProcessQueue: persist again and forget the memory offset.
            return attrs.evolve(state, broker_offset=memory, memory_offset=None, pq=None, fix=None)
        case Rebalance():
            # removeDirtyOffset, then computePullFromWhere reads the broker's offset into the offset store.
            offset = state.broker_offset
            return attrs.evolve(state, pq=ProcessQueue(), pull_offset=offset, memory_offset=offset)
    raise ValueError(f"unknown action {action!r}")


def _candidates(state: PullState) -> Iterator[Action]:
    yield Append(True)
    yield Append(False)
    yield DeleteCommitLog()
    yield DeleteConsumeQueueFile()
    yield CorrectMinOffset()
    if _live(state) and state.held is None:
        yield Pull(decide(state, state.pull_offset, True))
    if state.held is not None:
        rerun = decide(state, state.held, False)
        yield Wake(rerun)
        yield HoldTimeout(rerun)
    if state.pq is not None:
        for offset in sorted(state.pq.cached):
            yield Consume(offset)
    yield PersistAll()
    yield DelayedFix()
    yield Rebalance()


# --------------------------------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------------------------------


def _answer_of(action: Action) -> Answer | None:
    if isinstance(action, Pull | Wake | HoldTimeout):
        return action.answer
    return None


def _plain_slave(state: PullState) -> bool:
    return state.config.is_slave and not state.config.offset_check_in_slave


def _next_within_queue(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is None:
        return True
    if _plain_slave(before) and a.next_offset == a.requested:
        return True
    return a.min_offset <= a.next_offset <= a.max_offset


def _found_advances(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.FOUND:
        return True
    return a.next_offset > a.requested and bool(a.delivered) and all(
        a.requested <= o < a.next_offset for o in a.delivered
    )


def _too_small_to_min(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.OFFSET_TOO_SMALL:
        return True
    expected = a.requested if _plain_slave(before) else a.min_offset
    return a.next_offset == expected and after.pull_offset == expected


def _overflow_badly_per_version(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.OFFSET_OVERFLOW_BADLY or _plain_slave(before):
        return True
    back_to_zero = a.min_offset == 0 and before.config.profile < V4_9_4
    return a.next_offset == (a.min_offset if back_to_zero else a.max_offset)


def _moved_only_outside(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.PULL_OFFSET_MOVED:
        return True
    return a.requested < a.min_offset or a.requested > a.max_offset


def _no_skip(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is None:
        return True
    return all(o in a.delivered for o in range(a.requested, a.next_offset) if before.store.readable(o))


def _held_only_without_message(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not None:
        return True
    store = before.store
    return isinstance(action, Pull) and (
        a.requested == store.max_offset or store.min_offset <= a.requested < store.cq_from
    )


def _answered_once(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, Wake | HoldTimeout):
        return before.held == action.answer.requested and after.held is None and action.answer.code is not None
    if isinstance(action, Pull):
        return before.held is None and (after.held is None) == (action.answer.code is not None)
    return after.held == before.held


def _commits(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, Wake | HoldTimeout):
        return after.broker_offset == before.broker_offset
    if isinstance(action, Pull):
        memory = before.memory_offset
        if before.config.is_slave or memory is None or memory <= 0:
            return after.broker_offset == before.broker_offset
        return after.broker_offset == memory
    return True


def _retry_increase_only(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code not in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
        return True
    assert before.pq is not None
    if before.pq.cached:
        return after.memory_offset == before.memory_offset
    if before.memory_offset is None:
        return after.memory_offset == a.next_offset
    return after.memory_offset == max(before.memory_offset, a.next_offset)


def _illegal_drops(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.PULL_OFFSET_MOVED:
        return True
    return (
        after.pq is not None
        and after.pq.dropped
        and after.fix is not None
        and after.fix.offset == a.next_offset
        and after.memory_offset == before.memory_offset
    )


def _fix_stores_correction(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, DelayedFix):
        return True
    assert before.fix is not None
    return after.broker_offset == before.fix.offset and after.pq is None and after.memory_offset is None


def _rebalance_resumes(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Rebalance):
        return True
    return after.pull_offset == before.broker_offset and after.memory_offset == before.broker_offset


def _found_enqueues(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.SUCCESS:
        return True
    assert after.pq is not None
    return (
        after.pull_offset == a.next_offset
        and set(a.delivered) <= after.pq.cached
        and after.memory_offset == before.memory_offset
    )


def _held_requires_live_queue(state: PullState) -> bool:
    return state.held is None or _live(state)


def _fix_only_when_dropped(state: PullState) -> bool:
    return state.fix is None or (state.pq is not None and state.pq.dropped)


def _store_bounds(state: PullState) -> bool:
    s = state.store
    return s.min_offset <= s.data_from <= s.max_offset and s.cq_from <= s.data_from and s.min_offset >= 0


INVARIANTS: tuple[Invariant[PullState], ...] = (
    Invariant("held request has a live process queue", ("PULL-13", "PULL-22"), _held_requires_live_queue),
    Invariant("pending fix only for a dropped queue", ("PULL-22",), _fix_only_when_dropped),
    Invariant("store bounds are ordered", ("PULL-3", "PULL-6"), _store_bounds),
)

STEP_INVARIANTS: tuple[StepInvariant[PullState, Action], ...] = (
    StepInvariant("answer's next offset within [min, max]", ("PULL-25", "PULL-7", "PULL-6"), _next_within_queue),
    StepInvariant("FOUND advances past the requested offset", ("PULL-25", "PULL-8", "PULL-9"), _found_advances),
    StepInvariant("OFFSET_TOO_SMALL corrects to min", ("PULL-3", "PULL-7"), _too_small_to_min),
    StepInvariant("OFFSET_OVERFLOW_BADLY correction per version", ("PULL-5",), _overflow_badly_per_version),
    StepInvariant("PULL_OFFSET_MOVED only outside [min, max]", ("PULL-26", "PULL-10", "PULL-2", "PULL-4"),
                  _moved_only_outside),
    StepInvariant("no readable matching message is skipped", ("PULL-27", "PULL-4", "PULL-9", "PULL-21"), _no_skip),
    StepInvariant("held only when no message at the offset", ("PULL-13", "PULL-4", "PULL-6"),
                  _held_only_without_message),
    StepInvariant("a held request is answered exactly once", ("PULL-14",), _answered_once),
    StepInvariant("only a first processing on a master commits", ("PULL-18",), _commits),
    StepInvariant("NO_NEW_MSG / NO_MATCHED_MSG store increase-only", ("PULL-21", "PULL-19"), _retry_increase_only),
    StepInvariant("OFFSET_ILLEGAL drops and schedules the fix", ("PULL-22", "PULL-19"), _illegal_drops),
    StepInvariant("the fix stores the correction as is", ("PULL-22",), _fix_stores_correction),
    StepInvariant("FOUND enqueues and moves on", ("PULL-20", "PULL-19"), _found_enqueues),
    StepInvariant("rebalance resumes from the broker's offset", ("PULL-24",), _rebalance_resumes),
)


def model(
    *,
    profile: VersionProfile = DEFAULT_PROFILE,
    is_slave: bool = False,
    offset_check_in_slave: bool = False,
    max_messages: int = 3,
    cq_file_entries: int = 2,
    batch: int = 2,
    filtered_messages: bool = True,
) -> Model[PullState, Action]:
    """One queue of up to ``max_messages`` messages (appended, deleted from the head, consume-queue files of
    ``cq_file_entries`` entries), pulled ``batch`` messages at a time by one push consumer whose broker-stored
    offset starts anywhere in ``[0, max_messages + 1]``, served by a master or a slave."""
    config = Config(profile, is_slave, offset_check_in_slave, max_messages, cq_file_entries, batch, filtered_messages)
    initial = tuple(PullState(config, Store(), broker_offset=b) for b in range(max_messages + 2))
    role = "master" if not is_slave else ("slave, offsetCheckInSlave" if offset_check_in_slave else "slave")
    bounds = (
        f"1 queue of <= {max_messages} messages ({'some' if filtered_messages else 'none'} filtered out), "
        f"consume-queue files of {cq_file_entries}, batch {batch}, stored offset 0..{max_messages + 1}, "
        f"{role}, {profile}"
    )
    return Model(
        area="pull_correction",
        bounds=bounds,
        initial=initial,
        actions=_candidates,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )


__all__ = [
    "CLAUSES",
    "INVARIANTS",
    "STEP_INVARIANTS",
    "Action",
    "Answer",
    "Append",
    "BrokerAnswer",
    "Config",
    "Consume",
    "CorrectMinOffset",
    "CqEntry",
    "DelayedFix",
    "DeleteCommitLog",
    "DeleteConsumeQueueFile",
    "HoldOutcome",
    "HoldTimeout",
    "OffsetUpdate",
    "PersistAll",
    "ProcessQueue",
    "Pull",
    "PullState",
    "Reaction",
    "Rebalance",
    "ScanOutcome",
    "Store",
    "StoreDecision",
    "Wake",
    "apply_offset_update",
    "arrival_wakes_held",
    "bounds_decision",
    "broker_commits",
    "client_reaction",
    "commit_flag",
    "decide",
    "enabled",
    "full_batch",
    "held_request_outcome",
    "hold_check_interval_ms",
    "model",
    "next_offset_correction",
    "pull_precheck",
    "pull_status",
    "response_code",
    "roll_next_file",
    "scan_queue",
    "step",
    "store_status",
]
