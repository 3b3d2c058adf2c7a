"""One client process started from the driver command, as the driver contract describes it.

The command is split with :func:`shlex.split` (no shell) and started in its own process group with the case's
``ROCKETSPEC_*`` environment on top of the caller's. A reader thread parses stdout, one JSON object per line, into
events; stderr goes to a file whose tail is quoted when something goes wrong. Stopping sends SIGTERM to the group,
waits :data:`STOP_GRACE_S` and then kills it.

What breaks the contract is a :class:`DriverError` (the case is an error, with a one-line reason): a command that
cannot start, a line on stdout that is not a JSON object, a driver that exits before it should or does not stop. A
driver that cannot play the role answers ``{"event":"unsupported"}`` and exits 3: the case is skipped.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from rocketspec.conformance.model import CaseFailed, CaseSkipped

# The contract: a driver stops within this long of SIGTERM, else it is killed and the case is an error.
STOP_GRACE_S = 10.0
# How long a driver may take to report {"event":"started"} (a JVM and a client start in a few seconds).
START_TIMEOUT_S = 30.0
UNSUPPORTED_EXIT = 3
_TAIL_BYTES = 600

Event = dict[str, Any]


class DriverError(Exception):
    """The driver broke the contract or could not be run; the message is one line."""


class DriverStartError(DriverError):
    """The driver command cannot be started at all (not found, not executable, empty)."""


def split_command(command: str | Sequence[str]) -> list[str]:
    """The command as an argument list (a string is split like a shell would, without running one)."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError as error:
        raise DriverStartError(f"cannot parse the driver command {command!r}: {error}") from None
    if not argv:
        raise DriverStartError("the driver command is empty")
    return argv


def check_command(command: str | Sequence[str]) -> list[str]:
    """The command's argument list, or :class:`DriverStartError` when its program cannot be found or run."""
    argv = split_command(command)
    program = argv[0]
    if os.sep in program:
        if not os.path.isfile(program) or not os.access(program, os.X_OK):
            raise DriverStartError(f"the driver command {program!r} is not an executable file")
    elif shutil.which(program) is None:
        raise DriverStartError(f"the driver command {program!r} is not found on PATH")
    return argv


