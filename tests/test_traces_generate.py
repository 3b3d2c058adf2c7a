"""``rocketspec traces generate``: valid settled traces per shard, deterministic per seed (also across processes),
every fault profile, Spark tasks, and clear errors for bad arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from rocketspec.cli import main
from rocketspec.traces.generate import GenerateError, generate, shard_specs
from rocketspec.traces.schema import MANIFEST, SETTLED, check_row
from rocketspec.traces.workload import ShardSpec, run_shard


def _rows(out: Path) -> list[dict[str, Any]]:
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    rows = [{k: v for k, v in r.items() if v is not None} for r in table.to_pylist()]
    return sorted(rows, key=lambda r: (r["trace_id"], r["seq"]))


def test_generate_writes_settled_valid_shards(tmp_path: Path) -> None:
    seen: list[Any] = []
    summary = generate(3_000, tmp_path / "out", shards=2, seed=5, faults="light", progress=seen.append)
    assert summary["traces"] == 2 and summary["settled"] == 2 and summary["cut"] == 0
    rows = _rows(tmp_path / "out")
    assert len(rows) == summary["events"] >= 3_000
    for row in rows:
        check_row(row, f"{row['trace_id']} seq {row['seq']}")
    for trace_id in ("s5-0", "s5-1"):
        trace = [r for r in rows if r["trace_id"] == trace_id]
        assert [r["seq"] for r in trace] == list(range(len(trace)))
        assert trace[-1]["kind"] == "trace.end" and trace[-1]["status"] == SETTLED
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())
    assert manifest["events"] == len(rows) and manifest["trace_ids"] == ["s5-0", "s5-1"]
    assert manifest["generator"]["seed"] == 5 and manifest["generator"]["shards"] == 2
    assert seen and seen[-1].shards_done == 2 and seen[-1].events == len(rows)


def test_same_seed_same_rows_in_any_process(tmp_path: Path) -> None:
    """Shard 1 run in this process equals shard 1 of a two-process run (string hashing differs per process)."""
    generate(2_000, tmp_path / "two", shards=2, seed=9, faults="heavy", fmt="jsonl")
    alone = tmp_path / "alone"
    spec = shard_specs(2_000, alone, shards=2, seed=9, faults="heavy", fmt="jsonl")[1]
    assert spec.trace_id == "s9-1"
    run_shard(spec)
    assert (alone / "s9-1.jsonl").read_text() == (tmp_path / "two" / "s9-1.jsonl").read_text()
    other = tmp_path / "other"
    run_shard(ShardSpec(str(other), 10, 1, 1_000, "heavy", "jsonl"))
    assert (other / "s10-1.jsonl").read_text() != (alone / "s9-1.jsonl").read_text()


@pytest.mark.parametrize("faults", ["none", "heavy"])
def test_every_profile_settles(tmp_path: Path, faults: str) -> None:
    result = run_shard(ShardSpec(str(tmp_path), 2, 0, 2_500, faults))
    assert result.status == SETTLED and result.events >= 2_500
    kinds = {r["kind"] for r in _rows(tmp_path)}
    assert ("fault.inject" in kinds) == (faults != "none")


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    for kwargs, message in (
        ({"events": 0}, "events must be a positive"),
        ({"shards": 0}, "shards must be a positive"),
        ({"seed": -1}, "seed must be a non-negative"),
        ({"faults": "storm"}, "faults must be one of"),
        ({"fmt": "csv"}, "format must be one of"),
    ):
        args: dict[str, Any] = {"events": 10, **kwargs}
        with pytest.raises(GenerateError, match=message):
            generate(args.pop("events"), tmp_path / "x", **args)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(GenerateError, match="not empty"):
        generate(10, tmp_path / "busy")
    with pytest.raises(GenerateError, match="not traces"):
        generate(10, tmp_path / "busy", force=True)
    (tmp_path / "file").write_text("")
    with pytest.raises(GenerateError, match="not a directory"):
        generate(10, tmp_path / "file")


def test_cli_generate_and_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    assert main(["traces", "generate", "--events", "500", "--out", str(out), "--faults", "none"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["traces", "generate", "--events", "500", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["traces", "generate", "--events", "500", "--out", str(out), "--force", "--format", "jsonl"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["_trace.json", "_trace.s0-0.json", "s0-0.jsonl"]
    with pytest.raises(SystemExit):
        main(["traces", "generate", "--events", "-3", "--out", str(out)])
    assert "must be positive" in capsys.readouterr().err


@pytest.mark.slow  # Spark
def test_spark_tasks_write_the_same_traces(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    summary = generate(1_000, tmp_path / "spark", shards=2, seed=4, master="local[2]", fmt="jsonl")
    assert summary["traces"] == 2 and summary["settled"] == 2
    assert json.loads((tmp_path / "spark" / MANIFEST).read_text())["generator"]["engine"] == "spark"
    run_shard(shard_specs(1_000, tmp_path / "local", shards=2, seed=4, fmt="jsonl")[0])
    assert (tmp_path / "local" / "s4-0.jsonl").read_text() == (tmp_path / "spark" / "s4-0.jsonl").read_text()
