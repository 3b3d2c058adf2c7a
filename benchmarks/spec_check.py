"""Benchmark: the bounded explorer and CrossHair per spec area.

Run by hand:  .venv/bin/python benchmarks/spec_check.py [--crosshair-timeout S] [--repeat N]
Prints a Markdown table (area, states, transitions, depth, explore seconds, states/s, CrossHair conditions,
confirmed, CrossHair seconds) to paste into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from rocketspec.contracts import run_crosshair
from rocketspec.spec import AREAS, area_module
from rocketspec.spec.explorer import explore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crosshair-timeout", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3, help="explorer runs per area (median reported)")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu'}")
    print()
    print("| area | bounds | states | transitions | depth | explore s (median) | states/s | crosshair conditions "
          "| confirmed | crosshair s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for area in AREAS:
        module = area_module(area)
        times = []
        result = None
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = explore(module.model())
            times.append(time.perf_counter() - started)
        assert result is not None and result.ok, f"{area} does not pass"
        seconds = statistics.median(times)
        started = time.perf_counter()
        run = run_crosshair(module.__name__, args.crosshair_timeout)
        ch_seconds = time.perf_counter() - started
        confirmed = sum(r.confirmed for r in run.results)
        print(
            f"| {area} | {result.bounds} | {result.states} | {result.transitions} | {result.depth} | {seconds:.2f} "
            f"| {result.states / seconds:,.0f} | {len(run.results)} | {confirmed} | {ch_seconds:.1f} |"
        )


if __name__ == "__main__":
    main()
