"""A trace carries its delay table: the manifest's ``delay_levels_ms`` by trace id, and both checkers judge
retry_delay_dlq (b) by each trace's own table (the default 18 levels for a trace the manifest does not list).

One simulated cluster run with ``message_delay_level="1s 1s 2s 2s"`` and a listener that fails (so messages are
retried, some to the dead-letter queue) and one with the default table are recorded into one directory. The same rows
under other trace ids, without a table or with a longer one, must show retry_delay_dlq violations (the checkers read
the table per trace, and the table matters). The Spark engine runs once, over the directory holding all of them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.message import Message
from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS, DELAY_LEVEL_NAMES
from rocketspec.traces import reading
from rocketspec.traces.invariants import INVARIANTS
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.recording import TraceRecorder, TraceWriteError, record, write_manifest
from rocketspec.traces.schema import MANIFEST, MANIFEST_DELAY_LEVELS, SETTLED, SchemaError

SHORT = "1s 1s 2s 2s"
SHORT_MS = [1_000, 1_000, 2_000, 2_000]
RETRY = "retry_delay_dlq"
#: Traces of the combined directory: recorded (short, default) and rewritten copies of short's rows.
STRIPPED = "stripped"  # short's rows, no table: judged by the default table, its copies come too early
SLOW = "slow"  # short's rows with a one-level table of an hour: every level clamps to it, every copy too early
SLOW_MS = [3_600_000]
RETRIES = 8  # 4 messages x 2 retries (levels 3 and 4), the doomed one's too before its dead letter


def _record(out: Path, trace_id: str, fmt: str, **broker_options: Any) -> Cluster:
    """A settled run whose listener fails: each message is retried twice (delay levels 3 and 4) before it succeeds,
    one message every time (max_reconsume_times 2: it reaches the DLQ after a retry at level 3 and one at 4)."""
    recorder = TraceRecorder(None, out, trace_id, fmt=fmt)
    cluster = Cluster(1, seed=5, sinks=[recorder], **broker_options)
    cluster.create_topic("T", queues=2)
    producer = cluster.producer("PG")

    def listener(msgs: list[Any]) -> str:
        msg = msgs[0]
        if msg.body == b"doomed" or msg.reconsume_times < 2:
            return "RECONSUME_LATER"
        return "CONSUME_SUCCESS"

    cluster.push_consumer("CG", "T", listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                          max_reconsume_times=2)
    for i in range(3):
        producer.send(Message("T", f"m{i}".encode()))
    producer.send(Message("T", b"doomed"))
    cluster.run_until_idle()
    recorder.record_trace_end(SETTLED)
    cluster.close()
    return cluster


def _copy_trace(directory: Path, source_id: str, trace_id: str, table: list[int] | None) -> None:
    """Write ``source_id``'s JSON Lines rows as trace ``trace_id`` with its own recorder manifest (with ``table`` as
    its delay table, or none), and merge the directory manifest again."""
    lines = (directory / f"{source_id}.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [{**json.loads(line), "trace_id": trace_id} for line in lines]
    (directory / f"{trace_id}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    part = json.loads((directory / f"_trace.{source_id}.json").read_text(encoding="utf-8"))
    part.pop(MANIFEST_DELAY_LEVELS, None)
    part["trace_ids"] = [trace_id]
    if table is not None:
        part[MANIFEST_DELAY_LEVELS] = {trace_id: table}
    (directory / f"_trace.{trace_id}.json").write_text(json.dumps(part), encoding="utf-8")
    write_manifest(directory)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The short-table run and the default-table run, recorded as JSON Lines into one directory."""
    out = tmp_path_factory.mktemp("delay") / "recorded"
    _record(out, "short", "jsonl", message_delay_level=SHORT)
    _record(out, "default", "jsonl")
    return out


