"""Producer, transaction producer and fault strategy of the reference implementation, against scripted brokers.

The brokers here are small scripted servers (they answer SEND with the codes a test queues up), so every retry and
status path of ``sendDefaultImpl`` can be driven exactly; tests/test_refimpl_client_e2e.py runs the same producer
against the real broker.
"""

from __future__ import annotations

import itertools
import json
import re
import zlib
from collections.abc import Callable

import pytest

from rocketspec.refimpl.client.config import ClientConfig, ProducerConfig
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError, RemotingTooMuchRequestError
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.latency import (
    LatencyFaultTolerance,
    MQFaultStrategy,
    RoundRobinIndex,
    TopicPublishInfo,
    int32,
    java_abs,
)
from rocketspec.refimpl.client.producer import Producer
from rocketspec.refimpl.client.transaction import TransactionProducer
from rocketspec.refimpl.client.validators import java_hash_code, select_by_hash
from rocketspec.refimpl.events import EventLog, RouteUpdate, SendAttempt, SendResultEvent, TxnEnd
from rocketspec.refimpl.message import (
    Message,
    decode_batch,
    decode_offset_message_id,
    decode_properties,
    encode_stored_message,
    offset_message_id,
)
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import Network, RemotingCommand, RemotingSendRequestError
from rocketspec.refimpl.route import BrokerData, DataVersion, QueueData, RegisterBrokerBody, TopicConfig, TopicRouteData
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    SEND_MESSAGE_V2_FIELDS,
    ClientErrorCode,
    RequestCode,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.queues import MessageQueue

NS = "127.0.0.1:9876"


