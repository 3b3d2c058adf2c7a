"""Lockstep: the rebalance spec (REB-*) drives the reference implementation's consumer groups.

Each run draws its configuration (``tests/dimensions.py``): 1-3 brokers, the topic's read and write queue counts
(consumers allocate the read queues, REB-28), the allocation strategy (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, CONFIG
with a drawn list per consumer, MACHINE_ROOM over brokers named ``room0@...``/``room1@...``), concurrent or orderly
consumption, clustering or broadcasting; and, not configuration, the tag expression and whether pulls carry it.
An orderly listener takes 400 ms (simulated), so a batch holds the consume lock while a rebalance removes its
queue, and the removal waits for it (REB-14).
The spec's ``GroupState`` starts from it and is stepped with every action:

- driven (the rules): a consumer starts, shuts down or crashes (REB-23; also while its rebalance waits for the
  broker), a broker restarts (REB-24), the topic's read queue count or read permission on a broker changes
  (``RouteChanged``, REB-28; no readable queue left: the strategy throws and nothing changes, REB-9);
- observed (the implementation's own doing, read from its events and tables): rebalances (REB-1..REB-15,
  REB-26, REB-27; one whose id list the broker fails to give changes nothing, REB-9; one asked for while another
  runs runs after it), the id list changing at the brokers (evictions of crashed or cut-off clients, heartbeats that
  register again), route refreshes, the periodic offset persist, lockAll, delayed unlocks, broker locks that expire,
  dropped queues whose pulls lapse (REB-11), each message consumed (its offset must be the spec's next one), and
  each pull's offset commit (REB-25).

The implementation's periodic work (rebalance, heartbeat, persist, route poll, lockAll) runs when its timers fire,
but the machine serializes it (``rebalance_lockstep.RebalanceSides``). After every rule both sides are projected
(each consumer's process-queue table with offsets, lock flags, the brokers' lock holders, the registered ids, the
stored offsets (broker or local store), route views, allocation sizes, and the messages stored per queue: what was
acknowledged, and what a transactional producer's check-back committed) and must agree.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import machine_test, variant_caught, variant_needs
from rebalance_lockstep import GROUP, MAX_CONSUMERS, ROOMS, TOPIC, Member, RebalanceSides

from rocketspec.refimpl import Message, MQClientError
from rocketspec.refimpl import route as route_module
from rocketspec.refimpl.client import allocate as allocate_module
from rocketspec.refimpl.client import rebalance as rebalance_module
from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.spec import rebalance as spec
from rocketspec.spec.protocol import (
    CLIENT_CHANNEL_EXPIRED_MS,
    CLIENT_SCAN_INTERVAL_MS,
    DEFAULT_PERM,
    PERM_WRITE,
    ConsumeFromWhere,
    MessageModel,
)
from rocketspec.spec.queues import MessageQueue

STOP_MOMENTS = ("idle", "rebalancing")
NEW_TOPIC = "T_NEW"


class RebalanceMachine(RebalanceSides):
    """A consumer group, configured as the run draws, stepped with the spec's group machine (REB-1..REB-28)."""

    DIMENSIONS = ("consumer.allocateMessageQueueStrategy", "consumer.orderly", "topic.queueNums", "topology.brokers",
                  "consumer.messageModel")
    # The strategies whose code is longest (MACHINE_ROOM, CONSISTENT_HASH) twice as likely: the ci run's sample of
    # 150 groups reaches each with several configurations.
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {"consumer.allocateMessageQueueStrategy": st.sampled_from(
        ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM", "CONSISTENT_HASH", "MACHINE_ROOM"))}
    DRIVEN = (spec.ConsumerStarted, spec.ConsumerShutdown, spec.ConsumerCrashed, spec.BrokerRestarted,
              spec.RouteChanged, spec.BrokerLeftRoute)
    OBSERVED = (spec.Rebalanced, spec.ClientEvicted, spec.HeartbeatSent, spec.RouteRefreshed, spec.OffsetsPersisted,
                spec.OffsetCommitted, spec.LockRenewed, spec.MessageConsumed, spec.BatchConsumed, spec.PullExpired,
                spec.LockLapsed, spec.BrokerLockReleased, spec.UnlockArrived)

    def setup(self, config: dict[str, Any], data: st.DataObject | None) -> None:
        super().setup(config, data)
        # The group starts with 1-3 consumers (more may join later).
        for _ in range(data.draw(st.integers(1, MAX_CONSUMERS), label="consumers at start") if data else 0):
            self.join()

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: self.spec is not None and any(
        c.phase is spec.Phase.NEW for c in self.state.consumers))
    @rule()
    def join(self) -> None:
        """A consumer starts: route, heartbeat (the brokers notify the group), rebalance (REB-20)."""
        assert self.cluster is not None and self.setup_ is not None
        slot = next(i for i, c in enumerate(self.state.consumers) if c.phase is spec.Phase.NEW)
        cid = self.setup_.consumer_ids[slot]
        self.drive(spec.ConsumerStarted(cid))
        config = ClientConfig(instance_name=f"{GROUP}-{slot + 1}")
        instance = ClientInstance(self.cluster.runtime, self.cluster.network, self.cluster.events,
                                  self.cluster.namesrv_addr, config.client_id(), config)
        strategy = self.setup_.strategy
        allocate_config: dict[str, Any] = {}
        if strategy == "CONFIG":
            allocate_config = {"queues": [self.setup_.queues[p] for p in self.setup_.configured[slot]]}
        elif strategy == "MACHINE_ROOM":
            allocate_config = {"consumer_idcs": list(ROOMS)}
        consumer_config = ConsumerConfig(
            group=GROUP, orderly=self.orderly, message_model=self.config["consumer.messageModel"],
            allocate_strategy=strategy, allocate_config=allocate_config,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, consume_duration_ms=self.consume_ms,
            post_subscription_when_pull=self.post_subscription)
        consumer = PushConsumer(instance, consumer_config, self.listener)
        consumer.subscribe(TOPIC, self.expression)
        member = Member(cid, consumer, instance)
        self.members[cid] = member
        self.instrument(member)
        self.cluster.runtime.submit(consumer.start)
        self.instrument_rebalance(member)
        self.settle()

    def _stop(self, slot: int, when: str, clean: bool) -> None:
        cid = self.live_slot(slot)
        if cid is None:
            return
        assert self.cluster is not None
        member = self.members[cid]
        # "rebalancing": its rebalance has asked a broker for the id list when it stops: the answer finds it stopped,
        # and nothing more runs (every step of rebalanceByTopic checks that the consumer still runs).
        if when == "rebalancing":
            self.start_rebalance(member)
        self.drive(spec.ConsumerShutdown(cid) if clean else spec.ConsumerCrashed(cid))
        if clean:
            member.consumer.shutdown()
        else:
            self.cluster.crash_client(member.consumer)
        member.in_rebalance = False
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1), when=st.sampled_from(STOP_MOMENTS))
    def leave(self, slot: int, when: str = "idle") -> None:
        """A clean shutdown: offsets persisted, orderly clustering locks released, unregistered (REB-23)."""
        self._stop(slot, when, clean=True)

    @precondition(lambda self: self.spec is not None)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1), when=st.sampled_from(STOP_MOMENTS))
    def crash(self, slot: int, when: str = "idle") -> None:
        """The process dies: nothing persisted or unlocked; its connections close, so the brokers drop it (REB-23)."""
        self._stop(slot, when, clean=False)

    @precondition(lambda self: self.spec is not None)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1), rebalance_first=st.booleans())
    def cut_off(self, slot: int, rebalance_first: bool) -> None:
        """Every connection of a consumer breaks: the brokers drop it and tell the group; its next heartbeat
        registers it again (REB-20). With ``rebalance_first`` its own rebalance fires before that heartbeat: on an
        id list without it, it owns nothing (REB-2)."""
        cid = self.live_slot(slot)
        if cid is None:
            return
        assert self.cluster is not None
        self.cluster.network.disconnect_client(self.members[cid].instance.remoting._endpoint)
        if rebalance_first:
            self.cluster.advance(10)
            self.hold("rebalance", cid)
        self.settle()

    @precondition(lambda self: self.spec is not None and self.clustering)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1), lost=st.booleans())
    def id_list_fails(self, slot: int, lost: bool) -> None:
        """The consumer's next rebalance gets no id list: the broker answers an error, or the request is lost and
        times out. The topic is skipped: nothing changes (REB-9)."""
        cid = self.live_slot(slot)
        if cid is None:
            return
        assert self.cluster is not None
        faults = self.cluster.faults
        rule_ = faults.drop("*", "GET_CONSUMER_LIST_BY_GROUP", client=cid, times=2) if lost else \
            faults.fail("*", "GET_CONSUMER_LIST_BY_GROUP", client=cid, times=2)
        self.hold("rebalance", cid)
        self.settle()
        faults.remove(rule_)

    @precondition(lambda self: self.spec is not None)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1))
    def rebalance_twice(self, slot: int) -> None:
        """A rebalance is asked for while the consumer's rebalance runs (a NOTIFY_CONSUMER_IDS_CHANGED): it runs
        again right after (``RebalanceService.wakeup``)."""
        cid = self.live_slot(slot)
        if cid is None:
            return
        self.hold("rebalance twice", cid)
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(broker=st.integers(0, 2))
    def restart_broker(self, broker: int) -> None:
        """A broker restarts: its lock table is gone (REB-24); the consumers heartbeat to it at once (the spec keeps
        the registrations, see ``BrokerRestarted``)."""
        assert self.cluster is not None
        names = sorted(self.cluster.brokers)
        name = names[broker % len(names)]
        action = spec.BrokerRestarted(name)
        if not self.can(action):
            return
        self.drive(action)
        self.cluster.restart_broker(name)
        for member in self.live():
            self.cluster.runtime.submit(member.instance.send_heartbeat_to_all_brokers)
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(broker=st.integers(0, 2), read=st.integers(0, 4))
    def resize(self, broker: int, read: int) -> None:
        """A broker's readQueueNums changes at the name server, or (``read`` 0) its queues become unreadable
        (REB-28); consumers see it at their route poll."""
        assert self.cluster is not None and self.setup_ is not None
        names = sorted(self.cluster.brokers)
        name = names[broker % len(names)]
        old_read, old_write, _readable = self.topic_config[name]
        readable = read > 0
        read = min(read, self.read_queues) if readable else old_read
        route = frozenset(p for p, q in enumerate(self.setup_.queues)
                          if (readable and q.queue_id < read if q.broker_name == name else p in self.state.route))
        if not self.can(spec.RouteChanged(route)):
            return
        self.drive(spec.RouteChanged(route))
        # The write count keeps its difference from the read count (equal counts stay equal).
        first_read, first_write = self.config["topic.queueNums"]
        write = max(1, read + first_write - first_read) if readable else old_write
        self.topic_config[name] = (read, write, readable)
        self.cluster.create_topic(TOPIC, read_queues=read, write_queues=write, brokers=[name],
                                  perm=DEFAULT_PERM if readable else PERM_WRITE)
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(count=st.integers(1, 6), oneway=st.integers(-1, 11))
    def send(self, count: int, oneway: int = -1) -> None:
        """Messages to the topic's write queues (round robin), so consumers have work and offsets move; with
        ``oneway`` >= 0 one more, oneway, to the write queue of that number (over the brokers)."""
        for i in range(count):
            try:
                result = self.producer.send(Message(TOPIC, f"m{i}".encode(), tags="A"))
            except MQClientError:
                continue  # a stale producer route: not this area's concern
            self.sent[result.queue] += 1
        if oneway >= 0:
            assert self.cluster is not None
            writable = [MessageQueue(TOPIC, name, i) for name in sorted(self.topic_config)
                        for i in range(self.topic_config[name][1])]
            mq = writable[oneway % len(writable)]
            try:
                self.producer.send_oneway(Message(TOPIC, b"oneway", tags="A"), queue=mq)
            except MQClientError:
                pass
            else:
                self.sent[mq] += 1
        self.settle()

    @precondition(lambda self: self.spec is not None and not any(q.topic == NEW_TOPIC for q in self.sent))
    @rule()
    def send_to_a_new_topic(self) -> None:
        """A message to a topic no broker has: the producer takes the default topic's route (its queue counts
        capped at defaultTopicQueueNums) and the broker creates the topic (autoCreateTopicEnable)."""
        try:
            result = self.producer.send(Message(NEW_TOPIC, b"new", tags="A"))
        except MQClientError:
            return
        self.sent[result.queue] += 1
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(count=st.integers(1, 2))
    def send_in_transaction(self, count: int) -> None:
        """Half messages whose local transaction answers UNKNOW: the broker's check pass asks the producer group
        (one of its connected producers, TXN-19), whose check-back commits them into the topic (TXN-8)."""
        producer = self.transaction_producer()
        for i in range(count):
            try:
                result = producer.send_in_transaction(Message(TOPIC, f"t{i}".encode(), tags="A"))
            except MQClientError:
                continue
            self.txn_pending[result.msg_id] = result.queue
        self.settle()

    @precondition(lambda self: self.spec is not None and self.txn is not None)
    @rule(clean=st.booleans())
    def transaction_producer_stops(self, clean: bool) -> None:
        """The transactional producer shuts down or crashes with half messages pending: the broker's checks find no
        producer of the group and commit nothing (TXN-19) until another one starts (the next
        ``send_in_transaction``), which answers them."""
        assert self.cluster is not None
        if clean:
            self.txn.shutdown()
        else:
            self.cluster.crash_client(self.txn)
        self.txn = None
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1))
    def heartbeats_lost(self, slot: int) -> None:
        """Every heartbeat of a consumer is lost for longer than a broker keeps a silent channel: the brokers' scan
        drops it and closes the connection (REB-20, REB-23); once its heartbeats get through it registers again."""
        cid = self.live_slot(slot)
        if cid is None:
            return
        assert self.cluster is not None
        lost = self.cluster.faults.drop("*", "HEART_BEAT", client=cid)
        self.pass_time(CLIENT_CHANNEL_EXPIRED_MS + 2 * CLIENT_SCAN_INTERVAL_MS, chunk_ms=2_000)
        self.cluster.faults.remove(lost)
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(failing=st.integers(-1, MAX_CONSUMERS - 1))
    def poll_routes(self, failing: int = -1) -> None:
        """Every consumer's route poll fires now (every 30 s otherwise); the requests of the consumer in slot
        ``failing`` are lost (they time out), so it keeps the route it has (REB-8, REB-28)."""
        assert self.cluster is not None
        cid = self.live_slot(failing) if failing >= 0 else None
        fault = self.cluster.faults.drop("*", "GET_ROUTEINFO_BY_TOPIC", client=cid) if cid is not None else None
        for member in self.live():
            self.hold("routes", member.cid)
        self.settle()
        if fault is not None:
            self.cluster.faults.remove(fault)

    @precondition(lambda self: self.spec is not None)
    @rule(slot=st.integers(0, MAX_CONSUMERS - 1))
    def notified_twice(self, slot: int) -> None:
        """Two NOTIFY_CONSUMER_IDS_CHANGED reach a consumer before its rebalance service wakes: one rebalance runs
        (``RebalanceService.wakeup``)."""
        cid = self.live_slot(slot)
        if cid is None:
            return
        instance = self.members[cid].instance
        assert self.cluster is not None
        self.cluster.runtime.submit(lambda: (instance.rebalance_immediately(), instance.rebalance_immediately()))
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule()
    def rebalance_round(self) -> None:
        """Every consumer's 20 s rebalance fires now."""
        for member in self.live():
            self.hold("rebalance", member.cid)
        self.settle()

    @precondition(lambda self: self.spec is not None)
    @rule(ms=st.sampled_from((1_000, 5_000, 21_000, 31_000, 61_000)))
    def time_passes(self, ms: int) -> None:
        """Time passes: persists (5 s), rebalances and lockAll (20 s), heartbeats and route polls (30 s), delayed
        unlocks (20 s), expired broker locks (60 s), the broker's transaction check (60 s); each held job runs alone
        when it fires."""
        self.pass_time(ms)
        self.settle(0)


