"""The RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4, librocketmq) against the reference cluster served over TCP.

Every client runs in a subprocess (``tests/realclients/cpp_driver.py``) with a temporary HOME: the library starts
threads of its own, logs under ``$HOME/logs`` and may hang on shutdown, so it never loads into the test process. The
scenarios of one kind run concurrently against one ``ServedCluster`` of two brokers (topics of 4 queues on each):
the send scenarios in one batch, the consumer scenarios in another; each test then checks what its client reported
against what the brokers stored and committed.

The module is skipped when the package is not installed (it comes with the ``test`` extra on Linux x86-64); where it
is installed there, a library that does not load is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketspec.refimpl.message import MessageExt, MessageQueue
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.spec.protocol import SCHEDULE_TOPIC, RequestCode
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import format_report
from rocketspec.traces.served import TracedServer

DRIVER = Path(__file__).parent / "realclients" / "cpp_driver.py"
QUEUES = 4  # per broker; two brokers give every topic 8 queues
SEND_COUNT = 20
BATCH_SIZE = 10
CLUSTER_COUNT = 40
BROADCAST_COUNT = 20
ORDERLY_COUNT = 40
ORDERLY_SHARDS = 4
RETRY_COUNT = 6
# A shorter delay table (the broker's messageDelayLevel) keeps the module fast; its levels are far enough apart to
# tell which one the broker used. Level 3 is what the broker picks for a consumer's send-back with delayLevel 0 and
# reconsume times 0.
DELAY_LEVELS = "1s 2s 4s"
RETRY_DELAY_S = 4.0
PROCESS_TIMEOUT_S = 90.0


def _library_usable(home: Path) -> str | None:
    """None when the C++ client loads in a subprocess, else why not (the package is absent: skip; broken: fail)."""
    if importlib.util.find_spec("rocketmq") is None:
        pytest.skip("the C++ client (PyPI rocketmq==0.4.4, the `test` extra on Linux x86-64) is not installed")
    try:
        done = subprocess.run([sys.executable, str(DRIVER), "probe", "--timeout", "20"], capture_output=True,
                              text=True, timeout=60, env={**os.environ, "HOME": str(home)})
    except subprocess.TimeoutExpired:
        return "loading the library did not finish within 60 s"
    if done.returncode == 0:
        return None
    reason = f"the C++ client does not load (exit {done.returncode}): {done.stdout.strip()} {done.stderr[-500:]}"
    if not (sys.platform == "linux" and platform.machine() == "x86_64"):
        pytest.skip(reason)  # e.g. the sdist without librocketmq on another platform
    return reason


@pytest.fixture(scope="module")
def cpp_client(tmp_path_factory: pytest.TempPathFactory) -> None:
    problem = _library_usable(tmp_path_factory.mktemp("cpp-probe"))
    if problem is not None:
        pytest.fail(problem)


class WireLog:
    """Every frame the served cluster saw, in arrival order (the observer runs on the socket thread)."""

    def __init__(self) -> None:
        self.frames: list[WireFrame] = []
        self._lock = threading.Lock()

    def __call__(self, frame: WireFrame) -> None:
        with self._lock:
            self.frames.append(frame)

    def snapshot(self) -> list[WireFrame]:
        with self._lock:
            return list(self.frames)

    def requests(self, code: int) -> list[WireFrame]:
        return [f for f in self.snapshot() if f.from_client and not f.command.is_response and f.command.code == code]

    def answered(self) -> list[tuple[WireFrame, WireFrame]]:
        """(request, response) pairs of the clients' requests, matched by connection and opaque."""
        pending: dict[tuple[int, int], WireFrame] = {}
        pairs = []
        for frame in self.snapshot():
            key = (frame.connection, frame.command.opaque)
            if frame.from_client and not frame.command.is_response:
                pending[key] = frame
            elif not frame.from_client and frame.command.is_response and key in pending:
                pairs.append((pending.pop(key), frame))
        return pairs


@pytest.fixture(scope="module")
def wire() -> WireLog:
    return WireLog()


