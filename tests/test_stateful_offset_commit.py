"""Stateful test: the offset_commit spec (OFF-*) is the model, the reference implementation's push consumers and the
broker's ConsumerOffsetManager the system.

A simulated ``Cluster`` (one broker, synchronous flush), a topic of 1-2 queues with a few messages, a producer and
two push consumers of one clustering group (one after a crash or shutdown, two again when one starts). Every consume
request stops at the listener until a rule finishes it (the runtime's ``run_user`` is gated), so consume threads
finish in any order, as in the spec. Rules send messages, finish a consume request (CONSUME_SUCCESS or
RECONSUME_LATER), crash, shut down or start a consumer (queues move between consumers), lose UPDATE_CONSUMER_OFFSET
or PULL_MESSAGE requests or make them slow (so that older commits arrive after newer ones), restart the broker
(cleanly or by a crash) and let time pass (every step takes a second; persistence every 5 s, rebalance every 20 s,
delayed retries). A clean shutdown must leave the held queues' memory entries on the broker (OFF-11, OFF-12).

The spec's state machine follows one queue at the spec's granularity; the implementation is checked against its
oracles and invariants instead. Each observed transition: an ``increaseOnly`` update only raises the memory entry
(OFF-5); the only other update, at assignment, caches what QUERY_CONSUMER_OFFSET answered (OFF-6, OFF-7) and the
first pull starts there (OFF-13, OFF-19); every pull carries the commit ``pull_commit_request`` gives for the memory
entry (OFF-9); every broker commit carries a value a memory entry held (OFF-9, OFF-11) and overwrites (OFF-8); a
broker restarted cleanly reads back its table, after a crash the table of its last persist (every 5 s after 10 s).
After every step, per queue, the abstraction of the implementation (broker offset, each consumer's memory entry and
ProcessQueue, the consume requests waiting, the messages handled) must satisfy the spec's invariants
``at_least_once`` (OFF-17), ``memory_within_process_queue`` (OFF-18, OFF-3, OFF-14), ``no_message_lost`` (OFF-19,
OFF-1, OFF-4) and, while a ProcessQueue stays, ``memory_only_rises`` (OFF-5, OFF-4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mutation import refimpl_mutant
from stateful_support import failure_text, hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, ConsumeStatus, Message
from rocketspec.refimpl.broker import offsets as broker_offsets_module
from rocketspec.refimpl.client import consume_service as consume_service_module
from rocketspec.refimpl.client import offset_store as offset_store_module
from rocketspec.refimpl.client import process_queue as process_queue_module
from rocketspec.refimpl.client import push_consumer as push_consumer_module
from rocketspec.refimpl.events import (
    ConsumeDeliver,
    Event,
    OffsetCommit,
    OffsetUpdate,
    PullRequestEvent,
    SendBack,
)
from rocketspec.spec import offset_commit as spec
from rocketspec.spec.protocol import (
    BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS,
    BROKER_REGISTER_INITIAL_DELAY_MS,
    PULL_FLAG_COMMIT_OFFSET,
    MessageModel,
    RequestCode,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

TOPIC = "TopicTest"
GROUP = "CG"
BROKER = "broker-a"
RETRY = retry_topic(GROUP)
# The broker persists its offset table every 5 s, the first time 10 s after it starts (BrokerController).
PERSIST_FIRST_MS = BROKER_REGISTER_INITIAL_DELAY_MS
WAITS = (5_000, 20_000, 60_000)
# What every other step takes: enough for requests to complete, a fifth of the persist interval.
STEP_MS = 1_000


@attrs.frozen(kw_only=True)
class OffsetRemoved(Event):
    """Test-only event: a consumer's offset store forgot a queue's memory entry (removeOffset; the implementation
    emits nothing for it, so the machine wraps ``remove_offset`` to keep its replay of memory entries in order)."""

    kind: ClassVar[str] = "test.offset.removed"
    topic: str
    queue_id: int


@attrs.define(eq=False)
class Waiting:
    """A consume request stopped at the listener: its consumer, queue, messages and ProcessQueue."""

    ident: int
    node: str
    mq: MessageQueue
    offsets: tuple[int, ...]
    msg_ids: tuple[str, ...] = attrs.field(repr=False)
    pq: Any = attrs.field(repr=False)
    fn: Callable[[], Any] = attrs.field(repr=False)
    on_done: Callable[[Any, BaseException | None], None] = attrs.field(repr=False)


@attrs.frozen
class SentBack:
    """A message finished with RECONSUME_LATER whose CONSUMER_SEND_MSG_BACK outcome is not known yet."""

    mq: MessageQueue
    offset: int
    pq: Any = attrs.field(eq=False, repr=False)


def _mq(event: Any) -> MessageQueue:
    return MessageQueue(event.topic, event.broker if hasattr(event, "broker") else BROKER, event.queue_id)


def _first_unhandled(done: set[int]) -> int:
    offset = 0
    while offset in done:
        offset += 1
    return offset


class OffsetCommitMachine(RuleBasedStateMachine):
    """Push consumers of one group and the broker's offset table, checked against OFF-1..19."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None

    # ------------------------------------------------------------------------------------------------ setup
    @initialize(queues=st.integers(1, 2), messages=st.integers(0, 4), pull_batch=st.integers(1, 3))
    def setup(self, queues: int, messages: int, pull_batch: int) -> None:
        """``messages`` per queue are stored before the consumers start, as in the spec's model; two consumers
        share the queues (the group's retry queue included) from the start."""
        self.cluster = cluster = Cluster(
            brokers=1, clock="simulated", wire_codec="json", seed=5, flush="sync", keep_events=True)
        self.broker_started = cluster.now_ms()
        cluster.create_topic(TOPIC, queues=queues)
        self.queues = queues
        self.commits_delayed = False
        self.pulls_delayed = False
        self.pull_batch = pull_batch
        self.spec_config = spec.Config(MessageModel.CLUSTERING, False, messages=0, pull_batch=pull_batch)
        self.producer = cluster.producer("PG")
        self.consumers: dict[str, Any] = {}
        self.waiting: list[Waiting] = []
        self.next_ident = 0
        self.answer = ConsumeStatus.CONSUME_SUCCESS
        self.handled: dict[MessageQueue, set[int]] = {}
        self.sent_back: dict[tuple[str, str], SentBack] = {}
        self.local_retry: dict[tuple[str, MessageQueue, int], Any] = {}
        self.memory: dict[tuple[str, MessageQueue], int] = {}
        self.memory_values: dict[MessageQueue, set[int]] = {}
        self.first_pull: dict[tuple[str, MessageQueue], int] = {}
        self.observed: dict[tuple[str, MessageQueue], tuple[Any, int]] = {}
        self.late_written: list[Any] = []  # ProcessQueues whose memory entry a late write of OFF-12 raised
        self.broker_table: dict[MessageQueue, int] = {}
        self.history: list[tuple[int, dict[MessageQueue, int]]] = [(self.broker_started, {})]
        self.cursor = len(cluster.events.events)
        self.gate_cursor = self.cursor
        cluster.runtime.run_user = self._gate  # type: ignore[method-assign]
        for queue in range(queues):
            for _ in range(messages):
                self.producer.send(Message(TOPIC, b"body"), queue=MessageQueue(TOPIC, BROKER, queue))
        self._start_consumer()
        self._start_consumer()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def _listener(self, msgs: list[Any]) -> ConsumeStatus:
        return self.answer

    def _start_consumer(self) -> None:
        consumer = self.cluster.push_consumer(
            GROUP, TOPIC, self._listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            pull_batch_size=self.pull_batch, consume_thread_max=1000)
        node = consumer.instance.client_id
        self.consumers[node] = consumer
        for waiting in self.waiting:
            if waiting.node == node and waiting.pq is None:
                waiting.pq = consumer.rebalance.process_queue_table.get(waiting.mq)
        store = consumer.offset_store
        forget = store.remove_offset
        events = self.cluster.events

        def remove_offset(mq: MessageQueue) -> None:
            forget(mq)
            events.emit(OffsetRemoved(node=node, topic=mq.topic, queue_id=mq.queue_id))

        store.remove_offset = remove_offset
        answer_pull = consumer._on_pull_result

        def on_pull_result(request: Any, result: Any) -> None:
            # A pull of a dropped ProcessQueue answered NO_NEW_MSG still writes its offset (correctTagsOffset, no
            # isDropped check): a late write of OFF-12 into the entry of the queue's current ProcessQueue.
            before = store.table.get(request.mq)
            answer_pull(request, result)
            current = consumer.rebalance.process_queue_table.get(request.mq)
            if request.pq.dropped and current is not None and store.table.get(request.mq) != before:
                self.late_written.append(current)

        consumer._on_pull_result = on_pull_result
        self._settle()

    def _gate(self, fn: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> None:
        """``runtime.run_user``: a consume request waits here for a rule (its ConsumeDeliver events were just
        emitted, right before the listener call)."""
        events = self.cluster.events.events
        delivered = [e for e in events[self.gate_cursor:] if isinstance(e, ConsumeDeliver)]
        self.gate_cursor = len(events)
        if not delivered:
            fn_value = fn()
            on_done(fn_value, None)
            return
        node, mq = delivered[0].node, _mq(delivered[0])
        consumer = self.consumers.get(node)
        # A consumer still starting is not known yet: _start_consumer fills its ProcessQueue in.
        pq = consumer.rebalance.process_queue_table.get(mq) if consumer is not None else None
        offsets = tuple(e.offset for e in delivered)
        for offset in offsets:
            self.local_retry.pop((node, mq, offset), None)
        self.waiting.append(Waiting(self.next_ident, node, mq, offsets, tuple(e.msg_id for e in delivered), pq,
                                    fn, on_done))
        self.next_ident += 1

    def _settle(self, ms: int = STEP_MS) -> None:
        """Let ``ms`` pass (every step takes a little time, so persists and retries happen along the way)."""
        self.cluster.advance(ms)
        self._drain()

    def _alive(self) -> list[Any]:
        return [c for node, c in sorted(self.consumers.items()) if c.alive()]

    # ------------------------------------------------------------------------------------------------ rules
    @rule(queue=st.integers(0, 1))
    def message_sent(self, queue: int) -> None:
        """The producer stores a message in a queue; a held pull wakes up (OFF-1)."""
        mq = MessageQueue(TOPIC, BROKER, queue % self.queues)
        self.producer.send(Message(TOPIC, b"body"), queue=mq)
        self._settle()

    @precondition(lambda self: self.cluster is not None and self.waiting)
    @rule()
    def consume_first(self) -> None:
        """The oldest waiting consume request's listener returns CONSUME_SUCCESS (OFF-4)."""
        self._consume(0, True)

    @precondition(lambda self: self.cluster is not None and self.waiting)
    @rule(index=st.integers(0, 7))
    def consume_any(self, index: int) -> None:
        """Any waiting listener returns CONSUME_SUCCESS: consume threads finish in any order; the result is written
        unless its ProcessQueue was dropped (OFF-3, OFF-4, OFF-12)."""
        self._consume(index, True)

    @precondition(lambda self: self.cluster is not None and self.waiting)
    @rule(index=st.integers(0, 7))
    def consume_fails(self, index: int) -> None:
        """A listener returns RECONSUME_LATER: the message goes back to the broker, then leaves the ProcessQueue
        (OFF-4)."""
        self._consume(index, False)

    def _consume(self, index: int, success: bool) -> None:
        waiting = self.waiting.pop(index % len(self.waiting))
        self.answer = ConsumeStatus.CONSUME_SUCCESS if success else ConsumeStatus.RECONSUME_LATER
        value = waiting.fn()
        if success:
            self.handled.setdefault(waiting.mq, set()).update(waiting.offsets)
        else:
            for offset, msg_id in zip(waiting.offsets, waiting.msg_ids, strict=True):
                self.sent_back[(waiting.node, msg_id)] = SentBack(waiting.mq, offset, waiting.pq)
        waiting.on_done(value, None)
        self._settle()

    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Persistence (OFF-11), rebalance, long polling, delayed retries."""
        self._settle(ms)

    @rule(times=st.integers(1, 3))
    def offset_commits_lost(self, times: int) -> None:
        """The next oneway UPDATE_CONSUMER_OFFSET requests never reach the broker (OFF-11)."""
        self.cluster.faults.drop(BROKER, "UPDATE_CONSUMER_OFFSET", times=times)

    @precondition(lambda self: self.cluster is not None and not self.commits_delayed)
    @rule()
    def offset_commits_delayed(self) -> None:
        """From now on every UPDATE_CONSUMER_OFFSET takes 7 s, so commits carried by later pulls overtake it and the
        broker overwrites them with the older, lower value (OFF-8)."""
        self.commits_delayed = True
        self.cluster.faults.delay(BROKER, "UPDATE_CONSUMER_OFFSET", ms=7_000)

    @precondition(lambda self: self.cluster is not None and not self.pulls_delayed)
    @rule()
    def pulls_slow(self) -> None:
        """From now on every PULL_MESSAGE takes 7 s each way: the commit it carries (the memory entry when it was
        sent) reaches the broker after persists of later entries, and overwrites them (OFF-8, OFF-10)."""
        self.pulls_delayed = True
        self.cluster.faults.delay(BROKER, "PULL_MESSAGE", ms=7_000)

    @rule(times=st.integers(1, 2))
    def pulls_lost(self, times: int) -> None:
        """The next PULL_MESSAGE requests are lost with the commits they carry (OFF-9, OFF-10)."""
        self.cluster.faults.drop(BROKER, "PULL_MESSAGE", times=times)

    @precondition(lambda self: self.cluster is not None and self._alive())
    @rule(index=st.integers(0, 1))
    def consumer_crashes(self, index: int) -> None:
        """The process dies: memory entries and ProcessQueues are gone, nothing is persisted (OFF-17, OFF-19)."""
        alive = self._alive()
        consumer = alive[index % len(alive)]
        self.cluster.crash_client(consumer)
        self._forget_requests(consumer.instance.client_id)
        self._settle()

    @precondition(lambda self: self.cluster is not None and self._alive())
    @rule(index=st.integers(0, 1))
    def consumer_shuts_down(self, index: int) -> None:
        """A clean shutdown persists the memory entries of the held queues (OFF-11, OFF-12)."""
        alive = self._alive()
        consumer = alive[index % len(alive)]
        self._drain()
        held = {mq: consumer.offset_store.table[mq] for mq, pq in consumer.rebalance.process_queue_table.items()
                if not pq.dropped and mq in consumer.offset_store.table}
        unhindered = self._commits_unhindered()
        consumer.shutdown()
        self._forget_requests(consumer.instance.client_id)
        self._settle()
        if unhindered:
            persisted = {mq: self.broker_table.get(mq) for mq in held}
            assert persisted == held, (
                f"OFF-11/OFF-12: {consumer.instance.client_id} shut down holding {held}; the broker has {persisted}")

    @precondition(lambda self: self.cluster is not None and len(self._alive()) < 2)
    @rule()
    def consumer_starts(self) -> None:
        """A consumer joins: queues move to it, starting at the broker's offset (OFF-12, OFF-13)."""
        self._start_consumer()

    @rule(crash=st.booleans())
    def restart_broker(self, crash: bool) -> None:
        """The broker restarts; it reads back its offset table (OFF-8): all of it after a clean stop, the last
        persisted one after a crash."""
        self._drain()
        now = self.cluster.now_ms()
        if crash:
            expected = self._persisted_tables(now)
        else:
            expected = [dict(self.broker_table)]
        self.cluster.restart_broker(BROKER, crash=crash)
        loaded = self._broker_offsets()
        assert loaded in expected, (
            f"OFF-8: after a {'crash' if crash else 'clean'} restart the broker has {loaded}; expected one of "
            f"{expected}")
        self.broker_table = dict(loaded)
        self.history.append((now, dict(loaded)))
        self.broker_started = now
        self._settle()

    def _commits_unhindered(self) -> bool:
        """No UPDATE_CONSUMER_OFFSET may be lost or late, no older commit carried by a slow pull may arrive after
        it, and no other consumer commits meanwhile."""
        for fault in self.cluster.faults.rules:
            pending = fault.times is None or fault.fired < fault.times
            if pending and (fault.code == RequestCode.UPDATE_CONSUMER_OFFSET or fault.action == "delay"):
                return False
        return len(self._alive()) == 1

    def _forget_requests(self, node: str) -> None:
        """The consume requests of a stopped consumer never return (OFF-12: they vanish with the ProcessQueue)."""
        self.waiting = [w for w in self.waiting if w.node != node]
        self.local_retry = {k: v for k, v in self.local_retry.items() if k[0] != node}

    def _persisted_tables(self, crash_ms: int) -> list[dict[MessageQueue, int]]:
        """The tables the broker may have persisted last before ``crash_ms``: at the last persist time (before or
        after the commits of that millisecond), or the one it loaded at start when none ran since."""
        first = self.broker_started + PERSIST_FIRST_MS
        if crash_ms < first:
            loaded = [table for ts, table in self.history if ts <= self.broker_started]
            return [loaded[-1]]
        last = first + (crash_ms - first) // BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS * (
            BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS)
        before = [table for ts, table in self.history if ts < last]
        at = [table for ts, table in self.history if ts == last]
        return [before[-1], *at]

    def _broker_offsets(self) -> dict[MessageQueue, int]:
        table = dict(self.cluster.committed_offsets(GROUP, TOPIC))
        table.update(self.cluster.committed_offsets(GROUP, RETRY))
        return table

    # ------------------------------------------------------------------------------------------------ events
    def _drain(self) -> None:
        """Check every transition observed since the last step, in order."""
        events = self.cluster.events.events
        new, self.cursor = events[self.cursor:], len(events)
        for event in new:
            if isinstance(event, OffsetUpdate) and event.group == GROUP:
                self._offset_update(event)
            elif isinstance(event, OffsetRemoved):
                self.memory.pop((event.node, _mq(event)), None)
            elif isinstance(event, PullRequestEvent) and event.group == GROUP:
                self._pull_request(event)
            elif isinstance(event, OffsetCommit) and event.group == GROUP:
                self._offset_commit(event)
            elif isinstance(event, SendBack) and event.node in self.consumers:
                back = self.sent_back.pop((event.node, event.msg_id), None)
                if back is None:
                    continue
                if event.via == "local":
                    self.local_retry[(event.node, back.mq, back.offset)] = back.pq
                else:
                    self.handled.setdefault(back.mq, set()).add(back.offset)

    def _offset_update(self, event: OffsetUpdate) -> None:
        key = (event.node, _mq(event))
        old = self.memory.get(key)
        if event.increase_only:
            assert old is None or event.offset > old, (
                f"OFF-5: updateOffset(increaseOnly) moved {key[1]} of {event.node} from {old} to {event.offset}")
        else:
            # The only write that may lower an entry: readOffset(READ_FROM_STORE) caching the broker's answer when
            # a queue is added (OFF-6, OFF-13); the answer is what the broker held a round trip ago (OFF-7).
            answers = self._broker_answers(key[1], event.ts_ms)
            assert event.offset in answers, (
                f"OFF-6/OFF-7/OFF-13: {event.node} cached {event.offset} for {key[1]} at assignment; "
                f"QUERY_CONSUMER_OFFSET answered one of {sorted(answers)}")
            self.first_pull[key] = event.offset
        self.memory[key] = event.offset
        self.memory_values.setdefault(key[1], set()).add(event.offset)

    def _broker_answers(self, mq: MessageQueue, ts: int) -> set[int]:
        """What QUERY_CONSUMER_OFFSET may have answered for ``mq`` between ``ts`` minus a round trip and ``ts``."""
        window = 2 * self.cluster.network.latency_ms
        tables = [table for t, table in self.history if ts - window <= t <= ts]
        earlier = [table for t, table in self.history if t < ts - window]
        if earlier:
            tables.append(earlier[-1])
        answers = set()
        for table in tables:
            _code, offset = spec.broker_query_offset(table.get(mq, spec.NO_OFFSET), 0, False)
            answers.add(offset)
        return answers

    def _pull_request(self, event: PullRequestEvent) -> None:
        key = (event.node, _mq(event))
        start = self.first_pull.pop(key, None)
        if start is not None:
            assert event.offset == start, (
                f"OFF-13/OFF-19: {event.node} added {key[1]} with offset {start} but pulls from {event.offset}")
        memory = self.memory.get(key, spec.NO_OFFSET)
        value, flag = spec.pull_commit_request(MessageModel.CLUSTERING, memory)
        expected = value if flag & PULL_FLAG_COMMIT_OFFSET else None
        assert event.commit_offset == expected, (
            f"OFF-9: pull of {key[1]} by {event.node} carries commit {event.commit_offset}; memory entry {memory} "
            f"gives {expected}")

    def _offset_commit(self, event: OffsetCommit) -> None:
        mq = _mq(event)
        assert event.offset in self.memory_values.get(mq, set()), (
            f"OFF-9/OFF-11: the broker committed {event.offset} for {mq}, never a memory entry of the group "
            f"({sorted(self.memory_values.get(mq, set()))})")
        self.broker_table[mq] = event.offset
        self.history.append((event.ts_ms, dict(self.broker_table)))

    # ------------------------------------------------------------------------------------------------ invariants
    def _state(self, mq: MessageQueue, memory: int, held: spec.Held | None) -> spec.OffsetState:
        done = frozenset(self.handled.get(mq, set()))
        stored = self.broker_table.get(mq, spec.NO_OFFSET)
        return spec.OffsetState(self.spec_config, stored=stored, memory=memory, held=held, done=done)

    def _held(self, consumer: Any, mq: MessageQueue, pq: Any) -> spec.Held | None:
        request = consumer._pull_requests.get(mq)
        if request is None or request.pq is not pq:
            return None  # added, its first pull not dispatched yet
        node = consumer.instance.client_id
        requests = [spec.ConsumeRequest(w.offsets) for w in self.waiting if w.node == node and w.pq is pq]
        requests += [spec.ConsumeRequest((b.offset,)) for (n, _id), b in self.sent_back.items()
                     if n == node and b.pq is pq]
        requests += [spec.ConsumeRequest((o,)) for (n, q, o), p in self.local_retry.items()
                     if n == node and q == mq and p is pq]
        cached = tuple(int(o) for o in pq.msg_tree.keys())
        state = spec.ProcessQueueState(cached, (), pq.queue_offset_max, pq.consuming)
        late = any(written is pq for written in self.late_written)
        return spec.Held(state, request.next_offset, tuple(requests), late)

    @precondition(lambda self: self.cluster is not None)
    @invariant()
    def broker_table_is_last_commit(self) -> None:
        """OFF-8: the broker's table is exactly the last value committed per queue (replayed from its events)."""
        self._drain()
        actual = self._broker_offsets()
        assert actual == self.broker_table, f"OFF-8: broker table {actual}, last commits {self.broker_table}"

    @precondition(lambda self: self.cluster is not None)
    @invariant()
    def spec_invariants_hold(self) -> None:
        """OFF-17 for the broker offset and every memory entry; OFF-18/OFF-3/OFF-14 and OFF-19/OFF-1/OFF-4 for
        every held ProcessQueue; OFF-5/OFF-4 while a ProcessQueue stays (spec invariants on the abstraction)."""
        self._drain()
        queues = {MessageQueue(TOPIC, BROKER, q) for q in range(self.queues)} | {MessageQueue(RETRY, BROKER, 0)}
        for mq in sorted(queues | set(self.broker_table)):
            state = self._state(mq, spec.NO_OFFSET, None)
            assert spec.at_least_once(state), (
                f"OFF-17: broker offset {state.stored} of {mq} passes unhandled offset "
                f"{_first_unhandled(set(state.done))}")
        observed: dict[tuple[str, MessageQueue], tuple[Any, int]] = {}
        for consumer in self._alive():
            node = consumer.instance.client_id
            table = consumer.offsets()
            for mq, memory in table.items():
                assert self.memory.get((node, mq)) == memory, (
                    f"OffsetUpdate events of {node} give {self.memory.get((node, mq))} for {mq}, memory has {memory}")
                state = self._state(mq, memory, None)
                assert spec.at_least_once(state), (
                    f"OFF-17: memory entry {memory} of {mq} at {node} passes unhandled offset "
                    f"{_first_unhandled(set(state.done))}")
            for mq, pq in consumer.rebalance.process_queue_table.items():
                held = None if pq.dropped else self._held(consumer, mq, pq)
                if held is None:
                    continue
                memory = table.get(mq, spec.NO_OFFSET)
                state = self._state(mq, memory, held)
                detail = f"{mq} at {node}: memory {memory}, {held!r}, handled {sorted(state.done)}"
                assert spec.memory_within_process_queue(state), f"OFF-18/OFF-3/OFF-14: {detail}"
                assert spec.no_message_lost(state), f"OFF-19/OFF-1/OFF-4: {detail}"
                before = self.observed.get((node, mq))
                if before is not None and before[0] is pq:
                    previous = attrs.evolve(state, memory=before[1])
                    assert spec.memory_only_rises(previous, spec.PersistAll(), state), (
                        f"OFF-5/OFF-4: memory of {mq} at {node} fell from {before[1]} to {memory} while held")
                observed[(node, mq)] = (pq, memory)
        self.observed = observed


