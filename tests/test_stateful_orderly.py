"""Stateful: orderly consumption's limits (RETRY-21..RETRY-24) as the model of the reference implementation.

A simulated cluster (one broker, topic ``T`` with one or two queues) and one orderly clustering push consumer of group
``G`` whose ``maxReconsumeTimes`` (-1: Integer.MAX_VALUE, or 0..3), ``suspendCurrentQueueTimeMillis`` (1000, 10, 5, -5
or 40000) and ``consumeMessageBatchMaxSize`` (1..3) are drawn per program. Each message is sent to a chosen queue with
a plan: the listener's answers for its successive deliveries (SUCCESS; SUSPEND_CURRENT_QUEUE_A_MOMENT, an exception or
``null``, each with the context's suspendCurrentQueueTimeMillis left at -1 or set to 5 / 10 / 500 / 40000), then
SUCCESS, or (with a bounded maximum) SUSPEND for ever. A batch is answered by the first of its messages' answers that
is not SUCCESS. A send may arm a fault for the consumer's next dead-letter send to ``%RETRY%G`` (its client producer
tries 3 times): every attempt fails (the send fails); only the first fails (the retry carries no RECONSUME_TIME, so
the broker stores a retry copy, not a dead letter: RETRY-16); or the first attempt is stored and its answer lost (the
send times out and fails, the dead letter exists, and the two late retries are stored as retry copies). Copies that
come back through ``%RETRY%G`` are answered SUCCESS (so every dead-letter send belongs to a batch of ``T``). Time
passes in steps, or until idle.

What a user observes is checked against the spec's oracles as the events come:

- per queue strict order (OFF-15): a batch holds consecutive offsets starting at the queue's first unfinished one
  (neither succeeded nor dead-lettered), at most consumeMessageBatchMaxSize of them, delivered only once the batch
  before it is settled; a suspended batch comes back whole, first;
- reconsumeTimes (RETRY-21, ``orderly_suspend``): +1 for each message of a suspended batch except one whose
  dead-letter send worked; an exception or ``null`` is SUSPEND_CURRENT_QUEUE_A_MOMENT; the effective maximum is
  ``effective_max_reconsume_times(configured, orderly=True)`` (RETRY-22);
- the suspension (RETRY-24, ``suspend_millis``): the batch comes back no earlier than the suspension after the answer
  and no later than the suspension after the last dead-letter send ended (the simulated runtime has no slack here);
- dead letters (RETRY-23, ``client_retry_message(orderly=True)``; RETRY-11/RETRY-12, ``retry_topic_send``): a
  message at the maximum, and only such a message, is sent to ``%RETRY%G`` with RECONSUME_TIME n, MAX_RECONSUME_TIMES,
  RETRY_TOPIC, ORIGIN_MESSAGE_ID and DELAY 3 + n; the broker parks it for ``%DLQ%G`` (a retried attempt: for
  ``%RETRY%G``) at that level and moves it there when due (RETRY-3); nothing in ``%DLQ%G`` is delivered (RETRY-27);
- offsets (OFF-15, OFF-17): no offset the client writes passes an unfinished message; after settling every queue's
  committed offset on the broker is past every message, every message succeeded or sits in ``%DLQ%G`` (no loss), and
  ``%DLQ%G`` holds exactly the dead letters the sends stored.
"""

from __future__ import annotations

import enum
from collections import Counter, deque
from typing import Any

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from mutation import refimpl_mutant
from stateful_support import failure_text, hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, Message
from rocketspec.refimpl.client import consume_service
from rocketspec.refimpl.events import (
    ConsumeDeliver,
    ConsumeResult,
    Event,
    MessageStored,
    OffsetUpdate,
    SendAttempt,
    SendBack,
    SendResultEvent,
)
from rocketspec.refimpl.runtime import NotIdle
from rocketspec.spec import consume_retry as cr
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    DEFAULT_MAX_RECONSUME_TIMES,
    SCHEDULE_TICK_MS,
    SCHEDULE_TOPIC,
    VERSION_V4_9_8,
    ConsumeOrderlyStatus,
    Property,
    dlq_topic,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

GROUP = "G"
TOPIC = "T"
BROKER = "broker-a"
RETRY = retry_topic(GROUP)
DLQ = dlq_topic(GROUP)
MAX_MESSAGES = 5
SUCCESS = ConsumeOrderlyStatus.SUCCESS.name
SUSPEND = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT.name
CONTEXT_MS = (-1, 5, 10, 500, 40_000)
# A parked copy is re-put at the schedule service's next tick (the implementation runs on a 100 ms grid).
SCHEDULE_SLACK_MS = 2 * SCHEDULE_TICK_MS
# The suspension's timer re-submits the queue exactly when due and the consume request runs in the same millisecond
# (ConsumeExecutor.call_soon; a free consume thread; the broker lock is renewed every 20 s and trusted for 30 s, and
# no fault touches LOCK_BATCH_MQ): the implementation has no slack between the timer and the delivery.
SUSPEND_SLACK_MS = 0
# settle runs to idle in chunks (draining and checking between them), so a broken implementation that never
# settles fails on its first wrong step instead of spinning; a legal program is idle well within the bound.
SETTLE_CHUNK_MS = 30 * 60_000
SETTLE_CHUNKS = 12


