"""The PySpark checker (traces.sparkcheck, issue 5): rules on small traces, readers, and bad input.

One Spark session serves the module (the checker keeps one per process); the traces are the hand-made fixtures of
``tests/trace_fixtures.py`` written as JSON Lines or Parquet under ``tmp_path``. ``test_traces_invariants`` holds
the checker to every fixture and to the Python engine; this module covers what is Spark's own: the readers and
their errors, the Spark expressions standing for the rules' Python helpers, and one run over a healthy trace plus
one violating variant per invariant.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import trace_fixtures as fx

from rocketspec.traces import invariants as inv
from rocketspec.traces import schema

pytest.importorskip("pyspark")
if shutil.which("java") is None:  # pragma: no cover - the machine has Java
    pytest.skip("Spark needs Java", allow_module_level=True)

from rocketspec.traces import sparkcheck as sc

pytestmark = pytest.mark.slow  # Spark: a JVM per session

#: One violating variant per invariant (the first listed for it).
FIRST_VIOLATIONS: dict[str, str] = {}
for _name in fx.VIOLATIONS:
    FIRST_VIOLATIONS.setdefault(_name.split("/")[0], _name)


@pytest.fixture(scope="module")
def spark() -> Any:
    return sc.spark_session("local[2]", small=True)


@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The healthy run and one violating variant per invariant, as JSON Lines in one directory."""
    traces = {"healthy": fx.healthy()}
    traces.update({fx.violation_trace_id(n): fx.VIOLATIONS[n]() for n in FIRST_VIOLATIONS.values()})
    directory = fx.write_trace_dir(traces, tmp_path_factory.mktemp("spark") / "trace", "jsonl")
    return sc.check_spark(directory, master="local[2]")


def test_every_invariant_in_order_with_events_scanned(report: Any) -> None:
    assert report.engine == "spark"
    assert [r.name for r in report.results] == [i.name for i in inv.INVARIANTS]
    assert report.traces == 1 + len(FIRST_VIOLATIONS)
    assert all(r.events_scanned > 0 for r in report.results)


@pytest.mark.parametrize("invariant", [i.name for i in inv.INVARIANTS])
def test_each_variant_breaks_only_its_invariant(report: Any, invariant: str) -> None:
    """The healthy run passes everything; a variant shows up, once, only under the invariant it breaks."""
    result = report.result(invariant)
    name = FIRST_VIOLATIONS[invariant]
    assert result.violations == 1, result.samples
    (sample,) = result.samples
    assert sample["trace_id"] == fx.violation_trace_id(name)
    assert sample["seq"] in fx.violating_seqs(name, fx.VIOLATIONS[name]())
    assert sample["reason"]


def test_counts_of_the_healthy_run_and_the_variants(report: Any) -> None:
    # The healthy run's duplicate after a consumer crash appears in every variant built on it.
    assert report.result("duplicates_allowed").counts.get("client", 0) >= 1
    assert inv.SKIPPED not in report.result("no_lost_message").counts


def test_spark_expressions_match_the_python_helpers(spark: Any) -> None:
    from pyspark.sql import functions as F

    topics = ["TopicTest", "%RETRY%G", "%DLQ%G", "RMQ_SYS_TRANS_HALF_TOPIC", "SCHEDULE_TOPIC_XXXX", "TBW102",
              "rmq_sys_x", "OFFSET_MOVED_EVENT", "a%RETRY%"]
    got = spark.createDataFrame([(t,) for t in topics], "topic string").select(
        "topic", sc.user_topic(F.col("topic")).alias("user")).collect()
    assert {r["topic"]: r["user"] for r in got} == {t: inv.is_user_topic(t) for t in topics}
    cases = [(None, "a"), ("*", None), (" * ", "a"), ("", "a"), ("a || b", "b"), ("a||b", "c"), ("a", None),
             ("a ||  ", "a"), ("tagA", "tagA")]
    got = spark.createDataFrame(cases, "expression string, tags string").select(
        sc.tag_matches(F.col("expression"), F.col("tags")).alias("m")).collect()
    assert [r["m"] for r in got] == [inv.tag_matches(e, t) for e, t in cases]


def test_the_delay_column_is_delay_millis_on_every_level_and_table(spark: Any) -> None:
    """RETRY-1/2: the column expression retry_delay_dlq uses for a level's delay equals the oracle for every level a
    row can carry (clamped to the table as the checker does) and tables of every length 1..18."""
    from pyspark.sql import functions as F

    from rocketspec.spec.consume_retry import delay_millis
    from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS

    tables = [DELAY_LEVEL_MILLIS[:n] for n in range(1, 19)] + [(7,), (5, 3), tuple(range(100, 1900, 100))]
    cases = [(level, list(table)) for table in tables for level in range(1, 37)]
    got = (spark.createDataFrame(cases, "level int, delay_table array<bigint>")
           .withColumn("clamped", F.least("level", F.size("delay_table")))
           .select("level", "delay_table", sc.delay_millis_column("clamped", "delay_table").alias("d")).collect())
    assert [r["d"] for r in got] == [delay_millis(min(level, len(t)), tuple(t)) for level, t in cases]


