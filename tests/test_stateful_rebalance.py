"""The rebalance spec (REB-*) as the model of the reference implementation's consumer groups (issue 4).

The system under test is a simulated ``Cluster`` (1-2 brokers, topic ``T`` with 1-4 queues per broker) and the push
consumers of one clustering group, built from the refimpl's own classes. Each program draws the allocation strategy
(AVG, AVG_BY_CIRCLE, CONSISTENT_HASH) and the consume mode (concurrent or orderly) once; its rules are the group's
protocol events: consumers join, leave cleanly, crash, are cut off from a broker (the broker evicts them, a later
heartbeat registers them again), messages are sent, the topic gets more or fewer queues, a broker restarts (its
locks and registrations gone, REB-24), and time passes (rebalance every 20 s, NOTIFY_CONSUMER_IDS_CHANGED on a
membership change, lock renewal, lock expiry).

The implementation's rebalance runs asynchronously and at its own times, so the machine does not step the spec's
``GroupState`` in lockstep; it checks every observed transition against the spec's oracles and invariants instead:

* every allocation a consumer computes equals ``rebalance.allocate(strategy, id, queues, ids)`` for the queue list
  and id list it used (REB-1 to REB-5; a consumer missing from its list gets nothing, REB-2), and the
  ``RebalanceAssign`` event it emits reports exactly that (REB-9);
* a consumer whose last finished rebalance ran on the views that hold now (the id list every broker has is exactly
  the live consumers, and its cached route is the topic's route) owns no queue outside its allocation, and no two
  such consumers own one queue (REB-10, REB-12, REB-20: ``views_agree`` of the spec);
* after ``settle`` (90 s of quiet: a rebalance round with no membership change, broker locks of crashed consumers
  expired), views agree, every consumer's table equals its allocation, each queue has exactly one owner (REB-20)
  and AVG / AVG_BY_CIRCLE sizes differ by at most one (REB-21);
* orderly: a lock flag the client trusts (locked, younger than 30 s, not dropped) is backed by the broker's lock
  (REB-17, REB-18) unless the spec's REB-19 race took it, and a batch is handed to the listener only on a queue
  whose flag is trusted and whose broker lock the consumer holds (REB-16), unless a restart of the queue's broker
  since the lock was granted left the flag unbacked (REB-24); after ``settle`` every owner holds the broker lock
  of each queue it owns and trusts its flag again (lockAll, REB-17).

It also checks REB-23 on the spot: a clean leave unregisters and releases the locks of the queues in its table, a
crash releases none. The ci run covers concurrent and orderly groups separately; a scripted orderly program pins the
lock paths. The mutant tests at the end break the implementation (AVG start index, a consumer outside the id list,
a queue no longer allocated kept, orderly consumers adding a queue without the broker lock) and show that hypothesis
finds a failing program for each.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from mutation import refimpl_mutant
from stateful_support import hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, ConsumeStatus, Message, MQClientError
from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.client import allocate as allocate_module
from rocketspec.refimpl.client import rebalance as rebalance_module
from rocketspec.refimpl.client.allocate import make_strategy
from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.events import Event, RebalanceAssign
from rocketspec.spec import rebalance as reb
from rocketspec.spec.protocol import BROKER_LOCK_EXPIRY_MS, REBALANCE_INTERVAL_MS
from rocketspec.spec.queues import MessageQueue, sorted_ids, sorted_queues

TOPIC = "T"
GROUP = "CG"
# Long enough for a crashed holder's broker locks to expire and a rebalance round (20 s) to follow.
SETTLE_MS = BROKER_LOCK_EXPIRY_MS + REBALANCE_INTERVAL_MS + 10_000
STRATEGY_CLAUSES = {"AVG": "REB-3", "AVG_BY_CIRCLE": "REB-4", "CONSISTENT_HASH": "REB-5"}


def label(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


def labels(queues: Sequence[MessageQueue] | frozenset[MessageQueue]) -> tuple[str, ...]:
    return tuple(label(q) for q in sorted_queues(queues))


@attrs.define(eq=False)
class Allocation:
    """One call of a consumer's allocation strategy: its inputs, its answer (None: it threw) and the rebalance run."""

    consumer: str
    topic: str
    queues: tuple[MessageQueue, ...]
    ids: tuple[str, ...]
    result: frozenset[MessageQueue] | None
    generation: int