class Kind(enum.Enum):
    """What the listener does with a batch."""

    SUCCESS = "success"
    SUSPEND = "suspend"  # returns SUSPEND_CURRENT_QUEUE_A_MOMENT
    RAISE = "raise"  # throws (ConsumeRequest.run: no status, taken as SUSPEND_CURRENT_QUEUE_A_MOMENT)
    NONE = "none"  # returns null (the same)


@attrs.frozen
class Answer:
    """One answer of the listener; ``context_ms``: the context's suspendCurrentQueueTimeMillis it sets (-1: left)."""

    kind: Kind
    context_ms: int = -1

    def __repr__(self) -> str:
        return self.kind.value if self.kind is Kind.SUCCESS else f"{self.kind.value}({self.context_ms})"


OK = Answer(Kind.SUCCESS)
ANSWERS = st.one_of(
    st.just(OK),
    st.builds(Answer, st.sampled_from([Kind.SUSPEND, Kind.SUSPEND, Kind.RAISE, Kind.NONE]),
              st.sampled_from(CONTEXT_MS)),
)
PLANS = st.lists(ANSWERS, max_size=4)


class Fault(enum.Enum):
    """What happens to the consumer's next dead-letter send (its client producer tries 3 times)."""

    FAIL = "every attempt fails"  # the send fails: +1, suspended again (RETRY-21)
    FIRST = "the first attempt fails"  # the retry stores a %RETRY%G copy with reconsumeTimes 0 (RETRY-16)
    LOST = "the stored attempt's answer is lost"  # the dead letter exists, the send fails (timeout)


@attrs.define(repr=False)
class Chain:
    """One message of the program: its plan and what became of it."""

    index: int
    queue_id: int
    plan: list[Answer]
    forever: bool
    msg_id: str = ""
    used: int = 0  # plan answers given
    successes: int = 0  # batches with this message committed after SUCCESS
    dead_letters: int = 0  # copies the broker moved into %DLQ%G
    send_times: int | None = None  # n of the dead-letter send under way (or last made)
    attempt: int = 0  # attempt number of that send's latest try
    log: list[str] = attrs.Factory(list)

    def next_answer(self) -> Answer:
        self.used += 1
        if self.used <= len(self.plan):
            return self.plan[self.used - 1]
        return Answer(Kind.SUSPEND) if self.forever else OK

    def __repr__(self) -> str:
        return f"<m{self.index}@q{self.queue_id} plan={self.plan}{'+suspend*' if self.forever else ''}: " \
               f"{' '.join(self.log)}>"


@attrs.define
class Entry:
    """A stored message of a consumed queue (``T`` or a ``%RETRY%G`` copy)."""

    chain: Chain
    times: int  # the reconsumeTimes its next delivery must show
    finished: bool = False


@attrs.define
class ListenerCall:
    """One call of the listener, as the listener saw it."""

    topic: str  # of the message queue (context)
    queue_id: int
    offsets: list[int]
    times: list[int]
    shown_topics: list[str]
    answer: Answer
    at_ms: int


@attrs.define
class Batch:
    """An answered batch whose outcome (commit or suspension) is not settled yet."""

    offsets: list[int]
    answer: Answer
    status: str
    answered_ms: int
    results_left: int
    sends: deque[Entry] = attrs.Factory(deque)  # entries at the maximum whose dead-letter send has not started
    sending: Entry | None = None
    send_ok: dict[int, bool] = attrs.Factory(dict)


@attrs.define
class Suspension:
    """A suspended batch: it comes back in ``[earliest_ms, latest_ms]`` (RETRY-24)."""

    offsets: list[int]
    millis: int
    earliest_ms: int
    latest_ms: int


@attrs.define
class Parked:
    """A dead-letter send's copy in SCHEDULE_TOPIC_XXXX, waiting for its real topic."""

    chain: Chain
    target: str
    level: int
    times: int
    stored_ms: int


@attrs.define
class QueueModel:
    """One consumed queue: its messages and the batch in hand."""

    topic: str
    queue_id: int
    entries: dict[int, Entry] = attrs.Factory(dict)
    delivering: list[int] = attrs.Factory(list)  # offsets delivered, listener result not seen yet
    batch: Batch | None = None
    suspended: Suspension | None = None
    resumed: Suspension | None = None  # the suspension the batch being delivered ends

    def first_unfinished(self) -> int:
        open_ = [o for o, e in self.entries.items() if not e.finished]
        if open_:
            return min(open_)
        return max(self.entries) + 1 if self.entries else 0

    def __repr__(self) -> str:
        return f"{self.topic}:{self.queue_id}"


