"""``rocketspec conformance broker|client``: the command line's parsers.

The commands themselves (``cli.conformance_run``) are loaded when one runs: the suite's modules take half a second to
import, which every other command (``serve`` above all: its start-up is benchmarked against the real broker's) would
otherwise pay.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from rocketspec.cli.argtypes import positive_float

DEFAULT_TIMEOUT_S = 60.0


def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The handler NAME of ``rocketspec.cli.conformance_run``, imported when it is called."""

    def run(args: argparse.Namespace) -> int:
        handler: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module("rocketspec.cli.conformance_run"), name)
        return handler(args)

    return run


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", action="append", default=[], metavar="GLOB",
                        help="run only cases whose ID matches GLOB (repeatable; 'broker/pull' selects an area)")
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    parser.add_argument("--markdown", action="store_true", help="with --list: print a Markdown table")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--json", metavar="FILE", help="write a JSON report")
    parser.add_argument("--html", metavar="DIR", help="write DIR/index.html (self-contained) and DIR/index.json")
    parser.add_argument("--strict", action="store_true", help="SHOULD cases that fail count as failures")
    parser.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help=f"time budget per case in seconds (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--long", action="store_true",
                        help="also run cases that wait on fixed RocketMQ timers (lock expiry, broker expiry)")


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conformance = commands.add_parser(
        "conformance", help="run the conformance suite against a broker or a client",
        description="Clause-mapped conformance cases run over the wire (docs/conformance.md).")
    suites = conformance.add_subparsers(dest="conformance_command", metavar="SUITE")
    suites.required = True
    broker = suites.add_parser(
        "broker", help="check a name server and its brokers",
        description=("Run the broker cases against the name server at --namesrv and the master brokers registered "
                     "there; afterwards delete every topic, group and consumer offset the run made. Exit 0 when "
                     "every MUST case passed (and, with --strict, every SHOULD case), 1 otherwise, 2 on bad input or "
                     "an untestable target."))
    broker.add_argument("--namesrv", metavar="HOST:PORT", help="name server of the broker under test")
    _common_options(broker)
    broker.set_defaults(handler=_command("cmd_conformance_broker"))
    client = suites.add_parser(
        "client", help="check a client through a driver command (like h2specd)",
        description=("For each client case, serve the reference cluster on loopback with the case's faults, run "
                     "COMMAND (the driver contract: environment in, JSON lines out; docs/conformance.md) and judge "
                     "the client's frames with the spec's oracles. Exit 0 when every MUST case passed, 1 otherwise, "
                     "2 on bad input or a driver that cannot start."))
    client.add_argument("--exec", metavar="COMMAND", help="the driver command (split like a shell does)")
    _common_options(client)
    client.set_defaults(handler=_command("cmd_conformance_client"))