class ScriptedBroker:
    """A broker that stores nothing: it answers SEND with queued codes (default SUCCESS) and records requests."""

    def __init__(self, world: World, name: str, index: int, topics: dict[str, int]) -> None:
        self.world = world
        self.name = name
        self.addr = f"127.0.0.1:{10911 + 10 * index}"
        self.topics = topics
        self.codes: list[int] = []
        self.sends: list[RemotingCommand] = []
        self.requests: list[RemotingCommand] = []
        self.channels: list = []
        self.offsets: dict[tuple[str, int], int] = {}
        self.commit_log = 0
        self.client = world.network.client(f"{name}-ns")
        world.network.listen(self.addr, name, self)
        self.register()

    def register(self) -> None:
        body = RegisterBrokerBody({t: TopicConfig(t, n, n, 6) for t, n in self.topics.items()},
                                  DataVersion(self.world.runtime.now_ms(), len(self.topics)), []).encode()
        self.world.runtime.wait(self.client.invoke(NS, RemotingCommand.request(RequestCode.REGISTER_BROKER, {
            "brokerName": self.name, "brokerAddr": self.addr, "clusterName": "DefaultCluster",
            "haServerAddr": self.addr, "brokerId": 0}, body), 3000))

    @staticmethod
    def header(request: RemotingCommand) -> dict[str, str]:
        if request.code == RequestCode.SEND_MESSAGE:
            return dict(request.ext_fields)
        return {SEND_MESSAGE_V2_FIELDS.get(k, k): v for k, v in request.ext_fields.items()}

    def handle(self, request: RemotingCommand, channel) -> RemotingCommand | None:
        self.requests.append(request)
        if channel not in self.channels:
            self.channels.append(channel)
        if request.code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            self.sends.append(request)
            code = self.codes.pop(0) if self.codes else ResponseCode.SUCCESS
            if code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE):
                return request.response(code, remark=f"scripted {code}")
            h = self.header(request)
            key = (h["topic"], int(h["queueId"]))
            offset = self.offsets.get(key, 0)
            self.offsets[key] = offset + 1
            self.commit_log += 100
            host, port = self.addr.split(":")
            return request.response(code, {"msgId": offset_message_id(host, int(port), self.commit_log),
                                           "queueId": key[1], "queueOffset": offset,
                                           "transactionId": decode_properties(h.get("properties", "")).get(
                                               "UNIQ_KEY"), "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
        if request.is_oneway:
            return None
        return request.response(ResponseCode.SUCCESS)

    def channel_closed(self, channel) -> None:
        pass

    def of_code(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]


class World:
    def __init__(self, brokers: int = 2, topics: dict[str, int] | None = None, seed: int = 3) -> None:
        self.runtime = SimulatedRuntime(seed=seed)
        self.events = EventLog(self.runtime.now_ms)
        self.network = Network(self.runtime, self.events)
        self.namesrv = NameServer(self.runtime, self.network, self.events, NS)
        self.namesrv.start()
        self.brokers = {f"broker-{'ab'[i]}": ScriptedBroker(self, f"broker-{'ab'[i]}", i, topics or {"T": 2})
                        for i in range(brokers)}
        self._n = 0

    def instance(self, name: str = "P", **options) -> ClientInstance:
        self._n += 1
        config = ClientConfig(instance_name=f"{name}-{self._n}", **options)
        return ClientInstance(self.runtime, self.network, self.events, NS, config.client_id(), config)

    def producer(self, group: str = "PG", cls: type = Producer, *extra, **options) -> Producer:
        producer = cls(self.instance(group), ProducerConfig(group=group, **options), *extra)
        producer.start()
        return producer

    def attempts(self) -> list[SendAttempt]:
        return self.events.of(SendAttempt)

    def results(self) -> list[SendResultEvent]:
        return self.events.of(SendResultEvent)


# ---------------------------------------------------------------------------------------------------------- sync sends


def test_sync_send_lands_with_v2_header_and_uniq_key() -> None:
    w = World()
    producer = w.producer()
    msg = Message("T", b"hello", tags="A", keys=["k1", "k2"])
    result = producer.send(msg)
    assert result.status is SendStatus.SEND_OK
    assert len(result.msg_id) == 32 and msg.properties["UNIQ_KEY"] == result.msg_id
    broker = w.brokers[result.queue.broker_name]
    request = broker.sends[-1]
    assert request.code == RequestCode.SEND_MESSAGE_V2
    assert set(request.ext_fields) == set("abcdefghijkmn")
    h = broker.header(request)
    assert (h["producerGroup"], h["topic"], h["defaultTopic"], h["defaultTopicQueueNums"]) == ("PG", "T", "TBW102",
                                                                                                "4")
    assert h["sysFlag"] == "0" and h["unitMode"] == "false" and h["batch"] == "false"
    assert h["brokerName"] == result.queue.broker_name and int(h["queueId"]) == result.queue.queue_id
    assert decode_properties(h["properties"]) == {"TAGS": "A", "KEYS": "k1 k2", "UNIQ_KEY": result.msg_id}
    assert decode_offset_message_id(result.offset_msg_id)[2] == broker.commit_log
    [attempt] = w.attempts()
    [res] = w.results()
    assert (attempt.attempt, attempt.mode, attempt.msg_id) == (1, "SYNC", result.msg_id)
    assert res.final and res.status == "SEND_OK" and res.offset == result.queue_offset
    assert w.events.of(RouteUpdate)


def test_send_with_long_header_names_when_v2_is_off() -> None:
    w = World()
    producer = w.producer(use_v2_header=False)
    result = producer.send(Message("T", b"x"))
    request = w.brokers[result.queue.broker_name].sends[-1]
    assert request.code == RequestCode.SEND_MESSAGE and request.ext_fields["topic"] == "T"


def test_round_robin_spreads_sends_over_all_queues() -> None:
    w = World()
    producer = w.producer()
    queues = [producer.send(Message("T", b"x")).queue for _ in range(8)]
    assert {(q.broker_name, q.queue_id) for q in queues} == {(b, i) for b in ("broker-a", "broker-b") for i in (0, 1)}
    # Consecutive sends take consecutive positions of the sorted queue list.
    order = [MessageQueue("T", b, i) for b in ("broker-a", "broker-b") for i in (0, 1)]
    positions = [order.index(q) for q in queues]
    assert all((b - a) % 4 == 1 for a, b in itertools.pairwise(positions))


def test_system_error_on_one_broker_is_retried_on_the_other() -> None:
    w = World()
    producer = w.producer()
    w.network.faults.fail("broker-a", "SEND_MESSAGE_V2", code="SYSTEM_ERROR")
    for i in range(6):
        result = producer.send(Message("T", f"m{i}".encode()))
        assert result.status is SendStatus.SEND_OK and result.queue.broker_name == "broker-b"
    attempts = w.attempts()
    retried = [a for a in attempts if a.attempt == 2]
    assert retried and all(a.broker == "broker-b" for a in retried)
    failed = [r for r in w.results() if r.status == "ERROR"]
    assert failed and all(r.code == ResponseCode.SYSTEM_ERROR and not r.final and r.broker == "broker-a"
                          for r in failed)


def test_one_fault_per_broker_gives_two_failed_attempts_then_success() -> None:
    w = World()
    producer = w.producer()
    for name in w.brokers:
        w.network.faults.fail(name, "SEND_MESSAGE_V2", code="SYSTEM_ERROR", times=1)
    result = producer.send(Message("T", b"x"))
    attempts = w.attempts()
    assert [a.attempt for a in attempts] == [1, 2, 3]
    assert attempts[0].broker != attempts[1].broker and attempts[2].broker == attempts[0].broker
    assert result.status is SendStatus.SEND_OK and result.queue.broker_name == attempts[2].broker
    assert [r.final for r in w.results()] == [False, False, True]


def test_non_retryable_broker_code_is_raised_after_one_attempt() -> None:
    w = World()
    producer = w.producer()
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="MESSAGE_ILLEGAL", times=1)
    with pytest.raises(MQBrokerError) as info:
        producer.send(Message("T", b"x"))
    assert info.value.code == ResponseCode.MESSAGE_ILLEGAL
    assert len(w.attempts()) == 1 and w.results()[0].final


def test_every_attempt_failing_raises_send_n_times_failed() -> None:
    w = World()
    producer = w.producer()
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="SYSTEM_BUSY")
    with pytest.raises(MQBrokerError):  # SYSTEM_BUSY (2) is not a retry code
        producer.send(Message("T", b"x"))
    w.network.faults.clear()
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="SERVICE_NOT_AVAILABLE")
    with pytest.raises(MQClientError) as info:
        producer.send(Message("T", b"y"))
    assert info.value.message.startswith("Send [3] times, still failed")
    assert info.value.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert isinstance(info.value.cause, MQBrokerError)
    brokers = [a.broker for a in w.attempts()[1:]]
    assert brokers[0] != brokers[1] and brokers[2] == brokers[0]