def test_decision_tables_give_the_oracle_per_distinct_input(spark: Any) -> None:
    """A decision table evaluates the oracle once per distinct input tuple (nulls included) and every row gets its
    tuple's answer."""
    from rocketspec.spec.send_retry import attempt_within_budget

    rows = [("SYNC", 2, 2, 0, 3000), ("ASYNC", 1, 4, 3001, 3000), ("ONEWAY", 0, 0, -1, -5), ("BOGUS", 2, 2, 5, 5),
            (None, 3, 1, 7, 6), ("SYNC", 2, 2, 0, 3000)]
    df = spark.createDataFrame(rows, "mode string, rt int, rta int, elapsed bigint, budget bigint")
    calls: list[tuple[Any, ...]] = []

    def limit(*args: Any) -> int | None:
        calls.append(args)
        return sc.attempt_limit_or_none(*args)

    checker = sc._Checker(spark, df, {}, 1)
    out = checker.decided(checker.decided(df, ["mode", "rt", "rta"], "most", "int", limit),
                          ["elapsed", "budget"], "within", "boolean", attempt_within_budget).collect()
    assert len(calls) == len(set(calls)) == 5
    assert sorted((r["mode"] or "", r["most"] or 0, r["within"]) for r in out) == sorted(
        (m or "", sc.attempt_limit_or_none(m, rt, rta) or 0, attempt_within_budget(e, b)) for m, rt, rta, e, b in rows)
    assert sc.send_back_target_or_none(0, 16) == "RETRY" and sc.send_back_target_or_none(16, 16) == "DLQ"


def test_a_single_file_and_plain_parquet_with_a_trace_id_column(tmp_path: Path, spark: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = fx.VIOLATIONS[FIRST_VIOLATIONS["pull_oracle"]]()
    single = sc.check_spark(fx.write_jsonl(rows, tmp_path / "one.jsonl"), only=["pull_oracle"])
    assert [r.name for r in single.results] == ["pull_oracle"] and single.result("pull_oracle").violations == 1
    table = pa.Table.from_pylist([{k: v for k, v in r.items()} for r in rows], schema=fx.arrow_schema())
    pq.write_table(table, tmp_path / "plain.parquet")
    plain = sc.check_spark(tmp_path / "plain.parquet", only=["pull_oracle"])
    assert plain.events == len(rows) and plain.result("pull_oracle").violations == 1


def test_one_partition_of_a_trace_directory_is_checked_as_that_trace(tmp_path: Path, spark: Any) -> None:
    """``DIR/trace_id=<id>`` named alone: Spark reads it with DIR as its base path, so the rows keep their trace id."""
    rows = fx.VIOLATIONS[FIRST_VIOLATIONS["pull_oracle"]]()
    trace_id = fx.violation_trace_id(FIRST_VIOLATIONS["pull_oracle"])
    directory = fx.write_trace_dir({"healthy": fx.healthy(), trace_id: rows}, tmp_path / "dir", "parquet")
    report = sc.check_spark(directory / f"trace_id={trace_id}", only=["pull_oracle"])
    assert (report.events, report.traces) == (len(rows), 1)
    assert report.result("pull_oracle").violations == 1


# --------------------------------------------------------------------------------------------------------------
# Bad input: a SchemaError with a readable message, never a JVM traceback
# --------------------------------------------------------------------------------------------------------------


def _jsonl(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _good(seq: int = 1, **extra: Any) -> dict[str, Any]:
    row = {"trace_id": "t", "seq": seq, "ts_ms": 10, "node": "broker-a", "kind": "trace.end", "status": "SETTLED"}
    row.update(extra)
    return row


def _refused(source: Path | str, *needles: str) -> str:
    with pytest.raises(schema.SchemaError) as caught:
        sc.check_spark(source)
    message = str(caught.value)
    assert "\n\tat " not in message and "Traceback" not in message
    for needle in needles:
        assert needle in message, message
    return message


def test_missing_and_empty_paths(tmp_path: Path, spark: Any) -> None:
    _refused(tmp_path / "nowhere", "no such file or directory")
    (tmp_path / "empty").mkdir()
    _refused(tmp_path / "empty", "no trace files")
    _refused(_jsonl(tmp_path / "blank" / "t.jsonl", []), "no events")


def test_manifest_of_another_schema_version(tmp_path: Path, spark: Any) -> None:
    directory = tmp_path / "trace"
    _jsonl(directory / "t.jsonl", [_good()])
    (directory / schema.MANIFEST).write_text(json.dumps({"schema_version": 99, "format": "jsonl"}))
    _refused(directory, "schema_version 99")


def test_unparseable_and_mistyped_json_lines(tmp_path: Path, spark: Any) -> None:
    source = _jsonl(tmp_path / "bad" / "t.jsonl", [_good(1), "{not json", {**_good(3), "seq": "three"}])
    _refused(source, "2 unreadable line(s)", "t.jsonl", "not JSON", "'seq' must be bigint")


def test_unknown_kind_and_missing_required_column(tmp_path: Path, spark: Any) -> None:
    source = _jsonl(tmp_path / "kinds" / "t.jsonl", [
        _good(1), {**_good(2), "kind": "send.sideways"},
        {"trace_id": "t", "seq": 3, "ts_ms": 10, "node": "p", "kind": "send.attempt", "group": "PG", "topic": "T",
         "broker": "b", "queue_id": 0, "attempt": 1, "mode": "SYNC"},
    ])
    _refused(source, "unknown kinds", "'send.sideways'", "send.attempt row(s) without 'msg_id'", "seq 3")


def test_missing_core_column_in_json_lines(tmp_path: Path, spark: Any) -> None:
    rows = [{k: v for k, v in _good(i).items() if k != "kind"} for i in (1, 2)]
    _refused(_jsonl(tmp_path / "nokind" / "t.jsonl", rows), "missing column 'kind'")


def test_parquet_missing_column_and_wrong_type(tmp_path: Path, spark: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"trace_id": ["t"], "seq": [1], "ts_ms": [1], "node": ["n"]}), tmp_path / "a.parquet")
    _refused(tmp_path / "a.parquet", "missing column(s) kind")
    pq.write_table(pa.table({"trace_id": ["t"], "seq": ["1"], "ts_ms": [1], "node": ["n"], "kind": ["trace.end"]}),
                   tmp_path / "b.parquet")
    _refused(tmp_path / "b.parquet", "column 'seq' has type string")


