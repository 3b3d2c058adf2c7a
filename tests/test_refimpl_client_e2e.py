"""Producer, transaction producer and client instance end to end: name server + real brokers on a simulated runtime."""

from __future__ import annotations

import pytest

from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.client.config import ClientConfig, ProducerConfig
from rocketspec.refimpl.client.errors import MQBrokerError
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.producer import Producer
from rocketspec.refimpl.client.transaction import TransactionProducer
from rocketspec.refimpl.client.validators import select_by_hash
from rocketspec.refimpl.events import EventLog, SendAttempt, SendResultEvent, TxnEnd
from rocketspec.refimpl.message import Message, MessageExt, decode_stored_message
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import Network
from rocketspec.refimpl.runtime import RealRuntime, SimulatedRuntime
from rocketspec.spec.protocol import (
    SYSFLAG_COMPRESSED,
    TRANSACTION_CHECK_INTERVAL_MS,
    SendStatus,
    TransactionState,
)

NS = "127.0.0.1:9876"


class Cluster:
    """A name server and brokers ``broker-a``, ``broker-b``, … built by hand."""

    def __init__(self, brokers: int = 2, seed: int = 5, **broker_options) -> None:
        self.runtime = SimulatedRuntime(seed=seed)
        self.events = EventLog(self.runtime.now_ms)
        self.network = Network(self.runtime, self.events)
        self.namesrv = NameServer(self.runtime, self.network, self.events, NS)
        self.namesrv.start()
        self.brokers: dict[str, Broker] = {}
        for i in range(brokers):
            name = f"broker-{'abcd'[i]}"
            config = BrokerConfig(broker_name=name, addr=f"127.0.0.1:{10911 + 10 * i}", **broker_options)
            broker = Broker(config, self.runtime, self.network, self.events, NS)
            broker.start()
            self.brokers[name] = broker
        self.runtime.advance(10)
        self._n = 0

    def create_topic(self, topic: str, queues: int = 2) -> None:
        for broker in self.brokers.values():
            broker.create_topic(topic, queues, queues)
            broker.register_to_namesrv()
        self.runtime.advance(10)

    def producer(self, group: str = "PG", cls: type = Producer, *extra, **options) -> Producer:
        self._n += 1
        config = ClientConfig(instance_name=f"{group}-{self._n}")
        instance = ClientInstance(self.runtime, self.network, self.events, NS, config.client_id(), config)
        producer = cls(instance, ProducerConfig(group=group, **options), *extra)
        producer.start()
        return producer

    def stored(self, topic: str) -> list[MessageExt]:
        out = []
        for name, broker in self.brokers.items():
            store = broker.store
            for qid in store.queue_ids(topic):
                lo, hi = store.min_offset(topic, qid), store.max_offset(topic, qid)
                for _qo, offset, _size, _tags in store.queue_entries(topic, qid, lo, hi - lo):
                    raw = store.look_message_bytes(offset)
                    out.append(decode_stored_message(raw, 0, broker_name=name)[0])
        return out


def test_sync_send_is_stored_where_the_result_says() -> None:
    c = Cluster()
    c.create_topic("T")
    producer = c.producer()
    result = producer.send(Message("T", b"hello", tags="A", keys="k1"))
    assert result.status is SendStatus.SEND_OK
    [stored] = c.stored("T")
    assert (stored.msg_id, stored.offset_msg_id, stored.queue, stored.queue_offset) == (
        result.msg_id, result.offset_msg_id, result.queue, result.queue_offset)
    assert (stored.body, stored.tags, stored.keys) == (b"hello", "A", ("k1",))


def test_system_error_on_broker_a_is_retried_on_broker_b() -> None:
    c = Cluster()
    c.create_topic("T")
    producer = c.producer()
    c.network.faults.fail("broker-a", "SEND_MESSAGE_V2", code="SYSTEM_ERROR", times=1)
    results = [producer.send(Message("T", f"m{i}".encode())) for i in range(4)]
    assert all(r.status is SendStatus.SEND_OK for r in results)
    attempts = c.events.of(SendAttempt)
    assert len(attempts) == 5
    failed = [r for r in c.events.of(SendResultEvent) if r.status == "ERROR"]
    assert [(r.broker, r.code, r.final) for r in failed] == [("broker-a", 1, False)]
    retry = next(a for a in attempts if a.attempt == 2)
    assert retry.broker == "broker-b"
    assert sorted(m.body for m in c.stored("T")) == [b"m0", b"m1", b"m2", b"m3"]


