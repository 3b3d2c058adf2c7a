"""The two sides of the rebalance lockstep machine (``tests/test_stateful_rebalance.py`` holds its rules).

``RebalanceSides`` builds the group from the drawn configuration, holds the implementation's periodic jobs (a timer's
job is run alone, to its end, one consumer at a time: one of the interleavings Java's threads allow; the spec's
rebalance is one step), translates what the implementation did into spec actions, and projects both sides.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st
from lockstep import LockstepMachine

from rocketspec.refimpl import Cluster, ConsumeOrderlyStatus, ConsumeStatus, TransactionState
from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.events import ConsumeResult, Event, PullRequestEvent, TxnCheck
from rocketspec.spec import rebalance as spec
from rocketspec.spec.protocol import MessageModel
from rocketspec.spec.queues import MessageQueue, sorted_queues
from rocketspec.spec.versions import DEFAULT_PROFILE

TOPIC = "T"
GROUP = "CG"
TXN_GROUP = "TPG"
MAX_CONSUMERS = 3
ROOMS = ("room0",)
UNBOUNDED = 10**9
CHUNK_MS = 500
# How long one held job may take at most (orderly removals wait up to 1 s per queue for the consume lock, an id
# list request that is lost times out after 3 s).
JOB_LIMIT_MS = 12_000
# How long an orderly consumer's listener takes (simulated): a batch then holds the consume lock while a rebalance
# removes its queue (REB-14), and the removal waits for it (under CONSUME_LOCK_WAIT_MS). Over it the
# removal gives up and keeps the queue dropped; the spec does not model what follows then (the held pull's empty
# answer writes its next offset for the dropped queue, correctTagsOffset, and the later removal persists it).
ORDERLY_CONSUME_MS = 400
EXPRESSIONS = ("*", "A || B")
# The parts of the projection, each named with the clauses that decide it.
TABLES = "process-queue tables: offset, dropped (REB-10, REB-11, REB-12, REB-13, REB-14)"
FLAGS = "lock flags (REB-15, REB-16, REB-17, REB-19, REB-24)"
HOLDERS = "broker lock holders (REB-12, REB-17, REB-19, REB-23, REB-24, REB-27)"
REGISTERED = "registered ids (REB-2, REB-20, REB-23)"
STORED = "stored offsets (REB-10, REB-25, REB-26)"
ROUTES = "route views (REB-8, REB-28)"
SIZES = "allocation sizes (REB-1, REB-3, REB-4, REB-5, REB-6, REB-7, REB-21)"
MESSAGES = "messages stored per queue: acknowledged sends, transactions committed by check-back (TXN-8, TXN-19)"


def label(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


def broker_names(count: int, strategy: str) -> list[str]:
    """``broker-a``, ...; MACHINE_ROOM: ``room0@broker-a``, ``room1@broker-b``, ``room0@broker-c`` (REB-7)."""
    names = [f"broker-{chr(ord('a') + i)}" for i in range(count)]
    return [f"room{i % 2}@{n}" for i, n in enumerate(names)] if strategy == "MACHINE_ROOM" else names


@attrs.frozen
class Finish:
    """What one rebalance run did, noted when it finished: where in the log it is one step (``mark``: before the
    pulls of the queues it added), the queues it left dropped because a batch held the consume lock (``busy``),
    the removed queues that still cached messages (``cached``), and whether the topic's id list failed."""

    generation: int
    mark: int
    busy: frozenset[MessageQueue]
    cached: frozenset[MessageQueue]
    list_failed: bool


@attrs.define(eq=False)
class Member:
    """One consumer slot of the group."""

    cid: str
    consumer: PushConsumer
    instance: ClientInstance
    generation_done: int = 0
    in_rebalance: bool = False
    starts: dict[MessageQueue, int] = attrs.field(factory=dict)
    # The rebalance run under way: what it noted so far.
    cached: dict[MessageQueue, bool] = attrs.field(factory=dict)
    list_failed: bool = False
    dispatch_mark: int = -1
    dropped_before: frozenset[MessageQueue] = frozenset()
    finishes: list[Finish] = attrs.field(factory=list)

    def dropped(self) -> frozenset[MessageQueue]:
        table = self.consumer.rebalance.process_queue_table
        return frozenset(mq for mq, pq in table.items() if mq.topic == TOPIC and pq.dropped)


