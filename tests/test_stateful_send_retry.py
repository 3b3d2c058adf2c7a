"""Lockstep: the send_retry spec (SEND-*) drives the reference implementation's producer.

Each run draws its configuration (``tests/dimensions.py``): 1-3 brokers, the topic's read and write queue counts and
permission, the producer's retryTimesWhenSendFailed, retryTimesWhenSendAsyncFailed, retryAnotherBrokerWhenNotStoreOK,
sendLatencyFaultEnable and sendMsgTimeout, and the client namespace; the random starts of the round-robin counters
are drawn too. Rules send in SYNC, ASYNC and ONEWAY mode (``NewSend``, with ``TimePasses`` for the time since the
last send, driven through the spec), inject faults per broker or on all of them (error codes retried or not, non-OK
SendStatus answers, lost requests and responses, delays that reach the latency table or the budget, closed
connections) and let time pass.

The producer's ``SendAttempt`` and ``SendResultEvent`` events are observed as ``SelectQueue`` / ``AttemptAnswered`` /
``BrokerErrorResponse`` / ``AttemptFailed`` actions, each of which must be enabled in the spec's state (the queue one
the selector may pick, SEND-12, SEND-13, SEND-17, SEND-18; no attempt after the send ended, SEND-1, SEND-21), at the
time the spec expects (SEND-2). After each send the spec's outcome must be what the caller got (SEND-3..10), and the
projections must agree: the round-robin counter, whichItemWorst and the fault table (SEND-11, SEND-14, SEND-15,
SEND-16, SEND-18, SEND-19), and so must the topic the producer routes and the brokers store the messages under: the
message topic wrapped in the namespace (SEND-25, SEND-26), while each SendResult names it unwrapped. The spec state
carries over from one send to the next (SEND-20); the mode is the send's.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule
from lockstep import LockstepMachine, machine_test, variant_caught, variant_needs

from rocketspec.refimpl import Cluster
from rocketspec.refimpl import route as route_module
from rocketspec.refimpl.client import latency as latency_module
from rocketspec.refimpl.client import producer as producer_module
from rocketspec.refimpl.client import sending as sending_module
from rocketspec.refimpl.client import validators as validators_module
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError, RemotingTooMuchRequestError
from rocketspec.refimpl.events import SendAttempt, SendResultEvent
from rocketspec.refimpl.message import Message
from rocketspec.refimpl.remoting import RemotingCommand, RemotingError
from rocketspec.spec import send_retry as spec
from rocketspec.spec.protocol import (
    DEFAULT_PERM,
    CommunicationMode,
    Property,
    RequestCode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.queues import MessageQueue

TOPIC = "TopicTest"
SEND_CODES = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
# Error codes a broker may answer: retried by default in SYNC mode (SEND-4) or not.
RETRIED_CODES = (ResponseCode.SYSTEM_ERROR, ResponseCode.TOPIC_NOT_EXIST)
OTHER_CODES = (ResponseCode.SYSTEM_BUSY, ResponseCode.MESSAGE_ILLEGAL)
# Non-OK statuses a broker answers for a stored message (SEND-5, SEND-6).
NOT_OK = (SendStatus.FLUSH_DISK_TIMEOUT, SendStatus.FLUSH_SLAVE_TIMEOUT, SendStatus.SLAVE_NOT_AVAILABLE)
# One-way extra delays: the round trip is 2 * (1 + delay) ms, so these reach latencyMax 50, 550, 1000, 2000 and,
# the last, the 3000 ms budget (SEND-15, SEND-2).
DELAYS = (30, 300, 600, 1100, 1600)
WAITS = (1_000, 30_000, 60_000, 200_000, 700_000)
# Topics the producer's checks refuse (SEND-24): blank ones (Java whitespace; a no-break space is not), too long
# ones in UTF-16 units (64 emoji are 128 units), illegal characters (a trailing newline too), system topics; and the
# machine's own topic (with an odd body). The machine follows one topic: valid names of other topics are not drawn.
ODD_TOPICS = (TOPIC, "", " \t", "\u00a0", "a" * 128, "\U0001F600" * 64, "a b", "abc\n", "SCHEDULE_TOPIC_XXXX",
              "RMQ_SYS_TRANS_HALF_TOPIC")
# Arguments of the hash selector (SEND-28): Integer, negative ones, a Long, a Boolean, Strings.
HASH_ARGS = (0, 1, 7, -7, -(2**31), 2**40 + 3, True, False, "order-1", "user-42")
# Batches (SEND-29): how the machine's batch differs from a plain one of its topic.
BATCH_KINDS = ("plain", "plain", "empty", "delay", "retry topic", "two topics", "two waits", "empty body",
               "odd topic")
OTHER_TOPIC = "OtherTopic"
# The parts of the projection, each named with the clauses that decide it.
COUNTER = "round-robin counter (SEND-11, SEND-12, SEND-13, SEND-17)"
WORST = "whichItemWorst (SEND-18)"
FAULTS = "fault table: latency, start - now (SEND-14, SEND-15, SEND-16, SEND-19)"
STORED = "topics the producer routes and the brokers store messages under (SEND-25, SEND-26)"
# Random starts of ThreadLocalIndex chosen like a seed, including the wrap-around of SEND-11.
COUNTER_STARTS = st.one_of(st.integers(0, 40), st.sampled_from([2**31 - 3, 2**31 - 2, 2**31 - 1]))


class StatusAnswers:
    """Makes a broker answer its next SEND requests with a non-OK status instead of SUCCESS (message stored), as a
    broker whose disk flush or slave times out does (SEND-5); installed on the broker object the network calls."""

    def __init__(self, broker: Any) -> None:
        self.original = broker.handle
        self.pending: list[SendStatus] = []
        broker.handle = self

    def __call__(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        response = self.original(request, channel)
        if (response is not None and request.code in SEND_CODES and response.code == ResponseCode.SUCCESS
                and self.pending):
            return attrs.evolve(response, code=ResponseCode[self.pending.pop(0).name])
        return response


@attrs.frozen
class Sent:
    """What the caller of one send got (for the failure report)."""

    mode: CommunicationMode
    value: Any
    error: BaseException | None
    answered_ms: int  # when the caller got it (simulated clock)


def _java_hash_code(value: object) -> int:
    """``Object.hashCode`` of a selector argument: Boolean, Integer, Long, String (ASCII)."""
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return value
        folded = (value ^ (value >> 32)) & 0xFFFFFFFF
        return folded - 2**32 if folded >= 2**31 else folded
    assert isinstance(value, str)
    h = 0
    for ch in value:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def _properties_len(properties: dict[str, str]) -> int:
    """The UTF-8 length of a message's properties text (name\\x01value pairs joined by \\x02)."""
    return len("\x02".join(f"{k}\x01{v}" for k, v in properties.items()).encode())


