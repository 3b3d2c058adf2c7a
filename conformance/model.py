"""What a conformance case is, what running it can end in, and the registry cases are declared in.

A case is named by area (``broker/pull/offset-moved-below-min``), cites the clauses it checks, has a level (MUST:
RocketMQ 4.x clients depend on it; SHOULD: 4.9.8 does it, but a departure breaks nothing a client relies on) and a
one-line requirement. Running it gives one :class:`Outcome`, in the manner of h2spec and the Autobahn testsuite:

- ``passed``;
- ``failed`` — a MUST case saw something else (``Expected: … Actual: …``);
- ``non-strict`` — a SHOULD case saw something else (a failure under ``--strict``);
- ``skipped`` — the target lacks what the case needs (a feature switched off, a timer too long to wait), with the
  reason;
- ``error`` — the case itself could not run (the connection broke, the case ran past ``--timeout``).
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from rocketspec.conformance.wire import Exchange

_CASE_ID = re.compile(r"^(broker|client)/[a-z0-9-]+/[a-z0-9-]+$")


class Level(enum.Enum):
    MUST = "MUST"
    SHOULD = "SHOULD"


class Outcome(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    NON_STRICT = "non-strict"
    SKIPPED = "skipped"
    ERROR = "error"


# The outcomes that judge the target: the case ran to the end and compared what the target did with its clauses. A
# skip (the target could not be driven into the case) and an error (the case could not run) judged nothing, so a
# clause they cite is not covered by them.
VERDICTS: frozenset[Outcome] = frozenset({Outcome.PASSED, Outcome.FAILED, Outcome.NON_STRICT})


class CaseFailed(Exception):
    """The target answered something other than what the clauses require."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"Expected: {expected}  Actual: {actual}")
        self.expected = expected
        self.actual = actual


class CaseSkipped(Exception):
    """The target cannot be driven into what the case needs; the message says why."""


def _valid_case_id(_inst: object, _attr: object, value: str) -> None:
    if not _CASE_ID.match(value):
        raise ValueError(f"case IDs look like broker/pull/offset-moved-below-min, not {value!r}")


@attrs.frozen
class Case:
    """One conformance case: its ID, the clauses it checks, its level, the rule in one line, and its body.

    ``run`` takes the suite's context object (a broker or client context) and returns normally when the target
    conforms; it raises :class:`CaseFailed` or :class:`CaseSkipped` otherwise. ``slow`` marks a case that waits on a
    fixed RocketMQ timer the target cannot shorten (run only with ``--long``).
    """

    id: str = attrs.field(validator=_valid_case_id)
    clauses: tuple[str, ...]
    level: Level
    requirement: str
    run: Callable[[Any], None] = attrs.field(eq=False, repr=False)
    slow: bool = False

    @property
    def area(self) -> str:
        return self.id.split("/")[1]


@attrs.frozen
class CaseResult:
    """What running one case gave."""

    case: Case
    outcome: Outcome
    expected: str = ""
    actual: str = ""
    detail: str = ""
    duration_s: float = 0.0
    exchanges: tuple[Exchange, ...] = ()
    dropped_exchanges: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.case.id,
            "area": self.case.area,
            "clauses": list(self.case.clauses),
            "level": self.case.level.value,
            "requirement": self.case.requirement,
            "outcome": self.outcome.value,
            "expected": self.expected,
            "actual": self.actual,
            "detail": self.detail,
            "duration_s": round(self.duration_s, 3),
            "frames": [e.to_json() for e in self.exchanges],
            "frames_dropped": self.dropped_exchanges,
        }


class CaseList:
    """The cases of one module, declared with the :meth:`case` decorator in the order they run."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.rstrip("/")
        self.cases: list[Case] = []

    def case(self, name: str, *, clauses: Sequence[str], requirement: str, level: Level = Level.MUST,
             slow: bool = False) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
        """Declare the decorated function as case ``<prefix>/<name>``; the function is returned unchanged."""

        def register(function: Callable[[Any], None]) -> Callable[[Any], None]:
            case_id = f"{self.prefix}/{name}"
            if any(c.id == case_id for c in self.cases):
                raise ValueError(f"case {case_id} is declared twice")
            if not clauses:
                raise ValueError(f"case {case_id} cites no clause")
            self.cases.append(Case(case_id, tuple(clauses), level, requirement, function, slow))
            return function

        return register


def select(cases: Iterable[Case], patterns: Sequence[str]) -> list[Case]:
    """The cases whose ID matches any of the glob ``patterns`` (all of them when there are none).

    A pattern without a glob character also matches every case under it (``broker/pull`` selects the area).
    """
    cases = list(cases)
    if not patterns:
        return cases
    chosen: list[Case] = []
    for case in cases:
        for pattern in patterns:
            if fnmatch.fnmatchcase(case.id, pattern) or case.id.startswith(pattern.rstrip("/") + "/"):
                chosen.append(case)
                break
    return chosen
