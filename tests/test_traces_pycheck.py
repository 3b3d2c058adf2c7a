"""The Python trace reader (traces.reading) and the single-process checker (traces.pycheck).

Reader: both formats, Hive partitions and plain Parquet files carrying trace_id, traces spread over files and
interleaved within them, gzip, and every kind of bad input with the message it gets. Checker: the fixtures of
tests/trace_fixtures.py (a healthy run, one variant per way of breaking each invariant, allowed variants with their
tallies), plus the readings pycheck documents (broadcasting groups, one overlap report while views agree).
"""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import trace_fixtures as fx

from rocketspec.traces import reading
from rocketspec.traces.invariants import INVARIANTS
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.schema import KINDS, MANIFEST, SchemaError


def _two_traces() -> dict[str, list[dict[str, Any]]]:
    return {"healthy": fx.healthy(), "other": [dict(r, trace_id="other") for r in fx.healthy()]}


def _read_all(source: Any) -> dict[str, list[dict[str, Any]]]:
    return {trace_id: list(rows) for trace_id, rows in reading.read_traces(source)}


def _strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if v is not None} for r in rows]


def _summary(report: Any) -> list[tuple[str, int, int, dict[str, int]]]:
    return [(r.name, r.events_scanned, r.judged, r.violations, dict(r.counts)) for r in report.results]


# The reader -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_reads_a_trace_directory_per_trace_in_seq_order(tmp_path: Path, fmt: str) -> None:
    traces = _two_traces()
    fx.write_trace_dir(traces, tmp_path, fmt)
    read = _read_all(tmp_path)
    assert sorted(read) == ["healthy", "other"]
    for trace_id, rows in traces.items():
        assert _strip(read[trace_id]) == _strip(rows)
    assert reading.count_events(tmp_path) == sum(len(r) for r in traces.values())


def test_jsonl_traces_spread_over_files_and_interleaved(tmp_path: Path) -> None:
    traces = _two_traces()
    rows = [r for t in traces.values() for r in t]
    random.Random(5).shuffle(rows)
    third = len(rows) // 3
    fx.write_jsonl(rows[:third], tmp_path / "a.jsonl")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt", encoding="utf-8") as out:
        for row in rows[third:2 * third]:
            out.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n\n")
    fx.write_jsonl(rows[2 * third:], tmp_path / "c.jsonl")
    read = _read_all(tmp_path)
    for trace_id, expected in traces.items():
        assert _strip(read[trace_id]) == _strip(expected)
    assert reading.count_events(tmp_path) == len(rows)


def test_plain_parquet_files_carrying_trace_id(tmp_path: Path) -> None:
    traces = _two_traces()
    rows = [r for t in traces.values() for r in t]
    random.Random(7).shuffle(rows)
    file_schema = fx.arrow_schema()
    half = len(rows) // 2
    for name, part in (("one.parquet", rows[:half]), ("two.parquet", rows[half:])):
        table = pa.Table.from_pydict({f.name: [r.get(f.name) for r in part] for f in file_schema}, schema=file_schema)
        pq.write_table(table, tmp_path / name)
    (tmp_path / "_SUCCESS").write_text("")
    read = _read_all(tmp_path)
    for trace_id, expected in traces.items():
        assert _strip(read[trace_id]) == _strip(expected)
    single = _read_all(tmp_path / "one.parquet")
    assert sum(len(r) for r in single.values()) == half


def test_a_single_jsonl_file_and_projected_columns(tmp_path: Path) -> None:
    path = fx.write_jsonl(fx.healthy(), tmp_path / "t.jsonl")
    ((trace_id, rows),) = [(t, list(r)) for t, r in reading.read_traces(path, columns=("kind",))]
    assert trace_id == "healthy"
    assert all(set(r) <= {"seq", "kind"} for r in rows)
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in fx.healthy())


def test_in_memory_rows_are_grouped_validated_and_sorted() -> None:
    rows = [r for t in _two_traces().values() for r in t]
    random.Random(3).shuffle(rows)
    grouped = dict(reading.group_rows(rows))
    assert [r["seq"] for r in grouped["other"]] == sorted(r["seq"] for r in fx.healthy())
    with pytest.raises(SchemaError, match=r"row 1: unknown kind 'nope'"):
        list(reading.group_rows([fx.healthy()[0], dict(fx.healthy()[1], kind="nope")]))