class OrderlyMachine(RuleBasedStateMachine):
    """The orderly consumer's batches, suspensions and dead letters, checked against the RETRY-21..24 oracles."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.chains: list[Chain] = []
        self.queues: dict[tuple[str, int], QueueModel] = {}
        self.calls: deque[ListenerCall] = deque()
        self.parked: list[Parked] = []
        self.cursor = 0
        self.max_times = -1
        self.limit = 0
        self.consumer_ms = 0
        self.batch_max = 1
        self.queue_count = 1
        self.client_id = ""
        self.seen: Counter[str] = Counter()  # what the program exercised (for the scripted test)

    # ------------------------------------------------------------------------------------------------ set-up
    @initialize(seed=st.integers(0, 3), max_times=st.sampled_from([1, 0, 2, 3, -1]),
                consumer_ms=st.sampled_from([1_000, 10, 5, -5, 40_000]), batch=st.integers(1, 3),
                queues=st.integers(1, 2), first=PLANS, forever=st.booleans())
    def start(self, seed: int, max_times: int, consumer_ms: int, batch: int, queues: int,
              first: list[Answer] | None = None, forever: bool = False) -> None:
        """One broker, topic T, a producer and the orderly consumer of G (from the first offset); the first message
        (every program has one, whichever rules it draws)."""
        self.max_times = max_times
        self.limit = cr.effective_max_reconsume_times(max_times, orderly=True)
        self.consumer_ms = consumer_ms
        self.batch_max = batch
        self.queue_count = queues
        self.cluster = Cluster(brokers=1, clock="simulated", wire_codec="json", seed=seed, keep_events=True)
        self.cluster.create_topic(TOPIC, queues=queues)
        self.producer = self.cluster.producer("PG")
        self.consumer = self.cluster.push_consumer(
            GROUP, TOPIC, self._listener, orderly=True, max_reconsume_times=max_times,
            suspend_current_queue_time_ms=consumer_ms, consume_message_batch_max_size=batch,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        )
        self.client_id = self.consumer.instance.client_id
        self._drain()
        if first is not None:
            self.send(0, first, forever)

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def _listener(self, msgs: list[Any], context: Any) -> Any:
        """Answer as the plans say; record what was seen (no assertion here: the consumer would swallow it)."""
        assert self.cluster is not None
        mq = context.message_queue
        chains = [self.chains[int(m.body[1:])] for m in msgs]
        answer = OK
        if mq.topic == TOPIC:  # copies back from %RETRY%G are answered SUCCESS
            answers = [c.next_answer() for c in chains]
            answer = next((a for a in answers if a.kind is not Kind.SUCCESS), OK)
        self.calls.append(ListenerCall(mq.topic, mq.queue_id, [m.queue_offset for m in msgs],
                                       [m.reconsume_times for m in msgs], [m.topic for m in msgs], answer,
                                       self.cluster.now_ms()))
        if answer.kind is Kind.SUCCESS:
            return ConsumeOrderlyStatus.SUCCESS
        context.suspend_current_queue_time_ms = answer.context_ms
        if answer.kind is Kind.RAISE:
            raise RuntimeError("listener failed")
        if answer.kind is Kind.NONE:
            return None
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: len(self.chains) < MAX_MESSAGES)
    @rule(queue=st.integers(0, 1), plan=PLANS, forever=st.booleans(), fault=st.none() | st.sampled_from(Fault))
    def send(self, queue: int, plan: list[Answer], forever: bool, fault: Fault | None = None) -> None:
        """The producer sends a message to queue ``queue`` whose deliveries the listener answers as ``plan`` says,
        then SUCCESS, or SUSPEND for ever when the maximum is bounded (so every program ends); ``fault``: the
        consumer's next dead-letter send to %RETRY%G meets it."""
        assert self.cluster is not None
        if fault is Fault.FAIL:
            self.cluster.faults.fail(BROKER, "SEND_MESSAGE", code="SYSTEM_ERROR", times=3, client=self.client_id)
        elif fault is Fault.FIRST:
            self.cluster.faults.fail(BROKER, "SEND_MESSAGE", code="SYSTEM_ERROR", times=1, client=self.client_id)
        elif fault is Fault.LOST:
            self.cluster.faults.drop(BROKER, "SEND_MESSAGE", times=1, client=self.client_id, response=True)
        chain = Chain(len(self.chains), queue % self.queue_count, plan, forever and self.max_times != -1)
        self.chains.append(chain)
        result = self.producer.send(Message(TOPIC, f"m{chain.index}".encode()),
                                    queue=MessageQueue(TOPIC, BROKER, chain.queue_id))
        chain.msg_id = result.msg_id
        self._drain()

    @rule(ms=st.sampled_from([5, 10, 100, 1_000, 5_000, 30_000]))
    def advance(self, ms: int) -> None:
        """Simulated time passes: deliveries, suspensions ending, dead-letter sends, parked copies coming due."""
        assert self.cluster is not None
        self.cluster.advance(ms)
        self._drain()

    @rule()
    def settle(self) -> None:
        """Run until idle; then every message is finished and none is lost (RETRY-21, RETRY-23, OFF-15, OFF-17)."""
        assert self.cluster is not None
        for _ in range(SETTLE_CHUNKS):
            try:
                self.cluster.run_until_idle(timeout_ms=SETTLE_CHUNK_MS)
            except NotIdle:
                self._drain()
                continue
            break
        else:
            raise AssertionError(f"RETRY-21/RETRY-22: not idle after {SETTLE_CHUNKS * SETTLE_CHUNK_MS} ms: "
                                 f"{self.chains!r}")
        self._drain()
        for q in self.queues.values():
            assert q.batch is None and not q.delivering and q.suspended is None, (
                f"RETRY-21: {q!r} idle with a batch in hand ({q.batch!r}, {q.delivering}, {q.suspended!r}) "
                f"(a dead-letter send never made?)")
            for offset, entry in sorted(q.entries.items()):
                assert entry.finished, f"RETRY-21/OFF-17: {q!r}@{offset} {entry.chain!r} unfinished once idle"
        assert not self.parked, f"RETRY-3: parked copies never moved: {self.parked!r}"
        for chain in self.chains:
            assert chain.successes or chain.dead_letters, (
                f"OFF-17/RETRY-23: {chain!r} neither consumed nor in %DLQ%G once idle: lost")
        dead = Counter(m.msg_id for m in self.cluster.messages(DLQ))
        expected = Counter({c.msg_id: c.dead_letters for c in self.chains if c.dead_letters})
        assert dead == expected, f"RETRY-23/RETRY-12: %DLQ%G holds {dict(dead)}, the dead letters sent {expected}"
        for topic in (TOPIC, RETRY):
            committed = self.cluster.committed_offsets(GROUP, topic)
            for (t, qid), q in self.queues.items():
                if t != topic:
                    continue
                got = committed.get(MessageQueue(topic, BROKER, qid), 0)
                assert got == q.first_unfinished() == len(q.entries), (
                    f"OFF-15/OFF-17: {q!r} committed {got} on the broker once idle, {len(q.entries)} messages, all "
                    f"finished")

    # ------------------------------------------------------------------------------------------------ events
    def _drain(self) -> None:
        """Check every new implementation event against the spec."""
        assert self.cluster is not None
        events = self.cluster.events.events
        while self.cursor < len(events):
            event = events[self.cursor]
            self.cursor += 1
            self._observe(event)

    def _observe(self, event: Event) -> None:
        if isinstance(event, MessageStored):
            self._on_stored(event)
        elif isinstance(event, ConsumeDeliver) and event.group == GROUP:
            self._on_deliver(event)
        elif isinstance(event, ConsumeResult) and event.group == GROUP:
            self._on_result(event)
        elif isinstance(event, OffsetUpdate) and event.group == GROUP and event.node == self.client_id:
            q = self._queue(event.topic, event.queue_id)
            assert event.offset <= q.first_unfinished(), (
                f"OFF-15/OFF-17: offset {event.offset} written for {q!r} past the unfinished offset "
                f"{q.first_unfinished()} ({q.entries.get(q.first_unfinished())!r})")
        elif event.node == self.client_id and isinstance(event, SendAttempt) and event.topic == RETRY:
            assert event.group == CLIENT_INNER_PRODUCER_GROUP, f"RETRY-23: dead letter sent by {event.group}"
            self._on_send_attempt(event)
        elif event.node == self.client_id and isinstance(event, SendResultEvent) and event.topic == RETRY:
            if event.final:
                self._on_send_done(event)
        elif isinstance(event, SendBack) and event.node == self.client_id:
            self._on_send_back(event)

    def _queue(self, topic: str, queue_id: int) -> QueueModel:
        key = (topic, queue_id)
        if key not in self.queues:
            self.queues[key] = QueueModel(topic, queue_id)
        return self.queues[key]

    def _chain(self, msg_id: str) -> Chain | None:
        return next((c for c in self.chains if c.msg_id == msg_id), None)

    def _look(self, stored: MessageStored) -> Any:
        assert self.cluster is not None
        msg = self.cluster.broker(BROKER).store.look_message(stored.commit_log_offset)
        assert msg is not None, f"stored copy {stored!r} not found in the commit log"
        return msg

    def _on_stored(self, event: MessageStored) -> None:
        chain = self._chain(event.msg_id)
        if chain is None:
            return
        if event.topic == TOPIC:
            # Drained after the send returned, so the chain knows its msg id.
            q = self._queue(TOPIC, event.queue_id)
            assert event.queue_id == chain.queue_id and event.offset not in q.entries, f"{chain!r} stored as {event!r}"
            q.entries[event.offset] = Entry(chain, 0)
        elif event.topic == SCHEDULE_TOPIC:
            self._on_parked(chain, event)
        elif event.topic in (DLQ, RETRY):
            self._on_due(chain, event)
        else:
            raise AssertionError(f"RETRY-23: {chain!r} stored in {event.topic}: {event!r}")

    def _on_deliver(self, event: ConsumeDeliver) -> None:
        assert event.topic != DLQ, f"RETRY-27: delivered from %DLQ%G: {event!r}"
        q = self._queue(event.topic, event.queue_id)
        if not q.delivering:
            due = [f"m{e.chain.index} (reconsumeTimes {e.times}, max {self.limit})" for e in q.batch.sends] \
                if q.batch is not None else []
            assert not due, f"RETRY-21/RETRY-22: {q!r} delivered again, no dead-letter send was made for {due}"
            assert q.batch is None, (
                f"OFF-15/RETRY-21: {q!r}@{event.offset} delivered while the batch {q.batch!r} is not settled")
            if q.suspended is not None:
                s = q.suspended
                assert event.ts_ms >= s.earliest_ms, (
                    f"RETRY-24: {q!r} suspended for {s.millis} ms, delivered again "
                    f"{s.millis - (s.earliest_ms - event.ts_ms)} ms after the answer")
                assert event.ts_ms <= s.latest_ms, (
                    f"RETRY-24: {q!r} suspended for {s.millis} ms, delivered again only "
                    f"{event.ts_ms - s.latest_ms} ms after the suspension ended")
                q.resumed, q.suspended = s, None
        expected = q.first_unfinished() + len(q.delivering)
        assert event.offset == expected, (
            f"OFF-15: {q!r} delivered offset {event.offset}, the next in order is {expected} "
            f"(batch so far {q.delivering})")
        entry = q.entries.get(event.offset)
        assert entry is not None and entry.chain.msg_id == event.msg_id, f"delivered an unknown message: {event!r}"
        assert event.reconsume_times == entry.times, (
            f"RETRY-21: {q!r}@{event.offset} delivered with reconsumeTimes {event.reconsume_times}, the spec says "
            f"{entry.times}: {entry.chain!r}")
        q.delivering.append(event.offset)
        assert len(q.delivering) <= self.batch_max, (
            f"OFF-15: a batch of {len(q.delivering)} > consumeMessageBatchMaxSize {self.batch_max}")
        entry.chain.log.append(f"d{event.reconsume_times}@{event.ts_ms % 10**7}")

    def _on_result(self, event: ConsumeResult) -> None:
        q = self._queue(event.topic, event.queue_id)
        batch = q.batch
        if batch is not None and batch.results_left:
            i = len(batch.offsets) - batch.results_left
            assert event.offset == batch.offsets[i] and event.status == batch.status, (
                f"RETRY-21: result {event.offset} {event.status} inside batch {batch!r}")
            batch.results_left -= 1
            if not batch.results_left:
                self._answered(q, batch)
            return
        offsets, q.delivering = q.delivering, []
        assert offsets and event.offset == offsets[0], f"a result without its delivery: {event!r} ({offsets})"
        assert self.calls, f"a result without a listener call: {event!r}"
        call = self.calls.popleft()
        entries = [q.entries[o] for o in offsets]
        assert (call.topic, call.queue_id, call.offsets) == (q.topic, q.queue_id, offsets), (
            f"the listener saw {call!r}, the events a batch {offsets} of {q!r}")
        assert call.times == [e.times for e in entries], f"RETRY-21: the listener saw reconsumeTimes {call.times}"
        assert set(call.shown_topics) == {TOPIC}, f"RETRY-19: the listener saw topics {call.shown_topics}"
        if q.resumed is not None:
            assert offsets[:len(q.resumed.offsets)] == q.resumed.offsets, (
                f"RETRY-21/OFF-15: {q!r} suspended {q.resumed.offsets}, then delivered {offsets}")
            q.resumed = None
        status = SUCCESS if call.answer.kind is Kind.SUCCESS else SUSPEND
        assert event.status == status, (
            f"RETRY-21: the listener's {call.answer!r} recorded as {event.status}, the spec says {status}")
        if len(offsets) > 1:
            self.seen["batch>1"] += 1
        q.batch = Batch(offsets, call.answer, status, call.at_ms, len(offsets) - 1)
        if not q.batch.results_left:
            self._answered(q, q.batch)

    def _answered(self, q: QueueModel, batch: Batch) -> None:
        """Every result of the batch is in: SUCCESS settles it; a suspension first sends the dead letters."""
        for offset in batch.offsets:
            q.entries[offset].chain.log.append(batch.status[:4])
        if batch.status == SUCCESS:
            self._settle_batch(q, batch.answered_ms)
            return
        batch.sends.extend(q.entries[o] for o in batch.offsets if q.entries[o].times >= self.limit)
        if not batch.sends:
            self._settle_batch(q, batch.answered_ms)

    def _on_send_attempt(self, event: SendAttempt) -> None:
        """One attempt of a dead-letter send: only for a message at the maximum, in batch order (RETRY-21)."""
        chain = self._chain(event.msg_id)
        assert chain is not None, f"a %RETRY%G send of an unknown message: {event!r}"
        q = self._queue(TOPIC, chain.queue_id)
        batch = q.batch
        if event.attempt == 1:
            assert batch is not None and not batch.results_left and batch.status == SUSPEND, (
                f"RETRY-21: {chain!r} sent to {RETRY} outside a suspended batch ({batch!r})")
            assert batch.sending is None and batch.sends and batch.sends[0].chain is chain, (
                f"RETRY-21/RETRY-22: {chain!r} (reconsumeTimes "
                f"{next((e.times for e in q.entries.values() if e.chain is chain), None)}, max {self.limit}) sent "
                f"to {RETRY}; the batch's sends due: {[e.chain.index for e in batch.sends]}")
            batch.sending = batch.sends.popleft()
            chain.send_times = batch.sending.times
            chain.log.append(f"send{chain.send_times}")
        else:
            assert batch is not None and batch.sending is not None and batch.sending.chain is chain, (
                f"RETRY-21: attempt {event.attempt} of a send of {chain!r} not under way")
        chain.attempt = event.attempt

    def _on_send_done(self, event: SendResultEvent) -> None:
        chain = self._chain(event.msg_id)
        assert chain is not None
        q = self._queue(TOPIC, chain.queue_id)
        batch = q.batch
        assert batch is not None and batch.sending is not None and batch.sending.chain is chain, (
            f"RETRY-21: a dead-letter send of {chain!r} ended outside its batch: {event!r}")
        ok = event.status == "SEND_OK"
        offset = next(o for o in batch.offsets if q.entries[o] is batch.sending)
        batch.send_ok[offset] = ok
        batch.sending = None
        chain.log.append("sent" if ok else "send-failed")
        self.seen["send ok" if ok else "send failed"] += 1
        if not batch.sends:
            self._settle_batch(q, event.ts_ms)

    def _settle_batch(self, q: QueueModel, check_end_ms: int) -> None:
        """The batch's outcome as ``orderly_suspend`` (RETRY-21) and ``suspend_millis`` (RETRY-24) say."""
        batch = q.batch
        assert batch is not None
        q.batch = None
        entries = [q.entries[o] for o in batch.offsets]
        if batch.status == SUCCESS:
            for entry in entries:
                entry.finished = True
                entry.chain.successes += 1
            return
        outcome = cr.orderly_suspend(tuple(e.times for e in entries), self.limit,
                                     tuple(batch.send_ok.get(o, True) for o in batch.offsets))
        if not outcome.suspend:
            for entry in entries:
                entry.finished = True
            self.seen["dead-lettered batch"] += 1
            return
        for entry, times in zip(entries, outcome.reconsume_times, strict=True):
            entry.times = times
        millis = cr.suspend_millis(batch.answer.context_ms, self.consumer_ms)
        asked = self.consumer_ms if batch.answer.context_ms == -1 else batch.answer.context_ms
        if millis != asked:
            self.seen["clamped"] += 1
        self.seen[f"suspended {millis}"] += 1
        q.suspended = Suspension(list(batch.offsets), millis, batch.answered_ms + millis,
                                 check_end_ms + millis + SUSPEND_SLACK_MS)

    def _expected_send(self, chain: Chain, retried: bool) -> tuple[cr.ClientRetryMessage, cr.SendBackResult]:
        """The dead-letter message (RETRY-23) and where the broker stores it (RETRY-11, RETRY-12)."""
        assert chain.send_times is not None
        message = cr.client_retry_message(TOPIC, chain.send_times, self.limit, GROUP, message_id=chain.msg_id,
                                          orderly=True, retried=retried)
        stored = cr.retry_topic_send(message.header_reconsume_times, message.delay_level,
                                     message.header_max_reconsume_times, VERSION_V4_9_8, GROUP,
                                     group_retry_max_times=DEFAULT_MAX_RECONSUME_TIMES)
        return message, stored

    def _on_send_back(self, event: SendBack) -> None:
        """The client's report of a dead-letter send that worked: what its first attempt asked for (RETRY-23)."""
        chain = self._chain(event.msg_id)
        assert chain is not None and event.via == "client", f"RETRY-21: an orderly send back {event!r}"
        message, asked = self._expected_send(chain, retried=False)
        got = (event.reconsume_times, event.delay_level, event.max_reconsume_times, event.target)
        want = (chain.send_times, message.delay_level, self.limit, asked.topic)
        assert got == want, f"RETRY-23: the client reports (times, level, max, target) {got}, expected {want}"

    def _on_parked(self, chain: Chain, event: MessageStored) -> None:
        """A dead-letter send stored: the copy is ``client_retry_message(orderly=True)`` as the broker stores it."""
        retried = chain.attempt > 1
        message, expected = self._expected_send(chain, retried)
        level = expected.delay_level
        assert event.queue_id == cr.schedule_queue_id(level), (
            f"RETRY-23/RETRY-2: the dead letter of {chain!r} (reconsumeTimes {chain.send_times}) parked at level "
            f"{event.queue_id + 1}, expected DELAY {level}")
        assert event.reconsume_times == expected.reconsume_times, (
            f"RETRY-23/RETRY-11: the dead letter of {chain!r} stored with reconsumeTimes {event.reconsume_times}, "
            f"expected {expected.reconsume_times} (retried attempt: {retried})")
        props = self._look(event).properties
        sent = dict(message.properties)
        for name in (Property.RETRY_TOPIC, Property.RECONSUME_TIME, Property.MAX_RECONSUME_TIMES,
                     Property.ORIGIN_MESSAGE_ID, Property.DELAY_TIME_LEVEL):
            assert props.get(name) == sent.get(name), (
                f"RETRY-23: the dead letter of {chain!r} has {name} = {props.get(name)}, sent {sent.get(name)}")
        assert props.get(Property.REAL_TOPIC) == expected.topic, (
            f"RETRY-12/RETRY-23: the dead letter of {chain!r} parked for {props.get(Property.REAL_TOPIC)}, "
            f"expected {expected.topic} (retried attempt: {retried})")
        self.seen["retried copy" if retried else "dead letter"] += 1
        self.parked.append(Parked(chain, expected.topic, level, expected.reconsume_times, event.ts_ms))

    def _on_due(self, chain: Chain, event: MessageStored) -> None:
        """The schedule service moved a parked copy to %DLQ%G or %RETRY%G (RETRY-3, RETRY-12)."""
        fits = [p for p in self.parked if p.chain is chain and p.target == event.topic
                and p.times == event.reconsume_times]
        assert fits, f"RETRY-12: a copy of {chain!r} in {event.topic} that no send parked: {event!r}"
        parked = min(fits, key=lambda p: p.stored_ms + cr.delay_millis(p.level))
        due = parked.stored_ms + cr.delay_millis(parked.level)
        assert cr.schedule_due(parked.stored_ms, parked.level, event.ts_ms), (
            f"RETRY-3: a level-{parked.level} copy stored at {parked.stored_ms} moved {due - event.ts_ms} ms early")
        assert event.ts_ms <= due + SCHEDULE_SLACK_MS, f"RETRY-3: copy due at {due} moved only at {event.ts_ms}"
        self.parked.remove(parked)
        if event.topic == DLQ:
            chain.dead_letters += 1
            chain.log.append("dlq")
        else:
            self._queue(RETRY, event.queue_id).entries[event.offset] = Entry(chain, event.reconsume_times)
            chain.log.append("retry-copy")


