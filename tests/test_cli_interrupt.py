"""Ctrl-C and SIGTERM end ``rocketspec spec check`` at once: one line, exit 130 / 143, no CrossHair left behind.

The check runs as a real process (in a session of its own, so that its signals are the test's alone); the test waits
until a CrossHair child runs, signals the check and then looks, through /proc, for any process still carrying the
run's marker in its environment (every child and grandchild inherits it, wherever it was re-parented): none may be
left, and no CrossHair process may start after the signal.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("crosshair") is None, reason="CrossHair is not installed"),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc"),
]

MARK = "ROCKETSPEC_TEST_RUN"
#: Bounds that detect a hang, not a speed: a loaded machine stays far inside them.
START_BOUND_S = 60.0
EXIT_BOUND_S = 10.0


def _marked(mark: str) -> dict[int, str]:
    """Every process whose environment carries ``MARK=mark``, with its command line."""
    found: dict[int, str] = {}
    needle = f"{MARK}={mark}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            if needle in environ.split(b"\0"):
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":  # a zombie has ended; its parent reaps it
                    found[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone meanwhile, or not ours
    return found


def _crosshair_children(mark: str, parent: int) -> list[int]:
    return [pid for pid, cmd in _marked(mark).items() if pid != parent and "crosshair" in cmd]


def _interrupt(tmp_path: Path, sig: signal.Signals, explore: bool,
               sigint_ignored: bool = False) -> tuple[int, str, float, dict[int, str], list[int]]:
    """Start a check of two areas, one CrossHair process at a time; signal it once CrossHair runs. The exit status,
    stderr, seconds from the signal to the exit, the marked processes left, and the CrossHair pids seen.

    With ``explore`` the main thread is then walking rebalance (the longest exploration, many seconds); without,
    it waits for CrossHair. With ``sigint_ignored`` the command starts with SIGINT ignored, as a shell starts a
    background job (``rocketspec spec check &``)."""
    mark = uuid.uuid4().hex
    # No progress line: on a loaded machine CrossHair may start late, and stderr must hold the one line alone.
    env = {**os.environ, MARK: mark, "ROCKETSPEC_CACHE_DIR": str(tmp_path / "cache"), "ROCKETSPEC_PROGRESS": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketspec", "spec", "check", "rebalance", "remoting", "--jobs", "1", "--no-cache",
         *([] if explore else ["--no-explore"])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
    )
    try:
        deadline = time.monotonic() + START_BOUND_S
        seen: list[int] = []
        while not seen and time.monotonic() < deadline and proc.poll() is None:
            seen = _crosshair_children(mark, proc.pid)
            time.sleep(0.05)
        assert seen, "no CrossHair process started"
        time.sleep(0.5)  # CrossHair is under way, not just forked
        signalled = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=EXIT_BOUND_S)
        took = time.monotonic() - signalled
        left: dict[int, str] = {}
        for _ in range(40):  # SIGKILL is delivered at once, yet /proc may show the process a moment longer
            left = _marked(mark)
            if not left:
                break
            time.sleep(0.05)
        return proc.returncode, err.decode(), took, left, seen
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in _marked(mark):  # never leave a test's processes behind, whatever failed
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.parametrize(("sig", "status", "explore", "sigint_ignored"),
                         [(signal.SIGINT, 130, True, False), (signal.SIGTERM, 143, False, False),
                          (signal.SIGINT, 130, False, True)])
def test_a_signal_ends_the_check_and_every_crosshair_process(tmp_path: Path, sig: signal.Signals, status: int,
                                                             explore: bool, sigint_ignored: bool) -> None:
    code, err, took, left, seen = _interrupt(tmp_path, sig, explore, sigint_ignored)
    assert code == status, err
    assert err.splitlines() == ["rocketspec: interrupted"], err
    assert "Traceback" not in err
    assert took < EXIT_BOUND_S
    assert not left, f"left behind after {sig.name}: {left} (CrossHair seen: {seen})"
