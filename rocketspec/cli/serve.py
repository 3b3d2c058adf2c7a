"""``rocketspec serve`` and ``rocketspec tap``: the reference cluster for real clients, and the recording proxy."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rocketspec.cli.argtypes import (
    delay_level_text,
    delay_levels,
    host_port,
    non_negative_float,
    port_number,
    positive_int,
    topic_spec,
)
from rocketspec.cli.errors import UsageError
from rocketspec.refimpl.limits import MIB, ServerLimits
from rocketspec.spec.protocol import DEFAULT_NAMESRV_PORT, SERVER_CHANNEL_MAX_IDLE_S
from rocketspec.traces.recording import FORMATS

SEND_MODES = ("SYNC", "ASYNC")
SEND_MODE_HELP = ("how the producers send (SYNC or ASYNC; they look alike on the wire): with it the trace records send "
                  "attempts and results of messages with a UNIQ_KEY, judged by the send-retry rules of that mode")


@contextmanager
def _until_interrupted() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM (restoring the previous handlers afterwards)."""
    stop = threading.Event()

    def handler(_signum: int, _frame: Any) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _check_trace_dir(path: str | None, force: bool) -> None:
    if path is None:
        return
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"trace output {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(f"trace directory {out} is not empty (use --force to add this run to it)")


def _broker_ports(first: int, brokers: int) -> list[int]:
    """``--broker-port P``: broker i listens on P + 10 i (and on that port - 2, the VIP channel)."""
    ports = [first + 10 * i for i in range(brokers)]
    if ports[0] < 3 or ports[-1] > 65535:
        raise UsageError(f"--broker-port {first} leaves no room for {brokers} broker(s) "
                         f"(ports {ports[0]}..{ports[-1]}, each with its port - 2)")
    return ports


def cmd_serve(args: argparse.Namespace) -> int:
    started = time.monotonic()
    from rocketspec.traces.served import TracedServer

    _check_trace_dir(args.trace, args.force)
    try:
        served = TracedServer(
            args.trace,
            fmt=args.trace_format,
            send_mode=args.send_mode,
            brokers=args.brokers,
            host=args.host,
            port=args.port,
            advertise_host=args.advertise_host,
            data_dir=args.data_dir,
            flush=args.flush,
            # (mypy cannot see that these keys are not TracedServer's own str parameters: they go to **options)
            **({"broker_ports": _broker_ports(args.broker_port, args.brokers)} if args.broker_port else {}),  # type: ignore[arg-type]
            faults=args.faults,
            limits=ServerLimits(idle_close_s=args.idle_close, max_connections=args.max_connections,
                                buffer_limit_bytes=args.buffer_limit * MIB),
            **({"message_delay_level": args.message_delay_level} if args.message_delay_level else {}),
            **({"enable_property_filter": True} if args.enable_property_filter else {}),  # type: ignore[arg-type]
            **({"acl": args.acl} if args.acl else {}),
        )
    except ValueError as error:  # a bad fault file (FaultFileError), ACL file (AclFileError), send mode or trace dir
        raise UsageError(str(error)) from None
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise UsageError(f"{error.strerror or error}{where}") from None
    with served, _until_interrupted() as stop:
        for name, queues in args.topic:
            served.create_topic(name, queues)
        print(served.describe())
        print(f"ready in {(time.monotonic() - started) * 1000:.0f} ms; Ctrl-C stops", flush=True)
        stop.wait()
        print("stopping", file=sys.stderr)
    if args.trace:
        print(f"trace written to {args.trace}", file=sys.stderr)
    return 0


def cmd_tap(args: argparse.Namespace) -> int:
    from rocketspec.traces.tap import TapError, run_tap

    _check_trace_dir(args.trace, args.force)
    try:
        with _until_interrupted() as stop:
            run_tap(args.listen_host, args.listen, args.upstream, args.trace, fmt=args.trace_format,
                    send_mode=args.send_mode, delay_levels_ms=args.message_delay_level, stop=stop)
    except TapError as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(error.strerror or str(error)) from None
    return 0