@pytest.fixture(scope="module")
def combined(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``recorded`` plus short's rows as ``stripped`` (no table) and ``slow`` (a longer table)."""
    out = tmp_path_factory.mktemp("delay") / "combined"
    shutil.copytree(recorded, out)
    _copy_trace(out, "short", STRIPPED, None)
    _copy_trace(out, "short", SLOW, SLOW_MS)
    return out


def _violations(report: Any) -> dict[str, int]:
    return {r.name: r.violations for r in report.results if r.violations}


def _retry_traces(report: Any) -> set[str]:
    return {s["trace_id"] for s in report.result(RETRY).samples}


def test_the_manifests_carry_the_table_of_the_custom_run_only(recorded: Path) -> None:
    part = json.loads((recorded / "_trace.short.json").read_text(encoding="utf-8"))
    assert part[MANIFEST_DELAY_LEVELS] == {"short": SHORT_MS}
    assert MANIFEST_DELAY_LEVELS not in json.loads((recorded / "_trace.default.json").read_text(encoding="utf-8"))
    manifest = json.loads((recorded / MANIFEST).read_text(encoding="utf-8"))
    assert manifest[MANIFEST_DELAY_LEVELS] == {"short": SHORT_MS}
    assert sorted(manifest["trace_ids"]) == ["default", "short"]
    tables = reading.delay_tables(recorded)
    assert tables == {"short": tuple(SHORT_MS)}
    assert reading.delay_table(tables, "short") == tuple(SHORT_MS)
    assert reading.delay_table(tables, "default") == DELAY_LEVEL_MILLIS


def test_recorded_runs_retry_and_pass_every_invariant(recorded: Path) -> None:
    report = check_python(recorded)
    assert report.traces == 2
    assert _violations(report) == {}, [r.samples for r in report.results if r.violations]
    retry = report.result(RETRY)
    assert retry.events_scanned > 0
    rows = [r for _, trace in reading.read_traces(recorded) for r in trace]
    sendbacks = [r for r in rows if r["kind"] == "sendback" and r.get("via") == "broker"
                 and r.get("broker") == r["node"]]
    # Both runs retried at levels 3 and 4 (the short table's 2 s) and dead-lettered the doomed message.
    assert {(r["trace_id"], r["delay_level"]) for r in sendbacks if r["target"] == "%RETRY%CG"} == {
        ("short", 3), ("short", 4), ("default", 3), ("default", 4)}
    assert {r["trace_id"] for r in sendbacks if r["target"] == "%DLQ%CG"} == {"short", "default"}


def test_without_its_table_the_short_run_breaks_retry_delay_dlq_only(combined: Path) -> None:
    report = check_python(combined)
    assert report.traces == 4
    assert set(_violations(report)) == {RETRY}
    assert _retry_traces(report) == {STRIPPED, SLOW}
    # Every retry of the run is early under the default table (2 s < 10 s and 30 s) and under one hour.
    stripped = check_python(combined / f"{STRIPPED}.jsonl")
    assert stripped.result(RETRY).violations == RETRIES
    assert {s["delay_level"] for s in stripped.result(RETRY).samples} == {3, 4}


def test_a_single_file_takes_its_table_from_its_directory_manifest(combined: Path) -> None:
    assert _violations(check_python(combined / "short.jsonl")) == {}
    assert _violations(check_python(combined / f"{SLOW}.jsonl")) == {RETRY: RETRIES}


def test_in_memory_rows_take_tables_by_argument(recorded: Path) -> None:
    rows = [r for trace_id, trace in reading.read_traces(recorded) if trace_id == "short" for r in trace]
    assert _violations(check_python(rows, delay_tables={"short": SHORT_MS})) == {}
    assert _violations(check_python(rows)) == {RETRY: RETRIES}
    with pytest.raises(SchemaError, match=r"delay_levels_ms\['short'\]: level 2 delay must be a positive whole"):
        check_python(rows, delay_tables={"short": [1000, 0]})


def test_a_parquet_recording_carries_its_table_too(tmp_path: Path) -> None:
    _record(tmp_path, "pq", "parquet", message_delay_level=SHORT)
    assert json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8"))[MANIFEST_DELAY_LEVELS] == {"pq": SHORT_MS}
    assert _violations(check_python(tmp_path)) == {}
    manifest = json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8"))
    del manifest[MANIFEST_DELAY_LEVELS]
    (tmp_path / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert _violations(check_python(tmp_path)) == {RETRY: RETRIES}


@pytest.mark.parametrize(("table", "message"), [
    ([], "a delay table must be a list of 1 to 18"),
    ([1000] * 19, "a delay table must be a list of 1 to 18"),
    ("1s 2s", "a delay table must be a list"),
    ([1000, -5], "level 2 delay must be a positive whole number of ms, not -5"),
    ([1000, 2.5], "level 2 delay must be a positive whole number"),
    ([True], "level 1 delay must be a positive whole number"),
])
def test_a_malformed_table_is_refused_clearly(tmp_path: Path, table: Any, message: str) -> None:
    with pytest.raises(TraceWriteError, match=message):
        TraceRecorder(EventLog(lambda: 0), tmp_path / "rec", "t", fmt="jsonl", delay_levels_ms=table)
    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "t.jsonl").write_text(json.dumps({"trace_id": "t", "seq": 0, "ts_ms": 0, "node": "recorder",
                                                   "kind": "trace.end", "status": "CUT"}) + "\n")
    (directory / MANIFEST).write_text(json.dumps({"schema_version": 1, MANIFEST_DELAY_LEVELS: {"t": table}}))
    with pytest.raises(SchemaError, match=rf"_trace\.json: {MANIFEST_DELAY_LEVELS}\['t'\]: .*{message[:20]}"):
        check_python(directory)


def test_the_field_must_map_trace_ids(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(json.dumps({"trace_id": "t", "seq": 0, "ts_ms": 0, "node": "recorder",
                                                  "kind": "trace.end", "status": "CUT"}) + "\n")
    (tmp_path / MANIFEST).write_text(json.dumps({"schema_version": 1, MANIFEST_DELAY_LEVELS: SHORT_MS}))
    with pytest.raises(SchemaError, match=f"{MANIFEST_DELAY_LEVELS} must map trace ids to delay tables"):
        check_python(tmp_path)


def test_a_cluster_with_the_default_table_spelled_out_records_no_table(tmp_path: Path) -> None:
    with Cluster(1, sinks=[TraceRecorder(None, tmp_path, "d", fmt="jsonl")],
                 message_delay_level=" ".join(DELAY_LEVEL_NAMES)) as cluster:
        assert cluster.delay_level_millis == DELAY_LEVEL_MILLIS
    assert MANIFEST_DELAY_LEVELS not in json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8"))
    with Cluster(1, message_delay_level=SHORT) as cluster:
        assert cluster.delay_level_millis == tuple(SHORT_MS)
        recorder = record(cluster, tmp_path / "later", trace_id="later", fmt="jsonl")
        assert recorder.delay_levels_ms == tuple(SHORT_MS)


# Spark: one session (the process's, as tests/test_traces_sparkcheck.py gets it) and one check of the directory.


@pytest.fixture(scope="module")
def spark_report(combined: Path) -> Any:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:  # pragma: no cover - the machine has Java
        pytest.skip("Spark needs Java")
    from rocketspec.traces import sparkcheck as sc

    sc.spark_session("local[2]", small=True)
    return sc.check_spark(combined, master="local[2]")


@pytest.mark.slow  # Spark
def test_spark_reads_each_traces_table_and_agrees_with_python(spark_report: Any, combined: Path) -> None:
    python = check_python(combined)
    assert [r.name for r in spark_report.results] == [i.name for i in INVARIANTS]
    assert _violations(spark_report) == _violations(python) == {RETRY: 2 * RETRIES}
    assert _retry_traces(spark_report) == {STRIPPED, SLOW}
    # Fewer violations than MAX_SAMPLES: both reports list every violating sendback.
    rows = {(s["trace_id"], s["seq"]) for s in spark_report.result(RETRY).samples}
    assert rows == {(s["trace_id"], s["seq"]) for s in python.result(RETRY).samples}
    assert len(rows) == 2 * RETRIES