class RecordingStrategy:
    """The refimpl's own strategy object (``make_strategy``), with every call recorded for the machine."""

    def __init__(self, name: str, record: Callable[[Allocation], None]) -> None:
        self.inner = make_strategy(name)
        self.name = self.inner.name
        self._record = record
        self.consumer: PushConsumer | None = None

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        generation = self.consumer.rebalance.generation if self.consumer is not None else -1
        topic = queues[0].topic if queues else "?"
        try:
            result = self.inner.allocate(group, consumer_id, queues, consumer_ids)
        except Exception:
            self._record(Allocation(consumer_id, topic, tuple(queues), tuple(consumer_ids), None, generation))
            raise
        self._record(Allocation(consumer_id, topic, tuple(queues), tuple(consumer_ids), frozenset(result),
                                generation))
        return result


@attrs.define(eq=False)
class Member:
    """One consumer of the group, by slot: ``live``, ``left`` (clean shutdown) or ``crashed``."""

    slot: int
    cid: str
    consumer: PushConsumer
    state: str = "live"
    finished: int = 0  # the last rebalance run (generation) that finished

    def __repr__(self) -> str:
        return f"<consumer {self.slot} {self.cid} {self.state}>"


def new_push_consumer(cluster: Cluster, name: str, group: str, subscriptions: dict[str, str], listener: Any,
                      **options: Any) -> PushConsumer:
    """A push consumer on its own client instance, not started yet (``Cluster.push_consumer`` without the start),
    so the machine can watch it from its first rebalance on."""
    config = ClientConfig(instance_name=name)
    instance = ClientInstance(cluster.runtime, cluster.network, cluster.events, cluster.namesrv_addr,
                              f"{config.client_ip}@{config.instance_name}", config)
    consumer = PushConsumer(instance, ConsumerConfig(group=group, **options), listener)
    for topic, expression in subscriptions.items():
        consumer.subscribe(topic, expression)
    return consumer