test_rebalance_machine = machine_test(RebalanceMachine, 110, 40)


# ------------------------------------------------------------------------------------------------ scripted programs


def scripted(config: dict[str, Any], steps: list[tuple[str, dict[str, Any]]]) -> RebalanceMachine:
    """Run ``steps`` (rule name, arguments) on a machine configured with ``config``, comparing after each."""
    machine = RebalanceMachine()
    machine.config = config
    try:
        machine.setup(config, None)
        for name, args in steps:
            getattr(machine, name)(**args)
            machine.compare(name)
    finally:
        machine.teardown()
    return machine


BASE = {"consumer.allocateMessageQueueStrategy": "AVG", "consumer.orderly": False, "topic.queueNums": (2, 2),
        "topology.brokers": 2, "consumer.messageModel": MessageModel.CLUSTERING}


def test_scripted_orderly_group_changes() -> None:
    """Three orderly consumers: messages under locks (REB-16), a crash (its locks expire, REB-23), a cut-off
    (eviction, REB-2), fewer read queues (REB-28), a clean leave (its locks go at once), both brokers restarting
    under the locks (REB-24), lockAll taking them again (REB-17)."""
    machine = scripted({**BASE, "consumer.orderly": True}, [
        ("join", {}), ("join", {}), ("send", {"count": 6}), ("join", {}), ("send", {"count": 4}),
        ("time_passes", {"ms": 1_000}), ("crash", {"slot": 0}), ("send", {"count": 4}),
        ("time_passes", {"ms": 61_000}), ("cut_off", {"slot": 1, "rebalance_first": True}), ("send", {"count": 2}),
        ("time_passes", {"ms": 31_000}), ("resize", {"broker": 1, "read": 1}), ("poll_routes", {"failing": 0}),
        ("poll_routes", {}),
        ("send", {"count": 4}), ("restart_broker", {"broker": 0}), ("send", {"count": 4}),
        ("time_passes", {"ms": 21_000}), ("leave", {"slot": 2}), ("time_passes", {"ms": 21_000}),
    ])
    kinds = {type(t.action) for t in machine.spec.trail} if machine.spec is not None else set()
    assert {spec.BatchConsumed, spec.ClientEvicted, spec.BrokerLockReleased, spec.LockRenewed,
            spec.RouteRefreshed, spec.OffsetCommitted, spec.BrokerRestarted} <= kinds, kinds


