"""A progress line now and then during a long command, on stderr.

The checkers report what they have done (``progress(text)``) as often as they like (``spec check`` at least once a
second, Spark's watcher once a second); a :class:`ProgressLine` prints the latest with the time elapsed, at most once
per interval, the first only after one interval (a short run prints nothing):

- on a terminal, the live line: every :data:`EVERY_S` seconds;
- otherwise (stderr redirected to a file or a pipe, a CI log), a plain line every :data:`PLAIN_EVERY_S` seconds, so
  that a log shows within half a minute that a long command is alive and how far it is.

``ROCKETSPEC_PROGRESS=0`` silences it, ``ROCKETSPEC_PROGRESS=1`` prints it at the terminal's pace wherever stderr
goes. Stdout stays the report alone.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

PROGRESS_ENV = "ROCKETSPEC_PROGRESS"
#: Seconds between two progress lines on a terminal.
EVERY_S = 10.0
#: Seconds between two progress lines when stderr is not a terminal (below the 30 s a log reader waits at most).
PLAIN_EVERY_S = 20.0


def watched(stream: TextIO) -> bool:
    """Whether ``stream`` is watched live: ``ROCKETSPEC_PROGRESS`` 1 or 0 decides, else whether it is a terminal."""
    forced = os.environ.get(PROGRESS_ENV)
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def silenced() -> bool:
    """Whether progress lines are switched off (``ROCKETSPEC_PROGRESS=0``)."""
    return os.environ.get(PROGRESS_ENV) == "0"


def elapsed(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: how long a command has run."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class ProgressLine:
    """Prints ``rocketspec: <label>: <text> (<elapsed>)`` at most once per interval (callable from any thread).

    ``every_s`` defaults to :data:`EVERY_S` where the stream is watched live and :data:`PLAIN_EVERY_S` elsewhere;
    ``enabled`` defaults to on unless ``ROCKETSPEC_PROGRESS=0``.
    """

    def __init__(self, label: str, *, every_s: float | None = None, stream: TextIO | None = None,
                 enabled: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.live = watched(self.stream)
        self.every_s = every_s if every_s is not None else (EVERY_S if self.live else PLAIN_EVERY_S)
        self.enabled = not silenced() if enabled is None else enabled
        self._clock = clock
        self._started = clock()
        self._next = self._started + self.every_s
        self._lock = threading.Lock()
        self.printed = 0

    def __call__(self, text: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            now = self._clock()
            if now < self._next:
                return
            self._next = now + self.every_s
            self.printed += 1
        print(f"rocketspec: {self.label}: {text} ({elapsed(now - self._started)})", file=self.stream, flush=True)


def if_watched(line: ProgressLine) -> ProgressLine | None:
    """The line unless progress is silenced; else nothing, so a checker does no work to report progress (Spark's is
    a thread polling the status tracker)."""
    return line if line.enabled else None
