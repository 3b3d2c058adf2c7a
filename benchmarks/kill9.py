"""kill -9 of ``rocketspec serve --data-dir`` under load: no acknowledged message lost, no duplicate beyond a retry.

    python benchmarks/kill9.py --mode async|sync [--kills 100] [--seed 1] [--producers 8]
                               [--up-ms 500:2000] [--port 35100] [--broker-port 35110] [--data-dir D]

Starts ``rocketspec serve --data-dir D --flush MODE --port P --broker-port B --topic Kill9:4`` as a subprocess
(127.0.0.1 only), and sends unique bodies to its broker from ``--producers`` threads, each on its own connection with
one sync send (SEND_MESSAGE_V2, WAIT=true) in flight. After a seeded random time under load (``--up-ms``) the server
is killed with SIGKILL, restarted on the same ports and data directory, and the sends that got no answer are sent
again, as a producer retries them (RocketMQ allows those to be stored twice: the first attempt may have been stored
before its answer was lost). After ``--kills`` kills, every queue is pulled from offset 0 and checked:

- every acknowledged body is stored, at the queue and queue offset its answer gave, with the msgId it gave;
- a body is stored twice only if it was sent again after an attempt that got no answer;
- each queue's messages carry queue offsets 0, 1, 2, ... and distinct commit-log offsets.

Prints one summary line (``kill9 mode=... kills=... acked=... lost=0 duplicates=... PASS``) and exits 1 on a loss,
a disallowed duplicate or an inconsistent offset. Every wait is bounded; the server is killed and the data directory
removed (unless given) on exit, Ctrl-C included. ``run`` is the same as a function (tests/test_durability.py).
"""

from __future__ import annotations

import argparse
import collections
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.wire import ConnectionClosed, Unreachable, WireClient
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.spec.protocol import ResponseCode

TOPIC = "Kill9"
QUEUES = 4
GROUP = "kill9-producer"
CHECK_GROUP = "kill9-check"
BROKER_NAME = "broker-a"
SEND_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
BIND_RETRY_S = 60.0
MAX_ATTEMPTS = 20  # sends of one body before the run gives up on it (counted as a failure)


@attrs.define
class Ack:
    queue_id: int
    queue_offset: int
    msg_id: str


@attrs.define
class Summary:
    """What a run found; ``line()`` is the one line the script prints."""

    mode: str
    kills: int
    acked: int = 0
    lost: int = 0
    duplicates: int = 0
    disallowed_duplicates: int = 0
    unacked_resent: int = 0
    inconsistent: int = 0
    gave_up: int = 0
    up_seconds: float = 0.0
    wall_seconds: float = 0.0
    problems: list[str] = attrs.field(factory=list)

    @property
    def passed(self) -> bool:
        return not (self.lost or self.disallowed_duplicates or self.inconsistent or self.gave_up)

    def line(self) -> str:
        rate = self.acked / self.up_seconds if self.up_seconds else 0.0
        extra = ""
        if self.disallowed_duplicates or self.inconsistent or self.gave_up:
            extra = (f" disallowed_duplicates={self.disallowed_duplicates} inconsistent={self.inconsistent}"
                     f" gave_up={self.gave_up}")
        return (f"kill9 mode={self.mode} kills={self.kills} acked={self.acked} lost={self.lost} "
                f"duplicates={self.duplicates} (allowed: re-sent after a lost answer) "
                f"unacked_resent={self.unacked_resent}{extra} send_rate={rate:.0f}/s "
                f"wall={self.wall_seconds:.0f}s {'PASS' if self.passed else 'FAIL'}")