class RebalanceSides(LockstepMachine):
    """The group's two sides: building, holding jobs, observing, projecting (the rules are the subclass's)."""

    TABLE = spec.TRANSITIONS

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.members: dict[str, Member] = {}
        self.held: list[tuple[str, str]] = []  # (job, consumer id), in the order the timers fired
        # Observed events, with the offset they carry; ("ids", list) marks an id list a rebalance fetched. Entries
        # are numbered from ``log_base`` on (the ones before were stepped).
        self.log: list[tuple[Any, int | None]] = []
        self.log_base = 0
        self.setup_: spec.Setup | None = None
        self.consume_ms = 0
        self.expression = "*"
        self.post_subscription = False
        self.txn: Any = None
        self.sent: Counter[MessageQueue] = Counter()  # acknowledged messages per queue
        self.txn_pending: dict[str, MessageQueue] = {}  # half messages by unique key, with their real queue
        self.txn_checked: set[str] = set()
        self.write_queues = 0
        # Per broker: (readQueueNums, writeQueueNums, readable) of the topic now.
        self.topic_config: dict[str, tuple[int, int, bool]] = {}

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject | None) -> None:
        strategy = config["consumer.allocateMessageQueueStrategy"]
        read, write = config["topic.queueNums"]
        names = broker_names(config["topology.brokers"], strategy)
        self.cluster = Cluster(brokers=len(names), broker_names=names, clock="simulated", wire_codec="json",
                               seed=5, keep_events=False)
        self.cluster.events.subscribe(self._on_event)
        self.cluster.create_topic(TOPIC, read_queues=read, write_queues=write)
        self.producer = self.cluster.producer("PG")
        self.read_queues, self.write_queues = read, write
        self.topic_config = {n: (read, write, True) for n in names}
        queues = tuple(sorted_queues(MessageQueue(TOPIC, n, i) for n in names for i in range(read)))
        ids = tuple(ClientConfig(instance_name=f"{GROUP}-{i + 1}").client_id() for i in range(MAX_CONSUMERS))
        configured: tuple[tuple[int, ...], ...] = ()
        options: tuple[tuple[str, object], ...] = ()
        if strategy == "CONFIG":
            draw = (lambda: data.draw(st.sets(st.integers(0, len(queues) - 1)), label="CONFIG queues")) \
                if data is not None else (lambda: set(range(len(queues))))
            configured = tuple(tuple(sorted(draw())) for _ in ids)
        elif strategy == "MACHINE_ROOM":
            options = (("consumer_idcs", ROOMS),)
        self.consume_ms = ORDERLY_CONSUME_MS if config["consumer.orderly"] else 0
        if data is not None:
            # What is not configuration: the tag expression (every message is tagged A, so both select everything)
            # and whether pulls carry it (postSubscriptionWhenPull).
            self.expression = data.draw(st.sampled_from(EXPRESSIONS), label="expression")
            self.post_subscription = data.draw(st.booleans(), label="postSubscriptionWhenPull")
        model = config["consumer.messageModel"]
        self.setup_ = spec.Setup(
            topic=TOPIC, queues=queues, consumer_ids=ids, strategy=strategy, orderly=config["consumer.orderly"],
            messages=UNBOUNDED, loaded=len(queues), profile=DEFAULT_PROFILE, shrinking_route=False, flaps=UNBOUNDED,
            restarts=UNBOUNDED, options=options, message_model=model, configured=configured)
        self.begin(spec.initial_state(self.setup_))

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        self.cluster = None
        self.members.clear()

    def transaction_producer(self) -> Any:
        """The group's transactional producer, started on first use: every local transaction answers UNKNOW, every
        check-back COMMIT."""
        if self.txn is None:
            assert self.cluster is not None
            self.txn = self.cluster.transaction_producer(
                TXN_GROUP, executor=lambda msg, arg: TransactionState.UNKNOW,
                checker=lambda msg: TransactionState.COMMIT_MESSAGE)
        return self.txn

    # ------------------------------------------------------------------------------------------------ helpers
    @property
    def orderly(self) -> bool:
        return bool(self.config["consumer.orderly"])

    @property
    def clustering(self) -> bool:
        return self.config["consumer.messageModel"] is MessageModel.CLUSTERING

    def position(self, mq: MessageQueue) -> int | None:
        assert self.setup_ is not None
        try:
            return self.setup_.position(mq)
        except KeyError:
            return None

    def phase(self, cid: str) -> spec.Phase:
        return self.state.consumer(cid).phase

    def live(self) -> list[Member]:
        return [m for cid, m in self.members.items() if self.phase(cid) is spec.Phase.LIVE]

    def slot_of(self, slot: int) -> str:
        assert self.setup_ is not None
        return self.setup_.consumer_ids[slot % MAX_CONSUMERS]

    def live_slot(self, slot: int) -> str | None:
        cid = self.slot_of(slot)
        return cid if cid in self.members and self.phase(cid) is spec.Phase.LIVE else None

    def listener(self, msgs: list[Any], context: Any) -> Any:
        return ConsumeOrderlyStatus.SUCCESS if self.orderly else ConsumeStatus.CONSUME_SUCCESS

    # ------------------------------------------------------------------------------------------------ observing
    def _on_event(self, event: Event) -> None:
        """Consumption and pull commits, in the order they happen (stepped at the next reconciliation); check-backs
        of the transactional producer's half messages."""
        if isinstance(event, TxnCheck):
            # A check while no producer of the group is connected reaches nobody (TXN-19).
            if event.group == TXN_GROUP and event.action == "check" and event.msg_id in self.txn_pending \
                    and self.txn is not None:
                self.txn_checked.add(event.msg_id)
            return
        if not isinstance(event, (ConsumeResult, PullRequestEvent)) or event.group != GROUP or event.topic != TOPIC:
            return
        member = self.members.get(event.node)
        if member is None:
            return
        mq = MessageQueue(TOPIC, event.broker, event.queue_id)
        if isinstance(event, ConsumeResult):
            pq = member.consumer.rebalance.process_queue_table.get(mq)
            if pq is None or pq.dropped:
                return  # a batch that ran on while its queue was removed: it commits nothing (REB-14, REB-16)
            kind = spec.BatchConsumed if self.orderly else spec.MessageConsumed
            self.log.append((kind(event.node, mq), event.offset))
        elif event.commit_offset is not None:
            self.log.append((spec.OffsetCommitted(event.node, mq), event.commit_offset))

    def mark(self) -> int:
        """The log position now (counted over the whole run)."""
        return self.log_base + len(self.log)

    def replay_log(self, upto: int | None = None) -> None:
        """Step the logged events (up to log position ``upto``)."""
        cut = len(self.log) if upto is None else max(0, min(len(self.log), upto - self.log_base))
        log, self.log = self.log[:cut], self.log[cut:]
        self.log_base += cut
        for action, offset in log:
            if isinstance(action, tuple):
                self._registrations(action[1])
                continue
            entry = self.state.consumer(action.consumer).table[self.setup_.position(action.queue)] \
                if self.setup_ is not None and self.position(action.queue) is not None else None
            if entry is not None and offset is not None and entry.offset != offset:
                clauses = "REB-25" if isinstance(action, spec.OffsetCommitted) else "REB-10/REB-12/REB-13"
                self.fail(f"{clauses}: {action!r} at offset {offset}; the spec's in-memory offset is {entry.offset}")
            self.observe(action)

    def _registrations(self, listed: list[str] | None) -> None:
        """The id list a broker answered: clients it lists that the spec does not have registered again, clients
        it no longer lists were dropped."""
        if listed is None:
            return
        ids = frozenset(listed)
        for cid in sorted(self.state.registered - ids):
            if self.can(spec.ClientEvicted(cid)):
                self.observe(spec.ClientEvicted(cid), "the brokers dropped it")
        for cid in sorted(ids - self.state.registered):
            if cid in self.members and self.can(spec.HeartbeatSent(cid)):
                self.observe(spec.HeartbeatSent(cid), "a heartbeat registered it again")

    def registered_by_broker(self) -> list[frozenset[str]]:
        assert self.cluster is not None
        out = []
        for broker in self.cluster.brokers.values():
            info = broker.consumers.get(GROUP)
            out.append(frozenset(info.client_ids()) if info is not None else frozenset())
        return out

    def impl_holder(self, mq: MessageQueue) -> str | None:
        assert self.cluster is not None
        broker = self.cluster.brokers.get(mq.broker_name)
        return broker.locks.holder(GROUP, mq) if broker is not None else None

    def _impl_view(self, member: Member) -> frozenset[int] | None:
        view = member.consumer.rebalance.topic_subscribe_info.get(TOPIC)
        if view is None:
            return None
        positions = {self.position(mq) for mq in view}
        return frozenset(p for p in positions if p is not None) if None not in positions else None

    def reconcile(self) -> None:
        """Step the spec with what the implementation did since the last reconciliation: the logged events, then
        the changes only its tables show (ids at the brokers, route views, pulls that lapsed, expired broker
        locks)."""
        self.replay_log()
        state = self.state
        by_broker = self.registered_by_broker()
        union = frozenset().union(*by_broker)
        common = frozenset.intersection(*by_broker) if by_broker else frozenset()
        for cid in sorted(state.registered - union):
            if self.can(spec.ClientEvicted(cid)):
                self.observe(spec.ClientEvicted(cid), "the brokers dropped it")
        for cid in sorted(common - self.state.registered):
            if cid in self.members and self.can(spec.HeartbeatSent(cid)):
                self.observe(spec.HeartbeatSent(cid), "a heartbeat registered it again")
        for member in self.live():
            view = self._impl_view(member)
            if view is not None and view != self.state.consumer(member.cid).route_view and view == self.state.route:
                self.observe(spec.RouteRefreshed(member.cid), "its route poll")
            for mq, pq in sorted(member.consumer.rebalance.process_queue_table.items()):
                if mq.topic == TOPIC and pq.dropped and pq.is_pull_expired() \
                        and self.can(spec.PullExpired(member.cid, mq)):
                    self.observe(spec.PullExpired(member.cid, mq), "dropped, not pulled for 120 s")
        assert self.setup_ is not None
        if self.orderly:
            for p, holder in enumerate(self.state.lock_holders):
                mq = self.setup_.queues[p]
                if holder is None or self.impl_holder(mq) is not None:
                    continue
                if p in self.state.consumer(holder).pending_unlocks:
                    continue  # its delayed unlock is logged when it is sent
                if self.can(spec.BrokerLockReleased(mq)):
                    self.observe(spec.BrokerLockReleased(mq), "expired or unlocked")

    # ------------------------------------------------------------------------------------------------ holding jobs
    def hold(self, job: str, cid: str) -> None:
        if (job, cid) not in self.held:
            self.held.append((job, cid))

    def instrument(self, member: Member) -> None:
        """Hold the instance's periodic jobs (run one at a time by ``run_held``) and watch the id lists."""
        instance, cid = member.instance, member.cid
        instance.do_rebalance = functools.partial(self.hold, "rebalance", cid)  # type: ignore[method-assign]
        instance.persist_all_consumer_offsets = functools.partial(self.hold, "persist", cid)  # type: ignore[method-assign]
        instance.update_all_topic_routes = functools.partial(self.hold, "routes", cid)  # type: ignore[method-assign]
        instance._heartbeat_tick = functools.partial(self.hold, "heartbeat", cid)  # type: ignore[method-assign]
        fetch = instance.find_consumer_id_list

        def find_consumer_id_list(topic: str, group: str) -> Any:
            future = fetch(topic, group)
            if topic == TOPIC:
                # The id list the allocation runs on: the registrations it shows are stepped before the rebalance
                # (a heartbeat of the retry topic's rebalance may have come in between, REB-20).
                def fetched(f: Any) -> None:
                    self.log.append((("ids", f.result()), None))
                    if f.result() is None and member.in_rebalance:
                        member.list_failed = True

                future.add_done_callback(fetched)
            return future

        instance.find_consumer_id_list = find_consumer_id_list  # type: ignore[method-assign]

    def instrument_rebalance(self, member: Member) -> None:
        """Hold lockAll; note what each rebalance run does (its removals' cached messages, where it is one step,
        the queues a running batch kept) and the delayed unlocks."""
        rb = member.consumer.rebalance
        original_lock_all, original_unlock_delay, original_unlock = rb.lock_all, rb._unlock_delay, rb.unlock
        original_dispatch = rb.dispatch_pull_requests
        rb.lock_all = functools.partial(self.hold, "lockall", member.cid)  # type: ignore[method-assign]
        member.consumer._lock_all = original_lock_all  # type: ignore[attr-defined]

        def unlock_delay(mq: MessageQueue, pq: Any) -> bool:
            member.cached[mq] = pq.has_temp_message()
            return bool(original_unlock_delay(mq, pq))

        def unlock(mq: MessageQueue, oneway: bool) -> None:
            # A delayed unlock whose consumer stopped meanwhile is not sent (the client is shut down).
            if not member.in_rebalance and member.consumer.alive() and mq.topic == TOPIC \
                    and self.position(mq) is not None:
                self.log.append((spec.UnlockArrived(member.cid, mq), None))
            original_unlock(mq, oneway)

        def dispatch(requests: list[Any]) -> None:
            for request in requests:
                member.starts[request.mq] = request.next_offset
            if member.in_rebalance and member.dispatch_mark < 0 and any(r.mq.topic == TOPIC for r in requests):
                # The rebalance is one spec step, taken before the new queues pull. (CONFIG hands its list to the
                # retry topic's pass too, which runs first and adds them, as AllocateMessageQueueByConfig does.)
                member.dispatch_mark = self.mark()
            original_dispatch(requests)

        rb._unlock_delay = unlock_delay  # type: ignore[method-assign]
        rb.unlock = unlock  # type: ignore[method-assign]
        rb.dispatch_pull_requests = dispatch  # type: ignore[method-assign]
        finished = member.consumer.rebalance_finished

        def rebalance_finished(generation: int) -> None:
            dropped = member.dropped()
            cached = frozenset(mq for mq, c in member.cached.items() if c and mq.topic == TOPIC)
            mark = member.dispatch_mark if member.dispatch_mark >= 0 else self.mark()
            member.finishes.append(Finish(generation, mark, dropped - member.dropped_before, cached,
                                          member.list_failed))
            member.cached, member.list_failed, member.dispatch_mark = {}, False, -1
            member.dropped_before = dropped
            member.generation_done = generation
            finished(generation)

        member.consumer.rebalance_finished = rebalance_finished  # type: ignore[method-assign]

    def advance_until(self, done: Callable[[], bool], limit_ms: int = JOB_LIMIT_MS) -> None:
        """Advance the clock until ``done()`` (1 ms at a time at first, then 10 ms), then 5 ms more."""
        assert self.cluster is not None
        spent = 0
        while not done() and spent < limit_ms:
            step = 1 if spent < 50 else 10
            self.cluster.advance(step)
            spent += step
        self.cluster.advance(5)

    def start_rebalance(self, member: Member) -> None:
        """Run the consumer's rebalance now (what its timer would do), noting where it starts."""
        member.in_rebalance = True
        member.finishes.clear()
        member.cached, member.list_failed, member.dispatch_mark = {}, False, -1
        member.dropped_before = member.dropped()
        ClientInstance.do_rebalance(member.instance)

    def run_rebalance(self, member: Member, runs: int = 1) -> None:
        """A held rebalance, to its end; ``runs`` 2: a second one is asked for while the first runs, and runs
        after it (``RebalanceService.wakeup``)."""
        rb = member.consumer.rebalance
        target = rb.generation + runs
        self.start_rebalance(member)
        for _ in range(runs - 1):
            ClientInstance.do_rebalance(member.instance)
        self.advance_until(lambda: member.generation_done >= target or not member.consumer.alive())
        member.in_rebalance = False
        if not member.consumer.alive():
            self.replay_log()
            return
        if len(member.finishes) < runs:
            self.fail(f"{member.cid}: {runs} rebalance(s) asked for, {len(member.finishes)} ran "
                      f"(a rebalance asked for while one runs runs after it)")
        for finish in member.finishes:
            self.replay_log(finish.mark)
            self.observe(spec.Rebalanced(
                member.cid, busy_only=finish.busy if self.orderly else None,
                cached_only=finish.cached if self.orderly and self.clustering else None,
                list_failed=finish.list_failed), f"its rebalance (run {finish.generation})")
        member.finishes.clear()
        self.replay_log()

    def run_held(self) -> None:
        """Run the held jobs one by one, each alone to its end, stepping the spec with what each did (nothing held:
        nothing to do; what happened meanwhile is stepped before the next job, or by ``settle``)."""
        if not self.held:
            return
        while self.held:
            self.reconcile()
            job, cid = self.held.pop(0)
            member = self.members[cid]
            if self.phase(cid) is not spec.Phase.LIVE or not member.consumer.alive():
                continue
            instance = member.instance
            if job in ("rebalance", "rebalance twice"):
                self.run_rebalance(member, 2 if job == "rebalance twice" else 1)
            elif job == "persist":
                ClientInstance.persist_all_consumer_offsets(instance)
                self.advance_until(lambda: False, 0)
                self.replay_log()
                if self.can(spec.OffsetsPersisted(cid)):
                    self.observe(spec.OffsetsPersisted(cid), "the 5 s persist")
            elif job == "routes":
                ClientInstance.update_all_topic_routes(instance)
                self.advance_until(lambda: False, 0)
            elif job == "heartbeat":
                ClientInstance._heartbeat_tick(instance)
                self.advance_until(lambda: False, 0)
            elif job == "lockall":
                member.consumer._lock_all()  # type: ignore[attr-defined]
                self.advance_until(lambda: False, 0)
                self.replay_log()
                if self.can(spec.LockRenewed(cid)):
                    self.observe(spec.LockRenewed(cid), "lockAll every 20 s")
        self.reconcile()

    def pass_time(self, ms: int, chunk_ms: int = CHUNK_MS) -> None:
        """Advance the clock by ``ms`` in chunks, each held job run alone at the end of the chunk it fired in."""
        assert self.cluster is not None
        left = ms
        while left > 0:
            chunk = min(chunk_ms, left)
            self.cluster.advance(chunk)
            left -= chunk
            self.run_held()

    def settle(self, ms: int = 30) -> None:
        """Let the implementation finish what the last rule started, its held jobs one by one."""
        assert self.cluster is not None
        self.cluster.advance(ms)
        for _ in range(20):
            self.run_held()
            self.cluster.advance(10)
            if not self.held:
                break
        self.reconcile()

    # ------------------------------------------------------------------------------------------------ projections
    def _labels(self, positions: frozenset[int] | set[int]) -> tuple[str, ...]:
        assert self.setup_ is not None
        return tuple(label(self.setup_.queues[p]) for p in sorted(positions))

    def _stored_queues(self) -> list[MessageQueue]:
        """The topic's queues, and those of other topics messages were sent to."""
        assert self.cluster is not None
        count = max(self.read_queues, self.write_queues)
        others = sorted(q for q in self.sent if q.topic != TOPIC and q.broker_name in self.cluster.brokers)
        return [MessageQueue(TOPIC, n, i) for n in sorted(self.cluster.brokers) for i in range(count)] + others

    def project_spec(self) -> dict[str, Any]:
        state, setup = self.state, self.setup_
        assert setup is not None
        live = [(cid, c) for cid, c in state.live() if cid in self.members]
        committed = Counter(self.txn_pending[key] for key in self.txn_checked)
        out: dict[str, Any] = {
            TABLES: {cid: {label(setup.queues[p]): (e.offset, e.dropped) for p, e in enumerate(c.table)
                           if e is not None} for cid, c in live},
            REGISTERED: sorted(state.registered),
            ROUTES: {cid: self._labels(c.route_view) for cid, c in live},
            SIZES: {cid: sum(1 for e in c.table if e is not None and not e.dropped) for cid, c in live},
            MESSAGES: {f"{q.topic}@{label(q)}": self.sent[q] + committed[q] for q in self._stored_queues()},
        }
        if self.orderly and self.clustering:
            out[FLAGS] = {cid: {label(setup.queues[p]): e.locked for p, e in enumerate(c.table) if e is not None}
                          for cid, c in live}
        if self.orderly:
            out[HOLDERS] = {label(q): state.lock_holders[p] for p, q in enumerate(setup.queues)}
        if self.clustering:
            out[STORED] = {label(q): state.stored_offsets[p] for p, q in enumerate(setup.queues)}
        else:
            out[STORED] = {cid: {label(q): state.local_offsets[setup.slot(cid)][p] for p, q in enumerate(setup.queues)}
                           for cid in sorted(self.members)}
        return out

    def project_system(self) -> dict[str, Any]:
        assert self.cluster is not None and self.setup_ is not None
        setup = self.setup_
        live = self.live()
        tables: dict[str, dict[str, tuple[int, bool]]] = {}
        flags: dict[str, dict[str, bool]] = {}
        for m in live:
            memory = m.consumer.offset_store.clone_offset_table()
            table = {mq: pq for mq, pq in m.consumer.rebalance.process_queue_table.items() if mq.topic == TOPIC}
            tables[m.cid] = {label(mq): (memory.get(mq, m.starts.get(mq, -1)), pq.dropped)
                             for mq, pq in sorted(table.items())}
            flags[m.cid] = {label(mq): pq.locked and not pq.is_lock_expired() for mq, pq in sorted(table.items())}
        by_broker = self.registered_by_broker()
        registered: Any = sorted(by_broker[0]) if len(set(by_broker)) == 1 else [sorted(b) for b in by_broker]
        views = {}
        for m in live:
            view = m.consumer.rebalance.topic_subscribe_info.get(TOPIC)
            views[m.cid] = tuple(label(q) for q in sorted_queues(view)) if view is not None else None
        brokers = self.cluster.brokers
        out: dict[str, Any] = {
            TABLES: tables,
            REGISTERED: registered,
            ROUTES: views,
            SIZES: {m.cid: sum(1 for mq, pq in m.consumer.rebalance.process_queue_table.items()
                                if mq.topic == TOPIC and not pq.dropped) for m in live},
            MESSAGES: {f"{q.topic}@{label(q)}": brokers[q.broker_name].store.max_offset(q.topic, q.queue_id)
                       for q in self._stored_queues()},
        }
        if self.orderly and self.clustering:
            out[FLAGS] = flags
        if self.orderly:
            out[HOLDERS] = {label(q): self.impl_holder(q) for q in setup.queues}
        if self.clustering:
            committed = self.cluster.committed_offsets(GROUP, TOPIC)
            out[STORED] = {label(q): committed.get(q, 0) for q in setup.queues}
        else:
            stored = {}
            for cid in sorted(self.members):
                local = self.members[cid].consumer.offset_store._read_local() or {}
                stored[cid] = {label(q): local.get(q, 0) for q in setup.queues}
            out[STORED] = stored
        return out
