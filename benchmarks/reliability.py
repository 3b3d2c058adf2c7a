"""Attack ``rocketspec serve`` and measure what a well-behaved client keeps (issue 14's reliability scenarios).

    python benchmarks/reliability.py [--scenario flood|nonreaders|slowloris|idle|fuzz|all] [--seconds D]
        [--frames F] [--fuzz-seconds S] [--serve-args "..."] [--port-base P] [--idle-seconds S] [--idle-conns N]
        [--seed N] [--json] [--check]

Each scenario starts ``rocketspec serve`` as a subprocess on 127.0.0.1 (its RSS read from ``/proc/<pid>/status``), a
good client in a process of its own (sync sends in a loop, a route lookup to the name server every 250 ms with its
latency; what it had acknowledged is pulled back at the end) and attackers in processes of their own (raw sockets,
frames from ``rocketspec.refimpl.frame.encode``), so the GIL of one does not skew the others. The good client's
acknowledged sends per second are measured before, during and after the attack (D seconds each):

- ``flood``: 4 connections write small requests of a code no server serves as fast as they can, never reading;
- ``nonreaders``: 16 connections pipeline PULL_MESSAGE (a topic holding messages) and never read;
- ``slowloris``: 200 connections each announce a large frame and trickle its bytes;
- ``idle``: connections that never send must be closed by the server after ``--idle-close`` (RocketMQ's
  serverChannelMaxIdleTimeSeconds); without that serve option the scenario is reported as not measurable;
- ``fuzz``: F malformed frames spread over ``--fuzz-seconds`` (default D): random bytes, truncated frames, bad
  header lengths, bad JSON, huge lengths, mutated valid requests, over many connections; against a second server
  (the control: same load on the machine) and against the good client's server, in ``--fuzz-rounds`` rounds each,
  alternating control, attack, attack, control, ... (the good client's server slows as its store grows; both sides
  get early and late rounds alike). Crashes, tracebacks in serve's stderr and acknowledged messages lost count.
  1M frames in 4 minutes: ``--frames 1000000 --fuzz-seconds 240``.

One summary line per scenario (``--json``: one JSON object per line). ``--check`` exits 1 when the issue's acceptance
fails: flood, nonreaders and slowloris keep at least 50% of the rate during and 90% after, RSS under 300 MB, every
route lookup answered within 1 s; fuzz has 0 crashes, 0 tracebacks, at least 80% of the control's rate; idle closes
every idle connection; and no scenario loses an acknowledged message or leaves the server dead or unanswering.
Every loop is bounded in count and time; every process started is stopped on exit, Ctrl-C or SIGTERM. Options for
serve go in one word: ``--serve-args="--idle-close 5"``; ``--port-base P`` pins the ports (default free ones).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import queue
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

# The attack processes live beside this file (run as a script, its directory is on sys.path; tests add it).
from reliability_attacks import (
    ATTACK_TOPIC,
    GOOD_TOPIC,
    GROUP,
    ROUTE_LIMIT_S,
    UNKNOWN_CODE,
    fuzzer,
    good_client,
    pull_back,
    split,
    trickler,
    writer,
)

from rocketspec.conformance import requests
from rocketspec.conformance.wire import ConnectionClosed, WireClient
from rocketspec.refimpl.frame import FrameError, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import TopicRouteData
from rocketspec.spec.protocol import ResponseCode

SCENARIOS = ("flood", "nonreaders", "slowloris", "idle", "fuzz")
PROBE_TIMEOUT_S = 20.0
RSS_LIMIT_MB = 300.0
READY_TIMEOUT_S, STOP_TIMEOUT_S = 60.0, 10.0
_CTX = multiprocessing.get_context("fork")


# ----------------------------------------------------------------------------------------------------- the server


def serve_options() -> set[str]:
    """The options of this ``rocketspec serve`` (``--idle-close`` and ``--broker-port`` are detected, not assumed)."""
    out = subprocess.run([sys.executable, "-m", "rocketspec", "serve", "--help"], capture_output=True, text=True,
                         timeout=60, check=False).stdout
    return {word.rstrip(",") for word in out.split() if word.startswith("--")}


class PortInUse(RuntimeError):
    """A pinned port is taken: loopback connections of any process may hold it as their ephemeral port for a while."""


class Server:
    """One ``rocketspec serve`` process: stdout and stderr in files, the addresses from its start-up lines."""

    def __init__(self, workdir: Path, name: str, port: int, extra: list[str], options: set[str]) -> None:
        self.stderr_path = workdir / f"{name}.stderr"
        out_path = workdir / f"{name}.stdout"
        cmd = [sys.executable, "-m", "rocketspec", "serve", "--port", str(port),
               "--topic", f"{GOOD_TOPIC}:1", "--topic", f"{ATTACK_TOPIC}:1"]
        if port and "--broker-port" in options:
            cmd += ["--broker-port", str(port + 10)]
        self.command = [*cmd, *extra]
        self.out_path = out_path
        with open(out_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self.addrs: dict[str, str] = {}
        self.namesrv = self.broker = ""
        self.rss_max_mb = 0.0

    def wait_ready(self) -> Server:
        """Wait for the ``ready`` line (started servers start up side by side), then read the addresses."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            lines = self.out_path.read_text(errors="replace").splitlines()
            if any(line.startswith("ready") for line in lines):
                self.addrs = dict(line.split()[:2] for line in lines if len(line.split()) == 2)
                break
            if self.proc.poll() is not None:
                last = (self.stderr_path.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
                error = PortInUse if "already in use" in last else RuntimeError
                raise error(f"serve exited before it was ready: {last}")
            time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("serve was not ready in time")
        self.namesrv, self.broker = self.addrs["namesrv"], self.addrs["broker-a"]
        return self

    def rss_mb(self) -> float:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    value = int(line.split()[1]) / 1024
                    self.rss_max_mb = max(self.rss_max_mb, value)
                    return value
        except OSError:
            pass
        return 0.0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tracebacks(self) -> int:
        return self.stderr_path.read_text(errors="replace").count("Traceback (most recent call last)")

    def stop(self) -> None:
        for sig, wait_s in ((signal.SIGINT, STOP_TIMEOUT_S), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            if self.proc.poll() is not None:
                return
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                continue


def start_servers(stack: ExitStack, workdir: Path, name: str, ports: list[int], extra: list[str],
                  options: set[str]) -> list[Server]:
    """Start the servers side by side; one whose pinned port is taken is started again (3 tries, 1 s apart)."""
    servers = []
    for i, port in enumerate(ports):
        servers.append(Server(workdir, f"{name}-{i + 1}", port, extra, options))
        stack.callback(servers[-1].stop)
    for i, port in enumerate(ports):
        for attempt in range(3):
            try:
                servers[i].wait_ready()
                break
            except PortInUse:
                if attempt == 2:
                    raise
                time.sleep(1.0)
                servers[i] = Server(workdir, f"{name}-{i + 1}", port, extra, options)
                stack.callback(servers[i].stop)
    return servers


def fill_attack_topic(server: Server, count: int = 64, size: int = 4096) -> None:
    """Messages for the non-readers to pull: each pull answer then carries up to 32 of them."""
    with WireClient(server.broker, timeout=10) as client:
        for i in range(count):
            client.request(requests.send_v2("RelAttackGroup", ATTACK_TOPIC, bytes([65 + i % 26]) * size))


def answering(server: Server) -> bool:
    """The server still answers a send and a route lookup (each within ``PROBE_TIMEOUT_S``)."""
    try:
        with WireClient(server.broker, timeout=PROBE_TIMEOUT_S) as client:
            sent = client.request(requests.send_v2(GROUP, ATTACK_TOPIC, b"probe")).code == ResponseCode.SUCCESS
        with WireClient(server.namesrv, timeout=PROBE_TIMEOUT_S) as client:
            route = client.request(requests.route(GOOD_TOPIC))
        return sent and route.code == ResponseCode.SUCCESS and bool(TopicRouteData.from_json(route.body).broker_datas)
    except (OSError, TimeoutError, ConnectionClosed, FrameError, ValueError):
        return False


def namesrv_sizes(server: Server) -> tuple[int | None, int | None]:
    """What fuzzing may leave in the name server: the cluster-info answer's size and the number of topics."""
    try:
        with WireClient(server.namesrv, timeout=PROBE_TIMEOUT_S) as client:
            info = len(client.request(requests.cluster_info()).body or b"")
            topics = requests.json_body(client.request(requests.all_topic_list())) or {}
            return info, len(topics.get("topicList") or ())
    except (OSError, TimeoutError, ConnectionClosed, FrameError, ValueError):
        return None, None


# -------------------------------------------------------------------------------------------------------- a run


@contextmanager
def processes() -> Iterator[list[multiprocessing.process.BaseProcess]]:
    started: list[multiprocessing.process.BaseProcess] = []
    try:
        yield started
    finally:
        for proc in started:
            if proc.is_alive():
                proc.terminate()
        for proc in started:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)


def spawn(started: list[multiprocessing.process.BaseProcess], target: Callable[..., None], *args: Any) -> None:
    proc = _CTX.Process(target=target, args=args, daemon=True)
    proc.start()
    started.append(proc)


def sample_until(until: float, servers: list[Server]) -> None:
    for server in servers:
        server.rss_mb()
    while time.monotonic() < until:
        for server in servers:
            server.rss_mb()
        time.sleep(min(0.1, max(0.0, until - time.monotonic())))


def rate(acks: list[float], start: float, end: float) -> float:
    return sum(start <= t < end for t in acks) / max(end - start, 1e-9)


def run_scenario(name: str, args: argparse.Namespace, options: set[str], workdir: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"scenario": name, "seconds": args.seconds}
    extra = shlex.split(args.serve_args)
    if name == "idle":
        if "--idle-close" not in options:
            return {**result, "measurable": False, "reason": "this serve has no --idle-close option"}
        if "--idle-close" not in extra:
            extra += ["--idle-close", str(args.idle_seconds)]
    base = args.port_base
    with ExitStack() as stack, processes() as started:
        ports = [base, base + 100 if base else 0] if name == "fuzz" else [base]
        servers = start_servers(stack, workdir, name, ports, extra, options)
        server = servers[0]
        if name == "nonreaders":
            fill_attack_topic(server)
        d = args.seconds
        attack_s = d if name != "idle" else max(d, args.idle_seconds + 2.0)
        fuzz_s = args.fuzz_seconds or d
        fuzz_cap = max(10 * fuzz_s, 60.0)
        t0 = time.monotonic() + 0.5  # the good client's connections settle first
        results, stop = _CTX.Queue(), _CTX.Event()
        span = d + attack_s + d + (2 * fuzz_cap + 60 if name == "fuzz" else 0) + 5
        spawn(started, good_client, server.namesrv, server.broker, t0 + span, stop, results)
        sample_until(t0 + d, servers)
        phases = {"before": (t0, t0 + d)}
        windows: dict[str, list[tuple[float, float]]] = {}  # fuzz: the rounds of each label
        idle_socks: list[socket.socket] = []
        if name == "fuzz":
            # Rounds in the order control, attack, attack, control, ...: the good client's server grows with what it
            # stores, and an ABBA order gives both labels the same share of early and late rounds.
            rounds = [label for i in range(args.fuzz_rounds)
                      for label in (("control", "attack") if i % 2 == 0 else ("attack", "control"))]
            for label in ("control", "attack"):
                result[f"{label}_seconds"] = result[f"{label}_frames"] = result[f"{label}_connections"] = 0
                windows[label] = []
            for index, label in enumerate(rounds):
                target = servers[1] if label == "control" else server
                share = args.frames // args.fuzz_rounds + (index // 2 < args.frames % args.fuzz_rounds)
                start = time.monotonic()
                fuzzed = _CTX.Queue()
                workers = 4
                for w in range(workers):
                    spawn(started, fuzzer, [target.namesrv, target.broker], share // workers + (w < share % workers),
                          fuzz_s / args.fuzz_rounds, start + fuzz_cap / args.fuzz_rounds,
                          args.seed * 1000 + index * 10 + w, fuzzed)
                counts: list[dict[str, int]] = []
                while len(counts) < workers and time.monotonic() < start + fuzz_cap / args.fuzz_rounds + 30:
                    try:
                        counts.append(fuzzed.get(timeout=0.1))
                    except queue.Empty:
                        sample_until(time.monotonic(), servers)
                windows[label].append((start, time.monotonic()))
                result[f"{label}_seconds"] = round(result[f"{label}_seconds"] + time.monotonic() - start, 1)
                result[f"{label}_frames"] += sum(c["sent"] for c in counts)
                result[f"{label}_connections"] += sum(c["connections"] for c in counts)
                sample_until(time.monotonic() + 0.5, servers)
        else:
            start = time.monotonic()
            end = start + attack_s
            if name == "flood":
                payload = b"".join(encode(RemotingCommand.request(UNKNOWN_CODE, {"n": str(i)})) for i in range(500))
                for _ in range(4):
                    spawn(started, writer, [server.broker], payload, end)
            elif name == "nonreaders":
                payload = b"".join(encode(requests.pull("RelNonReader", ATTACK_TOPIC, 0, 0)) for _ in range(50))
                for _ in range(4):
                    spawn(started, writer, [server.broker] * 4, payload, end)
            elif name == "slowloris":
                for _ in range(4):
                    spawn(started, trickler, [server.broker if i % 2 else server.namesrv for i in range(50)], end)
            else:
                for i in range(args.idle_conns):
                    sock = socket.create_connection(split(server.broker if i % 2 else server.namesrv), timeout=2)
                    idle_socks.append(sock)
                    stack.callback(sock.close)
            sample_until(end, servers)
            for proc in started[1:]:
                proc.join(timeout=2)
            phases["during"] = (start, end)
            if idle_socks:
                result["idle_open"] = len(idle_socks)
                result["idle_closed"] = sum(closed_by_server(s, deadline=time.monotonic() + 10.0) for s in idle_socks)
        after = time.monotonic()
        phases["after"] = (after, after + d)
        sample_until(after + d, servers)
        stop.set()
        try:
            good = results.get(timeout=span + 30)
        except queue.Empty:
            raise RuntimeError("the good client sent no results") from None
        result["crashed"] = [s.proc.returncode for s in servers if not s.alive()]
        result["answering"] = server.alive() and answering(server)
        seen = pull_back(server.broker, 60.0 + len(good["bodies"]) / 200) if server.alive() else None
        result["lost"] = None if seen is None else len(set(good["bodies"]) - seen)
        result["acked"] = len(good["bodies"])
        result["tracebacks"] = sum(s.tracebacks() for s in servers)
        result["rss_max_mb"] = round(server.rss_max_mb, 1)
        result["rates"] = {label: round(rate(good["acks"], *window), 1) for label, window in phases.items()}
        for label, spans in windows.items():
            acked = sum(rate(good["acks"], start, end) * (end - start) for start, end in spans)
            result["rates"][label] = round(acked / max(sum(end - start for start, end in spans), 1e-9), 1)
        lookups = [lat for t, lat in good["routes"] if t0 <= t < phases["after"][1]]
        result["route_lookups"] = len(lookups)
        result["route_unanswered"] = sum(lat is None or lat > ROUTE_LIMIT_S for lat in lookups)
        result["route_max_s"] = round(max((lat for lat in lookups if lat is not None), default=0.0), 3)
        result["good_errors"] = good["errors"]
        if name == "fuzz":
            result["cluster_info_bytes"], result["topics"] = namesrv_sizes(server)
        result["serve"] = shlex.join(server.command[1:])
    result["criteria"] = criteria(result)
    return result


def closed_by_server(sock: socket.socket, deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except OSError:
            return True
    return False


def criteria(r: dict[str, Any]) -> list[str]:
    """The acceptance checks that fail (empty: PASS)."""
    failed = []
    rates = r["rates"]
    before = rates["before"] or 1e-9
    if r["crashed"]:
        failed.append("server crashed")
    if not r["answering"]:
        failed.append("server not answering after")
    if r["lost"] != 0:
        failed.append(f"lost {r['lost']}")
    if r["scenario"] in ("flood", "nonreaders", "slowloris"):
        if rates["during"] < 0.5 * before:
            failed.append("during < 50%")
        if rates["after"] < 0.9 * before:
            failed.append("after < 90%")
        if r["rss_max_mb"] >= RSS_LIMIT_MB:
            failed.append(f"RSS >= {RSS_LIMIT_MB:.0f} MB")
        if r["route_unanswered"]:
            failed.append(f"{r['route_unanswered']} route lookups over {ROUTE_LIMIT_S:.0f} s")
    if r["scenario"] == "fuzz":
        if r["tracebacks"]:
            failed.append(f"{r['tracebacks']} tracebacks")
        if rates["attack"] < 0.8 * (rates["control"] or 1e-9):
            failed.append("rate < 80% of control")
    if r["scenario"] == "idle" and r["idle_closed"] < r["idle_open"]:
        failed.append(f"{r['idle_open'] - r['idle_closed']} idle connections left open")
    return failed


def summary(r: dict[str, Any]) -> str:
    if r.get("measurable") is False:
        return f"{r['scenario']}: not measurable ({r['reason']})"
    rates = r["rates"]
    before = rates["before"] or 1e-9
    parts = [f"good {rates['before']:.0f}/s before"]
    for label in [k for k in rates if k != "before"]:
        parts.append(f"{rates[label]:.0f}/s {label} ({100 * rates[label] / before:.0f}%)")
    if r["scenario"] == "fuzz":
        parts.append(f"attack/control {100 * rates['attack'] / (rates['control'] or 1e-9):.0f}%")
        parts.append(f"{r['attack_frames']} frames in {r['attack_seconds']} s (control {r['control_frames']} in "
                     f"{r['control_seconds']} s)")
        parts.append(f"cluster info {r['cluster_info_bytes']} bytes, {r['topics']} topics")
    if r["scenario"] == "idle":
        parts.append(f"idle closed {r['idle_closed']}/{r['idle_open']}")
    lost = "?" if r["lost"] is None else r["lost"]
    parts += [f"route lookups max {r['route_max_s']:.2f} s, {r['route_unanswered']} over 1 s",
              f"server RSS max {r['rss_max_mb']:.0f} MB", f"crashes {len(r['crashed'])}",
              f"tracebacks {r['tracebacks']}", f"lost {lost}/{r['acked']}",
              f"answering after {'yes' if r['answering'] else 'NO'}",
              "criteria PASS" if not r["criteria"] else "criteria FAIL: " + ", ".join(r["criteria"])]
    return f"{r['scenario']}: " + "; ".join(parts)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops a run as Ctrl-C does: every process started is stopped


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase (default 10)")
    parser.add_argument("--frames", type=int, default=100_000, help="fuzz frames per fuzzed server (default 100000)")
    parser.add_argument("--fuzz-seconds", type=float, default=0.0,
                        help="what the fuzz frames are spread over, per fuzzed server (default --seconds)")
    parser.add_argument("--fuzz-rounds", type=int, default=4,
                        help="rounds per fuzzed server, alternating control and attack (default 4)")
    parser.add_argument("--serve-args", default="", help="extra arguments for rocketspec serve")
    parser.add_argument("--port-base", type=int, default=0,
                        help="name server port of the first server (its broker: +10, the fuzz control: +100); "
                             "default free ports")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="--idle-close for the idle scenario")
    parser.add_argument("--idle-conns", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON object per scenario")
    parser.add_argument("--check", action="store_true", help="exit 1 when an acceptance criterion fails")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.fuzz_rounds < 1 or \
            min(args.fuzz_seconds, args.frames, args.idle_conns, args.idle_seconds) < 0 \
            or not 0 <= args.port_base < 65_000:
        parser.error("--seconds and --fuzz-rounds must be positive, --fuzz-seconds, --frames, --idle-seconds and "
                     "--idle-conns not negative, --port-base a port")
    try:
        shlex.split(args.serve_args)
    except ValueError as error:
        parser.error(f"--serve-args: {error}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in the background
    failed = False
    try:
        options = serve_options()
        with tempfile.TemporaryDirectory(prefix="rocketspec-reliability-") as tmp:
            for name in SCENARIOS if args.scenario == "all" else [args.scenario]:
                result = run_scenario(name, args, options, Path(tmp))
                print(json.dumps(result) if args.json else summary(result), flush=True)
                failed = failed or bool(result.get("criteria"))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (RuntimeError, OSError) as error:
        print(f"reliability: {error}", file=sys.stderr)
        return 2
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
