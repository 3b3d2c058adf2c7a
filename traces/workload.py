"""A seeded randomized workload on the simulated reference cluster: what ``rocketspec traces generate`` runs per shard.

One shard is one :class:`~rocketspec.refimpl.cluster.Cluster` on simulated time with its own seed, recorded as one
trace. :func:`run_shard` builds it from a :class:`ShardSpec`, runs :class:`Workload` steps until the trace holds about
the requested number of events, then settles it and ends the trace:

- **cluster**: 2-3 brokers, 2-3 topics of 4-8 queues on every broker, producer groups with different retry limits and
  latency fault settings, a transactional producer whose local transactions commit, roll back or stay unknown (then
  resolved by the broker's check-back; some never resolve and are discarded at ``transactionCheckMax``);
- **consumer groups**: 2-3 clustering groups (concurrent or orderly; AVG, AVG_BY_CIRCLE or CONSISTENT_HASH; ``*`` or a
  tag expression; listeners that answer RECONSUME_LATER at a group's own rate, some groups with a low
  maxReconsumeTimes so messages reach the DLQ), sometimes a broadcasting group; consumers join, shut down and crash
  (a group never drops below one live consumer). Every group consumes from the first offset, so a message is due to
  every group subscribed to its queue whenever the group started;
- **sends**: SYNC mostly (some delayed), ASYNC, ONEWAY, batches, orderly sends through a queue selector (SYNC or
  ONEWAY), transactional sends;
- **faults** by profile: ``none``; ``light``: occasional failed, dropped or delayed requests; ``heavy``: more of them,
  duplicated requests, disconnects, broker crash-restarts (brokers flush synchronously, so a crash loses no
  acknowledged message) and, in half of the shards, deletion of old data (consumers behind correct their offsets).

The workload keeps to schedules whose disturbances the invariant rules (``traces/invariants.py``) can attribute; each
of these is a behaviour RocketMQ has but the rules do not excuse, so it is avoided rather than recorded:

- after a membership change the workload lets every consumer rebalance (``CONVERGE_MS``) before sending on, and after
  a broker restart or a disconnect every client heartbeats at once (a restarted broker, or one that dropped a
  channel, knows the client only from its next heartbeat; meanwhile two consumers own a queue);
- no delayed UPDATE_CONSUMER_OFFSET or PULL_MESSAGE (a late commit overtaken by a newer one moves the offset back);
- a shard that deletes old data sends nothing through SCHEDULE_TOPIC_XXXX (no delayed sends, listeners that never
  fail): a message deleted there never reaches its topic, and only deletions of the message's own queue are excused.

Settling (``trace.end`` SETTLED): faults cleared, every group keeps a live consumer, then ``run_until_idle`` (nothing in
flight, every consumer caught up, delayed and transactional messages resolved). A run that does not settle within a
simulated day ends CUT.

Everything random comes from ``random.Random`` seeded by the shard's seed, and the cluster runs on the same seed, so
the same spec gives the same rows.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.events import BrokerRestart
from rocketspec.refimpl.message import Message, MessageExt
from rocketspec.refimpl.remoting import RemotingError
from rocketspec.refimpl.runtime import NotIdle, RuntimeTimeout
from rocketspec.spec.protocol import TransactionState
from rocketspec.spec.queues import MessageQueue
from rocketspec.traces.recording import TraceRecorder, record
from rocketspec.traces.schema import CUT, FAULT_PROFILES, SETTLED

_SEND_ERRORS = (MQClientError, MQBrokerError, RemotingError, RuntimeTimeout)
_TAGS = ("TagA", "TagB", "TagC", None)
_STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
#: Simulated time the workload lets pass after a membership change (consumers joining or leaving, heartbeats after a
#: broker restart): every consumer of the group rebalances before messages flow again. Two consumers may own a queue
#: until then (views disagree), and the rules attribute the duplicates that causes only to a disturbance after the
#: message was stored.
CONVERGE_MS = 1_000
#: Simulated time a run may take to settle.
SETTLE_LIMIT_MS = 86_400_000


@attrs.frozen
class Profile:
    """How often things go wrong, per workload step."""

    name: str
    fault_rate: float = 0.0  # chance a step adds a fault rule
    heavy_faults: bool = False  # duplicate, disconnect and response-drop faults too
    restart_rate: float = 0.0  # chance a step crash-restarts a broker
    delete_rate: float = 0.0  # chance a step deletes a broker's oldest data


_PROFILE_BY_NAME = {
    "none": Profile("none"),
    "light": Profile("light", fault_rate=0.02),
    "heavy": Profile("heavy", fault_rate=0.06, heavy_faults=True, restart_rate=0.004, delete_rate=0.003),
}


def profile(name: str) -> Profile:
    try:
        return _PROFILE_BY_NAME[name]
    except KeyError:
        raise ValueError(f"fault profile must be one of {', '.join(FAULT_PROFILES)}, not {name!r}") from None


@attrs.frozen
class ShardSpec:
    """One shard: trace ``trace_id`` of about ``events`` rows under ``out``, seeded by ``(seed, shard)``."""

    out: str
    seed: int
    shard: int
    events: int
    faults: str = "light"
    fmt: str = "parquet"

    @property
    def trace_id(self) -> str:
        return f"s{self.seed}-{self.shard}"

    @property
    def run_seed(self) -> int:
        # Distinct, stable seeds per (seed, shard); Python's hash() of strings is salted per process, so not that.
        return (self.seed * 1_000_003 + self.shard * 7_919 + 17) % (2**63)


@attrs.frozen
class ShardResult:
    trace_id: str
    events: int
    status: str  # SETTLED or CUT
    seconds: float
    steps: int


@attrs.define
class _Group:
    name: str
    topics: dict[str, str]  # topic -> expression
    orderly: bool
    broadcasting: bool
    strategy: str
    fail_rate: float
    max_reconsume_times: int
    consume_ms: int
    consumers: list[Any] = attrs.field(factory=list)


class Workload:
    """The randomized scenario of one shard (see the module docs); ``step()`` does one random thing."""

    def __init__(self, cluster: Cluster, rng: random.Random, prof: Profile) -> None:
        self.cluster = cluster
        self.rng = rng
        self.profile = prof
        self.topics: list[str] = []
        self.producers: list[Any] = []
        self.txn_producer: Any = None
        self.decisions: dict[bytes, TransactionState] = {}  # body -> the local transaction's final answer
        self.undecided: set[bytes] = set()
        self.groups: list[_Group] = []
        self.counter = 0
        self.steps = 0
        self.disconnects: list[Any] = []
        # A shard deletes old data only when nothing goes through SCHEDULE_TOPIC_XXXX (see the module docs): half of
        # the heavy shards; the others keep delayed sends and retries.
        self.deletes = bool(prof.delete_rate) and rng.random() < 0.5
        self.delays = not self.deletes

    # ------------------------------------------------------------------------------------------------- setup
    def setup(self) -> None:
        rng, cluster = self.rng, self.cluster
        for i in range(rng.randint(2, 3)):
            topic = f"Topic{i}"
            cluster.create_topic(topic, queues=rng.randint(4, 8))
            self.topics.append(topic)
        for i in range(rng.randint(1, 2)):
            self.producers.append(cluster.producer(
                f"PG{i}",
                retry_times_when_send_failed=rng.choice((0, 1, 2, 2, 3)),
                retry_times_when_send_async_failed=rng.choice((0, 1, 2, 2)),
                send_latency_fault_enable=rng.random() < 0.3,
            ))
        self.txn_producer = cluster.transaction_producer("TPG", self._execute, self._check)
        for i in range(rng.randint(2, 3)):
            subscribed = rng.sample(self.topics, rng.randint(1, min(2, len(self.topics))))
            orderly = rng.random() < 0.35
            low_max = rng.random() < 0.5
            self.groups.append(_Group(
                name=f"CG{i}",
                topics={t: rng.choice(("*", "*", "TagA || TagB")) for t in subscribed},
                orderly=orderly,
                broadcasting=False,
                strategy=rng.choice(_STRATEGIES),
                fail_rate=0.0 if self.deletes else rng.choice((0.0, 0.02, 0.05, 0.15)),
                max_reconsume_times=rng.choice((1, 2, 3)) if low_max else (16 if not orderly else 5),
                consume_ms=rng.choice((0, 0, 1, 5)),
            ))
        if rng.random() < 0.3:
            self.groups.append(_Group(name="BG", topics={rng.choice(self.topics): "*"}, orderly=False,
                                      broadcasting=True, strategy="AVG", fail_rate=0.0, max_reconsume_times=16,
                                      consume_ms=0))
        for group in self.groups:
            for _ in range(rng.randint(1, 3) if not group.broadcasting else 1):
                self._join(group)
        self.cluster.advance(CONVERGE_MS)

    # ------------------------------------------------------------------------------------------------- clients
    def _listener(self, group: _Group) -> Callable[[list[MessageExt]], str]:
        rng = self.rng
        ok, later = ("SUCCESS", "SUSPEND_CURRENT_QUEUE_A_MOMENT") if group.orderly else (
            "CONSUME_SUCCESS", "RECONSUME_LATER")

        def listener(msgs: list[MessageExt]) -> str:
            return later if group.fail_rate and rng.random() < group.fail_rate else ok

        return listener

    def _join(self, group: _Group) -> None:
        consumer = self.cluster.push_consumer(
            group.name, group.topics, self._listener(group),
            orderly=group.orderly,
            allocate_strategy=group.strategy,
            message_model="BROADCASTING" if group.broadcasting else "CLUSTERING",
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            max_reconsume_times=group.max_reconsume_times,
            consume_duration_ms=group.consume_ms,
        )
        group.consumers.append(consumer)

    def _leave(self, group: _Group, crash: bool) -> None:
        if len(group.consumers) <= 1:
            return
        consumer = group.consumers.pop(self.rng.randrange(len(group.consumers)))
        if crash:
            self.cluster.crash_client(consumer)
        else:
            consumer.shutdown()

    def _execute(self, msg: Message, arg: object) -> TransactionState:
        """The local transaction: decides commit (mostly) or rollback, and answers it, or unknown for now."""
        final = TransactionState.COMMIT_MESSAGE if self.rng.random() < 0.7 else TransactionState.ROLLBACK_MESSAGE
        self.decisions[msg.body] = final
        if self.rng.random() < 0.05:
            self.undecided.add(msg.body)  # never decided: the broker discards it at transactionCheckMax
        return final if self.rng.random() < 0.75 else TransactionState.UNKNOW

    def _check(self, msg: MessageExt) -> TransactionState:
        """The check-back: sometimes still unknown, else the local transaction's decision."""
        if msg.body in self.undecided or self.rng.random() < 0.3:
            return TransactionState.UNKNOW
        return self.decisions.get(msg.body, TransactionState.ROLLBACK_MESSAGE)

    # ------------------------------------------------------------------------------------------------- sends
    def _message(self, topic: str, *, delay: bool = False) -> Message:
        self.counter += 1
        msg = Message(topic, b"m%d" % self.counter, tags=self.rng.choice(_TAGS), keys=f"k{self.counter}")
        if delay:
            msg.delay_level = self.rng.randint(1, 3)
        return msg

    def _send(self) -> None:
        rng = self.rng
        producer = rng.choice(self.producers)
        topic = rng.choice(self.topics)
        kind = rng.random()
        try:
            if kind < 0.55:
                for _ in range(rng.randint(1, 8)):
                    producer.send(self._message(topic, delay=self.delays and rng.random() < 0.05))
            elif kind < 0.70:
                for _ in range(rng.randint(1, 8)):
                    producer.send_async(self._message(topic))
            elif kind < 0.76:
                producer.send_oneway(self._message(topic))
            elif kind < 0.84:
                producer.send_batch([self._message(topic) for _ in range(rng.randint(2, 5))])
            elif kind < 0.92:
                key = rng.randrange(1000)

                def select(queues: list[MessageQueue], _msg: Message, arg: object) -> MessageQueue:
                    return queues[int(arg) % len(queues)]  # type: ignore[call-overload]

                for _ in range(rng.randint(1, 4)):
                    if rng.random() < 0.8:
                        producer.send(self._message(topic), selector=select, arg=key)
                    else:
                        producer.send_oneway(self._message(topic), selector=select, arg=key)
            else:
                self.txn_producer.send_in_transaction(self._message(topic))
        except _SEND_ERRORS:
            pass  # a failed send is part of the run: the trace shows it

    # ------------------------------------------------------------------------------------------------- faults
    def _fault(self) -> None:
        rng, faults = self.rng, self.cluster.faults
        broker = rng.choice(self.cluster.broker_names or ["broker-a"])
        choice = rng.random()
        times = rng.randint(1, 3)
        if not self.profile.heavy_faults or choice < 0.5:
            pick = rng.randrange(5)
            if pick == 0:
                faults.fail(broker, "SEND_MESSAGE", code=rng.choice(("SYSTEM_ERROR", "SYSTEM_BUSY")), times=times)
            elif pick == 1:
                faults.drop(broker, "PULL_MESSAGE", times=times)
            elif pick == 2:
                faults.delay(broker, "SEND_MESSAGE", ms=rng.choice((20, 200, 1500)), times=times)
            elif pick == 3:
                faults.fail(broker, "PULL_MESSAGE", code="SYSTEM_ERROR", times=times)
            else:
                # Not UPDATE_CONSUMER_OFFSET or PULL_MESSAGE: a delayed commit overtaken by a later one moves the
                # offset back with the fault row before the value was last that low, which the offset rule does not
                # attribute (see the module docs).
                faults.delay(broker, "CONSUMER_SEND_MSG_BACK", ms=rng.choice((50, 500)), times=times)
            return
        pick = rng.randrange(8)
        if pick == 0:
            faults.duplicate(broker, "SEND_MESSAGE", times=times)
        elif pick == 1:
            faults.drop(broker, "SEND_MESSAGE", response=True, times=1)
        elif pick == 2:
            self.disconnects.append(
                faults.disconnect(broker, rng.choice(("PULL_MESSAGE", "SEND_MESSAGE", None)), times=1))
        elif pick == 3:
            faults.fail(broker, "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR", times=times)
        elif pick == 4:
            faults.duplicate(broker, rng.choice(("END_TRANSACTION", "CONSUMER_SEND_MSG_BACK")), times=1)
        elif pick == 5:
            faults.delay(broker, "SEND_MESSAGE", ms=3500, times=1)  # past the send timeout
        elif pick == 6:
            faults.drop(broker, rng.choice(("END_TRANSACTION", "UPDATE_CONSUMER_OFFSET")), times=times)
        else:
            faults.fail(broker, "PULL_MESSAGE", code="SYSTEM_ERROR", times=times, probability=0.5)

    def _restart(self) -> None:
        cluster, rng = self.cluster, self.rng
        name = rng.choice(cluster.broker_names)
        cluster.stop_broker(name, crash=True)
        cluster.advance(rng.choice((0, 100, 2000)))
        cluster.start_broker(name)
        cluster.runtime.submit(lambda: cluster.events.emit(BrokerRestart(node=name, broker=name, crashed=True)))
        # A restarted broker knows no client until its next heartbeat (every 30 s): a rebalance meanwhile sees only
        # part of its group, and two consumers own a queue until the others heartbeat (views disagree). The rules
        # attribute a duplicate to a disturbance between the message's store and the duplicate, not to such a
        # lingering overlap, so every live client heartbeats now (a heartbeat may come at any moment of the
        # interval: still a RocketMQ schedule), closing the window.
        self._heartbeat_all()

    def _heartbeat_all(self) -> None:
        live = [*self.producers, self.txn_producer, *(c for g in self.groups for c in g.consumers)]
        for client in live:
            self.cluster.runtime.submit(client.instance.send_heartbeat_to_all_brokers)
        self.cluster.advance(CONVERGE_MS)

    def _delete(self) -> None:
        self.cluster.delete_old_data(self.rng.choice(self.cluster.broker_names), 1)

    # ------------------------------------------------------------------------------------------------- steps
    def step(self) -> None:
        """One random action, then a little simulated time."""
        rng, prof = self.rng, self.profile
        self.steps += 1
        roll = rng.random()
        if roll < prof.fault_rate:
            self._fault()
        elif roll < prof.fault_rate + prof.restart_rate:
            self._restart()
        elif roll < prof.fault_rate + prof.restart_rate + prof.delete_rate:
            if self.deletes:
                self._delete()
        elif roll < 0.12:
            group = rng.choice([g for g in self.groups if not g.broadcasting])
            action = rng.random()
            if action < 0.45 and len(group.consumers) < 4:
                self._join(group)
            else:
                self._leave(group, crash=action > 0.75)
            self.cluster.advance(CONVERGE_MS)
        else:
            self._send()
        self.cluster.advance(rng.choice((1, 5, 20, 100)))
        if any(rule.fired for rule in self.disconnects):
            # The broker dropped the client's channel and with it its registration, so the group rebalances
            # without it while it keeps its queues until its next heartbeat: heartbeat now (see _restart).
            self.disconnects = [rule for rule in self.disconnects if not rule.fired]
            self.cluster.advance(20)  # the broker sees the channel close first, then the new registrations
            self._heartbeat_all()

    def settle(self) -> bool:
        """Clear faults, keep a live consumer per group, run until idle; False if it never gets idle."""
        self.cluster.faults.clear()
        for group in self.groups:
            if not group.consumers:
                self._join(group)
        try:
            self.cluster.run_until_idle(SETTLE_LIMIT_MS)
        except NotIdle:
            return False
        return True


