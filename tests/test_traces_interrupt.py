"""Ctrl-C during a Spark check ends it with one line and exit 130: no Python traceback, no Java stack, no JVM left.

The command runs in its own process group and gets SIGINT as a terminal's Ctrl-C sends it, once while the JVM is
starting and once while the checks run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

JAVA = shutil.which("java") or os.environ.get("JAVA_HOME")
# In the spark-cluster group: never beside the standalone cluster test (four JVMs), under which the checks' first
# Python workers once took longer than the wait below.
pytestmark = [pytest.mark.skipif(not JAVA, reason="Spark needs Java"), pytest.mark.slow,
              pytest.mark.xdist_group("spark-cluster")]
ROCKETSPEC = [sys.executable, "-m", "rocketspec"]
WAIT_S = 240.0


def _children(pid: int, word: bytes) -> list[int]:
    """Processes whose parent is ``pid`` and whose command line holds ``word``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and word in command:
            found.append(int(entry.name))
    return found


def _java_children(pid: int) -> list[int]:
    """The JVM PySpark launched for process ``pid``."""
    return _children(pid, b"java")


def _python_workers_started(jvm: int) -> bool:
    """The JVM started its Python workers: the checks' first UDF runs, many stages before the end."""
    return bool(_children(jvm, b"pyspark"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("interrupt") / "trace"
    subprocess.run([*ROCKETSPEC, "traces", "generate", "--events", "40000", "--shards", "2", "--seed", "11",
                    "--faults", "heavy", "--out", str(out)], check=True, capture_output=True, timeout=WAIT_S)
    return out


@pytest.mark.parametrize("when", ["jvm-starting", "checking"])
def test_ctrl_c_ends_a_spark_check_with_one_line(trace: Path, when: str) -> None:
    proc = subprocess.Popen([*ROCKETSPEC, "traces", "check", str(trace), "--engine", "spark"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    jvms: list[int] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while not jvms and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            jvms = _java_children(proc.pid)
        assert jvms, "the JVM never started"
        if when == "checking":
            # From the JVM's start, its own bound: on a machine loaded by other tests reading and caching the trace
            # before the first check's Python workers start can take a while.
            deadline = time.monotonic() + WAIT_S
            while not _python_workers_started(jvms[0]) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"the check ended (exit {proc.returncode}) before its Python workers were seen: "
                            f"{err[-2000:]}")
            assert _python_workers_started(jvms[0]), f"the checks never started within {WAIT_S:.0f} s of the JVM"
        assert proc.poll() is None, "the check ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert out == ""
    assert err.rstrip().endswith("rocketspec: interrupted"), err
    assert "Traceback" not in err and "\tat " not in err and "Exception" not in err, err
    deadline = time.monotonic() + 30.0
    while any(map(_alive, jvms)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, jvms)), "the JVM outlived the command"


def test_a_failed_spark_job_ends_with_one_line(trace: Path) -> None:
    """Python workers that cannot start (PYSPARK_PYTHON is a program that exits at once) fail the checks' first
    job: one line names the cause, exit 2; no Java stack, no JVM start banner, no Python traceback."""
    env = {**os.environ, "PYSPARK_PYTHON": "/bin/false", "ROCKETSPEC_PROGRESS": "0"}  # the one line alone
    done = subprocess.run([*ROCKETSPEC, "traces", "check", str(trace), "--engine", "spark"], capture_output=True,
                          text=True, env=env, timeout=WAIT_S)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("rocketspec: error: the Spark check failed: ")
    assert "pyspark.daemon" in lines[0] or "Python worker" in lines[0], lines[0]
