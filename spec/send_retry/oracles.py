"""Send retry: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum
import string

import attrs

from rocketspec.spec.java import INT_MAX, int32, int_abs, is_blank, rem, utf16_units
from rocketspec.spec.protocol import (
    DEFAULT_PERM,
    DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK,
    DEFAULT_RETRY_RESPONSE_CODES,
    DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
    DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    DEFAULT_SEND_LATENCY_FAULT_ENABLE,
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    FAILED_CALL_LATENCY_MS,
    LATENCY_MAX_MS,
    NOT_ALLOWED_SEND_TOPICS,
    NOT_AVAILABLE_DURATION_MS,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    TOPIC_MAX_LENGTH,
    CommunicationMode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.queues import MessageQueue, java_string_key
from rocketspec.spec.send_retry.clauses import CLAUSES
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile


def _position(index: int, size: int) -> int:
    """``Math.abs(index) % size``, with a negative result replaced by 0 (TopicPublishInfo)."""
    pos = rem(int_abs(index), size)
    return pos if pos >= 0 else 0


def _writable(perm: int) -> bool:
    """``PermName.isWriteable``: the PERM_WRITE bit, tested arithmetically (as ``&`` for any int)."""
    return perm % (2 * PERM_WRITE) >= PERM_WRITE


def _on_other_broker(queue: MessageQueue, broker_name: str) -> bool:
    return queue.broker_name != broker_name


class Failure(enum.Enum):
    """Why an attempt or a send failed, as the caller can tell it."""

    REMOTING = "REMOTING"  # RemotingException: connect or send failure, no response in time
    CLIENT = "CLIENT"  # MQClientException before the request, e.g. the broker address is unknown
    INTERRUPTED = "INTERRUPTED"  # InterruptedException
    BROKER = "BROKER"  # an error response code (MQBrokerException)
    TIMEOUT = "TIMEOUT"  # the budget ran out before an attempt (RemotingTooMuchRequestException)
    NO_ROUTE = "NO_ROUTE"  # the topic's queue list is empty: no attempt (MQClientException, SEND-23)
    REFUSED = "REFUSED"  # the producer refused the message itself: no attempt (MQClientException, SEND-24)


ATTEMPT_FAILURES: tuple[Failure, ...] = (Failure.REMOTING, Failure.CLIENT, Failure.INTERRUPTED)


@attrs.frozen
class QueueData:
    """A broker's entry in a topic route: its write queue count and permission bits."""

    broker_name: str
    write_queue_nums: int
    perm: int = DEFAULT_PERM


@attrs.frozen
class FaultItem:
    """The fault table entry of a broker: latency of its last call and when it is available again."""

    broker_name: str
    latency_ms: int
    start_ms: int


FaultTable = tuple[FaultItem, ...]


def fault_table(items: object) -> FaultTable:
    """A fault table in canonical form: one item per broker (the last given wins), in broker-name order."""
    by_name: dict[str, FaultItem] = {}
    for item in items:  # type: ignore[attr-defined]
        by_name[item.broker_name] = item
    return tuple(sorted(by_name.values(), key=lambda i: java_string_key(i.broker_name)))


@attrs.frozen
class Selection:
    """What one queue selection gives: the queue and the selector's state after it.

    ``queues`` is the topic's queue list afterwards (changed only by the pre-4.9.8 fallback, SEND-19) and
    ``faults`` the fault table afterwards (an item is removed by the fallback).
    """

    queue: MessageQueue
    counter: int
    worst_counter: int
    queues: tuple[MessageQueue, ...]
    faults: FaultTable


@attrs.frozen
class Pick:
    """The outcome of ``pickOneAtLeast``: the brokers it may return (empty: none, or it threw)."""

    candidates: frozenset[str]
    worst_counter: int


# Predicates used by contracts (independent statements of the rules, kept short for one-line conditions).


def _meets_thresholds(latency_ms: int, duration: int) -> bool:
    """Reaching a latencyMax threshold means being avoided at least as long as its duration."""
    table = zip(LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS, strict=True)
    return all(latency_ms < m or duration >= d for m, d in table)


def _below_thresholds(latency_ms: int, duration: int) -> bool:
    """Not reaching a threshold with a non-zero duration means being avoided for less than it."""
    table = zip(LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS, strict=True)
    return all(latency_ms >= m or duration < d or d == 0 for m, d in table)


# Contracts draw names from these: the rules compare names only for equality and order, and a small alphabet
# lets CrossHair cover every path.
_CHECK_BROKERS = ("a", "b")
_CHECK_TOPIC = "t"


def _small_table(faults: FaultTable) -> bool:
    return len(faults) <= 2 and all(i.broker_name in _CHECK_BROKERS for i in faults) and _canonical(faults)


