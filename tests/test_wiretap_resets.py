"""Offsets an administrator sets and sends whose mode is not on the wire, as the wire observer records them (issue 29).

- An UPDATE_CONSUMER_OFFSET from a connection not registered as a consumer of the group (HEART_BEAT, until
  UNREGISTER_CLIENT) is not consumer progress: it is an ``offset.reset`` (action update), a disturbance of the group,
  and never judged as a commit; INVOKE_BROKER_TO_RESET_OFFSET's answer gives ``offset.reset`` rows (action reset).
  Served (``TracedServer``), the broker's own commit row of such a request is recorded as the reset.
- A send is recorded without a declared mode (SYNC and ASYNC look alike): its mode null, judged by the send-retry
  rules that need no mode, with the reason for the others in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_wiretap import KEY, Wire, heartbeat, send, stored
from wire_client import WireClient

from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.spec.protocol import RequestCode, ResponseCode
from rocketspec.traces import reading
from rocketspec.traces.invariants import MODE_UNKNOWN
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import format_report
from rocketspec.traces.schema import COMMIT_REQUEST, RESET_ANSWER, RESET_INVOKED, RESET_UPDATE, check_row
from rocketspec.traces.served import TracedServer


def commit(offset: int, group: str = "CG", queue_id: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": group, "topic": "T", "queueId": queue_id, "commitOffset": offset}, oneway=True)


def unregister(client_id: str = "cid-1", group: str = "CG") -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"clientID": client_id, "consumerGroup": group})


def offsets(rows: list[dict[str, Any]], kind: str) -> list[tuple[Any, ...]]:
    return [(r["node"], r["group"], r["queue_id"], r["offset"], r.get("action"), r.get("derived"))
            for r in rows if r["kind"] == kind]


def test_only_a_registered_consumers_commit_is_a_commit() -> None:
    """Registration is the connection's (the broker keeps channels): a commit on a connection that never sent a
    consumer heartbeat of the group, or after it unregistered the group, is an administrator's write."""
    wire = Wire()
    wire.ask("broker-a", commit(5))  # no heartbeat yet
    wire.ask("broker-a", heartbeat())  # cid-1 consumes CG on broker-a's connection
    wire.ask("broker-a", commit(6))
    wire.ask("broker-a", commit(7, group="OTHER"))  # a group it does not consume
    wire.ask("broker-b", commit(3))  # broker-b's connection never registered
    wire.ask("broker-a", unregister())
    wire.ask("broker-a", commit(2))
    rows = wire.rows()
    assert offsets(rows, "offset.commit") == [("broker-a", "CG", 0, 6, None, COMMIT_REQUEST)]
    assert offsets(rows, "offset.reset") == [
        ("broker-a", "CG", 0, 5, RESET_UPDATE, COMMIT_REQUEST),
        ("broker-a", "OTHER", 0, 7, RESET_UPDATE, COMMIT_REQUEST),
        ("broker-b", "CG", 0, 3, RESET_UPDATE, COMMIT_REQUEST),
        ("broker-a", "CG", 0, 2, RESET_UPDATE, COMMIT_REQUEST)]
    report = check_python(rows)
    assert report.ok, format_report(report)
    assert report.result("offset_no_regression").judged == 1  # the one consumer commit; resets are not judged


def test_an_admin_reset_answer_gives_reset_rows_that_excuse_the_consumers_backward_commit() -> None:
    """INVOKE_BROKER_TO_RESET_OFFSET: the broker tells the group's clients the offsets (4.9.8 does not store them);
    the consumer's next commit goes back to them, excused by the reset (cause reset). A refused reset gives none."""
    wire = Wire()
    wire.ask("broker-a", heartbeat())
    wire.ask("broker-a", commit(1))  # after the client's start: the window of the commit back to 2 starts here
    wire.ask("broker-a", commit(9))
    table = (b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:2,'
             b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:4}}')
    reset = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": "T", "group": "CG", "timestamp": 0, "isForce": True})
    wire.answer("broker-a", wire.ask("broker-a", reset, conn=9), body=table, conn=9)
    refused = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {
        "topic": "T", "group": "CG", "timestamp": 0, "isForce": True})
    wire.answer("broker-a", wire.ask("broker-a", refused, conn=9), ResponseCode.CONSUMER_NOT_ONLINE, conn=9)
    wire.ask("broker-a", commit(2))
    rows = wire.rows()
    assert offsets(rows, "offset.reset") == [("broker-a", "CG", 0, 2, RESET_INVOKED, RESET_ANSWER),
                                             ("broker-a", "CG", 1, 4, RESET_INVOKED, RESET_ANSWER)]
    result = check_python(rows).result("offset_no_regression")
    assert (result.judged, result.violations, dict(result.counts)) == (3, 0, {"reset": 1}), result.to_json()


