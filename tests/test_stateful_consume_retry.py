"""Stateful: the consume_retry spec (RETRY-*) as the model of the reference implementation's retry chain.

A simulated cluster (one broker, topic ``T`` with one queue) and a clustering push consumer of group ``G`` whose
listener answers each message as the rules say (success, RECONSUME_LATER with context delay level 0 / 1 / -1, an
exception, ``None``, success with ``ackIndex = -1``), with a per-program ``maxReconsumeTimes`` of 0..3. Faults make
CONSUMER_SEND_MSG_BACK fail or vanish (the client falls back to its own send to ``%RETRY%G``) and make that fallback
fail (the message is consumed again locally after 5 s); time passes in steps, or until everything is idle.

Refinement: every message is one instance of the spec's state machine (``consume_retry.RetryState``). The
implementation's events (``MessageStored``, ``ConsumeDeliver``, ``ConsumeResult``, ``SendBack``) are translated
into spec actions (Pull, ListenerReturns, BrokerAnswers, SendBackFails, FallbackStored, FallbackFails, TimePasses,
ScheduleDelivers, LocalReconsume); each must be enabled in the spec state and the abstraction (reconsume times
shown, copies stored, dead or alive) must agree with the spec state after the step. Each copy is also checked
against the oracles (``consumer_send_back``, ``retry_topic_send``, ``client_retry_message``,
``send_back_properties``, ``after_listener``, ``visible_topic``) and its redelivery time against ``delay_millis`` /
``schedule_due`` on the implementation's clock.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mutation import refimpl_mutant
from stateful_support import hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, ConsumeStatus, Message
from rocketspec.refimpl.broker import schedule, sendback
from rocketspec.refimpl.client import consume_service
from rocketspec.refimpl.events import ConsumeDeliver, ConsumeResult, Event, MessageStored, SendBack, SendResultEvent
from rocketspec.spec import consume_retry as cr
from rocketspec.spec.protocol import (
    DEFAULT_MAX_RECONSUME_TIMES,
    SCHEDULE_TICK_MS,
    SCHEDULE_TOPIC,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V4_9_8,
    MessageModel,
    Property,
    dlq_topic,
    retry_topic,
)

GROUP = "G"
TOPIC = "T"
BROKER = "broker-a"
RETRY = retry_topic(GROUP)
DLQ = dlq_topic(GROUP)
MAX_MESSAGES = 4
# A due copy is re-put at the schedule service's next tick (the implementation runs on a 100 ms grid).
SCHEDULE_SLACK_MS = 2 * SCHEDULE_TICK_MS


class Outcome(enum.Enum):
    """What the listener does with a message: status, context delayLevelWhenNextConsume / ackIndex."""

    SUCCESS = "success"
    LATER = "later"  # RECONSUME_LATER, delay level 0 (the broker picks 3 + reconsumeTimes)
    LATER_LEVEL_1 = "later, level 1"  # RECONSUME_LATER, the context asks for level 1 (1 s)
    GIVE_UP = "later, level -1"  # RECONSUME_LATER, level -1: straight to the DLQ (RETRY-7)
    RAISE = "raise"  # the listener throws (RETRY-13: counts as RECONSUME_LATER)
    NONE = "none"  # the listener returns null
    ACK_NONE = "success, ackIndex -1"  # CONSUME_SUCCESS with ackIndex -1: the message failed (RETRY-13)

    def spec_action(self) -> cr.ListenerReturns:
        """The spec's ListenerReturns for this behaviour."""
        match self:
            case Outcome.SUCCESS:
                return cr.ListenerReturns(ConsumeStatus.CONSUME_SUCCESS)
            case Outcome.ACK_NONE:
                return cr.ListenerReturns(ConsumeStatus.CONSUME_SUCCESS, ack_index=-1)
            case Outcome.RAISE | Outcome.NONE:
                return cr.ListenerReturns(None)
        return cr.ListenerReturns(ConsumeStatus.RECONSUME_LATER, delay_level=self.level)

    @property
    def level(self) -> int:
        return {Outcome.LATER_LEVEL_1: 1, Outcome.GIVE_UP: -1}.get(self, 0)