def test_exhausted_attempts_carry_the_code_of_their_last_error() -> None:
    """``DefaultMQProducerImpl.sendDefaultImpl``: the MQClientException's response code is the broker's code, or
    CONNECT_BROKER_EXCEPTION, ACCESS_BROKER_TIMEOUT, BROKER_NOT_EXIST_EXCEPTION by the last error's class, and -1
    (the constructor's default) for any other cause, such as a connection that broke while the request waited."""
    w = World()
    producer = w.producer()
    producer.send(Message("T", b"warm"))
    w.network.faults.disconnect("*", "SEND_MESSAGE_V2")
    with pytest.raises(MQClientError) as info:
        producer.send(Message("T", b"x"))
    assert info.value.message.startswith("Send [3] times, still failed")
    assert isinstance(info.value.cause, RemotingSendRequestError)
    assert info.value.code == -1
    w.network.faults.clear()
    w.network.faults.drop("*", "SEND_MESSAGE_V2")
    with pytest.raises(MQClientError) as info:
        producer.send(Message("T", b"y"), timeout_ms=9_000)
    assert info.value.code == ClientErrorCode.ACCESS_BROKER_TIMEOUT


def test_retry_response_codes_are_configurable() -> None:
    w = World()
    producer = w.producer(retry_response_codes={ResponseCode.SYSTEM_BUSY})
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="SYSTEM_BUSY", times=1)
    assert producer.send(Message("T", b"x")).status is SendStatus.SEND_OK
    assert len(w.attempts()) == 2


def test_timeout_budget_is_checked_before_each_attempt() -> None:
    w = World()
    producer = w.producer(send_msg_timeout_ms=1_000)
    w.network.faults.delay("namesrv", "GET_ROUTEINFO_BY_TOPIC", ms=600)  # the route lookup eats the budget
    with pytest.raises(RemotingTooMuchRequestError, match="sendDefaultImpl call timeout"):
        producer.send(Message("T", b"x"))
    assert not w.attempts()


def test_attempts_share_one_budget() -> None:
    w = World()
    producer = w.producer(send_msg_timeout_ms=1_000)
    producer.send(Message("T", b"warm"))
    w.network.faults.delay("*", "SEND_MESSAGE_V2", ms=600)
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="SYSTEM_ERROR")
    start = w.runtime.now_ms()
    with pytest.raises(MQClientError, match=r"Send \[3\] times, still failed, cost \[1000\]ms"):
        producer.send(Message("T", b"x"))
    # Attempt 1 fails after ~600 ms; attempt 2 gets the rest of the budget and times out at 1000 ms; attempt 3 starts
    # exactly at the budget (Java stops only when cost > timeout) with nothing left and times out at once.
    errors = [r.error for r in w.results()[1:]]
    assert "MQBrokerError" in errors[0] and "timeout 3" in errors[1] and "timeout 0 ms" in errors[2]
    assert w.runtime.now_ms() - start == 1_000


