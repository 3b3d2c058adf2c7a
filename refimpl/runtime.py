"""Clocks and event loops the reference implementation runs on.

Every component (name server, broker, client) is single-threaded state touched only by its runtime's loop: timers,
network deliveries and user calls are all callbacks the loop runs one at a time. Two runtimes implement the same
interface:

- ``SimulatedRuntime``: virtual time and one seeded random generator; nothing happens unless the loop is driven
  (``run_until_idle``, ``advance``, or a blocking ``wait``), so a run is a pure function of its seed and inputs.
- ``RealRuntime``: wall-clock time, a loop thread, and a thread pool where user listeners run, so a slow listener
  never stalls the network. A served cluster uses its subclass ``wireloop.WireRuntime``, whose loop is the one that
  serves the sockets.

A *daemon* timer (periodic housekeeping: heartbeats, rebalance, persistence, held pulls) never counts as pending work;
``run_until_idle`` stops when only daemon timers remain and every registered idle probe says there is nothing left.
"""

from __future__ import annotations

import abc
import concurrent.futures
import heapq
import itertools
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Virtual time starts at a fixed, realistic epoch (2024-01-01T00:00:00Z) so timestamps look like real ones.
SIMULATED_EPOCH_MS = 1_704_067_200_000


class RuntimeTimeout(Exception):
    """A blocking wait did not complete in time."""


class NotIdle(Exception):
    """``run_until_idle`` reached its time limit with work still pending."""


