"""The suite's skip summary (tests/conftest.py): a run that skips tests ends with one line per reason and its
count, so the README's test command says why its slow and tool-dependent tests did not run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import skip_reason, skip_summary

TESTS = Path(__file__).resolve().parent

TINY = textwrap.dedent('''
    import pytest

    @pytest.mark.slow
    def test_slow_one():
        pass

    @pytest.mark.slow
    def test_slow_two():
        pass

    @pytest.mark.slow
    def test_slow_three():
        pass

    def test_no_browser():
        pytest.skip("no headless Chromium here")

    @pytest.mark.skip(reason="no headless Chromium here")
    def test_no_browser_either():
        pass

    @pytest.mark.skipif(True, reason="java and javac are not on PATH")
    def test_no_java():
        pass

    def test_runs():
        pass
''')


def test_a_run_ends_with_its_skip_reasons_and_their_counts(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    (tmp_path / "test_tiny.py").write_text(TINY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}
    for setting in ("ROCKETSPEC_SLOW", "PYTEST_ADDOPTS"):  # the outer run's, not the small file's
        env.pop(setting, None)
    # The suite's conftest as a plugin of a run of one small file: its slow-test skips and its summary.
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "test_tiny.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "6 skipped, by reason" in line)
    assert lines[start + 1:start + 4] == [
        "3  slow: runs with --slow (CI runs it)",
        "2  no headless Chromium here",
        "1  java and javac are not on PATH",
    ], done.stdout
    assert "1 passed, 6 skipped" in lines[start + 4]


def test_reasons_are_read_from_local_and_xdist_reports() -> None:
    local = pytest.TestReport("t.py::a", ("t.py", 1, "a"), {}, "skipped", ("t.py", 3, "Skipped: no java"), "call")
    sent = pytest.TestReport("t.py::b", ("t.py", 1, "b"), {}, "skipped", ["t.py", 9, "Skipped: no java"], "setup")
    bare = pytest.TestReport("t.py::c", ("t.py", 1, "c"), {}, "skipped", ("t.py", 5, "Skipped: "), "call")
    long = pytest.TestReport("t.py::d", ("t.py", 1, "d"), {}, "skipped", ("t.py", 5, "first line\nsecond"), "call")
    assert [skip_reason(r) for r in (local, sent, bare, long)] == ["no java", "no java", "no reason given",
                                                                     "first line"]
    assert skip_summary([local, sent, bare, long]) == ["2  no java", "1  first line", "1  no reason given"]
    assert skip_summary([]) == []