def test_not_store_ok_status_is_returned_or_retried_on_request() -> None:
    w = World()
    producer = w.producer()
    for b in w.brokers.values():
        b.codes = [ResponseCode.FLUSH_DISK_TIMEOUT] * 3
    result = producer.send(Message("T", b"x"))
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT and len(w.attempts()) == 1
    eager = w.producer("PG2", retry_another_broker_when_not_store_ok=True)
    result = eager.send(Message("T", b"y"))
    attempts = [a for a in w.attempts() if a.group == "PG2"]
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT and len(attempts) == 3
    assert attempts[0].broker != attempts[1].broker


def test_unknown_topic_is_sent_with_the_default_topic_route() -> None:
    w = World(topics={"T": 2, "TBW102": 8})
    producer = w.producer()
    result = producer.send(Message("NewTopic", b"x"))
    assert result.queue.topic == "NewTopic" and result.queue.queue_id < 4
    h = ScriptedBroker.header(w.brokers[result.queue.broker_name].sends[-1])
    assert (h["topic"], h["defaultTopic"], h["defaultTopicQueueNums"]) == ("NewTopic", "TBW102", "4")
    assert len(producer.publish_info["NewTopic"].queues) == 8  # 4 per broker, capped at defaultTopicQueueNums


def test_no_route_at_all_is_a_client_error() -> None:
    w = World(topics={"T": 2})
    producer = w.producer()
    with pytest.raises(MQClientError, match="No route info of this topic: Missing"):
        producer.send(Message("Missing", b"x"))
    assert not w.attempts()


def test_client_side_validation() -> None:
    w = World()
    producer = w.producer(max_message_size=10)
    for msg, text in [(Message("bad topic", b"x"), "illegal characters"), (Message("T", b""), "length is zero"),
                      (Message("T", b"x" * 11), "size over max value"),
                      (Message("SCHEDULE_TOPIC_XXXX", b"x"), "forbidden"), (Message("t" * 128, b"x"), "longer")]:
        with pytest.raises(MQClientError, match=text):
            producer.send(msg)
    with pytest.raises(MQClientError, match="not equal"):
        producer.send(Message("T", b"x"), queue=MessageQueue("U", "broker-a", 0))
    with pytest.raises(MQClientError):
        w.producer("DEFAULT_PRODUCER")
    with pytest.raises(MQClientError):
        Producer(producer.instance, ProducerConfig(group="PG")).start()  # same group on the same instance
    producer.shutdown()
    with pytest.raises(MQClientError, match="service state not OK"):
        producer.send(Message("T", b"x"))


# --------------------------------------------------------------------------------------------------- fault strategy


def test_latency_fault_tolerance_isolates_a_slow_broker() -> None:
    w = World()
    producer = w.producer(send_latency_fault_enable=True)
    w.network.faults.delay("broker-a", "SEND_MESSAGE_V2", ms=600)  # ~1.2 s round trip: 60 s not available
    landed = []
    for i in range(12):
        landed.append(producer.send(Message("T", str(i).encode())).queue.broker_name)
    first_a = landed.index("broker-a")
    assert set(landed[first_a + 1:]) == {"broker-b"}
    item = producer.fault_strategy.tolerance.items["broker-a"]
    assert item.current_latency >= 1_200
    w.network.faults.clear()
    w.runtime.advance(61_000)
    assert "broker-a" in {producer.send(Message("T", b"later")).queue.broker_name for _ in range(4)}


def test_without_fault_tolerance_nothing_is_recorded_and_slow_broker_keeps_its_turn() -> None:
    w = World()
    producer = w.producer()
    w.network.faults.delay("broker-a", "SEND_MESSAGE_V2", ms=600)
    landed = [producer.send(Message("T", str(i).encode())).queue.broker_name for i in range(8)]
    assert landed.count("broker-a") == 4 and not producer.fault_strategy.tolerance.items