OffsetCommitMachine.TestCase.settings = stateful_settings(100, 40)
TestOffsetCommit = OffsetCommitMachine.TestCase


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 200, 30

MUTANTS = {
    "remove_message_returns_max": (
        process_queue_module, "result = self.msg_tree.keys()[0]", "result = self.msg_tree.keys()[-1]",
        ("OFF-17", "OFF-18"),
    ),
    "commit_past_unconsumed": (
        consume_service_module, "self.consumer.offset_store.update_offset(mq, offset, True)",
        "self.consumer.offset_store.update_offset(mq, pq.queue_offset_max + 1, True)", ("OFF-17", "OFF-18"),
    ),
    "persist_sends_next_offset": (
        offset_store_module, '"commitOffset": offset,\n', '"commitOffset": offset + 1,\n', ("OFF-11", "OFF-17"),
    ),
    "broker_keeps_higher_offset": (
        broker_offsets_module, "queues[queue_id] = offset", "queues[queue_id] = max(offset, previous or 0)",
        ("OFF-8",),
    ),
    "shutdown_skips_persist": (
        push_consumer_module, "        self.consume_service.shutdown()\n        self.persist_offsets()\n",
        "        self.consume_service.shutdown()\n", ("OFF-11",),
    ),
    "broker_loses_table_on_load": (
        broker_offsets_module, "        self.table = loaded", "        self.table = {}", ("OFF-8",),
    ),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    with refimpl_mutant(module, old, new):
        failure = hypothesis_finds_failure(OffsetCommitMachine, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)
    text = failure_text(failure)
    assert any(clause in text for clause in clauses), f"{name}: failure names none of {clauses}: {text}"
