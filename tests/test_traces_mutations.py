"""Both trace checkers against mutated copies of clean generated traces.

Clean traces come from ``traces generate`` (one without faults, one with crashes, restarts and injected faults);
each holds every invariant. Mutations:

- a cut: the trace ends early (``trace.end`` CUT) at any row. Every invariant must still hold: a rule that needs the
  end of the run (no_lost_message's part (b)) is skipped and says so, the others judge only what the prefix shows;
- a lost put: a message acknowledged SEND_OK loses its store.put rows (a broker that answered and lost it), in the
  whole trace or in a cut of it: no_lost_message part (a) names that send.result (OFF-17);
- a pull answer past the queue: a broker's FOUND pull.response says a next offset beyond the queue's max offset:
  pull_oracle names that row (PULL-3);
- a duplicated resolution: a broker's txn.end that committed or rolled back a half message appears twice, with no
  second END_TRANSACTION deciding it and no duplicating fault: transaction names the copy (TXN-11);
- a check past the maximum: a txn.check's check_times altered past max(check_max, 1): transaction names it (TXN-22);
- a retry moved early: a send.attempt k > 1 moved before the send.result of attempt k-1 (reordered): send_retry
  names it (SEND-21);
- a retry copy undelayed: a broker's send-back to %RETRY%<group> altered to delay level 0 below the maximum:
  retry_delay_dlq names it (RETRY-8).

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


def renumbered(rows: Sequence[Row]) -> list[Row]:
    """``rows`` in their list order with seq 1, 2, ... (rows are copied; a row's identity is its position)."""
    return [{**r, "seq": i} for i, r in enumerate(rows, start=1)]


def resolutions(rows: Sequence[Row]) -> list[Row]:
    """Broker-side txn.end rows that resolve a half message no producer decided twice, in a trace that does not
    duplicate requests (the cases TXN-11 allows a second resolution)."""
    if any(r["kind"] == "fault.inject" and r["action"] == "duplicate" for r in rows):
        return []
    deciding: dict[str, int] = {}
    for r in rows:
        if r["kind"] == "txn.end" and r.get("result") is None and r["state"] in ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE"):
            deciding[r["msg_id"]] = deciding.get(r["msg_id"], 0) + 1
    return [r for r in rows if r["kind"] == "txn.end" and r.get("result") in ("COMMITTED", "ROLLED_BACK")
            and deciding.get(r["msg_id"], 0) <= 1]


def duplicated(rows: Sequence[Row], row: Row) -> tuple[list[Row], int]:
    """``row`` twice in a row; the trace renumbered, and the copy's seq."""
    at = next(i for i, r in enumerate(rows) if r is row)
    out = renumbered([*rows[: at + 1], row, *rows[at + 1:]])
    return out, at + 2


def checks(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r["kind"] == "txn.check" and r["action"] == "check"]


def over_max(rows: Sequence[Row], check: Row) -> list[Row]:
    """``check`` says one more check than the broker's maximum allows (TXN-22)."""
    limit = max(15 if check.get("check_max") is None else check["check_max"], 1)
    return [{**r, "check_times": limit + 1} if r is check else r for r in rows]


def retries(rows: Sequence[Row]) -> list[Row]:
    """send.attempt rows of attempt k > 1 that follow a send.result of attempt k-1 (the result to move them before)."""
    return [r for r in rows if r["kind"] == "send.attempt" and r["attempt"] > 1
            and any(x["kind"] == "send.result" and (x["node"], x["msg_id"], x["attempt"]) ==
                    (r["node"], r["msg_id"], r["attempt"] - 1) and x["seq"] < r["seq"] for x in rows)]


def retried_early(rows: Sequence[Row], attempt: Row) -> tuple[list[Row], int]:
    """``attempt`` moved right before the send.result of the attempt it retries; the trace renumbered, and the moved
    row's seq."""
    result = max((x for x in rows if x["kind"] == "send.result" and (x["node"], x["msg_id"], x["attempt"]) ==
                  (attempt["node"], attempt["msg_id"], attempt["attempt"] - 1) and x["seq"] < attempt["seq"]),
                 key=lambda x: x["seq"])
    rest = [r for r in rows if r is not attempt]
    at = next(i for i, r in enumerate(rest) if r is result)
    return renumbered([*rest[:at], attempt, *rest[at:]]), at + 1


def retry_sendbacks(rows: Sequence[Row]) -> list[Row]:
    """Broker-side send-backs to the group's retry topic with a level, below the maximum (RETRY-8 wants a level)."""
    return [r for r in rows if r["kind"] == "sendback" and r["via"] == "broker" and r.get("broker") == r["node"]
            and r.get("target") == "%RETRY%" + r["group"] and (r.get("delay_level") or 0) >= 1
            and r["reconsume_times"] - 1 < (16 if r.get("max_reconsume_times") is None else r["max_reconsume_times"])]


def undelayed(rows: Sequence[Row], sendback: Row) -> list[Row]:
    return [{**r, "delay_level": 0} if r is sendback else r for r in rows]


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


def _traces_with(clean: dict[str, list[Row]], candidates: Callable[[Sequence[Row]], list[Row]]) -> list[str]:
    return sorted(name for name, rows in clean.items() if candidates(rows))


def _resolved_twice(rows: Sequence[Row], row: Row) -> tuple[list[Row], tuple[str, int]]:
    mutated, copy_seq = duplicated(rows, row)
    return mutated, ("txn.end", copy_seq)


def _retried_early(rows: Sequence[Row], row: Row) -> tuple[list[Row], tuple[str, int]]:
    mutated, moved = retried_early(rows, row)
    return mutated, ("send.attempt", moved)


#: Mutations of one row a rule forbids: the rows to pick from, the mutation (the trace and the (kind, seq) the
#: violation must name), the invariant that names it.
ROW_MUTATIONS: dict[str, tuple[Callable[[Sequence[Row]], list[Row]],
                               Callable[[Sequence[Row], Row], tuple[list[Row], tuple[str, int]]], str]] = {
    "duplicated resolution": (resolutions, _resolved_twice, "transaction"),
    "check past the maximum": (checks, lambda rows, r: (over_max(rows, r), ("txn.check", r["seq"])), "transaction"),
    "retry before its result": (retries, _retried_early, "send_retry"),
    "undelayed retry copy": (retry_sendbacks, lambda rows, r: (undelayed(rows, r), ("sendback", r["seq"])),
                             "retry_delay_dlq"),
}


@pytest.mark.parametrize("name", sorted(ROW_MUTATIONS))
@scaled_settings(20)
@given(data=st.data())
def test_a_forbidden_change_of_one_row_is_caught(clean: dict[str, list[Row]], name: str,
                                                 data: st.DataObject) -> None:
    candidates, mutate, invariant = ROW_MUTATIONS[name]
    rows = clean[data.draw(st.sampled_from(_traces_with(clean, candidates)), label="trace")]
    row = data.draw(st.sampled_from(candidates(rows)), label="row")
    mutated, where = mutate(rows, row)
    found = violated(check_python(mutated))
    assert where in found.get(invariant, []), found


def test_the_clean_traces_offer_every_mutation(clean: dict[str, list[Row]]) -> None:
    """Each mutation has rows to work on in some clean trace (else its test would have nothing to draw)."""
    for candidates in (acked, found_answers, resolutions, checks, retries, retry_sendbacks):
        assert _traces_with(clean, candidates), candidates.__name__


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
        "resolved_twice": lambda rows: duplicated(rows, rng.choice(resolutions(rows)))[0],
        "check_over_max": lambda rows: over_max(rows, rng.choice(checks(rows))),
        "retry_early": lambda rows: retried_early(rows, rng.choice(retries(rows)))[0],
        "undelayed": lambda rows: undelayed(rows, rng.choice(retry_sendbacks(rows))),
    }
    needs: dict[str, Callable[[Sequence[Row]], list[Row]]] = {
        "resolved_twice": resolutions, "check_over_max": checks, "retry_early": retries, "undelayed": retry_sendbacks}
    for base, rows in sorted(clean.items()):
        for kind, make in makers.items():
            if kind in needs and not needs[kind](rows):
                continue
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
    made = {str(trace_id).rsplit("-", 1)[0] for trace_id in seeded_mutants(clean)}
    assert {m for m in made if not m.endswith("-cut")} <= caught, (made, caught)
