"""The runtimes and the in-process network: virtual time, idleness, deliveries and faults."""

from __future__ import annotations

import pytest

from rocketspec.refimpl.events import EventLog, FaultInject
from rocketspec.refimpl.faults import FaultRule
from rocketspec.refimpl.remoting import (
    Network,
    RemotingCommand,
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    dispatch,
)
from rocketspec.refimpl.runtime import Future, NotIdle, RealRuntime, RuntimeTimeout, SimulatedRuntime
from rocketspec.spec.protocol import RequestCode, ResponseCode


def test_simulated_timers_run_in_time_order_and_advance_the_clock() -> None:
    rt = SimulatedRuntime(seed=1)
    start = rt.now_ms()
    seen: list[tuple[str, int]] = []
    rt.call_later(30, lambda: seen.append(("b", rt.now_ms() - start)))
    rt.call_later(10, lambda: seen.append(("a", rt.now_ms() - start)))
    rt.call_later(30, lambda: seen.append(("c", rt.now_ms() - start)))
    rt.run_until_idle()
    assert seen == [("a", 10), ("b", 30), ("c", 30)]


def test_cancelled_timer_never_runs_and_does_not_keep_the_runtime_busy() -> None:
    rt = SimulatedRuntime()
    ran = []
    timer = rt.call_later(5, lambda: ran.append(1))
    timer.cancel()
    assert rt.run_until_idle() == 0
    assert ran == []


def test_daemon_timers_do_not_count_as_pending_work() -> None:
    rt = SimulatedRuntime()
    ticks = []
    rt.call_every(1000, lambda: ticks.append(rt.now_ms()))
    assert rt.run_until_idle() == 0
    assert ticks == []
    rt.advance(3500)
    assert len(ticks) == 3


def test_idle_probe_keeps_daemon_housekeeping_running_until_work_is_done() -> None:
    rt = SimulatedRuntime()
    work = {"left": 3}

    def tick() -> None:
        if work["left"]:
            work["left"] -= 1

    rt.call_every(100, tick)
    rt.add_idle_probe(lambda: work["left"] > 0)
    used = rt.run_until_idle()
    assert work["left"] == 0
    assert used == 300


def test_run_until_idle_raises_when_work_never_finishes() -> None:
    rt = SimulatedRuntime()
    rt.call_every(100, lambda: None)
    rt.add_idle_probe(lambda: True)
    with pytest.raises(NotIdle):
        rt.run_until_idle(timeout_ms=1000)


def test_wait_drives_the_loop_and_times_out_in_virtual_time() -> None:
    rt = SimulatedRuntime()
    fut: Future[int] = Future()
    rt.call_later(50, lambda: fut.set_result(7))
    assert rt.wait(fut) == 7
    never: Future[int] = Future()
    rt.call_every(10, lambda: None)
    before = rt.now_ms()
    with pytest.raises(RuntimeTimeout):
        rt.wait(never, timeout_ms=200)
    assert rt.now_ms() - before == 200


def test_same_seed_same_random_stream() -> None:
    a, b = SimulatedRuntime(seed=42), SimulatedRuntime(seed=42)
    assert [a.random.random() for _ in range(5)] == [b.random.random() for _ in range(5)]


def test_run_user_reports_exceptions_as_errors() -> None:
    rt = SimulatedRuntime()
    out = []
    rt.run_user(lambda: 1 / 0, lambda value, error: out.append((value, type(error))))
    assert out == [(None, ZeroDivisionError)]


def test_real_runtime_runs_timers_and_user_code_on_threads() -> None:
    rt = RealRuntime(seed=1)
    try:
        fut: Future[str] = Future()
        rt.call_later(10, lambda: fut.set_result("done"))
        assert rt.wait(fut, timeout_ms=2000) == "done"
        assert rt.submit(lambda: 5) == 5
        got: Future[int] = Future()
        rt.run_user(lambda: 3, lambda value, error: got.set_result(value))
        assert rt.wait(got, timeout_ms=2000) == 3
        rt.run_until_idle(timeout_ms=2000)
    finally:
        rt.close()