def _small_queues(queues: tuple[MessageQueue, ...]) -> bool:
    return 0 < len(queues) <= 3 and all(q.broker_name in _CHECK_BROKERS for q in queues)


def _small_route(queue_datas: tuple[QueueData, ...]) -> bool:
    return len(queue_datas) <= 2 and all(
        d.broker_name in _CHECK_BROKERS and 0 <= d.write_queue_nums <= 4 for d in queue_datas
    )


def _canonical(faults: FaultTable) -> bool:
    """One item per broker, as :func:`fault_table` builds."""
    return len({i.broker_name for i in faults}) == len(faults)


def _item_of(faults: FaultTable, broker_name: str) -> FaultItem:
    """The fault item of ``broker_name`` (it must have one)."""
    return next(i for i in faults if i.broker_name == broker_name)


def _recorded(item: FaultItem, latency_ms: int, now_ms: int, isolation: bool) -> bool:
    """The item keeps the call's latency and avoids the broker for a table duration: the longest after a
    failure, else at least the duration of every threshold the latency reaches."""
    avoided = item.start_ms - now_ms
    if item.latency_ms != latency_ms or avoided not in NOT_AVAILABLE_DURATION_MS:
        return False
    return avoided == max(NOT_AVAILABLE_DURATION_MS) if isolation else _meets_thresholds(latency_ms, avoided)


def _all_on(queues: tuple[MessageQueue, ...], broker_name: str) -> bool:
    return all(q.broker_name == broker_name for q in queues)


def _all_available(faults: FaultTable, brokers: object, now_ms: int) -> bool:
    return all(_available(faults, b, now_ms) for b in brokers)  # type: ignore[attr-defined]


def _prefers_available(
    faults: FaultTable, queues: tuple[MessageQueue, ...], now_ms: int, results: frozenset[Selection]
) -> bool:
    """When some queue is on an available broker, every selection is on an available broker."""
    if not any(_available(faults, q.broker_name, now_ms) for q in queues):
        return True
    return all(_available(faults, s.queue.broker_name, now_ms) for s in results)


