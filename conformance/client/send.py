"""Client cases for sending (SEND-*): attempts per mode, the failed broker avoided, the timeout budget, latency
fault tolerance, the round-robin queue list. The served brokers answer errors or answer late; the producer's
SEND_MESSAGE requests are grouped into sends by the message's body (the driver contract asks for a distinct body per
message, and every client resends the same body; UNIQ_KEY is not used, as some clients renew it per attempt) and
judged with
``rocketspec.spec.send_retry``: its oracles, or (``replay_sends``) its state machine fed with what the wire shows.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable
from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.client.context import SEND_CODES, SUITE_SEND_TIMEOUT_MS, ClientContext, Frame, client_case
from rocketspec.conformance.client.driver import Event
from rocketspec.conformance.model import CaseFailed, CaseList, Level
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import (
    DEFAULT_PERM,
    MASTER_ID,
    PERM_READ,
    CommunicationMode,
    RequestCode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.send_retry import (
    AttemptAnswered,
    AttemptFailed,
    BrokerErrorResponse,
    Config,
    Failure,
    FaultItem,
    NewSend,
    OutcomeKind,
    QueueData,
    SelectQueue,
    SendState,
    attempt_limit,
    attempt_within_budget,
    broker_available,
    enabled,
    fault_table,
    not_available_duration,
    pick_one_at_least,
    publish_queues,
    response_code_retried,
    selections,
    send_status_of,
    status_retried,
    step,
)

cases = CaseList("client/send")
CASES = cases.cases

BROKER_A, BROKER_B = "broker-a", "broker-b"
DONE_TIMEOUT_S = 30.0  # generous: a JVM client on a loaded machine; only a failing case waits it out


def sync_config(retries: int) -> Config:
    """The send model's configuration of a SYNC producer as the suite starts it (fault tolerance off)."""
    return Config(CommunicationMode.SYNC, fault_enabled=False, retry_times=retries, timeout_ms=SUITE_SEND_TIMEOUT_MS)


def send_key(frame: Frame) -> str:
    """What identifies one message across its attempts: its body (distinct per message by the driver contract)."""
    return (frame.command.body or b"").decode("utf-8", "replace")


def attempts_by_send(ctx: ClientContext, topic: str) -> list[list[Frame]]:
    """The producer's SEND requests for ``topic`` grouped by message, in the order the sends began."""
    groups: dict[str, list[Frame]] = {}
    for frame in ctx.requests(SEND_CODES, where=lambda f: f.field("topic") == topic):
        groups.setdefault(send_key(frame), []).append(frame)
    return list(groups.values())


def describe(attempts: list[Frame]) -> str:
    return " -> ".join(f"{f.node}@{f.at_s:.3f}s" for f in attempts)


def run_producer(ctx: ClientContext, topic: str, count: int, **options: Any) -> list[Event]:
    """Start a producer for ``count`` messages and wait for its ``count`` send events and done."""
    producer = ctx.start("producer", topic=topic, group=ctx.name("pgroup"), count=count, **options)
    sends = producer.require("send", count, min(DONE_TIMEOUT_S, ctx.remaining()),
                             what="the producer to report its sends")
    producer.require("done", 1, min(DONE_TIMEOUT_S, ctx.remaining()), what="the producer to finish")
    return sends


@cases.case("sync-retry-another-broker", clauses=("SEND-1", "SEND-4", "SEND-13", "SEND-20"),
            requirement="a SYNC send answered SYSTEM_ERROR is retried, on another broker, within 1 + retries attempts")
