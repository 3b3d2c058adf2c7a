"""Durability of the store on real files (issue 14): async flush hands every message to the OS at once (a kill -9
keeps it), sync flush answers a send only after the fsync of its group commit; a served cluster crashed and restarted
keeps what it acknowledged; and ``benchmarks/kill9.py`` kills ``rocketspec serve`` under load in both modes."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rocketspec.conformance import requests
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import Network, RemotingCommand
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.store import ABORT_PATH, CHECKPOINT_PATH, FileDisk, MemoryDisk, MessageStore, MessageToStore
from rocketspec.spec.protocol import ResponseCode

ADDR = "127.0.0.1:10911"
T = "Durable"
KILL9 = Path(__file__).resolve().parent.parent / "benchmarks" / "kill9.py"


class RecordingFsync:
    """An injected fsync: records which file was synced (and when, among other events), then syncs it."""

    def __init__(self, events: list[str], threads: set[str] | None = None) -> None:
        self.events = events
        self.threads = threads if threads is not None else set()

    def __call__(self, fd: int) -> None:
        self.events.append("fsync")
        self.threads.add(threading.current_thread().name)
        os.fsync(fd)


def _store(runtime: SimulatedRuntime, disk: FileDisk | MemoryDisk, flush: str) -> MessageStore:
    return MessageStore(runtime, "broker-a", ADDR, disk=disk, flush=flush, flush_interval_ms=500)


def _put(store: MessageStore, body: bytes) -> None:
    assert store.put_message(MessageToStore(T, 0, body, born_host="10.0.0.1:4000")).ok


def _bodies(store: MessageStore) -> list[bytes]:
    result = store.get_message(T, 0, 0, 100)
    return [m.body for m in decode_stored_messages(b"".join(result.messages), "broker-a")]


def _written(root: Path) -> bytes:
    """What a fresh reader of the files sees (another process after a kill -9 would see the same)."""
    return b"".join(path.read_bytes() for path in sorted((root / "commitlog").iterdir()))


# ---- FileDisk flush modes ---------------------------------------------------------------------------------------


def test_async_flush_writes_each_message_to_the_file_at_once_and_fsyncs_later(tmp_path: Path) -> None:
    runtime = SimulatedRuntime()
    events: list[str] = []
    threads: set[str] = set()
    disk = FileDisk(tmp_path, fsync=RecordingFsync(events, threads))
    store = _store(runtime, disk, "async")
    events.clear()  # the abort file
    threads.clear()
    _put(store, b"first")
    _put(store, b"second")
    assert b"first" in _written(tmp_path) and b"second" in _written(tmp_path)
    assert events == []  # in the OS's hands, not yet fsync'd
    runtime.advance(500)  # FlushRealTimeService's interval
    disk.wait_flushed()
    assert "fsync" in events
    assert threading.current_thread().name not in threads  # the loop never waited for the device
    assert json.loads((tmp_path / CHECKPOINT_PATH).read_bytes())["dispatched"] > 0  # written after the fsyncs
    # A crash of the process (the store stops, nothing more is written) keeps both.
    store.crash()
    reopened = _store(runtime, FileDisk(tmp_path), "async")
    assert reopened.recovered_abnormally and _bodies(reopened) == [b"first", b"second"]
    reopened.close()
    assert not _store(runtime, FileDisk(tmp_path), "async").recovered_abnormally


def test_async_crash_before_any_flush_keeps_queues_offsets_and_next_offset(tmp_path: Path) -> None:
    runtime = SimulatedRuntime()
    store = _store(runtime, FileDisk(tmp_path), "async")
    for i in range(5):
        _put(store, b"m%d" % i)
    store.crash()  # no flush ran: no consume queue, no checkpoint on disk; recovery dispatches the commit log again
    assert (tmp_path / ABORT_PATH).is_file()
    reopened = _store(runtime, FileDisk(tmp_path), "async")
    assert reopened.max_offset(T, 0) == 5 and _bodies(reopened) == [b"m%d" % i for i in range(5)]
    assert reopened.put_message(MessageToStore(T, 0, b"m5", born_host="10.0.0.1:4000")).queue_offset == 5


def test_sync_flush_answers_after_one_fsync_for_the_puts_that_came_together(tmp_path: Path) -> None:
    runtime = SimulatedRuntime()
    events: list[str] = []
    store = _store(runtime, FileDisk(tmp_path, fsync=RecordingFsync(events)), "sync")
    events.clear()
    for i in range(3):
        _put(store, b"s%d" % i)
        store.when_durable(lambda i=i: events.append(f"answer {i}"))
    assert store.awaiting_flush and events == []  # written, not fsync'd, nobody answered
    assert b"s2" in _written(tmp_path)
    runtime.advance(0)  # the group commit runs right after the requests at hand
    assert events == ["fsync", "fsync", "answer 0", "answer 1", "answer 2"]  # the new file, then its directory
    _put(store, b"s3")
    store.when_durable(lambda: events.append("answer 3"))
    runtime.advance(0)
    assert events[5:] == ["fsync", "answer 3"]  # one fsync per group, answers after it
    assert not store.awaiting_flush


def test_memory_disk_keeps_its_power_loss() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = _store(runtime, disk, "async")
    _put(store, b"flushed")
    runtime.advance(500)
    _put(store, b"unflushed")
    store.crash()  # in memory a crash is a power loss: the unflushed tail goes
    assert _bodies(_store(runtime, disk, "async")) == [b"flushed"]


class _Channel:
    remote_addr = "127.0.0.1:5555"
    local_addr = ADDR
    active = True

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.responses: list[RemotingCommand] = []

    def send_response(self, response: RemotingCommand) -> None:
        self.events.append("response")
        self.responses.append(response)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        pass

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Any:
        raise AssertionError("a send never makes the broker call its client")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("wait", [True, False])
def test_sync_broker_answers_a_send_after_the_fsync_unless_wait_is_false(tmp_path: Path, wait: bool) -> None:
    runtime = SimulatedRuntime()
    events: list[str] = []
    log = EventLog(runtime.now_ms)
    broker = Broker(BrokerConfig(broker_name="broker-a", flush="sync"), runtime, Network(runtime, log), log, None,
                    disk=FileDisk(tmp_path, fsync=RecordingFsync(events)))
    broker.start()
    broker.create_topic(T, 4, 4)
    runtime.advance(10)
    events.clear()
    channel = _Channel(events)
    properties = requests.message_properties(wait_store=wait)
    answer = broker.handle(requests.send_v2("PG", T, b"body", 0, properties), channel)
    if wait:
        assert answer is None and events == []  # CommitLog.handleDiskFlush: the answer waits for the group commit
        runtime.advance(0)
        assert events[-1] == "response" and "fsync" in events[:-1]
        answer = channel.responses[0]
    else:
        assert answer is not None and events == []  # answered at once; the fsync follows
        runtime.advance(0)
        assert "fsync" in events
    assert answer.code == ResponseCode.SUCCESS and answer.ext_fields["queueOffset"] == "0"
    broker.shutdown()


# ---- a served cluster crashed and restarted ---------------------------------------------------------------------


@pytest.mark.parametrize("flush", ["async", "sync"])
def test_served_broker_crashed_and_restarted_keeps_acknowledged_messages(tmp_path: Path, flush: str) -> None:
    with ServedCluster(brokers=1, port=0, data_dir=tmp_path, flush=flush) as served:
        served.create_topic(T, 2)
        addr = served.broker_addrs["broker-a"]
        acked = []
        with WireClient(addr) as client:
            for i in range(40):
                response = client.request(requests.send_v2("PG", T, b"acked-%d" % i, i % 2))
                assert response.code == ResponseCode.SUCCESS
                acked.append(b"acked-%d" % i)
        served.restart_broker("broker-a", crash=True)  # a crash right after the answers: no flush ran since
        stored = []
        with WireClient(served.broker_addrs["broker-a"]) as client:
            for queue_id in range(2):
                response = client.request(requests.pull("CG", T, queue_id, 0, max_msgs=32))
                assert response.code == ResponseCode.SUCCESS
                stored += [m.body for m in decode_stored_messages(response.body or b"", "broker-a")]
    assert sorted(stored) == sorted(acked)


# ---- kill -9 of rocketspec serve under load ---------------------------------------------------------------------


def _kill9() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kill9", KILL9)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kill9"] = module  # attrs classes look their module up
    spec.loader.exec_module(module)
    return module


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ports(first: int) -> tuple[int, int]:
    """A name-server port and a broker port (with its VIP port - 2) free now, from ``first`` on (each test its own
    range: they may run at once); the server restarts on them after each kill."""
    for base in range(first, first + 240, 10):
        if all(_free(p) for p in (base, base + 5, base + 3)):
            return base, base + 5
    pytest.skip(f"no free port pair in {first}..{first + 240}")


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_kill9_under_load_loses_nothing_acknowledged(mode: str) -> None:
    kill9 = _kill9()
    port, broker_port = _ports(35500 if mode == "async" else 35750)
    summary = kill9.run(mode, 3, seed=7, producers=4, up_ms=(400, 900), port=port, broker_port=broker_port)
    assert summary.acked > 0, summary.line()
    assert summary.passed, (summary.line(), summary.problems[:10])
    assert summary.line().startswith(f"kill9 mode={mode} kills=3 ") and summary.line().endswith(" PASS")


def test_a_truncated_file_loses_its_unflushed_bytes_in_a_power_loss() -> None:
    """Truncating below the flushed mark moves the mark down; above it, leaves it: a power loss then drops exactly
    what was never flushed."""
    disk = MemoryDisk()
    disk.write_file("a", b"0123")
    disk.flush("a")
    disk.append("a", b"456789")  # unflushed from 4
    disk.truncate("a", 6)
    disk.lose_unflushed()
    assert disk.read_file("a") == b"0123"
    disk.write_file("b", b"01")
    disk.flush("b")
    disk.append("b", b"2345")  # unflushed from 2
    disk.truncate("b", 1)
    disk.append("b", b"xy")
    disk.lose_unflushed()
    assert disk.read_file("b") == b"0"