def _failure_kind(event: SendResultEvent) -> spec.Failure:
    """The spec's failure kind of an attempt that ended without a SendStatus or an error code."""
    text = event.error or ""
    if "not exist" in text or "connect to null" in text:
        return spec.Failure.CLIENT
    return spec.Failure.REMOTING


def _ending_clauses(state: spec.SendState) -> str:
    """The clauses that end a send the way the spec's ``state`` ended it (for failure messages)."""
    out, mode = state.outcome, state.config.mode
    if out.kind is spec.OutcomeKind.SENT:
        clauses = ["SEND-6"] if out.status is not SendStatus.SEND_OK else ["SEND-5"]
    elif out.exhausted:
        clauses = ["SEND-1", "SEND-10"]
    elif out.failure is spec.Failure.BROKER:
        clauses = ["SEND-7"] if mode is CommunicationMode.ASYNC else ["SEND-4"]
    else:
        clauses = ["SEND-2", "SEND-3"]
    if state.attempts >= state.limit and "SEND-1" not in clauses:
        clauses.insert(0, "SEND-1")
    return "/".join([*clauses, "SEND-21"])


class SendRetryMachine(LockstepMachine):
    """Sends of one producer, configured as the run draws, stepped with the spec's send machine attempt by attempt
    (SEND-1..22)."""

    TABLE = spec.TRANSITIONS
    DIMENSIONS = ("topology.brokers", "topic.queueNums", "topic.perm", "producer.retryTimesWhenSendFailed",
                  "producer.retryTimesWhenSendAsyncFailed", "producer.retryAnotherBrokerWhenNotStoreOK",
                  "producer.sendLatencyFaultEnable", "producer.sendMsgTimeout", "producer.maxMessageSize",
                  "client.namespace")
    # A read-only topic (no queue: every send fails at once, SEND-23) is drawn less often than the writable ones.
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {
        "topic.perm": st.sampled_from((DEFAULT_PERM, DEFAULT_PERM, 2, 4))}
    DRIVEN = (spec.NewSend, spec.TimePasses)
    OBSERVED = (spec.MessageRefused, spec.NoRoute, spec.SelectQueue, spec.AttemptAnswered, spec.BrokerErrorResponse,
                spec.AttemptFailed)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.sends = 0
        self.info: Any = None

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """A cluster, a topic and one producer as configured; the random starts of its round-robin counters (the
        queue selection's ThreadLocalIndex and whichItemWorst) are drawn too."""
        brokers = config["topology.brokers"]
        read_queues, write_queues = config["topic.queueNums"]
        namespace = config["client.namespace"]
        # The brokers know the topic under the namespace (SEND-25): the topic every request names (SEND-26).
        self.topic = spec.wrap_namespace(namespace, TOPIC)
        self.cluster = Cluster(brokers=brokers, clock="simulated", wire_codec="json", seed=11, keep_events=True)
        self.cluster.create_topic(self.topic, read_queues=read_queues, write_queues=write_queues,
                                  perm=config["topic.perm"])
        self.statuses = {name: StatusAnswers(b) for name, b in self.cluster.brokers.items()}
        self.names = sorted(self.cluster.brokers)
        self.counter_start = data.draw(COUNTER_STARTS, label="round-robin start")
        worst_start = data.draw(COUNTER_STARTS, label="whichItemWorst start")
        self.producer = self.cluster.producer(
            "PG", send_latency_fault_enable=config["producer.sendLatencyFaultEnable"],
            retry_times_when_send_failed=config["producer.retryTimesWhenSendFailed"],
            retry_times_when_send_async_failed=config["producer.retryTimesWhenSendAsyncFailed"],
            retry_another_broker_when_not_store_ok=config["producer.retryAnotherBrokerWhenNotStoreOK"],
            send_msg_timeout_ms=config["producer.sendMsgTimeout"], max_message_size=config["producer.maxMessageSize"],
            namespace=namespace)
        queue_datas = tuple(spec.QueueData(name, write_queues, config["topic.perm"]) for name in self.names)
        expected = spec.publish_queues(TOPIC, queue_datas, frozenset(self.names))
        route = self.producer.fetch_publish_queues(TOPIC)
        assert tuple(route) == expected, f"SEND-22: publish queues {route} != spec {expected}"
        self.spec_config = spec.Config(
            CommunicationMode.SYNC, config["producer.sendLatencyFaultEnable"],
            config["producer.retryAnotherBrokerWhenNotStoreOK"], timeout_ms=config["producer.sendMsgTimeout"],
            retry_times=config["producer.retryTimesWhenSendFailed"],
            async_retry_times=config["producer.retryTimesWhenSendAsyncFailed"], queue_datas=queue_datas,
            max_message_size=config["producer.maxMessageSize"], namespace=namespace,
        )
        self.producer.fault_strategy.tolerance.which_item_worst.value = worst_start
        self._sync_info()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def _sync_info(self) -> None:
        """Take the producer's TopicPublishInfo; a new one (a new route) starts its counter afresh (SEND-11)."""
        info = self.producer.publish_info[self.topic]
        if info is not self.info:
            if info.index.value is None:
                info.index.value = self.counter_start
            if self.spec is not None:
                self.spec.state = attrs.evolve(self.state, counter=info.index.value, queues=tuple(info.queues))
            self.info = info

    # ------------------------------------------------------------------------------------------------ faults
    def _broker(self, index: int) -> str:
        """A broker by index; index 3 is every broker (``*``)."""
        return "*" if index == 3 else self.names[index % len(self.names)]

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 3), code=st.sampled_from(RETRIED_CODES), times=st.integers(1, 4))
    def broker_answers_retried_error(self, broker: int, code: ResponseCode, times: int) -> None:
        """The broker answers its next SEND requests with a code of retryResponseCodes, without storing (SEND-4)."""
        self.cluster.faults.fail(self._broker(broker), "SEND_MESSAGE", code=int(code), times=times)

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 3), code=st.sampled_from(OTHER_CODES), times=st.integers(1, 4))
    def broker_answers_other_error(self, broker: int, code: ResponseCode, times: int) -> None:
        """The broker answers its next SEND requests with a code that is never retried (SEND-4, SEND-7)."""
        self.cluster.faults.fail(self._broker(broker), "SEND_MESSAGE", code=int(code), times=times)

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 2), status=st.sampled_from(NOT_OK), times=st.integers(1, 3))
    def broker_answers_not_ok(self, broker: int, status: SendStatus, times: int) -> None:
        """The broker stores the next messages but answers a non-OK SendStatus (SEND-5, SEND-6)."""
        self.statuses[self.names[broker % len(self.names)]].pending.extend([status] * times)

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 3), times=st.integers(1, 4), response=st.booleans())
    def requests_lost(self, broker: int, times: int, response: bool) -> None:
        """The next SEND requests (or their responses) are lost: the attempt times out (SEND-2, SEND-3, SEND-7)."""
        self.cluster.faults.drop(self._broker(broker), "SEND_MESSAGE", times=times, response=response)

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 3), ms=st.sampled_from(DELAYS), times=st.integers(1, 4))
    def requests_delayed(self, broker: int, ms: int, times: int) -> None:
        """The next SEND round trips take 2 * (1 + ms) ms: fault items by the latency table (SEND-14, SEND-15)."""
        self.cluster.faults.delay(self._broker(broker), "SEND_MESSAGE", ms=ms, times=times)

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 3), times=st.integers(1, 3))
    def connection_closes(self, broker: int, times: int) -> None:
        """The connection closes under the next SEND requests: a remoting failure (SEND-3, SEND-7)."""
        self.cluster.faults.disconnect(self._broker(broker), "SEND_MESSAGE", times=times)

    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Time passes between sends: fault items expire (SEND-16); the counters and table stay (SEND-20). The spec
        takes the time as ``TimePasses`` when the next send starts."""
        self.cluster.advance(ms)

    # ------------------------------------------------------------------------------------------------ sends
    @precondition(lambda self: self.cluster is not None)
    @rule()
    def send_sync(self) -> None:
        """``send(msg)``: up to 1 + retryTimesWhenSendFailed attempts in one budget (SEND-1..6, SEND-10)."""
        self._send(CommunicationMode.SYNC)

    @precondition(lambda self: self.cluster is not None)
    @rule()
    def send_async(self) -> None:
        """``send(msg, callback)``: transport failures retried from the callback (SEND-1, SEND-7, SEND-8)."""
        self._send(CommunicationMode.ASYNC)

    @precondition(lambda self: self.cluster is not None)
    @rule()
    def send_oneway(self) -> None:
        """``sendOneway(msg)``: one attempt, no answer (SEND-9)."""
        self._send(CommunicationMode.ONEWAY)

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from(ODD_TOPICS), body=st.sampled_from((b"", b"x" * 9, b"x" * 65, None)),
          mode=st.sampled_from(tuple(CommunicationMode)))
    def send_odd_message(self, topic: str, body: bytes | None, mode: CommunicationMode) -> None:
        """A message the producer's checks may refuse: an odd topic, an empty or large body (SEND-24)."""
        self._send(mode, topic, body)

    @precondition(lambda self: self.cluster is not None)
    @rule(broker=st.integers(0, 2), queue_id=st.integers(0, 7), mode=st.sampled_from(tuple(CommunicationMode)),
          other_topic=st.booleans())
    def send_to_queue(self, broker: int, queue_id: int, mode: CommunicationMode, other_topic: bool) -> None:
        """``send(msg, mq)`` (and its ASYNC and ONEWAY forms): one attempt to that queue, or a refusal when the queue
        is of another topic (SEND-27)."""
        queue = MessageQueue(OTHER_TOPIC if other_topic else TOPIC, self.names[broker % len(self.names)],
                             queue_id % max(1, self.config["topic.queueNums"][1]))
        self._send(mode, target=spec.Target(queue), send_args={"queue": queue})

    @precondition(lambda self: self.cluster is not None)
    @rule(kind=st.sampled_from(("hash", "hash", "null", "raise")), arg=st.sampled_from(HASH_ARGS),
          mode=st.sampled_from(tuple(CommunicationMode)))
    def send_with_selector(self, kind: str, arg: object, mode: CommunicationMode) -> None:
        """``send(msg, selector, arg)``: SelectMessageQueueByHash (SEND-28), a selector returning null or throwing;
        one attempt to the selected queue (SEND-27)."""
        queues = [MessageQueue(spec.without_namespace(q.topic, self.spec_config.namespace) or q.topic, q.broker_name,
                               q.queue_id) for q in (self.state.queues if self.spec is not None else self.info.queues)]
        selector: Any
        if kind == "hash":
            selector = validators_module.select_by_hash
            chosen = queues[spec.hash_selection(len(queues), _java_hash_code(arg))] if queues else None
            target = spec.Target(chosen, by_selector=True)
        elif kind == "null":
            selector, target = (lambda _qs, _m, _a: None), spec.Target(None, by_selector=True)
        else:
            def selector(_qs: Any, _m: Any, _a: Any) -> Any:
                raise RuntimeError("the selector failed")

            target = spec.Target(None, by_selector=True, threw=True)
        self._send(mode, target=target, send_args={"selector": selector, "arg": arg})

    @precondition(lambda self: self.cluster is not None)
    @rule(kind=st.sampled_from(BATCH_KINDS), size=st.integers(1, 3))
    def send_batch(self, kind: str, size: int) -> None:
        """``send(Collection)``: a MessageBatch, refused as a whole when it cannot be built (SEND-29), else sent like
        one message whose body is the encoded batch (SEND-24, SEND-1..6)."""
        self.sends += 1
        msgs = []
        for i in range(0 if kind == "empty" else size):
            msg = Message(TOPIC, f"b{self.sends}.{i}".encode())
            # A user-set UNIQ_KEY stays: the encoded batch's length is known before the send.
            msg.properties[Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = f"U{self.sends:06d}{i:02d}"
            msgs.append(msg)
        if msgs:
            last = msgs[-1]
            if kind == "delay":
                last.delay_level = 2
            elif kind == "retry topic":
                last.topic = "%RETRY%G1"
            elif kind == "two topics" and len(msgs) > 1:
                last.topic = OTHER_TOPIC
            elif kind == "two waits" and len(msgs) > 1:
                last.wait_store_msg_ok = False
            elif kind == "empty body":
                last.body = b""
            elif kind == "odd topic":
                for m in msgs:
                    m.topic = "a b"
        entries = tuple(spec.BatchEntry(m.topic, len(m.body), _properties_len(m.properties), m.delay_level,
                                        m.wait_store_msg_ok) for m in msgs)
        self.sends -= 1
        self._send(CommunicationMode.SYNC, shape=spec.MessageShape(msgs[0].topic if msgs else None, None, entries),
                   batch=msgs)

    def _send(self, mode: CommunicationMode, topic: str = TOPIC, body: bytes | None = None, *,
              target: spec.Target | None = None, send_args: dict[str, Any] | None = None,
              shape: spec.MessageShape | None = None, batch: list[Message] | None = None) -> None:
        """One send in ``mode``: the spec begins it (driven), then the implementation's attempts are observed."""
        cluster = self.cluster
        assert cluster is not None
        self._sync_info()
        self.sends += 1
        start = cluster.now_ms()
        payload = f"m{self.sends}".encode() if body is None else body
        odd = topic != TOPIC or body is not None or target is not None
        if shape is None and odd:
            shape = spec.MessageShape(topic, len(payload))
        self._begin(mode, start, shape, target)
        first_event = len(cluster.events.events)
        msg = Message(TOPIC, f"m{self.sends}".encode())
        msg.topic, msg.body = topic, payload
        value: Any = None
        error: BaseException | None = None
        called: list[tuple[Any, BaseException | None]] = []
        args = send_args or {}
        try:
            if batch is not None:
                value = self.producer.send_batch(batch)
            elif mode is CommunicationMode.SYNC:
                value = self.producer.send(msg, **args)
            elif mode is CommunicationMode.ASYNC:
                future = self.producer.send_async(msg, lambda r, e: called.append((r, e)), **args)
                value = cluster.runtime.wait(future)
            else:
                value = self.producer.send_oneway(msg, **args)
        except (MQClientError, MQBrokerError, RemotingError) as failure:
            error = failure
        if mode is CommunicationMode.ASYNC and batch is None:
            # The SendCallback gets the outcome once: onSuccess with the result, or onException (SEND-7, SEND-10).
            if called != [(value, error)]:
                self.fail(f"SEND-7/SEND-10: the callback got {called}, the send ended with {value!r} / {error!r}")
        answered = cluster.now_ms()
        events = [e for e in cluster.events.events[first_event:]
                  if isinstance(e, (SendAttempt, SendResultEvent)) and e.node == self.producer.client_id]
        self._replay(mode, start, events, Sent(mode, value, error, answered))

    def _begin(self, mode: CommunicationMode, start: int, shape: spec.MessageShape | None,
               target: spec.Target | None = None) -> None:
        """The spec's side of a new send: the first one starts the machine with the producer's counters; a later
        one lets the time since the last send pass and starts a new send (SEND-20)."""
        config = attrs.evolve(self.spec_config, mode=mode)
        if self.spec is None:
            tolerance = self.producer.fault_strategy.tolerance
            self.begin(spec.SendState(config, tuple(self.info.queues), (), self.info.index.value,
                                      tolerance.which_item_worst.value, now_ms=start, started_ms=start,
                                      message=shape, target=target))
            return
        if not self.state.done:
            self.fail("the previous send is still pending in the spec")
        self.spec.state = attrs.evolve(self.state, config=config)
        if start > self.state.now_ms:
            self.drive(spec.TimePasses(start - self.state.now_ms), "time between sends")
        self.drive(spec.NewSend(shape, target), f"{mode.value} send {self.sends}")

    def _replay(self, mode: CommunicationMode, start: int, events: list[Any], sent: Sent) -> None:
        attempt_ts = start
        for event in events:
            state = self.state
            if isinstance(event, SendAttempt):
                if state.done:
                    self.fail(f"SEND-1/SEND-21: attempt {event.attempt} to {event.broker} after the spec ended the "
                              f"send with {state.outcome!r} after {state.attempts} attempt(s)")
                if state.in_flight is not None:
                    self.fail(f"SEND-21: a new attempt while {state.in_flight} is in flight")
                if event.ts_ms != state.now_ms:
                    self.fail(f"SEND-2: attempt {event.attempt} starts at +{event.ts_ms - start} ms, spec clock at "
                              f"+{state.now_ms - start} ms")
                self._select(mode, event)
                attempt_ts = event.ts_ms
                continue
            latency = event.ts_ms - attempt_ts
            if (mode is CommunicationMode.ASYNC and event.status == "ERROR" and event.code is None
                    and (event.error or "").startswith(RemotingTooMuchRequestError.__name__)):
                # An ASYNC retry over budget sends nothing: the spec's selection already failed it (SEND-7).
                if not (state.in_flight is None and state.requests < state.attempts):
                    self.fail(f"SEND-7: an ASYNC retry over budget, but the spec sent attempt {state.attempts}")
                if event.final and not state.done:
                    self.fail("SEND-10: the implementation gave up before the spec")
                continue
            self.observe(self._outcome_action(event, latency), f"attempt {event.attempt} on {event.broker}")
            if self.state.done and not event.final:
                self.fail(f"{_ending_clauses(self.state)}: the spec ends the send at attempt {event.attempt} (limit "
                          f"{self.state.config.limit}) with {self.state.outcome!r}; the implementation goes on")
        if not self.state.done and spec.refusal(self.state) is not None:
            # The producer's checks refuse the message before any attempt (SEND-24).
            self.observe(spec.MessageRefused(), "refused")
        if not self.state.done and not self.state.queues:
            # No queue to send to: the send fails before any attempt (SEND-23).
            self.observe(spec.NoRoute(), "no route")
        if not self.state.done and self.state.in_flight is None:
            # A SYNC loop that selected a queue but found the budget spent makes no attempt (SEND-2).
            counter = self.info.index.value
            allowed = sorted(spec.selections(self.state), key=lambda s: (s.counter != counter, s.queue))
            self.observe(spec.SelectQueue(allowed[0].queue), "a selection over budget")
        state = self.state
        if not state.done:
            self.fail(f"SEND-1/SEND-3/SEND-4: the implementation stopped after {state.attempts} attempt(s) but the "
                      "spec would go on")
        if mode is CommunicationMode.SYNC:
            # Each attempt waits only for what is left of the budget, so the caller has its answer (a result or the
            # failure) within it, whatever the attempts met (SEND-2, on the answer).
            spent = sent.answered_ms - start
            if spent > state.config.timeout_ms:
                self.fail(f"SEND-2: the caller got its answer {spent} ms into the send, past the "
                          f"{state.config.timeout_ms} ms budget ({state.attempts} attempt(s))")
        problem = _outcome_problem(state, sent)
        if problem:
            self.fail(problem)

    def _select(self, mode: CommunicationMode, event: SendAttempt) -> None:
        state = self.state
        allowed = spec.selections(state)
        wire = spec.wire_topic(state.config, TOPIC)
        if event.topic != wire:
            self.fail(f"SEND-26: attempt {event.attempt} sends topic {event.topic!r}; the spec sends {wire!r} "
                      f"(namespace {state.config.namespace!r})")
        if mode is CommunicationMode.ASYNC and state.attempts > 0:
            # The callback resends the first request: only the broker shows (SEND-8).
            if event.queue_id != state.first_queue_id:
                self.fail(f"SEND-8: ASYNC retry to queue id {event.queue_id}, first request used "
                          f"{state.first_queue_id}")
            matching = [s for s in allowed if s.queue.broker_name == event.broker]
            if not matching:
                self.fail(f"SEND-13/SEND-17/SEND-20: ASYNC retry on {event.broker}; the selector allows "
                          f"{sorted({s.queue.broker_name for s in allowed})} (last broker {state.last})")
            queue = min(matching, key=lambda s: s.queue).queue
        else:
            queue = MessageQueue(event.topic, event.broker, event.queue_id)
            if not any(s.queue == queue for s in allowed):
                self.fail(f"SEND-12/SEND-13/SEND-17/SEND-18: attempt {event.attempt} chose {queue}; the selector "
                          f"allows {sorted(s.queue for s in allowed)} (counter {state.counter}, last {state.last}, "
                          f"faults {state.faults})")
        self.observe(spec.SelectQueue(queue), f"attempt {event.attempt}")

    @staticmethod
    def _outcome_action(event: SendResultEvent, latency: int) -> spec.Action:
        if event.status == "ONEWAY":
            return spec.AttemptAnswered(latency, None)
        if event.status != "ERROR":
            return spec.AttemptAnswered(latency, SendStatus(event.status))
        if event.code is not None:
            return spec.BrokerErrorResponse(latency, event.code)
        return spec.AttemptFailed(latency, _failure_kind(event))

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        """SEND-11, SEND-12, SEND-13, SEND-17: the round-robin counter; SEND-18: whichItemWorst; SEND-14, SEND-15,
        SEND-16, SEND-19: the fault table as (latency, start - now) per broker."""
        state = self.state
        return {
            COUNTER: state.counter,
            WORST: state.worst_counter,
            FAULTS: {i.broker_name: (i.latency_ms, i.start_ms - state.now_ms) for i in state.faults},
            STORED: [spec.wire_topic(state.config, TOPIC)],
        }

    def _stored_topics(self) -> set[str]:
        """The topics the producer holds routes of (its createTopicKey aside) and those any broker stores a message
        in: the machine sends to one topic, so both are that one."""
        assert self.cluster is not None
        topics = set(self.producer.publish_info) - {self.producer.config.create_topic_key}
        for broker in self.cluster.brokers.values():
            store = broker.store
            topics |= {t for t in store.topics() for q in store.queue_ids(t) if store.max_offset(t, q) > 0}
        return topics

    def project_system(self) -> dict[str, Any]:
        tolerance = self.producer.fault_strategy.tolerance
        now = self.state.now_ms
        return {
            COUNTER: self.info.index.value,
            WORST: tolerance.which_item_worst.value,
            FAULTS: {n: (i.current_latency, i.start_timestamp - now) for n, i in tolerance.items.items()},
            STORED: sorted(self._stored_topics()),
        }

    @precondition(lambda self: self.cluster is not None)
    @invariant()
    def fault_items_only_when_enabled(self) -> None:
        """SEND-14: without sendLatencyFaultEnable no fault item is ever recorded."""
        if not self.config["producer.sendLatencyFaultEnable"] and self.producer.fault_strategy.tolerance.items:
            self.fail("SEND-14: fault items recorded with sendLatencyFaultEnable off")


def _outcome_problem(state: spec.SendState, sent: Sent) -> str:
    """What differs between the spec's outcome of a send and what its caller got ("" when they agree)."""
    out, error = state.outcome, sent.error
    where = f"spec outcome {out!r} after {state.attempts} attempt(s), caller got {sent.value!r} / {error!r}"
    if out.kind is spec.OutcomeKind.SENT:
        if error is not None:
            return f"SEND-6/SEND-10: {where}"
        if sent.mode is CommunicationMode.ONEWAY:
            return "" if sent.value is None else f"SEND-9: {where}"
        ok = sent.value is not None and sent.value.status is out.status
        if ok and sent.value.queue.topic != spec.result_topic(state):
            return f"SEND-26: the SendResult names topic {sent.value.queue.topic!r}, spec {spec.result_topic(state)!r}"
        return "" if ok else f"SEND-5/SEND-6: {where}"
    if error is None:
        return f"SEND-4/SEND-10: {where}"
    if out.failure is spec.Failure.REFUSED:
        reason = spec.refusal(state)
        assert reason is not None
        ok = isinstance(error, MQClientError) and error.message.startswith(reason[1]) and error.code == reason[0]
        return "" if ok else f"SEND-24: {where}, spec refusal {reason}"
    if out.failure is spec.Failure.NO_ROUTE:
        by_selector = state.target is not None and state.target.by_selector
        text = "No route info for this topic, " if by_selector else "No route info of this topic"
        ok = isinstance(error, MQClientError) and error.message.startswith(text)
        return "" if ok else f"SEND-23/SEND-27: {where}"
    if out.failure is spec.Failure.TIMEOUT and not out.exhausted:
        return "" if isinstance(error, RemotingTooMuchRequestError) else f"SEND-2: {where}"
    if out.failure is spec.Failure.BROKER and not out.exhausted:
        ok = isinstance(error, MQBrokerError) and error.code == out.code
        return "" if ok else f"SEND-4/SEND-7/SEND-27: {where}"
    if state.target is not None and not out.exhausted:
        # Without the retry loop the attempt's own exception reaches the caller (SEND-27).
        wanted = RemotingError if out.failure is spec.Failure.REMOTING else MQClientError
        return "" if isinstance(error, wanted) else f"SEND-27: {where}"
    if sent.mode is CommunicationMode.ASYNC:
        # onException gets the last failure itself (SEND-10).
        if isinstance(error, MQBrokerError):
            return f"SEND-7/SEND-10: {where}"
        if out.failure is spec.Failure.TIMEOUT and not isinstance(error, RemotingTooMuchRequestError):
            return f"SEND-7: {where}"
        return ""
    if not (isinstance(error, MQClientError) and error.message.startswith(f"Send [{state.attempts}] times")):
        return f"SEND-10: {where}"
    if out.failure is spec.Failure.BROKER and error.code != out.code:
        return f"SEND-10: {where}"
    return ""


test_send_retry_machine = machine_test(SendRetryMachine, 80, 40)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 200, 30
# A variant needs its dimension's non-default value and the rule that reveals it in one program: a wider search.
VARIANT_EXAMPLES = 250
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).

