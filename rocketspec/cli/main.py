"""The ``rocketspec`` command line: the top-level parser, and one place that turns errors into exit statuses.

Each command group owns its parsers and handlers (``cli.spec``, ``cli.traces``, ``cli.serve``, ``cli.conformance``);
option values are parsed by the types of ``cli.argtypes``. A handler returns the exit status (0 ok, 1 a check
failed) or raises :class:`~rocketspec.cli.errors.UsageError` (exit 2, one line); Ctrl-C exits 130 with one line, and a
reader that closed the pipe (``| head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rocketspec import __version__
from rocketspec.cli import conformance, serve, spec, traces
from rocketspec.cli.errors import UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketspec",
        description="Executable, formally checked specification of Apache RocketMQ 4.x client/broker protocols.",
    )
    parser.add_argument("--version", action="version", version=f"rocketspec {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    spec.add_parsers(commands)
    traces.add_parsers(commands)
    serve.add_parsers(commands)
    conformance.add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"rocketspec: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rocketspec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`| head`): it had what it wanted. Nothing more may reach the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
