"""Faults over the wire: every action of ``refimpl.faults.Faults`` as a raw-socket client sees it from the TCP server.

Rules checked, per node and request code, for rules set at run time (``served.faults``) and read from a fault file at
start: ``fail`` answers the error code and remark without processing; ``delay`` holds the answer at least ``ms``;
``drop`` loses the request (no answer, nothing done); ``drop_response`` does the work but sends nothing; ``duplicate``
does it twice (a send is stored twice); ``disconnect`` closes the connection. Other codes, nodes and clients are
unaffected; ``times`` limits a rule; a bad fault file raises ``FaultFileError`` naming the problem.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_client import WireClient

from rocketspec.refimpl.message import encode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import FaultFileError, ServedCluster, fault_rule, load_fault_file
from rocketspec.spec.protocol import SEND_MESSAGE_V2_FIELDS, RequestCode, ResponseCode, SerializeType

JSON, ROCKETMQ = SerializeType.JSON, SerializeType.ROCKETMQ
TOPIC = "FaultTopic"
# A wait long enough for any answer the server would send on an idle machine, short enough to keep the module fast.
SILENCE_S = 0.4
_LETTER = {long: letter for letter, long in SEND_MESSAGE_V2_FIELDS.items()}
_bodies = iter(range(1_000_000))


@pytest.fixture(scope="module")
def served() -> Iterator[ServedCluster]:
    with ServedCluster(brokers=2) as cluster:
        cluster.create_topic(TOPIC, queues=2)
        yield cluster


@pytest.fixture(autouse=True)
def no_faults_left(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "served" in request.fixturenames:
        request.getfixturevalue("served").faults.clear()


def unique_body() -> bytes:
    return f"fault-body-{next(_bodies)}-{time.monotonic_ns()}".encode()


def send(body: bytes, *, v2: bool = False) -> RemotingCommand:
    fields: dict[str, object] = {
        "producerGroup": "PG", "topic": TOPIC, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4, "queueId": 0,
        "sysFlag": 0, "bornTimestamp": int(time.time() * 1000), "flag": 0,
        "properties": encode_properties({"UNIQ_KEY": body.decode(), "WAIT": "true"}),
    }
    if v2:
        return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {_LETTER[k]: v for k, v in fields.items()}, body)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, fields, body)


def max_offset() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0})


def route() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})


def stored(served: ServedCluster, body: bytes) -> int:
    """How many times ``body`` is stored in the topic (on any broker)."""
    return sum(1 for m in served._cluster.messages(TOPIC) if m.body == body)


def addr_of(served: ServedCluster, node: str) -> str:
    return served.namesrv_addr if node == "namesrv" else served.broker_addrs[node]


def assert_unaffected(served: ServedCluster, broker: str = "broker-b") -> None:
    """A send to ``broker`` and a different request to broker-a are answered normally and promptly."""
    body = unique_body()
    with WireClient(served.broker_addrs[broker]) as client:
        assert client.request(send(body)).code == ResponseCode.SUCCESS
    assert stored(served, body) == 1
    with WireClient(served.broker_addrs["broker-a"]) as client:
        start = time.monotonic()
        assert client.request(max_offset()).code == ResponseCode.SUCCESS
        assert time.monotonic() - start < SILENCE_S


# ------------------------------------------------------------------------------------------------------------- fail


@pytest.mark.parametrize("kind", [JSON, ROCKETMQ])
def test_fail_answers_the_code_and_remark_without_processing(served: ServedCluster, kind: SerializeType) -> None:
    served.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_BUSY", remark="too busy right now")
    with WireClient(served.broker_addrs["broker-a"]) as client:
        for request in (send(body_long := unique_body()), send(body_v2 := unique_body(), v2=True)):
            client.send(request, kind)
            response, response_kind = client.response_to(request.opaque)
            assert (response.code, response.remark) == (ResponseCode.SYSTEM_BUSY, "too busy right now")
            assert response.is_response and response_kind == kind
        assert client.request(max_offset(), kind).code == ResponseCode.SUCCESS  # another code on the same broker
    assert stored(served, body_long) == 0 and stored(served, body_v2) == 0
    assert_unaffected(served, "broker-b")


def test_fail_with_a_numeric_code_on_the_name_server(served: ServedCluster) -> None:
    served.faults.fail("namesrv", RequestCode.GET_ROUTEINFO_BY_TOPIC, code=ResponseCode.TOPIC_NOT_EXIST)
    with WireClient(served.namesrv_addr) as client:
        response = client.request(route())
        assert (response.code, response.remark) == (ResponseCode.TOPIC_NOT_EXIST, "injected fault")
        cluster_info = client.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        assert cluster_info.code == ResponseCode.SUCCESS
    assert_unaffected(served)


def test_fail_on_a_oneway_request_sends_nothing_and_does_nothing(served: ServedCluster) -> None:
    served.faults.fail("broker-a", "UPDATE_CONSUMER_OFFSET")
    commit = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                     {"consumerGroup": "CG-fail-oneway", "topic": TOPIC, "queueId": 0,
                                      "commitOffset": 0}, oneway=True)
    with WireClient(served.broker_addrs["broker-a"]) as client:
        client.send(commit)
        with pytest.raises(TimeoutError):
            client.response_to(commit.opaque, timeout=SILENCE_S)
    assert served._cluster.committed_offsets("CG-fail-oneway", TOPIC) == {}


# ------------------------------------------------------------------------------------------------------------ delay


@pytest.mark.parametrize("kind", [JSON, ROCKETMQ])
def test_delay_holds_the_answer_at_least_ms(served: ServedCluster, kind: SerializeType) -> None:
    served.faults.delay("broker-a", "GET_MAX_OFFSET", ms=500)
    with WireClient(served.broker_addrs["broker-a"]) as client:
        start = time.monotonic()
        response = client.request(max_offset(), kind)
        elapsed = time.monotonic() - start
    assert response.code == ResponseCode.SUCCESS
    assert elapsed >= 0.5, f"answered after {elapsed * 1000:.0f} ms"
    with WireClient(served.broker_addrs["broker-b"]) as other:  # same code, other broker
        start = time.monotonic()
        assert other.request(max_offset()).code == ResponseCode.SUCCESS
        assert time.monotonic() - start < SILENCE_S
    body = unique_body()
    with WireClient(served.broker_addrs["broker-a"]) as client:  # other code, same broker
        start = time.monotonic()
        assert client.request(send(body)).code == ResponseCode.SUCCESS
        assert time.monotonic() - start < SILENCE_S


# ------------------------------------------------------------------------------------------------------------- drop


def test_drop_loses_the_request(served: ServedCluster) -> None:
    served.faults.drop("broker-a", "SEND_MESSAGE")
    body = unique_body()
    with WireClient(served.broker_addrs["broker-a"]) as client:
        request = send(body)
        client.send(request)
        with pytest.raises(TimeoutError):
            client.response_to(request.opaque, timeout=SILENCE_S)
        assert client.request(max_offset()).code == ResponseCode.SUCCESS  # the connection still works
    assert stored(served, body) == 0
    assert_unaffected(served, "broker-b")


def test_drop_response_does_the_work_silently(served: ServedCluster) -> None:
    served.faults.drop("broker-b", "SEND_MESSAGE", response=True)
    body = unique_body()
    with WireClient(served.broker_addrs["broker-b"]) as client:
        request = send(body)
        client.send(request)
        with pytest.raises(TimeoutError):
            client.response_to(request.opaque, timeout=SILENCE_S)
        assert client.request(max_offset()).code == ResponseCode.SUCCESS
    assert stored(served, body) == 1
    assert_unaffected(served, "broker-a")


@pytest.mark.parametrize("dropped", [True, False], ids=["drop_response", "no fault"])
def test_drop_response_also_loses_an_answer_given_later(served: ServedCluster, dropped: bool) -> None:
    """A long-polling pull is held and answered when a message arrives: a drop_response fault loses that answer too."""
    topic = f"HeldPull{int(dropped)}"
    served.create_topic(topic, queues=1)
    if dropped:
        served.faults.drop("broker-a", "PULL_MESSAGE", response=True)
    with WireClient(served.broker_addrs["broker-a"]) as consumer, \
            WireClient(served.broker_addrs["broker-a"]) as producer:
        pull = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
            "consumerGroup": "HeldCG", "topic": topic, "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
            "sysFlag": 6, "commitOffset": 0, "suspendTimeoutMillis": 5000, "subVersion": 0, "subscription": "*",
            "expressionType": "TAG"})  # sysFlag 6: suspend (long polling) and the subscription in the request
        consumer.send(pull)
        time.sleep(0.3)  # held: nothing to answer yet
        message = send(unique_body())
        held = RemotingCommand(message.code, {**message.ext_fields, "topic": topic}, message.body,
                               opaque=message.opaque)
        assert producer.request(held).code == ResponseCode.SUCCESS
        if dropped:
            with pytest.raises(TimeoutError):
                consumer.response_to(pull.opaque, timeout=SILENCE_S)
        else:
            answer, _ = consumer.response_to(pull.opaque)
            assert answer.code == ResponseCode.SUCCESS and answer.body


# -------------------------------------------------------------------------------------------------------- duplicate


def test_duplicate_send_is_stored_twice(served: ServedCluster) -> None:
    served.faults.duplicate("broker-a", "SEND_MESSAGE")
    body = unique_body()
    with WireClient(served.broker_addrs["broker-a"]) as client:
        request = send(body)
        assert client.request(request).code == ResponseCode.SUCCESS
        # Processed twice, answered twice: the second answer carries the same opaque.
        second, _ = client.response_to(request.opaque)
        assert second.code == ResponseCode.SUCCESS
        # Another code is answered exactly once.
        other = max_offset()
        assert client.request(other).code == ResponseCode.SUCCESS
        with pytest.raises(TimeoutError):
            client.response_to(other.opaque, timeout=SILENCE_S)
    assert stored(served, body) == 2
    assert_unaffected(served, "broker-b")


# ------------------------------------------------------------------------------------------------------- disconnect


@pytest.mark.parametrize("node", ["namesrv", "broker-b"])
def test_disconnect_closes_the_connection(served: ServedCluster, node: str) -> None:
    code = RequestCode.GET_ROUTEINFO_BY_TOPIC if node == "namesrv" else RequestCode.SEND_MESSAGE
    served.faults.disconnect(node, code)
    body = unique_body()
    with WireClient(addr_of(served, node)) as bystander, WireClient(addr_of(served, node)) as client:
        assert bystander.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)).is_response
        client.send(route() if node == "namesrv" else send(body))
        assert client.closed_by_server(), "the connection stayed open"
        # Other connections to the node keep working on other codes.
        assert bystander.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)).is_response
    assert stored(served, body) == 0
    assert_unaffected(served, "broker-a")


# ---------------------------------------------------------------------------------------- times, clients, chance


def test_times_limits_a_rule(served: ServedCluster) -> None:
    rule = served.faults.fail("broker-a", "GET_MAX_OFFSET", code="SYSTEM_BUSY", times=2)
    with WireClient(served.broker_addrs["broker-a"]) as client:
        codes = [client.request(max_offset()).code for _ in range(4)]
    assert codes == [ResponseCode.SYSTEM_BUSY, ResponseCode.SYSTEM_BUSY, ResponseCode.SUCCESS, ResponseCode.SUCCESS]
    assert rule.fired == 2


def test_times_zero_never_fires(served: ServedCluster) -> None:
    served.faults.drop("broker-a", "GET_MAX_OFFSET", times=0)
    with WireClient(served.broker_addrs["broker-a"]) as client:
        assert client.request(max_offset()).code == ResponseCode.SUCCESS


def test_client_address_limits_a_rule_to_one_connection(served: ServedCluster) -> None:
    with WireClient(served.broker_addrs["broker-a"]) as target, WireClient(served.broker_addrs["broker-a"]) as other:
        host, port = target.sock.getsockname()[:2]
        served.faults.fail("broker-a", "GET_MAX_OFFSET", code="NO_PERMISSION", client=f"{host}:{port}")
        assert target.request(max_offset()).code == ResponseCode.NO_PERMISSION
        assert other.request(max_offset()).code == ResponseCode.SUCCESS


def test_probability_zero_never_fires(served: ServedCluster) -> None:
    served.faults.disconnect("broker-a", "GET_MAX_OFFSET", probability=0.0)
    with WireClient(served.broker_addrs["broker-a"]) as client:
        for _ in range(5):
            assert client.request(max_offset()).code == ResponseCode.SUCCESS


def test_removed_rule_stops_firing(served: ServedCluster) -> None:
    rule = served.faults.fail("broker-a", "GET_MAX_OFFSET")
    with WireClient(served.broker_addrs["broker-a"]) as client:
        assert client.request(max_offset()).code == ResponseCode.SYSTEM_ERROR
        served.faults.remove(rule)
        assert client.request(max_offset()).code == ResponseCode.SUCCESS


# ------------------------------------------------------------------------------------------ fault file at start


def write_faults(tmp_path: Path, data: Any, name: str = "faults.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


FILE_RULES = [
    {"action": "fail", "target": "broker-a", "request": "GET_MAX_OFFSET", "code": "SYSTEM_BUSY",
     "remark": "busy from file", "times": 1},
    {"action": "delay", "broker": "broker-a", "request": "GET_MIN_OFFSET", "ms": 300},
    {"action": "drop", "target": "broker-b", "request": "GET_MAX_OFFSET"},
    {"action": "drop_response", "target": "broker-b", "request": "SEND_MESSAGE"},
    {"action": "duplicate", "target": "broker-a", "request": 10},
    {"action": "disconnect", "target": "namesrv", "request": "GET_BROKER_CLUSTER_INFO"},
]


def test_fault_file_at_start_applies_every_action(tmp_path: Path) -> None:
    path = write_faults(tmp_path, {"faults": FILE_RULES})
    with ServedCluster(brokers=2, faults=path) as cluster:
        cluster.create_topic(TOPIC, queues=2)
        a, b = cluster.broker_addrs["broker-a"], cluster.broker_addrs["broker-b"]
        with WireClient(a) as client:
            first = client.request(max_offset())
            assert (first.code, first.remark) == (ResponseCode.SYSTEM_BUSY, "busy from file")
            assert client.request(max_offset()).code == ResponseCode.SUCCESS  # times: 1
            start = time.monotonic()
            min_offset = RemotingCommand.request(RequestCode.GET_MIN_OFFSET, {"topic": TOPIC, "queueId": 0})
            assert client.request(min_offset).code == ResponseCode.SUCCESS
            assert time.monotonic() - start >= 0.3
            duplicated = unique_body()
            assert client.request(send(duplicated)).code == ResponseCode.SUCCESS
        with WireClient(b) as client:
            lost = max_offset()
            client.send(lost)
            with pytest.raises(TimeoutError):
                client.response_to(lost.opaque, timeout=SILENCE_S)
            silent_body = unique_body()
            silent = send(silent_body)
            client.send(silent)
            with pytest.raises(TimeoutError):
                client.response_to(silent.opaque, timeout=SILENCE_S)
        with WireClient(cluster.namesrv_addr) as client:
            assert client.request(route()).code == ResponseCode.SUCCESS
            client.send(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
            assert client.closed_by_server()
        assert sum(1 for m in cluster._cluster.messages(TOPIC) if m.body == duplicated) == 2
        assert sum(1 for m in cluster._cluster.messages(TOPIC) if m.body == silent_body) == 1


def test_fault_file_as_a_bare_list(tmp_path: Path) -> None:
    rules = load_fault_file(write_faults(tmp_path, FILE_RULES))
    assert [r.action for r in rules] == ["fail", "delay", "drop", "drop_response", "duplicate", "disconnect"]
    assert rules[0].response_code == ResponseCode.SYSTEM_BUSY and rules[0].times == 1
    assert rules[1].target == "broker-a" and rules[1].delay_ms == 300
    assert rules[3].code == frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2,
                                       RequestCode.SEND_BATCH_MESSAGE})
    assert rules[4].code == RequestCode.SEND_MESSAGE


BAD_RULES = {
    "unknown action": ({"action": "explode"}, "explode"),
    "missing action": ({"target": "broker-a"}, "action"),
    "unknown key": ({"action": "drop", "colour": "red"}, "colour"),
    "bad response code name": ({"action": "fail", "code": "NOT_A_CODE"}, "NOT_A_CODE"),
    "bad request code name": ({"action": "drop", "request": "SEND_MSG"}, "SEND_MSG"),
    "request a list": ({"action": "drop", "request": [10]}, "request"),
    "negative times": ({"action": "drop", "times": -1}, "times"),
    "times a boolean": ({"action": "drop", "times": True}, "times"),
    "times text": ({"action": "drop", "times": "2"}, "times"),
    "delay without ms": ({"action": "delay", "request": "SEND_MESSAGE"}, "ms"),
    "delay of zero ms": ({"action": "delay", "ms": 0}, "ms"),
    "negative ms": ({"action": "delay", "ms": -5}, "ms"),
    "probability above one": ({"action": "drop", "probability": 2}, "probability"),
    "empty target": ({"action": "drop", "target": ""}, "target"),
    "rule not an object": ("drop", "object"),
}


@pytest.mark.parametrize(("rule", "needle"), list(BAD_RULES.values()), ids=list(BAD_RULES))
def test_bad_rule_in_a_fault_file_is_named(tmp_path: Path, rule: Any, needle: str) -> None:
    path = write_faults(tmp_path, [{"action": "drop", "target": "broker-a"}, rule])
    with pytest.raises(FaultFileError) as caught:
        load_fault_file(path)
    message = str(caught.value)
    assert needle in message and "rule 2" in message and str(path) in message
    with pytest.raises(FaultFileError):
        fault_rule(rule)


@pytest.mark.parametrize(("content", "needle"), [
    ("{not json", "not JSON"),
    ("", "not JSON"),
    ('{"rules": []}', "list"),
    ("42", "list"),
    ('"drop"', "list"),
])
def test_fault_file_that_is_not_a_list_of_rules(tmp_path: Path, content: str, needle: str) -> None:
    path = write_faults(tmp_path, content)
    with pytest.raises(FaultFileError, match=needle):
        load_fault_file(path)


def test_missing_fault_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(FaultFileError, match="cannot read") as caught:
        load_fault_file(missing)
    assert str(missing) in str(caught.value)


def test_served_cluster_refuses_a_bad_fault_file_before_listening(tmp_path: Path) -> None:
    import threading

    def server_threads() -> int:
        return sum(1 for t in threading.enumerate() if t.name.startswith(("rocketspec-wire", "rocketspec-loop")))

    threads = server_threads()
    path = write_faults(tmp_path, [{"action": "fail", "code": "NOPE"}])
    with pytest.raises(FaultFileError, match="NOPE"):
        ServedCluster(faults=path)
    with pytest.raises(FaultFileError, match="cannot read"):
        ServedCluster(faults=tmp_path / "absent.json")
    with pytest.raises(FaultFileError, match="explode"):
        ServedCluster(faults=[{"action": "explode"}])
    assert server_threads() == threads  # nothing was started, nothing left running