def test_fault_strategy_pieces() -> None:
    runtime = SimulatedRuntime(seed=0)
    index = RoundRobinIndex(runtime.random, start=2**31 - 2)
    assert [index.next(), index.next(), index.next()] == [2**31 - 1, 0, 1]  # wraps, masked non-negative
    strategy = MQFaultStrategy(runtime, enabled=True)
    assert [strategy.not_available_duration_for(ms) for ms in (0, 49, 50, 100, 549, 550, 1000, 2000, 3000, 15000,
                                                               30000)] == [
        0, 0, 0, 0, 0, 30000, 60000, 120000, 180000, 600000, 600000]
    strategy.update_fault_item("broker-a", 10, isolation=True)  # a failed call counts as 30 s latency
    tolerance: LatencyFaultTolerance = strategy.tolerance
    assert not tolerance.is_available("broker-a") and tolerance.is_available("broker-b")
    runtime.advance(600_000)
    assert tolerance.is_available("broker-a")
    route = TopicRouteData([QueueData("broker-a", 2, 2, 6), QueueData("broker-b", 2, 2, 6)],
                           [BrokerData("c", "broker-a", {0: "a"}), BrokerData("c", "broker-b", {0: "b"})])
    info = TopicPublishInfo("T", route, runtime.random, have_route=True)
    info.index.value = 0
    strategy.update_fault_item("broker-a", 5_000, isolation=False)
    strategy.update_fault_item("broker-b", 3_000, isolation=False)
    # Both unavailable: the "least bad" item (fewer than 2 items → the first: lower latency) is taken.
    picked = strategy.select_one(info, None)
    assert picked.broker_name in ("broker-a", "broker-b") and picked.topic == "T"
    disabled = MQFaultStrategy(runtime, enabled=False)
    disabled.update_fault_item("broker-a", 5_000, isolation=True)
    assert not disabled.tolerance.items
    info.index.value = 0  # next → 1: queue (broker-a, 1); avoiding broker-a gives broker-b
    assert disabled.select_one(info, "broker-a").broker_name == "broker-b"


# ------------------------------------------------------------------------------------------------ async and oneway


def test_async_send_calls_back_and_resolves_the_future() -> None:
    w = World()
    producer = w.producer()
    seen: list = []
    future = producer.send_async(Message("T", b"a"), lambda result, error: seen.append((result, error)))
    w.runtime.run_until_idle()
    assert future.done() and future.result().status is SendStatus.SEND_OK
    assert seen == [(future.result(), None)]
    assert [a.mode for a in w.attempts()] == ["ASYNC"]


def test_async_transport_failure_is_retried_on_another_broker_with_the_same_queue_id() -> None:
    w = World()
    producer = w.producer()
    producer.send(Message("T", b"warm"))
    w.network.faults.disconnect("*", "SEND_MESSAGE_V2", times=1)
    future = producer.send_async(Message("T", b"a"), timeout_ms=3_000)
    w.runtime.run_until_idle()
    attempts = [a for a in w.attempts() if a.mode == "ASYNC"]
    assert len(attempts) == 2 and attempts[0].broker != attempts[1].broker
    assert attempts[0].queue_id == attempts[1].queue_id  # the request is resent unchanged
    result = future.result()
    assert result.queue.broker_name == attempts[1].broker
    errors = [r for r in w.results() if r.status == "ERROR"]
    assert len(errors) == 1 and "send request failed" in errors[0].error and not errors[0].final


def test_async_retries_after_a_timeout_have_no_time_left() -> None:
    w = World()
    producer = w.producer()
    producer.send(Message("T", b"warm"))
    w.network.faults.drop("*", "SEND_MESSAGE_V2", times=1)
    future = producer.send_async(Message("T", b"a"), timeout_ms=3_000)
    w.runtime.run_until_idle()
    attempts = [a for a in w.attempts() if a.mode == "ASYNC"]
    assert len(attempts) == 3  # 1 + retryTimesWhenSendAsyncFailed, the retries with 0 ms left
    assert isinstance(future.exception(), MQClientError) and "wait response timeout" in str(future.exception())
    assert [r.final for r in w.results()[1:]] == [False, False, True]


def test_async_broker_error_is_not_retried() -> None:
    w = World()
    producer = w.producer()
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="SYSTEM_ERROR", times=1)
    seen: list = []
    future = producer.send_async(Message("T", b"a"), lambda result, error: seen.append(error))
    w.runtime.run_until_idle()
    assert isinstance(future.exception(), MQBrokerError) and isinstance(seen[0], MQBrokerError)
    assert len(w.attempts()) == 1


def test_async_validation_errors_go_to_the_callback() -> None:
    w = World()
    producer = w.producer()
    seen: list = []
    producer.send_async(Message("T", b""), lambda result, error: seen.append(error))
    w.runtime.run_until_idle()
    assert isinstance(seen[0], MQClientError)


def test_oneway_send_is_written_once() -> None:
    w = World()
    producer = w.producer()
    producer.send_oneway(Message("T", b"o"))
    w.runtime.run_until_idle()
    sends = [r for b in w.brokers.values() for r in b.sends]
    assert len(sends) == 1 and sends[0].is_oneway
    assert [r.status for r in w.results()] == ["ONEWAY"]


# ------------------------------------------------------------------------------------------ selectors, batch, bodies


