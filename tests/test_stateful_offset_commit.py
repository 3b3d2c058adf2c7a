"""Lockstep: the offset_commit spec (OFF-*) drives the reference implementation's push consumers, offset stores,
brokers and their admin requests.

Each run draws its configuration (``tests/dimensions.py``): 1-3 brokers, the message model (clustering with the
remote offset store, broadcasting with 4.9.8's LocalFileOffsetStore writing ``offsets.json`` under the client's
store directory, in memory or on disk), consumeFromWhere with its consumeTimestamp (before every message, between
them, past the last one), consumeMessageBatchMaxSize, and the brokers' flushDiskType. The group's topic has two
queues per broker (and, clustering, the group's retry queue on each); two consumer clients of the group come and
go, each under its own client id (a broadcasting client restarted finds its file again).

Driven (the rules step the spec, then make the implementation do it): a consumer starting, shutting down, crashing;
admin requests that change or report offsets (UPDATE/QUERY_CONSUMER_OFFSET, INVOKE_BROKER_TO_RESET_OFFSET,
GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET, QUERY_CONSUME_TIME_SPAN,
GET_CONSUMER_CONNECTION_LIST, INVOKE_BROKER_TO_GET_CONSUMER_STATUS, CLONE_GROUP_OFFSET, DELETE_SUBSCRIPTIONGROUP).
Environment (not spec actions): sends, a listener returning (every consume request waits for a rule), time passing,
lost or slow commits and pulls. Observed (read off the events and the hooks of ``offset_lockstep_support`` and
stepped in the order they happened): every message stored, heartbeat, offset read and start of a queue, pull sent
(with its commit) and answered (FOUND, NO_NEW_MSG, OFFSET_ILLEGAL, failed; a stale one's too), consume request
finished and written, persist, commit reaching a broker, drop, correction, reset received and applied, broker
persist and restart (what a crash kept). After every rule the projections must agree, part by part.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, variant_caught, variant_needs
from offset_lockstep_admin import ADMIN, ADMIN_CODES, AdminRules
from offset_lockstep_replay import Replay
from offset_lockstep_support import Gate, Recorder

from rocketspec.refimpl import Cluster, ConsumeStatus, Message
from rocketspec.refimpl.broker import offsets as broker_offsets_module
from rocketspec.refimpl.client import consume_service as consume_service_module
from rocketspec.refimpl.client import offset_store as offset_store_module
from rocketspec.refimpl.client import process_queue as process_queue_module
from rocketspec.refimpl.client import push_consumer as push_consumer_module
from rocketspec.refimpl.client import rebalance as rebalance_module
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.runtime import SIMULATED_EPOCH_MS
from rocketspec.refimpl.store import flush as flush_module
from rocketspec.spec import offset_commit as spec
from rocketspec.spec.protocol import (
    PULL_BATCH_SIZE,
    ConsumeFromWhere,
    MessageModel,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

TOPIC = spec.TOPIC
GROUP = "CG"
CLONE = "CG_COPY"
RETRY = retry_topic(GROUP)
QUEUES_PER_BROKER = 2
SLOTS = 2
STEP_MS = 1_000
WAITS = (1_000, 5_000, 15_000, 30_000)
OFFSETS_FILE = "config/consumerOffset.json"

# The parts of the projection, each named with the clauses that decide it.
BROKER = "broker offsets (OFF-8, OFF-10, OFF-11, OFF-30)"
PERSISTED = "offset tables on disk (OFF-22)"
MEMORY = "memory offsets (OFF-5, OFF-6, OFF-13, OFF-14, OFF-24)"
FILES = "local offset files (OFF-16, OFF-24)"
QUEUES = "ProcessQueues: cached, next pull offset, dropped (OFF-1, OFF-3, OFF-12, OFF-23, OFF-26)"
REQUESTS = "consume requests waiting (OFF-4)"
HANDLED = "messages handled (OFF-17)"
STORED = "messages stored: store times by offset (OFF-22)"
ONLINE = "clients online (OFF-29)"
ANSWER = "admin answer (OFF-7, OFF-25, OFF-27, OFF-28, OFF-29, OFF-30)"

CFW = ConsumeFromWhere
# consumeTimestamp values (whole seconds, as Java parses them): before every message (the default, 30 minutes before
# the client started), between the messages the setup stores, past the last one.
FROM_WHERE = st.sampled_from([
    (CFW.CONSUME_FROM_LAST_OFFSET, None), (CFW.CONSUME_FROM_FIRST_OFFSET, None), (CFW.CONSUME_FROM_TIMESTAMP, None),
    (CFW.CONSUME_FROM_TIMESTAMP, SIMULATED_EPOCH_MS + 1_000), (CFW.CONSUME_FROM_TIMESTAMP, SIMULATED_EPOCH_MS + 10**9),
])


class OffsetCommitMachine(AdminRules, Replay, LockstepMachine):
    """Push consumers of one group, their offset stores, the brokers' offset tables and the offset admin requests,
    configured as the run draws, stepped with the spec's offset machine (OFF-1..30)."""

    TABLE = spec.TRANSITIONS
    DIMENSIONS = ("consumer.messageModel", "consumer.consumeFromWhere", "consumer.consumeMessageBatchMaxSize",
                  "broker.flushDiskType", "topology.brokers")
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {"consumer.consumeFromWhere": FROM_WHERE}
    DRIVEN = (spec.ConsumerStarted, spec.ConsumerShutdown, spec.ConsumerCrashed, spec.AdminCommit,
              spec.OffsetQueried, spec.OffsetResetAsked, spec.ConsumeStatsAsked, spec.BrokerConsumeStatsAsked,
              spec.AllOffsetsAsked, spec.TimeSpanAsked, spec.ConnectionsAsked, spec.ConsumerStatusAsked,
              spec.OffsetsCloned, spec.GroupDeleted, spec.OtherGroupUpdated)
    OBSERVED = (spec.MessageStored, spec.Heartbeat, spec.GroupCreated, spec.OffsetRead, spec.QueueAssigned,
                spec.LockedRead, spec.LockedStart,
                spec.PullSent,
                spec.PullFound, spec.PullNoNewMessage, spec.PullOffsetMoved, spec.PullFailed,
                spec.StalePullAnswered, spec.ConsumeFinished, spec.OffsetUpdated, spec.TakeMessages,
                spec.OrderlyConsumed, spec.PersistAll, spec.CommitArrives, spec.QueueDropped, spec.LateOffsetWrite,
                spec.OffsetCorrected, spec.ResetReceived, spec.ResetApplied, spec.OffsetsPersisted,
                spec.BrokerRestarted)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.undo_hooks: list[Any] = []
        self.store_dir: str | None = None

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """A cluster as configured, the group's topic, a producer; ``messages`` stored in each queue before the
        first consumer client starts."""
        brokers = config["topology.brokers"]
        self.model: MessageModel = config["consumer.messageModel"]
        self.where, self.timestamp = config["consumer.consumeFromWhere"]
        self.batch = config["consumer.consumeMessageBatchMaxSize"]
        flush = config["broker.flushDiskType"]
        self.cluster = cluster = Cluster(brokers=brokers, clock="simulated", wire_codec="json", seed=3, flush=flush,
                                         keep_events=True)
        self.recorder = Recorder(cluster, ADMIN, ADMIN_CODES)
        self.undo_hooks.append(self.recorder.hook_resets())
        for broker in cluster.brokers.values():
            self.recorder.hook_broker(broker)
        self.gate = Gate(self.recorder, self._pq_of)
        cluster.runtime.run_user = self.gate  # type: ignore[method-assign]
        self.orderly = False
        if self.model is MessageModel.BROADCASTING:
            if data.draw(st.booleans(), label="offset files on disk"):
                self.store_dir = tempfile.mkdtemp(prefix="rocketspec-offsets-")
            # Orderly consumption, broadcasting only: its locks then gate nothing the machine does not see.
            self.orderly = data.draw(st.booleans(), label="orderly")
        cluster.create_topic(TOPIC, queues=QUEUES_PER_BROKER)
        self.topic_queues = [MessageQueue(TOPIC, b, q) for b in cluster.broker_names for q in range(QUEUES_PER_BROKER)]
        retry = [MessageQueue(RETRY, b, 0) for b in cluster.broker_names] if self.clustering else []
        self.spec_config = spec.Config(
            self.model, self.orderly, queues=(*self.topic_queues, *retry), clients=SLOTS, pull_batch=PULL_BATCH_SIZE,
            consume_batch=self.batch, consume_from_where=self.where, consume_timestamp=self.timestamp,
            sync_flush=flush == "sync")
        self.begin(spec.initial_state(self.spec_config, alive=False))
        self.producer = cluster.producer("PG")
        self.admin = cluster.network.client(ADMIN)
        self.tools = cluster.network.client("admin-tools")
        self.consumers: list[PushConsumer | None] = [None] * SLOTS
        self.ids = [f"127.0.0.1@c{slot}" for slot in range(SLOTS)]
        self.answer = ConsumeStatus.CONSUME_SUCCESS
        self.handled: dict[Any, set[int]] = {}
        self.released: dict[tuple[str, MessageQueue, int], tuple[tuple[int, ...], bool, bool, bool]] = {}
        self.sending_back: dict[tuple[str, str, int], tuple[int, int, tuple[int, ...]]] = {}
        self.backs_left: dict[tuple[int, int, tuple[int, ...]], int] = {}
        self.pending_reads: set[tuple[int, int]] = set()
        self.applying: set[int] = set()
        self.system_answer: spec.Answer | None = None
        for mq in self.topic_queues:
            for _ in range(data.draw(st.integers(0, 2), label=f"messages in {mq.broker_name}:{mq.queue_id}")):
                self.producer.send(Message(TOPIC, b"body"), queue=mq)
        self._start(0)

    def teardown(self) -> None:
        for undo in self.undo_hooks:
            undo()
        if self.cluster is not None:
            self.cluster.close()
        if self.store_dir is not None:
            shutil.rmtree(self.store_dir, ignore_errors=True)

    @property
    def clustering(self) -> bool:
        return self.model is MessageModel.CLUSTERING

    def _pq_of(self, client: str, mq: MessageQueue) -> Any:
        consumer = self._consumer(client)
        return consumer.rebalance.process_queue_table.get(mq) if consumer is not None else None

    def _consumer(self, client: str) -> PushConsumer | None:
        slot = self._slot(client)
        return None if slot is None else self.consumers[slot]

    def _slot(self, client: str) -> int | None:
        return self.ids.index(client) if client in self.ids else None

    def _queue(self, mq: MessageQueue) -> int | None:
        queues = self.spec_config.queues
        return queues.index(mq) if mq in queues else None

    def _settle(self, ms: int = STEP_MS) -> None:
        assert self.cluster is not None
        self.cluster.advance(ms)
        self._replay()

    def _listener(self, msgs: list[Any]) -> ConsumeStatus:
        return self.answer

    # ------------------------------------------------------------------------------------------------ clients
    def _start(self, slot: int) -> None:
        """A consumer client of the group starts, under the slot's client id (OFF-24)."""
        cluster = self.cluster
        assert cluster is not None
        self._replay()
        self.drive(spec.ConsumerStarted(slot, cluster.now_ms()), f"client c{slot} starts")
        options = {"message_model": self.model.name, "consume_from_where": self.where.name,
                   "consume_timestamp_ms": self.timestamp, "consume_message_batch_max_size": self.batch,
                   "consume_thread_max": 1000, "offset_store_dir": self.store_dir, "orderly": self.orderly}
        consumer_config = cluster._consumer_config(GROUP, options)
        instance = cluster._instance(GROUP, {"instance_name": f"c{slot}"})
        consumer = PushConsumer(instance, consumer_config, self._listener)
        consumer.subscribe(TOPIC, "*")
        self.recorder.hook_consumer(consumer)
        self.consumers[slot] = consumer
        cluster.runtime.submit(consumer.start)
        self._settle()

    def _alive(self, slot: int) -> bool:
        return self.spec is not None and self.state.clients[slot].alive

    @precondition(lambda self: self.cluster is not None)
    @rule(slot=st.integers(0, SLOTS - 1))
    def consumer_starts(self, slot: int) -> None:
        """A client joins: queues move to it, starting at the stored offset or by consumeFromWhere (OFF-13,
        OFF-20); a broadcasting client loads its file (OFF-24)."""
        if not self._alive(slot):
            self._start(slot)

    @precondition(lambda self: self.cluster is not None)
    @rule(slot=st.integers(0, SLOTS - 1))
    def consumer_crashes(self, slot: int) -> None:
        """The client's process dies: nothing is persisted (OFF-24, OFF-17)."""
        consumer = self.consumers[slot]
        if consumer is None or not self._alive(slot):
            return
        self._replay()
        self.drive(spec.ConsumerCrashed(slot), f"client c{slot} crashes")
        assert self.cluster is not None
        self.cluster.crash_client(consumer)
        self._stopped(slot)

    def _stopped(self, slot: int) -> None:
        self.gate.forget(self.ids[slot])
        self.pending_reads = {lane for lane in self.pending_reads if lane[0] != slot}
        self._settle()

    @precondition(lambda self: self.cluster is not None)
    @rule(slot=st.integers(0, SLOTS - 1))
    def consumer_shuts_down(self, slot: int) -> None:
        """A clean shutdown persists the held queues' memory entries and drops every ProcessQueue (OFF-24,
        OFF-11, OFF-16)."""
        consumer = self.consumers[slot]
        if consumer is None or not self._alive(slot):
            return
        self._replay()
        self.drive(spec.ConsumerShutdown(slot), f"client c{slot} shuts down")
        self.recorder.stopping = self.ids[slot]
        try:
            consumer.shutdown()
        finally:
            self.recorder.stopping = None
        self._stopped(slot)

    # ------------------------------------------------------------------------------------------------ environment
    @precondition(lambda self: self.cluster is not None)
    @rule(queue=st.integers(0, 5), count=st.integers(1, 3))
    def messages_sent(self, queue: int, count: int) -> None:
        """The producer stores messages in a queue of the topic; a held pull wakes up (OFF-22)."""
        for _ in range(count):
            self.producer.send(Message(TOPIC, b"body"), queue=self.topic_queues[queue % len(self.topic_queues)])
        self._settle()

    @precondition(lambda self: self.cluster is not None and self.gate.waiting)
    @rule(index=st.integers(0, 7), success=st.booleans(), more=st.integers(0, 3))
    def listener_returns(self, index: int, success: bool, more: int) -> None:
        """Waiting listeners return CONSUME_SUCCESS or RECONSUME_LATER, one and then ``more``: consume threads finish
        in any order (OFF-3, OFF-4, OFF-15; clustering sends failures back, OFF-30)."""
        for _ in range(1 + more):
            if self.gate.waiting:
                self._release(index % len(self.gate.waiting), success)
                index += 1
        self._settle()

    @precondition(lambda self: self.cluster is not None and self.gate.waiting)
    @rule(count=st.integers(1, 8))
    def listeners_succeed_in_order(self, count: int) -> None:
        """The oldest waiting listeners return CONSUME_SUCCESS (OFF-3, OFF-4, OFF-15)."""
        for _ in range(count):
            if self.gate.waiting:
                self._release(0, True)
        self._settle()

    def _release(self, index: int, success: bool) -> None:
        waiting = self.gate.waiting.pop(index)
        slot = self._slot(waiting.client)
        consumer = self._consumer(waiting.client)
        live = (consumer is not None and consumer.alive() and not waiting.pq.dropped
                and consumer.rebalance.process_queue_table.get(waiting.mq) is waiting.pq)
        self.answer = ConsumeStatus.CONSUME_SUCCESS if success else ConsumeStatus.RECONSUME_LATER
        value = waiting.fn()
        if slot is not None:
            for offset in waiting.offsets:
                self.released[(waiting.client, waiting.mq, offset)] = (waiting.offsets, success,
                                                                       offset == waiting.offsets[0], live)
        if live and slot is not None:
            key: Any = waiting.mq if self.clustering else (slot, waiting.mq)
            if success or not self.orderly:  # an orderly batch suspended comes again
                self.handled.setdefault(key, set()).update(waiting.offsets)
            queue = self._queue(waiting.mq)
            for msg_id, times in waiting.msg_ids:
                if queue is not None:
                    self.sending_back[(waiting.client, msg_id, times + 1)] = (slot, queue, waiting.offsets)
        waiting.on_done(value, None)

    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Persistence (OFF-11, OFF-22), rebalance, long polling, retry copies arriving (OFF-30)."""
        self._settle(ms)

    @precondition(lambda self: self.cluster is not None)
    @rule(slot=st.integers(0, SLOTS - 1), times=st.integers(1, 2))
    def commits_lost(self, slot: int, times: int) -> None:
        """A client's next oneway UPDATE_CONSUMER_OFFSET requests never reach a broker (OFF-11)."""
        assert self.cluster is not None
        self.cluster.faults.drop("*", "UPDATE_CONSUMER_OFFSET", times=times, client=self.ids[slot])

    @precondition(lambda self: self.cluster is not None)
    @rule(slot=st.integers(0, SLOTS - 1), times=st.integers(1, 3))
    def commits_slow(self, slot: int, times: int) -> None:
        """A client's next UPDATE_CONSUMER_OFFSET requests take 7 s: commits carried by later pulls overtake them
        and the broker overwrites those with the older values (OFF-8, OFF-10)."""
        assert self.cluster is not None
        self.cluster.faults.delay("*", "UPDATE_CONSUMER_OFFSET", ms=7_000, times=times, client=self.ids[slot])

    @precondition(lambda self: self.cluster is not None)
    @rule(slot=st.integers(0, SLOTS - 1), times=st.integers(1, 2))
    def pulls_lost(self, slot: int, times: int) -> None:
        """A client's next PULL_MESSAGE requests are lost with their commits: it gives up after its timeout and
        pulls again (OFF-9, OFF-10)."""
        assert self.cluster is not None
        self.cluster.faults.drop("*", "PULL_MESSAGE", times=times, client=self.ids[slot])

    @precondition(lambda self: self.cluster is not None and self.clustering)
    @rule(slot=st.integers(0, SLOTS - 1), lost=st.booleans())
    def offset_reads_fail(self, slot: int, lost: bool) -> None:
        """A client's next QUERY_CONSUMER_OFFSET is answered SYSTEM_ERROR (read as no offset: consumeFromWhere
        decides) or lost (the queue is left out until a later rebalance) (OFF-6, OFF-13, OFF-20)."""
        assert self.cluster is not None
        if lost:
            self.cluster.faults.drop("*", "QUERY_CONSUMER_OFFSET", times=1, client=self.ids[slot])
        else:
            self.cluster.faults.fail("*", "QUERY_CONSUMER_OFFSET", code="SYSTEM_ERROR", times=1,
                                     client=self.ids[slot])

    # ------------------------------------------------------------------------------------------------ brokers
    @precondition(lambda self: self.cluster is not None)
    @rule(queue=st.integers(0, 5), crash=st.booleans(), sent=st.booleans())
    def broker_restarts(self, queue: int, crash: bool, sent: bool) -> None:
        """The broker of a queue restarts: cleanly, or after a crash that loses the offsets committed since its last
        persist and, with ASYNC_FLUSH, an unflushed tail (``sent``: a message was stored in the queue right before,
        which SYNC_FLUSH keeps); its consumer connections are forgotten (OFF-22, OFF-29)."""
        mq = self.topic_queues[queue % len(self.topic_queues)]
        if sent:
            self.producer.send(Message(TOPIC, b"body"), queue=mq)
        self._restart(mq.broker_name, crash)

    def _restart(self, name: str, crash: bool) -> None:
        cluster = self.cluster
        assert cluster is not None
        at = cluster.now_ms()
        cluster.restart_broker(name, crash=crash)
        self.recorder.hook_broker(cluster.brokers[name])
        self._replay()
        store = cluster.brokers[name].store
        indexes = self.spec_config.on(name)
        kept = tuple(store.max_offset(self.spec_config.queues[q].topic, self.spec_config.queues[q].queue_id)
                     for q in indexes)
        self.observe(spec.BrokerRestarted(name, crash, kept, at), f"{name} {'crashed' if crash else 'restarted'}")
        survived = {self.spec_config.queues[q]: k for q, k in zip(indexes, kept, strict=True)}
        for key, offsets in self.handled.items():
            mq = key if isinstance(key, MessageQueue) else key[1]
            if mq in survived:
                offsets.intersection_update(range(survived[mq]))
        self._settle()

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        state = self.state
        config = self.spec_config
        queues = config.queues
        broker = {(GROUP, queues[q]): s.stored for q, s in enumerate(state.queues) if s.stored != spec.NO_OFFSET}
        broker.update({(CLONE, queues[q]): s.cloned for q, s in enumerate(state.queues) if s.cloned != spec.NO_OFFSET})
        alive = [c for c in range(SLOTS) if state.clients[c].alive]
        held = {(c, queues[q]): lane.held for c in alive for q, lane in enumerate(state.lanes[c])
                if lane.held is not None}
        return {
            BROKER: broker,
            PERSISTED: {queues[q]: s.persisted for q, s in enumerate(state.queues) if s.persisted != spec.NO_OFFSET},
            MEMORY: {(c, queues[q]): lane.memory for c in alive for q, lane in enumerate(state.lanes[c])
                     if lane.memory != spec.NO_OFFSET},
            FILES: {(c, queues[q]): lane.file for c in range(SLOTS) for q, lane in enumerate(state.lanes[c])
                    if lane.file != spec.NO_OFFSET},
            # A ProcessQueue marked dropped takes no part any more (what a stale answer caches in it stays unused).
            QUEUES: {key: (None, None, True) if h.dropped else (h.pq.cached, h.next_offset, False)
                     for key, h in held.items()},
            REQUESTS: {key: [h.pq.taken] if self.orderly else sorted(r.offsets for r in h.requests if r.removed is None)
                       for key, h in held.items() if not h.dropped and (
                           h.pq.taken if self.orderly else any(r.removed is None for r in h.requests))},
            HANDLED: self._spec_handled(),
            STORED: {queues[q]: s.times for q, s in enumerate(state.queues)},
            ONLINE: {b: [c for c in alive if b in state.clients[c].online] for b in config.brokers},
            ANSWER: _normal(state.answer),
        }

    def _spec_handled(self) -> dict[Any, list[int]]:
        state, queues = self.state, self.spec_config.queues
        if self.clustering:
            return {queues[q]: sorted(s.done) for q, s in enumerate(state.queues) if s.done}
        return {(c, queues[q]): sorted(lane.done) for c in range(SLOTS) for q, lane in enumerate(state.lanes[c])
                if lane.done}

    def project_system(self) -> dict[str, Any]:
        cluster = self.cluster
        assert cluster is not None
        queues = self.spec_config.queues
        broker: dict[Any, int] = {}
        for group in (GROUP, CLONE):
            for topic in {mq.topic for mq in queues}:
                broker.update({(group, mq): o for mq, o in cluster.committed_offsets(group, topic).items()})
        memory, pqs, requests = {}, {}, {}
        for slot, consumer in enumerate(self.consumers):
            if consumer is None or not consumer.alive():
                continue
            memory.update({(slot, mq): o for mq, o in consumer.offset_store.table.items()})
            for mq, pq in consumer.rebalance.process_queue_table.items():
                request = self.recorder.requests.get(id(pq))
                next_offset = request.next_offset if request is not None and request.pq is pq else \
                    self.recorder.starts.get((self.ids[slot], mq))  # added, its pull not dispatched yet
                pqs[(slot, mq)] = (None, None, True) if pq.dropped else (
                    tuple(int(o) for o in pq.msg_tree.keys()), next_offset, False)
                waiting = sorted(w.offsets for w in self.gate.waiting if w.client == self.ids[slot] and w.mq == mq
                                 and w.pq is pq)
                if waiting and not pq.dropped:
                    requests[(slot, mq)] = waiting
        handled = {key: sorted(offsets) for key, offsets in self.handled.items() if offsets}
        stored = {}
        for mq in queues:
            store = cluster.brokers[mq.broker_name].store
            stored[mq] = tuple(store.message_store_timestamp(mq.topic, mq.queue_id, o)
                               for o in range(store.max_offset(mq.topic, mq.queue_id)))
        online = {}
        for name in self.spec_config.brokers:
            info = cluster.brokers[name].consumers.get(GROUP)
            ids = info.client_ids() if info is not None else []
            online[name] = sorted(s for s in (self._slot(i) for i in ids) if s is not None)
        return {BROKER: broker, PERSISTED: self._persisted(), MEMORY: memory, FILES: self._files(), QUEUES: pqs,
                REQUESTS: requests, HANDLED: handled, STORED: stored, ONLINE: online,
                ANSWER: _normal(self.system_answer)}

    def _persisted(self) -> dict[MessageQueue, int]:
        """The group's offsets in each broker's config/consumerOffset.json."""
        assert self.cluster is not None
        out: dict[MessageQueue, int] = {}
        for name in self.spec_config.brokers:
            raw = self.cluster._disks[name].read_file(OFFSETS_FILE)
            table = json.loads(raw.decode("utf-8"))["offsetTable"] if raw else {}
            for key, entries in table.items():
                topic, _sep, group = key.rpartition("@")
                if group == GROUP:
                    out.update({MessageQueue(topic, name, int(q)): int(o) for q, o in entries.items()})
        return out

    def _files(self) -> dict[tuple[int, MessageQueue], int]:
        """Each client's offsets.json (its main file): on disk under the store directory, or the in-memory files."""
        assert self.cluster is not None
        out: dict[tuple[int, MessageQueue], int] = {}
        for slot, client in enumerate(self.ids):
            relative = str(Path(client) / GROUP / offset_store_module.OFFSET_FILE)
            if self.store_dir is not None:
                path = Path(self.store_dir) / relative
                text = path.read_text(encoding="utf-8") if path.exists() else None
            else:
                text = offset_store_module._MEMORY_FILES.get(self.cluster.runtime, {}).get(relative)
            if text:
                for entry in json.loads(text)["offsetTable"]:
                    mq = MessageQueue(entry["topic"], entry["brokerName"], entry["queueId"])
                    out[(slot, mq)] = entry["offset"]
        return out


