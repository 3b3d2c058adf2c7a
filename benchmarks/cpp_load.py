"""Load from the RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4): one phase per run, a JSON summary on stdout.

Run by ``benchmarks/tcp_serve.py`` in a subprocess with a temporary HOME (librocketmq logs there and may hang on
shutdown, so the process ends with ``os._exit``). Phases:

- ``sync``: ``--count`` sequential ``send_sync`` calls, each timed (latency percentiles, messages/s);
- ``async``: ``--count`` ``send_async`` calls with at most ``--window`` in flight (messages/s acknowledged);
- ``consume``: a push consumer of a new group reads until ``--count`` messages arrived (messages/s from the first
  delivery, and from start).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

# librocketmq 1.2.x fails a send made while its heartbeat thread is still connecting to the broker, before writing
# anything (apache/rocketmq-client-cpp#455); the first sends are tried again after a short pause.
_UNSENT = "No route info of this topic"


def _send(fn: Any) -> Any:
    for attempt in range(20):
        try:
            return fn()
        except Exception as exc:
            if _UNSENT not in str(exc) or attempt == 19:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


def _message(client: Any, topic: str, i: int, size: int) -> Any:
    msg = client.Message(topic)
    msg.set_keys(f"k{i}")
    msg.set_tags("bench")
    msg.set_body(f"m{i}".ljust(size, "."))
    return msg


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def phase_sync(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    producer = client.Producer(f"{args.group}-sync", timeout=10_000)
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    _send(lambda: producer.send_sync(_message(client, args.topic, -1, args.size)))  # warm: route and connection
    latencies = []
    started = time.perf_counter()
    for i in range(args.count):
        msg = _message(client, args.topic, i, args.size)
        t0 = time.perf_counter()
        _send(lambda msg=msg: producer.send_sync(msg))
        latencies.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - started
    return {"phase": "sync", "messages": args.count, "seconds": round(elapsed, 3),
            "per_s": round(args.count / elapsed, 1), "p50_ms": round(percentile(latencies, 0.50), 3),
            "p99_ms": round(percentile(latencies, 0.99), 3), "max_ms": round(max(latencies), 3)}


def phase_async(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    producer = client.Producer(f"{args.group}-async", timeout=10_000)
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    _send(lambda: producer.send_sync(_message(client, args.topic, -1, args.size)))
    window = threading.Semaphore(args.window)
    done = threading.Semaphore(0)
    errors: list[str] = []
    keep = []

    def ok(_result: Any) -> None:
        window.release()
        done.release()

    def bad(exc: Any) -> None:
        errors.append(str(exc))
        window.release()
        done.release()

    started = time.perf_counter()
    for i in range(args.count):
        window.acquire()
        msg = _message(client, args.topic, i, args.size)
        keep.append(msg)
        _send(lambda msg=msg: producer.send_async(msg, ok, bad))
    for _ in range(args.count):
        if not done.acquire(timeout=120):
            break
    elapsed = time.perf_counter() - started
    return {"phase": "async", "messages": args.count, "window": args.window, "seconds": round(elapsed, 3),
            "per_s": round(args.count / elapsed, 1), "errors": len(errors)}


def phase_consume(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    consumer = client.PushConsumer(f"{args.group}-consume")
    consumer.set_namesrv_addr(args.namesrv)
    lock = threading.Lock()
    seen: list[float] = []
    finished = threading.Event()

    def listener(_msg: Any) -> None:  # returning normally is CONSUME_SUCCESS in the package's API
        with lock:
            seen.append(time.perf_counter())
            if len(seen) >= args.count:
                finished.set()

    consumer.subscribe(args.topic, listener)
    started = time.perf_counter()
    consumer.start()
    finished.wait(timeout=args.timeout)
    with lock:
        got, first, last = len(seen), (seen[0] if seen else started), (seen[-1] if seen else started)
    span = max(last - first, 1e-9)
    return {"phase": "consume", "messages": got, "seconds_from_start": round(last - started, 3),
            "seconds_from_first": round(span, 3), "per_s": round(got / span, 1),
            "per_s_from_start": round(got / max(last - started, 1e-9), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("sync", "async", "consume"))
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--topic", default="Bench")
    parser.add_argument("--group", default="bench")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--size", type=int, default=128, help="body bytes")
    parser.add_argument("--window", type=int, default=256, help="async sends in flight")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    import rocketmq.client as client

    phases = {"sync": phase_sync, "async": phase_async, "consume": phase_consume}
    summary = phases[args.phase](client, args)
    sys.stdout.write(json.dumps(summary) + "\n")
    sys.stdout.flush()
    os._exit(0)  # librocketmq's shutdown can hang; the numbers are out


if __name__ == "__main__":
    main()