# ------------------------------------------------------------------------------------------------------------ network


class EchoServer:
    def __init__(self) -> None:
        self.seen: list[RemotingCommand] = []
        self.closed: list[object] = []
        self.held: list[tuple[RemotingCommand, object]] = []

    def handle(self, request: RemotingCommand, channel: object) -> RemotingCommand | None:
        self.seen.append(request)
        if request.code == RequestCode.PULL_MESSAGE:
            self.held.append((request, channel))
            return None
        return dispatch({RequestCode.SEND_MESSAGE: self._send}, request, channel)

    def _send(self, request: RemotingCommand, channel: object) -> RemotingCommand | None:
        request.require("topic")
        if request.is_oneway:
            return None
        return request.response(fields={"queueOffset": len(self.seen)})

    def channel_closed(self, channel: object) -> None:
        self.closed.append(channel)


def make_net(latency: int = 1) -> tuple[SimulatedRuntime, EventLog, Network, EchoServer]:
    rt = SimulatedRuntime(seed=3)
    events = EventLog(rt.now_ms)
    net = Network(rt, events, latency_ms=latency)
    server = EchoServer()
    net.listen("127.0.0.1:10911", "broker-a", server)
    return rt, events, net, server


def send(topic: str = "T") -> RemotingCommand:
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": topic, "queueId": 1, "batch": False})


def test_request_response_round_trip_takes_two_latencies() -> None:
    rt, _, net, server = make_net(latency=3)
    client = net.client("c1")
    start = rt.now_ms()
    response = rt.wait(client.invoke("127.0.0.1:10911", send(), 1000))
    assert response.code == ResponseCode.SUCCESS and response.is_response
    assert response.ext_fields == {"queueOffset": "1"}
    assert rt.now_ms() - start == 6
    assert server.seen[0].ext_fields == {"topic": "T", "queueId": "1", "batch": "false"}


def test_unknown_code_and_missing_header_get_error_responses() -> None:
    rt, _, net, _ = make_net()
    client = net.client("c1")
    unknown = rt.wait(client.invoke("127.0.0.1:10911", RemotingCommand.request(999), 1000))
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    missing = rt.wait(client.invoke("127.0.0.1:10911", RemotingCommand.request(RequestCode.SEND_MESSAGE), 1000))
    assert missing.code == ResponseCode.SYSTEM_ERROR and "topic" in (missing.remark or "")


def test_connect_to_nothing_fails() -> None:
    rt, _, net, _ = make_net()
    client = net.client("c1")
    with pytest.raises(RemotingConnectError):
        rt.wait(client.invoke("127.0.0.1:1", send(), 1000))


def test_fail_fault_answers_without_processing_and_counts_times() -> None:
    rt, events, net, server = make_net(latency=4)
    rule = net.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_BUSY", times=1)
    client = net.client("c1")
    start = rt.now_ms()
    first = rt.wait(client.invoke("127.0.0.1:10911", send(), 1000))
    assert rt.now_ms() - start == 8  # the failure answers after a round trip, as a broker's would
    assert rule.fired == 1 and not net.faults.armed  # spent after its one time: nothing left to decide
    second = rt.wait(client.invoke("127.0.0.1:10911", send(), 1000))
    assert first.code == ResponseCode.SYSTEM_BUSY
    assert second.code == ResponseCode.SUCCESS
    assert len(server.seen) == 1
    assert [e.action for e in events.of(FaultInject)] == ["fail"]


def test_drop_and_drop_response_lead_to_timeouts_but_only_one_is_processed() -> None:
    rt, _, net, server = make_net()
    client = net.client("c1")
    net.faults.drop("broker-a", "SEND_MESSAGE", times=1)
    with pytest.raises(RemotingTimeoutError):
        rt.wait(client.invoke("127.0.0.1:10911", send(), 100))
    assert server.seen == []
    net.faults.drop("broker-a", "SEND_MESSAGE", times=1, response=True)
    with pytest.raises(RemotingTimeoutError):
        rt.wait(client.invoke("127.0.0.1:10911", send(), 100))
    assert len(server.seen) == 1