def _jsonl_dir(tmp_path: Path, rows: list[dict[str, Any]], raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps({k: v for k, v in r.items() if v is not None}) for r in rows]
    for index, text in (raw_lines or {}).items():
        lines[index] = text
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def _jsonl_bad(tmp_path: Path, change: Any) -> str:
    rows = fx.healthy()
    change(rows)
    with pytest.raises(SchemaError) as caught:
        _read_all(_jsonl_dir(tmp_path, rows))
    return str(caught.value)


def test_jsonl_bad_rows_name_file_and_line(tmp_path: Path) -> None:
    where = f"{tmp_path / 't.jsonl'}:3: "
    assert _jsonl_bad(tmp_path, lambda rows: rows[2].update(kind="send.bogus")).startswith(
        where + "unknown kind 'send.bogus'")
    assert _jsonl_bad(tmp_path, lambda rows: rows[2].pop("node")) == where + "missing 'node'"
    kind = fx.healthy()[2]["kind"]
    required = KINDS[kind].required[0]
    assert _jsonl_bad(tmp_path, lambda rows: rows[2].pop(required)) == where + f"{kind} needs {required!r}"
    assert _jsonl_bad(tmp_path, lambda rows: rows[2].update(ts_ms="soon")) == (
        where + "'ts_ms' must be bigint, not str 'soon'")


def test_jsonl_unparseable_and_non_object_lines(tmp_path: Path) -> None:
    rows = fx.healthy()
    with pytest.raises(SchemaError, match=r"t\.jsonl:4: not valid JSON"):
        _read_all(_jsonl_dir(tmp_path, rows, {3: '{"seq": 4,'}))
    with pytest.raises(SchemaError, match=r"t\.jsonl:2: a row must be a JSON object, not list"):
        _read_all(_jsonl_dir(tmp_path, rows, {1: "[1, 2]"}))


def test_duplicate_seq_names_both_lines(tmp_path: Path) -> None:
    rows = fx.healthy()
    rows[5]["seq"] = rows[4]["seq"]
    with pytest.raises(SchemaError, match=rf"t\.jsonl:5, .*t\.jsonl:6: trace 'healthy' has seq {rows[4]['seq']} "
                                          "twice"):
        _read_all(_jsonl_dir(tmp_path, rows))


def _parquet_bad(tmp_path: Path, change: Any) -> str:
    fx.write_parquet(fx.healthy(), tmp_path)
    path = tmp_path / "trace_id=healthy" / "part-0.parquet"
    pq.write_table(change(pq.read_table(path)), path)
    with pytest.raises(SchemaError) as caught:
        _read_all(tmp_path)
    message = str(caught.value)
    assert str(path) in message
    return message


def _set(table: pa.Table, name: str, index: int, value: Any) -> pa.Table:
    values = table.column(name).to_pylist()
    values[index] = value
    return table.set_column(table.column_names.index(name), name, pa.array(values, table.schema.field(name).type))


