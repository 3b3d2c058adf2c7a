"""Producer send retry: attempts, the timeout budget, which failures retry, and queue selection.

One ``send`` of a producer (``DefaultMQProducerImpl.sendDefaultImpl``) makes up to a mode-dependent number of
attempts within one ``sendMsgTimeout`` budget. Each attempt first selects a queue
(``MQFaultStrategy.selectOneMessageQueue``): plain round robin over the topic's writable queues, avoiding the
broker of the previous attempt (``TopicPublishInfo.selectOneMessageQueue``), or, with
``sendLatencyFaultEnable``, the first queue whose broker is not in its "not available" window
(``LatencyFaultToleranceImpl``), falling back to the least bad broker. ASYNC retries happen in the response
callback (``MQClientAPIImpl.sendMessageAsync`` / ``onExceptionImpl``).

The round-robin counter is ``ThreadLocalIndex`` (one per topic and thread, starting at a random value); the
fault table belongs to the producer. Both survive from one send to the next; the previous broker does not.

Version profile notes. The module describes 4.9.0-4.9.8, and the 4.3.1 behaviour that seeds 000 and 003 quote
where it differs (``VersionProfile.of("4.3.1")``): the counter's arithmetic (SEND-11), how often the counter
advances while avoiding the previous broker (SEND-13), the previous-broker filter of the fault-tolerant loop
(SEND-17), which queue data give a fallback broker's queue count and whether the fallback rewrites the topic's
queue list (SEND-19), and the ASYNC retry paths (SEND-7). Java ``int`` arithmetic (wrap-around,
``Math.abs(Integer.MIN_VALUE) < 0``, truncating ``%``) is followed exactly.
"""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.java import INT_MAX, int32, int_abs, rem
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
    NOT_AVAILABLE_DURATION_MS,
    PERM_WRITE,
    CommunicationMode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.queues import MessageQueue, java_string_key
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

