"""``traces check --html DIR``: a page per check with, for each violated or excused invariant, its sample rows and a
plot of the sample's queue around the row; and the excused rows both checkers now report."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
import trace_fixtures as fx

from rocketspec.cli import main
from rocketspec.traces.generate import generate
from rocketspec.traces.html import WINDOW_SEQ, Focus, Plot, write_html
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import excused_reason


@pytest.fixture(scope="module")
def disturbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated trace whose rebalances make duplicates the rules allow (seeded: the same trace every run)."""
    out = tmp_path_factory.mktemp("disturbed")
    generate(4000, out, seed=3, faults="heavy", fmt="jsonl")
    return out


def test_excused_rows_are_reported_with_their_cause(disturbed: Path) -> None:
    result = check_python(disturbed).result("duplicates_allowed")
    assert result.violations == 0 and sum(result.counts.values()) > 0
    assert result.excused, "the allowed duplicates are named"
    assert all(s["reason"] == excused_reason(s["cause"]) and s["cause"] in result.counts for s in result.excused)
    assert [s["seq"] for s in result.excused] == sorted(s["seq"] for s in result.excused)


def test_the_page_plots_each_excused_row(disturbed: Path, tmp_path: Path) -> None:
    report = check_python(disturbed)
    page = write_html(report, disturbed, tmp_path / "html").read_text(encoding="utf-8")
    assert '<span id="verdict">all invariants hold</span>' in page
    section = page[page.index('<section id="duplicates_allowed"'):]
    section = section[:section.index("</section>")]
    assert "allowed: " in section and section.count("<svg") >= 1
    # Each plot marks its row and draws the group's deliveries of that queue.
    assert "the sample row, seq" in section and re.search(r"delivered: offset \d+ at seq \d+", section)
    assert '<section id="pull_oracle"' not in page  # nothing violated or excused there: no section


def test_a_violation_gets_its_rows_and_a_red_line(tmp_path: Path) -> None:
    rows = fx.VIOLATIONS["offset_no_regression/back_without_cause"]()
    source = fx.write_jsonl(rows, tmp_path / "t.jsonl")
    report = check_python(source)
    result = report.result("offset_no_regression")
    assert result.violations == 1
    page = write_html(report, source, tmp_path / "html").read_text(encoding="utf-8")
    assert '<span id="verdict">VIOLATED</span>' in page
    section = page[page.index('<section id="offset_no_regression"'):]
    assert 'data-verdict="VIOLATED"' in section and f"the sample row, seq {result.samples[0]['seq']}" in section
    assert "committed: offset" in section


def test_a_plot_takes_only_its_queue_its_group_and_its_window() -> None:
    focus = Focus("duplicates_allowed", {"trace_id": "t", "seq": 1000, "group": "G", "topic": "T", "broker": "b",
                                          "queue_id": 1}, excused=True)
    plot = Plot(focus)
    base = {"topic": "T", "broker": "b", "queue_id": 1}
    plot.take({**base, "seq": 990, "kind": "store.put", "offset": 5, "group": None})
    plot.take({**base, "seq": 995, "kind": "consume.deliver", "offset": 5, "group": "G"})
    plot.take({**base, "seq": 996, "kind": "consume.deliver", "offset": 5, "group": "other"})
    plot.take({**base, "seq": 997, "kind": "consume.result", "offset": 5, "group": "G", "status": "SUCCESS"})
    plot.take({**base, "seq": 998, "kind": "consume.result", "offset": 6, "group": "G", "status": "RECONSUME_LATER"})
    plot.take({**base, "seq": 999, "kind": "offset.commit", "offset": 6, "group": "G"})
    plot.take({**base, "seq": 1000 + WINDOW_SEQ + 1, "kind": "offset.commit", "offset": 7, "group": "G"})
    plot.take({"topic": "T", "broker": "b", "queue_id": 2, "seq": 1001, "kind": "store.put", "offset": 9})
    plot.take({"seq": 1002, "kind": "rebalance.assign", "group": "G"})
    plot.take({"seq": 1003, "kind": "rebalance.assign", "group": "other"})
    plot.take({"seq": 1004, "kind": "broker.restart"})
    assert dict(plot.series) == {"stored": [(990, 5)], "delivered": [(995, 5)], "consumed": [(997, 5)],
                                 "committed": [(999, 6)]}
    assert plot.marks == [(1002, "rebalance.assign"), (1004, "broker.restart")]
    assert plot.svg().startswith("<svg")


def test_the_command_writes_the_page_and_refuses_a_file(disturbed: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["traces", "check", str(disturbed), "--engine", "python", "--html", str(tmp_path / "page")])
    assert code == 0 and (tmp_path / "page" / "index.html").is_file() and "HTML report" in err.getvalue()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["traces", "check", str(disturbed), "--engine", "python", "--html", str(blocker)])
    assert code == 2 and err.getvalue().count("\n") == 1 and "is a file, not a directory" in err.getvalue()
