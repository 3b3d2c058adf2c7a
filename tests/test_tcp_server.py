"""The TCP server (``refimpl/tcp.py`` behind ``ServedCluster``) seen from raw sockets.

Rules checked: an unknown code is answered REQUEST_CODE_NOT_SUPPORTED with the request's opaque; a response comes
back in its request's serialize type; bytes that are not a frame close that one connection while the server keeps
serving every other (also under random frames and garbage); what real clients send is accepted (numbers and booleans
in a JSON header's extFields, oneway requests flagged 0, long-name and letter sends, heartbeat enums as names or
ordinals); the route is written by request version and names the brokers' TCP listeners; brokers notify consumers of a
group change; a stopped broker drops its connections and serves again once restarted.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wire_client import ConnectionClosed, WireClient, json_frame, scaled_settings

from rocketspec.refimpl.frame import FrameError, decode, encode
from rocketspec.refimpl.limits import ServerLimits
from rocketspec.refimpl.message import encode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.tcp import TcpChannel
from rocketspec.refimpl.wireloop import LOOP_ENV
from rocketspec.spec.protocol import (
    MAX_FRAME_BYTES,
    RPC_ONEWAY_FLAG,
    SEND_MESSAGE_V2_FIELDS,
    VERSION_V3_4_9,
    VERSION_V4_9_4,
    ConsumeFromWhere,
    ConsumeType,
    LanguageCode,
    MessageModel,
    RequestCode,
    ResponseCode,
    SerializeType,
)

JSON, ROCKETMQ = SerializeType.JSON, SerializeType.ROCKETMQ
TOPIC = "TopicTest"
_LETTER = {long: letter for letter, long in SEND_MESSAGE_V2_FIELDS.items()}


@pytest.fixture(scope="module", params=["uvloop", "asyncio"])
def served(request: pytest.FixtureRequest) -> Iterator[ServedCluster]:
    """Every test on uvloop's loop (the default where it is installed) and on asyncio's (the fallback)."""
    before = os.environ.get(LOOP_ENV)
    os.environ[LOOP_ENV] = request.param
    try:
        cluster = ServedCluster(brokers=2)
    finally:
        if before is None:
            os.environ.pop(LOOP_ENV)
        else:
            os.environ[LOOP_ENV] = before
    with cluster:
        assert type(cluster.wire.loop).__module__.startswith(request.param), type(cluster.wire.loop)
        cluster.create_topic(TOPIC, queues=4)
        yield cluster


def route_request(topic: str = TOPIC, version: int = VERSION_V4_9_4, **fields: object) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, **fields}, version=version)


def send_fields(topic: str, body_tag: str, queue_id: int = 0) -> dict[str, object]:
    """SEND_MESSAGE's long-name header, as the C++ client fills it (UNIQ_KEY and WAIT properties)."""
    return {
        "producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
        "queueId": queue_id, "sysFlag": 0, "bornTimestamp": int(time.time() * 1000), "flag": 0,
        "properties": encode_properties({"UNIQ_KEY": body_tag, "WAIT": "true", "TAGS": "t"}),
        "reconsumeTimes": 0, "unitMode": False, "batch": False,
    }


def stored_bodies(served: ServedCluster, topic: str = TOPIC) -> list[bytes]:
    return [m.body for m in served._cluster.messages(topic)]


def answers(addr: str, kind: SerializeType = JSON) -> bool:
    """A fresh connection to ``addr`` gets a response to a request (any code) with the right opaque."""
    with WireClient(addr) as client:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
        response = client.request(request, kind)
        return response.is_response and response.opaque == request.opaque


def heartbeat_body(client_id: str, group: str, *, ordinals: bool, topic: str = TOPIC) -> bytes:
    if ordinals:  # the C++ client: Java enum ordinals
        enums: dict[str, Any] = {"consumeType": 1, "messageModel": 0, "consumeFromWhere": 4}
    else:  # Java and ali-ons: enum names
        enums = {"consumeType": "CONSUME_ACTIVELY", "messageModel": "CLUSTERING",
                 "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET"}
    consumer = {
        "groupName": group, **enums, "unitMode": False,
        "subscriptionDataSet": [{"classFilterMode": False, "topic": topic, "subString": "*", "tagsSet": [],
                                 "codeSet": [], "subVersion": 1, "expressionType": "TAG"}],
    }
    return json.dumps({"clientID": client_id, "producerDataSet": [], "consumerDataSet": [consumer]}).encode()