CLAUSES = ClauseTable(
    area="send_retry",
    prefix="SEND",
    clauses=(
        Clause(
            "SEND-1",
            "A send makes at most 1 + retryTimesWhenSendFailed (default 2) attempts in SYNC mode, 1 + "
            "retryTimesWhenSendAsyncFailed (default 2) in ASYNC mode (retries made by the response "
            "callback), and exactly 1 in ONEWAY mode.",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.onExceptionImpl; "
            "seed 000 §发送核心代码; seed 003 §发送失败时的重试次数",
        ),
        Clause(
            "SEND-2",
            "One sendMsgTimeout budget (default 3000 ms) covers all attempts of a send: after selecting a "
            "queue, an attempt is made only if the time spent since the send began is <= the budget; "
            "otherwise a SYNC send stops with RemotingTooMuchRequestException (call timeout) unless it holds"
            " a SendResult (SEND-6).",
            "DefaultMQProducerImpl.sendDefaultImpl (timeout < costTime); seed 000 §发送核心代码",
        ),
        Clause(
            "SEND-3",
            "In SYNC mode a RemotingException or MQClientException from an attempt is retried; an "
            "InterruptedException is thrown at once, even when a SendResult is held.",
            "DefaultMQProducerImpl.sendDefaultImpl; seed 000 §发送核心代码",
        ),
        Clause(
            "SEND-4",
            "In SYNC mode a broker error response is retried only if its code is in retryResponseCodes "
            "(TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR, NO_PERMISSION, NO_BUYER_ID, "
            "NOT_IN_CURRENT_UNIT); any other code ends the send, returning a held SendResult or else "
            "throwing MQBrokerException.",
            "DefaultMQProducerImpl.sendDefaultImpl; DefaultMQProducer.retryResponseCodes; "
            "seed 000 §发送核心代码",
            versions="4.3.1-4.9.1: the six codes are a fixed switch; 4.9.2+: the set is configurable "
            "(addRetryResponseCode), same default",
        ),
        Clause(
            "SEND-5",
            "A send response maps SUCCESS to SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and "
            "SLAVE_NOT_AVAILABLE to the SendStatus of the same name, and any other code to "
            "MQBrokerException.",
            "MQClientAPIImpl.processSendResponse",
        ),
        Clause(
            "SEND-6",
            "A SYNC attempt whose SendStatus is not SEND_OK ends the send with that result unless "
            "retryAnotherBrokerWhenNotStoreOK (default false); then the result is held, the next attempt is "
            "made, and the last held result is returned when attempts or budget run out or a non-retried "
            "broker error follows.",
            "DefaultMQProducerImpl.sendDefaultImpl; DefaultMQProducer.retryAnotherBrokerWhenNotStoreOK; seed"
            " 000 §发送核心代码",
        ),
        Clause(
            "SEND-7",
            "In ASYNC mode an attempt that fails without a response (send failure, timeout) is retried from "
            "the callback while attempts remain; a broker error response ends the send (onException) and a "
            "non-OK SendStatus is delivered to onSuccess; a retry whose budget is spent sends no request.",
            "MQClientAPIImpl.sendMessageAsync, onExceptionImpl; NettyRemotingClient.invokeAsync; seed 003 "
            "§异步发送重试次数代码块",
            versions="4.3.1-4.9.2: an interrupted or over-budget retry ends the send at once; 4.9.3+: every "
            "exception of invokeAsync counts as a failed attempt (isolation fault item on the retry"
            " broker) and is retried while attempts remain",
        ),
        Clause(
            "SEND-8",
            "An ASYNC retry goes to the broker of a queue selected with the failed attempt's broker as last "
            "broker, reusing the first request and so its queue id.",
            "MQClientAPIImpl.onExceptionImpl (same RemotingCommand, new opaque)",
        ),
        Clause(
            "SEND-9",
            "A ONEWAY send makes one attempt and has no response: it is sent once written, and an exception "
            "ends it (InterruptedException thrown, any other as MQClientException).",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.sendMessage (invokeOneway)",
        ),
        Clause(
            "SEND-10",
            "When attempts run out after retried failures, a SYNC or ONEWAY send returns a held SendResult "
            "or throws MQClientException \"Send [n] times, still failed\" carrying the last failure; an "
            "ASYNC send passes the last failure to onException.",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.onExceptionImpl",
        ),
        Clause(
            "SEND-11",
            "The round-robin counter (ThreadLocalIndex, random start) advances by one per call and the call "
            "returns the new value made non-negative: & 0x7FFFFFFF (4.9.4+), Math.abs (4.9.0-4.9.3, so "
            "Integer.MIN_VALUE stays negative), or stored as Math.abs(value + 1) clamped at 0 (4.3.1).",
            "ThreadLocalIndex.incrementAndGet; seed 000 §选择队列",
            versions="4.3.1: getAndIncrement, which despite its name returns the new value; 4.9.0-4.9.3: "
            "incrementAndGet returning Math.abs; 4.9.4+: incrementAndGet masked with 0x7FFFFFFF",
        ),
        Clause(
            "SEND-12",
            "Plain round robin takes the queue at position Math.abs(next) % N (0 if negative) of the topic's"
            " queue list, N its length.",
            "TopicPublishInfo.selectOneMessageQueue(); seed 000 §选择队列; seed 003 §随机发送",
        ),
        Clause(
            "SEND-13",
            "With sendLatencyFaultEnable off and a previous broker, the first of N probes whose queue is on "
            "another broker is taken, else one more plain round robin (SEND-12); without a previous broker, "
            "plain round robin.",
            "TopicPublishInfo.selectOneMessageQueue(String); MQFaultStrategy.selectOneMessageQueue; seed 000"
            " §选择队列",
            versions="4.3.1: one counter call, probes at consecutive positions from it; 4.9.0+: one counter "
            "call per probe",
        ),
        Clause(
            "SEND-14",
            "Only with sendLatencyFaultEnable (default false) does an attempt record the fault item of its "
            "broker: latency and start = now + notAvailableDuration(30000 if isolation else latency); "
            "isolation for exceptions and error responses, none for a SendStatus answer, a written oneway, "
            "an ASYNC dispatch or an interruption that ends the send.",
            "MQFaultStrategy.updateFaultItem; LatencyFaultToleranceImpl.updateFaultItem; "
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.sendMessageAsync; "
            "seed 003 §发送Broker容错处理",
        ),
        Clause(
            "SEND-15",
            "notAvailableDuration(latency) is notAvailableDuration[i] for the highest i with latency >= "
            "latencyMax[i] (latencyMax 50, 100, 550, 1000, 2000, 3000, 15000 ms; durations 0, 0, 30000, "
            "60000, 120000, 180000, 600000 ms), and 0 below 50 ms.",
            "MQFaultStrategy.computeNotAvailableDuration; seed 000 §latencyMax与notAvailableDuration对应表",
        ),
        Clause(
            "SEND-16",
            "A broker with no fault item is available; one with an item is available iff now - start >= 0.",
            "LatencyFaultToleranceImpl.isAvailable, FaultItem.isAvailable; seed 003 §发送时的容错判断",
        ),
        Clause(
            "SEND-17",
            "With sendLatencyFaultEnable on, one counter call gives index and the queues at "
            "Math.abs(index++) % N (0 if negative) are probed N times; the first on an available broker is "
            "taken.",
            "MQFaultStrategy.selectOneMessageQueue; seed 000 §选择队列",
            versions="4.3.1: a probed queue is taken only if also no previous broker is given or it is on "
            "the previous broker; 4.9.0+: the previous broker is ignored",
        ),
        Clause(
            "SEND-18",
            "When no probe is available, pickOneAtLeast sorts the fault items (available first, lower "
            "latency, earlier start; ties in no set order), and takes the first if fewer than 2 items, else "
            "item whichItemWorst.next % (count / 2).",
            "LatencyFaultToleranceImpl.pickOneAtLeast, FaultItem.compareTo; seed 000 §pickOneAtLeast",
            versions="4.3.1-4.9.3: the items are shuffled before the stable sort; 4.9.4+: ConcurrentHashMap "
            "order",
        ),
        Clause(
            "SEND-19",
            "If the picked broker has writeQueueNums > 0 the result is (topic, broker, next % "
            "writeQueueNums) after one plain round robin; otherwise its item is removed and plain round "
            "robin decides; any exception also falls back to plain round robin.",
            "MQFaultStrategy.selectOneMessageQueue; TopicPublishInfo.getQueueIdByBroker",
            versions="4.3.1-4.9.7: getQueueIdByBroker ignores permissions and the fallback rewrites the "
            "round-robin queue in the topic's queue list; 4.9.8: writable queue data only, a new "
            "queue is returned",
        ),
        Clause(
            "SEND-20",
            "Each attempt of a send selects with the broker of the previous attempt of the same send as last"
            " broker; a new send starts with none, while the counters and fault table carry over.",
            "DefaultMQProducerImpl.sendDefaultImpl (lastBrokerName); seed 000 §故障延迟机制",
        ),
        Clause(
            "SEND-21",
            "A finished send (result returned, exception thrown or callback called) makes no further "
            "attempt.",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.onExceptionImpl",
        ),
        Clause(
            "SEND-22",
            "The topic's queue list is the orderTopicConf entries in order if set, else for each queue data "
            "sorted by broker name that is writable and whose broker has a master, queue ids "
            "0..writeQueueNums-1.",
            "MQClientInstance.topicRouteData2TopicPublishInfo; seed 000 §TopicPublishInfo",
        ),
    ),
)


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