@attrs.define
class ListenerCall:
    """One call of the listener, as the listener saw it."""

    at_ms: int
    msg_id: str
    reconsume_times: int
    topic: str
    outcome: Outcome


@attrs.define(repr=False)
class Chain:
    """One message of the program and the spec machine that models its retry chain."""

    index: int
    outcome: Outcome
    spec: cr.RetryState
    msg_id: str = ""
    calls: deque[ListenerCall] = attrs.Factory(deque)
    current: MessageStored | None = None  # the stored message the consumer pulls / consumes now
    pending: MessageStored | None = None  # a copy stored whose send back is not yet stepped
    parked: MessageStored | None = None  # the copy waiting in SCHEDULE_TOPIC_XXXX
    broker_back: SendBack | None = None  # the broker's last SendBack event
    client_view: cr.SendBackResult | None = None  # what the client expects of that send back
    local_failed_at: int = 0
    fallback_attempt: int = 0
    actions: list[str] = attrs.Factory(list)

    def __repr__(self) -> str:
        return f"<m{self.index} {self.spec.phase.name} {self.outcome.name}: {' '.join(self.actions)}>"


class ConsumeRetryMachine(RuleBasedStateMachine):
    """The spec's retry chain (one ``RetryState`` per message) refined by the implementation's consumer + broker."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.chains: list[Chain] = []
        self.by_id: dict[str, Chain] = {}
        self.cursor = 0
        self.max_times = 0
        self.client_id = ""

    # ------------------------------------------------------------------------------------------------ set-up
    @initialize(seed=st.integers(0, 3), max_times=st.sampled_from([1, 2, 3, 0]))
    def start(self, seed: int, max_times: int) -> None:
        """One broker, topic T (1 queue), a producer and a clustering push consumer with ``maxReconsumeTimes``."""
        self.max_times = max_times
        self.cluster = Cluster(brokers=1, clock="simulated", wire_codec="json", seed=seed, keep_events=True)
        self.cluster.create_topic(TOPIC, queues=1)
        self.producer = self.cluster.producer("PG")
        self.consumer = self.cluster.push_consumer(
            GROUP, TOPIC, self._listener, max_reconsume_times=max_times,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        )
        self.client_id = self.consumer.instance.client_id
        self._drain()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def _listener(self, msgs: list[Any], context: Any) -> Any:
        assert self.cluster is not None
        outcome = Outcome.SUCCESS
        for msg in msgs:
            chain = self.chains[int(msg.body[1:])]
            outcome = chain.outcome
            chain.calls.append(ListenerCall(self.cluster.now_ms(), msg.msg_id, msg.reconsume_times, msg.topic,
                                            outcome))
        if outcome is Outcome.RAISE:
            raise RuntimeError("listener failed")
        if outcome is Outcome.NONE:
            return None
        if outcome is Outcome.ACK_NONE:
            context.ack_index = -1
            return ConsumeStatus.CONSUME_SUCCESS
        if outcome is Outcome.SUCCESS:
            return ConsumeStatus.CONSUME_SUCCESS
        context.delay_level_when_next_consume = outcome.level
        return ConsumeStatus.RECONSUME_LATER

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: len(self.chains) < MAX_MESSAGES)
    @rule(outcome=st.sampled_from(Outcome))
    def send(self, outcome: Outcome) -> None:
        """The producer sends a message the listener will answer with ``outcome``."""
        assert self.cluster is not None
        spec = cr.RetryState(
            MessageModel.CLUSTERING, VERSION_V4_9_8, cr.effective_max_reconsume_times(self.max_times),
            DEFAULT_MAX_RECONSUME_TIMES, 1, 0, faults_left=10**6,
        )
        chain = Chain(len(self.chains), outcome, spec)
        self.chains.append(chain)
        result = self.producer.send(Message(TOPIC, f"m{chain.index}".encode()))
        chain.msg_id = result.msg_id
        self.by_id[result.msg_id] = chain
        self._drain()

    @precondition(lambda self: self.chains)
    @rule(data=st.data(), outcome=st.sampled_from(Outcome))
    def change_outcome(self, data: st.DataObject, outcome: Outcome) -> None:
        """From now on the listener answers message ``i`` with ``outcome``."""
        i = data.draw(st.integers(0, len(self.chains) - 1), label="message")
        self.chains[i].outcome = outcome

    @rule(kind=st.sampled_from(["fail", "drop"]))
    def send_back_fault(self, kind: str) -> None:
        """The next CONSUMER_SEND_MSG_BACK fails (error answer) or is lost (the client times out): RETRY-16."""
        assert self.cluster is not None
        if kind == "fail":
            self.cluster.faults.fail(BROKER, "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR", times=1)
        else:
            self.cluster.faults.drop(BROKER, "CONSUMER_SEND_MSG_BACK", times=1)

    @rule()
    def fallback_fault(self) -> None:
        """The consumer's next own send to %RETRY%G fails on all three attempts: local re-consume (RETRY-17)."""
        assert self.cluster is not None
        self.cluster.faults.fail(BROKER, "SEND_MESSAGE", code="SYSTEM_ERROR", times=3, client=self.client_id)

    @rule(ms=st.sampled_from([100, 1_000, 5_000, 10_000, 30_000, 60_000]))
    def advance(self, ms: int) -> None:
        """Simulated time passes: deliveries, send backs, delayed copies coming due."""
        assert self.cluster is not None
        self.cluster.advance(ms)
        self._drain()

    @rule()
    def settle(self) -> None:
        """Run until idle; then no message is lost (RETRY-13, RETRY-15, RETRY-27): each one was consumed or sits in
        %DLQ%G, exactly the ones the spec put there."""
        assert self.cluster is not None
        self.cluster.faults.clear()
        self.cluster.run_until_idle()
        self._drain()
        for chain in self.chains:
            assert chain.spec.phase in (cr.Phase.CONSUMED, cr.Phase.DEAD), (
                f"RETRY-15/RETRY-17: {chain!r} neither consumed nor dead-lettered once everything is idle: lost")
        dead = {m.msg_id for m in self.cluster.messages(DLQ)}
        expected = {c.msg_id for c in self.chains if c.spec.phase is cr.Phase.DEAD}
        assert dead == expected, f"RETRY-7/RETRY-27: %DLQ%G holds {sorted(dead)}, the spec {sorted(expected)}"

    # ------------------------------------------------------------------------------------------------ invariants
    @invariant()
    def spec_invariants_hold(self) -> None:
        """The spec state each message was driven into satisfies the area's invariants (RETRY-25..27 and more)."""
        for chain in self.chains:
            for inv in cr.INVARIANTS:
                assert inv.holds(chain.spec), f"{inv.clauses}: {inv.name} broken by {chain!r}"

    # ------------------------------------------------------------------------------------------------ refinement
    def _drain(self) -> None:
        """Translate every new implementation event into spec actions and check them."""
        assert self.cluster is not None
        events = self.cluster.events.events
        while self.cursor < len(events):
            event = events[self.cursor]
            self.cursor += 1
            self._observe(event)

    def _chain(self, msg_id: str) -> Chain | None:
        return self.by_id.get(msg_id)

    def _step(self, chain: Chain, action: Any, clause: str) -> None:
        assert cr.enabled(chain.spec, action), (
            f"{clause}: the implementation did {action!r} for {chain!r}, which the spec does not allow in phase "
            f"{chain.spec.phase.name}")
        before = chain.spec
        chain.spec = cr.step(chain.spec, action)
        chain.actions.append(type(action).__name__)
        for inv in cr.STEP_INVARIANTS:
            assert inv.holds(before, action, chain.spec), f"{inv.clauses}: {inv.name} broken by {chain!r}"

    def _time_to_due(self, chain: Chain) -> None:
        if chain.spec.now_ms < chain.spec.due_ms:
            self._step(chain, cr.TimePasses(), "RETRY-3")

    def _look(self, stored: MessageStored) -> Any:
        assert self.cluster is not None
        msg = self.cluster.broker(BROKER).store.look_message(stored.commit_log_offset)
        assert msg is not None, f"stored copy {stored!r} not found in the commit log"
        return msg

    def _observe(self, event: Event) -> None:
        if isinstance(event, MessageStored):
            self._on_stored(event)
        elif isinstance(event, ConsumeDeliver) and event.group == GROUP:
            self._on_deliver(event)
        elif isinstance(event, ConsumeResult) and event.group == GROUP:
            self._on_result(event)
        elif isinstance(event, SendBack) and event.group == GROUP:
            self._on_send_back(event)
        elif isinstance(event, SendResultEvent) and event.node == self.client_id and event.topic == RETRY:
            chain = self._chain(event.msg_id)
            if chain is not None and event.final and event.status == "SEND_OK":
                chain.fallback_attempt = event.attempt  # the attempt of the client's own send that stored it

    def _on_stored(self, event: MessageStored) -> None:
        chain = self._chain(event.msg_id)
        if chain is None:
            return
        if event.topic == TOPIC:
            chain.current = event
        elif event.topic == SCHEDULE_TOPIC:
            chain.pending = event
        elif event.topic in (RETRY, DLQ) and chain.spec.phase is cr.Phase.SCHEDULED:
            self._on_due(chain, event)
        elif event.topic == DLQ:
            chain.pending = event  # the broker's direct dead letter, stepped with its SendBack
        else:
            raise AssertionError(f"RETRY-3/RETRY-8: {event.topic} copy of {chain!r} stored out of turn: {event!r}")

    def _on_due(self, chain: Chain, event: MessageStored) -> None:
        """The schedule service moved a parked copy to %RETRY%G (or %DLQ%G, RETRY-12): ScheduleDelivers."""
        parked = chain.parked
        assert parked is not None
        level = parked.queue_id + 1
        assert level == chain.spec.scheduled_level, (
            f"RETRY-2/RETRY-8: parked at level {level}, the spec says {chain.spec.scheduled_level}: {chain!r}")
        due = parked.ts_ms + cr.delay_millis(level)
        assert cr.schedule_due(parked.ts_ms, level, event.ts_ms), (
            f"RETRY-3/RETRY-26: level-{level} copy stored at {parked.ts_ms} re-put at {event.ts_ms}, "
            f"{due - event.ts_ms} ms before it is due: {chain!r}")
        assert event.ts_ms <= due + SCHEDULE_SLACK_MS, (
            f"RETRY-3: copy due at {due} re-put only at {event.ts_ms}: {chain!r}")
        assert event.reconsume_times == parked.reconsume_times, "RETRY-3: reconsumeTimes changed by the schedule"
        target = self._look(parked).properties.get(Property.REAL_TOPIC)
        assert event.topic == target, f"RETRY-3: parked for {target}, re-put to {event.topic}"
        self._time_to_due(chain)
        self._step(chain, cr.ScheduleDelivers(), "RETRY-3")
        assert (event.topic == DLQ) == (chain.spec.phase is cr.Phase.DEAD), f"RETRY-12/RETRY-27: {chain!r}"
        chain.parked = None
        chain.current = event

    def _on_deliver(self, event: ConsumeDeliver) -> None:
        chain = self._chain(event.msg_id)
        assert chain is not None, f"delivered a message nobody sent: {event!r}"
        if chain.spec.phase is cr.Phase.LOCAL_WAIT:
            assert event.ts_ms >= chain.local_failed_at + SEND_BACK_LOCAL_RETRY_DELAY_MS, (
                f"RETRY-17/RETRY-26: re-consumed locally {event.ts_ms - chain.local_failed_at} ms after the "
                f"failure: {chain!r}")
            self._time_to_due(chain)
            self._step(chain, cr.LocalReconsume(), "RETRY-17")
        else:
            self._step(chain, cr.Pull(), "RETRY-3/RETRY-27")
            current = chain.current
            assert current is not None and (event.topic, event.offset) == (current.topic, current.offset), (
                f"RETRY-19: delivered {event.topic}@{event.offset}, the chain's message is {current!r}")
        shown = chain.spec.deliveries[-1].reconsume_times
        assert event.reconsume_times == shown, (
            f"RETRY-25/RETRY-17/RETRY-18: delivered with reconsumeTimes {event.reconsume_times}, the spec shows "
            f"{shown}: {chain!r}")

    def _on_result(self, event: ConsumeResult) -> None:
        chain = self._chain(event.msg_id)
        assert chain is not None and chain.calls, f"a consume result without a listener call: {event!r}"
        call = chain.calls.popleft()
        assert call.reconsume_times == chain.spec.deliveries[-1].reconsume_times, "RETRY-25: listener view"
        retry_prop = self._look(chain.current).properties.get(Property.RETRY_TOPIC) if chain.current else None
        stored_topic = chain.current.topic if chain.current else TOPIC
        assert call.topic == cr.visible_topic(stored_topic, retry_prop, GROUP) == TOPIC, (
            f"RETRY-19: the listener saw topic {call.topic}")
        action = call.outcome.spec_action()
        expected = cr.after_listener(action.status, 1, MessageModel.CLUSTERING, action.ack_index)
        ok = "CONSUME_SUCCESS" if expected.succeeded else "RECONSUME_LATER"
        assert event.status == ok, f"RETRY-13: listener {call.outcome.value} recorded as {event.status}: {chain!r}"
        self._step(chain, action, "RETRY-13")

    def _on_send_back(self, event: SendBack) -> None:
        chain = self._chain(event.msg_id)
        assert chain is not None, f"a send back of a message nobody sent: {event!r}"
        if event.node == BROKER:
            self._on_broker_send_back(chain, event)
        elif event.via == "broker":
            # The client reports the send back from its own view of the message: the count it showed, raised by
            # local re-consumes, which the broker does not see (RETRY-18), so its copy may differ from this.
            assert chain.broker_back is not None, f"RETRY-15: the client reports {event!r}, the broker did nothing"
            assert chain.client_view is not None
            got = (event.target, event.reconsume_times)
            want = (chain.client_view.topic, chain.client_view.reconsume_times)
            assert got == want, f"RETRY-15/RETRY-7: the client reports (target, times) {got}, expected {want}"
            chain.broker_back = chain.client_view = None
        elif event.via == "client":
            self._on_fallback(chain, event)
        else:
            if chain.spec.phase is cr.Phase.SENDING_BACK:
                self._step(chain, cr.SendBackFails(), "RETRY-16")
            self._step(chain, cr.FallbackFails(), "RETRY-17")
            chain.local_failed_at = event.ts_ms
            assert event.reconsume_times == chain.spec.local_times, f"RETRY-17: local count {event!r}"

    def _on_broker_send_back(self, chain: Chain, event: SendBack) -> None:
        """CONSUMER_SEND_MSG_BACK handled: the copy must be ``consumer_send_back``'s (RETRY-4..RETRY-9)."""
        spec = chain.spec
        assert spec.phase is cr.Phase.SENDING_BACK, f"RETRY-15: a broker send back of {chain!r} out of turn"
        expected = cr.consumer_send_back(
            spec.stored_times, spec.context_level, spec.consumer_max, spec.client_version, GROUP,
            retry_queue_nums=spec.retry_queue_nums, group_retry_max_times=spec.group_max,
        )
        got = (event.target, event.reconsume_times, cr.effective_delay_level(event.delay_level))
        want = (expected.topic, expected.reconsume_times, expected.delay_level)
        assert got == want, (
            f"RETRY-7/RETRY-8/RETRY-9: send back of a message stored with reconsumeTimes {spec.stored_times} "
            f"(max {spec.consumer_max}, context level {spec.context_level}) gave (target, times, level) {got}, "
            f"consumer_send_back says {want}: {chain!r}")
        copy = chain.pending
        assert copy is not None, f"RETRY-9: no copy stored for {event!r}"
        if expected.target is cr.Target.RETRY:
            assert (copy.topic, copy.queue_id) == (SCHEDULE_TOPIC, cr.schedule_queue_id(expected.delay_level)), (
                f"RETRY-2/RETRY-8: retry copy stored in {copy.topic}:{copy.queue_id}")
        else:
            assert (copy.topic, copy.queue_id) == (DLQ, 0), f"RETRY-7: dead letter stored in {copy.topic}"
        assert copy.reconsume_times == expected.reconsume_times, f"RETRY-9: copy {copy!r}"
        assert chain.current is not None
        source = self._look(chain.current)
        props = self._look(copy).properties
        want_props = cr.send_back_properties(
            source.topic, source.properties.get(Property.RETRY_TOPIC),
            source.properties.get(Property.ORIGIN_MESSAGE_ID), source.offset_msg_id,
        )
        got_props = (props.get(Property.RETRY_TOPIC), props.get(Property.ORIGIN_MESSAGE_ID))
        assert got_props == want_props, f"RETRY-9: (RETRY_TOPIC, ORIGIN_MESSAGE_ID) {got_props}, want {want_props}"
        shown = spec.deliveries[-1].reconsume_times
        chain.client_view = cr.consumer_send_back(
            shown, spec.context_level, spec.consumer_max, spec.client_version, GROUP,
            retry_queue_nums=spec.retry_queue_nums, group_retry_max_times=spec.group_max,
        )
        self._step(chain, cr.BrokerAnswers(), "RETRY-15")
        self._after_copy(chain, copy)
        chain.broker_back = event

    def _on_fallback(self, chain: Chain, event: SendBack) -> None:
        """The client's own send to %RETRY%G was stored (RETRY-16, RETRY-11, RETRY-12).

        The client reports what its first attempt asks for; a retried attempt carries no count (RETRY-16), so the
        stored copy is checked against the attempt that stored it.
        """
        if chain.spec.phase is cr.Phase.SENDING_BACK:
            self._step(chain, cr.SendBackFails(), "RETRY-16")
        spec = chain.spec
        retried = chain.fallback_attempt > 1
        chain.fallback_attempt = 0
        first = cr.client_retry_message(TOPIC, spec.local_times, spec.consumer_max, GROUP)
        asked = cr.retry_topic_send(
            first.header_reconsume_times, first.delay_level, first.header_max_reconsume_times,
            spec.client_version, GROUP, group_retry_max_times=spec.group_max,
        )
        got = (event.target, event.reconsume_times, event.delay_level)
        want = (asked.topic, asked.reconsume_times, first.delay_level)
        assert got == want, f"RETRY-16/RETRY-11: the client reports fallback {got}, expected {want}: {chain!r}"
        message = cr.client_retry_message(TOPIC, spec.local_times, spec.consumer_max, GROUP, retried=retried)
        expected = cr.retry_topic_send(
            message.header_reconsume_times, message.delay_level, message.header_max_reconsume_times,
            spec.client_version, GROUP, group_retry_max_times=spec.group_max,
        )
        copy = chain.pending
        assert copy is not None and copy.topic == SCHEDULE_TOPIC, f"RETRY-12: fallback copy stored as {copy!r}"
        assert copy.queue_id == cr.schedule_queue_id(expected.delay_level), f"RETRY-2: {copy!r}"
        assert copy.reconsume_times == expected.reconsume_times, f"RETRY-11: {copy!r}"
        props = self._look(copy).properties
        sent = dict(message.properties)
        for name in (Property.RETRY_TOPIC, Property.RECONSUME_TIME, Property.MAX_RECONSUME_TIMES):
            assert props.get(name) == sent.get(name), f"RETRY-16: {name} = {props.get(name)}, sent {sent.get(name)}"
        assert props.get(Property.REAL_TOPIC) == expected.topic, f"RETRY-11/RETRY-12: parked for {props}"
        self._step(chain, cr.FallbackStored(retried=retried), "RETRY-16")
        self._after_copy(chain, copy)

    def _after_copy(self, chain: Chain, copy: MessageStored) -> None:
        """The spec's new copy agrees with the stored one: dead or not, count, parked or final."""
        made = chain.spec.copies[-1]
        bound = self._look(copy).properties.get(Property.REAL_TOPIC) if copy.topic == SCHEDULE_TOPIC else copy.topic
        assert made.dead == (bound == DLQ), (
            f"RETRY-7/RETRY-11: the spec's copy {made!r} against the stored {copy!r}")
        assert made.reconsume_times == copy.reconsume_times, f"RETRY-9: {made!r} vs {copy!r}"
        chain.pending = None
        if chain.spec.phase is cr.Phase.SCHEDULED:
            assert copy.topic == SCHEDULE_TOPIC, f"RETRY-8: the spec parks the copy, the store has {copy!r}"
            chain.parked = copy
        else:
            assert chain.spec.phase is cr.Phase.DEAD and copy.topic == DLQ, f"RETRY-7: {chain!r} / {copy!r}"
            chain.current = copy