class RebalanceMachine(RuleBasedStateMachine):
    """A clustering group of push consumers under membership changes, route changes and time (REB-*)."""

    STRATEGIES: tuple[str, ...] = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
    ORDERLY: tuple[bool, ...] = (False, True)
    MAX_CONSUMERS = 4

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.strategy = "AVG"
        self.orderly = False
        self.members: list[Member] = []
        self.violations: list[str] = []
        self.allocations: dict[tuple[str, str], Allocation] = {}
        self.tick = itertools.count()
        # Broker lock history (REB-19): the last grant and the last unlock per (client id, queue), as ticks.
        self.grants: dict[tuple[str, MessageQueue], int] = {}
        self.unlocks: dict[tuple[str, MessageQueue], int] = {}
        # The last restart per broker, as a tick: it drops every lock granted before it (REB-24).
        self.restarts: dict[str, int] = {}
        self.send_failures = 0
        self.checked = {"allocations": 0, "synced": 0, "settled": 0, "orderly batches": 0, "REB-19 races": 0,
                        "restarts": 0, "REB-24 unbacked": 0}

    # ------------------------------------------------------------------------------------------------ set-up
    @initialize(data=st.data(), brokers=st.integers(1, 2), queues=st.integers(1, 4), consumers=st.integers(1, 3),
                seed=st.integers(0, 255))
    def setup(self, data: st.DataObject, brokers: int, queues: int, consumers: int, seed: int) -> None:
        strategy = data.draw(st.sampled_from(type(self).STRATEGIES), label="strategy")
        orderly = data.draw(st.sampled_from(type(self).ORDERLY), label="orderly")
        self.configure(strategy, orderly, brokers, queues, consumers, seed)

    def configure(self, strategy: str, orderly: bool, brokers: int, queues: int, consumers: int, seed: int) -> None:
        """The cluster, the lock hooks, the topic, the producer and the first consumers."""
        self.strategy = strategy
        self.orderly = orderly
        self.cluster = Cluster(brokers=brokers, clock="simulated", wire_codec="json", seed=seed, keep_events=True)
        self.cluster.events.subscribe(self._on_event)
        for broker in self.cluster.brokers.values():
            self._watch_locks(broker)
        self.cluster.create_topic(TOPIC, queues=queues)
        self.producer = self.cluster.producer("PG")
        for _ in range(consumers):
            self.join()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        # Hypothesis may keep failing machines while it shrinks: let the cluster and its events go.
        self.cluster = None
        self.members.clear()
        self.allocations.clear()

    def _watch_locks(self, broker: Broker) -> None:
        """Record the broker's lock grants and unlock requests of the group (the REB-19 race needs the order)."""
        locks = broker.locks
        try_lock, unlock = locks.try_lock_batch, locks.unlock_batch

        def try_lock_batch(group: str, mqs: Any, client_id: str) -> set[MessageQueue]:
            locked = try_lock(group, mqs, client_id)
            if group == GROUP:
                for mq in locked:
                    self.grants[(client_id, mq)] = next(self.tick)
            return locked

        def unlock_batch(group: str, mqs: Any, client_id: str) -> None:
            mqs = list(mqs)
            if group == GROUP:
                for mq in mqs:
                    entry = locks.table.get(group, {}).get(mq)
                    if entry is not None and entry.client_id == client_id:  # the unlock frees this client's lock
                        self.unlocks[(client_id, mq)] = next(self.tick)
            unlock(group, mqs, client_id)

        locks.try_lock_batch = try_lock_batch  # type: ignore[method-assign]
        locks.unlock_batch = unlock_batch  # type: ignore[method-assign]

    # ------------------------------------------------------------------------------------------------ observation
    def _violation(self, text: str) -> None:
        self.violations.append(f"t={self.cluster.now_ms() if self.cluster else 0}: {text}")

    def _record_allocation(self, allocation: Allocation) -> None:
        """REB-1..REB-5, REB-2: an allocation equals the spec's for the lists the consumer used."""
        self.checked["allocations"] += 1
        self.allocations[(allocation.consumer, allocation.topic)] = allocation
        try:
            expected: frozenset[MessageQueue] | None = frozenset(
                reb.allocate(self.strategy, allocation.consumer, allocation.queues, allocation.ids))
        except ValueError:
            expected = None  # the strategy must throw (REB-2, REB-9)
        if allocation.result != expected:
            got = None if allocation.result is None else labels(allocation.result)
            want = None if expected is None else labels(expected)
            if allocation.consumer not in allocation.ids:
                clause = "REB-2"  # a consumer missing from the id list gets nothing
            else:
                clause = "REB-1/" + STRATEGY_CLAUSES[self.strategy]
            self._violation(
                f"{clause}: {allocation.consumer} allocated {got} from queues {labels(allocation.queues)} and ids "
                f"{allocation.ids} ({self.strategy}); the spec allocates {want}")

    def _on_event(self, event: Event) -> None:
        if isinstance(event, RebalanceAssign) and event.group == GROUP:
            allocation = self.allocations.get((event.node, event.topic))
            if allocation is None or allocation.result is None:
                self._violation(f"REB-9: {event.node} reported an assignment of {event.topic} without allocating")
            elif event.consumers != allocation.ids or event.queues != labels(allocation.result):
                self._violation(f"REB-9: {event.node} reported {event.queues} for ids {event.consumers}, but "
                                f"allocated {labels(allocation.result)} for ids {allocation.ids}")

    def _unbacked(self, cid: str, mq: MessageQueue) -> bool:
        """REB-19: an unlock of this client freed its broker lock after its last grant (a delayed unlock); REB-24:
        the queue's broker restarted after that grant."""
        granted = self.grants.get((cid, mq), -1)
        race = self.unlocks.get((cid, mq), -1) > granted
        restarted = self.restarts.get(mq.broker_name, -1) > granted
        self.checked["REB-19 races"] += race
        self.checked["REB-24 unbacked"] += restarted and not race
        return race or restarted

    def _on_consume(self, member: Member, msgs: list[Any], context: Any) -> None:
        """REB-16, REB-17, REB-18: an orderly batch starts on a trusted lock flag backed by the broker lock."""
        if not self.orderly or member.state != "live":
            return
        self.checked["orderly batches"] += 1
        mq = context.message_queue
        broker = self.cluster.brokers.get(mq.broker_name) if self.cluster else None
        holder = broker.locks.holder(GROUP, mq) if broker is not None else None
        if holder != member.cid and not self._unbacked(member.cid, mq):
            self._violation(f"REB-16/REB-17: {member.cid} consumes {label(mq)} while the broker lock is held by "
                            f"{holder}")
        pq = member.consumer.rebalance.process_queue_table.get(mq)
        if pq is None or pq.dropped or not pq.locked or pq.is_lock_expired():
            state = None if pq is None else (pq.dropped, pq.locked, pq.is_lock_expired())
            self._violation(f"REB-16: {member.cid} consumes {label(mq)} without a trusted lock flag "
                            f"(dropped, locked, expired) = {state}")

    # ------------------------------------------------------------------------------------------------ views
    def live(self) -> list[Member]:
        return [m for m in self.members if m.state == "live"]

    def route(self) -> frozenset[MessageQueue]:
        """The topic's queues as the brokers define them (the name server lists these once registered)."""
        assert self.cluster is not None
        out = set()
        for name, broker in self.cluster.brokers.items():
            config = broker.topics.get(TOPIC)
            if config is not None:
                out.update(MessageQueue(TOPIC, name, i) for i in range(config.read_queue_nums))
        return frozenset(out)

    def registered(self) -> frozenset[str] | None:
        """The ids every broker lists for the group, or None when the brokers disagree."""
        assert self.cluster is not None
        seen = set()
        for broker in self.cluster.brokers.values():
            info = broker.consumers.get(GROUP)
            seen.add(frozenset(info.client_ids()) if info is not None else frozenset())
        return next(iter(seen)) if len(seen) == 1 else None

    def faults_fired(self, cid: str) -> int:
        assert self.cluster is not None
        return sum(r.fired for r in self.cluster.faults.rules if r.client == cid)

    def locks_held_by(self, cid: str) -> frozenset[MessageQueue]:
        """The queues whose broker lock entry names ``cid`` (expired or not: the entry stays until taken over)."""
        assert self.cluster is not None
        return frozenset(mq for broker in self.cluster.brokers.values()
                         for mq, entry in broker.locks.table.get(GROUP, {}).items() if entry.client_id == cid)

    def table(self, member: Member, topic: str = TOPIC) -> frozenset[MessageQueue]:
        """The member's owned queues of ``topic``: process-queue table entries not dropped."""
        rb = member.consumer.rebalance
        return frozenset(mq for mq, pq in rb.process_queue_table.items() if mq.topic == topic and not pq.dropped)

    def synced(self, member: Member, registered: frozenset[str] | None, route: frozenset[MessageQueue]) -> bool:
        """The spec's ``synced`` ghost flag, read off the implementation: the member's last finished rebalance
        allocated ``T`` on the id list every broker has now (exactly the live consumers) and on the route that
        holds now, which its cache still has, and no later rebalance started."""
        allocation = self.allocations.get((member.cid, TOPIC))
        rb = member.consumer.rebalance
        live_ids = frozenset(m.cid for m in self.live())
        return (
            allocation is not None and allocation.result is not None
            and registered == live_ids and frozenset(allocation.ids) == live_ids
            and frozenset(allocation.queues) == route and rb.topic_subscribe_info.get(TOPIC) == set(route)
            and allocation.generation == member.finished == rb.generation
        )

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: len(self.members) < self.MAX_CONSUMERS)
    @rule()
    def join(self) -> None:
        """A consumer starts: route, heartbeat (registration, NOTIFY to the others), rebalance."""
        assert self.cluster is not None
        slot = len(self.members)
        recorder = RecordingStrategy(self.strategy, self._record_allocation)
        holder: list[Member] = []

        def listener(msgs: list[Any], context: Any) -> ConsumeStatus:
            if holder:
                self._on_consume(holder[0], msgs, context)
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = new_push_consumer(self.cluster, f"{GROUP}-{slot + 1}", GROUP, {TOPIC: "*"}, listener,
                                     allocate_strategy=recorder, orderly=self.orderly)
        recorder.consumer = consumer
        member = Member(slot, consumer.instance.client_id, consumer)
        holder.append(member)
        finished = consumer.rebalance_finished

        def rebalance_finished(generation: int) -> None:
            member.finished = generation
            finished(generation)

        consumer.rebalance_finished = rebalance_finished  # type: ignore[method-assign]
        self.members.append(member)
        self.cluster.runtime.submit(consumer.start)
        self.cluster.advance(10)

    @rule(slot=st.integers(0, MAX_CONSUMERS - 1))
    def leave(self, slot: int) -> None:
        """A clean shutdown: offsets persisted, orderly locks released, unregistered (REB-23)."""
        if slot < len(self.members) and self.members[slot].state == "live":
            member = self.members[slot]
            member.state = "left"
            fired = self.faults_fired(member.cid)
            tabled = frozenset(member.consumer.rebalance.process_queue_table)
            member.consumer.shutdown()
            self.cluster.advance(10)
            # unlockAll covers the table's queues; a lock request still in flight at the shutdown is granted after
            # it (the queue was not in the table yet), and a cut-off firing on the UNLOCK_BATCH_MQ loses it: those
            # locks expire instead.
            held = self.locks_held_by(member.cid) & tabled
            if self.orderly and held and self.faults_fired(member.cid) == fired:
                self._violation(f"REB-23: {member.cid} shut down but the brokers still hold its locks {labels(held)}")
            listed = [name for name, b in self.cluster.brokers.items()
                      if (info := b.consumers.get(GROUP)) is not None and member.cid in info.client_ids()]
            if listed:
                self._violation(f"REB-23: {member.cid} shut down but {listed} still list it")

    @rule(slot=st.integers(0, MAX_CONSUMERS - 1))
    def crash(self, slot: int) -> None:
        """The process dies: nothing persisted or unlocked; the brokers see its connections close (REB-23)."""
        if slot < len(self.members) and self.members[slot].state == "live":
            member = self.members[slot]
            member.state = "crashed"
            before = self.locks_held_by(member.cid)
            self.cluster.crash_client(member.consumer)
            self.cluster.advance(10)
            released = before - self.locks_held_by(member.cid)
            if released:
                self._violation(f"REB-23: {member.cid} crashed and the brokers released its locks {labels(released)}")

    @rule(slot=st.integers(0, MAX_CONSUMERS - 1), broker=st.integers(0, 1))
    def cut_off(self, slot: int, broker: int) -> None:
        """The consumer's next request to a broker breaks its connection: the broker evicts it (and tells the others)
        until a heartbeat registers it again; meanwhile its own rebalances may not find it in the list (REB-2)."""
        names = sorted(self.cluster.brokers)
        if slot < len(self.members) and self.members[slot].state == "live":
            self.cluster.faults.disconnect(names[broker % len(names)], client=self.members[slot].cid, times=1)

    @rule(broker=st.integers(0, 1))
    def restart_broker(self, broker: int) -> None:
        """A broker restarts cleanly: its lock table and registrations are gone (REB-24). Consumers register again
        by heartbeat and take their locks again by lockAll; until then their lock flags on its queues are
        unbacked, and orderly batches go on under them."""
        names = sorted(self.cluster.brokers)
        name = names[broker % len(names)]
        self.restarts[name] = next(self.tick)
        self._watch_locks(self.cluster.restart_broker(name))
        self.checked["restarts"] += 1
        if self.cluster.brokers[name].locks.table.get(GROUP):
            self._violation(f"REB-24: {name} restarted with locks {self.cluster.brokers[name].locks.table[GROUP]}")

    @rule(count=st.integers(1, 4))
    def send(self, count: int) -> None:
        """Messages to the topic (round robin), so consumers (orderly: under locks) have batches to run."""
        for i in range(count):
            try:
                self.producer.send(Message(TOPIC, f"m{i}".encode(), tags="A"))
            except MQClientError:
                self.send_failures += 1  # a stale producer route after a resize: not this area's concern

    @rule(queues=st.integers(1, 4))
    def resize(self, queues: int) -> None:
        """The topic gets another queue count on every broker: the route changes (REB-8, REB-12, REB-10)."""
        self.cluster.create_topic(TOPIC, queues=queues)

    @rule(ms=st.sampled_from((1_000, 5_000, REBALANCE_INTERVAL_MS, 30_000, BROKER_LOCK_EXPIRY_MS + 1_000)))
    def advance(self, ms: int) -> None:
        """Time passes: rebalances every 20 s, heartbeats every 30 s, lock renewal every 20 s, lock expiry."""
        self.cluster.advance(ms)

    @rule()
    def settle(self) -> None:
        """A quiet period, then the full agreement check (REB-20, REB-21)."""
        self.cluster.advance(SETTLE_MS)
        for _ in range(50):  # step past a rebalance still in flight at the end of the period
            route, registered = self.route(), self.registered()
            if all(self.synced(m, registered, route) for m in self.live()):
                break
            self.cluster.advance(5)
        self.check_agreement()

    def check_agreement(self) -> None:
        """After a quiet period: views agree, every table is the spec's allocation, one owner per queue (REB-20),
        AVG / AVG_BY_CIRCLE balanced (REB-21)."""
        live = self.live()
        if not live:
            return
        route, registered = self.route(), self.registered()
        live_ids = frozenset(m.cid for m in live)
        assert registered == live_ids, (
            f"after {SETTLE_MS} ms of quiet the brokers list {registered}, not the live consumers {sorted(live_ids)}")
        for m in live:
            assert self.synced(m, registered, route), (
                f"REB-20: {m.cid} did not rebalance on the agreed views (route {labels(route)}, ids "
                f"{sorted_ids(live_ids)}); last allocation {self.allocations.get((m.cid, TOPIC))}")
        expected = reb.assignment(self.strategy, route, live_ids) if route else {m.cid: [] for m in live}
        reports = {e.node: e for e in self.cluster.events_of(RebalanceAssign) if e.topic == TOPIC}
        owners: dict[MessageQueue, list[str]] = {}
        for m in live:
            owned = frozenset(m.consumer.assignment().get(TOPIC, set()))
            want = frozenset(expected[m.cid])
            assert owned == want, (
                f"REB-10/REB-12/REB-20: {m.cid} owns {labels(owned)}, the spec allocates {labels(want)} "
                f"({self.strategy}, ids {sorted_ids(live_ids)})")
            report = reports.get(m.cid)
            assert report is not None and report.queues == labels(want), (
                f"REB-9/REB-20: {m.cid} last reported {report}; the spec allocates {labels(want)}")
            for mq in owned:
                owners.setdefault(mq, []).append(m.cid)
                if self.orderly:  # lockAll ran during the quiet period, after any restart or lapse (REB-17, REB-24)
                    pq = m.consumer.rebalance.process_queue_table[mq]
                    holder = self.cluster.brokers[mq.broker_name].locks.holder(GROUP, mq)
                    assert holder == m.cid and pq.locked and not pq.is_lock_expired(), (
                        f"REB-17/REB-24: after the quiet period {m.cid} owns {label(mq)} with the broker lock held "
                        f"by {holder} and its flag (locked, expired) = {(pq.locked, pq.is_lock_expired())}")
        unowned = [label(q) for q in sorted_queues(route) if len(owners.get(q, ())) != 1]
        assert not unowned, f"REB-20: queues without exactly one owner once views agree: {unowned} ({owners})"
        if self.strategy in ("AVG", "AVG_BY_CIRCLE"):
            sizes = [len(self.table(m)) for m in live]
            assert max(sizes) - min(sizes) <= 1, f"REB-21: allocation sizes {sizes}"
        self.checked["settled"] += 1

    # ------------------------------------------------------------------------------------------------ invariants
    @invariant()
    def no_violation(self) -> None:
        """Every allocation, assignment report and orderly batch observed so far was one the spec allows."""
        assert not self.violations, "\n".join(self.violations[:5])

    @invariant()
    def synced_consumers_partition_their_allocations(self) -> None:
        """REB-10, REB-12, REB-20: consumers that rebalanced on the agreed views own only what they were allocated,
        and no queue twice."""
        if self.cluster is None:
            return
        route, registered = self.route(), self.registered()
        owners: dict[MessageQueue, str] = {}
        for m in self.live():
            if not self.synced(m, registered, route):
                continue
            self.checked["synced"] += 1
            owned = self.table(m)
            allocation = self.allocations[(m.cid, TOPIC)]
            assert allocation.result is not None
            extra = owned - allocation.result
            assert not extra, f"REB-10: {m.cid} still owns {labels(extra)}, allocated {labels(allocation.result)}"
            for mq in owned:
                assert mq not in owners, f"REB-20: {label(mq)} owned by {owners.get(mq)} and {m.cid}"
                owners[mq] = m.cid

    @invariant()
    def lock_flags_backed(self) -> None:
        """REB-14, REB-17, REB-18, REB-19: an orderly consumer's trusted lock flag has the broker lock behind it,
        unless a delayed unlock of its own freed it since (REB-19)."""
        if self.cluster is None or not self.orderly:
            return
        for m in self.live():
            for mq, pq in m.consumer.rebalance.process_queue_table.items():
                if pq.dropped or not pq.locked or pq.is_lock_expired():
                    continue
                broker = self.cluster.brokers.get(mq.broker_name)
                holder = broker.locks.holder(GROUP, mq) if broker is not None else None
                assert holder == m.cid or self._unbacked(m.cid, mq), (
                    f"REB-17/REB-18: {m.cid} trusts its lock on {label(mq)} but the broker lock is held by {holder}")