def test_scripted_broadcasting_group() -> None:
    """Broadcasting (REB-8, REB-26): every consumer takes the whole route, offsets stay in its local store."""
    machine = scripted({**BASE, "consumer.messageModel": MessageModel.BROADCASTING, "topic.queueNums": (3, 2)}, [
        ("join", {}), ("join", {}), ("send", {"count": 6}), ("time_passes", {"ms": 21_000}),
        ("resize", {"broker": 0, "read": 1}), ("poll_routes", {}), ("send", {"count": 3}), ("leave", {"slot": 0}),
    ])
    assert machine.spec is not None and any(isinstance(t.action, spec.OffsetsPersisted) for t in machine.spec.trail)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 150, 30
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).
MUTANTS = {
    "avg_start_off_by_one": (
        allocate_module, "start = index * size if mod > 0 and index < mod else index * size + mod",
        "start = index * size if mod > 0 and index <= mod else index * size + mod", ("REB-3", "REB-10", "REB-12")),
    "consumer_outside_id_list_gets_queues": (
        allocate_module,
        "        if not _check(consumer_id, mq_all, cid_all):\n            return []\n        m, n = len(mq_all)",
        "        if not _check(consumer_id, mq_all, cid_all):\n            cid_all = sort_consumer_ids([*cid_all, "
        "consumer_id])\n        m, n = len(mq_all)", ("REB-2", "REB-10", "REB-12")),
    "unassigned_queue_kept": (
        rebalance_module, "            if mq not in mq_set:\n                drop = True",
        "            if mq not in mq_set:\n                drop = False", ("REB-10",)),
    "lock_all_skips_locked_queues": (
        rebalance_module,
        "            if addr is None or not mqs:\n                continue\n            request = RemotingCommand",
        "            mqs = {mq for mq in mqs if not self.process_queue_table[mq].locked}\n"
        "            if addr is None or not mqs:\n                continue\n            request = RemotingCommand",
        ("REB-17", "REB-16", "REB-24")),
    "orderly_removal_keeps_the_broker_lock": (
        rebalance_module, "        else:\n            self.unlock(mq, True)\n        return True",
        "        else:\n            pass\n        return True", ("REB-14", "REB-17")),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(RebalanceMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS: dict[str, tuple[Any, str, str, tuple[str, ...]]] = {
    "consumer.allocateMessageQueueStrategy": (
        allocate_module, "return [mq_all[j] for j in range(index, len(mq_all)) if j % n == index]",
        "return [mq_all[j] for j in range(index, len(mq_all)) if j % n == index][:1]", ("REB-4", "REB-21")),
    "consumer.orderly": (
        rebalance_module, "(self.lock(mq) if is_order else _resolved(True))",
        "(_resolved(True) if is_order else _resolved(True))", ("REB-12", "REB-17")),
    "topic.queueNums": (
        route_module, "if is_readable(qd.perm)\n        for i in range(qd.read_queue_nums)",
        "if is_readable(qd.perm)\n        for i in range(qd.write_queue_nums)", ("REB-28",)),
    "topology.brokers": (
        allocate_module, "    return sorted(set(queues))\n",
        "    return sorted(set(queues), key=lambda mq: (mq.topic, mq.queue_id))\n", ("REB-1", "REB-3")),
    "consumer.messageModel": (
        rebalance_module, "self._apply(topic, set(mq_set), set(mq_set), is_order, done)",
        "self._apply(topic, set(mq_set), set(sort_queues(mq_set)[:1]), is_order, done)", ("REB-8", "REB-12")),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(RebalanceMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(RebalanceMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)