def add_parsers(commands: Any) -> None:
    """Register ``serve`` and ``tap`` on the top-level sub-command parsers."""
    serve = commands.add_parser(
        "serve",
        help="serve the reference name server and brokers over TCP to real RocketMQ clients",
        description=(
            "Serve the reference name server and brokers over the RocketMQ remoting protocol (JSON and binary "
            "headers), on 127.0.0.1 by default: point real clients at the printed name server address. Serves until "
            "interrupted (Ctrl-C or SIGTERM). Brokers listen on free ports and register them with the name server."
        ),
    )
    serve.add_argument("--brokers", type=positive_int, default=1, metavar="N", help="brokers (default 1)")
    serve.add_argument("--port", type=port_number, default=DEFAULT_NAMESRV_PORT, metavar="P",
                       help=f"name server port (default {DEFAULT_NAMESRV_PORT}; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", metavar="H",
                       help="address to bind (default 127.0.0.1; 0.0.0.0 for every interface)")
    serve.add_argument("--advertise-host", metavar="H",
                       help="host brokers register for clients to dial (default the bound host, or this machine's "
                            "address when bound to 0.0.0.0)")
    serve.add_argument("--data-dir", metavar="D",
                       help="keep the brokers' stores here, recovered on the next start (default in memory)")
    serve.add_argument("--flush", choices=("async", "sync"), default="async",
                       help="the brokers' flushDiskType: async (default, ASYNC_FLUSH) writes each message to the "
                            "data directory's files at once and fsyncs them every 500 ms, so a killed server keeps "
                            "every acknowledged message; sync (SYNC_FLUSH) answers a send only after the fsync "
                            "(one per group of sends), so a machine crash keeps them too")
    serve.add_argument("--broker-port", type=port_number, metavar="P",
                       help="port of the first broker (the next get P+10, P+20, ...; each also listens on its port "
                            "- 2, the VIP channel); default free ports. A restarted server keeps its addresses")
    serve.add_argument("--trace", metavar="OUT",
                       help="record the run as a trace (docs/traces.md) in directory OUT; check it with "
                            "'rocketspec traces check OUT'")
    serve.add_argument("--trace-format", choices=FORMATS, default=FORMATS[0],
                       help="trace format (default parquet)")
    serve.add_argument("--force", action="store_true", help="record into a trace directory that is not empty")
    serve.add_argument("--faults", metavar="FILE",
                       help="JSON fault rules to apply from the start (docs/serve.md): error codes, delays, dropped "
                            "requests or responses, disconnects, per broker and request code")
    serve.add_argument("--idle-close", type=non_negative_float, default=SERVER_CHANNEL_MAX_IDLE_S, metavar="S",
                       help="close a connection with no traffic either way for S seconds, as RocketMQ's "
                            f"serverChannelMaxIdleTimeSeconds (default {SERVER_CHANNEL_MAX_IDLE_S}; 0: never)")
    serve.add_argument("--max-connections", type=positive_int, default=ServerLimits().max_connections, metavar="N",
                       help=f"refuse connections beyond N (default {ServerLimits().max_connections})")
    serve.add_argument("--buffer-limit", type=positive_int, default=ServerLimits().buffer_limit_bytes // MIB,
                       metavar="MB",
                       help="bytes the server holds for all clients together: requests waiting (past their half a "
                            "request is answered SYSTEM_BUSY), partial frames and unread answers (default "
                            f"{ServerLimits().buffer_limit_bytes // MIB})")
    serve.add_argument("--topic", type=topic_spec, action="append", default=[], metavar="NAME[:QUEUES]",
                       help="create a topic on every broker at start (repeatable; producers also create topics "
                            "on first send)")
    serve.add_argument("--send-mode", choices=SEND_MODES, metavar="MODE",
                       help=SEND_MODE_HELP)
    serve.add_argument("--message-delay-level", type=delay_level_text, metavar="LEVELS",
                       help="the brokers' messageDelayLevel (default RocketMQ's '1s 5s 10s 30s 1m ... 2h'); short "
                            "delays make consume retries come back quickly")
    serve.add_argument("--enable-property-filter", action="store_true",
                       help="the brokers' enablePropertyFilter: serve SQL92 subscriptions (MessageSelector.bySql); "
                            "off by default, as in RocketMQ")
    serve.add_argument("--acl", metavar="FILE",
                       help="plain ACL as RocketMQ's aclEnable: a plain_acl.yml of accounts and white addresses; "
                            "brokers check every request, the name server its changing ones (docs/serve.md)")
    serve.set_defaults(handler=cmd_serve)

    tap = commands.add_parser(
        "tap",
        help="a recording proxy: another implementation's traffic as trace events",
        description=(
            "Listen as a name server, forward to the upstream name server, and proxy its brokers too (routes are "
            "rewritten to point at the tap), recording what clients and servers say as trace events "
            "(docs/traces.md). Runs until interrupted; the trace is written on exit."
        ),
    )
    tap.add_argument("--listen", type=port_number, required=True, metavar="PORT",
                     help="port clients use as their name server (0 picks a free one)")
    tap.add_argument("--listen-host", default="127.0.0.1", metavar="H", help="address to bind (default 127.0.0.1)")
    tap.add_argument("--upstream", type=host_port, required=True, metavar="HOST:PORT",
                     help="the real name server")
    tap.add_argument("--trace", required=True, metavar="OUT", help="trace directory to write")
    tap.add_argument("--trace-format", choices=FORMATS, default=FORMATS[0],
                     help="trace format (default parquet)")
    tap.add_argument("--force", action="store_true", help="record into a trace directory that is not empty")
    tap.add_argument("--send-mode", choices=SEND_MODES, metavar="MODE", help=SEND_MODE_HELP)
    tap.add_argument("--message-delay-level", type=delay_levels, metavar="LEVELS",
                     help="the upstream brokers' messageDelayLevel when it is not RocketMQ's default (e.g. "
                          "'1s 1s 2s'): retries in the trace are judged by it")
    tap.set_defaults(handler=cmd_tap)
