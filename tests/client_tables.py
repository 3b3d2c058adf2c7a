"""What a real client's conformance run must show, case by case, as docs/conformance.md documents it.

A client's test module keeps three tables: UNSUPPORTED (case glob -> words of the driver's ``unsupported`` reason),
DEPARTURES (case glob -> (clause, why): the case fails or is non-strict), INTERMITTENT (case -> (clause, what was
seen): either). Every other case must pass. ``tests/test_conformance_docs.py`` checks the doc's table against them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from rocketspec.conformance.client import CLIENT_CASES
from rocketspec.conformance.model import CaseResult, Outcome


def listed(table: Mapping[str, object], case_id: str) -> object | None:
    """The value of the first glob of ``table`` matching ``case_id``."""
    return next((value for pattern, value in table.items() if fnmatch.fnmatchcase(case_id, pattern)), None)


def describe(result: CaseResult) -> str:
    return (f"{result.case.id}: {result.outcome.value}; expected: {result.expected}; actual: {result.actual}; "
            f"detail: {result.detail}")


def assert_ends_as_documented(result: CaseResult, unsupported: Mapping[str, str],
                              departures: Mapping[str, tuple[str, str]],
                              intermittent: Mapping[str, tuple[str, str]] | None = None) -> None:
    case_id = result.case.id
    unstable = (intermittent or {}).get(case_id)
    reason = listed(unsupported, case_id)
    departure = listed(departures, case_id)
    if unstable is not None:
        assert unstable[0] in result.case.clauses, f"{case_id} does not check {unstable[0]}"
        assert result.outcome in (Outcome.PASSED, Outcome.NON_STRICT, Outcome.FAILED), describe(result)
    elif reason is not None:
        assert result.outcome is Outcome.SKIPPED and str(reason) in result.detail, describe(result)
    elif departure is not None:
        clause, why = departure  # type: ignore[misc]
        assert result.outcome in (Outcome.FAILED, Outcome.NON_STRICT), (
            f"documented departure ({why}) no longer seen: {describe(result)}")
        assert clause in result.case.clauses, f"{case_id} does not check {clause}"
    else:
        assert result.outcome is Outcome.PASSED, describe(result)


def assert_tables_name_cases(*tables: Mapping[str, object]) -> None:
    ids = [case.id for case in CLIENT_CASES]
    for table in tables:
        for pattern in table:
            assert fnmatch.filter(ids, pattern), f"{pattern} matches no client case"