class ConcurrentMachine(RebalanceMachine):
    ORDERLY = (False,)


class OrderlyMachine(RebalanceMachine):
    ORDERLY = (True,)


@pytest.mark.parametrize("machine", [ConcurrentMachine, OrderlyMachine])
def test_rebalance_machine(machine: type[RebalanceMachine]) -> None:
    """The group machine, concurrent and orderly, in the active profile (ci: 15 programs of 30 steps each)."""
    run_state_machine_as_test(machine, settings=stateful_settings(15, 30))


def test_scripted_orderly_group_changes() -> None:
    """Three orderly consumers: a crash (its locks expire, REB-23), a clean leave (its locks go at once), a cut-off
    (eviction, REB-2), more queues (REB-12), messages under locks (REB-16), agreement (REB-20, REB-21), then both
    brokers restart under the locks and batches go on under unbacked flags until lockAll (REB-24)."""
    machine = OrderlyMachine()
    machine.configure("AVG", True, brokers=2, queues=2, consumers=3, seed=3)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("send", {"count": 4}), ("advance", {"ms": 1_000}), ("crash", {"slot": 0}), ("send", {"count": 4}),
        ("advance", {"ms": 30_000}), ("settle", {}), ("cut_off", {"slot": 1, "broker": 0}), ("send", {"count": 2}),
        ("advance", {"ms": 20_000}), ("join", {}), ("resize", {"queues": 3}), ("send", {"count": 4}),
        ("leave", {"slot": 2}), ("settle", {}), ("send", {"count": 4}), ("advance", {"ms": 5_000}),
        ("restart_broker", {"broker": 0}), ("send", {"count": 4}), ("advance", {"ms": 5_000}),
        ("restart_broker", {"broker": 1}), ("advance", {"ms": 1_000}), ("send", {"count": 4}), ("settle", {}),
    ]
    try:
        for name, args in steps:
            getattr(machine, name)(**args)
            machine.no_violation()
            machine.synced_consumers_partition_their_allocations()
            machine.lock_flags_backed()
    finally:
        machine.teardown()
    assert machine.checked["settled"] == 3 and machine.checked["orderly batches"] > 0
    assert machine.checked["restarts"] == 2 and machine.checked["REB-24 unbacked"] > 0


