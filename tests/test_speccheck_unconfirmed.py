"""A CrossHair condition that found no counterexample but was not confirmed over all paths is shown as such.

CrossHair is replaced by a stand-in that reports, for every oracle of the area, its first condition line: confirmed
over all paths for the first oracle, ``Not confirmed.`` (out of time or iterations) for the others.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from rocketspec import speccheck
from rocketspec.checkcache import CACHE_ENV
from rocketspec.cli import main
from rocketspec.contracts import ConditionResult, CrosshairRun
from rocketspec.spec import area_module

AREA = "remoting"


def _oracle_results() -> tuple[ConditionResult, ...]:
    results = []
    for n, oracle in enumerate(speccheck.clause_table(area_module(AREA)).oracles):
        function = inspect.unwrap(oracle.function)
        path = inspect.getsourcefile(function) or ""
        first = inspect.getsourcelines(function)[1]
        message = "Confirmed over all paths." if n == 0 else "Not confirmed."
        results.append(ConditionResult(path, first + 1, "info", message))
    return tuple(results)


@pytest.fixture(autouse=True)
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))

    def fake(targets: Sequence[str], per_condition_timeout: float, **_: object) -> CrosshairRun:
        mine = [r for r in _oracle_results() if any(r.path.endswith(t.rsplit(".", 1)[1] + ".py") for t in targets)]
        return CrosshairRun(" ".join(targets), 0, tuple(mine), "", per_condition_timeout)

    monkeypatch.setattr(speccheck, "run_crosshair", fake)


def test_each_clause_says_how_many_of_its_conditions_are_unconfirmed(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # one line per row (the width is tested on its own)
    report = tmp_path / "report.json"
    assert main(["spec", "check", AREA, "--no-explore", "--report", str(report)]) == 0
    out = capsys.readouterr().out
    unconfirmed = len(_oracle_results()) - 1
    table = speccheck.clause_table(area_module(AREA))
    first = table.oracles[0]
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(f"{table.prefix}-")}
    for clause in table.clauses:
        oracles = [o for o in table.oracles if clause.id in o.clauses]
        if not oracles:
            continue
        expected = sum(o is not first for o in oracles)
        cells = [cell.strip() for cell in rows[clause.id].split("  ") if cell.strip()]
        assert (f"pass (unconfirmed {expected})" if expected else "pass") in cells, rows[clause.id]
        if expected:
            assert "unconfirmed)" in rows[clause.id]  # the check says how many of its conditions, of how many
    head = out.splitlines()[0]
    assert f"crosshair 1/{unconfirmed + 1} conditions confirmed over all paths, {unconfirmed} unconfirmed" in head
    assert out.rstrip().splitlines()[-1].endswith(f"all pass, {unconfirmed} CrossHair conditions unconfirmed")

    document = json.loads(report.read_text())
    assert document["unconfirmed"] == unconfirmed and document["areas"][0]["crosshair"]["unconfirmed"] == unconfirmed
    clauses = {c["id"]: c for c in document["areas"][0]["clauses"]}
    for clause in table.clauses:
        oracles = [o for o in table.oracles if clause.id in o.clauses]
        assert clauses[clause.id]["unconfirmed"] == sum(o is not first for o in oracles), clause.id
        for check in clauses[clause.id]["checks"]:
            verdicts = {c["verdict"] for c in check.get("conditions", [])}
            assert verdicts == ({"confirmed"} if check["check"] == f"crosshair:{first.name}" else {"unconfirmed"})


def test_strict_fails_on_an_unconfirmed_condition(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check", AREA, "--no-explore", "--strict"]) == 1
    err = capsys.readouterr().err
    assert "--strict" in err and "unconfirmed" in err and "Traceback" not in err


def test_strict_passes_when_everything_is_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    def confirmed(targets: Sequence[str], per_condition_timeout: float, **_: object) -> CrosshairRun:
        mine = [ConditionResult(r.path, r.line, r.level, "Confirmed over all paths.") for r in _oracle_results()
                if any(r.path.endswith(t.rsplit(".", 1)[1] + ".py") for t in targets)]
        return CrosshairRun(" ".join(targets), 0, tuple(mine), "", per_condition_timeout)

    monkeypatch.setattr(speccheck, "run_crosshair", confirmed)
    assert main(["spec", "check", AREA, "--no-explore", "--strict", "--no-cache"]) == 0
