"""Running CrossHair over the contracts (PEP 316 docstrings) of spec modules.

CrossHair runs in a subprocess: it symbolically executes every function with a contract and reports, per
condition line, a counterexample, a confirmation over all paths, or nothing found within the time given.
Results are attributed to the registered oracle whose source holds the condition line.

Each CrossHair process runs in a session of its own (a Ctrl-C at the terminal does not reach it) and is started
through a :class:`Cancellation`: once it is cancelled no new process starts and every running one is killed with
its whole process group, so an interrupted check leaves nothing behind.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

import attrs

#: CrossHair's CPU seconds per condition in ``spec check`` (``--crosshair-timeout``).
CONDITION_TIMEOUT_S = 4.0
#: A condition is left after this many consecutive iterations that reach no new code (``--crosshair-iterations``).
#: With the timeout alone, every condition CrossHair cannot confirm takes the whole timeout, most of the check's time;
#: the mutant tests run with these same settings, so they show what the main check catches.
UNINTERESTING_ITERATIONS = 40
#: How often a waiting run looks whether it was cancelled: the bound on how late an interrupt kills CrossHair.
POLL_S = 0.2

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

    @property
    def unconfirmed(self) -> bool:
        """Neither refuted nor confirmed: CrossHair ran out of time or iterations without a counterexample."""
        return not self.failed and not self.confirmed


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

    @property
    def unconfirmed(self) -> int:
        """How many conditions CrossHair neither refuted nor confirmed over all paths."""
        return sum(r.unconfirmed for r in self.results)

    def in_lines(self, path: str, first: int, last: int) -> tuple[ConditionResult, ...]:
        real = os.path.realpath(path)
        return tuple(
            r for r in self.results if os.path.realpath(r.path) == real and first <= r.line <= last
        )


class CrosshairCancelled(Exception):
    """The run was cancelled (an interrupt): CrossHair did not run, or was killed."""


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` and every process it started (its session's process group); already gone is fine."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Cancellation:
    """The stop signal of a set of CrossHair runs, callable from any thread.

    :meth:`cancel` kills every CrossHair process group started through :meth:`popen` at once (it does not wait
    for a worker thread), and every later :meth:`popen` refuses to start one: the check cannot outlive its
    interrupt, nor start a new process after it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._running: set[subprocess.Popen[str]] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            running = list(self._running)
        for proc in running:
            _kill_group(proc)

    def popen(self, cmd: Sequence[str], env: dict[str, str]) -> subprocess.Popen[str]:
        """Start ``cmd`` in a new session (its own process group), or raise :class:`CrosshairCancelled`."""
        with self._lock:  # under the lock: a cancel either sees this process or stops it from starting
            if self._cancelled:
                raise CrosshairCancelled("cancelled before CrossHair started")
            proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    start_new_session=True)
            self._running.add(proc)
            return proc

    def finished(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._running.discard(proc)


def _communicate(proc: subprocess.Popen[str], cancel: Cancellation, timeout: float) -> tuple[str, str] | None:
    """``proc``'s stdout and stderr once it ends; ``None`` when ``timeout`` passed first (then it is killed).
    Raises :class:`CrosshairCancelled` (the process group killed) as soon as ``cancel`` is cancelled."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            if cancel.cancelled:
                raise CrosshairCancelled("interrupted")
            left = deadline - time.monotonic()
            if left <= 0:
                _kill_group(proc)
                proc.communicate()
                return None
            try:
                return proc.communicate(timeout=min(POLL_S, left))
            except subprocess.TimeoutExpired:
                continue  # communicate may be called again: it keeps what it has read
    except BaseException:
        _kill_group(proc)
        proc.communicate()  # reap it and close its pipes (it is killed: this returns at once)
        raise
    finally:
        cancel.finished(proc)


def parse_output(stdout: str) -> tuple[ConditionResult, ...]:
    """The condition lines of ``crosshair check --report_all`` output."""
    results = []
    for raw in stdout.splitlines():
        match = _LINE.match(raw.strip())
        if match:
            results.append(ConditionResult(match["path"], int(match["line"]), match["level"], match["message"]))
    return tuple(results)


def run_crosshair(
    target: str | Sequence[str],
    per_condition_timeout: float = CONDITION_TIMEOUT_S,
    extra_paths: Sequence[str] = (),
    timeout: float = 900.0,
    max_uninteresting_iterations: int = UNINTERESTING_ITERATIONS,
    cancel: Cancellation | None = None,
) -> CrosshairRun:
    """Run ``crosshair check --report_all`` on ``target`` (a module or ``module.function``, or several); a condition
    ends at ``per_condition_timeout`` or after ``max_uninteresting_iterations`` iterations without progress (0:
    never). Raises :class:`CrosshairCancelled` when ``cancel`` is cancelled before or while it runs."""
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
    cancel = cancel if cancel is not None else Cancellation()
    proc = cancel.popen(cmd, env)
    output = _communicate(proc, cancel, timeout)
    if output is None:
        return CrosshairRun(name, -1, (), f"crosshair did not finish within {timeout} s", per_condition_timeout)
    stdout, stderr = output
    return CrosshairRun(name, proc.returncode, parse_output(stdout), stderr, per_condition_timeout)