@client_case()
def sync_retry_another_broker(ctx: ClientContext) -> None:
    """broker-a answers every send SYSTEM_ERROR (a retried code, SEND-4). Each SYNC send makes at most
    1 + retryTimesWhenSendFailed attempts (SEND-1); an attempt after a failed one selects with the failed broker as
    last broker and so goes to the other broker (SEND-13, SEND-20); the sends then succeed on broker-b."""
    topic = ctx.topic(2)
    ctx.faults.fail(BROKER_A, "SEND_MESSAGE", code="SYSTEM_ERROR")
    sends = run_producer(ctx, topic, 6, send_mode="sync", retries=2)
    limit = attempt_limit(CommunicationMode.SYNC, 2)
    groups = attempts_by_send(ctx, topic)
    # Where the round-robin counter starts is the client's (random): broker-a may be met first or on a retry.
    ctx.expect(any(f.node == BROKER_A for g in groups for f in g), "at least one attempt on broker-a",
               "; ".join(describe(g) for g in groups) or "no SEND requests")
    for attempts in groups:
        ctx.expect(len(attempts) <= limit, f"at most {limit} attempts per SYNC send (SEND-1)", describe(attempts))
        for before, after in itertools.pairwise(attempts):
            ctx.expect(before.node == BROKER_A and after.node != before.node,
                       "an attempt after a failed one goes to another broker (SEND-13)", describe(attempts))
    failed = [s for s in sends if not s.get("ok")]
    ctx.expect(not failed, "every send succeeds on broker-b after broker-a's SYSTEM_ERROR",
               f"failed sends: {failed}")
    ctx.expect(all(s.get("broker") in (None, BROKER_B) for s in sends), "every send result names broker-b",
               str([s.get("broker") for s in sends]))


@cases.case("sync-attempts-exhausted", clauses=("SEND-1", "SEND-4", "SEND-10", "SEND-20"),
            requirement="a SYNC send failing everywhere makes exactly 1 + retryTimesWhenSendFailed attempts, then "
                        "fails")
@client_case()
def sync_attempts_exhausted(ctx: ClientContext) -> None:
    """Both brokers answer SYSTEM_ERROR: each SYNC send makes exactly 1 + retryTimesWhenSendFailed attempts
    (SEND-1, SEND-4), alternating brokers (SEND-20), and then reports the failure (SEND-10)."""
    topic = ctx.topic(2)
    ctx.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_ERROR")
    retries = 1
    sends = run_producer(ctx, topic, 2, send_mode="sync", retries=retries)
    limit = attempt_limit(CommunicationMode.SYNC, retries)
    groups = attempts_by_send(ctx, topic)
    ctx.expect(len(groups) == 2, "2 sends on the wire", f"{len(groups)}")
    for attempts in groups:
        ctx.expect(len(attempts) == limit, f"exactly {limit} attempts per send (SEND-1)", describe(attempts))
        ctx.expect(all(a.node != b.node for a, b in itertools.pairwise(attempts)),
                   "each retry on the other broker (SEND-13, SEND-20)", describe(attempts))
    ctx.expect(all(s.get("ok") is False for s in sends), "every send reported failed (SEND-10)", str(sends))


@cases.case("sync-non-retried-code", clauses=("SEND-4", "SEND-5"),
            requirement="a SYNC send answered with a code outside retryResponseCodes is not retried",
            level=Level.SHOULD)
@client_case()
def sync_non_retried_code(ctx: ClientContext) -> None:
    """Both brokers answer SYSTEM_BUSY, which is not in retryResponseCodes: each send makes one attempt and fails
    with the broker's error (SEND-4, SEND-5)."""
    topic = ctx.topic(2)
    ctx.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_BUSY")
    sends = run_producer(ctx, topic, 2, send_mode="sync", retries=2)
    retried = response_code_retried(ResponseCode.SYSTEM_BUSY, CommunicationMode.SYNC)
    expected = attempt_limit(CommunicationMode.SYNC, 2) if retried else 1
    for attempts in attempts_by_send(ctx, topic):
        ctx.expect(len(attempts) == expected, f"{expected} attempt(s) for a SYSTEM_BUSY answer (SEND-4)",
                   describe(attempts))
    ctx.expect(all(s.get("ok") is False for s in sends), "every send reported failed (SEND-5)", str(sends))


@cases.case("async-error-not-retried", clauses=("SEND-7", "SEND-1"),
            requirement="an ASYNC send answered with a broker error ends at once (onException), no retry",
            level=Level.SHOULD)
