"""The ``rocketspec`` command line: the top-level parser, and one place that turns errors into exit statuses.

Each command group owns its parsers and handlers (``cli.spec``, ``cli.traces``, ``cli.serve``, ``cli.conformance``);
option values are parsed by the types of ``cli.argtypes``. A handler returns the exit status (0 ok, 1 a check
failed) or raises :class:`~rocketspec.cli.errors.UsageError` (exit 2, one line); a reader that closed the pipe
(``| head``) ends the command quietly.

Interrupts: Ctrl-C (SIGINT) and SIGTERM end every command the same way, within 2 s: the handler's cleanup runs
(``spec check`` kills its CrossHair process groups and starts no new one), one line ``rocketspec: interrupted`` is
printed on stderr, no traceback, and the exit status is 130 for SIGINT and 143 for SIGTERM (128 + the signal's
number, as a shell reports a process the signal ended). SIGTERM is turned into :class:`Terminated`, a
``KeyboardInterrupt``, so that every ``except KeyboardInterrupt`` and ``finally`` cleans up after it as after a
Ctrl-C; a command that handles the signals itself (``serve``, ``tap``) installs its own handlers while it runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from rocketspec import __version__
from rocketspec.cli import conformance, serve, spec, traces
from rocketspec.cli.errors import UsageError
from rocketspec.cli.parsing import CommandParser


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = CommandParser(  # an unknown option reported by its sub-command (cli.parsing)
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


#: The exit statuses of an interrupted command: 128 + the signal's number.
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like a Ctrl-C so that every command's cleanup runs the same way."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` and SIGINT ``KeyboardInterrupt`` while a command runs (the previous
    handlers are back afterwards: ``main`` is also called in-process, by tests). Only the main
    thread may install a handler; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    # A shell starts a background job (`rocketspec spec check &`) with SIGINT ignored, and Python then leaves it
    # ignored: `kill -INT` would do nothing for the whole run. SIGINT interrupts every command, however started.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with _signals_interrupt():
            return int(args.handler(args))
    except UsageError as exc:
        print(f"rocketspec: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("rocketspec: interrupted", file=sys.stderr)
        return EXIT_SIGTERM if isinstance(exc, Terminated) else EXIT_SIGINT
    except BrokenPipeError:
        # The reader stopped reading (`| head`): it had what it wanted. Nothing more may reach the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