def _better_half_available(faults: FaultTable, now_ms: int) -> bool:
    """At least max(1, count / 2) brokers of the table are available."""
    available = sum(1 for i in faults if _available(faults, i.broker_name, now_ms))
    return available >= max(1, len(faults) // 2)


def _publishable(data: QueueData, brokers_with_master: frozenset[str]) -> bool:
    return _writable(data.perm) and data.broker_name in brokers_with_master


def _publishable_count(queue_datas: tuple[QueueData, ...], brokers_with_master: frozenset[str]) -> int:
    return sum(d.write_queue_nums for d in queue_datas if _publishable(d, brokers_with_master))


def _status_codes() -> frozenset[int]:
    """Response codes that carry a SendStatus: SUCCESS and the codes named like a SendStatus."""
    named = {ResponseCode[s.name] for s in SendStatus if s.name in ResponseCode.__members__}
    return frozenset({ResponseCode.SUCCESS, *named})


# ---------------------------------------------------------------------------------------------------------
# Oracles: attempts, retries, budget.


@CLAUSES.oracle("SEND-1", "SEND-9")
def attempt_limit(
    mode: CommunicationMode,
    retry_times_when_send_failed: int = DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    retry_times_when_send_async_failed: int = DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
) -> int:
    """The most attempts one send may make in ``mode`` (SEND-1); ONEWAY makes exactly one (SEND-9).

    pre: 0 <= retry_times_when_send_failed <= 64 and 0 <= retry_times_when_send_async_failed <= 64
    post: __return__ >= 1
    post: mode != CommunicationMode.SYNC or __return__ > retry_times_when_send_failed
    post: mode != CommunicationMode.ASYNC or __return__ > retry_times_when_send_async_failed
    post: mode != CommunicationMode.ONEWAY or __return__ == 1
    post: __return__ - 1 in (0, retry_times_when_send_failed, retry_times_when_send_async_failed)
    """
    if mode is CommunicationMode.SYNC:
        return 1 + retry_times_when_send_failed
    if mode is CommunicationMode.ASYNC:
        return 1 + retry_times_when_send_async_failed
    return 1


@CLAUSES.oracle("SEND-2")
def attempt_within_budget(elapsed_ms: int, timeout_ms: int = DEFAULT_SEND_MSG_TIMEOUT_MS) -> bool:
    """Whether an attempt may start ``elapsed_ms`` into the send (SEND-2): not if ``timeout < elapsed``.

    post: __return__ or elapsed_ms > timeout_ms
    post: not __return__ or elapsed_ms <= timeout_ms
    """
    return not timeout_ms < elapsed_ms


@CLAUSES.oracle("SEND-5")
def send_status_of(code: int) -> SendStatus | None:
    """The SendStatus a send response with ``code`` gives, or None when it is a broker error (SEND-5).

    post: (__return__ is SendStatus.SEND_OK) == (code == ResponseCode.SUCCESS)
    post: (__return__ is None) == (code not in _status_codes())
    post: __return__ is None or code == ResponseCode.SUCCESS or __return__.value == ResponseCode(code).name
    """
    if code == ResponseCode.SUCCESS:
        return SendStatus.SEND_OK
    if code == ResponseCode.FLUSH_DISK_TIMEOUT:
        return SendStatus.FLUSH_DISK_TIMEOUT
    if code == ResponseCode.FLUSH_SLAVE_TIMEOUT:
        return SendStatus.FLUSH_SLAVE_TIMEOUT
    if code == ResponseCode.SLAVE_NOT_AVAILABLE:
        return SendStatus.SLAVE_NOT_AVAILABLE
    return None


@CLAUSES.oracle("SEND-4", "SEND-7", "SEND-9")
def response_code_retried(
    code: int,
    mode: CommunicationMode = CommunicationMode.SYNC,
    retry_codes: frozenset[int] = DEFAULT_RETRY_RESPONSE_CODES,
) -> bool:
    """Whether a broker error response ``code`` is retried (SEND-4): only in SYNC, only for ``retry_codes``.

    ASYNC never retries an error response (SEND-7) and ONEWAY has no response (SEND-9).

    pre: send_status_of(code) is None
    post: not __return__ or mode == CommunicationMode.SYNC
    post: not __return__ or code in retry_codes
    post: __return__ or mode != CommunicationMode.SYNC or code not in retry_codes
    """
    return mode is CommunicationMode.SYNC and code in retry_codes


@CLAUSES.oracle("SEND-3", "SEND-7", "SEND-9")
def failure_retried(
    kind: Failure, mode: CommunicationMode, profile: VersionProfile = DEFAULT_PROFILE
) -> bool:
    """Whether an attempt failing with ``kind`` (no response) is retried when attempts and budget remain.

    SYNC retries remoting and client exceptions, never an interruption (SEND-3). ASYNC retries failures
    without a response from its callback, and from 4.9.3 an interruption of invokeAsync too; an unknown broker
    address shows before the first request, where sendDefaultImpl's ASYNC loop has one attempt (SEND-7).
    ONEWAY never retries (SEND-9). Broker error codes are :func:`response_code_retried`.

    pre: kind in ATTEMPT_FAILURES
    post: not __return__ or mode != CommunicationMode.ONEWAY
    post: not __return__ or kind != Failure.CLIENT or mode == CommunicationMode.SYNC
    post: kind != Failure.REMOTING or mode == CommunicationMode.ONEWAY or __return__
    post: kind != Failure.INTERRUPTED or mode != CommunicationMode.SYNC or not __return__
    """
    if mode is CommunicationMode.SYNC:
        return kind is not Failure.INTERRUPTED
    if mode is CommunicationMode.ASYNC:
        if kind is Failure.REMOTING:
            return True
        return kind is Failure.INTERRUPTED and profile.at_least("4.9.3")
    return False


@CLAUSES.oracle("SEND-6", "SEND-7")
def status_retried(
    status: SendStatus,
    mode: CommunicationMode = CommunicationMode.SYNC,
    retry_another: bool = DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK,
) -> bool:
    """Whether an attempt answered with ``status`` leads to another attempt (SEND-6, SEND-7).

    Only a SYNC send retries, only a status other than SEND_OK, and only with
    retryAnotherBrokerWhenNotStoreOK; ASYNC delivers any status to onSuccess (SEND-7).

    post: not __return__ or status is not SendStatus.SEND_OK
    post: not __return__ or (mode == CommunicationMode.SYNC and retry_another)
    post: __return__ == (mode == CommunicationMode.SYNC and status != SendStatus.SEND_OK and retry_another)
    """
    return (
        mode is CommunicationMode.SYNC
        and status is not SendStatus.SEND_OK
        and retry_another
    )


# ---------------------------------------------------------------------------------------------------------
# Oracles: latency fault tolerance.


@CLAUSES.oracle("SEND-15", "SEND-14")
def not_available_duration(latency_ms: int, isolation: bool = False) -> int:
    """How long (ms) a broker is avoided after a call that took ``latency_ms`` (SEND-15).

    The highest ``i`` with ``latency >= latencyMax[i]`` gives ``notAvailableDuration[i]``; below the first
    threshold the duration is 0. With ``isolation`` (a failed call) the latency counts as 30000 ms, so the
    duration is the longest one (SEND-14).

    pre: 0 <= latency_ms <= 10**9
    post: __return__ in NOT_AVAILABLE_DURATION_MS
    post: latency_ms < LATENCY_MAX_MS[2] or __return__ >= NOT_AVAILABLE_DURATION_MS[2]
    post: isolation or latency_ms >= LATENCY_MAX_MS[2] or __return__ == 0
    post: _meets_thresholds(latency_ms, __return__)
    post: isolation or _below_thresholds(latency_ms, __return__)
    post: not isolation or __return__ == max(NOT_AVAILABLE_DURATION_MS)
    """
    return _duration(latency_ms, isolation)


# The oracles call these uncontracted forms of each other, so that CrossHair runs them rather than assuming
# their postconditions.


def _duration(latency_ms: int, isolation: bool) -> int:
    effective = FAILED_CALL_LATENCY_MS if isolation else latency_ms
    table = tuple(zip(LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS, strict=True))
    for threshold, duration in reversed(table):
        if effective >= threshold:
            return duration
    return 0


def _available(faults: FaultTable, broker_name: str, now_ms: int) -> bool:
    for item in faults:
        if item.broker_name == broker_name:
            return now_ms - item.start_ms >= 0
    return True


@CLAUSES.oracle("SEND-16")
def broker_available(faults: FaultTable, broker_name: str, now_ms: int) -> bool:
    """Whether ``broker_name`` may be chosen at ``now_ms`` (SEND-16): no fault item, or ``now - start >= 0``.

    pre: _small_table(faults) and broker_name in _CHECK_BROKERS
    post: __return__ or any(i.broker_name == broker_name for i in faults)
    post: __return__ == all(i.start_ms <= now_ms for i in faults if i.broker_name == broker_name)
    """
    return _available(faults, broker_name, now_ms)


@CLAUSES.oracle("SEND-14", "SEND-15")
def record_fault(
    faults: FaultTable,
    broker_name: str,
    latency_ms: int,
    now_ms: int,
    isolation: bool,
    enabled: bool = DEFAULT_SEND_LATENCY_FAULT_ENABLE,
) -> FaultTable:
    """The fault table after ``updateFaultItem(broker, latency, isolation)`` at ``now_ms`` (SEND-14).

    Nothing changes unless ``enabled`` (sendLatencyFaultEnable); then the broker's item becomes
    ``(latency, now + not_available_duration(latency, isolation))`` (SEND-15), other items unchanged.

    pre: _small_table(faults) and broker_name in _CHECK_BROKERS and 0 <= latency_ms <= 10**6
    post: enabled or __return__ == faults
    post: not enabled or _recorded(_item_of(__return__, broker_name), latency_ms, now_ms, isolation)
    post: not enabled or all(i in faults for i in __return__ if i.broker_name != broker_name)
    """
    if not enabled:
        return faults
    item = FaultItem(broker_name, latency_ms, now_ms + _duration(latency_ms, isolation))
    return fault_table((*faults, item))


# ---------------------------------------------------------------------------------------------------------
# Oracles: queue selection.


@CLAUSES.oracle("SEND-11")
def next_index(counter: int, profile: VersionProfile = DEFAULT_PROFILE) -> tuple[int, int]:
    """One call of the round-robin counter (SEND-11): ``(stored value after, value returned)``.

    ``counter`` is the stored per-thread value (a Java int). 4.9.4+: stored + 1 (wrapping), returned masked
    with 0x7FFFFFFF; 4.9.0-4.9.3: returned through ``Math.abs``; 4.3.1: ``Math.abs(stored + 1)``, clamped at
    0, is both stored and returned.

    pre: -(2**31) <= counter <= 2**31 - 1
    post: -(2**31) <= __return__[0] <= 2**31 - 1
    post: not profile.at_least("4.9.4") or 0 <= __return__[1]
    post: profile.at_least("4.9.0") or __return__[0] == __return__[1] >= 0
    post: counter == 2**31 - 1 or __return__[1] == counter + 1 or counter < -1
    """
    return _next(counter, profile)


def _next(counter: int, profile: VersionProfile) -> tuple[int, int]:
    if not profile.at_least("4.9.0"):
        stored = int_abs(int32(counter + 1))
        stored = stored if stored >= 0 else 0
        return stored, stored
    stored = int32(counter + 1)
    if profile.at_least("4.9.4"):
        # stored & 0x7FFFFFFF, as arithmetic (CrossHair reasons about % but not about & on symbolic ints)
        return stored, stored % (INT_MAX + 1)
    return stored, int_abs(stored)


def _round_robin(
    queues: tuple[MessageQueue, ...], counter: int, profile: VersionProfile
) -> tuple[int, int]:
    """Plain round robin: ``(position taken, counter after)``."""
    counter, index = _next(counter, profile)
    return _position(index, len(queues)), counter


@CLAUSES.oracle("SEND-12", "SEND-13")
def select_queue_plain(
    queues: tuple[MessageQueue, ...],
    counter: int,
    last_broker: str | None = None,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> tuple[MessageQueue, int]:
    """Queue selection with sendLatencyFaultEnable off: ``(queue, counter after)`` (SEND-12, SEND-13).

    Without ``last_broker``: plain round robin. With it: up to N probes for a queue on another broker (one
    counter call per probe from 4.9.0; consecutive positions after one call in 4.3.1), else one more plain
    round robin.

    pre: _small_queues(queues) and (last_broker is None or last_broker in _CHECK_BROKERS)
    pre: 0 <= counter < 8
    post: any(__return__[0] is q for q in queues)
    post: last_broker is None or _on_other_broker(__return__[0], last_broker) or _all_on(queues, last_broker)
    post: last_broker is not None or __return__[0] is queues[(counter + 1) % len(queues)]
    post: counter < __return__[1] <= counter + len(queues) + 1
    """
    # Symbolic broker names keep CrossHair from exhausting the paths here: it searches a bounded number.
    # crosshair: max_iterations=40
    if last_broker is None:
        pos, counter = _round_robin(queues, counter, profile)
        return queues[pos], counter
    size = len(queues)
    if profile.at_least("4.9.0"):
        for _ in range(size):
            counter, index = _next(counter, profile)
            candidate = queues[_position(index, size)]
            if _on_other_broker(candidate, last_broker):
                return candidate, counter
    else:
        counter, index = _next(counter, profile)
        for _ in range(size):
            candidate = queues[_position(index, size)]
            index = int32(index + 1)
            if _on_other_broker(candidate, last_broker):
                return candidate, counter
    pos, counter = _round_robin(queues, counter, profile)
    return queues[pos], counter


@CLAUSES.oracle("SEND-18")
def pick_one_at_least(
    faults: FaultTable, now_ms: int, worst_counter: int, profile: VersionProfile = DEFAULT_PROFILE
) -> Pick:
    """The brokers ``pickOneAtLeast`` may return at ``now_ms``, and its counter after (SEND-18).

    Items sort available first, then by lower latency, then by earlier start; items equal on all three are in
    no set order, so every broker of the tie group at the chosen position is a candidate. With fewer than two
    items the first is taken (no counter call); otherwise position ``whichItemWorst.next % (count / 2)``. An
    empty table gives no broker; so does a negative position (4.9.0-4.9.3 at Integer.MIN_VALUE), where Java
    throws.

    pre: _small_table(faults)
    pre: 0 <= worst_counter < 8
    post: __return__.candidates <= {i.broker_name for i in faults}
    post: (len(__return__.candidates) == 0) == (len(faults) == 0)
    post: (__return__.worst_counter == worst_counter) == (len(faults) < 2)
    post: len(faults) != 1 or __return__.candidates == {faults[0].broker_name}
    post: not _better_half_available(faults, now_ms) or _all_available(faults, __return__.candidates, now_ms)
    """
    # Symbolic broker names keep CrossHair from exhausting the paths here: it searches a bounded number.
    # crosshair: max_iterations=40
    return _pick(faults, now_ms, worst_counter, profile)


def _pick(faults: FaultTable, now_ms: int, worst_counter: int, profile: VersionProfile) -> Pick:
    if not faults:
        return Pick(frozenset(), worst_counter)

    def key(item: FaultItem) -> tuple[int, int, int]:
        available = now_ms - item.start_ms >= 0
        return (0 if available else 1, item.latency_ms, item.start_ms)

    ordered = sorted(faults, key=key)
    half = len(ordered) // 2
    if half <= 0:
        position = 0
    else:
        worst_counter, index = _next(worst_counter, profile)
        position = rem(index, half)
        if position < 0:
            return Pick(frozenset(), worst_counter)
    chosen = key(ordered[position])
    return Pick(frozenset(i.broker_name for i in ordered if key(i) == chosen), worst_counter)


@CLAUSES.oracle("SEND-19")
def queue_count_for_fallback(
    queue_datas: tuple[QueueData, ...], broker_name: str, profile: VersionProfile = DEFAULT_PROFILE
) -> int:
    """``getQueueIdByBroker``: writeQueueNums of the broker's first queue data, -1 if none (SEND-19).

    4.9.8 considers writable queue data only; earlier releases any.

    pre: _small_route(queue_datas) and broker_name in _CHECK_BROKERS
    post: __return__ == -1 or any(d.broker_name == broker_name for d in queue_datas)
    post: __return__ >= 0 or not any(d.broker_name == broker_name and _writable(d.perm) for d in queue_datas)
    """
    return _queue_count(queue_datas, broker_name, profile)


def _queue_count(queue_datas: tuple[QueueData, ...], broker_name: str, profile: VersionProfile) -> int:
    writable_only = profile.at_least("4.9.8")
    for data in queue_datas:
        if data.broker_name == broker_name and (not writable_only or _writable(data.perm)):
            return data.write_queue_nums
    return -1


@CLAUSES.oracle("SEND-17", "SEND-18", "SEND-19", "SEND-12")
def select_queue_latency(
    queues: tuple[MessageQueue, ...],
    queue_datas: tuple[QueueData, ...],
    faults: FaultTable,
    now_ms: int,
    counter: int,
    worst_counter: int,
    last_broker: str | None = None,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> frozenset[Selection]:
    """Every selection RocketMQ may make with sendLatencyFaultEnable on (SEND-17, SEND-18, SEND-19).

    One counter call, then N probes from it; the first queue on an available broker (4.3.1: also on the last
    broker, if one is given) is taken (SEND-17). Otherwise a broker from :func:`pick_one_at_least` (SEND-18):
    with writeQueueNums > 0 a plain round robin (SEND-12) and the queue ``(topic, broker, next % count)``,
    which before 4.9.8 also replaces the round-robin queue in the list; else its item is removed and plain
    round robin decides (SEND-19). More than one result only when the pick falls in a tie.

    pre: _small_queues(queues) and _small_table(faults) and _small_route(queue_datas)
    pre: last_broker is None or last_broker in _CHECK_BROKERS
    pre: 0 <= counter < 8 and 0 <= worst_counter < 8
    post: len(__return__) >= 1
    post: all(s.counter > counter for s in __return__)
    post: not profile.at_least("4.9.0") or _prefers_available(faults, queues, now_ms, __return__)
    post: not profile.at_least("4.9.8") or all(s.queues == queues for s in __return__)
    """
    # Symbolic broker names keep CrossHair from exhausting the paths here: it searches a bounded number.
    # crosshair: max_iterations=40
    size = len(queues)
    counter, index = _next(counter, profile)
    for _ in range(size):
        candidate = queues[_position(index, size)]
        index = int32(index + 1)
        if _available(faults, candidate.broker_name, now_ms) and (
            profile.at_least("4.9.0") or last_broker is None or candidate.broker_name == last_broker
        ):
            return frozenset({Selection(candidate, counter, worst_counter, queues, faults)})
    pick = _pick(faults, now_ms, worst_counter, profile)
    if not pick.candidates:
        pos, after = _round_robin(queues, counter, profile)
        return frozenset({Selection(queues[pos], after, pick.worst_counter, queues, faults)})
    results: set[Selection] = set()
    for broker in pick.candidates:
        count = _queue_count(queue_datas, broker, profile)
        if count > 0:
            pos, after = _round_robin(queues, counter, profile)
            after, index = _next(after, profile)
            chosen = MessageQueue(queues[pos].topic, broker, rem(index, count))
            rewritten = queues if profile.at_least("4.9.8") else (*queues[:pos], chosen, *queues[pos + 1:])
            results.add(Selection(chosen, after, pick.worst_counter, rewritten, faults))
        else:
            remaining = tuple(i for i in faults if i.broker_name != broker)
            pos, after = _round_robin(queues, counter, profile)
            results.add(Selection(queues[pos], after, pick.worst_counter, queues, remaining))
    return frozenset(results)


@CLAUSES.oracle("SEND-22")
def publish_queues(
    topic: str,
    queue_datas: tuple[QueueData, ...],
    brokers_with_master: frozenset[str],
    order_topic_conf: str = "",
) -> tuple[MessageQueue, ...]:
    """The topic's queue list for sending (SEND-22).

    With ``order_topic_conf`` ("brokerA:4;brokerB:4") its entries in order; otherwise the queue data sorted
    by broker name (Java order), keeping the writable ones whose broker has a master, ids 0..writeQueueNums-1.

    pre: _small_route(queue_datas) and topic == _CHECK_TOPIC and not order_topic_conf
    post: all(q.broker_name in brokers_with_master for q in __return__)
    post: len(__return__) == _publishable_count(queue_datas, brokers_with_master)
    post: list(__return__) == sorted(__return__, key=lambda q: java_string_key(q.broker_name))
    post: all(0 <= q.queue_id < 4 and q.topic == topic for q in __return__)
    """
    # Symbolic broker names keep CrossHair from exhausting the paths here: it searches a bounded number.
    # crosshair: max_iterations=40
    if order_topic_conf:
        result: list[MessageQueue] = []
        for entry in order_topic_conf.split(";"):
            broker, nums = entry.split(":")
            result.extend(MessageQueue(topic, broker, i) for i in range(int(nums)))
        return tuple(result)
    ordered = sorted(queue_datas, key=lambda d: java_string_key(d.broker_name))
    return tuple(
        MessageQueue(topic, d.broker_name, i)
        for d in ordered
        if _writable(d.perm) and d.broker_name in brokers_with_master
        for i in range(d.write_queue_nums)
    )


#: ``Validators.VALID_CHAR_BIT_MAP``: the characters a topic or group may hold.
TOPIC_CHARACTERS = frozenset("%|-_" + string.ascii_letters + string.digits)
#: The pattern the refusal names (``Validators.VALID_PATTERN_STR``).
TOPIC_PATTERN_TEXT = "^[%|a-zA-Z0-9_-]+$"
#: ``MQClientException``'s response code when none is given.
NO_RESPONSE_CODE = -1


@CLAUSES.oracle("SEND-24")
def message_refusal(topic: str | None, body_len: int | None, max_message_size: int) -> tuple[int, str] | None:
    """Why the producer refuses a message before any attempt (``Validators.checkMessage``, SEND-24), as the
    ``MQClientException``'s response code and message; None when it sends it. In order: a blank topic (null, empty,
    or only Java whitespace), one longer than 127 UTF-16 units, one holding a character outside ``%|a-zA-Z0-9_-``,
    a system topic no one may send to (code -1 each); a null body, an empty one, one over ``max_message_size``
    (MESSAGE_ILLEGAL).

    pre: max_message_size > 0
    pre: topic is None or len(topic) <= 130
    post: __return__ is None or __return__[0] in (NO_RESPONSE_CODE, ResponseCode.MESSAGE_ILLEGAL)
    post: __return__ is not None or (topic is not None and set(topic) <= TOPIC_CHARACTERS and len(topic) <= TOPIC_MAX_LENGTH)
    post: __return__ is not None or (body_len is not None and 0 < body_len <= max_message_size)
    post: __return__ is None or __return__[0] != ResponseCode.MESSAGE_ILLEGAL or not (topic is None or is_blank(topic))
    """  # noqa: E501
    if topic is None or is_blank(topic):
        return NO_RESPONSE_CODE, "The specified topic is blank"
    if len(utf16_units(topic)) > TOPIC_MAX_LENGTH:
        return NO_RESPONSE_CODE, f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
    if not set(topic) <= TOPIC_CHARACTERS:
        return NO_RESPONSE_CODE, (f"The specified topic[{topic}] contains illegal characters, allowing only "
                                  f"{TOPIC_PATTERN_TEXT}")
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return NO_RESPONSE_CODE, f"Sending message to topic[{topic}] is forbidden."
    if body_len is None:
        return int(ResponseCode.MESSAGE_ILLEGAL), "the message body is null"
    if body_len == 0:
        return int(ResponseCode.MESSAGE_ILLEGAL), "the message body length is zero"
    if body_len > max_message_size:
        return int(ResponseCode.MESSAGE_ILLEGAL), f"the message body size over max value, MAX: {max_message_size}"
    return None



# ---------------------------------------------------------------------------------------------------------
# Oracles: sends to a chosen queue, the hash selector, batches.

#: Why a send to a given queue or a selector's queue fails before its attempt (SEND-27).
TOPIC_NOT_EQUAL = "message's topic not equal mq's topic"
SELECTOR_THREW = "select message queue threw exception."
SELECTOR_NULL = "select message queue return null."
#: What send(Collection) throws when the MessageBatch cannot be built (SEND-29).
BATCH_FAILED = "Failed to initiate the MessageBatch"
#: MessageDecoder.encodeMessage: totalSize, magic, bodyCRC, flag and bodyLen ints, then the properties' short length.
BATCH_ENTRY_HEAD_BYTES = 20
BATCH_PROPERTIES_LEN_BYTES = 2


@CLAUSES.oracle("SEND-27")
def direct_send_refusal(
    message_topic: str | None, queue_topic: str | None, by_selector: bool, selector_threw: bool,
    namespace: str | None,
) -> tuple[int, str] | None:
    """Why a send to a given queue (``by_selector`` False: ``send(msg, mq)``) or to the queue a selector returned
    (``sendSelectImpl``) fails before its one attempt, once the message checks passed (SEND-27): the code and message
    of the MQClientException; None when the attempt is made. ``message_topic`` and ``queue_topic`` are as the producer
    compares them, in the namespace; ``queue_topic`` None: the selector returned null, which ``queueWithNamespace``
    dereferences under a non-empty ``namespace``.

    pre: message_topic is None or len(message_topic) <= 4
    pre: queue_topic is None or len(queue_topic) <= 4
    post: __return__ is None or __return__[0] == NO_RESPONSE_CODE
    post: by_selector or (__return__ is None) == (message_topic == queue_topic)
    post: not by_selector or not selector_threw or __return__ == (NO_RESPONSE_CODE, SELECTOR_THREW)
    post: not by_selector or selector_threw or queue_topic is None or __return__ is None
    """
    if by_selector:
        if selector_threw or (queue_topic is None and namespace):
            return NO_RESPONSE_CODE, SELECTOR_THREW
        if queue_topic is None:
            return NO_RESPONSE_CODE, SELECTOR_NULL
        return None
    if message_topic != queue_topic:
        return NO_RESPONSE_CODE, TOPIC_NOT_EQUAL
    return None


@CLAUSES.oracle("SEND-28")
def hash_selection(queue_count: int, hash_code: int) -> int:
    """The position SelectMessageQueueByHash takes among ``queue_count`` queues for an argument whose
    ``hashCode()`` is ``hash_code``: ``Math.abs(hash_code % queue_count)``, Java's truncating % (SEND-28).

    pre: 0 < queue_count <= 64
    pre: -(2**31) <= hash_code <= INT_MAX
    post: 0 <= __return__ < queue_count
    post: hash_code < 0 or __return__ == hash_code % queue_count
    post: (hash_code - __return__) % queue_count == 0 or (hash_code + __return__) % queue_count == 0
    """
    return int_abs(rem(hash_code, queue_count))


@attrs.frozen
class BatchEntry:
    """One message of a batch as MessageBatch and the checks read it (SEND-29): its topic (outside the namespace),
    body length (None: no body), the UTF-8 length of its properties text when encoded, delay level and
    waitStoreMsgOK."""

    topic: str | None
    body_len: int | None
    properties_len: int = 0
    delay_level: int = 0
    wait_store_msg_ok: bool = True


@CLAUSES.oracle("SEND-29")
def batch_refusal(entries: tuple[BatchEntry, ...], max_message_size: int) -> tuple[int, str] | None:
    """Why ``send(Collection)`` cannot build the MessageBatch of ``entries`` (SEND-29): (-1, 'Failed to initiate the
    MessageBatch') for no message, a delay level, a %RETRY% topic, a topic or waitStoreMsgOK unlike the first
    message's, or a message the checks of SEND-24 refuse; None when the batch is built.

    pre: len(entries) <= 2 and max_message_size > 0
    pre: all(e.topic is None or len(e.topic) <= 4 for e in entries)
    post: __return__ is None or __return__ == (NO_RESPONSE_CODE, BATCH_FAILED)
    post: __return__ is not None or (len(entries) > 0 and all(e.topic == entries[0].topic for e in entries))
    post: __return__ is not None or all(e.delay_level <= 0 for e in entries)
    post: __return__ is not None or all(message_refusal(e.topic, e.body_len, max_message_size) is None for e in entries)
    """
    if not entries:
        return NO_RESPONSE_CODE, BATCH_FAILED
    first = entries[0]
    for entry in entries:
        if entry.topic is None or entry.delay_level > 0 or entry.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return NO_RESPONSE_CODE, BATCH_FAILED
        if entry.topic != first.topic or entry.wait_store_msg_ok != first.wait_store_msg_ok:
            return NO_RESPONSE_CODE, BATCH_FAILED
    for entry in entries:
        if message_refusal(entry.topic, entry.body_len, max_message_size) is not None:
            return NO_RESPONSE_CODE, BATCH_FAILED
    return None


@CLAUSES.oracle("SEND-29")
def batch_body_len(entries: tuple[BatchEntry, ...]) -> int:
    """The length of the encoded MessageBatch of ``entries`` (SEND-29), the body the batch's own checks (SEND-24)
    measure: per message 20 bytes of header, its body, 2 bytes and its properties text.

    pre: len(entries) <= 3
    pre: all(e.body_len is not None and 0 <= e.body_len <= 100 and 0 <= e.properties_len <= 100 for e in entries)
    post: __return__ >= 22 * len(entries)
    post: len(entries) != 1 or __return__ == 22 + entries[0].body_len + entries[0].properties_len
    """
    return sum(BATCH_ENTRY_HEAD_BYTES + (e.body_len or 0) + BATCH_PROPERTIES_LEN_BYTES + e.properties_len
               for e in entries)