@pytest.fixture(scope="module")
def served(cpp_client: None, wire: WireLog, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    """The served cluster of the module; its trace (broker events and what the wire shows of the clients) must hold
    every invariant once the module is done."""
    trace = tmp_path_factory.mktemp("cpp-trace")
    with TracedServer(trace, fmt="jsonl", brokers=2, observer=wire, message_delay_level=DELAY_LEVELS) as cluster:
        yield cluster
    report = check_python(trace)
    judged = {result.name: result.judged for result in report.results}
    assert report.ok, format_report(report)
    # What crossed the wire was judged (cases, not only rows scanned): pulls by the pull oracle, send-backs by the
    # retry rules.
    if wire.requests(RequestCode.PULL_MESSAGE):
        assert judged["pull_oracle"] > 0 and judged["offset_no_regression"] > 0, judged
    if wire.requests(RequestCode.CONSUMER_SEND_MSG_BACK):
        assert judged["retry_delay_dlq"] > 0, judged


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cpp")


# ------------------------------------------------------------------------------------------------------- drivers


class Driver:
    """One driver subprocess: its own HOME, its JSON lines in a file the test can read while it runs."""

    def __init__(self, workdir: Path, name: str, scenario: str, served: ServedCluster, *args: str) -> None:
        self.name = name
        self.home = workdir / name
        self.home.mkdir()
        self.out_path = workdir / f"{name}.jsonl"
        self.err_path = workdir / f"{name}.err"
        command = [sys.executable, str(DRIVER), scenario, "--namesrv", served.namesrv_addr, "--name", name, *args]
        env = {**os.environ, "HOME": str(self.home)}
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                         cwd=self.home)

    def lines(self, event: str | None = None) -> list[dict[str, Any]]:
        """The complete lines written so far (optionally of one event kind)."""
        out = []
        for raw in self.out_path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            if raw.endswith("\n") and raw.strip():
                line = json.loads(raw)
                if event is None or line.get("event") == event:
                    out.append(line)
        return out

    def acked_bodies(self) -> list[str]:
        return [line["body"] for line in self.lines("consumed") if line["acked"]]

    def describe(self) -> str:
        stdout = self.out_path.read_text(encoding="utf-8", errors="replace")
        stderr = self.err_path.read_text(encoding="utf-8", errors="replace")
        return f"driver {self.name} (exit {self.proc.poll()}):\n{stdout[-3000:]}\nstderr:\n{stderr[-2000:]}"

    def wait(self, timeout: float = PROCESS_TIMEOUT_S) -> list[dict[str, Any]]:
        """Wait for the driver to end; it must exit 0 after its ``done`` line."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"driver {self.name} still running after {timeout} s\n{self.describe()}") from None
        lines = self.lines()
        assert self.proc.returncode == 0, self.describe()
        assert lines and lines[-1]["event"] == "done", self.describe()
        return lines

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def wait_until(check: Callable[[], bool], timeout: float, what: str, describe: Callable[[], str] = str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{describe()}")
        time.sleep(0.1)


def consumer_ids(served: ServedCluster, group: str) -> set[str]:
    """The client ids the brokers have registered in ``group``."""
    cluster = served.cluster
    assert cluster is not None

    def collect() -> set[str]:
        ids: set[str] = set()
        for broker in cluster.brokers.values():
            info = broker.consumers.get(group)
            if info is not None:
                ids.update(info.client_ids())
        return ids

    return cluster.runtime.submit(collect)


def stored(served: ServedCluster, topic: str) -> list[MessageExt]:
    assert served.cluster is not None
    return served.cluster.messages(topic)


def by_body(messages: list[MessageExt]) -> dict[str, MessageExt]:
    """Stored messages by body, without the padding (``|...``) the driver adds to large bodies."""
    out = {m.body.partition(b"|")[0].decode(): m for m in messages}
    assert len(out) == len(messages), "two stored messages with the same body"
    return out


def committed(served: ServedCluster, group: str, topic: str) -> dict[MessageQueue, int]:
    assert served.cluster is not None
    return served.cluster.committed_offsets(group, topic)


def max_offsets(served: ServedCluster, topic: str) -> dict[MessageQueue, int]:
    """Per queue, one past the last stored offset (queues holding messages only)."""
    out: dict[MessageQueue, int] = {}
    for m in stored(served, topic):
        out[m.queue] = max(out.get(m.queue, 0), m.queue_offset + 1)
    return out


def bodies(prefix: str, count: int) -> set[str]:
    return {f"{prefix}-{i}" for i in range(count)}


def run_all(drivers: dict[str, Driver], timeout: float = PROCESS_TIMEOUT_S) -> dict[str, list[dict[str, Any]]]:
    deadline = time.monotonic() + timeout
    return {name: d.wait(max(1.0, deadline - time.monotonic())) for name, d in drivers.items()}


# --------------------------------------------------------------------------------------------------------- sends

SEND_SCENARIOS = ("send-sync", "send-async", "send-oneway", "send-orderly", "send-batch")


def _send_topic(scenario: str) -> str:
    return "Cpp" + scenario.replace("-", "_")


@pytest.fixture(scope="module")
def sends(served: ServedCluster, workdir: Path) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The five send scenarios, run at the same time, each to a topic of its own."""
    drivers: dict[str, Driver] = {}
    try:
        for scenario in SEND_SCENARIOS:
            topic = _send_topic(scenario)
            served.create_topic(topic, queues=QUEUES)
            drivers[scenario] = Driver(
                workdir, scenario, scenario, served, "--topic", topic, "--group", f"PG_{topic}",
                "--count", str(SEND_COUNT), "--body-prefix", topic, "--batch-size", str(BATCH_SIZE),
                "--shards", str(ORDERLY_SHARDS), "--timeout", "30")
        results = run_all(drivers)
        # Then a pull consumer reads the sync topic back, every queue from offset 0.
        topic = _send_topic("send-sync")
        drivers["pull"] = Driver(workdir, "pull", "pull", served, "--topic", topic, "--group", "CppPullGroup",
                                 "--timeout", "30")
        results["pull"] = drivers["pull"].wait()
        yield results
    finally:
        for driver in drivers.values():
            driver.kill()