def test_orderly_sends_by_hash_keep_a_key_on_one_queue() -> None:
    w = World()
    producer = w.producer()
    by_key: dict[str, set] = {}
    for i in range(12):
        key = f"order-{i % 3}"
        result = producer.send(Message("T", str(i).encode()), selector=select_by_hash, arg=key)
        by_key.setdefault(key, set()).add(result.queue)
    assert all(len(queues) == 1 for queues in by_key.values())
    pick_last: Callable = lambda queues, msg, arg: queues[-1]  # noqa: E731
    assert producer.send(Message("T", b"x"), selector=pick_last).queue == MessageQueue("T", "broker-b", 1)
    with pytest.raises(MQClientError, match="select message queue threw exception"):
        producer.send(Message("T", b"x"), selector=lambda q, m, a: 1 / 0)
    assert select_by_hash([MessageQueue("T", "b", i) for i in range(3)], Message("T", b"x"), -7).queue_id == 1


def test_send_to_an_explicit_queue() -> None:
    w = World()
    producer = w.producer()
    mq = MessageQueue("T", "broker-b", 1)
    assert producer.send(Message("T", b"x"), queue=mq).queue == mq


def test_batch_send() -> None:
    w = World()
    producer = w.producer()
    msgs = [Message("T", f"b{i}".encode(), tags="t") for i in range(5)]
    result = producer.send_batch(msgs)
    assert result.status is SendStatus.SEND_OK
    ids = result.msg_id.split(",")
    assert ids == [m.properties["UNIQ_KEY"] for m in msgs] and len(set(ids)) == 5
    request = w.brokers[result.queue.broker_name].sends[-1]
    assert request.code == RequestCode.SEND_BATCH_MESSAGE and request.ext_fields["m"] == "true"
    assert decode_properties(request.ext_fields["i"]) == {"WAIT": "true"}
    entries = decode_batch(request.body)
    assert [e.body for e in entries] == [m.body for m in msgs]
    assert [e.properties["UNIQ_KEY"] for e in entries] == ids
    with pytest.raises(MQClientError, match="MessageBatch"):
        producer.send_batch([Message("T", b"x"), Message("U", b"y")])
    with pytest.raises(MQClientError, match="MessageBatch"):
        producer.send_batch([Message("T", b"x", delay_level=2)])


def test_large_bodies_are_compressed_small_ones_not() -> None:
    w = World()
    producer = w.producer()
    big = bytes(range(256)) * 20  # 5120 bytes >= 4096
    msg = Message("T", big)
    result = producer.send(msg)
    request = w.brokers[result.queue.broker_name].sends[-1]
    assert int(request.ext_fields["f"]) == 0x301  # COMPRESSED | ZLIB type (4.9.8)
    assert zlib.decompress(request.body) == big and msg.body == big
    small = producer.send(Message("T", b"x" * 4095))
    assert w.brokers[small.queue.broker_name].sends[-1].ext_fields["f"] == "0"


def test_retry_topic_headers_take_reconsume_properties() -> None:
    w = World(topics={"%RETRY%G": 1})
    producer = w.producer()
    msg = Message("%RETRY%G", b"x", properties={"RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16"})
    result = producer.send(msg)
    h = ScriptedBroker.header(w.brokers[result.queue.broker_name].sends[-1])
    assert h["reconsumeTimes"] == "3" and h["maxReconsumeTimes"] == "16"
    assert "RECONSUME_TIME" in decode_properties(h["properties"])
    assert "RECONSUME_TIME" not in msg.properties and "MAX_RECONSUME_TIMES" not in msg.properties


# ---------------------------------------------------------------------------------------------------- transactions


def txn_world(state: object, check_state: object = TransactionState.COMMIT_MESSAGE):
    w = World(brokers=1)
    calls: list = []

    def executor(msg, arg):
        calls.append(("exec", msg.body, arg))
        if isinstance(state, Exception):
            raise state
        return state

    def checker(msg):
        calls.append(("check", msg.body))
        if isinstance(check_state, Exception):
            raise check_state
        return check_state

    producer = w.producer("TPG", TransactionProducer, executor, checker)
    return w, producer, calls


@pytest.mark.parametrize(("state", "code"), [(TransactionState.COMMIT_MESSAGE, 8),
                                             (TransactionState.ROLLBACK_MESSAGE, 12),
                                             (TransactionState.UNKNOW, 0), (None, 0), (RuntimeError("boom"), 0)])