@client_case()
def async_error_not_retried(ctx: ClientContext) -> None:
    """broker-a answers SYSTEM_ERROR: in ASYNC mode a broker error response ends the send (SEND-7), so a send whose
    attempt went to broker-a makes that one attempt and fails; the others succeed on broker-b."""
    topic = ctx.topic(2)
    ctx.faults.fail(BROKER_A, "SEND_MESSAGE", code="SYSTEM_ERROR")
    sends = run_producer(ctx, topic, 6, send_mode="async", retries=2)
    groups = attempts_by_send(ctx, topic)
    on_a = [g for g in groups if g[0].node == BROKER_A]
    ctx.expect(bool(on_a), "at least one send whose attempt goes to broker-a", "; ".join(map(describe, groups)))
    retried = response_code_retried(ResponseCode.SYSTEM_ERROR, CommunicationMode.ASYNC)
    for attempts in on_a:
        ctx.expect(retried or len(attempts) == 1, "one attempt for an ASYNC send answered SYSTEM_ERROR (SEND-7)",
                   describe(attempts))
    failed = sum(1 for s in sends if s.get("ok") is False)
    ctx.expect(failed == len(on_a), f"{len(on_a)} failed callbacks (the sends broker-a refused)",
               f"{failed} failed: {sends}")


@cases.case("oneway-one-attempt", clauses=("SEND-9", "SEND-1"),
            requirement="a ONEWAY send makes exactly one attempt, whatever the broker does with it")
@client_case()
def oneway_one_attempt(ctx: ClientContext) -> None:
    """broker-a loses every send: ONEWAY sends expect no response, so each makes exactly one attempt (SEND-9)."""
    topic = ctx.topic(2)
    ctx.faults.drop(BROKER_A, "SEND_MESSAGE")
    run_producer(ctx, topic, 6, send_mode="oneway", retries=2)
    ctx.sleep(1.0)  # a late retry would show now
    limit = attempt_limit(CommunicationMode.ONEWAY)
    groups = attempts_by_send(ctx, topic)
    ctx.expect(len(groups) == 6, "6 sends on the wire", str(len(groups)))
    for attempts in groups:
        ctx.expect(len(attempts) == limit, f"{limit} attempt per ONEWAY send (SEND-9)", describe(attempts))


@cases.case("timeout-budget", clauses=("SEND-2",),
            requirement="no attempt of a send starts after its sendMsgTimeout budget is spent")
@client_case()
def timeout_budget(ctx: ClientContext) -> None:
    """The topic lives on broker-a only, which answers sends 4000 ms late; sendMsgTimeout is 2500 ms. The first
    attempt times out having spent the budget, so the send makes no further attempt (SEND-2) and fails. (The budget
    also pays for the route lookup and the first connection: a client just started on a loaded machine may need
    more than a second for those, and then makes no attempt at all.)"""
    timeout_ms = 2500
    topic = ctx.topic(1, brokers=[BROKER_A])
    ctx.faults.delay(BROKER_A, "SEND_MESSAGE", ms=4000)
    sends = run_producer(ctx, topic, 1, send_mode="sync", retries=2, send_timeout_ms=timeout_ms)
    ctx.sleep(0.5)
    groups = attempts_by_send(ctx, topic)
    ctx.expect(len(groups) == 1, "1 send on the wire", str(len(groups)))
    attempts = groups[0]
    first = attempts[0].at_s
    # The wire shows when the request arrived; 100 ms covers the client's clock against ours.
    late = [a for a in attempts[1:] if not attempt_within_budget(int((a.at_s - first) * 1000) - 100, timeout_ms)]
    ctx.expect(not late, f"no attempt more than {timeout_ms} ms after the first (SEND-2)", describe(attempts))
    ctx.expect(sends[0].get("ok") is False, "the send fails (its budget is spent)", str(sends[0]))


def _latency_case(ctx: ClientContext, *, fail: bool) -> None:
    topic = ctx.topic(2)
    if fail:
        ctx.faults.fail(BROKER_A, "SEND_MESSAGE", code="SYSTEM_ERROR")
    else:
        ctx.faults.delay(BROKER_A, "SEND_MESSAGE", ms=700)
    run_producer(ctx, topic, 8, send_mode="sync", retries=2, latency_fault=True)
    attempts = [f for g in attempts_by_send(ctx, topic) for f in g]
    first_a = next((i for i, f in enumerate(attempts) if f.node == BROKER_A), None)
    ctx.expect(first_a is not None, "an attempt on broker-a", describe(attempts))
    assert first_a is not None
    hit = attempts[first_a]
    answer = ctx.response_to(hit)
    latency_ms = int(((answer.at_s if answer else hit.at_s + 0.7) - hit.at_s) * 1000)
    # The fault item the client records for broker-a (SEND-14, SEND-15), from the call's latency as we saw it.
    duration = not_available_duration(latency_ms if not fail else 0, isolation=fail)
    ctx.expect(duration > 0, "a latency that isolates broker-a (SEND-15)", f"{latency_ms} ms")
    start_ms = int(hit.at_s * 1000) + latency_ms + duration
    table = fault_table((FaultItem(BROKER_A, latency_ms, start_ms),))
    later = [f for f in attempts[first_a + 1:] if f.node == BROKER_A
             and not broker_available(table, BROKER_A, int(f.at_s * 1000))]
    ctx.expect(not later, f"no attempt on broker-a for {duration} ms after its "
                          f"{'failure' if fail else f'{latency_ms} ms answer'} (SEND-16, SEND-17)",
               describe(attempts))


