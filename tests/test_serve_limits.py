"""Bounded work and connections of ``serve`` (``refimpl/limits.py``, ``workqueue.py``, ``connections.py``).

Rules checked: a request past its executor's queue capacity is answered SYSTEM_BUSY ``[OVERLOAD]`` at once
(NettyRemotingAbstract) and one that waited past its executor's limit ``[TIMEOUT_CLEAN_QUEUE]`` (BrokerFastFailure);
the name server's requests are taken in turn with a flooded broker's, never behind all of them; the requests a
connection sent before it closed still run (not a heartbeat, nor once the broker stopped); a connection is not read
while it has too many requests unanswered, and is read again once they are answered; idle connections and frames
that never complete are closed; connections past ``max_connections`` are refused. Each test holds the queues
(``WorkQueues.hold``) to make them fill deterministically.
"""

from __future__ import annotations

import re
import socket
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from rocketspec.conformance import requests
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.frame import FrameReader, decode, encode
from rocketspec.refimpl.limits import ServerLimits
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.workqueue import DRAIN_BATCH, Lane, Work, executor_of
from rocketspec.spec.protocol import (
    OVERLOAD_REMARK,
    Executor,
    RequestCode,
    ResponseCode,
    split_addr,
)

TOPIC = "LimitsTopic"
UNKNOWN_CODE = 9999
WAIT_S = 10.0


@contextmanager
def held_queues(served: ServedCluster) -> Iterator[None]:
    """No request taken from the queues until the block ends: requests only queue meanwhile (the socket loop still
    reads, writes busy answers and runs timers, as a server whose executors are all busy)."""
    assert served.queues is not None
    served.queues.hold()
    try:
        yield
    finally:
        served.queues.release()


def unknown(code: int = UNKNOWN_CODE) -> RemotingCommand:
    return RemotingCommand.request(code, {})


def route() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_executors_follow_the_broker_processor_table() -> None:
    assert executor_of(RequestCode.SEND_MESSAGE_V2, namesrv=False) is Executor.SEND
    assert executor_of(RequestCode.PULL_MESSAGE, namesrv=False) is Executor.PULL
    assert executor_of(RequestCode.HEART_BEAT, namesrv=False) is Executor.HEARTBEAT
    assert executor_of(UNKNOWN_CODE, namesrv=False) is Executor.ADMIN
    assert executor_of(RequestCode.PULL_MESSAGE, namesrv=True) is Executor.NAMESRV


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_connections"):
        ServerLimits(max_connections=0)
    with pytest.raises(ValueError, match="write_low_water"):
        ServerLimits(write_high_water=10, write_low_water=20)
    with pytest.raises(ValueError, match="limits must be a ServerLimits"):
        ServedCluster(limits={"idle_close_s": 1})  # type: ignore[arg-type]


def test_a_full_queue_answers_system_busy_overload_at_once() -> None:
    limits = ServerLimits(queue_capacity={Executor.ADMIN: 3})
    with ServedCluster(limits=limits) as served, WireClient(served.broker_addrs["broker-a"]) as client:
        requests = [unknown() for _ in range(8)]
        with held_queues(served):
            for request in requests:
                client.send(request)
            # The refusals come from the socket thread while the loop is still held.
            busy = [client.response_to(request.opaque) for request in requests[3:]]
        answered = [client.response_to(request.opaque) for request in requests[:3]]
        assert {(r.code, r.remark) for r in busy} == {(ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)}
        assert {r.code for r in answered} == {ResponseCode.REQUEST_CODE_NOT_SUPPORTED}
        assert served.load()["refused_requests"] == 5


def test_a_send_that_waited_past_200_ms_is_answered_timeout_clean_queue() -> None:
    with ServedCluster() as served, WireClient(served.broker_addrs["broker-a"]) as client:
        served.create_topic(TOPIC, queues=1)
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE, {
            "producerGroup": "PG", "topic": TOPIC, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
            "queueId": 0, "sysFlag": 0, "bornTimestamp": 0, "flag": 0, "properties": "", "reconsumeTimes": 0,
            "unitMode": False, "batch": False}, body=b"late")
        with held_queues(served):
            client.send(request)
            time.sleep(0.3)  # at least the 200 ms of waitTimeMillsInSendQueue; longer only makes it surer
        response = client.response_to(request.opaque)
        assert response.code == ResponseCode.SYSTEM_BUSY
        assert re.fullmatch(r"\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, period in queue: "
                            r"\d+ms, size of queue: 0", response.remark or ""), response.remark
        assert served.load()["expired_requests"] == 1
        assert served._cluster.messages(TOPIC) == []


def test_fast_failure_off_runs_a_request_however_long_it_waited() -> None:
    with ServedCluster(limits=ServerLimits(fast_failure=False)) as served, \
            WireClient(served.namesrv_addr) as client:
        served.create_topic(TOPIC, queues=1)
        request = route()
        with held_queues(served):
            client.send(request)
            time.sleep(0.3)
        assert client.response_to(request.opaque).code == ResponseCode.SUCCESS