def test_duplicate_delivers_twice_and_delay_adds_latency() -> None:
    rt, _, net, server = make_net()
    client = net.client("c1")
    net.faults.duplicate("broker-a", times=1)
    rt.wait(client.invoke("127.0.0.1:10911", send(), 100))
    rt.run_until_idle()
    assert len(server.seen) == 2
    net.faults.delay("broker-a", "SEND_MESSAGE", ms=50, times=1)
    start = rt.now_ms()
    rt.wait(client.invoke("127.0.0.1:10911", send(), 1000))
    assert rt.now_ms() - start == 2 + 100


def test_disconnect_fails_pending_requests_and_tells_the_server() -> None:
    rt, _, net, server = make_net()
    client = net.client("c1")
    held = client.invoke("127.0.0.1:10911", RemotingCommand.request(RequestCode.PULL_MESSAGE), 30_000, daemon=True)
    rt.advance(5)
    assert server.held
    net.faults.disconnect("broker-a", "SEND_MESSAGE", times=1)
    fut = client.invoke("127.0.0.1:10911", send(), 1000)
    with pytest.raises(RemotingSendRequestError):
        rt.wait(fut)
    assert held.done() and isinstance(held.exception(), RemotingSendRequestError)
    assert len(server.closed) == 1


def test_deferred_response_through_the_channel() -> None:
    rt, _, net, server = make_net()
    client = net.client("c1")
    fut = client.invoke("127.0.0.1:10911", RemotingCommand.request(RequestCode.PULL_MESSAGE), 30_000, daemon=True)
    rt.advance(5)
    request, channel = server.held[0]
    rt.call_later(1000, lambda: channel.send_response(request.response(ResponseCode.PULL_NOT_FOUND)))
    assert rt.wait(fut).code == ResponseCode.PULL_NOT_FOUND


def test_server_to_client_requests_reach_the_client_handler() -> None:
    rt, _, net, _server = make_net()

    class Handler:
        def __init__(self) -> None:
            self.got: list[int] = []

        def handle(self, request: RemotingCommand, channel: object) -> RemotingCommand | None:
            self.got.append(request.code)
            return None if request.is_oneway else request.response()

    handler = Handler()
    client = net.client("c1", handler)
    rt.wait(client.invoke("127.0.0.1:10911", send(), 1000))
    server_channel = next(iter(net._connections.values())).server_side
    server_channel.invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, oneway=True))
    answer = server_channel.invoke(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE), 1000)
    assert rt.wait(answer).code == ResponseCode.SUCCESS
    assert handler.got == [RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, RequestCode.CHECK_TRANSACTION_STATE]


def test_fault_rule_validation() -> None:
    with pytest.raises(ValueError):
        FaultRule("explode")
    _rt, _, net, _ = make_net()
    with pytest.raises(ValueError):
        net.faults.fail("broker-a", "NOT_A_CODE")
    with pytest.raises(ValueError):
        net.faults.fail("broker-a", "SEND_MESSAGE", code="NOT_A_RESPONSE")


def test_send_message_fault_covers_the_v2_and_batch_variants() -> None:
    _rt, _, net, _ = make_net()
    rule = net.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_BUSY")
    assert rule.matches("broker-a", RequestCode.SEND_MESSAGE_V2, "c1")
    assert rule.matches("broker-a", RequestCode.SEND_BATCH_MESSAGE, "c1")
    assert not rule.matches("broker-a", RequestCode.PULL_MESSAGE, "c1")
    exact = net.faults.fail("broker-a", "SEND_MESSAGE_V2")
    assert not exact.matches("broker-a", RequestCode.SEND_MESSAGE, "c1")
    assert net.faults.fail("broker-a", 10).matches("broker-a", 10, "c1")
