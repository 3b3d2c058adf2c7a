"""In-process send + consume throughput of the reference implementation, simulated and real clock.

    .venv/bin/python benchmarks/refimpl_throughput.py [--messages N] [--brokers B] [--queues Q] [--repeat R]

For each clock: one producer sends N messages (sync sends, 100-byte bodies) to a topic with Q queues on every broker,
then one push consumer (from the first offset) consumes them all (timed from its start to the last delivery).
Reported: send messages/s, consume messages/s (wall clock), simulated time the run covered, and peak RSS.
Figures go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import threading
import time

from rocketspec.refimpl import Cluster, ConsumeStatus, Message
from rocketspec.refimpl.runtime import Future, RuntimeTimeout


def run_once(clock: str, messages: int, brokers: int, queues: int) -> dict[str, float]:
    with Cluster(brokers=brokers, clock=clock, seed=1, keep_events=False) as cluster:
        cluster.create_topic("Bench", queues=queues)
        producer = cluster.producer("BenchPG")
        body = b"x" * 100
        sim_start = cluster.now_ms()
        start = time.perf_counter()
        for _ in range(messages):
            producer.send(Message("Bench", body))
        send_s = time.perf_counter() - start
        consumed = [0]
        lock = threading.Lock()
        all_consumed: Future[None] = Future()

        def listener(msgs: list) -> ConsumeStatus:
            with lock:  # real mode runs listeners on a thread pool
                consumed[0] += len(msgs)
                if consumed[0] >= messages:
                    all_consumed.set_result(None)
            return ConsumeStatus.CONSUME_SUCCESS

        start = time.perf_counter()
        cluster.push_consumer("BenchCG", "Bench", listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                              consume_message_batch_max_size=1)
        try:
            cluster.runtime.wait(all_consumed, timeout_ms=600_000)
        except RuntimeTimeout:
            raise SystemExit(f"only {consumed[0]} of {messages} messages consumed") from None
        consume_s = time.perf_counter() - start
        return {
            "send_per_s": messages / send_s,
            "consume_per_s": messages / consume_s,
            "simulated_ms": cluster.now_ms() - sim_start if clock == "simulated" else 0,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=("simulated", "real", "both"), default="both")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.repeat < 1:
        parser.error("--messages and --repeat must be positive")
    clocks = ("simulated", "real") if args.clock == "both" else (args.clock,)
    print(f"{args.messages} messages, {args.brokers} broker(s) x {args.queues} queues, median of {args.repeat}")
    print("| clock | send msg/s | consume msg/s | simulated s |")
    print("|---|---|---|---|")
    for clock in clocks:
        runs = [run_once(clock, args.messages, args.brokers, args.queues) for _ in range(args.repeat)]
        send = statistics.median(r["send_per_s"] for r in runs)
        consume = statistics.median(r["consume_per_s"] for r in runs)
        sim = statistics.median(r["simulated_ms"] for r in runs) / 1000
        print(f"| {clock} | {send:,.0f} | {consume:,.0f} | {sim:,.1f} |")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