def test_transaction_send_then_end_transaction(state: object, code: int) -> None:
    w, producer, calls = txn_world(state)
    msg = Message("T", b"pay", delay_level=3)
    result = producer.send_in_transaction(msg, arg=42)
    expected = state if isinstance(state, TransactionState) else TransactionState.UNKNOW
    assert result.local_transaction_state is expected and calls == [("exec", b"pay", 42)]
    broker = w.brokers["broker-a"]
    h = broker.header(broker.sends[-1])
    props = decode_properties(h["properties"])
    assert props["TRAN_MSG"] == "true" and props["PGROUP"] == "TPG" and "DELAY" not in props
    assert int(h["sysFlag"]) & 0x4
    w.runtime.run_until_idle()
    [end] = broker.of_code(RequestCode.END_TRANSACTION)
    assert end.is_oneway
    f = end.ext_fields
    assert (f["producerGroup"], f["commitOrRollback"], f["fromTransactionCheck"]) == ("TPG", str(code), "false")
    assert int(f["tranStateTableOffset"]) == result.queue_offset
    assert int(f["commitLogOffset"]) == decode_offset_message_id(result.offset_msg_id)[2]
    assert f["msgId"] == result.msg_id and f["transactionId"] == result.transaction_id
    assert (end.remark is not None) == isinstance(state, Exception)
    [txn] = w.events.of(TxnEnd)
    assert txn.state == expected.value and not txn.from_check


def test_not_stored_half_message_is_rolled_back() -> None:
    w, producer, calls = txn_world(TransactionState.COMMIT_MESSAGE)
    w.brokers["broker-a"].codes = [ResponseCode.SLAVE_NOT_AVAILABLE]
    result = producer.send_in_transaction(Message("T", b"x"))
    assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
    assert result.local_transaction_state is TransactionState.ROLLBACK_MESSAGE and calls == []


def test_failed_half_message_send_is_a_client_error() -> None:
    w, producer, _ = txn_world(TransactionState.COMMIT_MESSAGE)
    w.network.faults.fail("*", "SEND_MESSAGE_V2", code="MESSAGE_ILLEGAL")
    with pytest.raises(MQClientError, match="send message Exception"):
        producer.send_in_transaction(Message("T", b"x"))


@pytest.mark.parametrize(("check_state", "code"), [(TransactionState.COMMIT_MESSAGE, "8"),
                                                   (TransactionState.ROLLBACK_MESSAGE, "12"),
                                                   (ValueError("db down"), "0")])
def test_check_transaction_state_answers_from_check(check_state: object, code: str) -> None:
    w, producer, calls = txn_world(TransactionState.UNKNOW, check_state)
    result = producer.send_in_transaction(Message("T", b"half"))
    w.runtime.run_until_idle()
    broker = w.brokers["broker-a"]
    channel = next(c for c in broker.channels if c.client_node == producer.client_id)
    stored = encode_stored_message(
        topic="T", queue_id=result.queue.queue_id, body=b"half", flag=0,
        properties={"UNIQ_KEY": result.msg_id, "PGROUP": "TPG", "TRAN_MSG": "true"}, sys_flag=0x4,
        born_timestamp=w.runtime.now_ms(), born_host="127.0.0.1:5000", store_timestamp=w.runtime.now_ms(),
        store_host=broker.addr, reconsume_times=0, prepared_transaction_offset=0, queue_offset=7,
        commit_log_offset=4242)
    channel.invoke_oneway(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {
        "tranStateTableOffset": 7, "commitLogOffset": 4242, "msgId": result.msg_id,
        "transactionId": "TX-1", "offsetMsgId": result.offset_msg_id}, stored, oneway=True))
    w.runtime.run_until_idle()
    assert calls[-1] == ("check", b"half")
    end = broker.of_code(RequestCode.END_TRANSACTION)[-1]
    f = end.ext_fields
    assert (f["commitOrRollback"], f["fromTransactionCheck"], f["msgId"], f["transactionId"]) == (
        code, "true", result.msg_id, "TX-1")
    assert (f["tranStateTableOffset"], f["commitLogOffset"]) == ("7", "4242")
    if isinstance(check_state, Exception):
        # RemotingHelper.exceptionSimpleDesc: the exception, then the frame that raised it (stackTrace[0]).
        assert re.fullmatch(r"checkLocalTransactionState Exception: ValueError: db down, checker:\d+", end.remark)
    else:
        assert end.remark is None
    assert w.events.of(TxnEnd)[-1].from_check


# ----------------------------------------------------------------------------------------------------- the instance


