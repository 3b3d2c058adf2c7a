"""Recording refimpl runs as traces: rows follow traces.schema, Parquet and JSON Lines hold the same rows, the events
carry what the trace rules need, and bad recorder arguments get clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pyarrow.dataset as ds
import pytest

from rocketspec.refimpl import events as refimpl_events
from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.events import Event, EventLog
from rocketspec.refimpl.message import Message
from rocketspec.spec.protocol import TransactionState
from rocketspec.traces.recording import TraceRecorder, TraceWriteError, arrow_schema, write_manifest
from rocketspec.traces.schema import COLUMNS, CUT, KINDS, MANIFEST, SCHEMA_VERSION, SETTLED, check_row


def _run(out: Path, fmt: str, *, seed: int = 3) -> Cluster:
    """A small settled run: sync, batch and transactional sends; a consumer that fails once; a crashed consumer."""
    recorder = TraceRecorder(None, out, "t1", fmt=fmt)
    cluster = Cluster(2, seed=seed, sinks=[recorder], segment_bytes=4096)
    cluster.create_topic("T", queues=2)
    producer = cluster.producer("PG")
    failed: set[str] = set()

    def listener(msgs: list[Any]) -> str:
        key = msgs[0].msg_id
        if key not in failed:
            failed.add(key)
            return "RECONSUME_LATER"
        return "CONSUME_SUCCESS"

    options: dict[str, Any] = {"consume_from_where": "CONSUME_FROM_FIRST_OFFSET", "max_reconsume_times": 1}
    consumer = cluster.push_consumer("CG", {"T": "TagA || TagB"}, listener, **options)
    doomed = cluster.push_consumer("CG", {"T": "TagA || TagB"}, listener, **options)
    txn = cluster.transaction_producer("TPG", lambda _m, _a: TransactionState.COMMIT_MESSAGE,
                                       lambda _m: TransactionState.COMMIT_MESSAGE)
    producer.send(Message("T", b"one", tags="TagA"))
    producer.send_batch([Message("T", b"b1", tags="TagB"), Message("T", b"b2", tags="TagB")])
    txn.send_in_transaction(Message("T", b"txn", tags="TagA"))
    cluster.crash_client(doomed)
    cluster.run_until_idle()
    assert consumer is not None
    recorder.record_trace_end(SETTLED)
    cluster.close()
    return cluster


def _parquet_rows(out: Path) -> list[dict[str, Any]]:
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    rows = [{k: v for k, v in r.items() if v is not None} for r in table.to_pylist()]
    return sorted(rows, key=lambda r: r["seq"])


def test_every_refimpl_event_maps_onto_schema_columns() -> None:
    names = {c.name for c in COLUMNS}
    classes = [c for c in vars(refimpl_events).values()
               if isinstance(c, type) and issubclass(c, Event) and c is not Event]
    assert classes
    for cls in classes:
        assert cls.kind in KINDS, cls.__name__
        fields = {f.name for f in attrs.fields(cls)}
        assert fields <= names, (cls.__name__, fields - names)
        assert set(KINDS[cls.kind].required) <= fields, cls.__name__


def test_parquet_trace_rows_are_valid_and_ordered(tmp_path: Path) -> None:
    cluster = _run(tmp_path, "parquet")
    assert not cluster.events.keep and not cluster.events.events  # recorded runs keep nothing in memory
    files = sorted((tmp_path / "trace_id=t1").glob("part-*.parquet"))
    assert files
    schema = ds.dataset(files[0], format="parquet").schema
    assert schema == arrow_schema(with_trace_id=False)
    rows = _parquet_rows(tmp_path)
    for row in rows:
        check_row(row, f"seq {row['seq']}")
        assert row["trace_id"] == "t1"
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    assert rows[-1]["kind"] == "trace.end" and rows[-1]["status"] == SETTLED
    kinds = {r["kind"] for r in rows}
    assert {"send.attempt", "send.result", "store.put", "rebalance.assign", "consume.deliver", "consume.result",
            "sendback", "txn.half", "txn.end", "client.lifecycle", "offset.commit"} <= kinds
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["format"] == "parquet"
    assert manifest["events"] == len(rows) and manifest["traces"] == 1 and manifest["trace_ids"] == ["t1"]


def test_rows_carry_what_the_rules_need(tmp_path: Path) -> None:
    _run(tmp_path, "parquet")
    rows = _parquet_rows(tmp_path)
    stored = {r["msg_id"] for r in rows if r["kind"] == "store.put" and r["topic"] == "T"}
    attempts = [r for r in rows if r["kind"] == "send.attempt" and r["group"] == "PG"]
    # The batch's attempt is one row per message, each id a stored message.
    assert len(attempts) == 3 and {a["msg_id"] for a in attempts} <= stored
    assert all(a["retry_times"] == 2 and a["timeout_ms"] == 3000 and a["latency_fault"] is False for a in attempts)
    results = [r for r in rows if r["kind"] == "send.result" and r["group"] == "PG"]
    assert all("latency_ms" in r for r in results)
    batch_offsets = sorted(r["offset"] for r in results if r["msg_id"] != attempts[0]["msg_id"])
    assert batch_offsets[1] == batch_offsets[0] + 1
    assign = next(r for r in rows if r["kind"] == "rebalance.assign" and r["topic"] == "T")
    assert assign["expression"] == "TagA || TagB" and len(assign["all_queues"]) == 4
    assert {r["tags"] for r in rows if r["kind"] == "store.put" and r["topic"] == "T"} == {"TagA", "TagB"}
    back = next(r for r in rows if r["kind"] == "sendback" and r["via"] == "broker" and "@" not in r["node"])
    assert back["max_reconsume_times"] == 1
    ends = [r for r in rows if r["kind"] == "txn.end" and "result" in r]
    assert [e["result"] for e in ends] == ["COMMITTED"]
    crashes = [r for r in rows if r["kind"] == "client.lifecycle" and r["action"] == "crash"]
    assert [c["role"] for c in crashes] == ["push_consumer"]
    delivered = [r for r in rows if r["kind"] == "consume.deliver"]
    assert any(r["topic"] == "%RETRY%CG" for r in delivered)  # the queue pulled, not the topic shown


def test_jsonl_holds_the_same_rows_as_parquet(tmp_path: Path) -> None:
    _run(tmp_path / "p", "parquet")
    _run(tmp_path / "j", "jsonl")
    lines = (tmp_path / "j" / "t1.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for i, row in enumerate(rows):
        check_row(row, f"line {i + 1}")
    assert rows == _parquet_rows(tmp_path / "p")
    assert json.loads((tmp_path / "j" / MANIFEST).read_text())["format"] == "jsonl"


def test_deleting_old_data_records_store_delete(tmp_path: Path) -> None:
    cluster = Cluster(1, seed=1, sinks=[TraceRecorder(None, tmp_path, "del")], segment_bytes=4096)
    cluster.create_topic("T", queues=1)
    producer = cluster.producer("PG")
    for i in range(80):
        producer.send(Message("T", b"x" * 100 + str(i).encode()))
    assert cluster.delete_old_data("broker-a", 1) == 1
    cluster.close()
    rows = _parquet_rows(tmp_path)
    deletes = [r for r in rows if r["kind"] == "store.delete" and r["topic"] == "T"]
    assert deletes and deletes[0]["offset"] > 0 and deletes[0]["node"] == "broker-a"
    assert rows[-1]["kind"] == "trace.end" and rows[-1]["status"] == CUT  # closed without settling


def test_recorder_arguments_are_checked(tmp_path: Path) -> None:
    log = EventLog(lambda: 0)
    with pytest.raises(TraceWriteError, match="trace id"):
        TraceRecorder(log, tmp_path, "a/b")
    with pytest.raises(TraceWriteError, match="format"):
        TraceRecorder(log, tmp_path, "x", fmt="csv")
    recorder = TraceRecorder(log, tmp_path, "x", fmt="jsonl")
    with pytest.raises(TraceWriteError, match="SETTLED or CUT"):
        recorder.record_trace_end("DONE")
    recorder.close()
    with pytest.raises(TraceWriteError, match="already exists"):
        TraceRecorder(log, tmp_path, "x", fmt="jsonl")
    (tmp_path / "file").write_text("")
    with pytest.raises(TraceWriteError, match="not a directory"):
        TraceRecorder(log, tmp_path / "file", "y")


def test_manifests_of_several_recorders_merge(tmp_path: Path) -> None:
    for trace_id in ("a", "b"):
        log = EventLog(lambda: 5)
        with TraceRecorder(log, tmp_path, trace_id, fmt="jsonl", manifest=False):
            pass
    manifest = write_manifest(tmp_path, generator={"seed": 1})
    assert manifest["traces"] == 2 and manifest["events"] == 2 and manifest["trace_ids"] == ["a", "b"]
    assert manifest["generator"] == {"seed": 1}
    with TraceRecorder(EventLog(lambda: 5), tmp_path, "c", manifest=False):  # parquet next to jsonl
        pass
    with pytest.raises(TraceWriteError, match="mixes"):
        write_manifest(tmp_path)
