"""The wire tap (``traces/tap.py``): a recording proxy between raw remoting clients and a served reference cluster.

Clients here are raw sockets speaking frames (``tests/wire_client.py``); the upstream is a ``ServedCluster`` on
ephemeral ports, or a fake server for the failure cases. Every wait is bounded.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_client import ConnectionClosed, WireClient

from rocketspec.refimpl.frame import FrameReader, decode, encode
from rocketspec.refimpl.message import decode_stored_messages, encode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import TopicRouteData, loads_lenient
from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import PULL_FLAG_SUBSCRIPTION, RequestCode, ResponseCode
from rocketspec.traces import reading
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.schema import check_row
from rocketspec.traces.tap import Tap, TapError, run_tap, split_addr

TOPIC = "TapTopic"
CLIENT_ID = "127.0.0.1@tap-test"


# ------------------------------------------------------------------------------------------------------ requests


def heartbeat(client_id: str = CLIENT_ID) -> RemotingCommand:
    body = {
        "clientID": client_id,
        "producerDataSet": [{"groupName": "PG"}, {"groupName": "CLIENT_INNER_PRODUCER"}],
        "consumerDataSet": [{
            "groupName": "CG", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
            "subscriptionDataSet": [{"classFilterMode": False, "topic": TOPIC, "subString": "*", "tagsSet": [],
                                     "codeSet": [], "subVersion": 1, "expressionType": "TAG"}],
        }],
    }
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=json.dumps(body).encode())


def send_v2(uniq_key: str, queue_id: int = 0, broker: str = "broker-a", tags: str = "tagA") -> RemotingCommand:
    props = encode_properties({"UNIQ_KEY": uniq_key, "TAGS": tags, "WAIT": "true"})
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {
        "a": "PG", "b": TOPIC, "c": "TBW102", "d": 4, "e": queue_id, "f": 0, "g": int(time.time() * 1000),
        "h": 0, "i": props, "j": 0, "k": False, "n": broker,
    }, body=b"hello")


def pull(queue_id: int = 0, offset: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "CG", "topic": TOPIC, "queueId": queue_id, "queueOffset": offset, "maxMsgNums": 32,
        "sysFlag": PULL_FLAG_SUBSCRIPTION, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*",
        "subVersion": 1, "expressionType": "TAG",
    })


def route_request(topic: str = TOPIC, **kwargs: Any) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, **kwargs)


# -------------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def served() -> Iterator[ServedCluster]:
    with ServedCluster(brokers=2) as cluster:
        cluster.create_topic(TOPIC, queues=2)
        yield cluster


def _rows(out: Path) -> list[dict[str, Any]]:
    return [row for _, rows in reading.read_traces(out) for row in rows]


def _master(route: TopicRouteData, name: str) -> str:
    data = route.broker_data(name)
    assert data is not None and data.master_addr() is not None
    return str(data.master_addr())


# ----------------------------------------------------------------------------------------------------------- tests


def test_routes_point_at_the_tap_in_the_style_they_came_in(served: ServedCluster, tmp_path: Path) -> None:
    upstream_brokers = set(served.broker_addrs.values())
    with Tap("127.0.0.1", 0, served.namesrv_addr, tmp_path / "t") as tap, WireClient(tap.addr) as client:
        standard = client.request(route_request())
        assert standard.code == ResponseCode.SUCCESS and standard.body is not None
        assert b'"brokerAddrs":{"0":' in standard.body  # 4.9.8 request: standard JSON, as upstream sent it
        route = TopicRouteData.from_json(standard.body)
        addrs = {_master(route, "broker-a"), _master(route, "broker-b")}
        assert addrs == set(tap.broker_proxies.values())
        assert not addrs & upstream_brokers
        assert all(a.startswith("127.0.0.1:") for a in addrs)
        # An old client (version 121) gets bare numeric keys from upstream: the rewrite keeps that style.
        bare = client.request(route_request(version=121))
        assert bare.body is not None and b'"brokerAddrs":{0:"' in bare.body
        assert TopicRouteData.from_json(bare.body).broker_datas == route.broker_datas
        cluster_info = client.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        table = loads_lenient(cluster_info.body or b"")["brokerAddrTable"]
        assert {d["brokerAddrs"]["0"] for d in table.values()} == addrs
        # Unknown topics pass through untouched.
        assert client.request(route_request("NoSuchTopic")).code == ResponseCode.TOPIC_NOT_EXIST
        assert set(tap.broker_proxies) == upstream_brokers


def test_a_session_through_the_tap_is_a_valid_trace_without_violations(served: ServedCluster, tmp_path: Path) -> None:
    out = tmp_path / "trace"
    with Tap("127.0.0.1", 0, served.namesrv_addr, out, trace_id="tap-session", send_mode="SYNC") as tap:
        with WireClient(tap.addr) as namesrv:
            route = TopicRouteData.from_json(namesrv.request(route_request()).body or b"")
        with WireClient(_master(route, "broker-a")) as broker:
            assert broker.request(heartbeat()).code == ResponseCode.SUCCESS
            sent = broker.request(send_v2("AC11000100002A9F0000000000000001"))
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            found = broker.request(pull())
            assert found.code == ResponseCode.SUCCESS and found.remark == "FOUND"
            (message,) = decode_stored_messages(found.body or b"", "broker-a")
            # As a push consumer does: the message goes back first, then the offset passes it (OFF-3).
            back = broker.request(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
                "offset": message.commit_log_offset, "group": "CG", "delayLevel": 0, "originMsgId": message.msg_id,
                "originTopic": TOPIC, "maxReconsumeTimes": 16}))
            assert back.code == ResponseCode.SUCCESS, back.remark
            broker.oneway(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": "CG", "topic": TOPIC, "queueId": 0, "commitOffset": 1}))
            assert broker.request(pull(offset=1)).code == ResponseCode.PULL_NOT_FOUND
            # A query waits for the oneway offset update before it, on the same connection.
            query = broker.request(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": "CG", "topic": TOPIC, "queueId": 0}))
            assert query.field("offset") == "1"
            unregister = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {
                "clientID": CLIENT_ID, "producerGroup": "PG", "consumerGroup": "CG"})
            assert broker.request(unregister).code == ResponseCode.SUCCESS
        # A client whose connection closes without unregistering: disconnected. One still connected when the tap
        # stops: nothing (the tap's own shutdown is not an event of the run).
        stays = WireClient(_master(route, "broker-b"))
        assert stays.request(heartbeat("127.0.0.1@stays")).code == ResponseCode.SUCCESS
        with WireClient(_master(route, "broker-b")) as gone:
            assert gone.request(heartbeat("127.0.0.1@gone")).code == ResponseCode.SUCCESS
        deadline = time.monotonic() + 5
        while tap.connections() > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        manifest = tap.close()
        stays.close()
    assert manifest is not None and manifest["end"] == "CUT" and manifest["trace_ids"] == ["tap-session"]
    rows = _rows(out)
    for row in rows:
        check_row(row)
    kinds = [r["kind"] for r in rows]
    assert kinds.count("route.update") == 1
    lifecycle = [(r["node"], r["group"], r["action"]) for r in rows if r["kind"] == "client.lifecycle"]
    assert lifecycle == [(CLIENT_ID, "PG", "start"), (CLIENT_ID, "CG", "start"),
                         (CLIENT_ID, "PG", "shutdown"), (CLIENT_ID, "CG", "shutdown"),
                         ("127.0.0.1@stays", "PG", "start"), ("127.0.0.1@stays", "CG", "start"),
                         ("127.0.0.1@gone", "PG", "start"), ("127.0.0.1@gone", "CG", "start"),
                         ("127.0.0.1@gone", "PG", "disconnect"), ("127.0.0.1@gone", "CG", "disconnect")]
    assert {r["role"] for r in rows if r["kind"] == "client.lifecycle"} == {"producer", "push_consumer"}
    (attempt,) = [r for r in rows if r["kind"] == "send.attempt"]
    assert (attempt["node"], attempt["broker"], attempt["attempt"], attempt["mode"]) == (
        CLIENT_ID, "broker-a", 1, "SYNC")
    (result,) = [r for r in rows if r["kind"] == "send.result"]
    (put,) = [r for r in rows if r["kind"] == "store.put"]
    assert result["status"] == "SEND_OK" and result["final"] is True and put["msg_id"] == attempt["msg_id"]
    assert (put["node"], put["offset"], put["tags"], put["commit_log_offset"]) == (
        "broker-a", 0, "tagA", message.commit_log_offset)
    pulls = [(r["node"], r["status"], r.get("count")) for r in rows if r["kind"] == "pull.response"]
    assert pulls == [(CLIENT_ID, "FOUND", 1), ("broker-a", "FOUND", 1),
                     (CLIENT_ID, "NO_NEW_MSG", 0), ("broker-a", "OFFSET_OVERFLOW_ONE", 0)]
    (commit,) = [r for r in rows if r["kind"] == "offset.commit"]
    assert (commit["node"], commit["group"], commit["offset"]) == ("broker-a", "CG", 1)
    (sendback,) = [r for r in rows if r["kind"] == "sendback"]
    assert (sendback["node"], sendback["target"], sendback["delay_level"], sendback["reconsume_times"],
            sendback["msg_id"], sendback["topic"]) == (CLIENT_ID, None, None, 1, attempt["msg_id"], TOPIC)
    (delivered,) = [r for r in rows if r["kind"] == "consume.deliver"]
    assert (delivered["node"], delivered["offset"], delivered["msg_id"], delivered["derived"]) == (
        CLIENT_ID, 0, attempt["msg_id"], "pull_answer")
    assert put["derived"] == "send_answer" and commit["derived"] == "commit_request"
    assert kinds[-1] == "trace.end"
    report = check_python(out)
    assert report.traces == 1 and report.events == len(rows)
    assert all(r.violations == 0 for r in report.results), [r.to_json() for r in report.results if r.violations]


def test_a_malformed_frame_closes_only_its_own_pair(served: ServedCluster, tmp_path: Path) -> None:
    with Tap("127.0.0.1", 0, served.namesrv_addr, None) as tap, \
            WireClient(tap.addr) as good, WireClient(tap.addr) as bad:
        assert good.request(route_request()).code == ResponseCode.SUCCESS
        bad.send_raw(struct.pack(">ii", 8, 4) + b"{bad")  # header length 4 of not-JSON
        assert bad.closed_by_server(timeout=2.0)
        assert good.request(route_request()).code == ResponseCode.SUCCESS
        assert tap.frame_errors == 1
        with WireClient(tap.addr) as again:
            assert again.request(route_request()).code == ResponseCode.SUCCESS


class _FakeUpstream:
    """A name server that answers routes, except that a request with code 999 gets bytes that are not a frame."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        reader = FrameReader()
        conn.settimeout(5)
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for frame in reader.feed(data):
                    request, _ = decode(frame)
                    if request.code == 999:
                        conn.sendall(struct.pack(">i", 2) + b"xx")  # a frame length below the minimum
                    else:
                        conn.sendall(encode(request.response(ResponseCode.TOPIC_NOT_EXIST, remark="none")))

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(timeout=2)


