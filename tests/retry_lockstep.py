"""The consume_retry lockstep machine: the spec's consumer machine (RETRY-*) drives the reference implementation.

Both consume_retry machines (``test_stateful_consume_retry``, concurrent first; ``test_stateful_orderly``, orderly
first) are this machine with their own rules and mixes of configuration. Each run draws the broker's
``messageDelayLevel``, the consumer's ``maxReconsumeTimes``, ``consumeMessageBatchMaxSize`` and whether it is orderly;
besides, how the listener answers (:class:`Form`: the status, its name, without a context, an orderly listener
answering with concurrent statuses) and how long each call takes (``consume_duration_ms``). A simulated cluster (one
broker, topic ``T``) and a clustering push consumer of group ``G`` are built from it, and the spec starts from the same
configuration (``consume_retry.RetryConfig``).

Driven: ``Publish`` (a rule sends a message, or a batch of them, with a plan: what the listener answers at each
delivery), ``BrokerRestarts`` (a clean restart) and ``LocksRefused`` (faults on the orderly consumer's lock requests).
Observed: everything else, read from the implementation's events in order (``retry_events``). After every rule both
sides' projections are compared part by part; a last rule shuts the consumer down and checks what reached the broker.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from retry_events import BROKER, Call, RetryEvents

from rocketspec.refimpl import Cluster, Message
from rocketspec.refimpl.events import ConsumeDeliver, ConsumeResult, PullResponseEvent, SendAttempt, SendBack
from rocketspec.refimpl.runtime import NotIdle
from rocketspec.spec import consume_retry as cr
from rocketspec.spec.protocol import ConsumeOrderlyStatus, ConsumeStatus, Property
from rocketspec.spec.queues import MessageQueue

MAX_MESSAGES = 4
SUSPEND_MS = (1_000, 10, 5, 40_000)
CONTEXT_MS = (-1, 5, 500, 40_000)
#: How long a listener call takes (simulated): mostly nothing; 25 s (a few batches) and 61 s (one) make an orderly
#: loop pass its 60 s.
DURATION_MS = (0, 0, 0, 20, 25_000, 61_000)
SETTLE_CHUNK_MS = 60 * 60_000
SETTLE_CHUNKS = 40
#: Idle with messages left: how long daemon timers (the 20 s rebalance, a 3 s pull delay) run before a new look.
SETTLE_GRACE_MS = 30_000
#: The consumer may be shut down (the last thing a run does) only after this many rules.
SHUTDOWN_AFTER = 18
#: After the shutdown, how long the consumer must do nothing (longer than a listener call).
SHUTDOWN_QUIET_MS = 2 * 61_000
# A message fails for ever only where its chain ends soon: the delays up to the limit add up to at most this.
FOREVER_MAX_MS = 5 * 60 * 60_000
# The parts of the projection, each named with the clauses that decide it.
RECEIVED = "what the listener received: queue, offset, reconsumeTimes, topic, properties (RETRY-19, RETRY-21, " \
           "RETRY-25, RETRY-28, RETRY-29, RETRY-30, RETRY-31)"
STORES = "%RETRY%G, SCHEDULE_TOPIC_XXXX and %DLQ%G stored (RETRY-1, RETRY-2, RETRY-3, RETRY-7, RETRY-8, RETRY-9, " \
         "RETRY-10, RETRY-11, RETRY-12, RETRY-23, RETRY-32)"
SCHEDULE_OFFSETS = "the schedule service's offset per level (RETRY-3, RETRY-32)"
COMMITTED = "the consumer's committed offsets (RETRY-17, RETRY-28, RETRY-29)"


class Kind(enum.Enum):
    """What the listener does at one delivery of a message."""

    SUCCESS = "success"
    LATER = "later"  # RECONSUME_LATER (orderly: SUSPEND_CURRENT_QUEUE_A_MOMENT)
    RAISE = "raise"  # the listener throws
    NONE = "none"  # the listener returns null
    ACK_BEFORE = "ack before"  # CONSUME_SUCCESS with ackIndex just before this message (orderly: SUCCESS)


class Form(enum.Enum):
    """How the run's listener answers (the reference implementation's listener API)."""

    STATUS = "status"  # listener(msgs, context) -> the status
    NAME = "name"  # the status's name
    NO_CONTEXT = "no context"  # listener(msgs): the context keeps its defaults
    CONCURRENT = "concurrent status"  # orderly: CONSUME_SUCCESS / RECONSUME_LATER (taken as SUCCESS / SUSPEND)
    CONCURRENT_NAME = "concurrent status name"


@attrs.frozen
class Answer:
    """One answer; ``level``: delayLevelWhenNextConsume (concurrent), ``context_ms``: suspendCurrentQueueTimeMillis."""

    kind: Kind
    level: int = 0
    context_ms: int = -1


OK = Answer(Kind.SUCCESS)
ANSWERS = st.one_of(
    st.just(OK),
    st.builds(Answer, st.sampled_from([Kind.LATER, Kind.LATER, Kind.RAISE, Kind.NONE, Kind.ACK_BEFORE]),
              st.sampled_from([0, 0, 1, -1]), st.sampled_from(CONTEXT_MS)),
)
PLANS = st.lists(ANSWERS, max_size=4)
#: Faults armed with a send: the send back's (fail, drop) and the consumer's own send's (first attempt, all three).
FAULTS = st.sampled_from([(None, 0), (None, 0), (None, 0), ("fail", 0), ("drop", 0), ("fail", 1), ("fail", 3),
                          ("drop", 3), (None, 1), (None, 3)])


@attrs.define
class Plan:
    """A message's answers for its deliveries from ``T`` and ``%RETRY%G``, then SUCCESS (or LATER for ever)."""

    answers: list[Answer]
    forever: bool
    used: int = 0

    def next(self) -> Answer:
        self.used += 1
        if self.used <= len(self.answers):
            return self.answers[self.used - 1]
        return Answer(Kind.LATER) if self.forever else OK


