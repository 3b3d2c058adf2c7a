"""Both trace checkers against mutated copies of clean generated traces.

Clean traces come from ``traces generate`` (one without faults, one with crashes, restarts and injected faults);
each holds every invariant. Mutations:

- a cut: the trace ends early (``trace.end`` CUT) at any row. Every invariant must still hold: a rule that needs the
  end of the run (no_lost_message's part (b)) is skipped and says so, the others judge only what the prefix shows;
- a lost put: a message acknowledged SEND_OK loses its store.put rows (a broker that answered and lost it), in the
  whole trace or in a cut of it: no_lost_message part (a) names that send.result (OFF-17);
- a pull answer past the queue: a broker's FOUND pull.response says a next offset beyond the queue's max offset:
  pull_oracle names that row (PULL-3).

Hypothesis picks the trace, the cut and the row; the Python checker judges each example. Spark (slow) judges a
seeded batch of the same mutations as one directory and must give the Python checker's report.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from trace_fixtures import write_trace_dir
from wire_client import scaled_settings

from rocketspec.traces import reading
from rocketspec.traces.generate import generate
from rocketspec.traces.invariants import PART_A_SKIPPED, SKIPPED, is_user_topic
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import Report
from rocketspec.traces.schema import CUT, SETTLED

Row = dict[str, Any]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Row]]:
    """Two settled generated traces, rows in seq order: without faults, and with the heavy fault profile."""
    traces: dict[str, list[Row]] = {}
    for faults, seed in (("none", 5), ("heavy", 9)):
        out = tmp_path_factory.mktemp(f"clean-{faults}")
        generate(4000, out / "t", seed=seed, faults=faults, fmt="jsonl")
        ((_, rows),) = list(reading.read_traces(out / "t"))
        rows = sorted((dict(r) for r in rows), key=lambda r: r["seq"])
        assert rows[-1]["kind"] == "trace.end" and rows[-1]["status"] == SETTLED
        traces[faults] = rows
    return traces


def cut(rows: Sequence[Row], keep: int) -> list[Row]:
    """The first ``keep`` rows, then a trace.end CUT: the run stopped there."""
    prefix = [dict(r) for r in rows[:keep]]
    end = {**rows[-1], "seq": prefix[-1]["seq"] + 1, "status": CUT}
    return [*prefix, end]


def acked(rows: Sequence[Row]) -> list[Row]:
    """send.result rows SEND_OK in a user topic whose message is not transactional (a half message is stored as
    such, not in its topic, until committed)."""
    halves = {r["msg_id"] for r in rows if r["kind"] == "txn.half"}
    return [r for r in rows if r["kind"] == "send.result" and r["status"] == "SEND_OK" and is_user_topic(r["topic"])
            and r["msg_id"] not in halves]


def lose_put(rows: Sequence[Row], ack: Row) -> list[Row]:
    """Every store.put of the acknowledged message taken out: in its topic and, delayed, in the schedule topic."""
    return [r for r in rows if not (r["kind"] == "store.put" and r["msg_id"] == ack["msg_id"])]


def found_answers(rows: Sequence[Row]) -> list[Row]:
    """Broker-side FOUND pull.response rows (the node is the broker)."""
    return [r for r in rows if r["kind"] == "pull.response" and r["status"] == "FOUND" and r["node"] == r["broker"]]


def past_the_queue(rows: Sequence[Row], answer: Row) -> list[Row]:
    """``answer`` says its next offset is one past the queue's max offset: no message lies there (PULL-3)."""
    return [{**r, "next_offset": r["max_offset"] + 1} if r is answer else r for r in rows]


def violated(report: Report) -> dict[str, list[tuple[str, int]]]:
    return {r.name: [(s.get("kind"), s["seq"]) for s in r.samples] for r in report.results if r.violations}


