"""Pull correction: the consumers' own rules, as oracles: where a queue's consumption starts, which queues a consumer
is given, and what the lite pull consumer does with an answer, a poll, a commit and a seek (checked by CrossHair)."""

from __future__ import annotations

import attrs

from rocketspec.spec.protocol import (
    DEFAULT_PERM,
    PERM_READ,
    PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL,
    PULL_TIME_DELAY_MS_WHEN_EXCEPTION,
    ConsumeFromWhere,
    PullStatus,
)
from rocketspec.spec.pull_correction.clauses import CLAUSES
from rocketspec.spec.pull_correction.oracles import ERROR_DELAYS_MS  # noqa: F401  (a contract names it)

# The answer readOffset gives when the broker has no offset for the queue (QUERY_NOT_FOUND).
NO_OFFSET = -1


# --------------------------------------------------------------------------------------------------------------
# Where consumption starts
# --------------------------------------------------------------------------------------------------------------


@CLAUSES.oracle("PULL-29")
def stored_offset(committed: int | None, min_offset: int) -> int:
    """What QUERY_CONSUMER_OFFSET gives the client for a queue (PULL-29): the group's ``committed`` offset; with none,
    0 when the queue's ``min_offset`` is <= 0 (offset 0 is not only on disk: every message is in memory here), else
    -1 (QUERY_NOT_FOUND, which ``readOffset`` answers as -1).

    pre: committed is None or 0 <= committed <= 10**9
    pre: 0 <= min_offset <= 10**9
    post: committed is None or __return__ == committed
    post: committed is not None or __return__ == (0 if min_offset <= 0 else NO_OFFSET)
    """
    if committed is not None:
        return committed
    return 0 if min_offset <= 0 else NO_OFFSET


