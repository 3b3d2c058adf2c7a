"""Benchmark ``rocketspec serve`` with the RocketMQ C++ client: start-up time, send latency, throughput.

    python benchmarks/tcp_serve.py [--count 5000] [--async-count 20000] [--starts 10] [--trace]

Start-up: ``rocketspec serve --port 0`` is started ``--starts`` times; the time from spawning the process to its
``ready`` line, and to the first answered route request, is reported (median and max). Load: one server process
(``rocketspec serve --topic Bench:4``; ``--trace`` records the run as well), then ``benchmarks/cpp_load.py`` phases
in client processes one after another: sequential sync sends (p50/p99 latency and messages/s), async sends with a
window of 256 in flight (messages/s), and a push consumer of a new group reading everything sent (messages/s).
Prints a Markdown table for ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketspec.refimpl.frame import FrameReader, decode, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import RequestCode, ResponseCode

HERE = Path(__file__).resolve().parent


def start_server(*args: str) -> tuple[subprocess.Popen[str], dict[str, str], float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rocketspec", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    addrs: dict[str, str] = {}
    while True:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit("serve exited before it was ready")
        if line.startswith("ready"):
            return proc, addrs, time.perf_counter() - t0
        name, addr = line.split()
        addrs[name] = addr


def first_route(addr: str, topic: str) -> None:
    import socket

    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})))
        reader = FrameReader()
        while not (frames := reader.feed(sock.recv(65536))):
            pass
        assert decode(frames[0])[0].code == ResponseCode.SUCCESS


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def startup(runs: int) -> dict[str, float]:
    ready, routed = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc, addrs, until_ready = start_server("--topic", "T")
        first_route(addrs["namesrv"], "T")
        routed.append(time.perf_counter() - t0)
        ready.append(until_ready)
        stop(proc)
    return {"ready_median_ms": statistics.median(ready) * 1000, "ready_max_ms": max(ready) * 1000,
            "route_median_ms": statistics.median(routed) * 1000, "route_max_ms": max(routed) * 1000}


def load(phase: str, namesrv: str, count: int, home: str) -> dict[str, object]:
    env = dict(os.environ, HOME=home)
    out = subprocess.run([sys.executable, str(HERE / "cpp_load.py"), phase, "--namesrv", namesrv,
                          "--count", str(count)], capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"{phase} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="sync sends")
    parser.add_argument("--async-count", type=int, default=20000, help="async sends")
    parser.add_argument("--starts", type=int, default=10, help="start-up runs")
    parser.add_argument("--trace", action="store_true", help="serve with --trace (recording costs included)")
    args = parser.parse_args()

    boot = startup(args.starts)
    print(f"start-up over {args.starts} runs: ready median {boot['ready_median_ms']:.0f} ms "
          f"(max {boot['ready_max_ms']:.0f}), first route answered median {boot['route_median_ms']:.0f} ms "
          f"(max {boot['route_max_ms']:.0f})", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        extra = ["--trace", str(Path(tmp) / "trace"), "--send-mode", "SYNC"] if args.trace else []
        proc, addrs, _ = start_server("--topic", "Bench:4", *extra)
        try:
            sync = load("sync", addrs["namesrv"], args.count, tmp)
            print(json.dumps(sync), flush=True)
            asyn = load("async", addrs["namesrv"], args.async_count, tmp)
            print(json.dumps(asyn), flush=True)
            consume = load("consume", addrs["namesrv"], args.count + args.async_count + 2, tmp)
            print(json.dumps(consume), flush=True)
        finally:
            stop(proc)

    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| start-up to `ready` (median / max of {args.starts}) | {boot['ready_median_ms']:.0f} ms / "
          f"{boot['ready_max_ms']:.0f} ms |")
    print(f"| start-up to first route answered (median / max) | {boot['route_median_ms']:.0f} ms / "
          f"{boot['route_max_ms']:.0f} ms |")
    print(f"| sync send, {sync['messages']} sequential | {sync['per_s']} msg/s; p50 {sync['p50_ms']} ms, "
          f"p99 {sync['p99_ms']} ms, max {sync['max_ms']} ms |")
    print(f"| async send, {asyn['messages']}, window {asyn['window']} | {asyn['per_s']} msg/s "
          f"({asyn['errors']} errors) |")
    print(f"| push consume, {consume['messages']} messages | {consume['per_s']} msg/s from the first delivery "
          f"({consume['per_s_from_start']} msg/s from start) |")


if __name__ == "__main__":
    main()