# ------------------------------------------------------------------------------------------------------------ mutants


class AvgMachine(RebalanceMachine):
    STRATEGIES = ("AVG",)
    ORDERLY = (False,)


def test_mutant_avg_start_off_by_one_is_caught() -> None:
    """AVG start index off by one for the consumers after the first m % n (REB-3)."""
    with refimpl_mutant(allocate_module, "start = index * size if mod > 0 and index < mod else index * size + mod",
                        "start = index * size if mod > 0 and index <= mod else index * size + mod"):
        failure = hypothesis_finds_failure(AvgMachine, 30, 20)
    assert "REB-3" in str(failure)


def test_mutant_consumer_outside_id_list_gets_queues_is_caught() -> None:
    """A consumer missing from the id list allocates as if it were listed (REB-2)."""
    old = "        if not _check(consumer_id, mq_all, cid_all):\n            return []\n        m, n = len(mq_all)"
    new = ("        if not _check(consumer_id, mq_all, cid_all):\n            cid_all = sort_consumer_ids([*cid_all, "
           "consumer_id])\n        m, n = len(mq_all)")
    with refimpl_mutant(allocate_module, old, new):
        failure = hypothesis_finds_failure(AvgMachine, 40, 25)
    assert "REB-2" in str(failure)


def test_mutant_unassigned_queue_kept_is_caught() -> None:
    """A queue no longer allocated is not dropped from the table (REB-10)."""
    with refimpl_mutant(rebalance_module, "            if mq not in mq_set:\n                drop = True",
                        "            if mq not in mq_set:\n                drop = False"):
        failure = hypothesis_finds_failure(RebalanceMachine, 30, 20)
    assert "REB-10" in str(failure) or "REB-20" in str(failure)


