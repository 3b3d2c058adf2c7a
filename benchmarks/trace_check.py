"""Benchmark: events per second checked by the Spark checker (local[2]) and the pure-Python checker.

Generates (once, reused afterwards) a trace directory of shards of ``--events-per-shard`` events each, enough for the
largest size, then for each size checks the first ``size / events-per-shard`` shards with both engines, each in its own
process (``rocketspec traces check``), and prints wall time, events/s and peak RSS. Example (the figures in
docs/benchmarks.md)::

    python benchmarks/trace_check.py --data /tmp/bench-trace --sizes 1000000 10000000 50000000

Not a test: run by hand; the figures go to docs/benchmarks.md with the command.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

MANIFEST = "_trace.json"


def ensure_data(data: Path, shards: int, per_shard: int, seed: int, faults: str, jobs: int) -> list[Path]:
    """The shard partition directories, generating the trace if it is missing or too small."""
    parts = _partitions(data)
    if len(parts) >= shards:
        return parts
    if data.exists():
        shutil.rmtree(data)
    print(f"generating {shards} shard(s) x {per_shard:,} events into {data} ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "rocketspec", "traces", "generate", "--events", str(shards * per_shard),
         "--shards", str(shards), "--seed", str(seed), "--faults", faults, "--out", str(data)],
        check=True,
    )
    took = time.perf_counter() - start
    print(f"generated in {took:.0f} s ({shards * per_shard / took:,.0f} events/s with {jobs} processes)",
          file=sys.stderr)
    return _partitions(data)


def _partitions(data: Path) -> list[Path]:
    """The shard partitions ``trace_id=s<seed>-<k>`` in shard order."""
    return sorted(data.glob("trace_id=*"), key=lambda p: int(p.name.rsplit("-", 1)[-1]))


def subset(parts: list[Path], count: int, where: Path) -> Path:
    """A directory with the first ``count`` shard partitions, their files hard-linked (readers do not follow
    directory symlinks)."""
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    for part in parts[:count]:
        (where / part.name).mkdir()
        for file in part.iterdir():
            os.link(file, where / part.name / file.name)
    return where


def run_check(path: Path, engine: str, master: str) -> dict[str, object]:
    report = path.with_suffix(f".{engine}.json")
    cmd = [sys.executable, "-m", "rocketspec", "traces", "check", str(path), "--engine", engine,
           "--report", str(report)]
    if engine == "spark":
        cmd += ["--master", master]
    rss_file = path.with_suffix(f".{engine}.rss")
    start = time.perf_counter()
    # GNU time reports the largest resident set of the process tree (the JVM for Spark), in KiB.
    proc = subprocess.run(["/usr/bin/time", "-o", str(rss_file), "-f", "%M", *cmd], capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{engine} check failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(report.read_text())
    return {"engine": engine, "events": data["events"], "seconds": took, "ok": data["ok"],
            "violations": sum(i["violations"] for i in data["invariants"]),
            "peak_rss_mb": int(rss_file.read_text().split()[-1]) // 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/tmp/rocketspec-bench-trace"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000, 50_000_000])
    parser.add_argument("--events-per-shard", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", default="heavy")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--engines", nargs="+", default=["python", "spark"], choices=["python", "spark"])
    args = parser.parse_args()
    per = args.events_per_shard
    shards = max(-(-size // per) for size in args.sizes)
    parts = ensure_data(args.data, shards, per, args.seed, args.faults, os.cpu_count() or 1)
    rows = []
    for size in sorted(args.sizes):
        path = subset(parts, -(-size // per), args.data.parent / f"{args.data.name}-subset-{size}")
        for engine in args.engines:
            result = run_check(path, engine, args.master)
            rows.append(result)
            print(f"{engine:7s} {result['events']:>12,} events {result['seconds']:8.1f} s "
                  f"{result['events'] / result['seconds']:>10,.0f} events/s  peak RSS {result['peak_rss_mb']} MB  "
                  f"violations {result['violations']}", flush=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
