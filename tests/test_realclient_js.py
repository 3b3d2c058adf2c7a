"""The JavaScript RocketMQ client (npm ``ali-ons`` 3.12.0) against the reference cluster served over TCP.

The client is installed by ``npm ci`` from ``tests/realclients/js/package-lock.json`` into a cache directory (one per
lockfile hash: ``$ROCKETSPEC_JS_CACHE``, else ``$XDG_CACHE_HOME/rocketspec/realclient-js`` or
``~/.cache/rocketspec/realclient-js``) and driven by ``tests/realclients/js/driver.js``, one subprocess per client,
which prints one JSON object per line (see the driver's header). The tests skip only when ``node`` or ``npm`` is not
installed; a failing install fails them.

What the client does that the server has to accept (``shared/REFERENCE.md`` §D): SEND_MESSAGE_V2 with JSON numbers and
booleans in extFields, ``language`` JAVA and version 121 (routes come back with unquoted ``brokerAddrs`` keys), string
enums in heartbeats, UPDATE_CONSUMER_OFFSET without the oneway flag, CONSUMER_SEND_MSG_BACK with delayLevel 0 (the
broker picks level 3 + reconsume times). A new group's first route query for ``%RETRY%<group>`` fails with
TOPIC_NOT_EXIST, as on a Java broker: the broker creates that topic at the group's first heartbeat, which the client
sends after its first route refresh.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jsinstall import install_driver

from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import format_report
from rocketspec.traces.served import TracedServer

JS_DIR = Path(__file__).parent / "realclients" / "js"
TOPIC = "TopicJs"
QUEUES = 4
# The broker's delay for a message sent back with delayLevel 0 the first time (level 3).
FIRST_RETRY_DELAY_MS = DELAY_LEVEL_MILLIS[2]

Event = dict[str, Any]


# ---------------------------------------------------------------------------------------------------- installation




@pytest.fixture(scope="session")
def js_driver() -> Driver:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the ali-ons client tests (not installed)")
    return Driver(node, install_driver(JS_DIR, npm))


# ---------------------------------------------------------------------------------------------------- the driver


class DriverProcess:
    """One running driver: its stdout parsed into events as they arrive (a reader thread), its stdin for ``stop``."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.events: list[Event] = []
        self._arrived: queue.Queue[None] = queue.Queue()
        self._stderr: list[str] = []
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "unparsed", "line": line.rstrip("\n")}
            self.events.append(event)
            self._arrived.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.get("event") == kind]

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Until ``predicate()`` holds (checked after every event); fails after ``timeout_s`` or if the driver ends."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0 or (self.proc.poll() is not None and self._arrived.empty()):
                pytest.fail(f"{what}: not seen within {timeout_s} s\n{self.describe()}")
            with contextlib.suppress(queue.Empty):
                self._arrived.get(timeout=min(left, 0.2))

    def stop(self) -> None:
        """Ask a consumer scenario to finish (close its client, commit its offsets, exit)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()

    def finish(self, timeout_s: float) -> int:
        """The exit status; the process is killed if it has not ended within ``timeout_s``."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.close()
            pytest.fail(f"driver still running after {timeout_s} s\n{self.describe()}")
        for thread in self._threads:
            thread.join(timeout=5)
        return self.proc.returncode

    def close(self) -> None:
        """Kill the process if it still runs, then release its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for thread in self._threads:
            thread.join(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def describe(self) -> str:
        lines = [json.dumps(e) for e in self.events[-40:]]
        return (f"$ {' '.join(self.argv[1:])}\nexit: {self.proc.poll()}\nstdout (last 40):\n" + "\n".join(lines)
                + f"\nstderr (last 3000 chars):\n{self.stderr[-3000:]}")


class Driver:
    """Runs ``driver.js`` scenarios against a served cluster."""

    def __init__(self, node: str, script: Path) -> None:
        self.node = node
        self.script = script

    def argv(self, scenario: str, served: ServedCluster, group: str, **options: Any) -> list[str]:
        argv = [self.node, str(self.script), scenario, "--namesrv", served.namesrv_addr, "--topic", TOPIC,
                "--group", group]
        for name, value in options.items():
            argv += [f"--{name.replace('_', '-')}", str(value)]
        return argv

    @contextlib.contextmanager
    def start(self, scenario: str, served: ServedCluster, group: str, **options: Any) -> Iterator[DriverProcess]:
        """A driver running in the background; killed on the way out if still running (no leftover processes)."""
        process = DriverProcess(self.argv(scenario, served, group, **options))
        try:
            yield process
        finally:
            process.close()

    def run(self, scenario: str, served: ServedCluster, group: str, **options: Any) -> DriverProcess:
        """Run a scenario to its end; it must exit 0 (its own ``--timeout`` bounds it, ours is a margin on top)."""
        timeout_s = int(options.setdefault("timeout", 20))
        with self.start(scenario, served, group, **options) as process:
            status = process.finish(timeout_s + 10)
        assert status == 0, process.describe()
        return process


def unexpected_errors(process: DriverProcess) -> list[Event]:
    """Client errors other than the expected ones: the handler failing on purpose, and a new group's first route
    query for its retry topic (TOPIC_NOT_EXIST until the broker has seen the group's first heartbeat)."""
    return [e for e in process.events
            if e["event"] in ("error", "unparsed")
            and "fails on purpose" not in e.get("message", "")
            and not (e.get("code") == 17 and "%RETRY%" in e.get("message", ""))]


def wait_committed(served: ServedCluster, group: str, topic: str, expected: dict[int, int]) -> None:
    """The broker applies a client's last UPDATE_CONSUMER_OFFSET (oneway) a moment after the client has exited."""
    deadline = time.monotonic() + 5
    while True:
        committed = {mq.queue_id: offset for mq, offset in served.cluster.committed_offsets(group, topic).items()}
        if committed == expected or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert committed == expected


# ---------------------------------------------------------------------------------------------------- tests


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCluster]:
    """A served cluster per test; its trace (broker events, and what the wire shows of the client) must hold every
    invariant once the test is done."""
    trace = tmp_path / "trace"
    with TracedServer(trace, fmt="jsonl", brokers=1) as served:
        served.create_topic(TOPIC, queues=QUEUES)
        yield served
    report = check_python(trace)
    assert report.ok, format_report(report)