@scaled_settings(25)
@given(st.data())
def test_every_invariant_holds_on_any_cut_of_a_clean_trace(clean: dict[str, list[Row]], data: st.DataObject) -> None:
    rows = clean[data.draw(st.sampled_from(sorted(clean)), label="trace")]
    keep = data.draw(st.integers(1, len(rows) - 1), label="rows kept")
    report = check_python(cut(rows, keep))
    assert violated(report) == {}
    assert report.result("no_lost_message").counts.get(SKIPPED) == 1


@scaled_settings(25)
@given(st.data())
def test_a_lost_acknowledged_put_is_caught_in_a_whole_or_cut_trace(clean: dict[str, list[Row]],
                                                                   data: st.DataObject) -> None:
    rows = clean[data.draw(st.sampled_from(sorted(clean)), label="trace")]
    ack = data.draw(st.sampled_from(acked(rows)), label="acknowledged send")
    whole = data.draw(st.booleans(), label="whole trace")
    position = next(i for i, r in enumerate(rows) if r is ack)
    mutated = lose_put(rows if whole else cut(rows, data.draw(st.integers(position + 1, len(rows) - 1))), ack)
    report = check_python(mutated)
    if not any(r["kind"] == "store.put" for r in mutated):
        # A cut so early that the lost put was the only one: the trace shows no broker side to judge by.
        assert report.result("no_lost_message").counts.get(PART_A_SKIPPED) == 1
        return
    found = violated(report)
    assert ("send.result", ack["seq"]) in found.get("no_lost_message", []), found


@scaled_settings(25)
@given(st.data())
def test_a_pull_answer_past_the_queue_is_caught(clean: dict[str, list[Row]], data: st.DataObject) -> None:
    rows = clean[data.draw(st.sampled_from(sorted(clean)), label="trace")]
    answer = data.draw(st.sampled_from(found_answers(rows)), label="FOUND answer")
    found = violated(check_python(past_the_queue(rows, answer)))
    assert ("pull.response", answer["seq"]) in found.get("pull_oracle", []), found


def seeded_mutants(clean: dict[str, list[Row]], per_kind: int = 3, seed: int = 17) -> dict[str, list[Row]]:
    """A fixed batch of the mutations above, each its own trace (``<base>-<mutation>-<n>``)."""
    rng = random.Random(seed)
    batch: dict[str, list[Row]] = {}
    makers: dict[str, Callable[[list[Row]], list[Row]]] = {
        "cut": lambda rows: cut(rows, rng.randrange(1, len(rows) - 1)),
        "lost": lambda rows: lose_put(rows, rng.choice(acked(rows))),
        "lost_cut": lambda rows: lose_put(cut(rows, len(rows) - 1 - rng.randrange(len(rows) // 4)),
                                          rng.choice(acked(rows[: 3 * len(rows) // 4]))),
        "past": lambda rows: past_the_queue(rows, rng.choice(found_answers(rows))),
    }
    for base, rows in sorted(clean.items()):
        for kind, make in makers.items():
            for n in range(per_kind):
                trace_id = f"{base}-{kind}-{n}"
                batch[trace_id] = [{**r, "trace_id": trace_id} for r in make(rows)]
    return batch


@pytest.mark.slow  # Spark
def test_spark_gives_the_python_verdict_on_the_mutants(clean: dict[str, list[Row]], tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java")
    from rocketspec.traces.sparkcheck import check_spark

    source = write_trace_dir(seeded_mutants(clean), tmp_path / "mutants", "parquet")

    def summary(report: Report) -> list[tuple[str, int, int, int, dict[str, int], list[tuple[str, int]]]]:
        return [(r.name, r.events_scanned, r.judged, r.violations, dict(r.counts),
                 sorted((str(s["trace_id"]), int(s["seq"])) for s in r.samples)) for r in report.results]

    python, spark = check_python(source), check_spark(source, master="local[2]")
    assert summary(spark) == summary(python)
    caught = {str(s["trace_id"]).rsplit("-", 1)[0] for r in python.results for s in r.samples}
    assert {f"{base}-{kind}" for base in clean for kind in ("lost", "lost_cut", "past")} <= caught, caught
