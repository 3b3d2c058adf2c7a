"""``rocketspec traces generate`` / ``check`` from the command line: exit statuses and messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_fixtures import ALLOWED, VIOLATIONS, healthy, write_trace_dir

from rocketspec.cli import main
from rocketspec.traces.engine import choose_engine


def test_generate_then_check_with_the_python_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace"
    assert main(["traces", "generate", "--events", "3000", "--out", str(out), "--seed", "3", "--faults", "heavy"]) == 0
    capsys.readouterr()
    report = tmp_path / "report.json"
    assert main(["traces", "check", str(out), "--engine", "python", "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "all invariants hold" in printed
    data = json.loads(report.read_text())
    assert data["ok"] and data["engine"] == "python" and data["events"] >= 3000
    assert {i["name"] for i in data["invariants"]} >= {"no_lost_message", "pull_oracle", "send_retry"}


def test_a_violation_exits_1_and_names_the_invariant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = next(n for n in VIOLATIONS if n.startswith("send_retry"))
    write_trace_dir({name: VIOLATIONS[name]()}, tmp_path / "bad", "jsonl")
    assert main(["traces", "check", str(tmp_path / "bad"), "--engine", "python", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [i["name"] for i in data["invariants"] if not i["ok"]] == ["send_retry"]


def test_strict_fails_a_check_that_could_not_judge_everything(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A cut trace holds every invariant, but no_lost_message could not judge its part (b): exit 0, and 1 under
    --strict with one line saying what was not judged; a settled trace passes --strict."""
    write_trace_dir({"unsettled_undelivered": ALLOWED["unsettled_undelivered"]()}, tmp_path / "cut", "jsonl")
    assert main(["traces", "check", str(tmp_path / "cut"), "--engine", "python"]) == 0
    assert "part_b_skipped_unsettled 1" in capsys.readouterr().out
    assert main(["traces", "check", str(tmp_path / "cut"), "--engine", "python", "--strict"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["rocketspec: --strict: not every invariant could be judged (no_lost_message: "
                   "part_b_skipped_unsettled 1)"], err
    write_trace_dir({"healthy": healthy()}, tmp_path / "settled", "jsonl")
    assert main(["traces", "check", str(tmp_path / "settled"), "--engine", "python", "--strict"]) == 0


def test_an_invariant_with_nothing_to_judge_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace without transactions: transaction scanned nothing and judged nothing. It is `nothing judged` in the
    table and the JSON, the last line names it, the exit is 0, and 1 under --strict."""
    halves = {r["msg_id"] for r in healthy() if r["kind"] == "txn.half"}
    rows = [r for r in healthy() if not r["kind"].startswith("txn.") and r.get("msg_id") not in halves]
    write_trace_dir({"healthy": rows}, tmp_path / "t", "jsonl")
    assert main(["traces", "check", str(tmp_path / "t"), "--engine", "python"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("transaction ")]
    assert line.split()[-1:] == ["judged"] and "nothing judged" in line
    assert out.strip().splitlines()[-1] == "8 invariant(s) hold on the cases they judged; nothing judged by transaction"
    assert main(["traces", "check", str(tmp_path / "t"), "--engine", "python", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    txn = next(i for i in data["invariants"] if i["name"] == "transaction")
    assert (txn["judged"], txn["verdict"], txn["ok"]) == (0, "nothing judged", True)
    assert all(i["judged"] > 0 for i in data["invariants"] if i["name"] != "transaction")
    assert main(["traces", "check", str(tmp_path / "t"), "--engine", "python", "--strict"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "rocketspec: --strict: not every invariant could be judged (transaction: no case judged)"]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "no trace at"),
        ("corrupt", "bad trace"),
        ("unknown_kind", "unknown kind"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, message: str
) -> None:
    path = tmp_path / "t"
    if setup != "missing":
        path.mkdir()
        rows = healthy()
        lines = [json.dumps(r) for r in rows]
        if setup == "corrupt":
            lines[3] = lines[3][:-5]
        else:
            lines[3] = json.dumps({**rows[3], "kind": "send.teleport"})
        (path / "t.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["traces", "check", str(path), "--engine", "python"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_master_needs_the_spark_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_trace_dir({"healthy": healthy()}, tmp_path / "t", "jsonl")
    assert main(["traces", "check", str(tmp_path / "t"), "--engine", "python", "--master", "local[1]"]) == 2
    assert "--master" in capsys.readouterr().err


def test_generate_refuses_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    assert main(["traces", "generate", "--events", "100", "--out", str(tmp_path / "full")]) == 2
    assert "Traceback" not in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["traces", "generate", "--events", "0", "--out", str(tmp_path / "x")])
    assert exc.value.code == 2


def test_auto_takes_the_python_checker_for_a_local_trace_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_trace_dir({"healthy": healthy()}, tmp_path / "t", "jsonl")
    assert main(["traces", "check", str(tmp_path / "t"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["engine"] == "python"
    assert captured.err == "rocketspec: engine python (auto: the faster engine for a trace on this machine; " \
                           "--engine spark for Spark)\n"


@pytest.mark.parametrize(
    ("source", "engine", "master", "chosen"),
    [
        ("/data/t", "auto", None, "python"),
        ("file:///data/t", "auto", None, "python"),
        ("/data/t", "auto", "spark://127.0.0.1:7077", "spark"),
        ("hdfs:///traces/run-42", "auto", None, "spark"),
        ("s3a://bucket/t", "spark", None, "spark"),
        ("/data/t", "spark", None, "spark"),
        ("/data/t", "python", None, "python"),
    ],
)
def test_choose_engine(monkeypatch: pytest.MonkeyPatch, source: str, engine: str, master: str | None,
                       chosen: str) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert choose_engine(source, engine, master)[0] == chosen


def test_auto_under_spark_submit_is_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "41000")
    assert choose_engine("/data/t") == ("spark", "auto: running under spark-submit")


def test_the_python_engine_refuses_a_cluster_file_system(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "check", "hdfs:///traces/run-42", "--engine", "python"]) == 2
    err = capsys.readouterr().err
    assert "reads local files only" in err and err.count("\n") == 1
