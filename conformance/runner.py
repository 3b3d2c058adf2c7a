"""Running cases: each in its own thread with a time budget, its frames recorded, its outcome classified.

A case that runs past ``--timeout`` is stopped (its connections are closed, which ends any blocking read) and reported
as an error; the run goes on with the next case. Ctrl-C stops the run between cases' frames the same way.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from rocketspec.conformance.model import Case, CaseFailed, CaseResult, CaseSkipped, Level, Outcome
from rocketspec.conformance.wire import ConnectionClosed, Unreachable
from rocketspec.refimpl.frame import FrameError

# After the budget the case gets this long to notice its closed connections before the runner moves on.
ABORT_GRACE_S = 2.0


@attrs.frozen
class RunReport:
    """The results of one run, with what the run was against and the settings its cases read."""

    suite: str
    target: str
    results: tuple[CaseResult, ...]
    settings: dict[str, str]
    strict: bool
    started_at: str
    duration_s: float
    coverage: dict[str, Any] = attrs.field(factory=dict)

    def count(self, outcome: Outcome) -> int:
        return sum(r.outcome is outcome for r in self.results)

    @property
    def ok(self) -> bool:
        """True when every MUST case passed (and, under ``--strict``, every SHOULD case too); skips are not
        failures."""
        bad = {Outcome.FAILED, Outcome.ERROR} | ({Outcome.NON_STRICT} if self.strict else set())
        return not any(r.outcome in bad for r in self.results)


def _classify(case: Case, error: BaseException | None) -> tuple[Outcome, str, str, str]:
    if error is None:
        return Outcome.PASSED, "", "", ""
    if isinstance(error, CaseFailed):
        outcome = Outcome.FAILED if case.level is Level.MUST else Outcome.NON_STRICT
        return outcome, error.expected, error.actual, ""
    if isinstance(error, CaseSkipped):
        return Outcome.SKIPPED, "", "", str(error)
    if isinstance(error, TimeoutError):
        return Outcome.FAILED if case.level is Level.MUST else Outcome.NON_STRICT, "an answer", \
            f"none: {error}", ""
    if isinstance(error, (ConnectionClosed, Unreachable, FrameError)):
        return Outcome.ERROR, "", "", f"{type(error).__name__}: {error}"
    last = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
    where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
    return Outcome.ERROR, "", "", f"{type(error).__name__}: {error}{where}"


def run_case(case: Case, make_context: Callable[[Case, float], Any], budget_s: float) -> CaseResult:
    """Run one case in a worker thread within ``budget_s`` seconds."""
    context = make_context(case, budget_s)
    box: dict[str, BaseException | None] = {"error": None}

    def body() -> None:
        try:
            case.run(context)
        except BaseException as error:  # every way a case ends is an outcome
            box["error"] = error
        finally:
            context.close()

    started = time.monotonic()
    worker = threading.Thread(target=body, name=f"case {case.id}", daemon=True)
    worker.start()
    try:
        worker.join(budget_s)
    except BaseException:
        # Ctrl-C: stop the case (its connections, its client processes) before the interrupt goes on.
        context.abort()
        worker.join(ABORT_GRACE_S)
        raise
    if worker.is_alive():
        context.abort()
        worker.join(ABORT_GRACE_S)
        outcome, expected, actual = Outcome.ERROR, "", ""
        detail = f"the case ran past its {budget_s:g} s budget (--timeout) and was stopped"
    else:
        outcome, expected, actual, detail = _classify(case, box["error"])
    return CaseResult(case, outcome, expected, actual, detail, time.monotonic() - started,
                      context.recorder.snapshot(), context.recorder.dropped)


# A slow case waits on a fixed RocketMQ timer (a 60 s lock lifetime, the 120 s broker expiry): it gets at least this.
SLOW_CASE_BUDGET_S = 200.0


def case_budget(case: Case, budget_s: float) -> float:
    """The time a case may take: ``budget_s`` (``--timeout``), at least :data:`SLOW_CASE_BUDGET_S` for a slow one."""
    return max(budget_s, SLOW_CASE_BUDGET_S) if case.slow else budget_s


def run_cases(cases: Sequence[Case], make_context: Callable[[Case, float], Any], budget_s: float,
              progress: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    results: list[CaseResult] = []
    for case in cases:
        result = run_case(case, make_context, case_budget(case, budget_s))
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def count_by(results: Iterable[CaseResult]) -> dict[str, int]:
    counts = {o.value: 0 for o in Outcome}
    for result in results:
        counts[result.outcome.value] += 1
    return counts
