"""``rocketspec spec check`` attributes CrossHair and explorer results to clauses, and fails what fails."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from rocketspec.contracts import run_crosshair
from rocketspec.spec.explorer import explore
from rocketspec.speccheck import CONFIRMED, COUNTEREXAMPLE, FAIL, PASS, UNCHECKED, build_report

TOY = '''
from __future__ import annotations
import attrs
from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model

CLAUSES = ClauseTable(area="toy", prefix="TOY", clauses=(
    Clause("TOY-1", "double is even", "test"),
    Clause("TOY-2", "the counter stays below 4", "test"),
    Clause("TOY-3", "nothing checks this", "test"),
))


@CLAUSES.oracle("TOY-1")
def double(x: int) -> int:
    """Twice x (TOY-1).

    pre: -1000 < x < 1000
    post: __return__ % 2 == 0
    """
    return x + x + BUG


@attrs.frozen
class S:
    n: int


def enabled(state: S, action: str) -> bool:
    return state.n < LIMIT


def step(state: S, action: str) -> S:
    return S(state.n + 1)


INVARIANTS = (Invariant("below_four", ("TOY-2",), lambda s: s.n < 4),)


def model() -> Model:
    return Model("toy", "limit", (S(0),), lambda s: ("tick",), enabled, step, INVARIANTS)
'''


def load_toy(tmp_path: Path, bug: int, limit: int) -> ModuleType:
    name = f"rocketspec_toy_{bug}_{limit}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(TOY) + f"\nBUG = {bug}\nLIMIT = {limit}\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("bug", "limit"), [(0, 3), (1, 3), (0, 5)])
def test_report_attributes_checks_to_clauses(tmp_path: Path, bug: int, limit: int) -> None:
    module = load_toy(tmp_path, bug, limit)
    run = run_crosshair(module.__name__, 5.0, extra_paths=[str(tmp_path)])
    assert not run.crashed, run.stderr
    report = build_report("toy", module, explore(module.model()), run, 0.0)
    by_id = {c.clause.id: c for c in report.clauses}

    oracle_verdict = by_id["TOY-1"].checks[0].verdict
    assert oracle_verdict == (CONFIRMED if bug == 0 else COUNTEREXAMPLE)
    assert by_id["TOY-1"].result == (PASS if bug == 0 else FAIL)

    assert by_id["TOY-2"].result == (PASS if limit <= 4 else FAIL)
    assert by_id["TOY-2"].states == limit + 1 if limit <= 4 else by_id["TOY-2"].states is not None

    # A clause nothing checks never passes.
    assert by_id["TOY-3"].result == UNCHECKED
    assert not report.ok


def test_progress_tells_the_area_and_how_far_the_explorer_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """``spec check`` reports progress while it runs: the area being explored with its states and transitions so
    far (every ``PROGRESS_EVERY_STATES`` new states and at each area's start and end), then that it is done."""
    from rocketspec.spec import explorer
    from rocketspec.speccheck import check_areas

    monkeypatch.setattr(explorer, "PROGRESS_EVERY_STATES", 50)
    heard: list[str] = []
    reports = check_areas(["pull_correction", "send_retry"], crosshair=False, max_states=400, progress=heard.append)
    assert [r.area for r in reports] == ["pull_correction", "send_retry"]
    assert heard[0] == "explorer: pull_correction 0 states, 0 transitions"
    assert heard[-1] == "explorer: done"
    walked = [line for line in heard if line.startswith("explorer: send_retry ") and " 0 states" not in line]
    assert len(walked) >= 2
    counts = [int(line.split()[2].replace(",", "")) for line in walked]
    assert counts == sorted(counts) and counts[-1] == reports[1].exploration.states


def test_explore_reports_every_so_many_states() -> None:
    from rocketspec.spec import send_retry

    heard: list[tuple[int, int]] = []
    result = explore(send_retry.model(), max_states=25_000, progress=lambda s, t: heard.append((s, t)))
    assert [s for s, _ in heard] == [10_000, 20_000]
    assert all(t > 0 for _, t in heard) and result.states == 25_000
