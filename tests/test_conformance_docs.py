"""docs/conformance.md lists every conformance case as the command line does, and cites only clauses that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_conformance_client_cpp as cpp
import test_conformance_client_js as ons
from client_tables import listed

from rocketspec.cli.conformance_run import case_table_markdown
from rocketspec.conformance.broker import BROKER_CASES
from rocketspec.conformance.client import CLIENT_CASES
from rocketspec.conformance.coverage import BROKER_SIDE, CLIENT_SIDE, UNREACHED_REASONS, coverage, known_clauses

DOC = Path(__file__).resolve().parent.parent / "docs" / "conformance.md"


def section(marker: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", text, re.S)
    assert match is not None, f"docs/conformance.md has no {marker} section"
    return match.group(1).strip()


@pytest.mark.parametrize(("marker", "cases"), [("broker-cases", BROKER_CASES), ("client-cases", CLIENT_CASES)])
def test_the_case_tables_are_the_generated_ones(marker: str, cases: list) -> None:
    assert section(marker) == case_table_markdown(cases), (
        f"regenerate with: rocketspec conformance {marker.split('-')[0]} --list --markdown")


def test_every_cited_clause_exists_and_ids_are_unique() -> None:
    known = known_clauses()
    ids = [c.id for c in (*BROKER_CASES, *CLIENT_CASES)]
    assert len(ids) == len(set(ids))
    for case in (*BROKER_CASES, *CLIENT_CASES):
        assert set(case.clauses) <= known, f"{case.id} cites unknown clauses {set(case.clauses) - known}"
    assert set(BROKER_SIDE) <= known and set(CLIENT_SIDE) <= known


def test_the_suites_are_large_enough_and_every_unreached_clause_has_a_reason() -> None:
    assert len(BROKER_CASES) >= 80
    for side, cases in (("broker", BROKER_CASES), ("client", CLIENT_CASES)):
        unreached = coverage(side, cases).uncovered
        missing = [clause for clause, _ in unreached if clause not in UNREACHED_REASONS]
        assert not missing, f"{side}-side clauses with no case and no reason: {missing}"
    unreached = {c for side, cases in (("broker", BROKER_CASES), ("client", CLIENT_CASES))
                 for c, _ in coverage(side, cases).uncovered}
    stale = [c for c in UNREACHED_REASONS if c not in unreached]
    assert not stale, f"reasons kept for clauses a case now reaches: {stale}"


def client_table() -> dict[str, tuple[str, str, str]]:
    text = DOC.read_text(encoding="utf-8").split("### Case × client", 1)[1]
    rows = re.findall(r"^\| (client/\S+) \| (.*?) \| (.*?) \| (.*?) \|$", text, re.M)
    return {case: (java, cpp, ons) for case, java, cpp, ons in rows}


def test_the_case_by_client_table_matches_the_client_tests() -> None:
    """Each real client's column says what its test module expects: a skip where the driver declares the feature
    unsupported, a departure (with its clause) where the case documents one, a pass everywhere else."""
    table = client_table()
    assert list(table) == [c.id for c in CLIENT_CASES]
    for case_id, (java, cpp_cell, ons_cell) in table.items():
        assert java == "pass", case_id
        for module, cell in ((cpp, cpp_cell), (ons, ons_cell)):
            intermittent = getattr(module, "INTERMITTENT", {}).get(case_id)
            if intermittent is not None:
                assert cell == f"pass (intermittent: {intermittent[0]})", (case_id, module.__name__, cell)
                continue
            departure = listed(module.DEPARTURES, case_id)
            unsupported = listed(module.UNSUPPORTED, case_id)
            if unsupported is not None:
                assert cell == f"skip: {unsupported}", (case_id, module.__name__, cell)
            elif departure is not None:
                assert cell == f"departure ({departure[0]})", (case_id, module.__name__, cell)
            else:
                assert cell == "pass", (case_id, module.__name__, cell)