def test_mutant_orderly_adds_queue_without_lock_is_caught() -> None:
    """An orderly consumer adds an allocated queue without taking the broker lock (REB-12, REB-17)."""
    with refimpl_mutant(rebalance_module, "(self.lock(mq) if is_order else _resolved(True))",
                        "(_resolved(True) if is_order else _resolved(True))"):
        failure = hypothesis_finds_failure(OrderlyMachine, 30, 20)
    assert "REB-17" in str(failure) or "REB-16" in str(failure)


def test_mutant_lock_all_skipping_locked_queues_is_caught() -> None:
    """lockAll renews only the queues whose flag is down: held locks lapse, and after a restart are never taken
    again (REB-17, REB-24)."""
    old = "            if addr is None or not mqs:\n                continue\n            request = RemotingCommand"
    new = ("            mqs = {mq for mq in mqs if not self.process_queue_table[mq].locked}\n"
           "            if addr is None or not mqs:\n                continue\n            request = RemotingCommand")
    with refimpl_mutant(rebalance_module, old, new):
        failure = hypothesis_finds_failure(OrderlyMachine, 30, 20)
    assert "REB-17" in str(failure) or "REB-16" in str(failure)


def test_avg_machine_passes_on_the_real_implementation() -> None:
    """The AVG-only configuration two mutant tests use passes against the unbroken implementation."""
    run_state_machine_as_test(AvgMachine, settings=stateful_settings(8, 20))