def test_parquet_without_a_column_a_kind_requires(tmp_path: Path, spark: Any) -> None:
    """A Parquet file with no msg_id column at all: its send.attempt rows lack what the kind requires."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"trace_id": ["t", "t"], "seq": [1, 2], "ts_ms": [1, 2], "node": ["p", "r"],
                             "kind": ["send.attempt", "trace.end"], "status": [None, "SETTLED"]}),
                   tmp_path / "a.parquet")
    _refused(tmp_path / "a.parquet", "1 send.attempt row(s) without 'msg_id'", "the column is absent")


def test_a_refusal_names_the_first_three_rows(tmp_path: Path, spark: Any) -> None:
    """A column missing on five rows of a kind: the message counts five and names the first three by seq."""
    rows = [_good(1)] + [{"trace_id": "t", "seq": n, "ts_ms": 10, "node": "p", "kind": "send.attempt", "group": "PG",
                          "topic": "T", "broker": "b", "queue_id": 0, "attempt": 1, "mode": "SYNC",
                          "msg_id": None if n > 2 else "m"} for n in range(2, 8)]
    message = _refused(_jsonl(tmp_path / "five" / "t.jsonl", rows), "5 send.attempt row(s) without 'msg_id'")
    assert "(trace t seq 3, trace t seq 4, trace t seq 5)" in message, message


def test_a_corrupt_parquet_file_is_one_line(tmp_path: Path, spark: Any) -> None:
    """A file that is not Parquet: the reader's error (a Py4J error, not a PySpark one) becomes one line."""
    (tmp_path / "c.parquet").write_bytes(b"PAR1 not really parquet")
    message = _refused(tmp_path / "c.parquet", "cannot read the trace")
    assert "\n" not in message


@pytest.mark.parametrize(("text", "line"), [
    ("An error occurred while calling o947.count.\n: org.apache.spark.SparkException: Job aborted due to stage "
     "failure: Task 0 failed\n\tat org.apache.spark.Foo.bar(Foo.scala:1)\nCaused by: java.io.EOFException: port\n"
     "\tat java.base/x.y(Z.java:2)\n\t... 12 more",
     "EOFException: port"),
    ("An error occurred while calling o1.collect.\n: org.apache.spark.SparkException: EOFException occurred while "
     "reading the port number\n\tat org.apache.spark.errors.X(X.scala:55)",
     "SparkException: EOFException occurred while reading the port number"),
    ("Job aborted: org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     '  File "/x/worker.py", line 1, in main\n    raise ValueError("bad")\nValueError: bad\n'
     "\tat org.apache.spark.api.python.X(X.scala:1)",
     "ValueError: bad"),
])
def test_a_failed_job_is_told_in_one_line(text: str, line: str) -> None:
    assert sc._failure_line(RuntimeError(text)) == line