class Server:
    """One ``rocketspec serve`` process; ``kill`` is SIGKILL, ``stop`` SIGTERM then SIGKILL after a timeout."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.argv = argv
        self.log = log
        self.proc: subprocess.Popen[str] | None = None
        self.bind_retries = 0

    def start(self) -> None:
        """Start and wait for the ``ready`` line. A port still taken (this machine's ephemeral ports include ours: a
        client connection elsewhere may hold one for a while) is tried again for up to ``BIND_RETRY_S``."""
        deadline = time.monotonic() + BIND_RETRY_S
        while True:
            try:
                self._start()
                return
            except RuntimeError as error:
                if "address already in use" not in str(error) or time.monotonic() > deadline:
                    raise
                self.bind_retries += 1
                time.sleep(1)

    def _start(self) -> None:
        with open(self.log, "a") as err:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                         text=True)
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:  # reads stdout to its end, so the server never blocks on a full pipe
            for line in stdout:
                lines.put(line)
            lines.put("")

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"serve not ready in {READY_TIMEOUT_S:.0f} s: {self._last_error()}") from None
            if not line:
                raise RuntimeError(f"serve exited with {self.proc.wait(5)} before it was ready: {self._last_error()}")
            if line.startswith("ready"):
                return

    def _last_error(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else "(nothing on stderr)"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        self._reap()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._reap()

    def _reap(self) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None


class Load:
    """The producers' shared book: bodies to send, answers, and which bodies were sent again after no answer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counter = 0
        self.retry: collections.deque[bytes] = collections.deque()
        self.acks: dict[bytes, list[Ack]] = {}
        self.attempts: collections.Counter[bytes] = collections.Counter()
        self.unanswered: set[bytes] = set()  # got no answer at least once (may be stored once more than acked)
        self.refused: set[bytes] = set()  # got an error answer at least once (not stored by that attempt)
        self.resent_after_no_answer: set[bytes] = set()
        self.gave_up: set[bytes] = set()
        self.fresh = True  # new bodies may be made (False: only retries, at the end)
        self.inflight = 0

    def next_body(self) -> bytes | None:
        with self.lock:
            if self.retry:
                body = self.retry.popleft()
                if body in self.unanswered:
                    self.resent_after_no_answer.add(body)
            elif not self.fresh:
                return None
            else:
                self.counter += 1
                body = b"kill9-%08d" % self.counter
            self.inflight += 1
            return body

    def answered(self, body: bytes, ack: Ack) -> None:
        with self.lock:
            self.inflight -= 1
            self.acks.setdefault(body, []).append(ack)

    def failed(self, body: bytes, no_answer: bool) -> None:
        with self.lock:
            self.inflight -= 1
            (self.unanswered if no_answer else self.refused).add(body)
            self.attempts[body] += 1
            if self.attempts[body] >= MAX_ATTEMPTS:
                self.gave_up.add(body)
            else:
                self.retry.append(body)


def _produce(addr: str, load: Load, stop: threading.Event) -> None:
    """One producer connection: sync sends until ``stop`` (or the connection breaks: the server was killed)."""
    try:
        client = WireClient(addr, timeout=SEND_TIMEOUT_S)
    except Unreachable:
        return
    try:
        while not stop.is_set():
            body = load.next_body()
            if body is None:
                return
            queue_id = int(body[-8:]) % QUEUES
            try:
                response = client.request(requests.send_v2(GROUP, TOPIC, body, queue_id), timeout=SEND_TIMEOUT_S)
            except (ConnectionClosed, TimeoutError, OSError):
                load.failed(body, no_answer=True)
                return
            if response.code == ResponseCode.SUCCESS:
                fields = response.ext_fields
                load.answered(body, Ack(int(fields["queueId"]), int(fields["queueOffset"]), fields["msgId"]))
            else:
                load.failed(body, no_answer=False)
    finally:
        client.close()


def _run_producers(addr: str, load: Load, producers: int, until: Callable[[threading.Event], None]) -> None:
    """Run the producers while ``until(stop)`` runs (it sets ``stop`` or kills the server), then join them."""
    stop = threading.Event()
    threads = [threading.Thread(target=_produce, args=(addr, load, stop), daemon=True) for _ in range(producers)]
    for thread in threads:
        thread.start()
    try:
        until(stop)
    finally:
        stop.set()
        for thread in threads:
            thread.join(SEND_TIMEOUT_S + 5)


def _pull_all(addr: str) -> dict[int, list[tuple[int, bytes, str, int]]]:
    """Every stored message of every queue: (queue offset, body, offset msgId, commit-log offset)."""
    found: dict[int, list[tuple[int, bytes, str, int]]] = {}
    with WireClient(addr, timeout=SEND_TIMEOUT_S) as client:
        for queue_id in range(QUEUES):
            max_offset = int(client.request(requests.get_max_offset(TOPIC, queue_id)).ext_fields["offset"])
            messages: list[tuple[int, bytes, str, int]] = []
            offset = 0
            while offset < max_offset:
                response = client.request(requests.pull(CHECK_GROUP, TOPIC, queue_id, offset, max_msgs=32))
                if response.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"pull {queue_id}@{offset} answered {response.code}: {response.remark}")
                for message in decode_stored_messages(response.body or b"", BROKER_NAME):
                    messages.append((message.queue_offset, message.body, message.offset_msg_id,
                                     message.commit_log_offset))
                offset = int(response.ext_fields["nextBeginOffset"])
            found[queue_id] = messages
    return found


