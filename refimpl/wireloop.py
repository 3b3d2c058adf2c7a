"""The sockets' event loop, and the runtime that runs the served nodes on that same loop.

``WireLoop`` is an asyncio event loop (uvloop's where it is installed) in a daemon thread. ``WireRuntime`` is the
real-clock ``Runtime`` whose timers and calls are that loop's: a served name server and its brokers run on the
thread that reads and writes their sockets, so a request goes from the socket to its handler and its answer back to
the socket without changing threads. Two threads (one for sockets, one for the nodes) would hand every request over
twice through the interpreter lock, and under a flood of garbage connections on the socket thread each hand-over
waits up to a switch interval: the good clients' round trips, not the server's work, would set their rate
(docs/benchmarks.md, reliability). Calls from other threads (a user's ``submit``, a flusher thread's completion, a
listener's result) are posted to the loop in order with one wake-up for many.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

try:
    import uvloop
except ImportError:  # pragma: no cover - the platforms without uvloop wheels (Windows)
    uvloop = None  # type: ignore[assignment]  # the optional-import idiom: None when uvloop is missing

from rocketspec.refimpl.runtime import RealRuntime, Timer

log = logging.getLogger("rocketspec.tcp")

#: Set to ``asyncio`` to serve on asyncio's own loop even where uvloop is installed.
LOOP_ENV = "ROCKETSPEC_ASYNCIO_LOOP"
#: A foreground timer due later than this does not make the runtime busy (``run_until_idle``), as ``RealRuntime``.
_BUSY_HORIZON_MS = 60_000


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (Linux and macOS wheels; the default install pulls it in there), else
    asyncio's. Its accepts, reads, writes and closes are C: under a connection-churning flood of garbage they leave
    the interpreter lock to the clients that speak the protocol (docs/benchmarks.md, reliability)."""
    if uvloop is not None and os.environ.get(LOOP_ENV) != "asyncio":
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class WireLoop:
    """An asyncio event loop running in a daemon thread, for the sockets (and, through ``WireRuntime``, the nodes)."""

    def __init__(self, name: str = "rocketspec-wire") -> None:
        self.loop = new_event_loop()
        # Calls from other threads, run in order by one wake-up of the loop however many there are (each wake-up
        # is a write to the loop's self-pipe: one per call would cost a system call each).
        self._posted: collections.deque[Callable[[], Any]] = collections.deque()
        self._wake_pending = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self.ident = self._thread.ident

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def in_loop(self) -> bool:
        return threading.get_ident() == self.ident

    def run(self, coro: Any, timeout: float | None = 10.0) -> Any:
        """Run a coroutine on the loop from another thread and wait for its result."""
        if self.in_loop():
            coro.close()
            raise RuntimeError("waiting on the wire loop from its own thread would deadlock")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the loop, after every call posted before it (later, also when called on the loop)."""
        self._posted.append(fn)
        if not self._wake_pending:
            self._wake_pending = True
            try:
                if self.in_loop():
                    self.loop.call_soon(self._run_posted)  # no self-pipe write from the loop's own thread
                else:
                    self.loop.call_soon_threadsafe(self._run_posted)
            except RuntimeError:  # the loop is closed: nothing runs there any more
                pass

    def now_or_later(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` at once on the loop's thread, else post it (``call``)."""
        if self.in_loop():
            fn()
        else:
            self.call(fn)

    def _run_posted(self) -> None:
        self._wake_pending = False  # before draining: a call posted from now on wakes the loop again
        posted = self._posted
        while posted:
            try:
                fn = posted.popleft()
            except IndexError:
                break
            try:
                fn()
            except Exception:  # one connection's failure must not stop the others' writes
                log.exception("wire call failed")

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.in_loop():
            self._thread.join(timeout=5)


class WireRuntime(RealRuntime):
    """The wall-clock runtime whose loop is ``wire``'s: timers are the event loop's timers, ``call_soon`` is its
    ready queue, and every component callback runs on the socket thread. User listeners still run in a pool
    (``run_user``), and ``submit``/``wait`` from other threads behave as ``RealRuntime``'s."""

    def __init__(self, wire: WireLoop, seed: int | None = None, listener_threads: int = 8) -> None:
        self._wire = wire
        # Foreground timers neither run nor cancelled, for ``run_until_idle``.
        self._foreground: set[Timer] = set()
        super().__init__(seed, listener_threads)

    def _start_loop(self) -> None:
        """No thread of its own: the wire loop runs everything."""

    def in_loop(self) -> bool:
        return self._wire.in_loop()

    def call_later(self, delay_ms: int, fn: Callable[[], Any], *, daemon: bool = False) -> Timer:
        due = time.monotonic() + max(0, delay_ms) / 1000
        timer = Timer(int(due * 1000), fn, daemon)
        if not daemon:
            self._foreground.add(timer)
            timer.on_cancel = self._forget
        if self._wire.in_loop():
            self._schedule(timer, due)
        else:
            self._wire.call(lambda: self._schedule(timer, due))
        return timer

    def _forget(self, timer: Timer) -> None:
        self._foreground.discard(timer)

    def _schedule(self, timer: Timer, due: float) -> None:
        if timer.cancelled or self._closed:
            return
        loop = self._wire.loop
        delay = due - time.monotonic()
        if delay <= 0:
            loop.call_soon(self._fire, timer, due)
            return
        handle = loop.call_later(delay, self._fire, timer, due)
        forget = self._forget if not timer.daemon else None

        def cancelled(t: Timer) -> None:
            # A long timer cancelled early (a held pull answered, a request's timeout after its answer) leaves the
            # loop's heap now, not when it would have been due.
            if forget is not None:
                forget(t)
            if self._wire.in_loop():
                handle.cancel()
            else:
                self._wire.call(handle.cancel)

        timer.on_cancel = cancelled

    def _fire(self, timer: Timer, due: float) -> None:
        if timer.cancelled or self._closed:
            return
        if time.monotonic() < due:
            # uvloop keeps time in whole milliseconds and rounds delays to them, so a timer can come due up to a
            # millisecond early: a timer never runs before its time (a delay level, a held pull's end).
            self._schedule(timer, due)
            return
        timer.ran = True
        if not timer.daemon:
            self._foreground.discard(timer)
        try:
            timer.fn()
        except Exception:  # a bug in one callback must not stop the loop; surface it on stderr
            traceback.print_exc()

    def _busy(self) -> bool:
        horizon = time.monotonic() * 1000 + _BUSY_HORIZON_MS
        foreground = any(not t.cancelled and t.due_ms <= horizon for t in list(self._foreground))
        return foreground or any(probe() for probe in list(self._probes))

    def close(self) -> None:
        """Stop running callbacks (those still scheduled do nothing); the wire loop itself is its owner's to stop."""
        self._closed = True
        self._foreground.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)


__all__ = ["LOOP_ENV", "WireLoop", "WireRuntime", "new_event_loop"]