class FakeConsumer:
    def __init__(self, group: str, topic: str) -> None:
        self.group = group
        self.topic = topic
        self.routes: list = []
        self.rebalances = 0
        self.persists = 0

    def heartbeat_data(self) -> dict:
        return {"groupName": self.group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": [], "unitMode": False}

    def subscribed_topics(self) -> set[str]:
        return {self.topic}

    def on_route(self, topic, queues) -> None:
        self.routes.append((topic, frozenset(queues)))

    def do_rebalance(self) -> None:
        self.rebalances += 1

    def persist_offsets(self) -> None:
        self.persists += 1


def test_instance_heartbeats_routes_rebalance_and_unregister() -> None:
    w = World()
    producer = w.producer()
    producer.send(Message("T", b"x"))
    instance = producer.instance
    consumer = FakeConsumer("CG", "T")
    instance.register_consumer("CG", consumer)
    w.runtime.advance(40_000)
    assert consumer.routes and consumer.routes[0][0] == "T" and len(consumer.routes[0][1]) == 4
    assert consumer.persists >= 5 and consumer.rebalances >= 1
    beats = [r for b in w.brokers.values() for r in b.of_code(RequestCode.HEART_BEAT)]
    last = json.loads(beats[-1].body)
    assert {p["groupName"] for p in last["producerDataSet"]} == {"PG", CLIENT_INNER_PRODUCER_GROUP}
    assert last["consumerDataSet"][0]["groupName"] == "CG" and last["clientID"] == instance.client_id
    before = consumer.rebalances
    broker = w.brokers["broker-a"]
    channel = next(c for c in broker.channels if c.client_node == instance.client_id)
    channel.invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "CG"},
                                                  oneway=True))
    w.runtime.run_until_idle()
    assert consumer.rebalances == before + 1
    assert w.runtime.wait(instance.find_consumer_ids("T", "CG")) == []  # the scripted broker answers no body
    assert instance.find_broker_addr("broker-b") == w.brokers["broker-b"].addr
    assert instance.find_broker_addr_any("broker-a") == w.brokers["broker-a"].addr
    assert sorted(instance.broker_names()) == ["broker-a", "broker-b"]
    instance.unregister_consumer("CG")
    producer.shutdown()
    w.runtime.run_until_idle()
    unregs = [r.ext_fields for b in w.brokers.values() for r in b.of_code(RequestCode.UNREGISTER_CLIENT)]
    assert {"clientID": instance.client_id, "consumerGroup": "CG"} in unregs
    assert {"clientID": instance.client_id, "producerGroup": "PG"} in unregs
    assert instance.stopped


def test_crash_closes_connections_without_unregistering() -> None:
    w = World()
    producer = w.producer()
    producer.send(Message("T", b"x"))
    producer.instance.crash()
    w.runtime.run_until_idle()
    assert not any(b.of_code(RequestCode.UNREGISTER_CLIENT) for b in w.brokers.values())
    w.runtime.advance(120_000)
    beats_after = [r for b in w.brokers.values() for r in b.of_code(RequestCode.HEART_BEAT)]
    assert all(r.ext_fields == {} for r in beats_after)
    count = len(beats_after)
    w.runtime.advance(120_000)
    assert len([r for b in w.brokers.values() for r in b.of_code(RequestCode.HEART_BEAT)]) == count


def test_unknown_request_to_a_client_is_not_supported() -> None:
    w = World()
    producer = w.producer()
    producer.send(Message("T", b"x"))
    w.runtime.advance(2_000)  # the first periodic heartbeat reaches every broker
    broker = w.brokers["broker-a"]
    channel = next(c for c in broker.channels if c.client_node == producer.client_id)
    response = w.runtime.wait(channel.invoke(RemotingCommand.request(RequestCode.PULL_MESSAGE), 1000))
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_java_int_helpers_wrap_at_32_bits() -> None:
    """``int32`` wraps like a Java ``int``, ``Math.abs(Integer.MIN_VALUE)`` stays negative, and the hash selector's
    ``hashCode`` of a long folds its halves (``Long.hashCode``) while an int is its own hash."""
    assert [int32(v) for v in (2**31 - 1, 2**31, -(2**31) - 1, 2**32 + 5, -7)] == [
        2**31 - 1, -(2**31), 2**31 - 1, 5, -7]
    assert java_abs(-(2**31)) == -(2**31) and java_abs(-5) == 5
    assert [java_hash_code(v) for v in (-(2**31), 2**31 - 1, -5, True, False)] == [
        -(2**31), 2**31 - 1, -5, 1231, 1237]
    # Long.hashCode(v) = (int)(v ^ (v >>> 32)): 2**31 and -(2**31) - 1 both fold to Integer.MIN_VALUE, 2**40 to 256.
    assert [java_hash_code(v) for v in (2**31, -(2**31) - 1, 2**40)] == [-(2**31), -(2**31), 256]