def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class DriverProcess:
    """A running driver: its events (in arrival order, each with ``"_at"``: seconds since the case began)."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], *, label: str, started_at: float,
                 workdir: Path | None = None) -> None:
        self.argv = list(argv)
        self.label = label
        self.env = dict(env)
        self._t0 = started_at
        self._cond = threading.Condition()
        self.events: list[Event] = []
        self.protocol_error: str | None = None
        self._stderr_file: IO[bytes] = tempfile.TemporaryFile(dir=workdir)
        try:
            self.process = subprocess.Popen(
                self.argv, env={**os.environ, **self.env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=self._stderr_file, start_new_session=True,
            )
        except OSError as error:
            self._stderr_file.close()
            raise DriverStartError(f"cannot start the driver command {self.argv[0]!r}: "
                                   f"{error.strerror or error}") from None
        self._reader = threading.Thread(target=self._read, name=f"driver {label} stdout", daemon=True)
        self._reader.start()
        self.stopped = False

    # ------------------------------------------------------------------------------------------------- reading
    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        for raw in stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self._cond:
                if not isinstance(event, dict) or not isinstance(event.get("event"), str):
                    if self.protocol_error is None:
                        self.protocol_error = f"driver printed a line that is not JSON: {one_line(line, 120)}"
                else:
                    event["_at"] = round(time.monotonic() - self._t0, 3)
                    self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def stderr_tail(self) -> str:
        try:
            self._stderr_file.flush()
            self._stderr_file.seek(0, os.SEEK_END)
            size = self._stderr_file.tell()
            self._stderr_file.seek(max(0, size - _TAIL_BYTES))
            return one_line(self._stderr_file.read().decode("utf-8", "replace"), _TAIL_BYTES)
        except (OSError, ValueError):
            return ""

    def _check_alive(self, what: str) -> None:
        """Raise what the driver's state means for a case still waiting for ``what``."""
        if self.protocol_error is not None:
            raise DriverError(f"{self.label}: {self.protocol_error}")
        code = self.process.poll()
        if code is None:
            return
        self._reader.join(1.0)
        unsupported = next((e for e in self.events if e.get("event") == "unsupported"), None)
        if unsupported is not None:
            reason = one_line(str(unsupported.get("reason") or "no reason given"))
            raise CaseSkipped(f"the client cannot play this case: {reason}")
        if code == UNSUPPORTED_EXIT:
            raise DriverError(f"{self.label} exited with code 3 without an unsupported event")
        tail = self.stderr_tail()
        raise DriverError(f"{self.label} exited with code {code} before {what}" + (f"; stderr: {tail}" if tail else ""))

    def wait_event(self, predicate: Callable[[Event], bool], timeout: float, *, what: str,
                   start: int = 0) -> Event | None:
        """The first event from index ``start`` that satisfies ``predicate`` within ``timeout`` seconds, else None.
        A protocol error, an early exit (unsupported: a skip) raise at once."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events[start:]:
                    if predicate(event):
                        return event
                if self.protocol_error is not None or self.process.poll() is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(min(remaining, 0.2))
        # Outside the lock: the process is gone or broke the contract; its last lines may still be read.
        self._reader.join(1.0)
        with self._cond:
            for event in self.events[start:]:
                if predicate(event):
                    return event
        self._check_alive(what)
        return None

    def wait_started(self, timeout: float) -> None:
        event = self.wait_event(lambda e: e["event"] in ("started", "unsupported"), timeout, what="it started")
        if event is not None and event["event"] == "unsupported":
            self.process.wait(STOP_GRACE_S)
            self._check_alive("it started")
        if event is None:
            raise DriverError(f"{self.label} did not report {{\"event\":\"started\"}} within {timeout:g} s")

    def of(self, name: str) -> list[Event]:
        with self._cond:
            return [e for e in self.events if e["event"] == name]

    def require(self, name: str, count: int, timeout: float, *, what: str) -> list[Event]:
        """Wait for ``count`` events named ``name``; the case fails saying ``what`` when they do not come."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len([e for e in self.events if e["event"] == name]) < count:
                if self.protocol_error is not None or self.process.poll() is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, 0.2))
        got = self.of(name)
        if len(got) < count:
            if self.process.poll() is not None or self.protocol_error is not None:
                self._reader.join(1.0)
                got = self.of(name)
                if len(got) >= count:
                    return got
                if self.process.poll() != 0 or self.protocol_error is not None:
                    self._check_alive(what)
            raise CaseFailed(f"{what} ({count} {name} events) within {timeout:g} s",
                             f"{len(got)} {name} events")
        return got

    # ------------------------------------------------------------------------------------------------ stopping
    def stop(self) -> None:
        """SIGTERM to the process group, then (after :data:`STOP_GRACE_S`) SIGKILL; DriverError if it had to be
        killed or exited with a code other than 0."""
        if self.stopped:
            return
        self.stopped = True
        if self.process.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.kill()
                raise DriverError(f"{self.label} did not exit within {STOP_GRACE_S:g} s of SIGTERM "
                                  "and was killed") from None
        self._reader.join(2.0)
        if self.protocol_error is not None:
            raise DriverError(f"{self.label}: {self.protocol_error}")
        code = self.process.returncode
        if code not in (0, UNSUPPORTED_EXIT):
            tail = self.stderr_tail()
            raise DriverError(f"{self.label} exited with code {code}" + (f"; stderr: {tail}" if tail else ""))

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """Kill the whole process group now (a case stopped at its budget, or cleanup)."""
        self.stopped = True
        if self.process.poll() is None:
            self._signal(signal.SIGKILL)
            try:
                self.process.wait(5.0)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        self.kill()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr_file.close()