@cases.case("latency-isolates-failed-broker", clauses=("SEND-14", "SEND-15", "SEND-16", "SEND-17"),
            requirement="with sendLatencyFaultEnable a broker whose send failed is not chosen while isolated",
            level=Level.SHOULD)
@client_case()
def latency_isolates_failed_broker(ctx: ClientContext) -> None:
    """sendLatencyFaultEnable on; broker-a answers SYSTEM_ERROR. The failed call records a fault item with isolation
    (SEND-14: notAvailableDuration of 30000 ms latency, SEND-15), so broker-a is unavailable (SEND-16) and the
    latency-aware selection takes a queue on broker-b for every later send (SEND-17)."""
    _latency_case(ctx, fail=True)


@cases.case("latency-avoids-slow-broker", clauses=("SEND-14", "SEND-15", "SEND-16", "SEND-17"),
            requirement="with sendLatencyFaultEnable a broker that answered slowly is avoided for its duration",
            level=Level.SHOULD)
@client_case()
def latency_avoids_slow_broker(ctx: ClientContext) -> None:
    """sendLatencyFaultEnable on; broker-a answers 700 ms late (successfully). The call's latency gives a fault item
    of notAvailableDuration(latency) (30000 ms from 550 ms, SEND-15), so later sends avoid broker-a (SEND-16/17)."""
    _latency_case(ctx, fail=False)


# ------------------------------------------------------------------------------------------ replaying the model


def client_route(ctx: ClientContext, topic: str) -> tuple[tuple[QueueData, ...], frozenset[str]]:
    """The route the client was given for ``topic`` (its first answered GET_ROUTEINFO_BY_TOPIC): the queue data
    and the broker names with a master."""
    for request in ctx.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC, where=lambda f: f.field("topic") == topic):
        answer = ctx.response_to(request)
        if answer is None or answer.code != ResponseCode.SUCCESS:
            continue
        body = requests.json_body(answer.command) or {}
        datas = tuple(QueueData(str(q["brokerName"]), int(q["writeQueueNums"]), int(q.get("perm", DEFAULT_PERM)))
                      for q in body.get("queueDatas", []))
        masters = frozenset(str(b["brokerName"]) for b in body.get("brokerDatas", [])
                            if any(int(k) == MASTER_ID for k in (b.get("brokerAddrs") or {})))
        return datas, masters
    ctx.expect(False, f"an answered GET_ROUTEINFO_BY_TOPIC for {topic} from the producer", "none seen")
    raise AssertionError("unreachable")


def attempt_queue(frame: Frame) -> MessageQueue:
    return MessageQueue(frame.field("topic") or "", frame.node, frame.int_field("queueId"))


def show_queue(queue: MessageQueue) -> str:
    return f"{queue.broker_name}:{queue.queue_id}"