# ---------------------------------------------------------------------------------------------------- basic answers


@pytest.mark.parametrize("kind", [JSON, ROCKETMQ])
def test_unknown_code_is_not_supported_with_the_same_opaque(served: ServedCluster, kind: SerializeType) -> None:
    with WireClient(served.broker_addrs["broker-a"]) as client:
        request = RemotingCommand(code=9999, ext_fields={"x": "1"}, opaque=424242)
        client.send(request, kind)
        response, response_kind = client.recv()
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.opaque == 424242 and response.is_response
    assert response_kind == kind
    assert "9999" in (response.remark or "")


def test_unknown_code_gets_no_answer_from_the_name_server(served: ServedCluster) -> None:
    """4.9.8's DefaultRequestProcessor returns null for a code it does not serve: nothing is written back."""
    with WireClient(served.namesrv_addr) as client:
        client.send(RemotingCommand(code=9999, ext_fields={"x": "1"}, opaque=424243))
        with pytest.raises(TimeoutError):
            client.recv(timeout=0.5)
        answer = client.request(route_request())
    assert answer.code == ResponseCode.SUCCESS  # the connection is still served


@pytest.mark.parametrize("kind", [JSON, ROCKETMQ])
def test_route_answered_in_the_request_serialize_type(served: ServedCluster, kind: SerializeType) -> None:
    with WireClient(served.namesrv_addr) as client:
        request = route_request()
        client.send(request, kind)
        frame = client.recv_frame()
    assert frame[0] == kind  # the mark's high byte, read straight off the wire
    response, _ = decode(frame)
    assert response.code == ResponseCode.SUCCESS and response.opaque == request.opaque


def test_mixed_serialize_types_on_one_connection(served: ServedCluster) -> None:
    with WireClient(served.namesrv_addr) as client:
        for kind in (JSON, ROCKETMQ, ROCKETMQ, JSON):
            request = route_request()
            client.send(request, kind)
            response, response_kind = client.response_to(request.opaque)
            assert response_kind == kind and response.code == ResponseCode.SUCCESS


def test_a_late_response_keeps_its_own_request_serialize_type(served: ServedCluster) -> None:
    # Java sets each response's serialize type from its own request: a response written after the client sent a
    # request of the other type must not switch to that type.
    rule = served.faults.delay("namesrv", "GET_ROUTEINFO_BY_TOPIC", ms=300)
    try:
        with WireClient(served.namesrv_addr) as client:
            slow = route_request()
            client.send(slow, JSON)
            fast = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
            client.send(fast, ROCKETMQ)
            seen = {}
            for _ in range(2):
                response, kind = client.recv()
                seen[response.opaque] = kind
    finally:
        served.faults.remove(rule)
    assert seen == {fast.opaque: ROCKETMQ, slow.opaque: JSON}


# ------------------------------------------------------------------------------------------- bad input, one at a time