def test_non_retryable_code_raises_and_nothing_is_stored() -> None:
    c = Cluster()
    c.create_topic("T")
    producer = c.producer()
    c.network.faults.fail("*", "SEND_MESSAGE_V2", code="MESSAGE_ILLEGAL", times=1)
    with pytest.raises(MQBrokerError):
        producer.send(Message("T", b"x"))
    assert c.stored("T") == []


def test_unknown_topic_is_created_through_the_default_topic() -> None:
    c = Cluster()
    producer = c.producer()
    result = producer.send(Message("Fresh", b"x"))
    assert result.status is SendStatus.SEND_OK and result.queue.queue_id < 4
    assert [m.body for m in c.stored("Fresh")] == [b"x"]
    c.runtime.advance(31_000)  # the broker registered the new topic; the periodic refresh gets its own route
    route = producer.instance.topic_route("Fresh")
    assert route is not None and [q.broker_name for q in route.queue_datas] == [result.queue.broker_name]


def test_compressed_body_is_stored_compressed_and_read_back() -> None:
    c = Cluster(brokers=1)
    c.create_topic("T")
    producer = c.producer()
    body = b"0123456789" * 600
    producer.send(Message("T", body))
    [stored] = c.stored("T")
    assert stored.sys_flag & SYSFLAG_COMPRESSED and stored.body == body


def test_batch_async_oneway_and_orderly_sends_land() -> None:
    c = Cluster()
    c.create_topic("T", queues=4)
    producer = c.producer()
    batch = producer.send_batch([Message("T", f"b{i}".encode()) for i in range(5)])
    assert batch.status is SendStatus.SEND_OK
    seen: list = []
    producer.send_async(Message("T", b"async"), lambda result, error: seen.append((result, error)))
    producer.send_oneway(Message("T", b"oneway"))
    ordered = [producer.send(Message("T", f"o{i}".encode()), selector=select_by_hash, arg="order-1")
               for i in range(3)]
    c.runtime.run_until_idle()
    assert seen and seen[0][1] is None and seen[0][0].status is SendStatus.SEND_OK
    assert len({r.queue for r in ordered}) == 1
    stored = c.stored("T")
    assert sorted(m.body for m in stored) == sorted(
        [f"b{i}".encode() for i in range(5)] + [b"async", b"oneway"] + [f"o{i}".encode() for i in range(3)])
    ids = batch.msg_id.split(",")
    assert [m.msg_id for m in sorted(stored, key=lambda m: m.queue_offset) if m.body.startswith(b"b")] == ids
    same_queue = sorted((m for m in stored if m.queue == ordered[0].queue and m.body.startswith(b"o")),
                        key=lambda m: m.queue_offset)
    assert [m.body for m in same_queue] == [b"o0", b"o1", b"o2"]


def test_latency_fault_tolerance_avoids_a_slow_broker() -> None:
    c = Cluster()
    c.create_topic("T")
    producer = c.producer(send_latency_fault_enable=True)
    c.network.faults.delay("broker-a", "SEND_MESSAGE_V2", ms=400)
    landed = [producer.send(Message("T", str(i).encode())).queue.broker_name for i in range(10)]
    first = landed.index("broker-a")
    assert set(landed[first + 1:]) == {"broker-b"}


def test_transactions_commit_rollback_and_check_back() -> None:
    c = Cluster(brokers=1)
    c.create_topic("T")
    decisions = {b"commit": TransactionState.COMMIT_MESSAGE, b"rollback": TransactionState.ROLLBACK_MESSAGE,
                 b"unknown": TransactionState.UNKNOW}
    checked: list = []

    def executor(msg, arg):
        return decisions[msg.body]

    def checker(msg):
        checked.append(msg.body)
        return TransactionState.COMMIT_MESSAGE

    producer = c.producer("TPG", TransactionProducer, executor, checker)
    results = {body: producer.send_in_transaction(Message("T", body)) for body in decisions}
    assert all(r.status is SendStatus.SEND_OK for r in results.values())
    c.runtime.advance(1_000)
    assert [m.body for m in c.stored("T")] == [b"commit"]
    c.runtime.advance(TRANSACTION_CHECK_INTERVAL_MS + 1_000)
    assert checked == [b"unknown"]
    c.runtime.advance(1_000)
    assert sorted(m.body for m in c.stored("T")) == [b"commit", b"unknown"]
    ends = c.events.of(TxnEnd)
    assert [(e.state, e.from_check) for e in ends if e.node == producer.client_id] == [
        ("COMMIT_MESSAGE", False), ("ROLLBACK_MESSAGE", False), ("UNKNOW", False), ("COMMIT_MESSAGE", True)]