def _returned(status: ConsumeStatus | ConsumeOrderlyStatus, form: Form) -> Any:
    """``status`` as a listener of ``form`` returns it."""
    if form in (Form.CONCURRENT, Form.CONCURRENT_NAME) and isinstance(status, ConsumeOrderlyStatus):
        status = ConsumeStatus.CONSUME_SUCCESS if status is ConsumeOrderlyStatus.SUCCESS else \
            ConsumeStatus.RECONSUME_LATER
    return status.name if form in (Form.NAME, Form.CONCURRENT_NAME) else status


class RetryLockstep(RetryEvents):
    """A consumer of G configured as the run draws, stepped with the spec's consumer machine (RETRY-*)."""

    TABLE = cr.TRANSITIONS
    DIMENSIONS = ("broker.messageDelayLevel", "consumer.maxReconsumeTimes", "consumer.consumeMessageBatchMaxSize",
                  "consumer.orderly")
    DRIVEN = (cr.Publish, cr.BrokerRestarts, cr.LocksRefused)
    OBSERVED = (cr.Pulled, cr.Deliver, cr.LocalReconsume, cr.ListenerReturns, cr.BrokerAnswers, cr.SendBackFails,
                cr.FallbackStored, cr.FallbackFails, cr.DeadLetterSent, cr.ScheduleDelivers, cr.TimePasses)
    QUEUES: ClassVar[int] = 1

    def __init__(self) -> None:
        super().__init__()
        self.running = False
        self.restarted = False
        self.rules = 0
        self.plans: list[Plan] = []
        self.form = Form.STATUS

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        orderly = config["consumer.orderly"]
        seed = data.draw(st.integers(0, 3), label="seed")
        suspend_ms = data.draw(st.sampled_from(SUSPEND_MS), label="suspendCurrentQueueTimeMillis") if orderly \
            else SUSPEND_MS[0]
        forms = list(Form) if orderly else [Form.STATUS, Form.STATUS, Form.NAME, Form.NO_CONTEXT]
        self.form = data.draw(st.sampled_from(forms), label="listener form")
        self.listener_form = self.form.value
        duration = data.draw(st.sampled_from(DURATION_MS), label="consume_duration_ms")
        levels = config["broker.messageDelayLevel"]
        self.cluster = Cluster(brokers=1, clock="simulated", seed=seed, keep_events=True,
                               message_delay_level=levels)
        self.cluster.create_topic(cr.TOPIC, queues=self.QUEUES)
        self.producer = self.cluster.producer("PG")
        listener = (lambda msgs: self._listener(msgs, None)) if self.form is Form.NO_CONTEXT else self._listener
        self.consumer = self.cluster.push_consumer(
            cr.GROUP, cr.TOPIC, listener, orderly=orderly,
            max_reconsume_times=config["consumer.maxReconsumeTimes"],
            consume_message_batch_max_size=config["consumer.consumeMessageBatchMaxSize"],
            suspend_current_queue_time_ms=suspend_ms, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            consume_duration_ms=duration)
        self.client_id = self.consumer.instance.client_id
        self.running = True
        spec_config = cr.RetryConfig(
            delay_table=cr.parse_delay_levels(levels), max_reconsume_times=config["consumer.maxReconsumeTimes"],
            orderly=orderly, batch_max=config["consumer.consumeMessageBatchMaxSize"], suspend_ms=suspend_ms,
            queues=self.QUEUES)
        self.begin(cr.RetryState(spec_config, now_ms=self.cluster.now_ms(), faults_left=10**6))
        self._drain()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    @property
    def bounded(self) -> bool:
        """Whether a message failing for ever ends soon (the limit is finite and the delays up to it are short)."""
        cfg = self.state.config
        if cfg.orderly:
            return cfg.limit <= 20 and cr.delay_millis(3 + cfg.limit, cfg.delay_table) <= FOREVER_MAX_MS
        return sum(cr.delay_millis(3 + n, cfg.delay_table) for n in range(cfg.limit)) <= FOREVER_MAX_MS

    # ------------------------------------------------------------------------------------------------ listener
    def _without_context(self, answer: Answer) -> Answer:
        """``answer`` as a listener without a context gives it: the context's defaults (delay level 0: the broker's
        3 + reconsumeTimes), and an acknowledgement index it cannot set (a concurrent ACK_BEFORE is a LATER)."""
        return Answer(Kind.LATER) if answer.kind is Kind.ACK_BEFORE and not self.orderly else Answer(answer.kind)

    def _listener(self, msgs: list[Any], context: Any) -> Any:
        """Answer as the plans say; record what was seen (no assertion here: the consumer would swallow it)."""
        assert self.cluster is not None
        # The call's ConsumeDeliver events were emitted just before it: they name the queue (the messages of
        # %RETRY%G show their real topic, and a listener without a context has no queue).
        last = self.cluster.events.events[-1]
        queue = (last.topic, last.queue_id)
        chains = [int(m.body[1:]) for m in msgs]
        answers = [self.plans[c].next() if not (self.orderly and queue[0] == cr.RETRY) else OK for c in chains]
        if context is None:  # nothing to set: the answer's context values are the defaults
            answers = [self._without_context(a) for a in answers]
        first = next(((i, a) for i, a in enumerate(answers) if a.kind is not Kind.SUCCESS), None)
        keys = tuple((*queue, m.queue_offset) for m in msgs)
        shown = tuple((c, m.reconsume_times, m.topic, cr.tracked(m.properties))
                      for c, m in zip(chains, msgs, strict=True))
        status: ConsumeStatus | ConsumeOrderlyStatus | None
        if first is None or (first[1].kind is Kind.ACK_BEFORE and self.orderly):
            status = ConsumeOrderlyStatus.SUCCESS if self.orderly else ConsumeStatus.CONSUME_SUCCESS
            action = cr.ListenerReturns(keys, status)
        else:
            i, answer = first
            if self.orderly:
                status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if context is not None:
                    context.suspend_current_queue_time_ms = answer.context_ms
                action = cr.ListenerReturns(keys, None if answer.kind in (Kind.RAISE, Kind.NONE) else status,
                                            context_ms=answer.context_ms)
            elif answer.kind is Kind.ACK_BEFORE:
                status, context.ack_index = ConsumeStatus.CONSUME_SUCCESS, i - 1
                action = cr.ListenerReturns(keys, status, ack_index=i - 1)
            else:
                status = ConsumeStatus.RECONSUME_LATER
                if context is not None:
                    context.delay_level_when_next_consume = answer.level
                action = cr.ListenerReturns(keys, None if answer.kind in (Kind.RAISE, Kind.NONE) else status,
                                            delay_level=answer.level)
            if answer.kind is Kind.RAISE:
                self.calls.append(Call(shown, action))
                raise RuntimeError("listener failed")
            if answer.kind is Kind.NONE:
                status = None
        self.calls.append(Call(shown, action))
        return None if status is None else _returned(status, self.form)

    # ------------------------------------------------------------------------------------------------ rules
    def _sent(self) -> None:
        self.rules += 1
        self._drain()
        self._quiesce()

    def _affordable(self, answers: list[Answer]) -> list[Answer]:
        """``answers`` cut where the delays of the copies they make pass FOREVER_MAX_MS (a table with days would
        make a chain take days of simulated time): then the message succeeds."""
        cfg = self.state.config
        if cfg.orderly:
            # Only a dead letter is parked (3 + the limit); suspensions last at most 30 s.
            if cr.delay_millis(3 + min(cfg.limit, 40), cfg.delay_table) <= FOREVER_MAX_MS:
                return answers
            fails = [i for i, a in enumerate(answers) if a.kind not in (Kind.SUCCESS, Kind.ACK_BEFORE)]
            return answers[:fails[cfg.limit]] if len(fails) > cfg.limit else answers
        spent = 0
        # A listener without a context sets no delay level: each answer is what _listener makes of it.
        answered = [self._without_context(a) for a in answers] if self.form is Form.NO_CONTEXT else answers
        for n, answer in enumerate(answered):
            if answer.kind is Kind.SUCCESS or answer.level < 0 or n >= cfg.limit:
                break
            spent += cr.delay_millis(answer.level if answer.level > 0 else 3 + n, cfg.delay_table)
            if spent > FOREVER_MAX_MS:
                return answers[:n]
        return answers

    def _add_plans(self, plans: list[list[Answer]], forever: bool) -> list[Message]:
        out = []
        for plan in plans:
            self.plans.append(Plan(self._affordable(plan), forever and self.bounded))
            out.append(Message(cr.TOPIC, f"m{len(self.plans) - 1}".encode()))
        return out

    def _fault(self, fault: tuple[str | None, int], plans: list[list[Answer]]) -> None:
        """Arm ``fault``; the first message then fails its first delivery (the fault is for it), or, orderly with an
        own-send fault and a small limit, as many as it takes to be dead-lettered."""
        back, own = fault
        if back is not None:
            self.send_back_fault(back, own)
        elif own:
            self.own_send_fault(own)
        else:
            return
        limit = self.state.config.limit
        if self.orderly and own and limit <= 3:
            plans[0] = [Answer(Kind.LATER)] * (limit + 1) + plans[0]
        elif not plans[0] or plans[0][0].kind is Kind.SUCCESS:
            plans[0] = [Answer(Kind.LATER), *plans[0]]

    @precondition(lambda self: self.running and len(self.plans) < MAX_MESSAGES)
    @rule(queue=st.integers(0, 1), plan=PLANS, forever=st.booleans(), fault=FAULTS)
    def send(self, queue: int, plan: list[Answer], forever: bool, fault: tuple[str | None, int]) -> None:
        """A producer sends a message whose deliveries the listener answers as ``plan`` says, then SUCCESS (or fails
        for ever when that ends: the limit is bounded); ``fault``: faults armed first (see ``send_back_fault``)."""
        self._fault(fault, plans := [plan])
        [msg] = self._add_plans(plans, forever)
        self.producer.send(msg, queue=MessageQueue(cr.TOPIC, BROKER, queue % self.QUEUES))
        self._sent()

    @precondition(lambda self: self.running and len(self.plans) <= MAX_MESSAGES - 2)
    @rule(queue=st.integers(0, 1), plans=st.lists(PLANS, min_size=2, max_size=3), forever=st.booleans(),
          fault=FAULTS)
    def send_batch(self, queue: int, plans: list[list[Answer]], forever: bool, fault: tuple[str | None, int]) -> None:
        """A producer sends a batch of messages to one queue: stored together, pulled together (RETRY-31), cut into
        batches of consumeMessageBatchMaxSize (RETRY-28, RETRY-29)."""
        plans = plans[:MAX_MESSAGES - len(self.plans)]
        self._fault(fault, plans)
        msgs = self._add_plans(plans, forever)
        self.producer.send_batch(msgs, queue=MessageQueue(cr.TOPIC, BROKER, queue % self.QUEUES))
        self._sent()

    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from([5, 100, 1_000, 5_000, 30_000, 120_000]))
    def advance(self, ms: int) -> None:
        """Simulated time passes: deliveries, send backs, copies coming due, suspensions ending. Once the consumer is
        shut down, nothing (the run is over)."""
        assert self.cluster is not None
        self.rules += 1
        if not self.running:
            return
        self.cluster.advance(ms)
        self._drain()
        self._quiesce()
        self._catch_up()

    @precondition(lambda self: self.running)
    @rule()
    def settle(self) -> None:
        """Run until idle (in chunks, checking between them); then nothing is in the consumer's hands, and every
        message was consumed or sits in %DLQ%G (RETRY-13, RETRY-15, RETRY-17, RETRY-21, RETRY-27)."""
        assert self.cluster is not None
        self.rules += 1
        self.cluster.faults.clear()
        for _ in range(SETTLE_CHUNKS):
            try:
                self.cluster.run_until_idle(timeout_ms=SETTLE_CHUNK_MS)
            except NotIdle:
                self._drain()
                self._catch_up()
                self.compare("settling")
                continue
            self._drain()
            self._catch_up()
            if self._settled():
                return
            # Idle, with messages left: daemon timers still have work (the rebalance that pulls again after a
            # broker restart broke the consumer's pull or its offset query).
            self.cluster.advance(SETTLE_GRACE_MS)
            self._drain()
            self._quiesce()
            self._catch_up()
            self.compare("settling")
        state = self.state
        if state.batches or state.waiting or state.held or state.requests:
            self.fail(f"RETRY-15, RETRY-17, RETRY-21, RETRY-28: idle, but the spec's consumer still holds {state.held}")
        lost = [n for n, c in enumerate(state.chains) if not c.consumed and not any(x.dead for x in c.copies)]
        self.fail(f"RETRY-13, RETRY-27: messages {lost} neither consumed nor dead-lettered once idle: lost")

    def _settled(self) -> bool:
        state = self.state
        if state.batches or state.waiting or state.held or state.requests:
            return False
        return all(chain.consumed or any(c.dead for c in chain.copies) for chain in state.chains)

    @precondition(lambda self: self.running)
    @rule(kind=st.sampled_from(["fail", "drop"]), own=st.sampled_from([0, 0, 1, 3]))
    def send_back_fault(self, kind: str, own: int) -> None:
        """The next CONSUMER_SEND_MSG_BACK fails (an error answer) or is lost (the client times out): the consumer
        sends the message itself (RETRY-16), whose first attempt, or all three, may fail too (``own``: a retried
        attempt without its count, RETRY-16; a local re-consume, RETRY-17)."""
        assert self.cluster is not None
        self.rules += 1
        if kind == "fail":
            self.cluster.faults.fail(BROKER, "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR", times=1)
        else:
            self.cluster.faults.drop(BROKER, "CONSUMER_SEND_MSG_BACK", times=1)
        if own:
            self.own_send_fault(own)

    @precondition(lambda self: self.running)
    @rule(times=st.sampled_from([1, 3]))
    def own_send_fault(self, times: int) -> None:
        """The consumer's next own send to %RETRY%G fails on its first attempt (the retry carries no count:
        RETRY-16) or on all three (concurrent: a local re-consume, RETRY-17; orderly: suspended again, RETRY-21)."""
        assert self.cluster is not None
        self.rules += 1
        self.cluster.faults.fail(BROKER, "SEND_MESSAGE", code="SYSTEM_ERROR", times=times, client=self.client_id)

    @precondition(lambda self: self.running and self.orderly)
    @rule(times=st.sampled_from([2, 4]))
    def lock_fault(self, times: int) -> None:
        """The broker fails the orderly consumer's next lock requests (its renewals every 20 s, its retries): its
        locks lapse after 30 s and its batches wait for them (RETRY-33)."""
        assert self.cluster is not None
        self.rules += 1
        self.drive(cr.LocksRefused(), f"the next {times} lock requests fail")
        self.cluster.faults.fail(BROKER, "LOCK_BATCH_MQ", code="SYSTEM_ERROR", times=times)

    @precondition(lambda self: self.running and not self.restarted and not self.orderly and any(
        s.key[0] == cr.SCHEDULE for s in self.state.stored))
    @rule()
    def restart_broker(self) -> None:
        """The broker shuts down cleanly and starts again (once a run, once something was parked): its stores and the
        schedule service's offsets are kept, the schedule's tasks first run 1 s after the start (RETRY-32).
        Concurrent consumers only: the broker forgets its queue locks, and an orderly consumer's batches wait for
        them (the rebalance area's rules)."""
        assert self.cluster is not None
        self.rules += 1
        self.restarted = True
        self._catch_up()
        self.drive(cr.BrokerRestarts(), "clean broker restart")
        self.cluster.restart_broker(BROKER)
        self._drain()
        self._quiesce()

    @precondition(lambda self: self.running and self.rules >= SHUTDOWN_AFTER and not self.in_flight and not any(
        b.answered and b.pending for b in self.state.batches))
    @rule()
    def shutdown(self) -> None:
        """The consumer shuts down (the run's last act for it): it persists its committed offsets to the broker
        (RETRY-28, RETRY-29), an orderly one releases its queue locks; nothing more reaches the listener."""
        assert self.cluster is not None
        self.rules += 1
        self.running = False
        self.consumer.shutdown()
        self.cluster.advance(100)  # the offsets persisted (oneway) reach the broker
        broker = self.cluster.broker(BROKER)
        stored = {(mq.topic, mq.queue_id): o for topic in (cr.TOPIC, cr.RETRY)
                  for mq, o in self.cluster.committed_offsets(cr.GROUP, topic).items()}
        expected = dict(self.state.committed)
        if {q: stored.get(q) for q in expected} != expected:
            self.fail(f"RETRY-28, RETRY-29: the broker holds {stored} for G after its shutdown, the spec {expected}")
        locked = [q for q in expected if broker.locks.is_locked(cr.GROUP, MessageQueue(q[0], BROKER, q[1]),
                                                                  self.client_id)]
        if locked:
            self.fail(f"RETRY-29: the orderly consumer shut down, its locks of {locked} are still held")
        # The run is over for the spec (it does not step past the shutdown): from now on only that the consumer does
        # nothing (a listener call still running finishes without a result, a send back or a commit; no timer hands
        # anything over).
        self.cluster.advance(SHUTDOWN_QUIET_MS)
        events = self.cluster.events.events
        acted = [e for e in events[self.cursor:] if e.node == self.client_id and (isinstance(
            e, ConsumeDeliver | ConsumeResult | SendAttempt | SendBack) or (isinstance(e, PullResponseEvent)
            and e.status == "FOUND"))]
        self.cursor = len(events)
        if acted:
            self.fail(f"RETRY-28, RETRY-29: the consumer still acts after its shutdown: {acted[:3]}")

    def compare(self, where: str = "") -> None:
        """Both projections, part by part, while the consumer runs (after its shutdown the spec no longer steps)."""
        if self.running or self.cluster is None:
            super().compare(where)

    # ------------------------------------------------------------------------------------------------ projections
    def _ids(self) -> dict[str, str]:
        """The implementation's message ids as the spec names them."""
        assert self.cluster is not None
        ids = {uniq: cr.uniq_id(chain) for uniq, chain in self.uniq.items()}
        for topic in (cr.TOPIC, cr.RETRY, cr.SCHEDULE, cr.DLQ):
            for m in self._messages(topic):
                ids[m.offset_msg_id] = cr.offset_id((topic, m.queue_id, m.queue_offset))
        return ids

    def _messages(self, topic: str) -> list[Any]:
        assert self.cluster is not None
        return self.cluster.messages(topic)

    def project_spec(self) -> dict[str, Any]:
        state = self.state
        stores = sorted((s.key, s.chain, s.reconsume_times, s.properties, s.real[0])
                        for s in state.stored if s.key[0] != cr.TOPIC)
        committed = {q: o for q, o in state.committed}
        return {RECEIVED: dict(self.spec_received), STORES: stores, SCHEDULE_OFFSETS: dict(state.schedule),
                COMMITTED: committed}

    def project_system(self) -> dict[str, Any]:
        ids = self._ids()

        def symbolic(props: cr.Props) -> cr.Props:
            return tuple((n, ids.get(v, v) if n == Property.ORIGIN_MESSAGE_ID else v) for n, v in props)

        stores = []
        for topic in (cr.RETRY, cr.SCHEDULE, cr.DLQ):
            for m in self._messages(topic):
                real = m.properties.get(Property.REAL_TOPIC, "") if topic == cr.SCHEDULE else ""
                stores.append(((topic, m.queue_id, m.queue_offset), int(m.body[1:]), m.reconsume_times,
                               symbolic(cr.tracked(m.properties)), real))
        assert self.cluster is not None
        schedule = dict(self.cluster.broker(BROKER).schedule.offset_table)
        table = self.consumer.instance.runtime.submit(lambda: dict(self.consumer.offset_store.clone_offset_table()))
        spec_queues = {q for q, _ in self.state.committed}
        committed = {(mq.topic, mq.queue_id): o for mq, o in table.items() if (mq.topic, mq.queue_id) in spec_queues}
        received = {chain: [(key, times, topic, symbolic(props)) for key, times, topic, props in shown]
                    for chain, shown in self.received.items()}
        return {RECEIVED: received, STORES: sorted(stores), SCHEDULE_OFFSETS: schedule, COMMITTED: committed}
