"""Offset commit: the broker's oracles: search by time, what a crash keeps, the admin answers (OFF-21, OFF-22,
OFF-25, OFF-27, OFF-28), with their contracts (checked by CrossHair)."""

from __future__ import annotations

import itertools

from rocketspec.spec.offset_commit.clauses import CLAUSES
from rocketspec.spec.offset_commit.oracles import NO_OFFSET
from rocketspec.spec.protocol import FLUSH_INTERVAL_COMMITLOG_MS

# What a store answers for the store time of an offset it has no message at (getMessageStoreTimeStamp).
NO_TIME = -1


def _sorted_times(times: tuple[int, ...]) -> bool:
    """Store times of one queue, by offset: non-negative and never decreasing (one broker clock)."""
    return all(t >= 0 for t in times) and all(a <= b for a, b in itertools.pairwise(times))


def _boundary(times: tuple[int, ...], timestamp: int, found: int) -> bool:
    """Without an entry at ``timestamp``, ``found`` is the last entry before it or the first after it, and the
    later one only when it is strictly nearer."""
    if timestamp in times:
        return True
    before = [i for i, t in enumerate(times) if t < timestamp]
    after = [i for i, t in enumerate(times) if t > timestamp]
    if not before:
        return found == after[0]
    if not after:
        return found == before[-1]
    nearer_after = times[after[0]] - timestamp < timestamp - times[before[-1]]
    return found == (after[0] if nearer_after else before[-1])


def store_time(times: tuple[int, ...], offset: int) -> int:
    """getMessageStoreTimeStamp: the store time of the message at ``offset``, NO_TIME when there is none."""
    return times[offset] if 0 <= offset < len(times) else NO_TIME


@CLAUSES.oracle("OFF-21")
def offset_by_time(times: tuple[int, ...], timestamp: int) -> int:
    """searchOffset / getOffsetInQueueByTime over a queue whose messages were stored at ``times`` (OFF-21).

    The binary search answers the entry it meets stored exactly at ``timestamp``, else the nearer of the last
    entry before and the first after it (the earlier on a tie): so the first entry when every message is later,
    the last entry (not the max offset) when every message is earlier, and 0 for an empty queue.

    pre: len(times) <= 4 and _sorted_times(times)
    post: times or __return__ == 0
    post: not times or 0 <= __return__ < len(times)
    post: not times or times[0] <= timestamp or __return__ == 0
    post: not times or times[-1] >= timestamp or __return__ == len(times) - 1
    post: timestamp not in times or times[__return__] == timestamp
    post: not times or all(abs(times[__return__] - timestamp) <= abs(t - timestamp) for t in times)
    post: not times or _boundary(times, timestamp, __return__)
    """
    low, high = 0, len(times) - 1
    left = right = -1
    left_time = right_time = NO_TIME
    while high >= low:
        mid = (low + high) // 2
        stored = times[mid]
        if stored == timestamp:
            return mid
        if stored > timestamp:
            high, right, right_time = mid - 1, mid, stored
        else:
            low, left, left_time = mid + 1, mid, stored
    if left_time == NO_TIME:
        return max(right, 0)
    if right_time == NO_TIME:
        return left
    return right if abs(timestamp - left_time) > abs(timestamp - right_time) else left


@CLAUSES.oracle("OFF-22")
def crash_keeps(times: tuple[int, ...], crash_ms: int, sync_flush: bool) -> int:
    """How many of a queue's messages (stored at ``times``) a broker crash at ``crash_ms`` keeps at least (OFF-22):
    all of them with SYNC_FLUSH; with ASYNC_FLUSH those the periodic flush wrote, stored at least
    flushIntervalCommitLog before the crash. What it keeps is a prefix of the queue, at least this long.

    pre: len(times) <= 4 and _sorted_times(times) and crash_ms >= 0
    post: 0 <= __return__ <= len(times)
    post: not sync_flush or __return__ == len(times)
    post: sync_flush or all(t + FLUSH_INTERVAL_COMMITLOG_MS <= crash_ms for t in times[:__return__])
    post: sync_flush or all(t + FLUSH_INTERVAL_COMMITLOG_MS > crash_ms for t in times[__return__:])
    """
    if sync_flush:
        return len(times)
    return sum(1 for t in times if t + FLUSH_INTERVAL_COMMITLOG_MS <= crash_ms)