def _normal(answer: spec.Answer | None) -> spec.Answer | None:
    """Rows in one order on both sides."""
    return None if answer is None else spec.Answer(answer.request, answer.code, tuple(sorted(answer.rows, key=repr)),
                                                   answer.total)


test_offset_commit_machine = machine_test(OffsetCommitMachine, 100, 40)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 100, 40
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).
MUTANTS = {
    "remove_message_returns_max": (
        process_queue_module, "result = self.msg_tree.keys()[0]", "result = self.msg_tree.keys()[-1]",
        ("OFF-4", "OFF-5", "OFF-14"),
    ),
    "commit_past_unconsumed": (
        consume_service_module, "self.consumer.offset_store.update_offset(mq, offset, True)",
        "self.consumer.offset_store.update_offset(mq, pq.queue_offset_max + 1, True)", ("OFF-5", "OFF-4"),
    ),
    "persist_sends_next_offset": (
        offset_store_module, '"commitOffset": offset,\n', '"commitOffset": offset + 1,\n', ("OFF-8", "OFF-11"),
    ),
    "broker_keeps_higher_offset": (
        broker_offsets_module, "queues[queue_id] = offset", "queues[queue_id] = max(offset, previous or 0)",
        ("OFF-8", "OFF-7"),
    ),
    "shutdown_skips_persist": (
        push_consumer_module, "        self.consume_service.shutdown()\n        self.persist_offsets()\n",
        "        self.consume_service.shutdown()\n", ("OFF-8", "OFF-11", "OFF-24"),
    ),
    "broker_loses_table_on_load": (
        broker_offsets_module, "        self.table = loaded", "        self.table = {}", ("OFF-8", "OFF-22"),
    ),
    "local_persist_all_forgets_other_queues": (
        offset_store_module, "        stored = self._read_local() or {}\n", "        stored = {}\n", ("OFF-16",),
    ),
    "reset_keeps_the_memory_offset": (
        offset_store_module, "consumer.offset_store.update_offset(mq, offsets[mq], False)",
        "consumer.offset_store.update_offset(mq, offsets[mq], True)", ("OFF-26", "OFF-8", "OFF-5"),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(OffsetCommitMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    "consumer.messageModel": (
        push_consumer_module,
        "if self.config.message_model is MessageModel.BROADCASTING:\n            self.offset_store",
        "if False:\n            self.offset_store", ("OFF-16", "OFF-13", "OFF-8", "OFF-9", "OFF-11")),
    "consumer.consumeFromWhere": (
        rebalance_module, "if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:",
        "if where is None:", ("OFF-20", "OFF-13")),
    "consumer.consumeMessageBatchMaxSize": (
        consume_service_module, "size = self.config.consume_message_batch_max_size", "size = 1", ("OFF-4",)),
    "broker.flushDiskType": (
        flush_module, '        if self.mode != "sync":\n            return\n',
        '        if self.mode != "sync" or True:\n            return\n', ("OFF-22",)),
    "topology.brokers": (
        offset_store_module, "addr = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)",
        'addr = self.instance.find_broker_addr("broker-a", MASTER_ID)', ("OFF-13", "OFF-7", "OFF-8", "OFF-11")),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(OffsetCommitMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(OffsetCommitMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES,
                  steps=MUTANT_STEPS)
