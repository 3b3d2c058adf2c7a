"""Stateful test: the send_retry spec (SEND-*) is the model, the reference implementation's producer the system.

A simulated ``Cluster`` with 2-3 brokers, a topic on each and two producers, one with sendLatencyFaultEnable off and
one with it on (every program exercises both selectors), whose other options hypothesis chooses
(retryTimesWhenSendFailed, retryTimesWhenSendAsyncFailed, retryAnotherBrokerWhenNotStoreOK, the random starts of the
round-robin counters). Rules send in SYNC, ASYNC and ONEWAY mode, inject faults per broker or on all of them (error
codes retried or not, non-OK SendStatus answers, lost requests and responses, delays that reach the latency table or
the budget, closed connections) and let time pass.

Every send is replayed through the spec's state machine in lockstep: the implementation's ``SendAttempt`` and
``SendResultEvent`` events become ``SelectQueue`` / ``AttemptAnswered`` / ``BrokerErrorResponse`` / ``AttemptFailed``
actions, each of which must be *enabled* in the spec state (the queue one the selector may pick, SEND-12, SEND-13,
SEND-17, SEND-18; no attempt after the send ended, SEND-1, SEND-21), at the time the spec expects (SEND-2). After the
send, the spec's outcome must be what the caller got (SEND-3..10), and the producer's round-robin counters and fault
table must equal the spec's (SEND-11, SEND-14, SEND-15, SEND-16, SEND-19). The spec state (counters, fault table,
clock) carries over from one send to the next (SEND-20), per producer; the mode is the send's.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mutation import refimpl_mutant
from stateful_support import failure_text, hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster
from rocketspec.refimpl.client import latency as latency_module
from rocketspec.refimpl.client import sending as sending_module
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError, RemotingTooMuchRequestError
from rocketspec.refimpl.events import SendAttempt, SendResultEvent
from rocketspec.refimpl.message import Message
from rocketspec.refimpl.remoting import RemotingCommand, RemotingError
from rocketspec.spec import send_retry as spec
from rocketspec.spec.protocol import (
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    CommunicationMode,
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
    if state.attempts >= state.config.limit and "SEND-1" not in clauses:
        clauses.insert(0, "SEND-1")
    return "/".join([*clauses, "SEND-21"])


@attrs.define(eq=False)
class Tracked:
    """One producer and the spec state its sends have reached (None before the first send)."""

    label: str
    producer: Any = attrs.field(repr=False)
    config: spec.Config
    counter_start: int
    info: Any = attrs.field(default=None, repr=False)
    state: spec.SendState | None = None


class SendRetryMachine(RuleBasedStateMachine):
    """Sends of two producers (sendLatencyFaultEnable off and on) against the spec's send machine, lockstep per
    attempt (SEND-1..22)."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.tracked: list[Tracked] = []
        self.sends = 0

    # ------------------------------------------------------------------------------------------------ setup
    @initialize(
        brokers=st.integers(2, 3),
        queues=st.integers(1, 3),
        retry_times=st.tuples(st.integers(0, 3), st.integers(0, 3)),
        async_retry_times=st.tuples(st.integers(0, 2), st.integers(0, 2)),
        retry_another=st.tuples(st.booleans(), st.booleans()),
        counters=st.tuples(COUNTER_STARTS, COUNTER_STARTS, COUNTER_STARTS, COUNTER_STARTS),
    )
    def setup(self, brokers: int, queues: int, retry_times: tuple[int, int], async_retry_times: tuple[int, int],
              retry_another: tuple[bool, bool], counters: tuple[int, int, int, int]) -> None:
        """Producer 0 sends with sendLatencyFaultEnable off, producer 1 with it on; the other options and the
        random starts of their round-robin counters (queue selection, whichItemWorst) are drawn for each."""
        self.cluster = Cluster(brokers=brokers, clock="simulated", wire_codec="json", seed=11, keep_events=True)
        self.cluster.create_topic(TOPIC, queues=queues)
        self.statuses = {name: StatusAnswers(b) for name, b in self.cluster.brokers.items()}
        self.names = sorted(self.cluster.brokers)
        queue_datas = tuple(spec.QueueData(name, queues) for name in self.names)
        expected = spec.publish_queues(TOPIC, queue_datas, frozenset(self.names))
        for index, fault_enable in enumerate((False, True)):
            producer = self.cluster.producer(
                f"PG{index}", send_latency_fault_enable=fault_enable, retry_times_when_send_failed=retry_times[index],
                retry_times_when_send_async_failed=async_retry_times[index],
                retry_another_broker_when_not_store_ok=retry_another[index])
            route = producer.fetch_publish_queues(TOPIC)
            assert tuple(route) == expected, f"SEND-22: publish queues {route} != spec {expected}"
            config = spec.Config(
                CommunicationMode.SYNC, fault_enable, retry_another[index], timeout_ms=DEFAULT_SEND_MSG_TIMEOUT_MS,
                retry_times=retry_times[index], async_retry_times=async_retry_times[index], queue_datas=queue_datas,
            )
            tracked = Tracked(f"producer {index}", producer, config, counters[2 * index])
            producer.fault_strategy.tolerance.which_item_worst.value = counters[2 * index + 1]
            self._sync_info(tracked)
            self.tracked.append(tracked)

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    @staticmethod
    def _sync_info(tracked: Tracked) -> None:
        """Take the producer's TopicPublishInfo; a new one (a new route) starts its counter afresh (SEND-11)."""
        info = tracked.producer.publish_info[TOPIC]
        if info is not tracked.info:
            if info.index.value is None:
                info.index.value = tracked.counter_start
            if tracked.state is not None:
                tracked.state = attrs.evolve(tracked.state, counter=info.index.value, queues=tuple(info.queues))
            tracked.info = info

    # ------------------------------------------------------------------------------------------------ faults
    def _broker(self, index: int) -> str:
        """A broker by index; index 3 is every broker (``*``)."""
        return "*" if index == 3 else self.names[index % len(self.names)]

    @rule(broker=st.integers(0, 3), code=st.sampled_from(RETRIED_CODES), times=st.integers(1, 4))
    def broker_answers_retried_error(self, broker: int, code: ResponseCode, times: int) -> None:
        """The broker answers its next SEND requests with a code of retryResponseCodes, without storing (SEND-4)."""
        self.cluster.faults.fail(self._broker(broker), "SEND_MESSAGE", code=int(code), times=times)

    @rule(broker=st.integers(0, 3), code=st.sampled_from(OTHER_CODES), times=st.integers(1, 4))
    def broker_answers_other_error(self, broker: int, code: ResponseCode, times: int) -> None:
        """The broker answers its next SEND requests with a code that is never retried (SEND-4, SEND-7)."""
        self.cluster.faults.fail(self._broker(broker), "SEND_MESSAGE", code=int(code), times=times)

    @rule(broker=st.integers(0, 2), status=st.sampled_from(NOT_OK), times=st.integers(1, 3))
    def broker_answers_not_ok(self, broker: int, status: SendStatus, times: int) -> None:
        """The broker stores the next messages but answers a non-OK SendStatus (SEND-5, SEND-6)."""
        self.statuses[self.names[broker % len(self.names)]].pending.extend([status] * times)

    @rule(broker=st.integers(0, 3), times=st.integers(1, 4), response=st.booleans())
    def requests_lost(self, broker: int, times: int, response: bool) -> None:
        """The next SEND requests (or their responses) are lost: the attempt times out (SEND-2, SEND-3, SEND-7)."""
        self.cluster.faults.drop(self._broker(broker), "SEND_MESSAGE", times=times, response=response)

    @rule(broker=st.integers(0, 3), ms=st.sampled_from(DELAYS), times=st.integers(1, 4))
    def requests_delayed(self, broker: int, ms: int, times: int) -> None:
        """The next SEND round trips take 2 * (1 + ms) ms: fault items by the latency table (SEND-14, SEND-15)."""
        self.cluster.faults.delay(self._broker(broker), "SEND_MESSAGE", ms=ms, times=times)

    @rule(broker=st.integers(0, 3), times=st.integers(1, 3))
    def connection_closes(self, broker: int, times: int) -> None:
        """The connection closes under the next SEND requests: a remoting failure (SEND-3, SEND-7)."""
        self.cluster.faults.disconnect(self._broker(broker), "SEND_MESSAGE", times=times)

    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Time passes between sends: fault items expire (SEND-16); the counters and table stay (SEND-20)."""
        self.cluster.advance(ms)

    # ------------------------------------------------------------------------------------------------ sends
    @rule(producer=st.integers(0, 1))
    def send_sync(self, producer: int) -> None:
        """``send(msg)``: up to 1 + retryTimesWhenSendFailed attempts in one budget (SEND-1..6, SEND-10)."""
        self._send(self.tracked[producer], CommunicationMode.SYNC)

    @rule(producer=st.integers(0, 1))
    def send_async(self, producer: int) -> None:
        """``send(msg, callback)``: transport failures retried from the callback (SEND-1, SEND-7, SEND-8)."""
        self._send(self.tracked[producer], CommunicationMode.ASYNC)

    @rule(producer=st.integers(0, 1))
    def send_oneway(self, producer: int) -> None:
        """``sendOneway(msg)``: one attempt, no answer (SEND-9)."""
        self._send(self.tracked[producer], CommunicationMode.ONEWAY)

    def _send(self, tracked: Tracked, mode: CommunicationMode) -> None:
        """One send in ``mode``, replayed through the spec attempt by attempt."""
        cluster = self.cluster
        self._sync_info(tracked)
        self.sends += 1
        start = cluster.now_ms()
        producer = tracked.producer
        counters = (tracked.info.index.value, producer.fault_strategy.tolerance.which_item_worst.value)
        first_event = len(cluster.events.events)
        msg = Message(TOPIC, f"m{self.sends}".encode())
        value: Any = None
        error: BaseException | None = None
        try:
            if mode is CommunicationMode.SYNC:
                value = producer.send(msg)
            elif mode is CommunicationMode.ASYNC:
                value = cluster.runtime.wait(producer.send_async(msg))
            else:
                value = producer.send_oneway(msg)
        except (MQClientError, MQBrokerError, RemotingError) as failure:
            error = failure
        answered = cluster.now_ms()
        events = [e for e in cluster.events.events[first_event:]
                  if isinstance(e, (SendAttempt, SendResultEvent)) and e.node == producer.client_id]
        self._replay(tracked, mode, start, counters, events, Sent(mode, value, error, answered))

    @classmethod
    def _begin(cls, tracked: Tracked, mode: CommunicationMode, start: int, counters: tuple[int, int]
               ) -> spec.SendState:
        config = attrs.evolve(tracked.config, mode=mode)
        state = tracked.state
        if state is None:
            return spec.SendState(config, tuple(tracked.info.queues), (), counters[0], counters[1],
                                  now_ms=start, started_ms=start)
        assert state.done, "the previous send is still pending in the spec"
        state = attrs.evolve(state, config=config)
        if start > state.now_ms:
            state = cls._step(state, spec.TimePasses(start - state.now_ms), "time between sends")
        return cls._step(state, spec.NewSend(), "a new send (SEND-20)")

    @staticmethod
    def _step(state: spec.SendState, action: spec.Action, what: str) -> spec.SendState:
        assert spec.enabled(state, action), (
            f"{what}: the implementation did {action!r}, which the spec does not allow in {state!r}")
        return spec.step(state, action)

    def _replay(self, tracked: Tracked, mode: CommunicationMode, start: int, counters: tuple[int, int],
                events: list[Any], sent: Sent) -> None:
        state = self._begin(tracked, mode, start, counters)
        attempt_ts = start
        for event in events:
            if isinstance(event, SendAttempt):
                assert not state.done, (
                    f"SEND-1/SEND-21: attempt {event.attempt} to {event.broker} after the spec ended the send with "
                    f"{state.outcome!r} after {state.attempts} attempt(s)")
                assert state.in_flight is None, f"SEND-21: a new attempt while {state.in_flight} is in flight"
                assert event.ts_ms == state.now_ms, (
                    f"SEND-2: attempt {event.attempt} starts at +{event.ts_ms - start} ms, spec clock at "
                    f"+{state.now_ms - start} ms")
                state = self._select(state, mode, event)
                attempt_ts = event.ts_ms
                continue
            latency = event.ts_ms - attempt_ts
            if (mode is CommunicationMode.ASYNC and event.status == "ERROR" and event.code is None
                    and (event.error or "").startswith(RemotingTooMuchRequestError.__name__)):
                # An ASYNC retry over budget sends nothing: the spec's selection already failed it (SEND-7).
                assert state.in_flight is None and state.requests < state.attempts, (
                    f"SEND-7: an ASYNC retry over budget, but the spec sent attempt {state.attempts}")
                assert not event.final or state.done, "SEND-10: the implementation gave up before the spec"
                continue
            action = self._outcome_action(event, latency)
            state = self._step(state, action, f"attempt {event.attempt} on {event.broker}")
            if state.done:
                assert event.final, (
                    f"{_ending_clauses(state)}: the spec ends the send at attempt {event.attempt} (limit "
                    f"{state.config.limit}) with {state.outcome!r}; the implementation goes on")
        if not state.done and state.in_flight is None:
            # A SYNC loop that selected a queue but found the budget spent makes no attempt (SEND-2).
            state = self._unobserved_selection(tracked, state)
        assert state.done, (
            f"SEND-1/SEND-3/SEND-4: the implementation stopped after {state.attempts} attempt(s) but the spec "
            f"would go on: {state!r}")
        tracked.state = state
        if mode is CommunicationMode.SYNC:
            # Each attempt waits only for what is left of the budget, so the caller has its answer (a result or the
            # failure) within it, whatever the attempts met (SEND-2, on the answer).
            spent = sent.answered_ms - start
            assert spent <= state.config.timeout_ms, (
                f"SEND-2: the caller got its answer {spent} ms into the send, past the {state.config.timeout_ms} ms "
                f"budget ({state.attempts} attempt(s))")
        self._check_outcome(state, sent)
        self._check_selector_state(tracked, state)

    def _select(self, state: spec.SendState, mode: CommunicationMode, event: SendAttempt) -> spec.SendState:
        allowed = spec.selections(state)
        if mode is CommunicationMode.ASYNC and state.attempts > 0:
            # The callback resends the first request: only the broker shows (SEND-8).
            assert event.queue_id == state.first_queue_id, (
                f"SEND-8: ASYNC retry to queue id {event.queue_id}, first request used {state.first_queue_id}")
            matching = [s for s in allowed if s.queue.broker_name == event.broker]
            assert matching, (
                f"SEND-13/SEND-17/SEND-20: ASYNC retry on {event.broker}; the selector allows "
                f"{sorted({s.queue.broker_name for s in allowed})} (last broker {state.last})")
            queue = min(matching, key=lambda s: s.queue).queue
        else:
            queue = MessageQueue(TOPIC, event.broker, event.queue_id)
            assert any(s.queue == queue for s in allowed), (
                f"SEND-12/SEND-13/SEND-17/SEND-18: attempt {event.attempt} chose {queue}; the selector allows "
                f"{sorted(s.queue for s in allowed)} (counter {state.counter}, last {state.last}, "
                f"faults {state.faults})")
        return self._step(state, spec.SelectQueue(queue), f"attempt {event.attempt}")

    def _unobserved_selection(self, tracked: Tracked, state: spec.SendState) -> spec.SendState:
        counter = tracked.info.index.value
        allowed = sorted(spec.selections(state), key=lambda s: (s.counter != counter, s.queue))
        return self._step(state, spec.SelectQueue(allowed[0].queue), "a selection over budget")

    @staticmethod
    def _outcome_action(event: SendResultEvent, latency: int) -> spec.Action:
        if event.status == "ONEWAY":
            return spec.AttemptAnswered(latency, None)
        if event.status != "ERROR":
            return spec.AttemptAnswered(latency, SendStatus(event.status))
        if event.code is not None:
            return spec.BrokerErrorResponse(latency, event.code)
        return spec.AttemptFailed(latency, _failure_kind(event))

    @staticmethod
    def _check_outcome(state: spec.SendState, sent: Sent) -> None:
        out, error = state.outcome, sent.error
        where = f"spec outcome {out!r} after {state.attempts} attempt(s), caller got {sent.value!r} / {error!r}"
        if out.kind is spec.OutcomeKind.SENT:
            assert error is None, f"SEND-6/SEND-10: {where}"
            if sent.mode is CommunicationMode.ONEWAY:
                assert sent.value is None, f"SEND-9: {where}"
            else:
                assert sent.value is not None and sent.value.status is out.status, f"SEND-5/SEND-6: {where}"
            return
        assert error is not None, f"SEND-4/SEND-10: {where}"
        if out.failure is spec.Failure.TIMEOUT and not out.exhausted:
            assert isinstance(error, RemotingTooMuchRequestError), f"SEND-2: {where}"
        elif out.failure is spec.Failure.BROKER and not out.exhausted:
            assert isinstance(error, MQBrokerError) and error.code == out.code, f"SEND-4/SEND-7: {where}"
        elif sent.mode is CommunicationMode.ASYNC:
            # onException gets the last failure itself (SEND-10).
            assert not isinstance(error, MQBrokerError), f"SEND-7/SEND-10: {where}"
            if out.failure is spec.Failure.TIMEOUT:
                assert isinstance(error, RemotingTooMuchRequestError), f"SEND-7: {where}"
        else:
            assert isinstance(error, MQClientError) and error.message.startswith(f"Send [{state.attempts}] times"), (
                f"SEND-10: {where}")
            if out.failure is spec.Failure.BROKER:
                assert error.code == out.code, f"SEND-10: {where}"

    @staticmethod
    def _check_selector_state(tracked: Tracked, state: spec.SendState) -> None:
        tolerance = tracked.producer.fault_strategy.tolerance
        assert tracked.info.index.value == state.counter, (
            f"SEND-11/SEND-12/SEND-13/SEND-17: {tracked.label}'s round-robin counter {tracked.info.index.value}, "
            f"spec {state.counter}")
        assert tolerance.which_item_worst.value == state.worst_counter, (
            f"SEND-18: whichItemWorst {tolerance.which_item_worst.value}, spec {state.worst_counter}")
        actual = {n: (i.current_latency, i.start_timestamp - state.now_ms) for n, i in tolerance.items.items()}
        expected = {i.broker_name: (i.latency_ms, i.start_ms - state.now_ms) for i in state.faults}
        assert actual == expected, (
            f"SEND-14/SEND-15/SEND-19: fault table (latency, start - now) {actual}, spec {expected}")

    @precondition(lambda self: self.cluster is not None)
    @invariant()
    def fault_items_only_when_enabled(self) -> None:
        """SEND-14: without sendLatencyFaultEnable no fault item is ever recorded."""
        for tracked in self.tracked:
            if not tracked.config.fault_enabled:
                assert not tracked.producer.fault_strategy.tolerance.items, (
                    f"SEND-14: fault items of {tracked.label}, whose sendLatencyFaultEnable is off")


SendRetryMachine.TestCase.settings = stateful_settings(60, 40)
TestSendRetry = SendRetryMachine.TestCase


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 100, 30
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
    with refimpl_mutant(module, old, new):
        failure = hypothesis_finds_failure(SendRetryMachine, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)
    text = failure_text(failure)
    assert any(clause in text for clause in clauses), f"{name}: failure names none of {clauses}: {text}"
