"""Drive the RocketMQ C++ client (PyPI ``rocketmq`` 0.4.4, librocketmq through ctypes) for one scenario.

Run it as a subprocess, never import it into a test process: the C++ library starts threads of its own and may hang
or crash while shutting down. Usage::

    python cpp_driver.py <scenario> --namesrv 127.0.0.1:9876 --topic T --group G [--count N] [--timeout S] ...

Scenarios: ``probe`` (load the library only), ``send-sync``, ``send-async``, ``send-oneway``, ``send-orderly``
(sharding key ``i % --shards``, hashed onto a queue), ``send-batch`` (``--batch-size`` messages per batch),
``consume`` (push consumer; ``--model clustering|broadcasting``, ``--orderly``, ``--fail-first``) and ``pull``
(pull consumer: every queue from offset 0 until nothing is new). ``--delay-level`` sends delayed messages;
``--access-key`` / ``--secret-key`` sign every request of a producer or push consumer (plain ACL).

Every result is one JSON object per line on stdout, flushed at once, so a test can read a partial run:

- ``{"event": "started", ...}`` once the client has started;
- ``{"event": "sent", "i", "body", "status", "msg_id", "offset", ...}`` per send (oneway: status None);
- ``{"event": "consumed", "topic", "tags", "keys", "body", "queue_id", "offset", "reconsume_times", "msg_id",
  "acked", ...}`` per delivery to the listener (``acked`` false when the listener asked for a later redelivery;
  ``body`` without its padding, ``body_len`` the whole length, ``padding_ok`` whether the padding arrived intact);
- ``{"event": "retry", "i", "attempt", "error"}`` when a send is tried again (see ``call_send``);
- ``{"event": "error", "op", "error", ...}`` per failed operation;
- ``{"event": "shutdown", "ok"}`` and finally ``{"event": "done", ...}`` with the counts.

Message ``i`` has body ``<--body-prefix>-<i>`` (padded with ``|`` and dots to ``--body-size`` bytes), key
``key-<i>`` and tag number ``i % n`` of the ``n`` comma-separated ``--tags``. The client logs into
``$HOME/logs/rocketmq-cpp``, so give it a temporary HOME. The run is bounded: the scenario stops after ``--timeout``
seconds, shutdown gets ``--shutdown-timeout`` seconds, and a watchdog ends the process (exit 3) if all else hangs.
Exit status: 0 the scenario ran (its lines tell how it went), 1 the client could not be loaded or started, 2 bad
arguments, 3 watchdog.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_OUT_LOCK = threading.Lock()
SCENARIOS = ("probe", "send-sync", "send-async", "send-oneway", "send-orderly", "send-batch", "consume", "pull")
# Return values of the C listener (CConsumeStatus): the orderly service reads 1 as "suspend the queue a moment".
CONSUME_SUCCESS = 0
RECONSUME_LATER = 1


def emit(event: str, **fields: Any) -> None:
    """Write one JSON line and flush it (listeners run on the library's threads, hence the lock)."""
    line = json.dumps({"event": event, **fields}, sort_keys=True)
    with _OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def finish(code: int) -> None:
    """Leave without running the library's destructors (they may block or crash after shutdown)."""
    with _OUT_LOCK:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a non-negative number, not {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, not {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Run one scenario with the RocketMQ C++ client.")
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--namesrv", default="127.0.0.1:9876", help="name server address host:port")
    parser.add_argument("--topic", default="TopicTest")
    parser.add_argument("--group", default="cpp_driver_group", help="producer or consumer group")
    parser.add_argument("--count", type=_non_negative_int, default=10, help="messages to send")
    parser.add_argument("--start", type=_non_negative_int, default=0, help="index of the first message")
    parser.add_argument("--timeout", type=_positive_float, default=30.0, help="seconds the scenario may take")
    parser.add_argument("--shutdown-timeout", type=_positive_float, default=10.0)
    parser.add_argument("--interval", type=_non_negative_float, default=0.0, help="seconds to wait between two sends")
    parser.add_argument("--send-retries", type=_non_negative_int, default=3,
                        help="attempts after a send the library failed before sending (its connection race)")
    parser.add_argument("--send-timeout-ms", type=_positive_int, default=3000)
    parser.add_argument("--tags", default="TagA", help="comma-separated tags, message i gets tag i %% count")
    parser.add_argument("--delay-level", type=_non_negative_int, default=0, help="delay level of every message")
    parser.add_argument("--body-size", type=_non_negative_int, default=0,
                        help="pad bodies to this many bytes (the library compresses bodies of 4 KiB and more)")
    parser.add_argument("--body-prefix", default="msg")
    parser.add_argument("--shards", type=_positive_int, default=4, help="send-orderly: distinct sharding keys")
    parser.add_argument("--batch-size", type=_positive_int, default=10, help="send-batch: messages per batch")
    parser.add_argument("--model", choices=("clustering", "broadcasting"), default="clustering")
    parser.add_argument("--orderly", action="store_true", help="consume: one queue at a time, in order")
    parser.add_argument("--fail-first", action="store_true",
                        help="consume: answer RECONSUME_LATER to every first delivery (reconsume_times 0)")
    parser.add_argument("--expression", default="*", help="consume: subscription expression")
    parser.add_argument("--expect", type=_non_negative_int, default=0,
                        help="consume: stop after this many acknowledged deliveries (0: wait for --stop-file)")
    parser.add_argument("--linger", type=_non_negative_float, default=0.0,
                        help="consume: keep consuming this many seconds after --expect is reached")
    parser.add_argument("--stop-file", default=None, help="consume: stop once this file exists")
    parser.add_argument("--threads", type=_positive_int, default=None, help="consume: listener threads")
    parser.add_argument("--name", default="", help="a label copied into every line")
    parser.add_argument("--access-key", default=None, help="plain ACL: sign every request (set_session_credentials)")
    parser.add_argument("--secret-key", default=None)
    parser.add_argument("--ons-channel", default="ALIYUN", help="plain ACL: the OnsChannel field the client adds")
    return parser


def set_credentials(client_object: Any, args: argparse.Namespace) -> None:
    """``set_session_credentials`` when ``--access-key`` is given: the library then signs every request."""
    if args.access_key is not None:
        client_object.set_session_credentials(args.access_key, args.secret_key or "", args.ons_channel)


def load_client() -> Any:
    """Import the ``rocketmq`` package (loads librocketmq.so)."""
    import rocketmq.client as client  # loaded only in the driver process

    return client


# --------------------------------------------------------------------------------------------------------- producer


def body_of(args: argparse.Namespace, i: int) -> str:
    body = f"{args.body_prefix}-{i}"
    if len(body) < args.body_size:
        body = (body + "|").ljust(args.body_size, ".")
    return body


def _message(client: Any, args: argparse.Namespace, i: int) -> Any:
    msg = client.Message(args.topic)
    msg.set_keys(f"key-{i}")
    tags = args.tags.split(",")
    msg.set_tags(tags[i % len(tags)])
    msg.set_body(body_of(args, i))
    if args.delay_level:
        msg.set_delay_time_level(args.delay_level)
    return msg


# librocketmq 1.2.x: while its heartbeat thread is connecting to a broker, a send on another thread finds the
# connection "waiting" (or the transport table locked) and fails at once, before writing anything; after its own
# retries it reports "No route info of this topic" (apache/rocketmq-client-cpp#455). The driver tries that send again.
_UNSENT_ERROR = "No route info of this topic"


def call_send(args: argparse.Namespace, i: int | None, send: Callable[[], Any]) -> Any:
    """``send()``, tried again (up to ``--send-retries`` times) when the library failed before sending anything."""
    for attempt in range(args.send_retries + 1):
        try:
            return send()
        except Exception as exc:
            if _UNSENT_ERROR not in str(exc) or attempt == args.send_retries:
                raise
            emit("retry", i=i, attempt=attempt + 1, error=str(exc), name=args.name)
            time.sleep(0.2)
    raise AssertionError("unreachable")


def _result_fields(result: Any) -> dict[str, Any]:
    return {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}


def run_producer(client: Any, args: argparse.Namespace) -> int:
    """Send ``--count`` messages the way the scenario says; one ``sent`` or ``error`` line each."""
    producer = client.Producer(args.group, timeout=args.send_timeout_ms)
    producer.set_namesrv_addr(args.namesrv)
    set_credentials(producer, args)
    try:
        producer.start()
    except Exception as exc:
        emit("error", op="start", error=str(exc), name=args.name)
        return 1
    emit("started", role="producer", group=args.group, pid=os.getpid(), name=args.name)
    deadline = time.monotonic() + args.timeout
    indices = range(args.start, args.start + args.count)
    counts = {"sent": 0, "errors": 0}

    def sent(i: int, **fields: Any) -> None:
        counts["sent"] += 1
        emit("sent", i=i, body=f"{args.body_prefix}-{i}", name=args.name, **fields)  # the body without padding

    def failed(op: str, i: int | None, exc: BaseException | str) -> None:
        counts["errors"] += 1
        emit("error", op=op, i=i, error=str(exc), name=args.name)

    chosen: list[tuple[int, int]] = []  # send-orderly: (queue count, queue picked) of the current send

    def select_queue(mq_size: int, _msg: Any, arg: int) -> int:
        """Hash the sharding key onto a queue (as the package's default selector does) and note the pick."""
        queue = ctypes.cast(arg, ctypes.POINTER(ctypes.c_int))[0] % mq_size
        chosen.append((mq_size, queue))
        return queue

    if args.scenario == "send-async":
        _send_async(client, producer, args, indices, deadline, sent, failed)
    elif args.scenario == "send-batch":
        _send_batch(client, producer, args, indices, deadline, sent, failed)
    else:
        for i in indices:
            if time.monotonic() > deadline:
                failed("timeout", i, "scenario timeout before this send")
                break
            if args.interval > 0 and i > args.start:
                time.sleep(args.interval)
            msg = _message(client, args, i)
            try:
                if args.scenario == "send-sync":
                    sent(i, **_result_fields(call_send(args, i, lambda msg=msg: producer.send_sync(msg))))
                elif args.scenario == "send-oneway":
                    call_send(args, i, lambda msg=msg: producer.send_oneway(msg))
                    sent(i, status=None, msg_id=None, offset=None)
                else:
                    shard = i % args.shards
                    chosen.clear()
                    result = call_send(args, i, lambda msg=msg, shard=shard: producer.send_orderly(
                        msg, shard, queue_selector=select_queue))
                    mq_size, queue = chosen[-1] if chosen else (None, None)
                    sent(i, shard=shard, queue_id=queue, queues=mq_size, **_result_fields(result))
            except Exception as exc:
                failed(args.scenario, i, exc)
    _shutdown(producer.shutdown, args)
    report_client_retries(args)
    emit("done", role="producer", name=args.name, **counts)
    return 0


# librocketmq's send_orderly (sendAutoRetrySelectImpl) tries a failed first attempt again on the NEXT queue of the
# route, and says so only in its log: "send failed of times:1,mq:MessageQueue [topic=T, brokerName=B, queueId=N]".
_CLIENT_RETRY = re.compile(r"send failed of times:(\d+),mq:MessageQueue \[topic=(.*?), brokerName=(.*?), "
                           r"queueId=(-?\d+)\]")


def report_client_retries(args: argparse.Namespace) -> None:
    """One ``client-retry`` line per attempt the library itself retried (read from its log under $HOME)."""
    for path in sorted((Path(os.environ.get("HOME", ".")) / "logs" / "rocketmq-cpp").glob("*.log*")):
        for match in _CLIENT_RETRY.finditer(path.read_text(encoding="utf-8", errors="replace")):
            emit("client-retry", name=args.name, times=int(match[1]), topic=match[2], broker=match[3],
                 queue_id=int(match[4]))


def _send_async(client: Any, producer: Any, args: argparse.Namespace, indices: range, deadline: float,
                sent: Callable[..., None], failed: Callable[..., None]) -> None:
    """Fire every send, then wait (bounded) until each one has called back."""
    pending = threading.Semaphore(0)
    messages = []  # keep the messages alive until their callbacks ran
    for i in indices:
        if args.interval > 0 and i > args.start:
            time.sleep(args.interval)
        msg = _message(client, args, i)
        messages.append(msg)

        def on_success(result: Any, i: int = i) -> None:
            sent(i, **_result_fields(result))
            pending.release()

        def on_error(exc: BaseException, i: int = i) -> None:
            failed("send-async", i, exc)
            pending.release()

        try:
            call_send(args, i, lambda msg=msg, ok=on_success, bad=on_error: producer.send_async(msg, ok, bad))
        except Exception as exc:
            failed("send-async", i, exc)
            pending.release()
    for _ in indices:
        if not pending.acquire(timeout=max(0.0, deadline - time.monotonic())):
            failed("timeout", None, "not every async send called back in time")
            break


def _send_batch(client: Any, producer: Any, args: argparse.Namespace, indices: range, deadline: float,
                sent: Callable[..., None], failed: Callable[..., None]) -> None:
    """Send the messages in batches of ``--batch-size``; every message of a batch gets the batch's result."""
    items = list(indices)
    for batch_no, first in enumerate(range(0, len(items), args.batch_size)):
        if time.monotonic() > deadline:
            failed("timeout", None, "scenario timeout before this batch")
            break
        chunk = items[first:first + args.batch_size]
        batch = [_message(client, args, i) for i in chunk]
        try:
            result = call_send(args, chunk[0], lambda batch=batch: producer.send_batch(batch))
        except Exception as exc:
            for i in chunk:
                failed("send-batch", i, exc)
            continue
        for i in chunk:
            sent(i, batch=batch_no, batch_size=len(chunk), **_result_fields(result))


# --------------------------------------------------------------------------------------------------------- consumer


def emit_message(args: argparse.Namespace, msg: Any, *, acked: bool) -> None:
    """One ``consumed`` line for a received message (read while the library still owns it)."""
    raw = msg.body or b""
    head, bar, padding = raw.partition(b"|")
    emit("consumed", name=args.name, thread=threading.get_ident(), at=time.time(), acked=acked,
         topic=msg.topic, tags=_text(msg.tags), keys=_text(msg.keys), body=_text(head),
         body_len=len(raw), padded=bool(bar), padding_ok=padding.strip(b".") == b"",
         queue_id=msg.queue_id, offset=msg.queue_offset, reconsume_times=msg.reconsume_times,
         msg_id=msg.id, commit_log_offset=msg.commit_log_offset, store_size=msg.store_size,
         born_timestamp=msg.born_timestamp, store_timestamp=msg.store_timestamp,
         uniq_key=_text(msg.get_property("UNIQ_KEY")), retry_topic=_text(msg.get_property("RETRY_TOPIC")),
         delay=_text(msg.get_property("DELAY")))


def run_pull(client: Any, args: argparse.Namespace) -> int:
    """Pull every queue of the topic from offset 0 until the broker has nothing new (the package's PullConsumer)."""
    consumer = client.PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    try:
        consumer.start()
    except Exception as exc:
        emit("error", op="start", error=str(exc), name=args.name)
        return 1
    emit("started", role="pull", group=args.group, pid=os.getpid(), name=args.name)
    try:
        got = _pull_all(client, consumer, args, time.monotonic() + args.timeout)
    except Exception as exc:
        emit("error", op="pull", error=str(exc), name=args.name)
        got = -1
    shutdown_ok = _shutdown(consumer.shutdown, args)
    emit("done", role="pull", name=args.name, acked=got, timed_out=False, shutdown_ok=shutdown_ok)
    return 0


def _pull_all(client: Any, consumer: Any, args: argparse.Namespace, deadline: float) -> int:
    """Pull each queue from 0 until NO_NEW_MSG, one ``pulled`` line per answer and ``consumed`` per message.

    Written against the library's C functions because the package's ``PullConsumer.pull`` keeps its offsets by
    topic and queue id only: with two brokers, queue 0 of the second starts where queue 0 of the first ended."""
    from rocketmq.exceptions import ffi_check  # loaded only in the driver process
    from rocketmq.ffi import _CMessageQueue, _CPullStatus, dll

    queues = ctypes.POINTER(_CMessageQueue)()
    size = ctypes.c_int()
    ffi_check(dll.FetchSubscriptionMessageQueues(consumer._handle, args.topic.encode(), ctypes.pointer(queues),
                                                 ctypes.pointer(size)))
    got = 0
    try:
        for index in range(size.value):
            mq = queues[index]
            offset = 0
            while time.monotonic() < deadline:
                result = dll.Pull(consumer._handle, ctypes.pointer(mq), args.expression.encode(), offset, 32)
                try:
                    status = _CPullStatus(result.pullStatus)
                    emit("pulled", broker=mq.brokerName.decode(), queue_id=mq.queueId, offset=offset,
                         status=status.name, next_offset=result.nextBeginOffset, found=result.size,
                         name=args.name)
                    for k in range(result.size if status == _CPullStatus.FOUND else 0):
                        emit_message(args, client.RecvMessage(result.msgFoundList[k]), acked=True)
                        got += 1
                    if status == _CPullStatus.BROKER_TIMEOUT:
                        continue
                    done = status == _CPullStatus.NO_NEW_MSG or result.nextBeginOffset == offset
                    offset = result.nextBeginOffset
                finally:
                    dll.ReleasePullResult(result)
                if done:
                    break
    finally:
        ffi_check(dll.ReleaseSubscriptionMessageQueue(queues))
    return got


def run_consumer(client: Any, args: argparse.Namespace) -> int:
    """Consume until ``--expect`` acknowledged deliveries (plus ``--linger``), the stop file, or the timeout."""
    from rocketmq.ffi import MessageModel, dll  # loaded only in the driver process

    model = MessageModel.BROADCASTING if args.model == "broadcasting" else MessageModel.CLUSTERING
    consumer = client.PushConsumer(args.group, orderly=args.orderly, message_model=model)
    consumer.set_namesrv_addr(args.namesrv)
    set_credentials(consumer, args)
    if args.threads is not None:
        consumer.set_thread_count(args.threads)
    acked = [0]
    lock = threading.Lock()
    reached = threading.Event()

    def on_message(_consumer: int, handle: int) -> int:
        # The package's own subscribe() turns a Python exception into a re-raise inside a ctypes callback, which
        # answers 0 (success); return the status ourselves so that RECONSUME_LATER really reaches the library.
        try:
            msg = client.RecvMessage(handle)
            fail = args.fail_first and msg.reconsume_times == 0
            emit_message(args, msg, acked=not fail)
        except Exception as exc:
            emit("error", op="listener", error=repr(exc), name=args.name)
            return RECONSUME_LATER
        if fail:
            return RECONSUME_LATER
        with lock:
            acked[0] += 1
            if args.expect and acked[0] >= args.expect:
                reached.set()
        return CONSUME_SUCCESS

    try:
        from rocketmq.exceptions import ffi_check

        ffi_check(dll.Subscribe(consumer._handle, args.topic.encode(), args.expression.encode()))
        consumer._register_callback(on_message)
        consumer.start()
    except Exception as exc:
        emit("error", op="start", error=str(exc), name=args.name)
        return 1
    emit("started", role="consumer", group=args.group, model=args.model, orderly=args.orderly, pid=os.getpid(),
         name=args.name)
    deadline = time.monotonic() + args.timeout
    stop_file = Path(args.stop_file) if args.stop_file else None
    timed_out = True
    while time.monotonic() < deadline:
        if reached.wait(0.1):
            linger_end = min(deadline, time.monotonic() + args.linger)
            while time.monotonic() < linger_end and not (stop_file and stop_file.exists()):
                time.sleep(0.1)
            timed_out = False
            break
        if stop_file is not None and stop_file.exists():
            timed_out = False
            break
    with lock:
        got = acked[0]
    shutdown_ok = _shutdown(consumer.shutdown, args)
    emit("done", role="consumer", name=args.name, acked=got, timed_out=timed_out, shutdown_ok=shutdown_ok)
    return 0


# ----------------------------------------------------------------------------------------------------------- common


def _shutdown(stop: Callable[[], None], args: argparse.Namespace) -> bool:
    """Call the client's shutdown on a helper thread, giving up after ``--shutdown-timeout`` seconds."""
    errors: list[str] = []

    def run() -> None:
        try:
            stop()
        except Exception as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(args.shutdown_timeout)
    ok = not thread.is_alive() and not errors
    emit("shutdown", ok=ok, hung=thread.is_alive(), errors=errors, name=args.name)
    return ok


def _watchdog(seconds: float) -> None:
    def fire() -> None:
        emit("error", op="watchdog", error=f"driver still running after {seconds:.0f} s")
        finish(3)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _watchdog(args.timeout + args.shutdown_timeout + 15.0)
    try:
        client = load_client()
    except Exception as exc:  # ImportError, OSError from dlopen
        emit("error", op="load", error=f"{type(exc).__name__}: {exc}")
        return 1
    if args.scenario == "probe":
        emit("done", role="probe", library=str(Path(client.__file__).parent))
        return 0
    if args.scenario == "consume":
        return run_consumer(client, args)
    if args.scenario == "pull":
        return run_pull(client, args)
    return run_producer(client, args)


if __name__ == "__main__":
    try:
        code = main()
    except SystemExit as exc:  # argparse: usage error (2) or --help (0)
        code = exc.code if isinstance(exc.code, int) else 2
    finish(code)