def test_the_name_server_is_served_in_turn_with_a_flooded_broker() -> None:
    limits = ServerLimits(max_requests_in_flight=1000)
    with ServedCluster(limits=limits) as served, WireClient(served.broker_addrs["broker-a"]) as flood, \
            WireClient(served.namesrv_addr) as lookup:
        served.create_topic(TOPIC, queues=1)
        order: list[str] = []
        served.add_observer(lambda frame: order.append(frame.node) if not frame.from_client else None)
        flooding = [unknown() for _ in range(500)]
        with held_queues(served):
            for request in flooding:
                flood.send(request)
            assert wait_until(lambda: served.load()["queued_requests"] == 500)
            asked = route()
            lookup.send(asked)
            assert wait_until(lambda: served.load()["queued_requests"] == 501)
        assert lookup.response_to(asked.opaque).code == ResponseCode.SUCCESS
        assert wait_until(lambda: len(order) == 501)
        assert order.index("namesrv") <= 1, "the route lookup waited behind the broker's flood"


def oneway(command: RemotingCommand) -> RemotingCommand:
    return RemotingCommand.request(command.code, command.ext_fields, command.body, oneway=True)


def test_requests_of_a_closed_connection_still_run() -> None:
    """RocketMQ's executors run what a channel had read after it closed: a client that writes oneway sends and an
    offset commit and closes at once (a C++ producer's shutdown) loses none of them; only the answers go nowhere."""
    with ServedCluster() as served:
        served.create_topic(TOPIC, queues=1)
        seen: list[int] = []
        served.add_observer(lambda frame: seen.append(frame.command.code) if frame.from_client else None)
        with held_queues(served):
            with WireClient(served.broker_addrs["broker-a"]) as client:
                for i in range(5):
                    client.send(oneway(requests.send_v2("PG", TOPIC, f"m{i}".encode())))
                client.send(oneway(requests.update_consumer_offset("CG", TOPIC, 0, 3)))
                for _ in range(20):
                    client.send(unknown())
                assert wait_until(lambda: served.load()["queued_requests"] == 26)
            assert wait_until(lambda: served.connections() == 0)
        assert wait_until(lambda: served.load()["queued_requests"] == 0)
        assert wait_until(lambda: len(seen) == 26)
        assert served.cluster is not None
        assert sorted(m.body for m in served.cluster.messages(TOPIC)) == [f"m{i}".encode() for i in range(5)]
        assert list(served.cluster.committed_offsets("CG", TOPIC).values()) == [3]


def test_a_heartbeat_of_a_closed_connection_registers_nobody() -> None:
    """A heartbeat read before its connection closed is not run: it would register a consumer nobody can reach."""
    with ServedCluster() as served:
        served.create_topic(TOPIC, queues=1)
        subscription = requests.subscription_json(TOPIC)
        with held_queues(served):
            with WireClient(served.broker_addrs["broker-a"]) as client:
                # More than one drain batch, so that the close is handled before the last ones are reached.
                for i in range(DRAIN_BATCH + 8):
                    client.send(requests.heartbeat(f"gone@{i}", consumer_groups={"CG": [subscription]}))
                assert wait_until(lambda: served.load()["queued_requests"] == DRAIN_BATCH + 8)
            assert wait_until(lambda: served.connections() == 0)
        assert wait_until(lambda: served.load()["queued_requests"] == 0)
        assert served.cluster is not None
        broker = served.cluster.broker("broker-a")
        assert served.cluster.runtime.submit(lambda: broker.consumers.get("CG")) is None


def test_requests_of_connections_a_stopping_broker_drops_die_with_it() -> None:
    """A broker that stops drops its connections, and their queued requests with them: they never run, not on the
    broker started next in its place either (here the connections are dropped with the broker left running, which
    shows the rule without a race against the restart)."""
    with ServedCluster() as served:
        served.create_topic(TOPIC, queues=1)
        assert served.cluster is not None
        with held_queues(served):
            with WireClient(served.broker_addrs["broker-a"]) as client:
                for i in range(5):
                    client.send(oneway(requests.send_v2("PG", TOPIC, f"m{i}".encode())))
                assert wait_until(lambda: served.load()["queued_requests"] == 5)
                served._endpoints["broker-a"].drop_connections()
                assert wait_until(lambda: served.connections() == 0)
        assert wait_until(lambda: served.load()["queued_requests"] == 0)
        assert served.cluster.messages(TOPIC) == []


def test_a_lane_takes_one_request_per_connection_in_turn_and_keeps_each_connections_order() -> None:
    lane = Lane()
    works = [Work(run=lambda: None, expire=lambda w, s: None, cost=0, executor=Executor.ADMIN, source=source)
             for source in ["a", "a", "a", "b", "a", "c", "b"]]
    for work in works:
        lane.append(work)
    assert len(lane) == 7
    taken = [lane.popleft() for _ in range(7)]
    assert [w.source for w in taken] == ["a", "b", "c", "a", "b", "a", "a"]
    for source in "abc":
        mine = [w for w in works if w.source == source]
        assert [w for w in taken if w.source == source] == mine
    assert len(lane) == 0


