"""``rocketspec serve`` and ``rocketspec tap``: the reference cluster for real clients, and the recording proxy."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # (the module itself is loaded when serve runs: start-up time)
    from rocketspec.refimpl.served import ServedCluster

SEND_MODES = ("SYNC", "ASYNC")
SEND_MODE_HELP = ("how the producers send (SYNC or ASYNC; they look alike on the wire): the trace's sends get that "
                  "mode and are judged by every send-retry rule of it (without it their mode is unknown, and the "
                  "budget and broker-avoidance rules are not judged)")


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


def _check_trace_dir(path: str | None, force: bool, option: str = "--trace") -> None:
    from rocketspec.cli.serve_checks import writable_dir

    if path is not None:
        writable_dir(option, path, force=force, empty=True)


def _file_error(option: str, path: str, error: ValueError) -> UsageError:
    """A fault or ACL file's error, naming the option (the library's message names the file already)."""
    return UsageError(f"{option} {path}: {str(error).replace(f' file {path}', ' file')}")


def _configure_namesrvs(served: ServedCluster, settings: dict[str, str]) -> None:
    """Start the name servers with a --namesrv-config file's settings (on the loop that serves them, before
    ``ready`` is printed)."""
    assert served.cluster is not None
    for namesrv in served.cluster.namesrvs:
        namesrv.admin.configure(settings)


def cmd_serve(args: argparse.Namespace) -> int:
    started = time.monotonic()
    from rocketspec.cli.brokerconf import serve_config
    from rocketspec.cli.serve_checks import bindable_host, free_broker_ports, free_port, resolvable, writable_dir
    from rocketspec.refimpl.acl_config import load_acl_file
    from rocketspec.refimpl.served import load_fault_file
    from rocketspec.traces.served import TracedServer

    config = serve_config(args)
    _check_trace_dir(args.trace, args.force)
    if args.data_dir is not None:
        writable_dir("--data-dir", args.data_dir)
    bindable_host(args.host)
    resolvable(config.advertise_host.source, config.advertise_host.value)
    free_port(config.port.source, args.host, config.port.value)
    broker_ports = config.broker_ports
    if broker_ports is not None:
        free_broker_ports(config.broker_ports_source, args.host, broker_ports)
    try:
        faults = load_fault_file(args.faults) if args.faults else None
    except ValueError as error:
        raise _file_error("--faults", args.faults, error) from None
    try:
        acl = load_acl_file(args.acl) if args.acl else None
    except ValueError as error:
        raise _file_error("--acl", args.acl, error) from None
    for note in config.notes:
        print(f"rocketspec: note: {note}", file=sys.stderr)
    try:
        served = TracedServer(
            args.trace,
            fmt=args.trace_format,
            send_mode=args.send_mode,
            brokers=args.brokers,
            host=args.host,
            port=config.port.value,
            advertise_host=config.advertise_host.value,
            data_dir=args.data_dir,
            # (mypy cannot see that these keys are not TracedServer's own str parameters: they go to **options)
            **({"broker_ports": broker_ports} if broker_ports else {}),  # type: ignore[arg-type]
            faults=faults,
            limits=ServerLimits(idle_close_s=config.idle_close.value, max_connections=args.max_connections,
                                buffer_limit_bytes=args.buffer_limit * MIB),
            broker_settings=config.broker_settings,
            acl=acl,
        )
    except ValueError as error:  # a bad send mode or trace dir, a setting a broker refuses
        raise UsageError(str(error)) from None
    except OSError as error:  # a port taken since it was checked, a data directory gone
        where = f" ({error.filename})" if error.filename else ""
        raise UsageError(f"{error.strerror or error}{where}") from None
    with served, _until_interrupted() as stop:
        if config.namesrv_settings:
            served.submit(lambda: _configure_namesrvs(served, config.namesrv_settings))
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
    serve.add_argument("--port", type=port_number, metavar="P",
                       help=f"name server port (default the --namesrv-config file's listenPort, else "
                            f"{DEFAULT_NAMESRV_PORT}; 0 picks a free one)")
    serve.add_argument("--host", default="127.0.0.1", metavar="H",
                       help="address to bind (default 127.0.0.1; 0.0.0.0 for every interface)")
    serve.add_argument("--advertise-host", metavar="H",
                       help="host brokers register for clients to dial (default the bound host, or this machine's "
                            "address when bound to 0.0.0.0)")
    serve.add_argument("--data-dir", metavar="D",
                       help="keep the brokers' stores here, recovered on the next start (default in memory)")
    serve.add_argument("--flush", choices=("async", "sync"),
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
    serve.add_argument("--idle-close", type=non_negative_float, metavar="S",
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
    serve.add_argument("--broker-config", metavar="FILE", action="append",
                       help="a RocketMQ broker.conf (Java properties) applied to every broker: messageDelayLevel, "
                            "transactionTimeOut, transactionCheckInterval, enablePropertyFilter, flushDiskType, ... "
                            "(docs/serve.md lists what is taken, ignored or refused); given once per broker (as "
                            "many times as --brokers), the Nth file is the Nth broker's; a flag given overrides it")
    serve.add_argument("--namesrv-config", metavar="FILE",
                       help="a RocketMQ name server configuration file (NamesrvConfig and NettyServerConfig "
                            "properties: listenPort, orderMessageEnable, ...); a flag given overrides it")
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