@CLAUSES.oracle("PULL-30")
def offset_by_time(times: tuple[int, ...], file_start: int, min_offset: int, data_from: int, timestamp: int) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP on a queue whose message ``i`` was stored at ``times[i]`` (PULL-30).

    The queue's consume-queue file starts at ``file_start``; the search runs over ``[max(min_offset, file_start),
    len(times))``, where an offset below ``data_from`` has lost its commit-log data and counts as earlier. It answers
    the first entry it meets stored exactly at ``timestamp``, else the nearer of the last entry before and the first
    after (the earlier on a tie): the first readable entry when all are later, the last one (``len - 1``, not the
    max offset) when all are earlier; ``file_start - 1`` (0 at least: the file's byte offset -1, divided as Java
    does) when every entry's data is gone; 0 when there is no entry to search.

    pre: len(times) <= 4 and 0 <= file_start <= len(times) and 0 <= min_offset <= len(times)
    pre: 0 <= data_from <= len(times)
    pre: all(0 <= t <= 100 for t in times) and all(times[i - 1] <= times[i] for i in range(1, len(times)))
    pre: -10 <= timestamp <= 110
    post: len(times) > max(min_offset, file_start) or __return__ == 0
    post: len(times) <= max(min_offset, file_start) or data_from < len(times) or __return__ == max(file_start - 1, 0)
    post: len(times) <= max(min_offset, file_start) or data_from >= len(times) or max(min_offset, file_start, data_from) <= __return__ < len(times)
    post: len(times) <= max(min_offset, file_start, data_from) or not all(t > timestamp for t in times[max(min_offset, file_start, data_from):]) or __return__ == max(min_offset, file_start, data_from)
    post: len(times) <= max(min_offset, file_start, data_from) or not all(t < timestamp for t in times[max(min_offset, file_start, data_from):]) or __return__ == len(times) - 1
    post: timestamp not in times[max(min_offset, file_start, data_from):] or times[__return__] == timestamp
    """  # noqa: E501
    lo, hi = max(min_offset, file_start), len(times) - 1
    if hi < lo:
        return 0
    left = right = -1
    left_time = right_time = -1
    while hi >= lo:
        mid = (lo + hi) // 2
        if mid < data_from:
            lo, left = mid + 1, mid
            continue
        stored = times[mid]
        if stored == timestamp:
            return mid
        if stored > timestamp:
            hi, right, right_time = mid - 1, mid, stored
        else:
            lo, left, left_time = mid + 1, mid, stored
    if left_time == -1:
        if right == -1:
            # Every entry's data is gone: (fileFromOffset + (-1 byte)) / 20, a Java division towards zero.
            return max(file_start - 1, 0)
        return right
    if right_time == -1:
        return left
    return right if abs(timestamp - left_time) > abs(timestamp - right_time) else left


@CLAUSES.oracle("PULL-28", "PULL-31")
def start_offset(where: ConsumeFromWhere, last: int, *, retry: bool, max_offset: int, searched: int) -> int:
    """``computePullFromWhere`` for a queue without a pull offset (PULL-28, PULL-31).

    ``last`` is ``readOffset``'s answer (the broker's, through :func:`stored_offset`; a lite pull consumer reads its
    memory first): >= 0 is where the queue starts. Without one (-1), CONSUME_FROM_FIRST_OFFSET starts at 0,
    CONSUME_FROM_LAST_OFFSET at ``max_offset`` (0 for a %RETRY% queue, ``retry``), CONSUME_FROM_TIMESTAMP at
    ``searched`` (:func:`offset_by_time` of consumeTimestamp; ``max_offset`` for a %RETRY% queue).

    pre: last >= -1 and 0 <= max_offset <= 10**9 and 0 <= searched <= 10**9
    post: last < 0 or __return__ == last
    post: last >= 0 or where != ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or __return__ == 0
    post: last >= 0 or where != ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET or __return__ == (0 if retry else max_offset)
    post: last >= 0 or where != ConsumeFromWhere.CONSUME_FROM_TIMESTAMP or __return__ == (max_offset if retry else searched)
    """  # noqa: E501
    if last >= 0:
        return last
    if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return 0
    if where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
        return 0 if retry else max_offset
    return max_offset if retry else searched


@CLAUSES.oracle("PULL-37")
def consumer_queue_ids(read_queue_nums: int, perm: int = DEFAULT_PERM) -> tuple[int, ...]:
    """The queue ids of a topic a subscribed consumer is given from its route (PULL-37): ``[0, readQueueNums)`` when
    the topic's permission is readable, none otherwise.

    pre: 0 <= read_queue_nums <= 16 and 0 <= perm <= 7
    post: __return__ == tuple(range(read_queue_nums)) or not perm & PERM_READ
    post: __return__ == () or perm & PERM_READ
    """
    if not perm & PERM_READ:
        return ()
    return tuple(range(read_queue_nums))


# --------------------------------------------------------------------------------------------------------------
# The lite pull consumer
# --------------------------------------------------------------------------------------------------------------


@attrs.frozen
class LiteReaction:
    """What a lite pull consumer's pull task does with one pull result.

    ``pull_offset``: the queue's new pull offset (None: unchanged, a seek is pending or the pull failed).
    ``enqueue``: the messages are cached and one consume request appended. ``repull_delay_ms``: when the task runs
    again.
    """

    pull_offset: int | None
    enqueue: bool = False
    repull_delay_ms: int = 0


@CLAUSES.oracle("PULL-32")
def lite_reaction(
    status: PullStatus | None,
    next_begin_offset: int,
    *,
    seek_pending: bool,
    found_messages: int = 1,
    flow_control: bool = False,
) -> LiteReaction:
    """A lite pull consumer's reaction to one pull result (PULL-32).

    FOUND with ``found_messages`` > 0 and no seek pending caches them and appends a consume request. Whatever the
    status (OFFSET_ILLEGAL is only logged: nothing is dropped, no offset stored), the pull offset becomes
    ``next_begin_offset`` unless a seek is pending, and the task runs again at once. An error (``status`` None)
    changes nothing and runs the task again after 1000 ms, 20 ms for a FLOW_CONTROL response.

    pre: 0 <= next_begin_offset <= 10**9 and 0 <= found_messages <= 64
    post: __return__.enqueue == (status == PullStatus.FOUND and found_messages > 0 and not seek_pending)
    post: (__return__.pull_offset is None) == (status is None or seek_pending)
    post: __return__.pull_offset is None or __return__.pull_offset == next_begin_offset
    post: (__return__.repull_delay_ms == 0) == (status is not None)
    post: status is not None or __return__.repull_delay_ms in ERROR_DELAYS_MS
    """
    if status is None:
        delay = PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL if flow_control else PULL_TIME_DELAY_MS_WHEN_EXCEPTION
        return LiteReaction(None, repull_delay_ms=delay)
    enqueue = status is PullStatus.FOUND and found_messages > 0 and not seek_pending
    return LiteReaction(None if seek_pending else next_begin_offset, enqueue=enqueue)


@CLAUSES.oracle("PULL-34")
def consume_progress(cached: frozenset[int], offset_max: int, removed: frozenset[int]) -> int:
    """``ProcessQueue.removeMessage``: the offset a consumer may store once ``removed`` leave the cache (PULL-34):
    the smallest offset still cached, else ``offset_max + 1`` (the last message ever cached, plus one); -1 when the
    cache was empty.

    pre: len(cached) <= 4 and all(0 <= o <= offset_max for o in cached) and offset_max <= 100
    post: cached or __return__ == -1
    post: not cached or __return__ == (min(cached - removed) if cached - removed else offset_max + 1)
    post: not cached or all(__return__ <= o for o in cached - removed)
    """
    if not cached:
        return -1
    rest = cached - removed
    return min(rest) if rest else offset_max + 1


@CLAUSES.oracle("PULL-36")
def seek_allowed(offset: int, min_offset: int, max_offset: int, *, assigned: bool = True) -> bool:
    """Whether ``seek(mq, offset)`` goes ahead (PULL-36): the queue is assigned and min <= offset <= max.

    pre: 0 <= min_offset <= max_offset
    post: __return__ == (assigned and min_offset <= offset <= max_offset)
    """
    return assigned and min_offset <= offset <= max_offset


@CLAUSES.oracle("PULL-34")
def auto_commit_due(remaining_ms: int, *, auto_commit: bool) -> bool:
    """Whether a poll first runs commitAll (PULL-34): auto commit is on and the interval since the last auto commit
    is over (``remaining_ms`` <= 0; the first poll's deadline is -1, always over).

    post: __return__ == (auto_commit and remaining_ms <= 0)
    """
    return auto_commit and remaining_ms <= 0
