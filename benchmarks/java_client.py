"""Benchmark the official Java 4.9.8 client against ``rocketspec serve`` and a real RocketMQ 4.9.8, in one run.

    python benchmarks/java_client.py --rocketmq-home ROCKETMQ_HOME [--count 5000] [--count16 20000] [--size 1024]
                                     [--warmup 500] [--starts 3] [--only serve|real]

Each target runs alone, one after the other, with one broker on loopback: ``rocketspec serve --brokers 1 --topic
Bench:4`` (its own process, as a user starts it) and a real 4.9.8 name server and broker from ``bin/cluster.sh``
(topic Bench with 4 queues made by ``mqadmin updateTopic``). Against each, ``benchmarks/java/rocketspec/bench/
Load.java`` (compiled here with ``javac`` against the home's ``lib/*``) runs four phases, each in a fresh JVM:

1. sync sends of ``--size``-byte bodies from 1 thread (``--count`` messages, after ``--warmup`` untimed ones);
2. the same from 16 threads (``--count16`` messages);
3. a push consumer of a new group with 1 consume thread reading everything the topic holds;
4. the same with 16 consume threads (another new group).

Start-up is the time from spawning the server to the moment a client can be served: ``serve``'s ``ready`` line, and
``cluster.sh start`` returning (the name server booted and the broker registered with it), the median of
``--starts`` starts of ``serve`` (after one not counted, which compiles the modules as a first run after an install
does) against one of the real cluster. Prints a Markdown table for ``docs/benchmarks.md`` with the
ratio serve / real of each figure (higher is better for serve, for start-up it is real / serve).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from realcluster import RealCluster  # noqa: E402  (the tests' helper for cluster.sh, shared rather than copied)

TOPIC = "Bench"
QUEUES = 4
JVM = ("-Xms256m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:-UsePerfData")
PHASE_TIMEOUT_S = 600


def compile_load(home: Path, out: Path) -> Path:
    sources = sorted((HERE / "java").rglob("*.java"))
    done = subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", f"{home}/lib/*", *map(str, sources)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"javac failed: {done.stderr.strip().splitlines()[-1:]}")
    return out


def run_phase(home: Path, classes: Path, work: Path, namesrv: str, mode: str, threads: int, count: int,
              size: int, warmup: int, group: str) -> dict[str, float]:
    user_home = Path(tempfile.mkdtemp(prefix="java-home-", dir=work))
    cmd = ["java", *JVM, f"-Duser.home={user_home}", f"-Drocketmq.client.logRoot={user_home}/logs",
           "-Drocketmq.client.logLevel=ERROR", "-Drocketmq.client.logUseSlf4j=false",
           f"-Dlogback.configurationFile={home}/conf/logback-client-quiet.xml",
           "-cp", f"{classes}:{home}/lib/*", "rocketspec.bench.Load",
           namesrv, mode, TOPIC, str(threads), str(count), str(size), str(warmup), group]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=PHASE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{mode} with {threads} threads against {namesrv} failed: {tail}")
    return json.loads(lines[-1])


def run_phases(home: Path, classes: Path, work: Path, namesrv: str, args: argparse.Namespace,
               name: str) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    stored = 0
    for threads, count in ((1, args.count), (16, args.count16)):
        sent = run_phase(home, classes, work, namesrv, "send", threads, count, args.size, args.warmup,
                         f"bench_p{threads}")
        results[f"send, {threads} thread{'s' if threads > 1 else ''}"] = sent
        stored += args.warmup + count - int(sent["failed"])
        print(f"{name}: send {threads}: {sent['per_second']:.0f} msg/s ({int(sent['failed'])} failed)",
              file=sys.stderr, flush=True)
    for threads in (1, 16):
        got = run_phase(home, classes, work, namesrv, "consume", threads, stored, args.size, 0,
                        f"bench_c{threads}_{os.getpid()}")
        results[f"consume, {threads} thread{'s' if threads > 1 else ''}"] = got
        print(f"{name}: consume {threads}: {got['per_second']:.0f} msg/s", file=sys.stderr, flush=True)
    return results


def start_serve(work: Path) -> tuple[subprocess.Popen[str], str, float]:
    started = time.perf_counter()
    # As on a user's machine, Python keeps its compiled modules (some environments turn that off; then every start
    # would compile the whole package first).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.Popen([sys.executable, "-m", "rocketspec", "serve", "--brokers", "1", "--port", "0",
                             "--data-dir", str(Path(tempfile.mkdtemp(prefix="serve-", dir=work))),
                             "--topic", f"{TOPIC}:{QUEUES}"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    namesrv = ""
    while True:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit("serve exited before it was ready")
        if line.startswith("ready"):
            return proc, namesrv, time.perf_counter() - started
        name, addr = line.split()
        if name == "namesrv":
            namesrv = addr


def stop_serve(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def bench_serve(home: Path, classes: Path, work: Path, args: argparse.Namespace) -> tuple[dict, float]:
    starts = []
    stop_serve(start_serve(work)[0])  # not counted: the first start after an install compiles the modules
    for _ in range(max(0, args.starts - 1)):
        proc, _, seconds = start_serve(work)
        starts.append(seconds)
        stop_serve(proc)
    proc, namesrv, seconds = start_serve(work)
    starts.append(seconds)
    try:
        return run_phases(home, classes, work, namesrv, args, "serve"), statistics.median(starts)
    finally:
        stop_serve(proc)


def bench_real(home: Path, classes: Path, work: Path, args: argparse.Namespace) -> tuple[dict, float]:
    cluster = RealCluster(home, work / "real", brokers=1, extra_conf="")
    started = time.perf_counter()
    cluster.start()
    seconds = time.perf_counter() - started
    try:
        made = cluster._script("topic", str(cluster.dir), TOPIC, str(QUEUES), timeout=120)
        if made.returncode != 0:
            raise SystemExit(f"cluster.sh topic failed: {made.stderr.strip()[-300:]}")
        return run_phases(home, classes, work, cluster.namesrv_addr, args, "real"), seconds
    finally:
        cluster.stop()


def ratio(ours: float | None, theirs: float | None, better: Callable[[float, float], float]) -> str:
    if not ours or not theirs:
        return "-"
    return f"{better(ours, theirs):.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocketmq-home", type=Path, default=os.environ.get("ROCKETSPEC_ROCKETMQ_HOME"),
                        help="a RocketMQ 4.9.8 home (lib/*.jar, conf/, bin/cluster.sh); "
                             "default $ROCKETSPEC_ROCKETMQ_HOME")
    parser.add_argument("--count", type=int, default=5000, help="messages sent from 1 thread")
    parser.add_argument("--count16", type=int, default=20000, help="messages sent from 16 threads")
    parser.add_argument("--size", type=int, default=1024, help="body bytes")
    parser.add_argument("--warmup", type=int, default=500, help="untimed sends before each send phase")
    parser.add_argument("--starts", type=int, default=3, help="serve start-ups measured (median)")
    parser.add_argument("--only", choices=("serve", "real"), help="run one target only")
    args = parser.parse_args()
    home: Path | None = args.rocketmq_home
    if home is None or not (home / "bin" / "cluster.sh").is_file():
        raise SystemExit("name a RocketMQ 4.9.8 home with --rocketmq-home (bin/cluster.sh, lib/*.jar)")
    if shutil.which("javac") is None:
        raise SystemExit("javac (17 or newer) is not on PATH")
    try:
        with tempfile.TemporaryDirectory(prefix="rocketspec-java-bench-") as tmp:
            work = Path(tmp)
            classes = compile_load(home, work / "classes")
            serve = bench_serve(home, classes, work, args) if args.only != "real" else ({}, None)
            real = bench_real(home, classes, work, args) if args.only != "serve" else ({}, None)
    except KeyboardInterrupt:
        raise SystemExit("interrupted") from None
    phases = list(serve[0] or real[0])
    print(f"Java 4.9.8 client, {args.size}-byte bodies, one broker, topic with {QUEUES} queues; "
          f"{args.count} sends from 1 thread, {args.count16} from 16.\n")
    print("| figure | rocketspec serve | RocketMQ 4.9.8 | serve / real |")
    print("|---|---|---|---|")
    for phase in phases:
        ours = serve[0].get(phase, {}).get("per_second")
        theirs = real[0].get(phase, {}).get("per_second")
        print(f"| {phase} (msg/s) | {ours or 0:,.0f} | {theirs or 0:,.0f} | "
              f"{ratio(ours, theirs, lambda a, b: a / b)} |")
    print(f"| start-up (s) | {serve[1] or 0:.2f} | {real[1] or 0:.2f} | "
          f"{ratio(serve[1], real[1], lambda a, b: b / a)} faster |")


if __name__ == "__main__":
    main()