def test_a_burst_on_one_connection_delays_another_connections_request_by_one_not_by_the_burst() -> None:
    with ServedCluster() as served:
        order: list[str] = []
        served.add_observer(lambda frame: order.append(frame.command.ext_fields.get("who", "?"))
                            if frame.from_client else None)
        with WireClient(served.broker_addrs["broker-a"]) as burst, \
                WireClient(served.broker_addrs["broker-a"]) as single:
            with held_queues(served):
                for _ in range(100):
                    burst.send(RemotingCommand.request(UNKNOWN_CODE, {"who": "burst"}))
                assert wait_until(lambda: served.load()["queued_requests"] == 100)
                single.send(RemotingCommand.request(UNKNOWN_CODE, {"who": "single"}))
                assert wait_until(lambda: served.load()["queued_requests"] == 101)
            assert wait_until(lambda: len(order) == 101)
        assert order.index("single") == 1


def test_a_connection_is_not_read_past_its_requests_in_flight_and_is_read_again_after() -> None:
    limits = ServerLimits(max_requests_in_flight=4)
    with ServedCluster(limits=limits) as served, WireClient(served.broker_addrs["broker-a"]) as client:
        requests = [unknown() for _ in range(40)]
        with held_queues(served):
            for request in requests:
                client.send(request)
            time.sleep(0.3)  # let the server read what it will
            queued = served.load()["queued_requests"]
        # Frames that arrived in one read are all queued; the next read waits until answers go out.
        assert queued < 40
        assert {client.response_to(r.opaque).code for r in requests} == {ResponseCode.REQUEST_CODE_NOT_SUPPORTED}


def test_idle_connections_are_closed_and_talking_ones_are_not() -> None:
    with ServedCluster(limits=ServerLimits(idle_close_s=1.5)) as served:
        with socket.create_connection(split_addr(served.namesrv_addr)) as idle, \
                WireClient(served.namesrv_addr) as talking:
            idle.settimeout(WAIT_S)
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                talking.request(route())
                time.sleep(0.2)
            assert idle.recv(1) == b""  # closed by the server
            assert talking.request(route()).is_response
            assert served.load()["closed_idle"] >= 1


def test_a_frame_that_never_completes_is_closed_after_the_deadline() -> None:
    with ServedCluster(limits=ServerLimits(frame_deadline_s=1.0, idle_close_s=0)) as served, \
            socket.create_connection(split_addr(served.namesrv_addr)) as slow:
        slow.settimeout(WAIT_S)
        slow.sendall(struct.pack(">i", 1_000_000) + b"\x00" * 100)
        for _ in range(3):  # trickling keeps it from being idle, not from the deadline
            time.sleep(0.5)
            try:
                slow.sendall(b"\x00")
            except OSError:
                break
        assert wait_until(lambda: served.load()["closed_slow"] == 1)
        assert WireClient(served.namesrv_addr).request(route()).is_response


def test_connections_past_the_maximum_are_refused() -> None:
    with ServedCluster(limits=ServerLimits(max_connections=2)) as served:
        addr = split_addr(served.namesrv_addr)
        with WireClient(served.namesrv_addr) as one, WireClient(served.namesrv_addr) as two:
            assert one.request(route()).is_response and two.request(route()).is_response
            with socket.create_connection(addr) as third:
                third.settimeout(WAIT_S)
                third.sendall(encode(route()))
                try:
                    assert third.recv(1) == b""
                except ConnectionResetError:
                    pass
            assert served.load()["refused_connections"] == 1
        assert wait_until(lambda: served.connections() == 0)
        with WireClient(served.namesrv_addr) as again:
            assert again.request(route()).is_response


def test_requests_of_a_client_that_does_not_read_wait_until_it_reads() -> None:
    """A client pipelining pulls without reading makes the server produce answers only up to the write high-water
    mark; the rest wait (parked) and are answered, in order, once it reads."""
    with ServedCluster() as served:
        served.create_topic(TOPIC, queues=1)
        with WireClient(served.broker_addrs["broker-a"]) as producer:
            for _ in range(16):
                assert producer.request(requests.send_v2("PG", TOPIC, b"x" * 4096, queue_id=0)).code == 0
        runs: list[int] = []
        served.add_observer(lambda frame: runs.append(frame.command.opaque) if frame.from_client else None)
        pulls = [requests.pull("NR", TOPIC, 0, 0) for _ in range(200)]
        with socket.socket() as greedy:
            greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            greedy.connect(split_addr(served.broker_addrs["broker-a"]))
            greedy.sendall(b"".join(encode(pull) for pull in pulls))
            time.sleep(1.0)  # time to run them all, were it not for the parking
            assert len(runs) < 40, f"{len(runs)} pulls run for a client that reads nothing"
            with WireClient(served.namesrv_addr) as other:
                assert other.request(route()).is_response
            greedy.settimeout(WAIT_S)
            opaques = []
            reader = FrameReader()
            while len(opaques) < len(pulls):
                data = greedy.recv(1 << 20)
                assert data, "closed before every pull was answered"
                opaques += [decode(frame)[0].opaque for frame in reader.feed(data)]
        assert opaques == [pull.opaque for pull in pulls]