class Future(Generic[T]):
    """A result that arrives later, set once, from the loop."""

    __slots__ = ("_callbacks", "_done", "_error", "_event", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []
        self._event: threading.Event | None = None

    def done(self) -> bool:
        return self._done

    def set_result(self, value: T) -> None:
        if not self._done:
            self._value = value
            self._finish()

    def set_exception(self, error: BaseException) -> None:
        if not self._done:
            self._error = error
            self._finish()

    def _finish(self) -> None:
        self._done = True
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def result(self) -> T:
        if not self._done:
            raise RuntimeError("future not done")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def exception(self) -> BaseException | None:
        return self._error

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def _threading_event(self) -> threading.Event:
        if self._event is None:
            self._event = threading.Event()
            if self._done:
                self._event.set()
        return self._event


def when_all(futures: list[Future[Any]], fn: Callable[[], None]) -> None:
    """Call ``fn`` once every future is done (at once when there are none)."""
    remaining = len(futures)
    if remaining == 0:
        fn()
        return

    def one(_f: Future[Any]) -> None:
        nonlocal remaining
        remaining -= 1
        if remaining == 0:
            fn()

    for future in futures:
        future.add_done_callback(one)


class Timer:
    """A scheduled callback; ``cancel`` before it runs and it never will."""

    __slots__ = ("cancelled", "daemon", "due_ms", "fn", "on_cancel", "ran")

    def __init__(self, due_ms: int, fn: Callable[[], Any], daemon: bool) -> None:
        self.due_ms = due_ms
        self.fn = fn
        self.daemon = daemon
        self.cancelled = False
        self.ran = False
        self.on_cancel: Callable[[Timer], None] | None = None

    def cancel(self) -> None:
        if not self.cancelled and not self.ran:
            self.cancelled = True
            if self.on_cancel is not None:
                self.on_cancel(self)


class Runtime(abc.ABC):
    """What components use: the clock, timers, randomness, futures and running user code."""

    simulated: bool
    random: random.Random

    @abc.abstractmethod
    def now_ms(self) -> int:
        ...

    @abc.abstractmethod
    def call_later(self, delay_ms: int, fn: Callable[[], Any], *, daemon: bool = False) -> Timer:
        ...

    def call_soon(self, fn: Callable[[], Any]) -> Timer:
        return self.call_later(0, fn)

    def call_every(self, period_ms: int, fn: Callable[[], Any], *, initial_delay_ms: int | None = None) -> Timer:
        """Run ``fn`` every ``period_ms`` as a daemon task; the returned handle cancels all future runs."""
        handle = Timer(0, fn, True)

        def tick() -> None:
            if handle.cancelled:
                return
            fn()
            if not handle.cancelled:
                self.call_later(period_ms, tick, daemon=True)

        self.call_later(period_ms if initial_delay_ms is None else initial_delay_ms, tick, daemon=True)
        return handle

    @abc.abstractmethod
    def submit(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the loop and return its result; user-facing calls go through here."""
        ...

    @abc.abstractmethod
    def wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        """Block the caller until ``future`` is done (simulated: drive the loop) and return its result."""
        ...

    @abc.abstractmethod
    def run_user(self, fn: Callable[[], T], on_done: Callable[[T | None, BaseException | None], None]) -> None:
        """Run user code (a listener, a transaction executor) and report its result back on the loop."""
        ...

    @abc.abstractmethod
    def add_idle_probe(self, probe: Callable[[], bool]) -> None:
        """``probe()`` returns True while its component has work pending that daemon timers will finish."""
        ...

    @abc.abstractmethod
    def remove_idle_probe(self, probe: Callable[[], bool]) -> None:
        ...

    @abc.abstractmethod
    def run_until_idle(self, timeout_ms: int = 86_400_000) -> int:
        ...

    def close(self) -> None:  # noqa: B027 - optional hook: only the real runtime has threads to stop
        """Release threads and pending work; the simulated runtime holds none."""


class SimulatedRuntime(Runtime):
    """Virtual time, one seeded generator, fully deterministic; driven by whoever waits."""

    simulated = True

    def __init__(self, seed: int = 0, start_ms: int = SIMULATED_EPOCH_MS) -> None:
        self.random = random.Random(seed)
        self._now = start_ms
        self._heap: list[tuple[int, int, Timer]] = []
        self._seq = itertools.count()
        self._foreground = 0  # non-daemon timers neither run nor cancelled
        self._probes: list[Callable[[], bool]] = []
        self.steps = 0

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, fn: Callable[[], Any], *, daemon: bool = False) -> Timer:
        timer = Timer(self._now + max(0, int(delay_ms)), fn, daemon)
        if not daemon:
            self._foreground += 1
            timer.on_cancel = self._forget
        heapq.heappush(self._heap, (timer.due_ms, next(self._seq), timer))
        return timer

    def _forget(self, timer: Timer) -> None:
        self._foreground -= 1

    def _has_foreground(self) -> bool:
        return self._foreground > 0

    def _run_one(self) -> bool:
        while self._heap:
            due, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            if due > self._now:
                self._now = due
            self.steps += 1
            timer.ran = True
            if not timer.daemon:
                self._foreground -= 1
            timer.fn()
            return True
        return False

    def _next_due(self) -> int | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def submit(self, fn: Callable[[], T]) -> T:
        return fn()

    def wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        deadline = None if timeout_ms is None else self._now + timeout_ms
        while not future.done():
            due = self._next_due()
            if due is None:
                raise RuntimeTimeout("nothing left to run and the awaited result never came")
            if deadline is not None and due > deadline:
                self._now = deadline
                raise RuntimeTimeout(f"no result within {timeout_ms} ms of simulated time")
            self._run_one()
        return future.result()

    def run_user(self, fn: Callable[[], T], on_done: Callable[[T | None, BaseException | None], None]) -> None:
        try:
            value = fn()
        except Exception as error:  # a user listener that raises is a failed consumption, not a crash
            on_done(None, error)
        else:
            on_done(value, None)

    def add_idle_probe(self, probe: Callable[[], bool]) -> None:
        self._probes.append(probe)

    def remove_idle_probe(self, probe: Callable[[], bool]) -> None:
        if probe in self._probes:
            self._probes.remove(probe)

    def busy(self) -> bool:
        return self._has_foreground() or any(probe() for probe in list(self._probes))

    def run_until_idle(self, timeout_ms: int = 86_400_000) -> int:
        """Run until only daemon timers remain and no probe reports pending work; return the simulated ms used.

        Raises ``NotIdle`` if work is still pending after ``timeout_ms`` of simulated time.
        """
        start = self._now
        deadline = start + timeout_ms
        while True:
            # Foreground work first, then let housekeeping run while a probe still reports pending work.
            while self._has_foreground():
                due = self._next_due()
                if due is None or due > deadline:
                    break
                self._run_one()
            if not self.busy():
                return self._now - start
            due = self._next_due()
            if due is None or due > deadline:
                raise NotIdle(f"work still pending after {timeout_ms} ms of simulated time")
            self._run_one()

    def advance(self, ms: int) -> None:
        """Run everything due in the next ``ms`` of simulated time, then stop the clock exactly there."""
        deadline = self._now + ms
        while True:
            due = self._next_due()
            if due is None or due > deadline:
                break
            self._run_one()
        self._now = deadline


class RealRuntime(Runtime):
    """Wall-clock time; a loop thread runs every component callback, a pool runs user listeners."""

    simulated = False

    def __init__(self, seed: int | None = None, listener_threads: int = 8) -> None:
        self.random = random.Random(seed)
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._probes: list[Callable[[], bool]] = []
        self._closed = False
        self._executor = concurrent.futures.ThreadPoolExecutor(listener_threads, thread_name_prefix="rocketspec-user")
        self._start_loop()

    def _start_loop(self) -> None:
        """Start the thread that runs every callback."""
        self._thread = threading.Thread(target=self._loop, name="rocketspec-loop", daemon=True)
        self._thread.start()

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def call_later(self, delay_ms: int, fn: Callable[[], Any], *, daemon: bool = False) -> Timer:
        due = time.monotonic() + max(0, delay_ms) / 1000
        timer = Timer(int(due * 1000), fn, daemon)
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._seq), timer))
            self._cond.notify()
        return timer

    def _loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    if self._heap:
                        due, _, timer = self._heap[0]
                        delay = due - time.monotonic()
                        if delay <= 0:
                            heapq.heappop(self._heap)
                            break
                        self._cond.wait(delay)
                    else:
                        self._cond.wait()
            if timer.cancelled:
                continue
            timer.ran = True
            try:
                timer.fn()
            except Exception:  # a bug in one callback must not stop the loop; surface it on stderr
                import traceback

                traceback.print_exc()

    def submit(self, fn: Callable[[], T]) -> T:
        if self.in_loop():
            return fn()
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as error:
                future.set_exception(error)

        self.call_soon(run)
        return self.wait(future)

    def wait(self, future: Future[T], timeout_ms: int | None = None) -> T:
        if self.in_loop() and not future.done():
            raise RuntimeError("a blocking call on the event loop thread would deadlock; use the async API")
        event = future._threading_event()
        if not event.wait(None if timeout_ms is None else timeout_ms / 1000):
            raise RuntimeTimeout(f"no result within {timeout_ms} ms")
        return future.result()

    def run_user(self, fn: Callable[[], T], on_done: Callable[[T | None, BaseException | None], None]) -> None:
        def run() -> None:
            try:
                value = fn()
            except Exception as error:
                failure = error  # the except target is unbound after the block; the callback runs later
                self.call_soon(lambda: on_done(None, failure))
            else:
                self.call_soon(lambda: on_done(value, None))

        self._executor.submit(run)

    def add_idle_probe(self, probe: Callable[[], bool]) -> None:
        self._probes.append(probe)

    def remove_idle_probe(self, probe: Callable[[], bool]) -> None:
        if probe in self._probes:
            self._probes.remove(probe)

    def _busy(self) -> bool:
        now = time.monotonic()
        foreground = any(not t.daemon and not t.cancelled and due <= now + 60 for due, _, t in list(self._heap))
        return foreground or any(probe() for probe in list(self._probes))

    def run_until_idle(self, timeout_ms: int = 60_000) -> int:
        """Poll until nothing is pending (checked twice, 20 ms apart) or raise ``NotIdle`` after ``timeout_ms``."""
        start = time.monotonic()
        quiet = 0
        while True:
            busy = self.submit(self._busy)
            quiet = 0 if busy else quiet + 1
            if quiet >= 2:
                return int((time.monotonic() - start) * 1000)
            if (time.monotonic() - start) * 1000 > timeout_ms:
                raise NotIdle(f"work still pending after {timeout_ms} ms")
            time.sleep(0.02)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        if not self.in_loop():
            self._thread.join(timeout=5)
        self._executor.shutdown(wait=False, cancel_futures=True)