def replay_sends(ctx: ClientContext, topic: str, sends: list[dict[str, object]], config: Config, *,
                 unreachable: frozenset[str] = frozenset()) -> int:
    """Replay what the producer did through the send model (``rocketspec.spec.send_retry.step``); returns how many
    attempts went to the ``unreachable`` brokers (connection refused: they never reach the wire).

    The queue list is the oracle's (``publish_queues``) for the route the client got (SEND-22). The round-robin
    counter starts at random (SEND-11), so the replay tries each start position and keeps one under which every
    observation fits: every attempt is the one the model selects next (SEND-12, SEND-13), a selection on an
    unreachable broker fails without a response and is retried (SEND-3), a finished send makes no further attempt
    (SEND-21), an unfinished one does not stop, and each reported result is the model's (SEND-5, SEND-6, SEND-10).
    Sync sends are sequential, so the n-th send on the wire is message n. The failure shown is the one of the start
    that matches the first attempt.
    """
    datas, masters = client_route(ctx, topic)
    queues = publish_queues(topic, datas, masters)
    groups = attempts_by_send(ctx, topic)
    ctx.expect(len(groups) == len(sends), f"{len(sends)} sends on the wire", str(len(groups)))
    first = attempt_queue(groups[0][0])
    ctx.expect(first in queues, f"the first attempt on a queue of the list {[show_queue(q) for q in queues]} "
                                "(SEND-22)", show_queue(first))
    starts = sorted(range(len(queues)), key=lambda p: p != queues.index(first))
    failure: CaseFailed | None = None
    for position in starts:
        try:
            return _replay_from(ctx, queues, groups, sends, config, position - 1, unreachable)
        except CaseFailed as error:
            failure = failure or error
    assert failure is not None
    raise failure


def _replay_from(ctx: ClientContext, queues: tuple[MessageQueue, ...], groups: list[list[Frame]],
                 sends: list[dict[str, object]], config: Config, counter: int, unreachable: frozenset[str]) -> int:
    state = SendState(config, queues, fault_table(()), counter=counter, worst_counter=0)
    hidden = 0

    def fail_unreachable(state: SendState) -> SendState:
        nonlocal hidden
        while not state.done and state.in_flight is None:
            [selection] = selections(state)
            if selection.queue.broker_name not in unreachable:
                break
            hidden += 1
            state = step(step(state, SelectQueue(selection.queue)), AttemptFailed(0, Failure.REMOTING))
        return state

    for index, (attempts, result) in enumerate(zip(groups, sends, strict=True)):
        if index:
            state = step(state, NewSend())
        for number, attempt in enumerate(attempts, start=1):
            state = fail_unreachable(state)
            queue = attempt_queue(attempt)
            where = f"send {index} attempt {number}"
            if state.done:
                ctx.expect(False, f"{where}: none, the send had finished (SEND-21)", describe(attempts))
            if not enabled(state, SelectQueue(queue)):
                wanted = sorted(show_queue(s.queue) for s in selections(state))
                ctx.expect(False, f"{where} on {' or '.join(wanted)} (round robin over "
                                  f"{[show_queue(q) for q in queues]}: SEND-11, SEND-12, SEND-13)",
                           f"{show_queue(queue)}; sends so far: "
                           + "; ".join(describe(g) for g in groups[:index + 1]))
            state = step(state, SelectQueue(queue))
            ctx.expect(state.in_flight is not None, f"{where}: none, the budget was spent (SEND-2)", describe(attempts))
            answer = ctx.response_to(attempt)
            ctx.expect(answer is not None, f"{where} answered by the broker", "no answer seen")
            assert answer is not None
            latency = max(0, int((answer.at_s - attempt.at_s) * 1000))
            status = send_status_of(answer.code)
            state = step(state, AttemptAnswered(latency, status) if status is not None
                         else BrokerErrorResponse(latency, answer.code))
        state = fail_unreachable(state)
        ctx.expect(state.done, f"send {index}: another attempt after {describe(attempts)} (the model retries)",
                   "none")
        outcome = state.outcome
        if outcome.kind is OutcomeKind.SENT:
            expected = {"ok": True, "status": outcome.status.value if outcome.status else None}
        else:
            expected = {"ok": False}
        actual = {k: result.get(k) for k in expected}
        ctx.expect(actual == expected, f"send {index} reported {expected} (SEND-5, SEND-6, SEND-10)", str(result))
    return hidden


@cases.case("round-robin-queue-list", clauses=("SEND-11", "SEND-12", "SEND-21", "SEND-22"),
            requirement="consecutive sends take the writable queues sorted by broker name one after another",
            level=Level.SHOULD)
