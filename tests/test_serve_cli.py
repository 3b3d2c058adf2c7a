"""``rocketspec serve``: prints its addresses, serves until interrupted, refuses bad input in one line."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rocketspec.refimpl.frame import FrameReader, decode, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import RequestCode, ResponseCode

CLI = [sys.executable, "-m", "rocketspec"]


def ask(addr: str, command: RemotingCommand) -> RemotingCommand:
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(encode(command))
        reader = FrameReader()
        while True:
            data = sock.recv(65536)
            assert data, "connection closed without a response"
            frames = reader.feed(data)
            if frames:
                return decode(frames[0])[0]


@contextmanager
def serving(*args: str) -> Iterator[dict[str, str]]:
    """Start ``rocketspec serve``; yield its printed addresses; stop it with SIGINT and expect exit 0."""
    proc = subprocess.Popen([*CLI, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        addrs: dict[str, str] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line, f"serve exited early: {proc.stderr.read()}"  # type: ignore[union-attr]
            if line.startswith("ready in"):
                break
            name, addr = line.split()
            addrs[name] = addr
        yield addrs
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(timeout=20) == 0, proc.stderr.read()  # type: ignore[union-attr]
        finally:
            if proc.poll() is None:
                proc.kill()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_serve_prints_addresses_and_serves_routes_until_interrupted() -> None:
    with serving("--brokers", "2", "--topic", "Orders:3") as addrs:
        assert set(addrs) == {"namesrv", "broker-a", "broker-b"}
        route = ask(addrs["namesrv"], RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"}))
        assert route.code == ResponseCode.SUCCESS
        body = json.loads(route.body or b"")
        assert sorted(d["brokerAddrs"]["0"] for d in body["brokerDatas"]) == sorted([addrs["broker-a"],
                                                                                      addrs["broker-b"]])
        assert {q["writeQueueNums"] for q in body["queueDatas"]} == {3}
        # The broker answers on the address the name server hands out.
        offset = ask(addrs["broker-b"], RemotingCommand.request(RequestCode.GET_MAX_OFFSET,
                                                                {"topic": "Orders", "queueId": 2}))
        assert (offset.code, offset.ext_fields["offset"]) == (ResponseCode.SUCCESS, "0")


def test_serve_applies_a_fault_file_from_the_start(tmp_path: Path) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"action": "fail", "target": "broker-a", "request": "GET_MAX_OFFSET",
                                   "code": "SYSTEM_BUSY", "times": 1}]))
    with serving("--faults", str(faults), "--topic", "T") as addrs:
        request = {"topic": "T", "queueId": 0}
        first = ask(addrs["broker-a"], RemotingCommand.request(RequestCode.GET_MAX_OFFSET, request))
        second = ask(addrs["broker-a"], RemotingCommand.request(RequestCode.GET_MAX_OFFSET, request))
        assert (first.code, second.code) == (ResponseCode.SYSTEM_BUSY, ResponseCode.SUCCESS)


def test_serve_keeps_data_in_a_data_dir_across_restarts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving("--data-dir", str(data), "--topic", "Kept:2"):
        pass
    with serving("--data-dir", str(data)) as addrs:
        route = ask(addrs["namesrv"], RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Kept"}))
        assert route.code == ResponseCode.SUCCESS


def test_serve_records_a_trace_on_interrupt(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    with serving("--trace", str(out), "--trace-format", "jsonl", "--topic", "T"):
        pass
    assert (out / "_trace.json").is_file()
    rows = [json.loads(line) for path in out.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert rows and rows[-1]["kind"] == "trace.end"
    checked = run_cli("traces", "check", str(out), "--engine", "python")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"action": "explode"}]')
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = str(busy.getsockname()[1])
    nonempty = tmp_path / "nonempty"
    nonempty.mkdir()
    (nonempty / "x").write_text("x")
    try:
        cases = {
            ("serve", "--faults", str(bad)): "fault action must be one of",
            ("serve", "--faults", str(tmp_path / "missing.json")): "cannot read fault file",
            ("serve", "--port", taken): "cannot listen on 127.0.0.1:" + taken,
            ("serve", "--port", "0", "--trace", str(nonempty)): "is not empty",
            ("serve", "--brokers", "0"): "must be positive",
            ("serve", "--topic", ":3"): "a topic needs a name",
            ("serve", "--port", "0", "--message-delay-level", "1x"): "bad delay level item '1x'",
        }
        for args, message in cases.items():
            result = run_cli(*args)
            assert result.returncode == 2, (args, result.stderr)
            assert message in result.stderr, (args, result.stderr)
            assert "Traceback" not in result.stderr
    finally:
        busy.close()


def test_tap_records_traffic_through_it_until_interrupted(tmp_path: Path) -> None:
    out = tmp_path / "tap-trace"
    with serving("--topic", "T") as addrs:
        proc = subprocess.Popen([*CLI, "tap", "--listen", "0", "--upstream", addrs["namesrv"], "--trace", str(out),
                                 "--trace-format", "jsonl", "--message-delay-level", "1s 1s 2s"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            assert line.startswith("tap "), proc.stderr.read()  # type: ignore[union-attr]
            listen = line.split()[1]
            route = ask(listen, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}))
            assert route.code == ResponseCode.SUCCESS
            assert addrs["broker-a"].encode() not in (route.body or b"")  # rewritten to the tap's broker proxy
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=20) == 0, proc.stderr.read()  # type: ignore[union-attr]
    rows = [json.loads(line) for path in out.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert [r["kind"] for r in rows][-1] == "trace.end"
    assert "route.update" in {r["kind"] for r in rows}
    manifest = json.loads((out / "_trace.json").read_text())
    assert list(manifest["delay_levels_ms"].values()) == [[1000, 1000, 2000]]


def test_tap_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = {
        ("tap", "--listen", "0", "--upstream", "nohostport", "--trace", str(tmp_path / "t")): "expected HOST:PORT",
        ("tap", "--listen", "70000", "--upstream", "127.0.0.1:9876", "--trace", str(tmp_path / "t")): "not a port",
        ("tap", "--listen", "0", "--upstream", "127.0.0.1:9876"): "--trace",
        ("tap", "--listen", "0", "--upstream", "127.0.0.1:9876", "--trace", str(tmp_path / "t"),
         "--message-delay-level", "0s"): "level 1 delay must be positive",
        ("serve", "--message-delay-level", "0s"): "level 1 delay must be positive",  # the same rule, the same words
    }
    for args, message in cases.items():
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_topics_are_validated_like_rocketmq_does() -> None:
    from rocketspec.refimpl.served import ServedCluster

    with ServedCluster() as served:
        for bad in ("a b", "x" * 128, "semi;colon"):
            try:
                served.create_topic(bad)
            except ValueError as error:
                assert "topic" in str(error)
            else:
                raise AssertionError(f"{bad!r} was accepted")
        served.create_topic("ok_Topic-1%|x")