def test_a_served_admin_commit_going_back_is_a_reset_and_the_trace_holds(tmp_path: Path) -> None:
    """Served: the conformance suite's deliberate backward commit (5, then 2, from a connection that is no consumer
    of the group) is stored by the broker and recorded as offset.reset rows, not as commits judged by OFF-8; the
    commit of a registered consumer stays a commit."""
    out = tmp_path / "served"
    with TracedServer(out, fmt="jsonl", brokers=1) as served:
        served.create_topic("T", queues=1)
        with WireClient(served.broker_addrs["broker-a"]) as admin:
            for offset in (5, 2):
                admin.oneway(commit(offset, group="ADMIN_G"))
            answer = admin.request(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": "ADMIN_G", "topic": "T", "queueId": 0}))
            assert answer.field("offset") == "2"  # stored all the same (OFF-8)
        with WireClient(served.broker_addrs["broker-a"]) as consumer:
            assert consumer.request(heartbeat("cid-c")).code == ResponseCode.SUCCESS
            consumer.oneway(commit(1))
            assert consumer.request(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": "CG", "topic": "T", "queueId": 0})).field("offset") == "1"
    rows = [row for _, rows in reading.read_traces(out) for row in rows]
    for row in rows:
        check_row(row)
    resets = [(r["group"], r["offset"], r.get("previous"), r["action"]) for r in rows if r["kind"] == "offset.reset"]
    assert resets == [("ADMIN_G", 5, None, RESET_UPDATE), ("ADMIN_G", 2, 5, RESET_UPDATE)]
    assert [(r["group"], r["offset"]) for r in rows if r["kind"] == "offset.commit"] == [("CG", 1)]
    report = check_python(out)
    assert report.ok, format_report(report)


def test_a_served_send_retried_without_a_declared_mode_is_judged(tmp_path: Path) -> None:
    """A client over TCP sends as a 4.9.8 SYNC producer does: its first attempt fails (SYSTEM_ERROR, an injected
    fault), it retries on the other broker and is stored. ``serve --trace`` without ``--send-mode`` records both
    attempts (mode null, the first result not final: a SYNC producer retries it); send_retry judges them by the
    rules that need no mode and counts the send as mode_unknown; no_lost_message (a) judges the acknowledged send."""
    out = tmp_path / "served"
    with TracedServer(out, fmt="jsonl", brokers=2) as served:
        served.create_topic("T", queues=1)
        served.faults.fail("broker-a", "SEND_MESSAGE_V2", code="SYSTEM_ERROR", times=1)
        with WireClient(served.broker_addrs["broker-a"]) as a, WireClient(served.broker_addrs["broker-b"]) as b:
            assert a.request(heartbeat("cid-p")).code == ResponseCode.SUCCESS
            assert a.request(send()).code == ResponseCode.SYSTEM_ERROR
            assert b.request(heartbeat("cid-p")).code == ResponseCode.SUCCESS
            assert b.request(send()).code == ResponseCode.SUCCESS
    rows = [row for _, rows in reading.read_traces(out) for row in rows]
    attempts = [(r["attempt"], r["broker"], r.get("mode")) for r in rows if r["kind"] == "send.attempt"]
    results = [(r["attempt"], r["status"], r["final"]) for r in rows if r["kind"] == "send.result"]
    assert attempts == [(1, "broker-a", None), (2, "broker-b", None)]
    assert results == [(1, "ERROR", False), (2, "SEND_OK", True)]
    report = check_python(out)
    assert report.ok, format_report(report)
    sends = report.result("send_retry")
    assert (sends.judged, dict(sends.counts)) == (2, {MODE_UNKNOWN: 1}), sends.to_json()
    assert report.result("no_lost_message").judged == 1


def test_traces_check_says_in_one_line_why_the_budget_was_not_judged(tmp_path: Path, capsys: Any) -> None:
    """The command's summary names what could not be judged and why (stderr, next to the engine line)."""
    from rocketspec.cli import main

    wire = Wire()
    wire.answer("broker-a", wire.ask("broker-a", send()), fields=stored())
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in wire.rows()))
    assert main(["traces", "check", str(path), "--engine", "python"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert ("rocketspec: send_retry: (c) budget and (d) broker avoidance not judged on 1 send(s): the send mode is not "
            "on the wire; pass --send-mode") in err
    assert KEY  # the send's id is the module's


def test_arrival_order_decides_a_commit_served_after_its_clients_unregister() -> None:
    """A served broker's executors take requests out of arrival order: a consumer's shutdown persists its offsets,
    then unregisters, and the observer may see the UNREGISTER_CLIENT first. The commit came while the connection
    was registered (its arrival time says so): a commit. One that arrived after the unregister is a reset."""
    wire = Wire(server_events=False)

    def frame(command: RemotingCommand, received_at: float) -> None:
        wire.events(WireFrame(1, "broker-a", "10.0.0.9:50000", "10.0.0.1:10911", True, command, wire.now,
                              received_at))

    frame(heartbeat(), 1.0)
    frame(unregister(), 4.0)
    frame(commit(3), 3.0)  # sent before the unregister, taken after it
    frame(commit(4), 5.0)
    rows = wire.rows()
    assert [r["offset"] for r in rows if r["kind"] == "offset.commit"] == [3]
    assert [r["offset"] for r in rows if r["kind"] == "offset.reset"] == [4]