def check(load: Load, stored: dict[int, list[tuple[int, bytes, str, int]]], summary: Summary) -> None:
    """Judge what is stored against what was acknowledged (see the module docstring)."""
    where: dict[bytes, list[tuple[int, int, str]]] = {}
    commit_offsets: set[int] = set()
    for queue_id, messages in stored.items():
        for index, (queue_offset, body, msg_id, commit_offset) in enumerate(messages):
            if queue_offset != index or commit_offset in commit_offsets:
                summary.inconsistent += 1
                summary.problems.append(f"queue {queue_id}: message {index} has queue offset {queue_offset}, "
                                        f"commit-log offset {commit_offset}")
            commit_offsets.add(commit_offset)
            where.setdefault(body, []).append((queue_id, queue_offset, msg_id))
    summary.acked = sum(len(acks) for acks in load.acks.values())
    summary.unacked_resent = len(load.resent_after_no_answer)
    summary.gave_up = len(load.gave_up)
    for body, acks in load.acks.items():
        places = where.get(body, [])
        if not places:
            summary.lost += len(acks)
            summary.problems.append(f"lost: {body!r} acknowledged at {acks}")
            continue
        for ack in acks:
            if (ack.queue_id, ack.queue_offset, ack.msg_id) not in places:
                summary.inconsistent += 1
                summary.problems.append(f"{body!r} acknowledged at {ack} but stored at {places}")
    for body, places in where.items():
        if len(places) > 1:
            summary.duplicates += len(places) - 1
            if body not in load.resent_after_no_answer:
                summary.disallowed_duplicates += len(places) - 1
                summary.problems.append(f"duplicate without a lost answer: {body!r} at {places}")
        if body not in load.acks and body not in load.unanswered:
            summary.inconsistent += 1
            summary.problems.append(f"stored but never sent, or refused: {body!r} at {places}")


def run(mode: str, kills: int, seed: int, *, producers: int = 8, up_ms: tuple[int, int] = (500, 2000),
        port: int = 35100, broker_port: int = 35110, data_dir: Path | None = None,
        log: Callable[[str], None] | None = None) -> Summary:
    """Kill the server ``kills`` times under load, then check; see the module docstring."""
    started = time.monotonic()
    rng = random.Random(seed)
    own_dir = data_dir is None
    work = Path(tempfile.mkdtemp(prefix="rocketspec-kill9-"))
    data = work / "data" if data_dir is None else data_dir
    server = Server([sys.executable, "-m", "rocketspec", "serve", "--data-dir", str(data), "--flush", mode,
                     "--host", "127.0.0.1", "--port", str(port), "--broker-port", str(broker_port),
                     "--topic", f"{TOPIC}:{QUEUES}"], work / "serve.log")
    addr = f"127.0.0.1:{broker_port}"
    summary = Summary(mode, kills)
    load = Load()
    try:
        for kill in range(kills):
            server.start()
            up = rng.uniform(*up_ms) / 1000

            def kill_after(stop: threading.Event, up: float = up) -> None:
                t0 = time.monotonic()
                stop.wait(up)
                server.kill()  # SIGKILL while the producers are sending
                summary.up_seconds += time.monotonic() - t0

            _run_producers(addr, load, producers, kill_after)
            if log is not None:
                log(f"kill {kill + 1}/{kills}: {sum(len(a) for a in load.acks.values())} acked, "
                    f"{len(load.retry)} to send again")
        server.start()
        load.fresh = False  # only the sends that got no answer are left

        def drain(stop: threading.Event) -> None:
            deadline = time.monotonic() + 60
            while (load.retry or load.inflight) and time.monotonic() < deadline:
                time.sleep(0.05)

        for _ in range(3):  # a producer whose send timed out leaves; the others take its body
            _run_producers(addr, load, producers, drain)
            if not load.retry:
                break
        check(load, _pull_all(addr), summary)
        server.stop()
    finally:
        server.kill()
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
    summary.wall_seconds = time.monotonic() - started
    return summary


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition(":")
    try:
        values = (int(low), int(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MS or MIN:MAX in ms, not {text!r}") from None
    if not 0 < values[0] <= values[1]:
        raise argparse.ArgumentTypeError(f"expected 0 < MIN <= MAX, not {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("async", "sync"), required=True, help="serve --flush")
    parser.add_argument("--kills", type=int, default=100, help="kills (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments (default 1)")
    parser.add_argument("--producers", type=int, default=8, help="producer connections (default 8)")
    parser.add_argument("--up-ms", type=_range, default=(500, 2000), metavar="MIN:MAX",
                        help="time under load before each kill, drawn from this range (default 500:2000)")
    parser.add_argument("--port", type=int, default=35100, help="name server port (default 35100)")
    parser.add_argument("--broker-port", type=int, default=35110, help="broker port (default 35110)")
    parser.add_argument("--data-dir", type=Path, help="data directory (default a temporary one, removed at the end)")
    parser.add_argument("--verbose", action="store_true", help="a line per kill on stderr")
    args = parser.parse_args(argv)
    if args.kills < 1 or args.producers < 1:
        parser.error("--kills and --producers must be positive")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        summary = run(args.mode, args.kills, args.seed, producers=args.producers, up_ms=args.up_ms, port=args.port,
                      broker_port=args.broker_port, data_dir=args.data_dir, log=log if args.verbose else None)
    except KeyboardInterrupt:
        print("kill9: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as error:
        print(f"kill9: {error}", file=sys.stderr)
        return 2
    for problem in summary.problems[:20]:
        print(f"  {problem}", file=sys.stderr)
    print(summary.line(), flush=True)
    return 0 if summary.passed else 1


if __name__ == "__main__":
    sys.exit(main())