def run_shard(spec: ShardSpec, progress: Callable[[int], None] | None = None,
              *, manifest: bool = False) -> ShardResult:
    """Run one shard and write its trace under ``spec.out``. ``progress(rows_so_far)`` is called now and then."""
    started = time.perf_counter()
    prof = profile(spec.faults)
    rng = random.Random(spec.run_seed)
    heavy = prof.name == "heavy"
    options: dict[str, Any] = {
        "transaction_check_max": rng.choice((2, 3, 15)),
        "transaction_check_interval_ms": rng.choice((10_000, 30_000, 60_000)),
    }
    if heavy:
        options["segment_bytes"] = rng.choice((16_384, 65_536))
    cluster = Cluster(rng.randint(2, 3), seed=spec.run_seed, keep_events=False, flush="sync" if heavy else "async",
                      **options)
    recorder: TraceRecorder = record(cluster, Path(spec.out), trace_id=spec.trace_id, fmt=spec.fmt,
                                     manifest=manifest)
    status = CUT
    workload = Workload(cluster, rng, prof)
    try:
        workload.setup()
        report_every = 20_000
        next_report = report_every
        while recorder.rows < spec.events:
            workload.step()
            if progress is not None and recorder.rows >= next_report:
                progress(recorder.rows)
                next_report = recorder.rows + report_every
        if workload.settle():
            status = SETTLED
        recorder.record_trace_end(status)
    finally:
        recorder.close()
        cluster.close()
    if progress is not None:
        progress(recorder.rows_written)
    return ShardResult(spec.trace_id, recorder.rows_written, status, time.perf_counter() - started, workload.steps)