ConsumeRetryMachine.TestCase.settings = stateful_settings(60, 40)
test_consume_retry_machine = ConsumeRetryMachine.TestCase


# ---------------------------------------------------------------------------------------------------- mutants
# Each breaks one rule of the implementation; the machine must find a program that shows it.


def test_mutant_dlq_threshold_off_by_one_is_caught() -> None:
    """RETRY-7: the broker dead-letters a copy only past the limit."""
    with refimpl_mutant(sendback, "if original.reconsume_times >= max_times or delay_level < 0:",
                        "if original.reconsume_times > max_times or delay_level < 0:"):
        failure = hypothesis_finds_failure(ConsumeRetryMachine, 40, 15)
    assert "RETRY-7" in str(failure)


def test_mutant_retry_delay_level_2_plus_n_is_caught() -> None:
    """RETRY-8: the broker's level for a retry is 3 + reconsumeTimes."""
    with refimpl_mutant(sendback, "delay_level = 3 + original.reconsume_times",
                        "delay_level = 2 + original.reconsume_times"):
        failure = hypothesis_finds_failure(ConsumeRetryMachine, 40, 15)
    assert "RETRY-8" in str(failure)


def test_mutant_failed_message_acknowledged_is_caught() -> None:
    """RETRY-13/RETRY-15: RECONSUME_LATER handled like CONSUME_SUCCESS (the failed message is committed, lost)."""
    with refimpl_mutant(consume_service, "        else:\n            ack_index = -1\n",
                        "        else:\n            ack_index = len(msgs) - 1\n"):
        failure = hypothesis_finds_failure(ConsumeRetryMachine, 40, 15)
    assert "RETRY-13" in str(failure)


def test_mutant_schedule_wrong_delay_is_caught() -> None:
    """RETRY-3/RETRY-26: the schedule service corrects due times with the previous level's delay (delivers early)."""
    with refimpl_mutant(schedule, "level_delay = self.broker.store.delay_level_millis[level - 1]",
                        "level_delay = self.broker.store.delay_level_millis[level - 2]"):
        failure = hypothesis_finds_failure(ConsumeRetryMachine, 40, 15)
    assert "RETRY-3" in str(failure)
