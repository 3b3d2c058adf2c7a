"""The checks every case context offers: expectations that explain themselves, skips, and bounded waits.

A context (broker or client) sets ``started``, ``deadline`` (the case's budget) and ``aborted`` (the runner stopped
the case); these methods fail the case with ``Expected: … Actual: …``, skip it with a reason, or poll a predicate
without ever running past the budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

from rocketspec.conformance.model import CaseFailed, CaseSkipped

T = TypeVar("T")


class CaseAborted(Exception):
    """The runner stopped the case (it ran past ``--timeout``)."""


class CaseChecks:
    """Expectations, skips and waits of one case; subclasses set ``started``, ``deadline`` and ``aborted``."""

    started: float
    deadline: float
    aborted: bool

    def expect(self, condition: bool, expected: str, actual: str) -> None:
        if not condition:
            raise CaseFailed(expected, actual)

    def expect_equal(self, actual: object, expected: object, what: str) -> None:
        if actual != expected:
            raise CaseFailed(f"{what} = {expected!r}", f"{what} = {actual!r}")

    def skip(self, reason: str) -> NoReturn:
        raise CaseSkipped(reason)

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def check_aborted(self) -> None:
        if self.aborted:
            raise CaseAborted("the case was stopped")

    def poll(self, predicate: Callable[[], T], timeout: float, interval: float = 0.05) -> T | None:
        """Poll ``predicate`` until it returns something truthy (returned) or ``timeout`` seconds pass, never past
        the case's budget (None)."""
        end = min(time.monotonic() + timeout, self.deadline)
        while True:
            self.check_aborted()
            value = predicate()
            if value:
                return value
            if time.monotonic() >= end:
                return None
            time.sleep(interval)

    def wait_until(self, predicate: Callable[[], T | None], timeout: float, *, what: str, interval: float = 0.05) -> T:
        """Like :meth:`poll`, but the case fails saying what it waited for when nothing truthy comes in time."""
        value = self.poll(predicate, timeout, interval)
        if not value:
            raise CaseFailed(f"{what} within {timeout:g} s", "it did not happen in time")
        return value
