"""The served nodes' runtime on the sockets' loop (``refimpl/wireloop.py``) and the queues' hold (``workqueue.py``).

Rules checked: every callback of a ``WireRuntime`` runs on the wire loop's thread, timers in due order and never
before their time, a cancelled timer never (cancelled before or after it reached the loop), nothing after
``close``; ``run_until_idle`` waits for foreground timers and not for daemon ones; ``submit`` from another thread
returns the result and a blocking wait on the loop is refused, never a deadlock; in a served cluster a request is
handled on the thread that read it; held queues take nothing until released and refuse past capacity meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from rocketspec.conformance import requests
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.limits import ServerLimits
from rocketspec.refimpl.runtime import Future, NotIdle
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.refimpl.wireloop import WireLoop, WireRuntime
from rocketspec.refimpl.workqueue import Work, WorkQueues
from rocketspec.spec.protocol import Executor, ResponseCode


@pytest.fixture
def runtime() -> Iterator[tuple[WireLoop, WireRuntime]]:
    wire = WireLoop("test-wire")
    rt = WireRuntime(wire, seed=1)
    try:
        yield wire, rt
    finally:
        rt.close()
        wire.stop()


def test_timers_run_on_the_wire_thread_in_due_order(runtime: tuple[WireLoop, WireRuntime]) -> None:
    wire, rt = runtime
    seen: list[tuple[str, bool]] = []
    done: Future[None] = Future()
    rt.call_later(60, lambda: (seen.append(("late", wire.in_loop())), done.set_result(None)))
    rt.call_later(20, lambda: seen.append(("early", wire.in_loop())))
    rt.call_soon(lambda: seen.append(("soon", wire.in_loop())))
    rt.wait(done, timeout_ms=5000)
    assert seen == [("soon", True), ("early", True), ("late", True)]


def test_a_timer_never_runs_before_its_time(runtime: tuple[WireLoop, WireRuntime]) -> None:
    # uvloop keeps time in whole milliseconds and rounds delays to them: without the check a timer comes due up to a
    # millisecond early, and a delayed message is delivered a millisecond before its level's delay has passed.
    _, rt = runtime
    early: list[float] = []
    done: Future[None] = Future()
    remaining = [300]

    def arm(delay_ms: int) -> None:
        set_at = time.monotonic()

        def fired() -> None:
            if time.monotonic() - set_at < delay_ms / 1000:
                early.append(time.monotonic() - set_at)
            remaining[0] -= 1
            if remaining[0] == 0:
                done.set_result(None)

        rt.call_later(delay_ms, fired)

    for i in range(remaining[0]):
        rt.call_soon(lambda i=i: arm(1 + i % 3))
    rt.wait(done, timeout_ms=10_000)
    assert early == []


def test_a_cancelled_timer_never_runs(runtime: tuple[WireLoop, WireRuntime]) -> None:
    _, rt = runtime
    ran: list[str] = []
    before = rt.call_later(30, lambda: ran.append("before"))
    before.cancel()  # cancelled off the loop, maybe before it reached the loop

    def on_loop() -> None:
        after = rt.call_later(30, lambda: ran.append("after"))
        rt.call_soon(after.cancel)  # cancelled once it is the loop's timer
        rt.call_soon(lambda: ran.append("soon")).cancel()  # in the loop's ready queue already

    rt.submit(on_loop)
    marker: Future[None] = Future()
    rt.call_later(120, lambda: marker.set_result(None))
    rt.wait(marker, timeout_ms=5000)
    assert ran == []


def test_run_until_idle_waits_for_foreground_timers_not_daemon_ones(runtime: tuple[WireLoop, WireRuntime]) -> None:
    _, rt = runtime
    ran: list[str] = []
    rt.call_later(10 * 60_000, lambda: ran.append("daemon"), daemon=True)
    rt.call_later(100, lambda: ran.append("foreground"))
    rt.run_until_idle(timeout_ms=5000)
    assert ran == ["foreground"]
    pending = rt.call_later(30_000, lambda: None)
    with pytest.raises(NotIdle):
        rt.run_until_idle(timeout_ms=200)
    pending.cancel()
    rt.run_until_idle(timeout_ms=5000)


def test_submit_returns_and_a_blocking_wait_on_the_loop_is_refused(runtime: tuple[WireLoop, WireRuntime]) -> None:
    wire, rt = runtime
    assert rt.submit(lambda: threading.get_ident()) == wire.ident
    never: Future[int] = Future()

    def wait_on_loop() -> str:
        try:
            rt.wait(never, timeout_ms=100)
        except RuntimeError as error:
            return str(error)
        return "waited"

    assert "deadlock" in rt.submit(wait_on_loop)

    async def nothing() -> None:
        return None

    def run_on_loop() -> str:
        try:
            wire.run(nothing())
        except RuntimeError as error:
            return str(error)
        return "ran"

    assert "deadlock" in rt.submit(run_on_loop)


def test_nothing_runs_after_close() -> None:
    wire = WireLoop("test-wire")
    try:
        rt = WireRuntime(wire)
        ran: list[str] = []
        rt.call_later(50, lambda: ran.append("timer"))
        rt.close()
        time.sleep(0.2)
        done = threading.Event()
        wire.call(done.set)
        assert done.wait(5)
        assert ran == []
    finally:
        wire.stop()


def test_a_served_request_is_handled_on_the_thread_that_read_it() -> None:
    threads: list[int] = []

    def observer(frame: WireFrame) -> None:
        threads.append(threading.get_ident())

    with ServedCluster(brokers=1, observer=observer) as served:
        served.create_topic("WireLoopTopic", queues=2)
        client = WireClient(served.namesrv_addr, timeout=10)
        try:
            answer = client.request(requests.route("WireLoopTopic"))
        finally:
            client.close()
        assert answer.code == ResponseCode.SUCCESS
        assert threads and set(threads) == {served.wire.ident}


def test_held_queues_take_nothing_until_released_and_refuse_past_capacity() -> None:
    posted: list[object] = []
    queues = WorkQueues(posted.append, ServerLimits(), clock=lambda: 0.0)
    node = queues.node("broker-a")
    ran: list[int] = []

    def work(i: int) -> Work:
        return Work(run=lambda: ran.append(i), expire=lambda waited, size: ran.append(-i), cost=10,
                    executor=Executor.SEND, source=i)

    queues.hold()
    capacity = ServerLimits().capacity(Executor.SEND)
    assert all(node.offer(work(i)) for i in range(capacity))
    assert not node.offer(work(capacity))  # full while held: refused, as any full queue
    while posted:
        posted.pop(0)()  # the drains scheduled meanwhile take nothing
    assert ran == [] and queues.queued == capacity
    queues.release()
    while posted:
        posted.pop(0)()
    assert ran == list(range(capacity))
    assert queues.queued == 0