def test_real_runtime_sync_and_async_sends() -> None:
    runtime = RealRuntime(seed=1)
    try:
        events = EventLog(runtime.now_ms)
        network = Network(runtime, events, latency_ms=0)
        namesrv = NameServer(runtime, network, events, NS)
        broker = Broker(BrokerConfig(broker_name="broker-a"), runtime, network, events, NS)

        def boot() -> None:
            namesrv.start()
            broker.start()
            broker.create_topic("T", 2, 2)
            broker.register_to_namesrv()

        runtime.submit(boot)
        config = ClientConfig(instance_name="real")
        instance = ClientInstance(runtime, network, events, NS, config.client_id(), config)
        producer = Producer(instance, ProducerConfig(group="PG"))
        producer.start()
        results = [producer.send(Message("T", str(i).encode())) for i in range(5)]
        assert all(r.status is SendStatus.SEND_OK for r in results)
        future = producer.send_async(Message("T", b"async"))
        assert runtime.wait(future, 5_000).status is SendStatus.SEND_OK
        producer.shutdown()
        runtime.submit(broker.shutdown)
        runtime.submit(namesrv.shutdown)
    finally:
        runtime.close()


class _Consumer:
    """The smallest registered consumer: what the instance calls, recorded."""

    def __init__(self, group: str, topic: str) -> None:
        self.group = group
        self.topic = topic
        self.queues: set = set()
        self.rebalances = 0

    def heartbeat_data(self) -> dict:
        return {"groupName": self.group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
                "subscriptionDataSet": [{"classFilterMode": False, "topic": self.topic, "subString": "*",
                                         "tagsSet": [], "codeSet": [], "subVersion": 1, "expressionType": "TAG"}]}

    def subscribed_topics(self) -> set[str]:
        return {self.topic}

    def on_route(self, topic, queues) -> None:
        if topic == self.topic:
            self.queues = set(queues)

    def do_rebalance(self) -> None:
        self.rebalances += 1

    def persist_offsets(self) -> None:
        pass


def test_heartbeat_registers_consumers_and_the_broker_notifies_changes() -> None:
    c = Cluster()
    c.create_topic("T")
    instances: list = []
    notified = []
    for i in range(2):
        config = ClientConfig(instance_name=f"C-{i}")
        instance = ClientInstance(c.runtime, c.network, c.events, NS, config.client_id(), config)
        consumer = _Consumer("CG", "T")
        instance.register_consumer("CG", consumer)
        instance.start()
        c.runtime.wait(instance.update_topic_route("T"))
        before = instances[0][1].rebalances if instances else 0
        c.runtime.wait(instance.send_heartbeat_to_all_brokers())
        c.runtime.advance(10)
        if instances:
            notified.append(instances[0][1].rebalances - before)
        instances.append((instance, consumer))
    first, consumer = instances[0]
    assert len(consumer.queues) == 4
    ids = c.runtime.wait(first.find_consumer_ids("T", "CG"))
    assert sorted(ids) == sorted(i.client_id for i, _ in instances)
    assert notified == [1]  # NOTIFY_CONSUMER_IDS_CHANGED when the second consumer joined: one rebalance soon
    second, _ = instances[1]
    second.unregister_consumer("CG")
    second.shutdown()
    c.runtime.run_until_idle()
    assert c.runtime.wait(first.find_consumer_ids("T", "CG")) == [first.client_id]


# ------------------------------------------------------------------------------------------------ client namespace
# ClientConfig.namespace: brokers see ns%Topic and ns%Group, the user the plain names (NamespaceUtil, SEND-25, SEND-26).