@client_case(brokers=3)
def round_robin_queue_list(ctx: ClientContext) -> None:
    """The topic has 2 queues on broker-a, 4 read and 3 write queues on broker-b, and 2 read-only queues on
    broker-c. The producer's queue list is broker-a 0..1 then broker-b 0..2 (sorted by broker name, write queue
    counts, writable only: SEND-22); its counter starts anywhere and moves by one per selection (SEND-11), so
    each send takes the queue after the previous one's, wrapping (SEND-12), once each (SEND-21)."""
    topic = ctx.name("topic")
    # broker-b first: the route's order is not the list's.
    ctx.cluster.create_topic(topic, 4, write_queues=3, brokers=["broker-b"])
    ctx.cluster.create_topic(topic, 2, brokers=[BROKER_A])
    ctx.cluster.create_topic(topic, 2, perm=PERM_READ, brokers=["broker-c"])
    count = 11
    sends = run_producer(ctx, topic, count, send_mode="sync", retries=2)
    replay_sends(ctx, topic, sends, sync_config(2))


@cases.case("finished-send-no-further-attempt", clauses=("SEND-21", "SEND-12", "SEND-13", "SEND-10"),
            requirement="a send that returned or threw makes no further attempt")
@client_case()
def finished_send_no_further_attempt(ctx: ClientContext) -> None:
    """broker-a answers SYSTEM_ERROR, so sends that start there are retried on broker-b and end there; with one
    retry, a send whose retry lands on broker-a again cannot happen, but a finished send must not make another
    attempt either way (SEND-21). The attempts are replayed through the send model: each is the queue the model
    selects (SEND-12, SEND-13) and no attempt of a message comes after its result, also a second later."""
    topic = ctx.topic(2)
    ctx.faults.fail(BROKER_A, "SEND_MESSAGE", code="SYSTEM_ERROR")
    retries = 1
    sends = run_producer(ctx, topic, 6, send_mode="sync", retries=retries)
    ctx.sleep(1.0)  # a late attempt would show now
    replay_sends(ctx, topic, sends, sync_config(retries))
    for attempts, result in zip(attempts_by_send(ctx, topic), sends, strict=False):
        late = [a for a in attempts if a.at_s > float(result.get("_at", 0.0))]
        ctx.expect(not late, "no attempt after the send's result was reported (SEND-21)",
                   f"{describe(attempts)}; result at {result.get('_at')}s")


def flush_disk_timeout(topic: str) -> Callable[[RemotingCommand], RemotingCommand | None]:
    """A responder answering each send to ``topic`` FLUSH_DISK_TIMEOUT with a result header (msgId, queueId,
    queueOffset), as a SYNC_FLUSH broker does when the flush does not complete in time."""
    offsets = itertools.count()

    def respond(request: RemotingCommand) -> RemotingCommand | None:
        fields = request.ext_fields
        if fields.get("topic", fields.get("b")) != topic:
            return None
        queue_id = fields.get("queueId", fields.get("e", "0"))
        offset = next(offsets)
        return request.response(ResponseCode.FLUSH_DISK_TIMEOUT,
                                {"msgId": f"{offset:032X}", "queueId": queue_id, "queueOffset": offset},
                                remark="rocketspec conformance: crafted FLUSH_DISK_TIMEOUT")

    return respond


@cases.case("flush-disk-timeout-returned", clauses=("SEND-5", "SEND-6", "SEND-21"),
            requirement="a SYNC send answered FLUSH_DISK_TIMEOUT returns that status without another attempt",
            level=Level.SHOULD)
@client_case()
def flush_disk_timeout_returned(ctx: ClientContext) -> None:
    """broker-a answers every send FLUSH_DISK_TIMEOUT (stored, not flushed in time). The answer maps to
    SendStatus.FLUSH_DISK_TIMEOUT (SEND-5); with retryAnotherBrokerWhenNotStoreOK at its default (false) the send
    ends with that result (SEND-6) and makes no attempt on broker-b (SEND-21)."""
    topic = ctx.topic(2)
    ctx.answer(BROKER_A, RequestCode.SEND_MESSAGE_V2, flush_disk_timeout(topic), times=100)
    ctx.answer(BROKER_A, RequestCode.SEND_MESSAGE, flush_disk_timeout(topic), times=100)
    sends = run_producer(ctx, topic, 4, send_mode="sync", retries=2)
    config = sync_config(2)
    ctx.expect(not status_retried(SendStatus.FLUSH_DISK_TIMEOUT, CommunicationMode.SYNC, config.retry_another),
               "the oracle: FLUSH_DISK_TIMEOUT is not retried by default (SEND-6)", "retried")
    groups = attempts_by_send(ctx, topic)
    ctx.expect(any(g[0].node == BROKER_A for g in groups), "at least one send whose attempt goes to broker-a",
               "; ".join(map(describe, groups)))
    replay_sends(ctx, topic, sends, config)