# ---------------------------------------------------------------------------------------------------------
# State machine: the sends of one producer thread to one topic.


class OutcomeKind(enum.Enum):
    PENDING = "PENDING"
    SENT = "SENT"
    FAILED = "FAILED"


@attrs.frozen
class Outcome:
    """How the current send stands: pending, sent (with the SendStatus; None for ONEWAY), or failed.

    A failure names its kind, the broker code for ``Failure.BROKER``, and whether attempts ran out
    (``exhausted``, SEND-10) rather than a failure ending the send at once.
    """

    kind: OutcomeKind
    status: SendStatus | None = None
    failure: Failure | None = None
    code: int | None = None
    exhausted: bool = False


PENDING = Outcome(OutcomeKind.PENDING)


@attrs.frozen
class Config:
    """The producer settings and the topic route a model runs with."""

    mode: CommunicationMode
    fault_enabled: bool
    retry_another: bool = DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK
    timeout_ms: int = DEFAULT_SEND_MSG_TIMEOUT_MS
    retry_times: int = DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED
    async_retry_times: int = DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED
    retry_codes: frozenset[int] = DEFAULT_RETRY_RESPONSE_CODES
    queue_datas: tuple[QueueData, ...] = ()
    profile: VersionProfile = DEFAULT_PROFILE

    @property
    def limit(self) -> int:
        return attempt_limit(self.mode, self.retry_times, self.async_retry_times)


@attrs.frozen
class SendState:
    """A producer thread sending messages one after another.

    ``attempts`` counts the attempts of the current send (``times``), ``requests`` those that put a request
    on the wire; ``last`` is the queue of the previous attempt (its broker is the last broker, SEND-20);
    ``first_queue_id`` the queue id of the first request (ASYNC retries reuse it, SEND-8); ``held`` the
    non-OK SendResult a SYNC send keeps (SEND-6).
    """

    config: Config
    queues: tuple[MessageQueue, ...]
    faults: FaultTable
    counter: int
    worst_counter: int
    now_ms: int = 0
    sends: int = 1
    started_ms: int = 0
    attempts: int = 0
    requests: int = 0
    last: MessageQueue | None = None
    first_queue_id: int | None = None
    in_flight: MessageQueue | None = None
    held: SendStatus | None = None
    outcome: Outcome = PENDING
    waited: bool = False

    @property
    def done(self) -> bool:
        return self.outcome.kind is not OutcomeKind.PENDING

    @property
    def elapsed_ms(self) -> int:
        return self.now_ms - self.started_ms


@attrs.frozen
class NewSend:
    """The thread starts sending the next message."""


@attrs.frozen
class SelectQueue:
    """A queue is selected for the next attempt (and the attempt starts if the budget allows)."""

    queue: MessageQueue