@CLAUSES.oracle("OFF-22")
def offset_after_restart(stored: int, persisted: int, crashed: bool) -> int:
    """The group's offset of a queue after its broker restarts (OFF-22): a clean stop persisted the table, so it
    stays; a crash reloads the last persisted table (NO_OFFSET: the queue was not in it).

    pre: stored >= NO_OFFSET and persisted >= NO_OFFSET
    post: crashed or __return__ == stored
    post: not crashed or __return__ == persisted
    """
    return persisted if crashed else stored


@CLAUSES.oracle("OFF-25", "OFF-21")
def reset_target(times: tuple[int, ...], committed: int, timestamp: int, force: bool) -> int | None:
    """The offset INVOKE_BROKER_TO_RESET_OFFSET gives one queue (OFF-25): the offset at ``timestamp`` (-1: the
    max offset; OFF-21), moved to only when ``force`` or lower than the committed offset, which is kept
    otherwise; None when the group never committed on the queue (the broker then answers SYSTEM_ERROR).

    pre: len(times) <= 3 and _sorted_times(times) and committed >= NO_OFFSET
    post: (__return__ is None) == (committed == NO_OFFSET)
    post: __return__ is None or 0 <= __return__ <= max(committed, len(times))
    post: __return__ is None or force or __return__ <= committed
    post: __return__ is None or timestamp != -1 or __return__ == (len(times) if force else min(committed, len(times)))
    post: __return__ is None or __return__ == committed or __return__ < len(times) or timestamp == -1 or not times
    """
    if committed == NO_OFFSET:
        return None
    target = len(times) if timestamp == -1 else offset_by_time(times, timestamp)
    target = max(target, 0)
    return target if force or target < committed else committed


@CLAUSES.oracle("OFF-27")
def consume_stats_row(times: tuple[int, ...], committed: int) -> tuple[int, int, int]:
    """One queue's row of GET_CONSUME_STATS (OFF-27): (brokerOffset, consumerOffset, lastTimestamp), the max
    offset and the committed offset (negative as 0), and the store time of the message before the committed
    offset when there is one stored after time 0 (else 0).

    pre: len(times) <= 3 and _sorted_times(times) and committed >= NO_OFFSET
    post: __return__[0] == len(times) and __return__[1] == max(committed, 0)
    post: __return__[2] >= 0 and (__return__[2] == 0 or __return__[2] in times)
    post: committed <= 0 or committed > len(times) or __return__[2] == times[committed - 1]
    post: 0 < committed <= len(times) or __return__[2] == 0
    """
    consumer_offset = max(committed, 0)
    last = store_time(times, consumer_offset - 1) if consumer_offset > 0 else 0
    return len(times), consumer_offset, last if last > 0 else 0


@CLAUSES.oracle("OFF-28")
def consume_time_span(times: tuple[int, ...], committed: int, now_ms: int) -> tuple[int, int, int, int]:
    """One queue's QueueTimeSpan of QUERY_CONSUME_TIME_SPAN (OFF-28): (minTimeStamp, maxTimeStamp,
    consumeTimeStamp, delayTime); a store time the queue has no message for is NO_TIME (-1).

    pre: len(times) <= 3 and _sorted_times(times) and committed >= NO_OFFSET
    post: __return__[0] == (times[0] if times else NO_TIME) and __return__[1] == (times[-1] if times else NO_TIME)
    post: committed > 0 or __return__[2] == __return__[0]
    post: committed < len(times) or __return__[3] == 0
    post: not 0 <= committed < len(times) or __return__[3] == now_ms - times[committed]
    """
    first = store_time(times, 0)
    last = store_time(times, len(times) - 1)
    consumed = store_time(times, committed - 1) if committed > 0 else first
    delay = now_ms - store_time(times, committed) if committed < len(times) else 0
    return first, last, consumed, delay