def refused_port() -> int:
    """A loopback port nothing listens on (bound and released): a connection to it is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@cases.case("unreachable-broker-retried", clauses=("SEND-3", "SEND-13", "SEND-12"),
            requirement="a SYNC attempt whose connection is refused is retried on another broker")
@client_case(brokers=1)
def unreachable_broker_retried(ctx: ClientContext) -> None:
    """The name server also routes the topic to broker-0, a master registered at an address that refuses
    connections; broker-0 sorts before broker-a, so the queue list is broker-0:0, broker-a:0. A send selecting
    broker-0 fails with a RemotingConnectException, which a SYNC send retries (SEND-3) on the other broker
    (SEND-13): replayed through the send model, every send ends SEND_OK on broker-a, some after a refused attempt."""
    topic = ctx.topic(1, brokers=[BROKER_A])
    fake = "broker-0"
    served = ctx.cluster.cluster
    assert served is not None
    cluster = next(iter(served.brokers.values())).config.cluster_name
    answer = ctx.suite_client("namesrv").request(requests.register_broker(
        cluster, fake, f"127.0.0.1:{refused_port()}", topics={topic: {"readQueueNums": 1, "writeQueueNums": 1}}))
    ctx.expect(answer.code == ResponseCode.SUCCESS, f"the set-up REGISTER_BROKER of {fake} answered SUCCESS",
               str(answer.code))
    sends = run_producer(ctx, topic, 4, send_mode="sync", retries=2)
    hidden = replay_sends(ctx, topic, sends, sync_config(2),
                          unreachable=frozenset({fake}))
    ctx.expect(hidden > 0, f"at least one send selecting {fake} first (then retried, SEND-3)", "none did")


@cases.case("latency-picks-least-bad-broker", clauses=("SEND-18", "SEND-19", "SEND-14", "SEND-16"),
            requirement="with sendLatencyFaultEnable and every broker isolated, a send goes to the broker with the "
                        "lowest latency", level=Level.SHOULD)
@client_case()
def latency_picks_least_bad_broker(ctx: ClientContext) -> None:
    """sendLatencyFaultEnable on; both brokers answer SYSTEM_ERROR, broker-a 300 ms late. Each failure isolates its
    broker (SEND-14), so once both failed neither is available (SEND-16) and each further attempt takes the broker
    pickOneAtLeast gives for the fault table built from the observed latencies: the lower latency, broker-b
    (SEND-18), which has write queues, so the attempt goes there (SEND-19)."""
    topic = ctx.topic(2)
    ctx.faults.delay(BROKER_A, "SEND_MESSAGE", ms=300)
    ctx.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_ERROR")
    run_producer(ctx, topic, 2, send_mode="sync", retries=2, latency_fault=True)
    attempts = [f for g in attempts_by_send(ctx, topic) for f in g]
    items: dict[str, FaultItem] = {}
    judged = 0
    for attempt in attempts:
        now_ms = int(attempt.at_s * 1000)
        table = fault_table(tuple(items.values()))
        if set(items) == set(ctx.broker_names) and not any(broker_available(table, b, now_ms) for b in items):
            judged += 1
            pick = pick_one_at_least(table, now_ms, 0)
            ctx.expect(attempt.node in pick.candidates,
                       f"the attempt at {attempt.at_s:.3f}s on {' or '.join(sorted(pick.candidates))}, the least bad "
                       f"of {[(i.broker_name, i.latency_ms) for i in table]} (SEND-18, SEND-19)", attempt.node)
        answer = ctx.response_to(attempt)
        ctx.expect(answer is not None, "every attempt answered", describe(attempts))
        assert answer is not None
        latency_ms = int((answer.at_s - attempt.at_s) * 1000)
        end_ms = int(answer.at_s * 1000)
        items[attempt.node] = FaultItem(attempt.node, latency_ms, end_ms + not_available_duration(latency_ms, True))
    ctx.expect(judged > 0, "an attempt made while both brokers were isolated", describe(attempts))
