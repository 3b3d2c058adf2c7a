"""Time the README's test-double session and the DLQ-after-16-retries scenario alone, on the simulated clock.

    python benchmarks/readme_session.py [--repeat 3]

The session is the README's "Test double" code block, run as it is (the README test runs it too); the DLQ scenario
is its middle part alone on a fresh two-broker cluster: a push consumer whose listener always answers
RECONSUME_LATER, 16 retries on the delay levels, then the dead-letter queue (about 4.5 simulated hours). Each is
timed from the cluster's creation to the end of ``run_until_idle``, with the simulated steps it took; the median of
``--repeat`` runs is printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from rocketspec.refimpl import Cluster, ConsumeStatus, Message
from rocketspec.spec.protocol import dlq_topic

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_session() -> int:
    section = README.read_text(encoding="utf-8").split("## Test double", 1)[1]
    found = re.search(r"```python\n(.*?)\n```", section, re.S)
    if found is None:
        raise SystemExit("README.md has no python block under its Test double section")
    exec(compile(found.group(1), "README.md#test-double", "exec"), {})  # the README's own code
    return 0


def dlq_alone() -> int:
    with Cluster(brokers=2, clock="simulated", seed=7) as cluster:
        cluster.create_topic("Poison", queues=1)
        producer = cluster.producer("PG")
        cluster.push_consumer("PCG", "Poison", lambda msgs: ConsumeStatus.RECONSUME_LATER)
        producer.send(Message("Poison", b"bad"))
        cluster.run_until_idle()
        if [m.body for m in cluster.messages(dlq_topic("PCG"))] != [b"bad"]:
            raise SystemExit("the message did not reach the dead-letter queue")
        return int(getattr(cluster.runtime, "steps", 0))


def timed(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    walls, steps = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        steps = run()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| scenario | wall s (median) | simulated steps |")
    print("|---|---|---|")
    for name, run in (("README test-double session", readme_session), ("DLQ after 16 retries alone", dlq_alone)):
        wall, steps = timed(run, args.repeat)
        print(f"| {name} | {wall:.2f} | {steps:,} |" if steps else f"| {name} | {wall:.2f} | - |")


if __name__ == "__main__":
    main()