@attrs.frozen
class AttemptAnswered:
    """The attempt in flight got a SendStatus after ``latency_ms`` (ONEWAY: written, status None)."""

    latency_ms: int
    status: SendStatus | None


@attrs.frozen
class BrokerErrorResponse:
    """The attempt in flight got an error response ``code`` after ``latency_ms``."""

    latency_ms: int
    code: int


@attrs.frozen
class AttemptFailed:
    """The attempt in flight failed with an exception (no response) after ``latency_ms``."""

    latency_ms: int
    kind: Failure


@attrs.frozen
class TimePasses:
    """Time passes between two sends."""

    ms: int


Action = NewSend | SelectQueue | AttemptAnswered | BrokerErrorResponse | AttemptFailed | TimePasses


def selections(state: SendState) -> frozenset[Selection]:
    """Every selection the producer may make for the next attempt of ``state``'s send (SEND-13, SEND-17)."""
    cfg = state.config
    last = state.last.broker_name if state.last is not None else None
    if cfg.fault_enabled:
        return select_queue_latency(
            state.queues, cfg.queue_datas, state.faults, state.now_ms, state.counter, state.worst_counter,
            last, cfg.profile,
        )
    queue, counter = select_queue_plain(state.queues, state.counter, last, cfg.profile)
    return frozenset({Selection(queue, counter, state.worst_counter, state.queues, state.faults)})


def _selection_for(state: SendState, queue: MessageQueue) -> Selection | None:
    for selection in selections(state):
        if selection.queue == queue:
            return selection
    return None


def _awaiting_selection(state: SendState) -> bool:
    return not state.done and state.in_flight is None