def test_a_malformed_frame_from_upstream_closes_only_its_pair(tmp_path: Path) -> None:
    upstream = _FakeUpstream()
    try:
        with Tap("127.0.0.1", 0, upstream.addr, tmp_path / "t", fmt="jsonl") as tap, \
                WireClient(tap.addr) as good, WireClient(tap.addr) as bad:
            assert good.request(route_request()).code == ResponseCode.TOPIC_NOT_EXIST
            bad.send(RemotingCommand.request(999))
            assert bad.closed_by_server(timeout=2.0)
            assert good.request(route_request()).code == ResponseCode.TOPIC_NOT_EXIST
            assert tap.frame_errors == 1
    finally:
        upstream.close()


def test_an_unreachable_upstream_closes_the_client_and_the_tap_keeps_serving(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        dead = f"127.0.0.1:{placeholder.getsockname()[1]}"
    with caplog.at_level(logging.WARNING, logger="rocketspec.tap"), \
            Tap("127.0.0.1", 0, dead, tmp_path / "t", connect_timeout_s=1.0) as tap:
        for _ in range(2):
            with WireClient(tap.addr) as client:
                client.send(route_request())
                with pytest.raises(ConnectionClosed):
                    client.recv(timeout=3.0)
        assert tap.upstream_failures == 2
    assert any("cannot reach namesrv at " + dead in record.getMessage() for record in caplog.records)


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    for upstream in ("nohostport", "host:", ":9876", "host:99999", "host:port"):
        with pytest.raises(TapError, match="upstream must be HOST:PORT"):
            Tap("127.0.0.1", 0, upstream, None)
    assert split_addr("[::1]:9876") == ("::1", 9876)
    with pytest.raises(TapError, match="trace format"):
        Tap("127.0.0.1", 0, "127.0.0.1:9876", tmp_path, fmt="csv")
    with pytest.raises(TapError, match="send_mode"):
        Tap("127.0.0.1", 0, "127.0.0.1:9876", None, send_mode="SOMETIMES")
    with Tap("127.0.0.1", 0, "127.0.0.1:9876", tmp_path / "t", trace_id="same"):
        pass
    with pytest.raises(TapError, match="already exists"):
        Tap("127.0.0.1", 0, "127.0.0.1:9876", tmp_path / "t", trace_id="same")
    with Tap("127.0.0.1", 0, "127.0.0.1:9876", None) as busy:
        port = split_addr(busy.addr)[1]
        with pytest.raises(TapError, match="cannot listen on"):
            Tap("127.0.0.1", port, "127.0.0.1:9876", tmp_path / "never")
    assert not (tmp_path / "never").exists()  # nothing written when the tap cannot start


def test_run_tap_prints_its_address_and_writes_the_trace_when_stopped(
        served: ServedCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = threading.Event()
    out = tmp_path / "trace"
    results: list[Any] = []
    runner = threading.Thread(target=lambda: results.append(
        run_tap("127.0.0.1", 0, served.namesrv_addr, out, fmt="jsonl", trace_id="run", stop=stop)))
    runner.start()
    try:
        deadline = time.monotonic() + 5
        line = ""
        while time.monotonic() < deadline and not line:
            line = capsys.readouterr().out.strip()
            time.sleep(0.02)
        assert line.startswith("tap 127.0.0.1:") and line.endswith(f" -> {served.namesrv_addr}")
        with WireClient(line.split()[1]) as client:
            assert client.request(route_request()).code == ResponseCode.SUCCESS
    finally:
        stop.set()
        runner.join(timeout=5)
    assert not runner.is_alive()
    assert results and results[0]["end"] == "CUT"
    assert [r["kind"] for r in _rows(out)] == ["route.update", "trace.end"]
    assert "trace run: 2 rows in" in capsys.readouterr().err


def test_closing_with_clients_connected_ends_cleanly(served: ServedCluster, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    tap = Tap("127.0.0.1", 0, served.namesrv_addr, tmp_path / "t", fmt="jsonl")
    with caplog.at_level(logging.WARNING), WireClient(tap.addr) as client:
        assert client.request(route_request()).code == ResponseCode.SUCCESS
        manifest = tap.close()
        assert client.closed_by_server(timeout=2.0)
        assert tap.close() == manifest  # idempotent
    assert manifest is not None and manifest["events"] == 2  # route.update and trace.end: no disconnect row
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(split_addr(tap.addr), timeout=1).close()
