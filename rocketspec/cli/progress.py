"""A progress line now and then during a long command, on stderr.

The checkers report what they have done (``progress(text)``) as often as they like; a :class:`ProgressLine` prints
the latest at most once per ``every_s`` seconds, the first only after ``every_s`` (a short run prints nothing), and
only where someone watches: stderr is a terminal, or ``ROCKETSPEC_PROGRESS=1``. Stdout stays the report alone.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

PROGRESS_ENV = "ROCKETSPEC_PROGRESS"
EVERY_S = 10.0


def watched(stream: TextIO) -> bool:
    """Whether progress lines are wanted on ``stream``: ``ROCKETSPEC_PROGRESS`` 1 or 0 decides, else a terminal."""
    forced = os.environ.get(PROGRESS_ENV)
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressLine:
    """Prints ``rocketspec: <label>: <text>`` at most once per ``every_s`` seconds (callable from any thread)."""

    def __init__(self, label: str, *, every_s: float = EVERY_S, stream: TextIO | None = None,
                 enabled: bool | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.every_s = every_s
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = watched(self.stream) if enabled is None else enabled
        self._clock = clock
        self._next = clock() + every_s
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
        print(f"rocketspec: {self.label}: {text}", file=self.stream, flush=True)


def if_watched(line: ProgressLine) -> ProgressLine | None:
    """The line where someone watches; else nothing, so a checker does no work to report progress (Spark's is a
    thread polling the status tracker)."""
    return line if line.enabled else None
