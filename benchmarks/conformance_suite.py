"""Benchmark the broker conformance suite: wall time against ``serve`` and against a real RocketMQ 4.9.8.

    python benchmarks/conformance_suite.py --rocketmq-home ../shared/rocketmq-4.9.8 [--repeat 1]

Both targets get the short timers CI uses (1 s delay levels, 1 s transaction timeout and check interval, checkMax 3,
SQL92 on): ``serve`` as ``rocketspec serve`` options of an in-process ``ServedCluster``, the real broker through
``bin/cluster.sh`` with the same lines in a broker settings file. Each run is ``rocketspec conformance broker
--namesrv ...`` in a fresh process, one target after the other on an otherwise idle machine. Prints a Markdown table
for ``docs/benchmarks.md``: target, cases, outcome counts, wall seconds (median of ``--repeat``).
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

from rocketspec.refimpl.served import ServedCluster

SHORT_TIMERS = {
    "message_delay_level": " ".join(["1s"] * 18),
    "transaction_timeout_ms": 1000,
    "transaction_check_interval_ms": 1000,
    "transaction_check_max": 3,
    "enable_property_filter": True,
}
BROKER_CONF = "\n".join([
    f"messageDelayLevel={SHORT_TIMERS['message_delay_level']}",
    "transactionTimeOut=1000",
    "transactionCheckInterval=1000",
    "transactionCheckMax=3",
    "enablePropertyFilter=true",
    "",
])


def run_suite(namesrv: str, report: Path) -> tuple[float, dict[str, int]]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rocketspec", "conformance", "broker", "--namesrv", namesrv,
                           "--json", str(report)], capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"the suite failed to run: {done.stderr.strip()}")
    return wall, json.loads(report.read_text())["summary"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocketmq-home", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        with ServedCluster(brokers=2, **SHORT_TIMERS) as served:
            walls, summary = [], {}
            for i in range(args.repeat):
                wall, summary = run_suite(served.namesrv_addr, folder / f"serve-{i}.json")
                walls.append(wall)
            rows.append(("rocketspec serve (2 brokers)", summary, statistics.median(walls)))
        (folder / "extra.conf").write_text(BROKER_CONF)
        cluster = args.rocketmq_home / "bin" / "cluster.sh"
        start = subprocess.run([str(cluster), "start", str(folder / "real"), "2", "29976", "30011"],
                               capture_output=True, text=True, timeout=180,
                               env={**os.environ, "BROKER_EXTRA_CONF": str(folder / "extra.conf")})
        if start.returncode != 0:
            raise SystemExit(f"cluster.sh start failed: {start.stderr.strip()[-400:]}")
        try:
            walls = []
            for i in range(args.repeat):
                wall, summary = run_suite("127.0.0.1:29976", folder / f"real-{i}.json")
                walls.append(wall)
            rows.append(("Apache RocketMQ 4.9.8 (2 brokers)", summary, statistics.median(walls)))
        finally:
            subprocess.run([str(cluster), "stop", str(folder / "real")], capture_output=True, timeout=120)
    print("| target | passed | failed | non-strict | skipped | error | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, summary, wall in rows:
        print(f"| {name} | {summary['passed']} | {summary['failed']} | {summary['non-strict']} | "
              f"{summary['skipped']} | {summary['error']} | {wall:.1f} |")


if __name__ == "__main__":
    main()