OrderlyMachine.TestCase.settings = stateful_settings(40, 30)
test_orderly_machine = OrderlyMachine.TestCase


# ---------------------------------------------------------------------------------------------------- a program


def _delivery_times(m: OrderlyMachine, chain: Chain) -> list[tuple[int, int]]:
    """(simulated ms, reconsumeTimes) of each delivery of ``chain``'s message."""
    assert m.cluster is not None
    return [(e.ts_ms, e.reconsume_times) for e in m.cluster.events_of(ConsumeDeliver) if e.msg_id == chain.msg_id]


def test_orderly_program_covers_clamp_dead_letter_failed_send_and_batches() -> None:
    """A fixed program (max 2, the consumer's suspension 40000 ms, batches of 2, two queues), each step checked by the
    machine, and then what it must have exercised: the consumer's 40000 ms clamped to 30000 and a context's 5 ms to
    10 (RETRY-24); a batch of 2 suspended and delivered again whole with +1 (RETRY-21); an exception and a null
    answer taken as a suspension; a dead letter at the maximum (RETRY-22, RETRY-23) whose first send fails on every
    attempt (+1, suspended again: RETRY-21); a dead-letter send whose first attempt fails, so the producer's retry
    stores a %RETRY%G copy, consumed again (RETRY-16); the committed offsets after."""
    m = OrderlyMachine()
    try:
        m.start(seed=0, max_times=2, consumer_ms=40_000, batch=2, queues=2)
        # q0: the batch (m0, m1) is suspended with the consumer's time (40000 -> 30000), delivered again whole, then
        # m1 throws with the context at 5 ms (-> 10), and the third delivery succeeds.
        m.send(queue=0, plan=[Answer(Kind.SUSPEND)], forever=False)
        m.send(queue=0, plan=[OK, Answer(Kind.RAISE, 5)], forever=False)
        m.advance(30_000)
        # q1: m2 returns null (10 ms), then suspends for ever: at reconsumeTimes 2 it is dead-lettered, but that
        # send fails on all three attempts, so it comes back with 3 and is dead-lettered with 3.
        m.send(queue=1, plan=[Answer(Kind.NONE, 10)], forever=True, fault=Fault.FAIL)
        m.settle()
        # q1 again: m3 suspends for ever with the context at 40000; its dead-letter send's first attempt fails.
        m.send(queue=1, plan=[Answer(Kind.SUSPEND, 40_000)], forever=True, fault=Fault.FIRST)
        m.settle()
        m0, m1, m2, m3 = m.chains
        (t0, _), (t1, _), (t2, _) = _delivery_times(m, m0)
        assert [n for _, n in _delivery_times(m, m0)] == [n for _, n in _delivery_times(m, m1)] == [0, 1, 2]
        assert (t1 - t0, t2 - t1) == (30_000, 10)
        assert m0.successes == m1.successes == 1 and not m0.dead_letters and not m1.dead_letters
        assert [n for _, n in _delivery_times(m, m2)] == [0, 1, 2, 3]
        assert m2.dead_letters == 1 and not m2.successes
        assert [n for _, n in _delivery_times(m, m3)] == [0, 1, 2, 0]  # the last from the %RETRY%G copy
        assert m3.successes == 1 and not m3.dead_letters
        assert m.seen["batch>1"] == 3 and m.seen["clamped"] == 6 and m.seen["suspended 10"] == 2
        assert (m.seen["send failed"], m.seen["send ok"], m.seen["dead letter"], m.seen["retried copy"]) == (1, 2, 1, 1)
        assert m.cluster is not None
        [dead] = m.cluster.messages(DLQ)
        assert (dead.msg_id, dead.reconsume_times, dead.properties[Property.RECONSUME_TIME]) == (m2.msg_id, 3, "3")
        committed = {**m.cluster.committed_offsets(GROUP, TOPIC), **m.cluster.committed_offsets(GROUP, RETRY)}
        assert committed == {MessageQueue(TOPIC, BROKER, 0): 2, MessageQueue(TOPIC, BROKER, 1): 2,
                             MessageQueue(RETRY, BROKER, 0): 1}
    finally:
        m.teardown()