BAD_INPUT = {
    "total below four": struct.pack(">i", 2) + b"\x00\x00",
    "negative total": b"\xff\xff\xff\xff",
    "oversized length prefix alone": struct.pack(">i", MAX_FRAME_BYTES),
    "bad JSON": json_frame(b'{"code": 105, "opaque":'),
    "JSON array header": json_frame(b"[105]"),
    "header length past the end": struct.pack(">ii", 8, 200) + b"{}{}",
    "truncated binary header": struct.pack(">ii", 8, (1 << 24) | 4) + b"\x00\x69\x00\x01",
    "unknown serialize type": struct.pack(">ii", 6, (7 << 24) | 2) + b"{}",
    "HTTP request": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.mark.parametrize("data", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
@pytest.mark.parametrize("node", ["namesrv", "broker-a"])
def test_bad_input_closes_only_its_connection(served: ServedCluster, node: str, data: bytes) -> None:
    addr = served.namesrv_addr if node == "namesrv" else served.broker_addrs[node]
    errors_before = served.frame_errors()
    with WireClient(addr) as bystander, WireClient(addr) as offender:
        assert bystander.request(route_request()).is_response  # open and in use before the bad bytes
        offender.send_raw(data)
        assert offender.closed_by_server(), "the server kept a connection whose framing is lost"
        assert served.frame_errors() > errors_before
        for kind in (JSON, ROCKETMQ):
            request = route_request()
            assert bystander.request(request, kind).opaque == request.opaque
    assert answers(addr)


@pytest.mark.parametrize("node", ["namesrv", "broker-a"])
def test_a_json_header_without_code_is_request_code_0(served: ServedCluster, node: str) -> None:
    """4.9.8 reads a JSON header without ``code`` as code 0 and keeps the connection (WIRE-2): its broker answers
    "request type 0 not supported"; its name server answers no code it does not know (``DefaultRequestProcessor``
    returns null). Both checked on 4.9.8."""
    addr = served.namesrv_addr if node == "namesrv" else served.broker_addrs[node]
    with WireClient(addr) as client:
        client.send_raw(json_frame({"opaque": 41, "extFields": {"topic": TOPIC}}))
        if node == "namesrv":
            with pytest.raises(TimeoutError):
                client.response_to(41, timeout=0.5)
        else:
            response, _ = client.response_to(41)
            assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert client.request(route_request()).is_response


def test_garbage_after_a_valid_frame_closes_the_connection(served: ServedCluster) -> None:
    """The whole frame before the garbage is still answered (the same write), then the connection closes."""
    with WireClient(served.namesrv_addr) as client:
        request = route_request()
        client.send_raw(encode(request) + b"\x00\x00\x00\x01")
        response, _ = client.response_to(request.opaque)
        assert response.code == ResponseCode.SUCCESS
        assert client.closed_by_server()
    assert answers(served.namesrv_addr)


@pytest.mark.parametrize("linger_reset", [False, True], ids=["fin", "rst"])
def test_abrupt_disconnect_mid_frame(served: ServedCluster, linger_reset: bool) -> None:
    addr = served.broker_addrs["broker-a"]
    with WireClient(addr) as bystander:
        assert bystander.request(route_request()).is_response
        before = served.connections("broker-a")
        quitter = WireClient(addr)
        data = encode(RemotingCommand.request(RequestCode.SEND_MESSAGE, send_fields(TOPIC, "cut")), JSON)
        quitter.send_raw(data[: len(data) // 2])
        if linger_reset:  # close with RST instead of FIN
            quitter.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        quitter.close()
        deadline = time.monotonic() + 2
        while served.connections("broker-a") >= before + 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert served.connections("broker-a") <= before, "the server kept the dead connection"
        assert bystander.request(route_request()).is_response
    assert b"cut" not in b"".join(stored_bodies(served))


def test_lone_surrogate_in_a_json_header_still_gets_an_answer(served: ServedCluster) -> None:
    # "\ud800" is valid JSON text; Java reads it into a String and answers (writing '?' for it). The answer echoes
    # the topic in its remark, so the server must be able to write it.
    with WireClient(served.namesrv_addr) as client:
        client.send_raw(json_frame(b'{"code":105,"opaque":77,"version":401,"extFields":{"topic":"T\\ud800"}}'))
        response, _ = client.recv()
    assert response.opaque == 77 and response.code == ResponseCode.TOPIC_NOT_EXIST


# ------------------------------------------------------------------------------------------------------------ fuzzing

FUZZ_TOPIC = "FuzzRouteTopic"  # longer than any random text below, never named by a fuzz request
FIELD_NAMES = ["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
               "bornTimestamp", "flag", "properties", "consumerGroup", "queueOffset", "maxMsgNums", "commitOffset",
               "suspendTimeoutMillis", "subscription", "subVersion", "offset", "timestamp", "group", "delayLevel",
               "commitOrRollback", "tranStateTableOffset", "commitLogOffset", "msgId", "clientID", "readQueueNums",
               "writeQueueNums", "perm", "brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId",
               "acceptStandardJsonOnly", "a", "b", "c", "d", "e", "f", "g", "h", "i"]
FIELD_VALUES = st.one_of(
    st.sampled_from(["", "0", "-1", "1", "4", "6", "99999999999999999999", "1.5", "true", "TopicA", "TBW102", "CG",
                     "PG", "%RETRY%CG", "*", "TAGS\x01a\x02KEYS\x01k", "DELAY\x013"]),
    st.text(max_size=8),
)
BODIES = st.one_of(st.none(), st.binary(max_size=64),
                   st.sampled_from([b"{}", b"[]", b'{"clientID": "c", "consumerDataSet": [{"groupName": 1}]}',
                                    b'{"consumerGroup": "CG", "clientId": "c", "mqSet": []}', b"\xff"]))
fuzz_requests = st.builds(
    lambda code, fields, body, oneway, version: RemotingCommand.request(code, fields, body, oneway=oneway,
                                                                        version=version),
    st.one_of(st.sampled_from(list(RequestCode)), st.integers(-5, 400)),
    st.dictionaries(st.sampled_from(FIELD_NAMES), FIELD_VALUES, max_size=10),
    BODIES,
    st.booleans(),
    st.sampled_from([0, VERSION_V3_4_9, VERSION_V4_9_4]),
)
# Hand-written JSON headers whose extFields carry JSON numbers, booleans and nulls, as real clients write them.
JSON_FIELD_VALUES = st.one_of(FIELD_VALUES, st.integers(-(2**63), 2**63), st.booleans(), st.none(),
                              st.floats(allow_nan=False, allow_infinity=False))
raw_json_requests = st.tuples(
    st.one_of(st.sampled_from(list(RequestCode)), st.integers(-5, 400)),
    st.dictionaries(st.sampled_from(FIELD_NAMES), JSON_FIELD_VALUES, max_size=10),
    BODIES,
)
GARBAGE = st.one_of(
    st.binary(min_size=1, max_size=64),
    st.builds(lambda mark, rest: struct.pack(">ii", 4 + len(rest), mark) + rest, st.integers(0, 2**31 - 1),
              st.binary(max_size=40)),
    st.builds(lambda header: json_frame(header), st.binary(max_size=40)),
)
# Requests whose answer may legitimately never come (a held long poll; END_TRANSACTION with nothing to do; the ACL
# version, which a 4.9.8 broker without ACL never answers).
_MAY_STAY_SILENT = {RequestCode.PULL_MESSAGE, RequestCode.END_TRANSACTION, RequestCode.GET_BROKER_CLUSTER_ACL_INFO}


@pytest.fixture(scope="module")
def fuzz_target() -> Iterator[tuple[ServedCluster, WireClient, bytes]]:
    """A cluster of its own (fuzzing changes state), a connection opened before any fuzzing, and the route then."""
    with ServedCluster(brokers=2) as cluster:
        cluster.create_topic(FUZZ_TOPIC, queues=3)
        with WireClient(cluster.namesrv_addr) as witness:
            route = witness.request(route_request(FUZZ_TOPIC))
            assert route.code == ResponseCode.SUCCESS and route.body
            yield cluster, witness, route.body


@scaled_settings(60)
@given(
    node=st.sampled_from(["namesrv", "broker-a", "broker-b"]),
    requests=st.lists(st.tuples(fuzz_requests, st.sampled_from([JSON, ROCKETMQ])), max_size=4),
    raw_requests=st.lists(raw_json_requests, max_size=2),
    garbage=st.one_of(st.none(), GARBAGE),
)
def test_fuzzed_connections_never_disturb_the_server(
    fuzz_target: tuple[ServedCluster, WireClient, bytes], node: str,
    requests: list[tuple[RemotingCommand, SerializeType]],
    raw_requests: list[tuple[int, dict[str, Any], bytes | None]], garbage: bytes | None,
) -> None:
    cluster, witness, route = fuzz_target
    addr = cluster.namesrv_addr if node == "namesrv" else cluster.broker_addrs[node]
    assert cluster.cluster is not None
    # A 4.9.8 name server answers nothing to a code it does not serve.
    silent = _MAY_STAY_SILENT | (frozenset(c for c in range(-1000, 1000) if c not in cluster.cluster.namesrv._handlers)
                                 if node == "namesrv" else frozenset())
    with WireClient(addr) as client:
        for opaque, (code, fields, body) in enumerate(raw_requests, start=1_000_000):
            header = {"code": code, "language": "CPP", "version": 63, "opaque": opaque, "flag": 0,
                      "extFields": fields}
            client.send_raw(json_frame(header, body or b""))
            if code not in silent:
                response, response_kind = client.response_to(opaque)
                assert response.is_response and response_kind == JSON
        for request, kind in requests:
            try:
                client.send(request, kind)
            except FrameError:  # a value the binary header's integer widths cannot hold: the codec's own concern
                continue
            if request.is_oneway or request.code in silent:
                continue
            response, response_kind = client.response_to(request.opaque)
            assert response.is_response and response_kind == kind
        if garbage is not None:
            client.send_raw(garbage)
    for kind in (JSON, ROCKETMQ):
        check = route_request(FUZZ_TOPIC)
        witness.send(check, kind)
        response, response_kind = witness.response_to(check.opaque)
        assert (response.code, response_kind, response.body) == (ResponseCode.SUCCESS, kind, route)


# ------------------------------------------------------------------------------------------ what real clients send


def test_json_header_with_numbers_and_booleans_in_ext_fields(served: ServedCluster) -> None:
    header = {"code": RequestCode.SEND_MESSAGE, "language": "CPP", "version": 63, "opaque": 901, "flag": 0,
              "extFields": send_fields(TOPIC, "numeric-fields", queue_id=2)}
    assert isinstance(header["extFields"]["queueId"], int) and header["extFields"]["unitMode"] is False
    with WireClient(served.broker_addrs["broker-a"]) as client:
        client.send_raw(json_frame(header, b"numeric-fields body"))
        response, kind = client.response_to(901)
    assert kind == JSON
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert response.ext_fields["queueId"] == "2"
    assert b"numeric-fields body" in stored_bodies(served)


def test_route_request_with_a_json_boolean_accept_standard_json_only(served: ServedCluster) -> None:
    header = {"code": RequestCode.GET_ROUTEINFO_BY_TOPIC, "language": "JAVA", "version": VERSION_V3_4_9,
              "opaque": 902, "flag": 0, "extFields": {"topic": TOPIC, "acceptStandardJsonOnly": True}}
    with WireClient(served.namesrv_addr) as client:
        client.send_raw(json_frame(header))
        response, _ = client.response_to(902)
    assert response.code == ResponseCode.SUCCESS
    assert json.loads(response.body or b"")["brokerDatas"][0]["brokerAddrs"]["0"]


def test_update_consumer_offset_sent_with_flag_zero_is_answered_and_committed(served: ServedCluster) -> None:
    fields = {"consumerGroup": "CG-flag0", "topic": TOPIC, "queueId": 1, "commitOffset": 0}
    header = {"code": RequestCode.UPDATE_CONSUMER_OFFSET, "language": "CPP", "version": 63, "opaque": 903,
              "flag": 0, "extFields": fields}
    with WireClient(served.broker_addrs["broker-a"]) as client:
        client.send_raw(json_frame(header))
        response, _ = client.response_to(903)
        assert response.code == ResponseCode.SUCCESS
        # A true oneway commit is applied without an answer.
        oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                         {**fields, "queueId": 2, "commitOffset": 0}, oneway=True)
        client.send(oneway)
        with pytest.raises(TimeoutError):
            client.response_to(oneway.opaque, timeout=0.3)
    committed = {mq.queue_id: offset for mq, offset in served._cluster.committed_offsets("CG-flag0", TOPIC).items()
                 if mq.broker_name == "broker-a"}
    assert committed == {1: 0, 2: 0}


@pytest.mark.parametrize("kind", [JSON, ROCKETMQ])
def test_send_message_long_names_and_v2_letters_both_store(served: ServedCluster, kind: SerializeType) -> None:
    long_body = f"long-names-{kind.name}".encode()
    v2_body = f"v2-letters-{kind.name}".encode()
    long_request = RemotingCommand.request(RequestCode.SEND_MESSAGE, send_fields(TOPIC, "L" + kind.name),
                                           long_body, language=LanguageCode.CPP, version=63)
    v2_fields = {_LETTER[k]: v for k, v in send_fields(TOPIC, "V" + kind.name, queue_id=3).items()}
    v2_request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, v2_fields, v2_body, version=VERSION_V3_4_9)
    with WireClient(served.broker_addrs["broker-b"]) as client:
        for request in (long_request, v2_request):
            response = client.request(request, kind)
            assert response.code == ResponseCode.SUCCESS, response.remark
            assert response.ext_fields.get("msgId")
    stored = {m.body: m for m in served._cluster.messages(TOPIC)}
    assert stored[long_body].queue.broker_name == "broker-b" and stored[long_body].queue_id == 0
    assert stored[long_body].properties["UNIQ_KEY"] == "L" + kind.name
    assert stored[v2_body].queue_id == 3 and stored[v2_body].tags == "t"


@pytest.mark.parametrize("ordinals", [False, True], ids=["enum-names", "enum-ordinals"])
def test_heartbeat_enums_as_names_or_ordinals_register_the_consumer(served: ServedCluster, ordinals: bool) -> None:
    group = f"CG-hb-{'ord' if ordinals else 'name'}"
    client_id = f"127.0.0.1@{group}"
    with WireClient(served.broker_addrs["broker-a"]) as client:
        heartbeat = RemotingCommand.request(RequestCode.HEART_BEAT, body=heartbeat_body(client_id, group,
                                                                                         ordinals=ordinals),
                                            language=LanguageCode.CPP if ordinals else LanguageCode.JAVA)
        assert client.request(heartbeat).code == ResponseCode.SUCCESS
        listing = client.request(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                                         {"consumerGroup": group}))
        assert listing.code == ResponseCode.SUCCESS
        assert json.loads(listing.body or b"")["consumerIdList"] == [client_id]
        broker = served._cluster.broker("broker-a")
        info = served._cluster.runtime.submit(lambda: broker.consumers.get(group))
        if ordinals:  # 1, 0, 4 are these constants' ordinals
            expected = (ConsumeType.CONSUME_PASSIVELY, MessageModel.BROADCASTING,
                        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        else:
            expected = (ConsumeType.CONSUME_ACTIVELY, MessageModel.CLUSTERING,
                        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        assert (info.consume_type, info.message_model, info.consume_from_where) == expected


@pytest.mark.parametrize(("version", "fields", "standard"), [
    (63, {}, False),
    (VERSION_V3_4_9, {}, False),
    (VERSION_V4_9_4 - 1, {}, False),
    (VERSION_V4_9_4, {}, True),
    (409, {}, True),
    (VERSION_V3_4_9, {"acceptStandardJsonOnly": "true"}, True),
    (VERSION_V3_4_9, {"acceptStandardJsonOnly": "false"}, False),
])
def test_route_json_follows_the_request_version(served: ServedCluster, version: int, fields: dict[str, str],
                                                standard: bool) -> None:
    with WireClient(served.namesrv_addr) as client:
        response = client.request(route_request(version=version, **fields))
    body = (response.body or b"").decode()
    addr_a = served.broker_addrs["broker-a"]
    if standard:
        assert f'{{"0":"{addr_a}"}}' in body and "{0:" not in body
        json.loads(body)
    else:
        assert f'{{0:"{addr_a}"}}' in body and '"0":' not in body


def test_route_names_each_broker_tcp_listener(served: ServedCluster) -> None:
    with WireClient(served.namesrv_addr) as client:
        route = json.loads(client.request(route_request()).body or b"")
    addrs = {data["brokerName"]: data["brokerAddrs"]["0"] for data in route["brokerDatas"]}
    assert addrs == served.broker_addrs
    for name, addr in addrs.items():
        with WireClient(addr) as broker:
            response = broker.request(RemotingCommand.request(RequestCode.GET_MAX_OFFSET,
                                                              {"topic": TOPIC, "queueId": 0}))
        assert response.code == ResponseCode.SUCCESS, f"{name} at {addr}: {response.remark}"
        assert int(response.ext_fields["offset"]) >= 0


# --------------------------------------------------------------------------------------- broker-initiated requests


def test_second_consumer_of_a_group_makes_the_broker_notify_the_first(served: ServedCluster) -> None:
    group = "CG-notify"
    addr = served.broker_addrs["broker-a"]
    with WireClient(addr) as first, WireClient(addr) as second:
        hb1 = RemotingCommand.request(RequestCode.HEART_BEAT, body=heartbeat_body("10.0.0.1@first", group,
                                                                                  ordinals=False))
        assert first.request(hb1).code == ResponseCode.SUCCESS
        first.server_requests.clear()  # the first registration may notify the first consumer itself
        hb2 = RemotingCommand.request(RequestCode.HEART_BEAT, body=heartbeat_body("10.0.0.2@second", group,
                                                                                  ordinals=True))
        assert second.request(hb2, ROCKETMQ).code == ResponseCode.SUCCESS
        notify, kind = first.recv()
    assert notify.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
    assert not notify.is_response and notify.flag & RPC_ONEWAY_FLAG
    assert notify.ext_fields == {"consumerGroup": group}
    assert kind == JSON  # the first client spoke JSON


def test_same_heartbeat_again_does_not_notify(served: ServedCluster) -> None:
    group = "CG-quiet"
    with WireClient(served.broker_addrs["broker-a"]) as client:
        body = heartbeat_body("10.0.0.3@quiet", group, ordinals=False)
        assert client.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=body)).code == 0
        client.server_requests.clear()
        assert client.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=body)).code == 0
        with pytest.raises(TimeoutError):
            client.recv(timeout=0.3)
    assert client.server_requests == []


