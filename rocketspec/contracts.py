"""Running CrossHair over the contracts (PEP 316 docstrings) of spec modules.

CrossHair runs in a subprocess: it symbolically executes every function with a contract and reports, per
condition line, a counterexample, a confirmation over all paths, or nothing found within the time given.
Results are attributed to the registered oracle whose source holds the condition line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence

import attrs

#: CrossHair's CPU seconds per condition in ``spec check`` (``--crosshair-timeout``).
CONDITION_TIMEOUT_S = 4.0
#: A condition is left after this many consecutive iterations that reach no new code (``--crosshair-iterations``).
#: With the timeout alone, every condition CrossHair cannot confirm takes the whole timeout, most of the check's time;
#: the mutant tests run with these same settings, so they show what the main check catches.
UNINTERESTING_ITERATIONS = 40

_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<level>error|info|warning): (?P<message>.*)$")


@attrs.frozen
class ConditionResult:
    """What CrossHair said about one condition line."""

    path: str
    line: int
    level: str
    message: str

    @property
    def failed(self) -> bool:
        return self.level == "error"

    @property
    def confirmed(self) -> bool:
        return self.level == "info" and "Confirmed over all paths" in self.message


@attrs.frozen
class CrosshairRun:
    """One ``crosshair check`` of one target."""

    target: str
    returncode: int
    results: tuple[ConditionResult, ...]
    stderr: str
    seconds_per_condition: float

    @property
    def crashed(self) -> bool:
        # 1 means counterexamples; anything else non-zero is CrossHair failing to run at all.
        return self.returncode not in (0, 1)

    def in_lines(self, path: str, first: int, last: int) -> tuple[ConditionResult, ...]:
        real = os.path.realpath(path)
        return tuple(
            r for r in self.results if os.path.realpath(r.path) == real and first <= r.line <= last
        )


def run_crosshair(
    target: str | Sequence[str],
    per_condition_timeout: float = CONDITION_TIMEOUT_S,
    extra_paths: Sequence[str] = (),
    timeout: float = 900.0,
    max_uninteresting_iterations: int = UNINTERESTING_ITERATIONS,
) -> CrosshairRun:
    """Run ``crosshair check --report_all`` on ``target`` (a module or ``module.function``, or several); a condition
    ends at ``per_condition_timeout`` or after ``max_uninteresting_iterations`` iterations without progress (0:
    never)."""
    name = target if isinstance(target, str) else " ".join(target)
    env = dict(os.environ)
    if extra_paths:
        env["PYTHONPATH"] = os.pathsep.join([*extra_paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [
        sys.executable, "-m", "crosshair", "check", *([target] if isinstance(target, str) else target),
        "--report_all", f"--per_condition_timeout={per_condition_timeout}",
    ]
    if max_uninteresting_iterations:
        cmd.append(f"--max_uninteresting_iterations={max_uninteresting_iterations}")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return CrosshairRun(name, -1, (), f"crosshair did not finish within {timeout} s", per_condition_timeout)
    results = []
    for raw in proc.stdout.splitlines():
        match = _LINE.match(raw.strip())
        if match:
            results.append(
                ConditionResult(match["path"], int(match["line"]), match["level"], match["message"])
            )
    return CrosshairRun(name, proc.returncode, tuple(results), proc.stderr, per_condition_timeout)