MUTANTS = {
    "retry_same_broker": (
        latency_module, "mq = self.queues[_position(self.index.next(), len(self.queues))]\n"
                        "                if mq.broker_name != last_broker:",
        "mq = self.queues[_position(self.index.next(), len(self.queues))]\n"
        "                if mq.broker_name == last_broker:",
        ("SEND-13",),
    ),
    "one_attempt_too_many": (
        sending_module, "self.times_total = 1 + self.p.config.retry_times_when_send_failed",
        "self.times_total = 2 + self.p.config.retry_times_when_send_failed", ("SEND-1",),
    ),
    "non_retryable_code_retried": (
        sending_module, "if error.code in self.p.config.retry_response_codes:",
        "if error.code in self.p.config.retry_response_codes or error.code == 2:", ("SEND-4",),
    ),
    "wrong_not_available_duration": (
        latency_module, "if latency >= self.latency_max[i]:\n                return self.not_available_duration[i]",
        "if latency >= self.latency_max[i]:\n                return self.not_available_duration[i - 1]",
        ("SEND-15",),
    ),
    "attempt_waits_the_whole_budget": (
        sending_module, "self.p._kernel(self.out, self.mq, self.mode, self.info, self.timeout - cost, self.times + 1,",
        "self.p._kernel(self.out, self.mq, self.mode, self.info, self.timeout, self.times + 1,", ("SEND-2",),
    ),
    "async_retries_broker_errors": (
        sending_module, "self._on_exception(broker, mq, failure, False, timeout_ms - cost, begin)",
        "self._on_exception(broker, mq, failure, True, timeout_ms - cost, begin)", ("SEND-7",),
    ),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(SendRetryMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)



# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    "topology.brokers": (
        route_module, "for qd in sorted(route.queue_datas, key=lambda q: java_string_key(q.broker_name)):",
        "for qd in sorted(route.queue_datas, key=lambda q: java_string_key(q.broker_name))[::-1]:", ("SEND-22",)),
    "topic.queueNums": (route_module, "for i in range(qd.write_queue_nums))\n    return queues",
                        "for i in range(qd.read_queue_nums))\n    return queues", ("SEND-22",)),
    "topic.perm": (route_module, "        if not is_writeable(qd.perm):\n            continue\n        bd",
                   "        if qd.perm != 6:\n            continue\n        bd", ("SEND-22",)),
    "producer.retryTimesWhenSendFailed": (
        sending_module, "self.times_total = 1 + self.p.config.retry_times_when_send_failed", "self.times_total = 3",
        ("SEND-1", "SEND-10")),
    "producer.retryTimesWhenSendAsyncFailed": (
        sending_module, "if need_retry and self.times <= self.p.config.retry_times_when_send_async_failed:",
        "if need_retry and self.times <= 2:", ("SEND-1", "SEND-7", "SEND-10")),
    "producer.retryAnotherBrokerWhenNotStoreOK": (
        sending_module, "SendStatus.SEND_OK and self.p.config.retry_another_broker_when_not_store_ok:",
        "SendStatus.SEND_OK and False:", ("SEND-1", "SEND-6")),
    "producer.sendLatencyFaultEnable": (
        producer_module, "MQFaultStrategy(self.runtime, enabled=config.send_latency_fault_enable,",
        "MQFaultStrategy(self.runtime, enabled=False,", ("SEND-14", "SEND-17")),
    "producer.maxMessageSize": (
        # The size check of a message, and of a batch checked as one message (SEND-29): a batch the broken copy lets
        # through shows as an attempt right after its NewSend (SEND-20), where the spec refuses it.
        validators_module, "    if len(body) > max_message_size:", "    if len(body) > 4 * 1024 * 1024:",
        ("SEND-24", "SEND-29", "SEND-20")),
    "client.namespace": (
        producer_module, "topic = self.instance.config.without_namespace(out.topic)", "topic = out.topic",
        ("SEND-26",)),
    "producer.sendMsgTimeout": (
        producer_module, "return self.config.send_msg_timeout_ms if timeout_ms is None else timeout_ms",
        "return 3000 if timeout_ms is None else timeout_ms", ("SEND-2", "SEND-3")),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(SendRetryMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(SendRetryMachine, dimension, module, old, new, clauses, examples=VARIANT_EXAMPLES, steps=MUTANT_STEPS)