# -------------------------------------------------------------------------------------------- broker stop and start


def test_stopped_broker_closes_its_connections_and_serves_again_after_restart() -> None:
    with ServedCluster(brokers=2) as cluster:
        cluster.create_topic(TOPIC, queues=2)
        addr = cluster.broker_addrs["broker-a"]
        max_offset = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0})
        with WireClient(addr) as client, WireClient(cluster.namesrv_addr) as namesrv, \
                WireClient(cluster.broker_addrs["broker-b"]) as other:
            assert client.request(max_offset).code == ResponseCode.SUCCESS
            assert other.request(max_offset).code == ResponseCode.SUCCESS
            cluster.stop_broker("broker-a")
            assert client.closed_by_server(), "a stopped broker kept its client connection"
            assert namesrv.request(route_request()).is_response
            assert other.request(max_offset).code == ResponseCode.SUCCESS
        with WireClient(addr) as late:  # the listener stays; a request to the stopped broker closes the connection
            late.send(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": 0}))
            with pytest.raises(ConnectionClosed):
                late.recv()
        cluster.start_broker("broker-a")
        with WireClient(addr) as again:
            response = again.request(max_offset)
        assert response.code == ResponseCode.SUCCESS


def test_a_client_that_never_reads_is_closed_and_nobody_else_notices() -> None:
    """Answers a connection leaves unread pile up in the server only to ``max_unsent_bytes``; then it is closed."""
    with ServedCluster(limits=ServerLimits(max_unsent_bytes=64 * 1024)) as served:
        served.create_topic(TOPIC, queues=4)
        host, port = served.namesrv_addr.rsplit(":", 1)
        with socket.socket() as greedy:
            greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # keep the kernel from absorbing it all
            greedy.connect((host, int(port)))
            try:
                greedy.sendall(b"".join(encode(route_request()) for _ in range(40_000)))
            except (ConnectionResetError, BrokenPipeError):
                pass  # closed by the server while it was still writing: what the test waits for
            deadline = time.monotonic() + 10
            while served.connections("namesrv") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert served.connections("namesrv") == 0
        assert answers(served.namesrv_addr)


def test_pipelined_requests_are_all_answered_in_fewer_writes(served: ServedCluster,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """32 sends written at once on one connection (what 16 Java client threads sharing it look like): every one is
    stored and answered SUCCESS under its own opaque, and the answers of requests that waited behind others go out
    together (refimpl/tcp.py ``TcpChannel._queue_bytes``), not one write each."""
    writes: list[int] = []
    send_bytes = TcpChannel._send_bytes

    def counted(channel: TcpChannel) -> None:
        if channel._out:
            writes.append(len(channel._out))
        send_bytes(channel)

    monkeypatch.setattr(TcpChannel, "_send_bytes", counted)
    requests = [RemotingCommand.request(RequestCode.SEND_MESSAGE, send_fields(TOPIC, f"P{i}", queue_id=i % 4),
                                        f"pipelined-{i}".encode()) for i in range(32)]
    with WireClient(served.broker_addrs["broker-a"]) as client:
        client.send_raw(b"".join(encode(request, JSON) for request in requests))
        answered = [client.response_to(request.opaque)[0] for request in requests]
    assert all(a.code == ResponseCode.SUCCESS for a in answered), [a.remark for a in answered]
    assert {f"pipelined-{i}".encode() for i in range(32)} <= set(stored_bodies(served))
    assert sum(writes) >= 32 and len(writes) < 32, writes
