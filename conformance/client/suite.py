"""Running the client cases against a driver command: one served cluster and fresh client processes per case."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from rocketspec.conformance.client import offsets, pull, rebalance, retry, send, transaction
from rocketspec.conformance.client.context import ClientContext
from rocketspec.conformance.client.driver import check_command
from rocketspec.conformance.model import Case, CaseResult, Outcome, select
from rocketspec.conformance.runner import run_case

CLIENT_CASES: list[Case] = [
    *send.CASES, *rebalance.CASES, *offsets.CASES, *pull.CASES, *retry.CASES, *transaction.CASES,
]


_DRIVER_ERROR = re.compile(r"^Driver(?:Start)?Error: (?P<message>.*?)(?: at [\w.]+\.py:\d+)?$", re.DOTALL)


def _plain_driver_error(result: CaseResult) -> CaseResult:
    """A driver's breach of the contract is the driver's fault, not the suite's: its one line, without the class
    name and the suite's source line the runner adds to errors."""
    match = _DRIVER_ERROR.match(result.detail) if result.outcome is Outcome.ERROR else None
    return attrs.evolve(result, detail=match["message"]) if match else result


def run_client_suite(command: str | Sequence[str], patterns: Sequence[str], budget_s: float,
                     progress: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """Run the client cases matching ``patterns`` (all when empty) against the driver ``command``.

    ``command`` is split with ``shlex`` when a string. A command whose program cannot be found raises
    :class:`~rocketspec.conformance.client.driver.DriverStartError` (one line) before any case runs. Each case gets
    ``budget_s`` seconds (the slowest needs about 15 s). A driver that never reports ``started`` (or prints something
    that is not JSON first) makes its case an error, and the cases after it errors too, without running them.
    """
    argv = check_command(command)
    chosen = select(CLIENT_CASES, patterns)
    results: list[CaseResult] = []
    broken: str | None = None
    with tempfile.TemporaryDirectory(prefix="rocketspec-client-") as work:
        workdir = Path(work)
        contexts: list[ClientContext] = []

        def make_context(case: Case, budget: float) -> ClientContext:
            context = ClientContext(case, budget, argv, workdir=workdir)
            contexts.append(context)
            return context

        for case in chosen:
            if broken is not None:
                # A driver that never starts fails every case the same way: say so at once instead of waiting.
                result = CaseResult(case, Outcome.ERROR, detail=f"not run: {broken}")
            else:
                result = _plain_driver_error(run_case(case, make_context, budget_s))
                if contexts and contexts[-1].driver_broken is not None:
                    broken = f"the driver did not start in {case.id} ({contexts[-1].driver_broken})"
            results.append(result)
            if progress is not None:
                progress(result)
    return results