def _sent(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    errors = [line for line in lines if line["event"] == "error"]
    assert not errors, errors
    sent = [line for line in lines if line["event"] == "sent"]
    assert sorted(line["i"] for line in sent) == list(range(SEND_COUNT))
    return sent


@pytest.mark.parametrize("scenario", ["send-sync", "send-async"])
def test_acknowledged_sends_are_stored_where_the_client_was_told(
        sends: dict[str, list[dict[str, Any]]], served: ServedCluster, scenario: str) -> None:
    """Every sync/async send is SEND_OK; its msgId is the stored UNIQ_KEY and its offset the stored queue offset."""
    topic = _send_topic(scenario)
    sent = _sent(sends[scenario])
    kept = by_body(stored(served, topic))
    assert set(kept) == bodies(topic, SEND_COUNT)
    assert len({line["msg_id"] for line in sent}) == SEND_COUNT
    for line in sent:
        message = kept[line["body"]]
        assert line["status"] == "OK"
        assert line["msg_id"] == message.unique_key
        assert line["offset"] == message.queue_offset
        assert message.keys == (f"key-{line['i']}",) and message.tags == "TagA"
        assert message.reconsume_times == 0
    # The client spreads its sends over the queues of both brokers.
    assert len({m.queue for m in kept.values()}) == 2 * QUEUES


def test_oneway_sends_are_stored(sends: dict[str, list[dict[str, Any]]], served: ServedCluster) -> None:
    """A oneway send gets no answer; every message still reaches a broker."""
    topic = _send_topic("send-oneway")
    sent = _sent(sends["send-oneway"])
    assert all(line["status"] is None for line in sent)
    wait_until(lambda: len(stored(served, topic)) >= SEND_COUNT, 10, "the oneway messages to be stored")
    assert set(by_body(stored(served, topic))) == bodies(topic, SEND_COUNT)


def _client_retries(lines: list[dict[str, Any]], topic: str) -> int:
    """First attempts librocketmq itself sent again to the next queue (``client-retry`` lines from its log)."""
    return sum(1 for line in lines if line["event"] == "client-retry" and line["topic"] == topic and
               line["times"] == 1)


def _main_queue(queues: Counter[MessageQueue]) -> MessageQueue:
    return queues.most_common(1)[0][0]


def test_orderly_sends_keep_one_queue_per_key_in_order(
        sends: dict[str, list[dict[str, Any]]], served: ServedCluster) -> None:
    """send_orderly: the selector's queue holds every message of its key, in the order they were sent.

    Except where the library moved one: its send_orderly sends a failed first attempt again to the next queue of the
    route (sendAutoRetrySelectImpl), e.g. when its connection race (apache/rocketmq-client-cpp#455) fails the attempt
    before anything is written. Each such move is in its log, and only that many messages may leave their queue.
    """
    topic = _send_topic("send-orderly")
    sent = _sent(sends["send-orderly"])
    kept = by_body(stored(served, topic))
    queues_of_shard: dict[int, Counter[MessageQueue]] = defaultdict(Counter)
    for line in sent:
        message = kept[line["body"]]
        assert line["status"] == "OK" and line["queues"] == 2 * QUEUES
        assert line["queue_id"] == line["shard"] % line["queues"]
        assert line["offset"] == message.queue_offset
        queues_of_shard[line["shard"]][message.queue] += 1
    moved = sum(sum(queues.values()) - queues[_main_queue(queues)] for queues in queues_of_shard.values())
    assert moved <= _client_retries(sends["send-orderly"], topic), queues_of_shard
    assert len({_main_queue(queues) for queues in queues_of_shard.values()}) == ORDERLY_SHARDS
    for shard in range(ORDERLY_SHARDS):
        in_order = sorted((line for line in sent if line["shard"] == shard), key=lambda line: line["i"])
        for queue in queues_of_shard[shard]:
            offsets = [kept[line["body"]].queue_offset for line in in_order if kept[line["body"]].queue == queue]
            assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_pull_consumer_reads_every_queue(sends: dict[str, list[dict[str, Any]]], served: ServedCluster) -> None:
    """PullConsumer: the route's queues, then PULL_MESSAGE from offset 0 until NO_NEW_MSG, gives every message."""
    topic = _send_topic("send-sync")
    lines = sends["pull"]
    assert [line for line in lines if line["event"] == "error"] == []
    pulled = [line for line in lines if line["event"] == "consumed"]
    answers = Counter(line["status"] for line in lines if line["event"] == "pulled")
    assert answers["NO_NEW_MSG"] == 2 * QUEUES and answers["OFFSET_ILLEGAL"] == 0, answers
    kept = by_body(stored(served, topic))
    assert sorted(line["body"] for line in pulled) == sorted(kept)
    for line in pulled:
        message = kept[line["body"]]
        assert (line["queue_id"], line["offset"], line["msg_id"]) == (message.queue_id, message.queue_offset,
                                                                       message.unique_key)


def test_batch_send_is_stored_as_one_message_per_batch(
        sends: dict[str, list[dict[str, Any]]], served: ServedCluster) -> None:
    """The C++ client sends a batch as SEND_MESSAGE with header ``batch`` = "1"; Java's header decoding reads that as
    false (``Boolean.parseBoolean``), so a 4.9.8 broker stores the whole encoded batch as one message — as the
    reference broker must."""
    topic = _send_topic("send-batch")
    sent = _sent(sends["send-batch"])
    batches = SEND_COUNT // BATCH_SIZE
    assert {line["batch"] for line in sent} == set(range(batches))
    assert all(line["status"] == "OK" for line in sent)
    kept = stored(served, topic)
    assert len(kept) == batches
    for message in kept:
        assert message.unique_key is None and message.tags is None
    contents = b"".join(m.body for m in kept)
    assert all(f"{topic}-{i}\x00".encode() in contents for i in range(SEND_COUNT))


# ----------------------------------------------------------------------------------------------------- consumers

CLUSTER_TOPIC, CLUSTER_GROUP = "CppClusterTopic", "CppClusterGroup"
BROADCAST_TOPIC, BROADCAST_GROUP = "CppBroadcastTopic", "CppBroadcastGroup"
ORDERLY_TOPIC, ORDERLY_GROUP = "CppOrderlyTopic", "CppOrderlyGroup"
RETRY_TOPIC, RETRY_GROUP = "CppRetryTopic", "CppRetryGroup"
FILTER_TOPIC, FILTER_GROUP = "CppFilterTopic", "CppFilterGroup"
FILTER_COUNT = 12
DELAY_TOPIC, DELAY_GROUP = "CppDelayTopic", "CppDelayGroup"
DELAY_COUNT = 4
DELAY_LEVEL, DELAY_S = 2, 2.0
LARGE_BODY = 5000  # the library compresses bodies of 4096 bytes and more


@pytest.fixture(scope="module")
def consumers(served: ServedCluster, workdir: Path) -> Iterator[dict[str, Driver]]:
    """All consumer scenarios at once: consumers first, then (once the brokers know them) their producers."""
    for topic in (CLUSTER_TOPIC, BROADCAST_TOPIC, ORDERLY_TOPIC, RETRY_TOPIC, FILTER_TOPIC, DELAY_TOPIC):
        served.create_topic(topic, queues=QUEUES)
    stop_file = workdir / "stop-clustering"
    drivers: dict[str, Driver] = {}

    def consumer(name: str, topic: str, group: str, *args: str) -> None:
        drivers[name] = Driver(workdir, name, "consume", served, "--topic", topic, "--group", group,
                               "--timeout", "60", *args)

    def producer(name: str, scenario: str, topic: str, count: int, *args: str) -> None:
        drivers[name] = Driver(workdir, name, scenario, served, "--topic", topic, "--group", f"PG_{topic}",
                               "--count", str(count), "--body-prefix", topic, "--timeout", "30", *args)

    try:
        for name in ("cluster-1", "cluster-2"):
            consumer(name, CLUSTER_TOPIC, CLUSTER_GROUP, "--stop-file", str(stop_file))
        for name in ("broadcast-1", "broadcast-2"):
            consumer(name, BROADCAST_TOPIC, BROADCAST_GROUP, "--model", "broadcasting",
                     "--expect", str(BROADCAST_COUNT), "--linger", "1")
        consumer("orderly", ORDERLY_TOPIC, ORDERLY_GROUP, "--orderly", "--expect", str(ORDERLY_COUNT),
                 "--linger", "1")
        consumer("retry", RETRY_TOPIC, RETRY_GROUP, "--fail-first", "--expect", str(RETRY_COUNT), "--linger", "1")
        # Lingers past the brokers' 5 s re-check of held pulls, which answers the TagB-only queues (see the test).
        consumer("filter", FILTER_TOPIC, FILTER_GROUP, "--expression", "TagA", "--expect", str(FILTER_COUNT // 2),
                 "--linger", "7")
        consumer("delay", DELAY_TOPIC, DELAY_GROUP, "--expect", str(DELAY_COUNT), "--linger", "0.5")
        everyone = {CLUSTER_GROUP: 2, BROADCAST_GROUP: 2, ORDERLY_GROUP: 1, RETRY_GROUP: 1, FILTER_GROUP: 1,
                    DELAY_GROUP: 1}
        wait_until(lambda: all(len(consumer_ids(served, g)) == n for g, n in everyone.items()), 30,
                   "every consumer to register", lambda: "\n".join(d.describe() for d in drivers.values()))
        time.sleep(1.0)  # the brokers' NOTIFY_CONSUMER_IDS_CHANGED makes the first cluster consumer rebalance
        producer("cluster-producer", "send-sync", CLUSTER_TOPIC, CLUSTER_COUNT, "--interval", "0.05")
        producer("broadcast-producer", "send-sync", BROADCAST_TOPIC, BROADCAST_COUNT)
        producer("orderly-producer", "send-orderly", ORDERLY_TOPIC, ORDERLY_COUNT, "--shards", str(ORDERLY_SHARDS))
        producer("retry-producer", "send-sync", RETRY_TOPIC, RETRY_COUNT)
        producer("delay-producer", "send-sync", DELAY_TOPIC, DELAY_COUNT, "--delay-level", str(DELAY_LEVEL))
        producer("filter-producer", "send-sync", FILTER_TOPIC, FILTER_COUNT, "--tags", "TagA,TagB",
                 "--body-size", str(LARGE_BODY))
        clustered = (drivers["cluster-1"], drivers["cluster-2"])
        wanted = bodies(CLUSTER_TOPIC, CLUSTER_COUNT)
        wait_until(lambda: wanted <= {b for d in clustered for b in d.acked_bodies()}, 60,
                   "the two clustering consumers to consume every message",
                   lambda: "\n".join(d.describe() for d in clustered))
        stop_file.touch()
        run_all(drivers)
        yield drivers
    finally:
        for driver in drivers.values():
            driver.kill()


def _producer_ok(driver: Driver, count: int) -> None:
    lines = driver.wait()
    assert [line for line in lines if line["event"] == "error"] == [], driver.describe()
    assert len([line for line in lines if line["event"] == "sent" and line["status"] == "OK"]) == count


def _wait_committed(served: ServedCluster, group: str, topic: str) -> None:
    """The consumers' offset commits (every 5 s and at shutdown) reach every queue's end (an empty queue may have 0
    committed or nothing)."""

    def done() -> bool:
        got, ends = committed(served, group, topic), max_offsets(served, topic)
        return all(got.get(q, 0) == ends.get(q, 0) for q in set(got) | set(ends))

    wait_until(done, 10,
               f"{group} to commit the end of every queue of {topic}",
               lambda: f"committed {committed(served, group, topic)}, ends {max_offsets(served, topic)}")


def test_clustering_consumers_share_the_queues(consumers: dict[str, Driver], served: ServedCluster) -> None:
    """Two consumers of one group split the queues: together they consume every message, each one queue set."""
    _producer_ok(consumers["cluster-producer"], CLUSTER_COUNT)
    kept = by_body(stored(served, CLUSTER_TOPIC))
    seen = {name: consumers[name].acked_bodies() for name in ("cluster-1", "cluster-2")}
    for name, got in seen.items():
        assert got, f"{name} consumed nothing: the queues were not shared"
        assert len(got) == len(set(got)), f"{name} consumed a message twice"
    assert set(seen["cluster-1"]) | set(seen["cluster-2"]) == set(kept)
    queues = {name: {kept[b].queue for b in got} for name, got in seen.items()}
    # Both joined before the first send, so no queue moved while messages flowed: disjoint queue sets.
    assert not queues["cluster-1"] & queues["cluster-2"], queues
    for line in consumers["cluster-1"].lines("consumed") + consumers["cluster-2"].lines("consumed"):
        message = kept[line["body"]]
        assert (line["topic"], line["queue_id"], line["offset"]) == (CLUSTER_TOPIC, message.queue_id,
                                                                     message.queue_offset)
        assert line["msg_id"] == message.unique_key and line["reconsume_times"] == 0
        assert line["keys"] == message.keys[0] and line["tags"] == "TagA"
    _wait_committed(served, CLUSTER_GROUP, CLUSTER_TOPIC)
    assert consumer_ids(served, CLUSTER_GROUP) == set(), "the consumers did not unregister on shutdown"


def test_broadcasting_consumers_each_get_everything(consumers: dict[str, Driver], served: ServedCluster) -> None:
    """Broadcasting: both consumers of the group get every message; offsets stay on the clients."""
    _producer_ok(consumers["broadcast-producer"], BROADCAST_COUNT)
    wanted = bodies(BROADCAST_TOPIC, BROADCAST_COUNT)
    assert set(by_body(stored(served, BROADCAST_TOPIC))) == wanted
    for name in ("broadcast-1", "broadcast-2"):
        got = consumers[name].acked_bodies()
        assert sorted(got) == sorted(wanted), consumers[name].describe()
    assert committed(served, BROADCAST_GROUP, BROADCAST_TOPIC) == {}
    for name in ("broadcast-1", "broadcast-2"):  # LocalFileOffsetStore, under the client's HOME
        assert list(consumers[name].home.glob(f".rocketmq_offsets/*/{BROADCAST_GROUP}/offsets.Json"))


def test_orderly_consumer_keeps_queue_order(consumers: dict[str, Driver], served: ServedCluster,
                                           wire: WireLog) -> None:
    """An orderly consumer (LOCK_BATCH_MQ, one queue at a time) sees every queue's messages in stored order."""
    _producer_ok(consumers["orderly-producer"], ORDERLY_COUNT)
    kept = by_body(stored(served, ORDERLY_TOPIC))
    lines = consumers["orderly"].lines("consumed")
    assert sorted(line["body"] for line in lines) == sorted(kept), consumers["orderly"].describe()
    per_queue: dict[MessageQueue, list[int]] = defaultdict(list)
    for line in lines:
        message = kept[line["body"]]
        assert line["offset"] == message.queue_offset
        per_queue[message.queue].append(message.queue_offset)
    # One queue per sharding key, but for messages the library moved to the next queue (see the send test).
    moves = _client_retries(consumers["orderly-producer"].lines(), ORDERLY_TOPIC)
    assert ORDERLY_SHARDS <= len(per_queue) <= ORDERLY_SHARDS + moves, (per_queue,
                                                                         consumers["orderly-producer"].describe())
    for queue, offsets in per_queue.items():
        assert offsets == list(range(len(offsets))), (queue, offsets)
    # Per sharding key and queue, the bodies arrive in the order they were sent.
    for shard in range(ORDERLY_SHARDS):
        for queue in per_queue:
            order = [int(line["body"].rsplit("-", 1)[1]) for line in lines
                     if int(line["body"].rsplit("-", 1)[1]) % ORDERLY_SHARDS == shard
                     and kept[line["body"]].queue == queue]
            assert order == sorted(order)
    _wait_committed(served, ORDERLY_GROUP, ORDERLY_TOPIC)
    # The queues were locked on their brokers before they were consumed, and unlocked on shutdown.
    locked = [json.loads(r.command.body or b"{}") for q, r in wire.answered()
              if q.command.code == 41 and json.loads(q.command.body or b"{}").get("consumerGroup") == ORDERLY_GROUP]
    assert {(mq["brokerName"], mq["queueId"]) for answer in locked for mq in answer.get("lockOKMQSet", [])} >= {
        (q.broker_name, q.queue_id) for q in per_queue}
    assert any(ORDERLY_GROUP.encode() in (f.command.body or b"") for f in wire.requests(42))


def _assert_held(parked: MessageExt, delivered: MessageExt, delay_s: float) -> None:
    """The schedule service put the message back one level delay after it was parked (within a few 100 ms ticks)."""
    held_ms = delivered.store_timestamp - parked.store_timestamp
    assert delay_s * 1000 <= held_ms <= delay_s * 1000 + 1000, (delivered.body[:40], held_ms)


def test_failed_delivery_comes_back_from_the_retry_topic(consumers: dict[str, Driver], served: ServedCluster,
                                                         wire: WireLog) -> None:
    """RECONSUME_LATER: the client sends the message back; it returns through %RETRY%group after delay level 3
    (4 s in this cluster's table), with reconsume times 1 and the original topic restored."""
    _producer_ok(consumers["retry-producer"], RETRY_COUNT)
    original = by_body(stored(served, RETRY_TOPIC))
    lines = consumers["retry"].lines("consumed")
    deliveries: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        deliveries[line["body"]].append(line)
    assert set(deliveries) == set(original), consumers["retry"].describe()
    for body, seen in deliveries.items():
        assert [(d["reconsume_times"], d["acked"]) for d in seen] == [(0, False), (1, True)], seen
        first, again = seen
        assert again["topic"] == RETRY_TOPIC and again["retry_topic"] == RETRY_TOPIC
        assert again["msg_id"] == first["msg_id"] == original[body].unique_key
        # The client pulls the retry topic from its first periodic rebalance on (10 s after start), so it may see
        # the message later than the broker put it back; never earlier.
        waited = again["at"] - first["at"]
        assert RETRY_DELAY_S - 0.5 <= waited <= RETRY_DELAY_S + 15, (body, waited)
    retry_topic = f"%RETRY%{RETRY_GROUP}"
    retried = by_body(stored(served, retry_topic))
    assert set(retried) == set(original)
    parked = by_body([m for m in stored(served, SCHEDULE_TOPIC) if m.get_property("REAL_TOPIC") == retry_topic])
    assert set(parked) == set(original)
    for body, message in retried.items():
        assert message.reconsume_times == 1
        assert message.get_property("RETRY_TOPIC") == RETRY_TOPIC
        assert message.get_property("ORIGIN_MESSAGE_ID") == original[body].offset_msg_id
        assert parked[body].queue_id == 3 - 1
        _assert_held(parked[body], message, RETRY_DELAY_S)
    _wait_committed(served, RETRY_GROUP, RETRY_TOPIC)
    _wait_committed(served, RETRY_GROUP, retry_topic)
    counts = Counter(line["body"] for line in lines)
    assert set(counts.values()) == {2}
    # The C++ client's send-back: group, commit-log offset and delay level 0 (the broker picks 3 + reconsume times).
    sendbacks = [f.command.ext_fields for f in wire.requests(36) if f.command.ext_fields.get("group") == RETRY_GROUP]
    assert len(sendbacks) == RETRY_COUNT
    assert {fields["delayLevel"] for fields in sendbacks} == {"0"}
    assert sorted(int(fields["offset"]) for fields in sendbacks) == sorted(
        m.commit_log_offset for m in original.values())



def test_send_answered_busy_is_retried_on_the_other_broker(served: ServedCluster, workdir: Path,
                                                            wire: WireLog) -> None:
    """A sync send answered SYSTEM_BUSY is an error for the client, which sends again to a queue of another broker:
    every message is stored exactly once and every send reports SEND_OK."""
    topic, count = "CppBusyTopic", 8
    served.create_topic(topic, queues=QUEUES)
    rule = served.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_BUSY", times=2)
    try:
        lines = Driver(workdir, "busy", "send-sync", served, "--topic", topic, "--group", "PG_busy",
                       "--count", str(count), "--body-prefix", topic, "--timeout", "30").wait()
    finally:
        served.faults.remove(rule)
    assert [line for line in lines if line["event"] in ("error", "retry")] == []
    sent = [line for line in lines if line["event"] == "sent"]
    assert len(sent) == count and all(line["status"] == "OK" for line in sent)
    kept = stored(served, topic)
    assert sorted(m.body.decode() for m in kept) == sorted(bodies(topic, count))
    busy = [(q, r) for q, r in wire.answered()
            if r.command.code == 2 and q.command.ext_fields.get("topic") == topic]
    assert len(busy) == 2 and {q.node for q, _ in busy} == {"broker-a"}
    for request, _ in busy:  # the message the busy broker refused went to broker-b
        body = (request.command.body or b"").decode()
        assert next(m for m in kept if m.body.decode() == body).broker_name == "broker-b"


def test_driver_rejects_bad_arguments(tmp_path: Path) -> None:
    """A usage error is reported by argparse (exit 2) before the library loads, without a traceback."""
    done = subprocess.run([sys.executable, str(DRIVER), "send-sync", "--count", "-3"], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "--count" in done.stderr




def test_consumer_gets_only_the_tags_it_subscribed(consumers: dict[str, Driver], served: ServedCluster) -> None:
    """Subscribing with "TagA": the broker filters by tag hash code and the TagB messages are skipped. A pull held on
    a queue that only gets TagB messages is not woken by them; the broker's periodic check (every 5 s) runs it
    again, the answer is NO_MATCHED (PULL_RETRY_IMMEDIATELY) and the client commits past them."""
    _producer_ok(consumers["filter-producer"], FILTER_COUNT)
    kept = by_body(stored(served, FILTER_TOPIC))
    assert {m.tags for m in kept.values()} == {"TagA", "TagB"}
    lines = consumers["filter"].lines("consumed")
    assert sorted(line["body"] for line in lines) == sorted(b for b, m in kept.items() if m.tags == "TagA")
    assert {line["tags"] for line in lines} == {"TagA"}
    _wait_committed(served, FILTER_GROUP, FILTER_TOPIC)


def test_large_bodies_are_compressed_and_arrive_whole(consumers: dict[str, Driver], served: ServedCluster) -> None:
    """The library zlib-compresses bodies of 4 KiB and more (sysFlag 0x1); the broker stores them as they came and
    the consumer inflates them back."""
    _producer_ok(consumers["filter-producer"], FILTER_COUNT)
    kept = stored(served, FILTER_TOPIC)
    assert kept and all(m.sys_flag & 0x1 for m in kept)
    assert all(len(m.body) == LARGE_BODY for m in kept)  # messages() inflates, as a consumer would
    lines = consumers["filter"].lines("consumed")
    assert lines and all(line["body_len"] == LARGE_BODY and line["padding_ok"] for line in lines)



def test_delayed_messages_wait_for_their_level(consumers: dict[str, Driver], served: ServedCluster) -> None:
    """A message with delay level 2 is parked in SCHEDULE_TOPIC_XXXX and reaches its topic (and the consumer) when
    the level's delay (2 s in this cluster's table) has passed."""
    _producer_ok(consumers["delay-producer"], DELAY_COUNT)
    kept = by_body(stored(served, DELAY_TOPIC))
    assert set(kept) == bodies(DELAY_TOPIC, DELAY_COUNT)
    parked = by_body([m for m in stored(served, SCHEDULE_TOPIC) if m.get_property("REAL_TOPIC") == DELAY_TOPIC])
    assert set(parked) == set(kept) and {m.queue_id for m in parked.values()} == {DELAY_LEVEL - 1}
    for body, message in kept.items():
        _assert_held(parked[body], message, DELAY_S)
    lines = consumers["delay"].lines("consumed")
    assert sorted(line["body"] for line in lines) == sorted(kept)
    for line in lines:
        waited = line["at"] - line["born_timestamp"] / 1000
        assert DELAY_S - 0.5 <= waited <= DELAY_S + 10, (line["body"], waited)
        assert line["topic"] == DELAY_TOPIC and line["reconsume_times"] == 0


def test_the_wire_carries_no_unexpected_errors(sends: dict[str, list[dict[str, Any]]], consumers: dict[str, Driver],
                                               wire: WireLog, served: ServedCluster) -> None:
    """Every frame was the C++ client's (language CPP, version 63) and decoded. The only error answers are those a
    4.9.8 cluster gives too: TOPIC_NOT_EXIST for a retry topic's route, asked before the consumer's first heartbeat
    created it, and SYSTEM_ERROR "no consumer for this group" to a consumer asking for its group's members while
    the last of them shut down."""
    assert served.frame_errors() == 0
    sent = [f.command for f in wire.snapshot() if f.from_client and not f.command.is_response]
    assert sent and {(c.language, c.version) for c in sent} == {(1, 63)}
    errors = [(q.command, r.command) for q, r in wire.answered()
              if r.command.code != 0 and r.command.remark != "injected fault"]  # the faults a test asked for
    for request, response in errors:
        if request.code == 11:  # PULL_NOT_FOUND / PULL_RETRY_IMMEDIATELY are pull statuses, not failures
            assert response.code in (19, 20), (request, response)
            continue
        if request.code == 38:
            group = request.ext_fields["consumerGroup"]
            assert (response.code, response.remark) == (1, f"no consumer for this group, {group}")
            continue
        assert (request.code, response.code) == (105, 17), (request, response)
        assert request.ext_fields["topic"].startswith("%RETRY%")


def test_a_topic_nobody_created_is_created_by_the_first_send(served: ServedCluster, workdir: Path) -> None:
    """autoCreateTopicEnable: the route of TBW102 lets the producer send; the broker creates the topic from it and
    registers it, and every message is stored (4.9.8 defaults)."""
    topic = "AutoCreatedCpp"
    driver = Driver(workdir, "auto-create", "send-sync", served, "--topic", topic, "--count", "6", "--timeout", "60")
    sent = [line for line in driver.wait() if line["event"] == "sent"]
    assert [line["status"] for line in sent] == ["OK"] * 6
    assert sorted(m.unique_key for m in served.cluster.messages(topic)) == sorted(line["msg_id"] for line in sent)


def test_an_orderly_send_that_fails_is_moved_to_the_next_queue_by_the_library(
        served: ServedCluster, workdir: Path) -> None:
    """What the orderly tests allow for, shown: a SYSTEM_ERROR answer to the first attempt makes librocketmq send the
    message again to the next queue of the route, and its log says so (``client-retry``). The connection race of
    apache/rocketmq-client-cpp#455 may move one more (an attempt that failed before it was written): each move is
    one message off the shard's queue."""
    topic = "CppOrderlyMoved"
    served.create_topic(topic, queues=QUEUES)
    rule = served.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_ERROR", times=1)
    driver = Driver(workdir, "orderly-moved", "send-orderly", served, "--topic", topic, "--count", "4",
                    "--shards", "1", "--timeout", "60")
    lines = driver.wait()
    assert rule.fired == 1
    retries = _client_retries(lines, topic)
    assert retries >= 1
    queues = Counter(message.queue for message in stored(served, topic))
    assert sum(queues.values()) == 4 and 4 - queues[_main_queue(queues)] == retries, queues