@CLAUSES.oracle("SEND-9", "SEND-21", "SEND-7")
def enabled(state: SendState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state``.

    A queue is selected only while the send is pending with nothing in flight (SEND-21), and only a queue the
    selector can give; outcomes only for an attempt in flight: ONEWAY gets no response (SEND-9), and in ASYNC
    mode an unknown broker address (CLIENT) can only fail the first attempt (SEND-7). Time passes and new
    sends start only between sends.
    """
    cfg = state.config
    if isinstance(action, NewSend):
        return state.done
    if isinstance(action, TimePasses):
        return state.done and not state.waited and action.ms > 0
    if isinstance(action, SelectQueue):
        return _awaiting_selection(state) and _selection_for(state, action.queue) is not None
    if state.done or state.in_flight is None:
        return False
    if isinstance(action, AttemptAnswered):
        return (action.status is None) == (cfg.mode is CommunicationMode.ONEWAY)
    if isinstance(action, BrokerErrorResponse):
        return cfg.mode is not CommunicationMode.ONEWAY and send_status_of(action.code) is None
    if isinstance(action, AttemptFailed):
        if action.kind not in ATTEMPT_FAILURES:
            return False
        # In ASYNC mode only the first attempt goes through sendKernelImpl, where an unknown broker address
        # shows; the callback's retries cannot fail that way.
        first = state.requests == 1
        return action.kind is not Failure.CLIENT or cfg.mode is not CommunicationMode.ASYNC or first
    return False


def _record(state: SendState, broker_name: str, latency_ms: int, now_ms: int, isolation: bool) -> FaultTable:
    return record_fault(state.faults, broker_name, latency_ms, now_ms, isolation, state.config.fault_enabled)


def _end(state: SendState, outcome: Outcome) -> SendState:
    return attrs.evolve(state, outcome=outcome, in_flight=None)


def _ran_out(state: SendState, failure: Failure, code: int | None) -> SendState:
    """Attempts are used up after a retried failure (SEND-10)."""
    if state.held is not None:
        return _end(state, Outcome(OutcomeKind.SENT, status=state.held))
    return _end(state, Outcome(OutcomeKind.FAILED, failure=failure, code=code, exhausted=True))


def _retry_or_end(state: SendState, failure: Failure, code: int | None) -> SendState:
    if state.attempts < state.config.limit:
        return attrs.evolve(state, in_flight=None)
    return _ran_out(state, failure, code)


def _select(state: SendState, queue: MessageQueue) -> SendState:
    cfg = state.config
    selection = _selection_for(state, queue)
    assert selection is not None
    state = attrs.evolve(
        state, counter=selection.counter, worst_counter=selection.worst_counter, queues=selection.queues,
        faults=selection.faults,
    )
    retry = state.attempts > 0
    if cfg.mode is CommunicationMode.ASYNC and retry:
        # The callback resends the first request: only the broker is new (SEND-8).
        assert state.first_queue_id is not None
        queue = MessageQueue(queue.topic, queue.broker_name, state.first_queue_id)
    if not attempt_within_budget(state.elapsed_ms, cfg.timeout_ms):
        if cfg.mode is CommunicationMode.ASYNC and retry:
            if not cfg.profile.at_least("4.9.3"):
                return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.TIMEOUT))
            # invokeAsync throws before writing; the callback path counts it as a failed attempt (SEND-7).
            state = attrs.evolve(
                state, attempts=state.attempts + 1, last=queue,
                faults=_record(state, queue.broker_name, 0, state.now_ms, isolation=True),
            )
            return _retry_or_end(state, Failure.TIMEOUT, None)
        if state.held is not None:
            return _end(state, Outcome(OutcomeKind.SENT, status=state.held))
        return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.TIMEOUT))
    state = attrs.evolve(
        state, attempts=state.attempts + 1, requests=state.requests + 1, last=queue, in_flight=queue,
        first_queue_id=queue.queue_id if state.first_queue_id is None else state.first_queue_id,
    )
    if cfg.mode is CommunicationMode.ASYNC and not retry:
        # sendDefaultImpl records the dispatch of the first ASYNC request as a quick call (SEND-14).
        state = attrs.evolve(
            state, faults=_record(state, queue.broker_name, 0, state.now_ms, isolation=False)
        )
    return state


def _answered(state: SendState, action: AttemptAnswered) -> SendState:
    cfg = state.config
    assert state.in_flight is not None
    now = state.now_ms + action.latency_ms
    faults = _record(state, state.in_flight.broker_name, action.latency_ms, now, isolation=False)
    state = attrs.evolve(state, now_ms=now, faults=faults)
    if action.status is not None and status_retried(action.status, cfg.mode, cfg.retry_another):
        return _retry_or_end(attrs.evolve(state, held=action.status), Failure.BROKER, None)
    return _end(state, Outcome(OutcomeKind.SENT, status=action.status))


def _broker_error(state: SendState, action: BrokerErrorResponse) -> SendState:
    cfg = state.config
    assert state.in_flight is not None
    now = state.now_ms + action.latency_ms
    faults = _record(state, state.in_flight.broker_name, action.latency_ms, now, isolation=True)
    state = attrs.evolve(state, now_ms=now, faults=faults)
    if response_code_retried(action.code, cfg.mode, cfg.retry_codes):
        return _retry_or_end(state, Failure.BROKER, action.code)
    if state.held is not None:
        return _end(state, Outcome(OutcomeKind.SENT, status=state.held))
    return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.BROKER, code=action.code))


def _failed(state: SendState, action: AttemptFailed) -> SendState:
    cfg = state.config
    assert state.in_flight is not None
    broker = state.in_flight.broker_name
    now = state.now_ms + action.latency_ms
    interrupted = action.kind is Failure.INTERRUPTED
    retried = failure_retried(action.kind, cfg.mode, cfg.profile)
    if interrupted and not retried:
        # sendDefaultImpl records an interruption without isolation; the pre-4.9.3 ASYNC retry path records
        # nothing (the first ASYNC attempt's interruption still goes through sendDefaultImpl).
        record = cfg.mode is not CommunicationMode.ASYNC or state.requests == 1
        faults = _record(state, broker, action.latency_ms, now, isolation=False) if record else state.faults
        return _end(
            attrs.evolve(state, now_ms=now, faults=faults),
            Outcome(OutcomeKind.FAILED, failure=Failure.INTERRUPTED),
        )
    faults = _record(state, broker, action.latency_ms, now, isolation=True)
    state = attrs.evolve(state, now_ms=now, faults=faults)
    if retried:
        return _retry_or_end(state, action.kind, None)
    # Not retried but not thrown either: sendDefaultImpl's loop ends after its single ASYNC/ONEWAY attempt.
    return _ran_out(state, action.kind, None)


@CLAUSES.oracle(
    "SEND-2", "SEND-3", "SEND-4", "SEND-6", "SEND-7", "SEND-8", "SEND-10", "SEND-14", "SEND-20", "SEND-21"
)
def step(state: SendState, action: Action) -> SendState:
    """The state after ``action`` (which must be enabled).

    Selecting applies the selector's result, then the budget check (SEND-2): over budget a SYNC send ends
    (with a held result if any, SEND-6) and an ASYNC retry fails without a request (SEND-7); otherwise the
    request goes out (ASYNC retries keep the first queue id, SEND-8). Outcomes record fault items (SEND-14)
    and retry or end the send (SEND-3, SEND-4, SEND-6, SEND-7, SEND-10). A new send clears the previous
    broker and keeps the counters and fault table (SEND-20); nothing else moves a finished send (SEND-21).
    """
    require_enabled(enabled, state, action, Action)
    if isinstance(action, NewSend):
        return attrs.evolve(
            state, sends=state.sends + 1, started_ms=state.now_ms, attempts=0, requests=0, last=None,
            first_queue_id=None, in_flight=None, held=None, outcome=PENDING, waited=False,
        )
    if isinstance(action, TimePasses):
        return attrs.evolve(state, now_ms=state.now_ms + action.ms, waited=True)
    if isinstance(action, SelectQueue):
        return _select(state, action.queue)
    if isinstance(action, AttemptAnswered):
        return _answered(state, action)
    if isinstance(action, BrokerErrorResponse):
        return _broker_error(state, action)
    if isinstance(action, AttemptFailed):
        return _failed(state, action)
    raise TypeError(f"not an action: {action!r}")


# ---------------------------------------------------------------------------------------------------------
# Invariants.


def _limit_respected(state: SendState) -> bool:
    return state.attempts <= state.config.limit and state.requests <= state.attempts


def _faults_only_when_enabled(state: SendState) -> bool:
    return state.config.fault_enabled or state.faults == ()


def _finished_idle(state: SendState) -> bool:
    return not state.done or state.in_flight is None


def _oneway_never_retried(state: SendState) -> bool:
    return state.config.mode is not CommunicationMode.ONEWAY or state.attempts <= 1


INVARIANTS: tuple[Invariant[SendState], ...] = (
    Invariant("attempts within the mode's limit", ("SEND-1",), _limit_respected),
    Invariant("ONEWAY makes one attempt", ("SEND-9",), _oneway_never_retried),
    Invariant("fault items only with sendLatencyFaultEnable", ("SEND-14",), _faults_only_when_enabled),
    Invariant("a finished send has nothing in flight", ("SEND-21",), _finished_idle),
)


def _new_request(before: SendState, after: SendState) -> bool:
    return after.requests > before.requests and after.sends == before.sends


def _no_request_over_budget(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, SelectQueue):
        return True
    within = before.elapsed_ms <= before.config.timeout_ms
    return _new_request(before, after) == within


def _plain_retry_avoids_last_broker(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, SelectQueue) or before.config.fault_enabled or before.last is None:
        return True
    if after.last is None or after.attempts == before.attempts:
        return True
    last = before.last.broker_name
    if all(q.broker_name == last for q in before.queues):
        return True
    return after.last.broker_name != last


def _latency_selection_prefers_available(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, SelectQueue) or not before.config.fault_enabled:
        return True
    cfg = before.config
    last = before.last.broker_name if before.last is not None else None

    def eligible(broker: str) -> bool:
        if not broker_available(before.faults, broker, before.now_ms):
            return False
        return cfg.profile.at_least("4.9.0") or last is None or broker == last

    if not any(eligible(q.broker_name) for q in before.queues):
        return True
    return broker_available(before.faults, action.queue.broker_name, before.now_ms)


def _non_retried_code_ends(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, BrokerErrorResponse):
        return True
    cfg = before.config
    if cfg.mode is CommunicationMode.SYNC and action.code in cfg.retry_codes:
        return True
    return after.done


def _retried_failure_retries(before: SendState, action: Action, after: SendState) -> bool:
    cfg = before.config
    if cfg.mode is not CommunicationMode.SYNC:
        return True
    if isinstance(action, AttemptFailed) and action.kind is not Failure.INTERRUPTED:
        pass
    elif isinstance(action, BrokerErrorResponse) and action.code in cfg.retry_codes:
        pass
    else:
        return True
    if after.attempts < 1 + cfg.retry_times:
        return not after.done
    return after.done


def _exhausted_after_all_attempts(before: SendState, action: Action, after: SendState) -> bool:
    out = after.outcome
    if before.done or not (out.kind is OutcomeKind.FAILED and out.exhausted):
        return True
    cfg = before.config
    expected = {
        CommunicationMode.SYNC: 1 + cfg.retry_times,
        CommunicationMode.ASYNC: 1 + cfg.async_retry_times,
        CommunicationMode.ONEWAY: 1,
    }[cfg.mode]
    ended_early = cfg.mode is CommunicationMode.ASYNC and out.failure is Failure.CLIENT
    return after.attempts == expected or ended_early


def _interrupt_thrown(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, AttemptFailed) or action.kind is not Failure.INTERRUPTED:
        return True
    if before.config.mode is not CommunicationMode.SYNC:
        return True
    return after.outcome == Outcome(OutcomeKind.FAILED, failure=Failure.INTERRUPTED)


def _status_handling(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, AttemptAnswered) or action.status is None:
        return True
    cfg = before.config
    if action.status is SendStatus.SEND_OK or cfg.mode is not CommunicationMode.SYNC or not cfg.retry_another:
        return after.outcome == Outcome(OutcomeKind.SENT, status=action.status)
    if after.attempts < cfg.limit:
        return not after.done and after.held is action.status
    return after.outcome == Outcome(OutcomeKind.SENT, status=action.status)


def _held_result_returned(before: SendState, action: Action, after: SendState) -> bool:
    if before.done or not after.done or before.held is None:
        return True
    if isinstance(action, AttemptFailed) and action.kind is Failure.INTERRUPTED:
        return True
    if isinstance(action, AttemptAnswered):
        return True
    return after.outcome == Outcome(OutcomeKind.SENT, status=before.held)


def _faults_recorded(before: SendState, action: Action, after: SendState) -> bool:
    cfg = before.config
    if not cfg.fault_enabled:
        return after.faults == before.faults
    if not isinstance(action, AttemptAnswered | BrokerErrorResponse | AttemptFailed):
        return True
    if isinstance(action, AttemptFailed) and action.kind is Failure.INTERRUPTED and after.done:
        return True
    assert before.in_flight is not None
    broker = before.in_flight.broker_name
    items = [i for i in after.faults if i.broker_name == broker]
    if len(items) != 1 or items[0].latency_ms != action.latency_ms:
        return False
    avoided = items[0].start_ms - after.now_ms
    if isinstance(action, AttemptAnswered):
        return avoided == not_available_duration(action.latency_ms)
    return avoided == NOT_AVAILABLE_DURATION_MS[-1]


def _finished_send_stays_finished(before: SendState, action: Action, after: SendState) -> bool:
    if not before.done or isinstance(action, NewSend):
        return True
    return (
        after.attempts == before.attempts
        and after.requests == before.requests
        and after.counter == before.counter
        and after.outcome == before.outcome
    )


def _counter_moves_only_on_selection(before: SendState, action: Action, after: SendState) -> bool:
    if isinstance(action, SelectQueue):
        return after.counter != before.counter
    return after.counter == before.counter and after.worst_counter == before.worst_counter


def _last_broker_scope(before: SendState, action: Action, after: SendState) -> bool:
    if isinstance(action, NewSend):
        return after.last is None and after.attempts == 0 and after.faults == before.faults
    return True


def _async_retry_keeps_queue_id(before: SendState, action: Action, after: SendState) -> bool:
    if before.config.mode is not CommunicationMode.ASYNC or not isinstance(action, SelectQueue):
        return True
    if before.attempts == 0 or after.last is None or after.attempts == before.attempts:
        return True
    return after.last.queue_id == before.first_queue_id and after.last.broker_name == action.queue.broker_name


def _queue_list_stable(before: SendState, action: Action, after: SendState) -> bool:
    if before.config.profile.at_least("4.9.8") or not before.config.fault_enabled:
        return after.queues == before.queues
    return len(after.queues) == len(before.queues)


STEP_INVARIANTS: tuple[StepInvariant[SendState, Action], ...] = (
    StepInvariant("no request after the budget is spent", ("SEND-2",), _no_request_over_budget),
    StepInvariant(
        "a plain retry avoids the last broker", ("SEND-13", "SEND-20"), _plain_retry_avoids_last_broker
    ),
    StepInvariant(
        "latency selection takes an available broker when there is one",
        ("SEND-16", "SEND-17"),
        _latency_selection_prefers_available,
    ),
    StepInvariant("a non-retried code ends the send", ("SEND-4", "SEND-7"), _non_retried_code_ends),
    StepInvariant(
        "a retried SYNC failure is retried while attempts remain", ("SEND-3", "SEND-4"),
        _retried_failure_retries,
    ),
    StepInvariant(
        "attempts run out only at the mode's limit", ("SEND-1", "SEND-10"), _exhausted_after_all_attempts
    ),
    StepInvariant("a SYNC interruption is thrown", ("SEND-3",), _interrupt_thrown),
    StepInvariant("SendStatus handling", ("SEND-6", "SEND-7"), _status_handling),
    StepInvariant("a held result is returned", ("SEND-6",), _held_result_returned),
    StepInvariant("fault items follow the latency table", ("SEND-14", "SEND-15"), _faults_recorded),
    StepInvariant("a finished send never attempts again", ("SEND-21",), _finished_send_stays_finished),
    StepInvariant(
        "the counters move only when selecting", ("SEND-11", "SEND-12"), _counter_moves_only_on_selection
    ),
    StepInvariant("a new send has no last broker", ("SEND-20",), _last_broker_scope),
    StepInvariant("an ASYNC retry keeps the first queue id", ("SEND-8",), _async_retry_keeps_queue_id),
    StepInvariant(
        "the queue list changes only by the old fallback", ("SEND-19", "SEND-22"), _queue_list_stable
    ),
)


# ---------------------------------------------------------------------------------------------------------
# Model.

_TOPIC = "TopicTest"


def _candidate_actions(
    state: SendState,
    latencies: tuple[int, ...],
    statuses: tuple[SendStatus, ...],
    codes: tuple[int, ...],
    wait_ms: int,
) -> list[Action]:
    """Every action of the bounds, whatever the phase: ``enabled`` decides which can happen."""
    actions: list[Action] = [NewSend()]
    if wait_ms > 0 and state.faults:
        # Time between sends matters only to fault items.
        actions.append(TimePasses(wait_ms))
    actions.extend(SelectQueue(s.queue) for s in selections(state))
    for latency in latencies:
        actions.extend(AttemptAnswered(latency, status) for status in (None, *statuses))
        actions.extend(BrokerErrorResponse(latency, code) for code in codes)
        actions.extend(AttemptFailed(latency, kind) for kind in ATTEMPT_FAILURES)
    return actions


def model(
    profile: VersionProfile = DEFAULT_PROFILE,
    brokers: tuple[str, ...] = ("broker-a", "broker-b"),
    queues_per_broker: int = 2,
    modes: tuple[CommunicationMode, ...] = tuple(CommunicationMode),
    max_sends: int = 2,
    counters: tuple[int, ...] = (0, 1),
    latencies: tuple[int, ...] = (0, DEFAULT_SEND_MSG_TIMEOUT_MS),
    statuses: tuple[SendStatus, ...] = (SendStatus.SEND_OK, SendStatus.FLUSH_DISK_TIMEOUT),
    codes: tuple[int, ...] = (ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY),
    timeout_ms: int = DEFAULT_SEND_MSG_TIMEOUT_MS,
    wait_ms: int = 60_000,
) -> Model[SendState, Action]:
    """Sends of one producer thread over ``brokers`` x ``queues_per_broker`` queues, in every mode, with
    sendLatencyFaultEnable off and on (and retryAnotherBrokerWhenNotStoreOK off and on for SYNC).

    Initial fault tables (when enabled): empty, the first broker avoided, every broker avoided with different
    latencies (the fallback) one of which expires when the budget is spent, and a tie with a broker no longer
    in the route. ``wait_ms`` > 0 lets that much time pass once between sends.
    """
    queue_datas = tuple(QueueData(b, queues_per_broker) for b in brokers)
    queues = publish_queues(_TOPIC, queue_datas, frozenset(brokers))
    tables: list[FaultTable] = [
        (),
        # The first broker avoided for the whole send.
        fault_table([FaultItem(brokers[0], 3000, 180_000)]),
        # Every broker avoided (the fallback picks the lowest latency); the first one is available again once
        # the budget is spent.
        fault_table([FaultItem(b, 1000 * (n + 1), timeout_ms + 60_000 * n) for n, b in enumerate(brokers)]),
        # A tie between all route brokers, and a broker that left the route, available and so picked first:
        # its item is removed (SEND-19) and the next fallback falls in the tie.
        fault_table([*(FaultItem(b, 3000, 600_000) for b in brokers), FaultItem("broker-gone", 0, 0)]),
    ]
    initial: list[SendState] = []
    for mode in modes:
        for enabled_ in (False, True):
            for retry_another in (False, True) if mode is CommunicationMode.SYNC else (False,):
                cfg = Config(
                    mode, enabled_, retry_another, timeout_ms=timeout_ms, queue_datas=queue_datas,
                    profile=profile,
                )
                for table in tables if enabled_ else [()]:
                    for counter in counters:
                        initial.append(SendState(cfg, queues, table, counter, counter))

    def actions(state: SendState) -> list[Action]:
        acts = _candidate_actions(state, latencies, statuses, codes, wait_ms)
        if state.sends >= max_sends:
            return [a for a in acts if not isinstance(a, NewSend | TimePasses)]
        return acts

    return Model(
        area="send_retry",
        bounds=(
            f"{len(brokers)} brokers x {queues_per_broker} queues, modes {'/'.join(m.value for m in modes)}, "
            f"fault tolerance off/on, retryAnotherBroker off/on, {max_sends} sends, "
            f"latencies {latencies} ms, budget {timeout_ms} ms, wait {wait_ms} ms"
            f", counters {counters}, {profile}"
        ),
        initial=tuple(initial),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )


__all__ = [
    "ATTEMPT_FAILURES",
    "CLAUSES",
    "INVARIANTS",
    "PENDING",
    "STEP_INVARIANTS",
    "Action",
    "AttemptAnswered",
    "AttemptFailed",
    "BrokerErrorResponse",
    "Config",
    "Failure",
    "FaultItem",
    "FaultTable",
    "NewSend",
    "Outcome",
    "OutcomeKind",
    "Pick",
    "QueueData",
    "SelectQueue",
    "Selection",
    "SendState",
    "TimePasses",
    "attempt_limit",
    "attempt_within_budget",
    "broker_available",
    "enabled",
    "failure_retried",
    "fault_table",
    "model",
    "next_index",
    "not_available_duration",
    "pick_one_at_least",
    "publish_queues",
    "queue_count_for_fallback",
    "record_fault",
    "response_code_retried",
    "select_queue_latency",
    "select_queue_plain",
    "selections",
    "send_status_of",
    "status_retried",
    "step",
]
