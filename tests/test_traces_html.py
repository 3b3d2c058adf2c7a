"""``traces check --html DIR``: a page per check with, for each violated or excused invariant, its sample rows and a
plot of the sample's queue around the row; and the excused rows both checkers now report."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import attrs
import browser
import pytest
import trace_fixtures as fx

from rocketspec.cli import main
from rocketspec.traces.generate import generate
from rocketspec.traces.html import (
    LIFE_PAD_MIN,
    WINDOW_SEQ,
    Focus,
    Life,
    Plot,
    focuses,
    gather,
    html_page,
    is_lost_message,
    write_html,
)
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


# ------------------------------------------------------------------------------------------ a lost message's life

def _section_of(page: str, invariant: str) -> str:
    section = page[page.index(f'<section id="{invariant}"'):]
    return section[:section.index("</section>")]


@pytest.mark.parametrize(("name", "msg_id", "stopped"), [
    ("no_lost_message/consumed_never", "m2", r"pulled at seq (\d+), never delivered"),
    ("no_lost_message/ack_not_stored", "m2", r"sent at seq (\d+), never stored"),
])
def test_a_lost_message_is_plotted_as_its_life(tmp_path: Path, name: str, msg_id: str, stopped: str) -> None:
    rows = fx.VIOLATIONS[name]()
    source = fx.write_jsonl(rows, tmp_path / "t.jsonl")
    report = check_python(source)
    assert report.result("no_lost_message").samples[0]["msg_id"] == msg_id
    section = _section_of(write_html(report, source, tmp_path / "html").read_text(encoding="utf-8"),
                          "no_lost_message")
    assert f'aria-label="the life of message {msg_id}"' in section
    found = re.search(f'<span class="stopped">{stopped}', section)
    assert found is not None, section
    assert "\u2715 never " in section  # the step it never reached is marked on the plot
    # The range is the message's own rows (and the sample row) with a margin, not a fixed window around the sample.
    svg = section[section.index("<svg"):section.index("</svg>")]
    x0, x1 = (int(s) for s in re.findall(r">seq (\d+)</text>", svg))
    own = [r["seq"] for r in rows if r.get("msg_id") == msg_id]
    assert x0 == max(0, min(own) - LIFE_PAD_MIN) and max(own) <= int(found.group(1)) + LIFE_PAD_MIN <= x1
    assert x1 - x0 < WINDOW_SEQ


def test_a_life_follows_the_copies_pulls_commits_and_dead_letters() -> None:
    focus = Focus("no_lost_message", {"trace_id": "t", "seq": 100, "msg_id": "M", "group": "G", "topic": "T",
                                       "broker": "b", "queue_id": 1, "offset": 5}, excused=False)
    life = Life(focus)
    queue = {"topic": "T", "broker": "b", "queue_id": 1}
    for row in [
        {"seq": 90, "kind": "send.attempt", "msg_id": "M", **queue},
        {"seq": 91, "kind": "pull.response", "group": "G", "status": "FOUND", "offset": 5, "next_offset": 6, **queue},
        {"seq": 100, "kind": "store.put", "msg_id": "M", "offset": 5, **queue},
        {"seq": 101, "kind": "send.result", "msg_id": "M", "status": "SEND_OK", **queue},
        {"seq": 110, "kind": "pull.response", "group": "other", "status": "FOUND", "offset": 0, "next_offset": 9,
         **queue},
        {"seq": 111, "kind": "pull.response", "group": "G", "status": "FOUND", "offset": 6, "next_offset": 9, **queue},
        {"seq": 112, "kind": "pull.response", "group": "G", "status": "FOUND", "offset": 4, "next_offset": 8, **queue},
        {"seq": 120, "kind": "consume.deliver", "msg_id": "M", "group": "other", **queue},
        {"seq": 130, "kind": "offset.commit", "group": "G", "offset": 5, **queue},
        {"seq": 131, "kind": "offset.commit", "group": "G", "offset": 8, **queue},
        {"seq": 132, "kind": "offset.commit", "group": "G", "offset": 9, **queue},
        {"seq": 140, "kind": "rebalance.assign", "group": "G"},
        {"seq": 141, "kind": "rebalance.assign", "group": "other"},
        {"seq": 150, "kind": "trace.end", "status": "SETTLED"},
    ]:
        life.take(row)
    assert {k: [s for s, _what in v] for k, v in life.lanes.items() if v} == {
        "sent": [90, 101], "stored": [100], "pulled": [112], "committed past": [131]}
    assert life.stopped() == "pulled at seq 112, never delivered"
    assert life.marks == [(140, "rebalance.assign")] and life.end == (150, "SETTLED")
    assert life.span() == (80, 141)  # 90..131 and a margin of LIFE_PAD_MIN each side
    life.take({"seq": 160, "kind": "store.put", "msg_id": "M", "offset": 0, "topic": "%DLQ%G", "broker": "b",
               "queue_id": 0})
    assert life.stopped() == "dead-lettered at seq 160" and life.svg().startswith("<svg")
    assert not is_lost_message(Focus("no_lost_message", {"trace_id": "t", "seq": 1}, excused=False))


# ------------------------------------------------------------------------------------------- the page in a browser

def _lose_one_message(trace: Path, out: Path) -> str:
    """A copy of a generated JSON Lines trace in which one consumed message is never delivered: its msg_id."""
    out.mkdir()
    for manifest in trace.glob("_trace*.json"):
        shutil.copy(manifest, out / manifest.name)
    (data,) = trace.glob("*.jsonl")
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    delivered = [r["msg_id"] for r in rows if r["kind"] == "consume.deliver" and r["group"].startswith("CG")]
    lost = delivered[len(delivered) // 2]
    kept = [r for r in rows if not (r["kind"] in ("consume.deliver", "consume.result") and r.get("msg_id") == lost)]
    (out / data.name).write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return str(lost)


def test_the_page_fits_a_1280_px_window(disturbed: Path, tmp_path: Path) -> None:
    """Excused rows, a lost message's life and a long trace location, laid out by Chromium at 1280 px: nothing
    widens the page, tables scroll in their box, and only the cells meant to wrap (reasons, long values) wrap."""
    browser.chromium()
    lost = _lose_one_message(disturbed, tmp_path / "lost")
    report = check_python(tmp_path / "lost")
    assert report.result("no_lost_message").violations == 1 and report.result("duplicates_allowed").excused
    # Where a trace on a cluster is: one long word, as an object store key is.
    located = attrs.evolve(report, source="s3a://traces/" + "_".join([lost.lower()] * 5))
    page = tmp_path / "html" / "index.html"
    page.parent.mkdir()
    page.write_text(html_page(located, gather(tmp_path / "lost", focuses(report))), encoding="utf-8")
    assert f'aria-label="the life of message {lost}"' in page.read_text(encoding="utf-8")
    seen = browser.layout(page, tmp_path / "browser", width=1280)
    assert seen["scroll_width"] <= 1280 and not seen["wide"], seen
    assert not seen["wrapped"], seen


def test_a_life_recorded_from_its_store_on_says_where_it_stopped() -> None:
    """A served trace without a send mode has no send rows: the life starts where its record does."""
    life = Life(Focus("no_lost_message", {"trace_id": "t", "seq": 5, "msg_id": "M", "group": "G"}, excused=False))
    life.take({"seq": 5, "kind": "store.put", "msg_id": "M", "offset": 0, "topic": "T", "broker": "b", "queue_id": 0})
    assert life.stopped() == "stored at seq 5, never pulled" and "\u2715 never pulled" in life.svg()
