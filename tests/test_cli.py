"""The ``rocketspec`` command line: help everywhere, clear errors, the clause listing and the full check."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocketspec.cli import main
from rocketspec.console import display_width, format_table
from rocketspec.spec import AREAS


@pytest.mark.parametrize("argv", [["--help"], ["spec", "--help"], ["spec", "check", "--help"],
                                  ["spec", "clauses", "--help"], ["spec", "oracles", "--help"]])
def test_help_everywhere(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: rocketspec" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["spec", "check", "nonsense"], "unknown area(s) nonsense"),
        (["spec", "clauses", "pull", "--json"], "unknown area(s) pull"),
        (["spec", "check", "--report", "/nonexistent-dir/x.json", "pull_correction"], "not a directory"),
    ],
)
def test_bad_input_is_a_clear_error(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["spec", "check", "--crosshair-timeout", "-1"], ["spec", "check", "--jobs", "x"],
                                  ["bogus"], []])
def test_bad_options_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_clauses_json_lists_every_clause(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "clauses", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert {c["area"] for c in listing} == set(AREAS)
    ids = [c["id"] for c in listing]
    assert len(ids) == len(set(ids))
    for clause in listing:
        assert clause["statement"] and clause["source"], clause
        assert clause["checks"], f"{clause['id']} is checked by nothing"


@pytest.mark.slow  # the main job at its full budgets: about 5 minutes of CrossHair
def test_full_check_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command the README's main job runs: CrossHair and the explorer over every area (every result fresh: a
    cache of its own, not read)."""
    monkeypatch.setenv("ROCKETSPEC_CACHE_DIR", str(tmp_path / "cache"))
    report = tmp_path / "report.json"
    code = main(["spec", "check", "--report", str(report), "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "states explored: all pass" in " ".join(out.split())  # the last line may be wrapped to the width
    for area in AREAS:
        assert f"== {area}: " in out
    document = json.loads(report.read_text())
    assert document["ok"] and [a["area"] for a in document["areas"]] == list(AREAS)
    for area in document["areas"]:
        assert area["exploration"]["complete"] and area["exploration"]["states"] > 0
        assert area["crosshair"]["conditions"] > 0 and not area["crosshair"]["counterexamples"]


def test_console_script_is_installed() -> None:
    exe = shutil.which("rocketspec") or str(Path(sys.executable).parent / "rocketspec")
    proc = subprocess.run([exe, "spec", "clauses", "send_retry"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "SEND-1" in proc.stdout


def test_oracle_reference_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/oracles.md is generated from the registry; regenerate it with `rocketspec spec oracles --markdown`."""
    assert main(["spec", "oracles", "--markdown"]) == 0
    generated = capsys.readouterr().out
    committed = (Path(__file__).parent.parent / "docs" / "oracles.md").read_text(encoding="utf-8")
    assert committed == generated, "docs/oracles.md is stale: rocketspec spec oracles --markdown > docs/oracles.md"


def test_the_command_line_loads_a_command_only_when_it_runs() -> None:
    """``rocketspec serve`` starts in a fifth of a second (docs/benchmarks.md): parsing the command line loads
    neither the conformance suite nor the trace generator with the whole reference cluster behind it."""
    heavy = ("rocketspec.conformance.", "rocketspec.cli.conformance_run", "rocketspec.traces.generate",
             "rocketspec.traces.workload", "rocketspec.refimpl.cluster")
    probe = ("import sys, rocketspec.cli as cli; cli.build_parser(); "
             f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_tables_fit_the_width_and_keep_every_word() -> None:
    """Console tables wrap their widest columns to the terminal's width; CJK characters count two columns."""
    rows = [["SEND-1", "word " * 60, "seed 000 §发送核心代码 " * 4, "crosshair:x"], ["OFF-2", "short", "-", "-"]]
    text = format_table(rows, ["clause", "statement", "source", "checks"], width=80)
    assert all(display_width(line) <= 80 for line in text.splitlines())
    assert " ".join(text.split()).count("word") == 60 and text.count("§发送核心代码") == 4
    assert format_table([["a", "b"]], ["x", "y"], width=200).splitlines()[2] == "a  b"


def test_a_closed_pipe_ends_quietly() -> None:
    """`rocketspec spec clauses | head -1`: the reader closing the pipe is not an error (exit 0, nothing on stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "rocketspec", "spec", "clauses"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"clause")
    proc.stdout.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