# ---------------------------------------------------------------------------------------------------- mutants
# Each breaks one rule of the orderly consume service; the machine must find a program that shows it. The budgets
# leave room: over random seeds each mutant was found within about half of its examples.


MUTANTS = [
    pytest.param("delay = min(max(delay, 10), 30_000)", "delay = max(delay, 10)", 100, 20, "RETRY-24",
                 id="suspension-not-cut-to-30-s"),
    pytest.param("            suspend = True\n            updated.append(attrs.evolve(msg, reconsume_times="
                 "msg.reconsume_times + 1))\n", "            suspend = True\n            updated.append(msg)\n",
                 40, 15, "RETRY-21", id="suspended-message-not-counted"),
    pytest.param("self.consumer.send_orderly_message_back(msg, limit)",
                 "self.consumer.send_orderly_message_back(attrs.evolve(msg, reconsume_times=msg.reconsume_times + 1), "
                 "limit)", 60, 20, "RETRY-23", id="dead-letter-sent-with-n-plus-1"),
    pytest.param("context.suspend_current_queue_time_ms)\n                result.set_result(False)",
                 "context.suspend_current_queue_time_ms)\n                result.set_result(True)", 40, 15,
                 "RETRY-24", id="queue-not-blocked-while-suspended"),
    pytest.param("                        suspend = True\n                        updated.append(attrs.evolve("
                 "msg, reconsume_times=msg.reconsume_times + 1))",
                 "                        suspend = True\n                        updated.append(msg)", 100, 20,
                 "RETRY-21", id="failed-dead-letter-send-not-counted"),
]


@pytest.mark.parametrize(("old", "new", "examples", "steps", "clause"), MUTANTS)
def test_mutant_is_caught(old: str, new: str, examples: int, steps: int, clause: str) -> None:
    """One rule of ConsumeMessageOrderlyService broken (RETRY-21: counting a suspension, a failed dead-letter send;
    RETRY-23: the dead letter's count; RETRY-24: the 30 s cut, the queue held while suspended): the machine finds a
    program that shows it, naming the clause."""
    with refimpl_mutant(consume_service, old, new):
        failure = hypothesis_finds_failure(OrderlyMachine, examples, steps)
    assert clause in failure_text(failure)