def send(js_driver: Driver, served: ServedCluster, count: int, **options: Any) -> list[Event]:
    producer = js_driver.run("send", served, "PG_JS", count=count, **options)
    assert unexpected_errors(producer) == [], producer.describe()
    sent = producer.of("sent")
    assert len(sent) == count, producer.describe()
    return sent


def test_driver_rejects_bad_arguments(js_driver: Driver) -> None:
    done = subprocess.run([js_driver.node, str(js_driver.script), "send", "--namesrv", "nowhere", "--topic", "T",
                           "--group", "G"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert "--namesrv must be HOST:PORT" in done.stderr and "usage:" in done.stderr
    assert "at " not in done.stderr  # a message, not a stack trace


def test_send_stores_every_message(js_driver: Driver, served: ServedCluster) -> None:
    sent = send(js_driver, served, 8, tag="TagB", prefix="s")
    assert {e["status"] for e in sent} == {"SEND_OK"}
    assert {e["brokerName"] for e in sent} == {"broker-a"}
    # The client picks queues round-robin: 8 messages, two per queue, offsets 0 and 1.
    assert sorted((e["queue"], e["offset"]) for e in sent) == [(q, o) for q in range(QUEUES) for o in (0, 1)]

    stored = {m.offset_msg_id: m for m in served.cluster.messages(TOPIC)}
    assert sorted(stored) == sorted(e["msgId"] for e in sent)  # msgId is the offset message id of the stored copy
    for e in sent:
        message = stored[e["msgId"]]
        assert (message.body.decode(), message.tags, message.keys) == (e["body"], "TagB", (e["keys"],))
        assert (message.queue_id, message.queue_offset) == (e["queue"], e["offset"])
        assert message.reconsume_times == 0 and message.born_host.startswith("127.0.0.1:")


def test_clustering_consumer_gets_every_message(js_driver: Driver, served: ServedCluster) -> None:
    sent = {e["keys"]: e for e in send(js_driver, served, 8)}
    consumer = js_driver.run("consume", served, "CG_JS", count=8)
    assert unexpected_errors(consumer) == [], consumer.describe()
    assert consumer.of("queues")[-1]["queues"] == list(range(QUEUES))

    # A new group with CONSUME_FROM_LAST_OFFSET still starts at 0: the broker answers offset 0 for a queue whose
    # first message is still in memory.
    got = consumer.of("message")
    assert sorted(m["keys"] for m in got) == sorted(sent), consumer.describe()
    for m in got:
        e = sent[m["keys"]]
        assert m["action"] == "ok" and m["topic"] == TOPIC and m["reconsumeTimes"] == 0
        assert (m["msgId"], m["queueId"], m["queueOffset"]) == (e["msgId"], e["queue"], e["offset"])
        assert (m["tags"], m["body"]) == (e["tags"], e["body"])
    wait_committed(served, "CG_JS", TOPIC, {q: 2 for q in range(QUEUES)})

    # A consumer of the same group started later resumes at the committed offsets: only the new messages.
    late = {e["keys"]: e for e in send(js_driver, served, 4, prefix="late")}
    again = js_driver.run("consume", served, "CG_JS", count=4)
    assert unexpected_errors(again) == [], again.describe()
    assert sorted(m["keys"] for m in again.of("message")) == sorted(late), again.describe()
    wait_committed(served, "CG_JS", TOPIC, {q: 3 for q in range(QUEUES)})


def test_two_consumers_split_the_queues(js_driver: Driver, served: ServedCluster) -> None:
    with js_driver.start("consume", served, "SPLIT_JS", count=0, timeout=40) as first, \
            js_driver.start("consume", served, "SPLIT_JS", count=0, timeout=40) as second:
        def queues(process: DriverProcess) -> set[int]:
            changes = process.of("queues")
            return set(changes[-1]["queues"]) if changes else set()

        def split() -> bool:
            mine, theirs = queues(first), queues(second)
            return bool(mine) and bool(theirs) and not mine & theirs and mine | theirs == set(range(QUEUES))

        # Each client rebalances on its own timer (1 s here); wait until both hold two queues each.
        first.wait_for(lambda: split() and len(queues(first)) == 2, 20, "the queues split between two consumers")
        owned = {"first": queues(first), "second": queues(second)}
        sent = {e["keys"]: e for e in send(js_driver, served, 8)}

        def keys_seen() -> set[str]:
            return {m["keys"] for p in (first, second) for m in p.of("message")}

        first.wait_for(lambda: keys_seen() == set(sent), 20, "every message at one of the consumers")
        for process in (first, second):
            process.stop()
        assert first.finish(20) == 0 and second.finish(20) == 0, first.describe() + second.describe()

    for name, process in (("first", first), ("second", second)):
        assert unexpected_errors(process) == [], process.describe()
        got = process.of("message")
        assert {m["queueId"] for m in got} <= owned[name]
        assert sorted(m["keys"] for m in got) == sorted(k for k, e in sent.items() if e["queue"] in owned[name])
    wait_committed(served, "SPLIT_JS", TOPIC, {q: 2 for q in range(QUEUES)})


def test_failing_handler_redelivers_through_the_retry_topic(js_driver: Driver, served: ServedCluster) -> None:
    sent = {e["keys"]: e for e in send(js_driver, served, 4)}
    consumer = js_driver.run("retry", served, "RETRY_JS", count=4, timeout=int(FIRST_RETRY_DELAY_MS / 1000) + 20)
    assert unexpected_errors(consumer) == [], consumer.describe()

    retry_topic = "%RETRY%RETRY_JS"
    retried = {m.keys[0]: m for m in served.cluster.messages(retry_topic)}
    original = {m.keys[0]: m for m in served.cluster.messages(TOPIC)}
    assert sorted(retried) == sorted(sent)
    for key, e in sent.items():
        deliveries = [m for m in consumer.of("message") if m["keys"] == key]
        assert [(m["action"], m["reconsumeTimes"]) for m in deliveries] == [("throw", 0), ("ok", 1)], deliveries
        first, again = deliveries
        assert (first["topic"], first["msgId"], first["originMsgId"]) == (TOPIC, e["msgId"], None)
        # The client puts the original topic back (from RETRY_TOPIC) before calling the handler.
        assert (again["topic"], again["retryTopic"], again["originMsgId"]) == (TOPIC, TOPIC, e["msgId"])
        assert (again["body"], again["tags"]) == (e["body"], e["tags"])

        copy = retried[key]
        assert copy.offset_msg_id == again["msgId"] and copy.reconsume_times == 1
        assert copy.properties["RETRY_TOPIC"] == TOPIC and copy.properties["ORIGIN_MESSAGE_ID"] == e["msgId"]
        # delayLevel 0 from the client: the broker delays the first retry by level 3 (10 s).
        assert copy.store_timestamp - original[key].store_timestamp >= FIRST_RETRY_DELAY_MS
    wait_committed(served, "RETRY_JS", TOPIC, {q: 1 for q in range(QUEUES)})
    wait_committed(served, "RETRY_JS", retry_topic, {0: 4})