def test_namespace_producer_stores_under_the_wrapped_topic_and_reports_the_plain_one() -> None:
    from rocketspec.refimpl import Cluster as RealCluster
    from rocketspec.spec.protocol import Property

    with RealCluster(brokers=1, clock="simulated", keep_events=True) as cluster:
        cluster.create_topic("ns%Topic", read_queues=2, write_queues=2)
        producer = cluster.producer("PG", namespace="ns")
        assert producer.group == "ns%PG"
        assert "ns%PG" in producer.instance.producers
        assert {q.topic for q in producer.fetch_publish_queues("Topic")} == {"Topic"}
        msg = Message("Topic", b"hello")
        result = producer.send(msg)
        assert result.queue.topic == "Topic" and msg.topic == "Topic"
        async_result = cluster.runtime.wait(producer.send_async(Message("Topic", b"async")))
        assert async_result.queue.topic == "Topic"
        stored = cluster.messages("ns%Topic")
        assert sorted(m.body for m in stored) == [b"async", b"hello"]
        assert {m.properties.get(Property.INSTANCE_ID) for m in stored} == {"ns"}
        assert not cluster.messages("Topic")
        attempts = [e for e in cluster.events_of(SendAttempt) if e.node == producer.client_id]
        assert {e.topic for e in attempts} == {"ns%Topic"} and {e.group for e in attempts} == {"ns%PG"}


def test_namespace_checks_see_the_wrapped_topic_and_system_topics_stay_plain() -> None:
    from rocketspec.refimpl import Cluster as RealCluster
    from rocketspec.refimpl.client.errors import MQClientError

    with RealCluster(brokers=1, clock="simulated") as cluster:
        producer = cluster.producer("PG", namespace="ns")
        blank = Message("Topic", b"x")
        blank.topic = " "
        with pytest.raises(MQClientError, match=r"topic\[ns% \] contains illegal characters"):
            producer.send(blank)
        assert blank.topic == "ns% "  # refused before any attempt: the message keeps the wrapped topic
        with pytest.raises(MQClientError, match=r"longer than topic max length"):
            producer.send(Message("a" * 125, b"x"))  # 125 units plain, 128 wrapped
        with pytest.raises(MQClientError, match=r"topic\[SCHEDULE_TOPIC_XXXX\] is forbidden"):
            producer.send(Message("SCHEDULE_TOPIC_XXXX", b"x"))


def test_namespace_consumer_group_retry_topic_and_listener_view() -> None:
    from rocketspec.refimpl import Cluster as RealCluster
    from rocketspec.spec.protocol import ConsumeStatus, Property

    with RealCluster(brokers=1, clock="simulated", seed=2) as cluster:
        cluster.create_topic("ns%Topic", read_queues=1, write_queues=1)
        producer = cluster.producer("PG", namespace="ns")
        seen: list[tuple[str, int, str | None]] = []

        def fail_once(msgs: list) -> ConsumeStatus:
            seen.extend((m.topic, m.reconsume_times, m.properties.get(Property.RETRY_TOPIC)) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER if msgs[0].reconsume_times < 1 else ConsumeStatus.CONSUME_SUCCESS

        consumer = cluster.push_consumer("CG", "Topic", fail_once, namespace="ns")
        assert consumer.group == "ns%CG"
        assert set(consumer.rebalance.subscription_inner) == {"ns%Topic", "%RETRY%ns%CG"}
        cluster.advance(100)
        producer.send(Message("Topic", b"retry me"))
        cluster.run_until_idle()
        assert [(t, r) for t, r, _ in seen] == [("Topic", 0), ("Topic", 1)]
        assert seen[1][2] == "ns%Topic"  # the send-back keeps the wrapped origin topic
        retried = cluster.messages("%RETRY%ns%CG")
        assert [m.body for m in retried] == [b"retry me"]
        assert cluster.committed_offsets("ns%CG", "ns%Topic")


def test_namespace_lite_pull_consumer_sees_plain_topics() -> None:
    from rocketspec.refimpl import Cluster as RealCluster

    with RealCluster(brokers=1, clock="simulated") as cluster:
        cluster.create_topic("ns%Topic", read_queues=1, write_queues=1)
        producer = cluster.producer("PG", namespace="ns")
        consumer = cluster.lite_pull_consumer("LG", "Topic", namespace="ns",
                                              consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        assert consumer.group == "ns%LG"
        producer.send(Message("Topic", b"pulled"))
        got: list = []
        for _ in range(20):
            got += consumer.poll(1_000)
            if got:
                break
        assert [(m.topic, m.body) for m in got] == [("Topic", b"pulled")]