def test_parquet_bad_columns_and_rows(tmp_path: Path) -> None:
    seq2 = fx.healthy()[2]["seq"]
    assert "missing column(s) kind" in _parquet_bad(tmp_path, lambda t: t.drop_columns(["kind"]))
    assert "column 'seq' has type string, the schema says bigint" in _parquet_bad(
        tmp_path, lambda t: t.set_column(t.column_names.index("seq"), "seq", t.column("seq").cast(pa.string())))
    assert f"seq {seq2}: unknown kind 'bogus'" in _parquet_bad(tmp_path, lambda t: _set(t, "kind", 2, "bogus"))
    assert f"the row with seq {seq2} has no 'node'" in _parquet_bad(tmp_path, lambda t: _set(t, "node", 2, None))
    kind = fx.healthy()[2]["kind"]
    required = KINDS[kind].required[0]
    assert f"seq {seq2}: {kind} needs {required!r}" in _parquet_bad(tmp_path, lambda t: _set(t, required, 2, None))
    assert f"has seq {seq2} twice" in _parquet_bad(tmp_path, lambda t: _set(t, "seq", 3, seq2))


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="no such file or directory"):
        _read_all(tmp_path / "absent")
    with pytest.raises(SchemaError, match="no trace files"):
        _read_all(tmp_path)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(SchemaError, match="holds no events"):
        _read_all(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(SchemaError, match="not a trace file"):
        _read_all(tmp_path / "notes.txt")
    (tmp_path / MANIFEST).write_text(json.dumps({"schema_version": 2, "format": "jsonl"}))
    with pytest.raises(SchemaError, match=r"_trace\.json: schema_version 2; this reader reads schema version 1"):
        _read_all(tmp_path)
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(SchemaError, match="not a readable JSON manifest"):
        _read_all(tmp_path)
    (tmp_path / MANIFEST).unlink()
    fx.write_parquet(fx.healthy(), tmp_path)
    with pytest.raises(SchemaError, match="both Parquet and JSON Lines"):
        _read_all(tmp_path)
    (tmp_path / "broken.parquet").write_bytes(b"not parquet")
    (tmp_path / "empty.jsonl").unlink()
    with pytest.raises(SchemaError, match=r"broken\.parquet: not a readable Parquet file"):
        _read_all(tmp_path)


# The checker ------------------------------------------------------------------------------------------------------


def test_healthy_trace_holds_and_every_invariant_scans_rows() -> None:
    report = check_python(fx.healthy())
    assert report.engine == "python" and report.ok and report.traces == 1
    assert [r.name for r in report.results] == [i.name for i in INVARIANTS]
    assert all(r.events_scanned > 0 for r in report.results)
    assert report.events == len(fx.healthy())


@pytest.mark.parametrize("name", sorted(fx.VIOLATIONS))
def test_each_violation_is_found_exactly_once(name: str) -> None:
    report = check_python(fx.VIOLATIONS[name]())
    found = {r.name: r.violations for r in report.results if r.violations}
    assert found == {name.split("/")[0]: 1}
    (sample,) = report.result(name.split("/")[0]).samples
    assert {"trace_id", "seq", "reason"} <= set(sample)


@pytest.mark.parametrize("name", sorted(fx.ALLOWED))
def test_allowed_variants_are_counted_not_violations(name: str) -> None:
    report = check_python(fx.ALLOWED[name]())
    assert report.ok, [s for r in report.results for s in r.samples]
    for invariant, counts in fx.ALLOWED_COUNTS.get(name, {}).items():
        assert dict(report.result(invariant).counts) == counts


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_directory_of_every_fixture_gives_the_same_answers_as_rows(tmp_path: Path, fmt: str) -> None:
    fixtures = fx.all_fixtures()
    fx.write_trace_dir(fixtures, tmp_path, fmt)
    from_dir = check_python(tmp_path)
    from_rows = check_python([r for rows in fixtures.values() for r in rows])
    assert _summary(from_dir) == _summary(from_rows)
    assert [r.samples for r in from_dir.results] == [r.samples for r in from_rows.results]
    assert from_dir.traces == len(fixtures) and from_dir.source == str(tmp_path)
    assert sum(r.violations for r in from_dir.results) == len(fx.VIOLATIONS)


def _two_consumers_consume_m1(strategy: str) -> list[dict[str, Any]]:
    b = fx.TraceBuilder("twice")
    for node in ("c1", "c2"):
        b.emit(node, "rebalance.assign", group=fx.GROUP, topic=fx.TOPIC, strategy=strategy, consumers=["c1", "c2"],
               queues=[fx.QA])
    b.emit(fx.BROKER_A, "store.put", topic=fx.TOPIC, broker=fx.BROKER_A, queue_id=0, offset=0, msg_id="m1")
    for node in ("c1", "c2"):
        b.emit(node, "consume.result", group=fx.GROUP, topic=fx.TOPIC, broker=fx.BROKER_A, queue_id=0, offset=0,
               msg_id="m1", status="CONSUME_SUCCESS")
    return b.rows


def test_broadcasting_groups_are_not_held_to_clustering_rules() -> None:
    """Each broadcasting consumer consumes every message: a second success is no duplicate of the group, and both
    consumers own every queue."""
    clustering = check_python(_two_consumers_consume_m1("AVG"))
    # In a clustering group the second success is a duplicate, allowed only because both list the queue.
    duplicates = clustering.result("duplicates_allowed")
    assert (duplicates.violations, duplicates.counts) == (0, {fx.SHARED_QUEUE: 1})
    assert clustering.result("single_owner").violations == 1
    broadcasting = check_python(_two_consumers_consume_m1("BROADCASTING"))
    assert broadcasting.ok and not broadcasting.result("duplicates_allowed").counts


def test_overlap_is_reported_once_while_views_agree() -> None:
    b = fx.TraceBuilder("overlap")
    everyone, queues = ["c1", "c2"], [fx.QA, fx.QB]
    b.assign("c1", fx.GROUP, fx.TOPIC, everyone, all_queues=queues, queues=queues, strategy="AVG_BY_CIRCLE")
    b.assign("c2", fx.GROUP, fx.TOPIC, everyone, all_queues=queues, queues=[fx.QB], strategy="AVG_BY_CIRCLE")
    b.assign("c2", fx.GROUP, fx.TOPIC, everyone, all_queues=queues, queues=[fx.QB], strategy="AVG_BY_CIRCLE")
    b.lifecycle("c2", fx.GROUP, "push_consumer", "crash")  # views stop agreeing: c1 still lists c2
    b.lifecycle("c2", fx.GROUP, "push_consumer", "start")  # they agree again, still overlapping
    result = check_python(b.rows).result("single_owner")
    overlaps = [s for s in result.samples if "owned by" in s["reason"]]
    assert [s["seq"] for s in overlaps] == [2, 5]
    # c1's row lists both queues where AVG_BY_CIRCLE gives it one: the allocation is wrong too (rule (a)).
    assert result.violations == 3


def test_values_an_oracle_refuses_are_violations_not_crashes() -> None:
    b = fx.TraceBuilder("odd")
    b.emit(fx.BROKER_A, "pull.response", group=fx.GROUP, topic=fx.TOPIC, broker=fx.BROKER_A, queue_id=0, offset=-5,
           status="NOT_A_STATUS", code=999, next_offset=None, min_offset=7, max_offset=3)
    b.emit(fx.BROKER_A, "sendback", group=fx.GROUP, topic=fx.TOPIC, msg_id="m1", reconsume_times=-40,
           delay_level=0, target=fx.RETRY_TOPIC, via="broker", broker=fx.BROKER_A)
    b.emit(fx.PRODUCER, "send.attempt", group=fx.PRODUCER_GROUP, topic=fx.TOPIC, broker=fx.BROKER_A, queue_id=0,
           msg_id="m1", attempt=1, mode="TELEPATHY")
    b.emit("c1", "rebalance.assign", group=fx.GROUP, topic=fx.TOPIC, strategy="AVG", consumers=[], queues=[],
           all_queues=[fx.QA])
    report = check_python(b.rows)
    found = {r.name: r.violations for r in report.results if r.violations}
    assert found == {"pull_oracle": 1, "retry_delay_dlq": 1, "send_retry": 1, "single_owner": 1}
    assert "TELEPATHY" in report.result("send_retry").samples[0]["reason"]


def test_malformed_queue_strings_are_schema_errors() -> None:
    for queue in ("broker-a:0", "broker-a:0:rw", "broker-a:x:6"):
        b = fx.TraceBuilder("malformed")
        b.emit(fx.PRODUCER, "route.update", topic=fx.TOPIC, queues=[queue])
        with pytest.raises(SchemaError, match=rf"seq 1: route.update of 'TopicTest': queue '{queue}' is not "
                                              r"'broker:queueId:perm'"):
            check_python(b.rows)
    b = fx.TraceBuilder("malformed")
    b.emit("c1", "rebalance.assign", group=fx.GROUP, topic=fx.TOPIC, strategy="AVG", consumers=["c1"], queues=[],
           all_queues=["nowhere"])
    with pytest.raises(SchemaError, match=r"seq 1: rebalance.assign all_queues: queue 'nowhere'"):
        check_python(b.rows)


def test_parquet_partitions_streamed_in_order_or_sorted_whole(tmp_path: Path) -> None:
    """Row groups in seq order are streamed one at a time; files whose seq ranges interleave are read whole and
    sorted; a bad row in a later row group is still a SchemaError."""
    rows = fx.healthy()
    file_schema = fx.arrow_schema(with_trace_id=False)

    def table(part: list[dict[str, Any]]) -> pa.Table:
        return pa.Table.from_pydict({f.name: [r.get(f.name) for r in part] for f in file_schema}, schema=file_schema)

    in_order = tmp_path / "in_order" / "trace_id=healthy"
    in_order.mkdir(parents=True)
    pq.write_table(table(rows), in_order / "part-0.parquet", row_group_size=10)
    interleaved = tmp_path / "interleaved" / "trace_id=healthy"
    interleaved.mkdir(parents=True)
    pq.write_table(table(rows[::2]), interleaved / "part-0.parquet")
    pq.write_table(table(rows[1::2]), interleaved / "part-1.parquet")
    for directory in (tmp_path / "in_order", tmp_path / "interleaved"):
        assert _strip(_read_all(directory)["healthy"]) == _strip(rows)
    bad = [dict(r) for r in rows]
    bad[-3]["kind"] = "bogus"
    pq.write_table(table(bad), in_order / "part-0.parquet", row_group_size=10)
    with pytest.raises(SchemaError, match=rf"seq {bad[-3]['seq']}: unknown kind 'bogus'"):
        _read_all(tmp_path / "in_order")


def test_one_partition_of_a_trace_directory_is_checked_as_that_trace(tmp_path: Path) -> None:
    """``traces check DIR/trace_id=<id>`` (or one file of it) checks that trace: its id comes from the partition's
    name and the manifest from DIR, as when the whole directory is read."""
    name = next(n for n in fx.VIOLATIONS if n.startswith("pull_oracle"))
    rows = fx.VIOLATIONS[name]()
    trace_id = fx.violation_trace_id(name)
    directory = fx.write_trace_dir({"healthy": fx.healthy(), trace_id: rows}, tmp_path / "dir", "parquet")
    partition = directory / f"trace_id={trace_id}"
    expected = [(r.name, r.events_scanned, r.judged, r.violations, dict(r.counts)) for r in check_python(rows).results]
    for source in (partition, next(partition.glob("*.parquet"))):
        report = check_python(source)
        assert (report.events, report.traces) == (len(rows), 1)
        assert [(r.name, r.events_scanned, r.judged, r.violations, dict(r.counts)) for r in report.results] == expected


SNAPSHOT = Path(__file__).parent / "data" / "pycheck_fixture_reports.json"


def _snapshot_of(report: Any) -> dict[str, Any]:
    return {r.name: {"judged": r.judged, "violations": r.violations, "counts": dict(sorted(r.counts.items())),
                     "samples": [{k: v for k, v in sample.items() if k != "trace_id"} for sample in r.samples]}
            for r in report.results}


def test_every_fixture_reports_exactly_as_recorded() -> None:
    """The Python checker's whole report on each fixture — cases judged, counts, and each violation's row and reason —
    is the recorded one (tests/data/pycheck_fixture_reports.json): what a user reads does not drift unseen. After an
    intended change, ``ROCKETSPEC_UPDATE_SNAPSHOTS=1 pytest tests/test_traces_pycheck.py -k recorded`` rewrites it;
    review the diff."""
    got = {name: _snapshot_of(check_python(rows)) for name, rows in sorted(fx.all_fixtures().items())}
    if os.environ.get("ROCKETSPEC_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    recorded = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(recorded)
    for name in sorted(got):
        assert got[name] == recorded[name], name


def _derived_rows(deleted_at: int | None = None) -> list[dict[str, Any]]:
    """m1 and m2 stored on broker-a:0, received by c1 in a pull answer (derived deliveries), two commits passing
    m1 (offset 0) before c1 sends it back; ``deleted_at``: a store.delete of the queue up to 1 between the commits."""
    b = fx.TraceBuilder("derived")
    for msg in ("m1", "m2"):
        b.store_put(fx.BROKER_A, fx.TOPIC, 0, msg)
    for offset in (0, 1):
        row = b.deliver("c1", fx.GROUP, fx.TOPIC, fx.BROKER_A, 0, offset)
        row["derived"] = "pull_answer"
    b.commit(fx.BROKER_A, fx.GROUP, fx.TOPIC, 0, 1)
    if deleted_at is not None:
        b.store_delete(fx.BROKER_A, fx.TOPIC, 0, deleted_at)
    b.commit(fx.BROKER_A, fx.GROUP, fx.TOPIC, 0, 2)
    b.sendback("c1", fx.GROUP, fx.TOPIC, "m1", 1, "%RETRY%" + fx.GROUP, delay_level=3, via="broker")
    return b.rows


def test_every_commit_passing_a_received_message_before_its_send_back_is_a_violation() -> None:
    """A derived delivery is judged once it is sent back: each commit that passed it in between is a violation
    (two here), unless a deletion below the commit came first (then only the commit before it); m2, never sent
    back, is not judged."""
    result = check_python(_derived_rows()).result("offset_not_past_unconsumed")
    assert (result.judged, result.violations) == (1, 2)
    exempt = check_python(_derived_rows(deleted_at=1)).result("offset_not_past_unconsumed")
    assert (exempt.judged, exempt.violations) == (1, 1)
