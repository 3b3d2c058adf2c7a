"""Trace events read off the wire (``traces/wiretap.py``): what ``WireEvents`` writes for which frames, and what not.

Most tests feed hand-made ``WireFrame`` objects (so every case is exact and instant); the last one records a served
reference cluster, whose brokers emit their own events, with ``server_events=True``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_client import WireClient

from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.message import (
    BatchEntry,
    encode_batch,
    encode_properties,
    encode_stored_message,
    offset_message_id,
)
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import BrokerData, QueueData, TopicRouteData
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.spec.protocol import PULL_FLAG_COMMIT_OFFSET, PULL_FLAG_SUBSCRIPTION, RequestCode, ResponseCode
from rocketspec.traces import reading
from rocketspec.traces.invariants import MODE_UNKNOWN, PART_A_SKIPPED, SKIPPED, not_judged_notes
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.schema import check_row
from rocketspec.traces.served import TracedServer
from rocketspec.traces.wiretap import MAX_PENDING_PER_CONNECTION, WireEvents

BROKER_A, BROKER_B = "10.0.0.1:10911", "10.0.0.2:10911"
CLIENT = "10.0.0.9:50000"
KEY = "0A0000090001B2C3D4E5000000000001"


class Wire:
    """Feeds frames to a WireEvents on an EventLog whose clock the test sets."""

    def __init__(self, **options: Any) -> None:
        self.now = 1_000
        self.log = EventLog(lambda: self.now)
        self.events = WireEvents(self.log, **options)
        self.conns = {"broker-a": 1, "broker-b": 2, "namesrv": 3}
        self.addrs = {"broker-a": BROKER_A, "broker-b": BROKER_B, "namesrv": "10.0.0.1:9876"}

    def frame(self, node: str, command: RemotingCommand, *, from_client: bool, conn: int | None = None) -> None:
        self.events(WireFrame(conn or self.conns[node], node, CLIENT, self.addrs[node], from_client, command,
                              self.now))

    def ask(self, node: str, request: RemotingCommand, conn: int | None = None) -> RemotingCommand:
        self.frame(node, request, from_client=True, conn=conn)
        return request

    def answer(self, node: str, request: RemotingCommand, code: int = ResponseCode.SUCCESS,
               fields: dict[str, object] | None = None, body: bytes | None = None, remark: str | None = None,
               conn: int | None = None) -> None:
        self.frame(node, request.response(code, fields, body, remark), from_client=False, conn=conn)

    def rows(self, kind: str | None = None) -> list[dict[str, Any]]:
        out = []
        for event in self.log.events:
            row = {k: (list(v) if isinstance(v, tuple) else v) for k, v in event.fields().items()}
            row["trace_id"] = "t"
            check_row(row)
            if kind is None or row["kind"] == kind:
                out.append(row)
        return out

    def route(self, topic: str = "T", *, slave_a: bool = False) -> None:
        route = TopicRouteData(
            queue_datas=[QueueData("broker-a", 2, 2), QueueData("broker-b", 2, 2)],
            broker_datas=[BrokerData("C", "broker-a", {1 if slave_a else 0: BROKER_A}),
                          BrokerData("C", "broker-b", {0: BROKER_B})])
        request = self.ask("namesrv", RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
        self.answer("namesrv", request, body=route.to_json())


def send(key: str | None = KEY, *, queue_id: int = 0, oneway: bool = False, topic: str = "T",
         extra: dict[str, str] | None = None) -> RemotingCommand:
    props = {"TAGS": "x", **({"UNIQ_KEY": key} if key else {}), **(extra or {})}
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {
        "a": "PG", "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0, "g": 1, "h": 0,
        "i": encode_properties(props)}, b"body", oneway=oneway)


def stored(commit_log_offset: int = 100, queue_offset: int = 0) -> dict[str, object]:
    """The fields of a send answer for a message stored at ``commit_log_offset``."""
    return {"msgId": offset_message_id("10.0.0.1", 10911, commit_log_offset), "queueId": 0,
            "queueOffset": queue_offset}


def pull_request(offset: int = 0, sys_flag: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "CG", "topic": "T", "queueId": 0, "queueOffset": offset, "maxMsgNums": 32,
        "sysFlag": sys_flag, "commitOffset": 5, "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "*",
        "expressionType": "TAG"})


def message_body(commit_log_offset: int, *, reconsume_times: int = 0, properties: dict[str, str] | None = None,
                 topic: str = "T") -> bytes:
    return encode_stored_message(
        topic=topic, queue_id=0, body=b"m", flag=0, properties=properties or {"UNIQ_KEY": KEY},
        sys_flag=0, born_timestamp=1, born_host="10.0.0.9:50000", store_timestamp=2, store_host=BROKER_A,
        reconsume_times=reconsume_times, prepared_transaction_offset=0, queue_offset=0,
        commit_log_offset=commit_log_offset)


def heartbeat(client_id: str = "cid-1", consume_type: object = "CONSUME_PASSIVELY") -> RemotingCommand:
    body = {"clientID": client_id, "producerDataSet": [{"groupName": "PG"}, {"groupName": "CLIENT_INNER_PRODUCER"}],
            "consumerDataSet": [{"groupName": "CG", "consumeType": consume_type}]}
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=json.dumps(body).encode())


# ---------------------------------------------------------------------------------------------------------- sends


def test_sends_without_a_declared_mode_are_written_with_the_mode_unknown() -> None:
    """SYNC and ASYNC look alike on the wire: without ``send_mode`` a send is still written (a request and its
    answer), its mode null; the oneway flag is on the wire and says ONEWAY."""
    wire = Wire()
    wire.answer("broker-a", wire.ask("broker-a", send()), fields=stored())
    (attempt,) = wire.rows("send.attempt")
    (result,) = wire.rows("send.result")
    assert (attempt["mode"], attempt["attempt"], result["status"], result["final"]) == (None, 1, "SEND_OK", True)
    assert [r["msg_id"] for r in wire.rows("store.put")] == [KEY]
    wire.ask("broker-a", send("B" * 32, oneway=True))
    attempt, result = wire.rows("send.attempt")[-1], wire.rows("send.result")[-1]
    assert (attempt["mode"], attempt["attempt"], result["status"], result["final"]) == ("ONEWAY", 1, "ONEWAY", True)
    assert attempt["retry_times"] is None and attempt["timeout_ms"] is None


def test_with_the_mode_unknown_a_result_is_final_only_when_it_is_final_in_both_modes() -> None:
    """SYSTEM_ERROR is retried by a SYNC send and not by an ASYNC one: not final (the retry that follows is attempt
    2); MESSAGE_ILLEGAL ends a send in both modes: final. The budget (SYNC only) does not start a new send; the
    larger limit (3) does. send_retry judges the attempts by the rules that need no mode and says why it judged
    no more."""
    wire = Wire()
    wire.route()
    wire.ask("broker-a", heartbeat())
    wire.answer("broker-a", wire.ask("broker-a", send()), ResponseCode.SYSTEM_ERROR)
    wire.now += 5000  # past SYNC's budget: an ASYNC retry may still come
    wire.answer("broker-a", wire.ask("broker-a", send()), fields=stored())
    wire.answer("broker-a", wire.ask("broker-a", send("C" * 32)), ResponseCode.MESSAGE_ILLEGAL)
    attempts = [(r["msg_id"][:1], r["attempt"], r["mode"]) for r in wire.rows("send.attempt")]
    results = [(r["msg_id"][:1], r["attempt"], r["status"], r["final"]) for r in wire.rows("send.result")]
    assert attempts == [(KEY[:1], 1, None), (KEY[:1], 2, None), ("C", 1, None)]
    assert results == [(KEY[:1], 1, "ERROR", False), (KEY[:1], 2, "SEND_OK", True), ("C", 1, "ERROR", True)]
    result = check_python(wire.rows()).result("send_retry")
    assert (result.judged, result.violations, result.counts.get(MODE_UNKNOWN)) == (3, 0, 2), result.to_json()
    assert not_judged_notes("send_retry", dict(result.counts)) == [
        "send_retry: (c) budget and (d) broker avoidance not judged on 2 send(s): the send mode is not on the wire; "
        "pass --send-mode"]


def test_sync_retries_are_numbered_and_final_follows_the_retry_rules() -> None:
    wire = Wire(send_mode="SYNC")
    wire.route()
    wire.ask("broker-a", heartbeat())
    wire.answer("broker-a", wire.ask("broker-a", send()), ResponseCode.SYSTEM_ERROR)  # retried by SYNC sends
    wire.now += 10
    wire.answer("broker-b", wire.ask("broker-b", send()), fields=stored())
    attempts = [(r["attempt"], r["broker"], r["node"]) for r in wire.rows("send.attempt")]
    results = [(r["attempt"], r["status"], r.get("code"), r["final"]) for r in wire.rows("send.result")]
    assert attempts == [(1, "broker-a", "cid-1"), (2, "broker-b", "cid-1")]
    assert results == [(1, "ERROR", ResponseCode.SYSTEM_ERROR, False), (2, "SEND_OK", None, True)]
    # Sending the same message again after a final result is a new send.
    wire.answer("broker-a", wire.ask("broker-a", send()), ResponseCode.MESSAGE_ILLEGAL)  # not retried: final
    assert wire.rows("send.attempt")[-1]["attempt"] == 1 and wire.rows("send.result")[-1]["final"] is True
    assert check_python(wire.rows()).results  # rows the checker accepts
    assert all(r.violations == 0 for r in check_python(wire.rows()).results)


def test_an_unanswered_attempt_fails_when_the_next_one_comes_and_limits_start_new_sends() -> None:
    wire = Wire(send_mode="SYNC")
    wire.ask("broker-a", send())
    wire.now += 3000  # the client timed out
    wire.answer("broker-b", wire.ask("broker-b", send()), ResponseCode.SYSTEM_BUSY)
    results = [(r["attempt"], r["status"], r.get("error"), r["final"]) for r in wire.rows("send.result")]
    assert results == [(1, "ERROR", "no response before the next attempt", False), (2, "ERROR", None, True)]
    # Past the 3000 ms budget of the first attempt no SYNC retry is possible: a new send.
    wire.now += 1
    wire.ask("broker-a", send())
    assert wire.rows("send.attempt")[-1]["attempt"] == 1
    # Three retried failures: the third is final (attempt limit 3).
    wire.answer("broker-a", wire.ask("broker-a", send("C" * 32)), ResponseCode.SYSTEM_ERROR)
    wire.answer("broker-b", wire.ask("broker-b", send("C" * 32)), ResponseCode.SYSTEM_ERROR)
    wire.answer("broker-a", wire.ask("broker-a", send("C" * 32)), ResponseCode.SYSTEM_ERROR)
    assert [(r["attempt"], r["final"]) for r in wire.rows("send.result") if r["msg_id"] == "C" * 32] == [
        (1, False), (2, False), (3, True)]
    wire.ask("broker-b", send("C" * 32))
    assert wire.rows("send.attempt")[-1]["attempt"] == 1
    assert all(r.violations == 0 for r in check_python(wire.rows()).results)


def test_async_error_responses_are_final_and_closed_connections_fail_attempts() -> None:
    wire = Wire(send_mode="ASYNC")
    wire.answer("broker-a", wire.ask("broker-a", send()), ResponseCode.SYSTEM_ERROR)
    assert wire.rows("send.result")[-1]["final"] is True  # ASYNC never retries an error response
    wire.ask("broker-a", send("D" * 32))
    wire.events.connection_closed(1, wire.now)
    last = wire.rows("send.result")[-1]
    assert (last["status"], last["error"], last["final"]) == ("ERROR", "connection closed before the response",
                                                             False)  # ASYNC retries remoting failures
    wire.answer("broker-a", wire.ask("broker-a", send("D" * 32), conn=7), fields=stored(), conn=7)
    assert [r["attempt"] for r in wire.rows("send.attempt") if r["msg_id"] == "D" * 32] == [1, 2]


def test_batches_name_every_message_and_store_each() -> None:
    wire = Wire(send_mode="SYNC")
    entries = [BatchEntry(0, b"1", {"UNIQ_KEY": "E" * 32, "TAGS": "a"}), BatchEntry(0, b"2", {"UNIQ_KEY": "F" * 32})]
    request = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, {
        "a": "PG", "b": "T", "c": "TBW102", "d": 4, "e": 1, "f": 0, "g": 1, "h": 0, "m": True},
        encode_batch(entries))
    ids = ",".join(str(stored(100 + i)["msgId"]) for i in range(2))
    wire.answer("broker-a", wire.ask("broker-a", request), fields={"msgId": ids, "queueId": 1, "queueOffset": 7})
    assert wire.rows("send.attempt")[0]["msg_id"] == f"{'E' * 32},{'F' * 32}"
    puts = [(r["msg_id"], r["queue_id"], r["offset"], r.get("tags"), r["commit_log_offset"])
            for r in wire.rows("store.put")]
    assert puts == [("E" * 32, 1, 7, "a", 100), ("F" * 32, 1, 8, None, 101)]
    # SEND_MESSAGE with batch "true" is a batch too; the C++ client's batch "1" is not (Boolean.parseBoolean), and
    # the broker stores that body as one message: so does the record.
    for flag, count in (("true", 2), ("1", 1)):
        wire = Wire()
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE, {
            "producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4, "queueId": 0,
            "sysFlag": 0, "bornTimestamp": 1, "flag": 0, "batch": flag, "properties": "WAIT\x01true\x02"},
            encode_batch(entries))
        wire.answer("broker-a", wire.ask("broker-a", request), fields=stored() if count == 1 else {
            "msgId": ids, "queueId": 0, "queueOffset": 0})
        assert len(wire.rows("store.put")) == count


def test_messages_stored_elsewhere_than_the_answer_says_are_not_written() -> None:
    wire = Wire()
    for extra, topic in (({"DELAY": "3"}, "T"), ({}, "%RETRY%CG"), ({"TRAN_MSG": "true", "PGROUP": "PG"}, "T")):
        wire.answer("broker-a", wire.ask("broker-a", send(extra=extra, topic=topic)), fields=stored())
    assert wire.rows("store.put") == []
    (half,) = wire.rows("txn.half")
    assert (half["node"], half["group"], half["msg_id"], half["transaction_id"], half["offset"]) == (
        "broker-a", "PG", KEY, KEY, 0)
    wire.answer("broker-a", wire.ask("broker-a", send(None)), fields=stored(300))
    (put,) = wire.rows("store.put")
    assert put["msg_id"] == stored(300)["msgId"] and put["commit_log_offset"] == 300


# ---------------------------------------------------------------------------------------------------------- pulls


def test_pulls_client_side_always_broker_side_from_a_known_master() -> None:
    wire = Wire()
    wire.route(slave_a=False)
    wire.ask("broker-a", heartbeat())
    request = wire.ask("broker-a", pull_request(3, PULL_FLAG_COMMIT_OFFSET))
    wire.answer("broker-a", request, ResponseCode.PULL_OFFSET_MOVED,
                {"nextBeginOffset": 0, "minOffset": 0, "maxOffset": 0}, remark="NO_MESSAGE_IN_QUEUE")
    wire.answer("broker-a", wire.ask("broker-a", pull_request(0)), ResponseCode.SUCCESS,
                {"nextBeginOffset": 2, "minOffset": 0, "maxOffset": 2},
                body=message_body(10) + message_body(20), remark="FOUND")
    wire.answer("broker-a", wire.ask("broker-a", pull_request(2)), ResponseCode.SUBSCRIPTION_NOT_EXIST,
                remark="the consumer's subscription not exist")
    (first, *_) = wire.rows("pull.request")
    assert (first["node"], first["offset"], first["commit_offset"]) == ("cid-1", 3, 5)
    assert wire.rows("pull.request")[1]["commit_offset"] is None
    answers = [(r["node"], r["status"], r["code"], r.get("count"), r.get("next_offset"))
               for r in wire.rows("pull.response")]
    assert answers == [
        ("cid-1", "OFFSET_ILLEGAL", 21, 0, 0), ("broker-a", "NO_MESSAGE_IN_QUEUE", 21, 0, 0),
        ("cid-1", "FOUND", 0, 2, 2), ("broker-a", "FOUND", 0, 2, 2),
        ("cid-1", "ERROR", ResponseCode.SUBSCRIPTION_NOT_EXIST, 0, None),
    ]
    assert all(r.violations == 0 for r in check_python(wire.rows()).results)
    # A slave's answer, or a broker no route named, is judged by no broker-side row.
    slave = Wire()
    slave.route(slave_a=True)
    slave.answer("broker-a", slave.ask("broker-a", pull_request(0)), ResponseCode.PULL_NOT_FOUND,
                 {"nextBeginOffset": 0, "minOffset": 0, "maxOffset": 0}, remark="OFFSET_OVERFLOW_ONE")
    assert [r["node"] for r in slave.rows("pull.response")] == [CLIENT]


def test_a_closed_connection_fails_its_pulls_and_disconnects_its_client() -> None:
    wire = Wire()
    wire.ask("broker-a", heartbeat())
    wire.ask("broker-b", heartbeat())  # the same client on another connection: started once
    wire.ask("broker-a", pull_request(0))
    wire.events.connection_closed(1)
    wire.events.connection_closed(1)  # twice: nothing more
    error = wire.rows("pull.response")
    assert [(r["node"], r["status"], r["code"]) for r in error] == [("cid-1", "ERROR", None)]
    actions = [(r["group"], r["role"], r["action"]) for r in wire.rows("client.lifecycle")]
    assert actions == [("PG", "producer", "start"), ("CG", "push_consumer", "start"),
                       ("PG", "producer", "disconnect"), ("CG", "push_consumer", "disconnect")]
    wire.ask("broker-b", RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {
        "clientID": "cid-1", "consumerGroup": "CG"}))
    wire.events.connection_closed(2)
    actions = [(r["group"], r["action"]) for r in wire.rows("client.lifecycle")][4:]
    assert actions == [("CG", "shutdown"), ("PG", "disconnect")]


def test_pull_consumers_by_number_and_inner_groups_ignored() -> None:
    wire = Wire()
    wire.ask("broker-a", heartbeat("cid-2", 0))
    assert [(r["group"], r["role"]) for r in wire.rows("client.lifecycle")] == [
        ("PG", "producer"), ("CG", "pull_consumer")]


# ---------------------------------------------------------------------------------------------- offsets, txns, back


def test_offsets_transactions_and_send_backs() -> None:
    wire = Wire()
    wire.ask("broker-a", heartbeat())
    wire.ask("broker-a", RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "CG", "topic": "T", "queueId": 1, "commitOffset": 9}, oneway=True))
    (commit,) = wire.rows("offset.commit")
    assert (commit["node"], commit["broker"], commit["queue_id"], commit["offset"], commit["previous"]) == (
        "broker-a", "broker-a", 1, 9, None)
    wire.ask("broker-a", RemotingCommand.request(RequestCode.END_TRANSACTION, {
        "producerGroup": "PG", "tranStateTableOffset": 0, "commitLogOffset": 5, "msgId": KEY, "transactionId": KEY,
        "commitOrRollback": 8, "fromTransactionCheck": True}, oneway=True))
    (end,) = wire.rows("txn.end")
    assert (end["node"], end["state"], end["from_check"], end["result"]) == ("cid-1", "COMMIT_MESSAGE", True, None)
    check_body = message_body(5, properties={"UNIQ_KEY": KEY, "PGROUP": "PG", "TRANSACTION_CHECK_TIMES": "2"})
    wire.frame("broker-a", RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {
        "msgId": KEY, "transactionId": KEY, "tranStateTableOffset": 0, "commitLogOffset": 5}, check_body,
        oneway=True), from_client=False)
    (check,) = wire.rows("txn.check")
    assert (check["node"], check["group"], check["check_times"], check["action"]) == ("broker-a", "PG", 2, "check")
    # A send back of a message seen in a pull answer: reconsumed 16 times with the header's max 16 -> DLQ.
    wire.answer("broker-a", wire.ask("broker-a", pull_request(0)), ResponseCode.SUCCESS,
                {"nextBeginOffset": 1, "minOffset": 0, "maxOffset": 1},
                body=message_body(40, reconsume_times=16, topic="%RETRY%CG",
                                  properties={"UNIQ_KEY": KEY, "RETRY_TOPIC": "T"}))
    back = wire.ask("broker-a", RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": 40, "group": "CG", "delayLevel": 0, "maxReconsumeTimes": 16}))
    wire.answer("broker-a", back)
    # Where the copy went and its delay are the broker's decision, not answered: the row leaves them unknown rather
    # than computing them with the rule it is checked against.
    (sendback,) = wire.rows("sendback")
    assert (sendback["node"], sendback["topic"], sendback["target"], sendback["delay_level"],
            sendback["reconsume_times"], sendback["via"], sendback["broker"], sendback["max_reconsume_times"]) == (
        "cid-1", "T", None, None, 17, "broker", None, 16)
    # The maximum is on the wire from V3_4_9 (the C++ client's version 63 sends none); a message never seen in a
    # pull answer, or a refused send back, writes nothing.
    for fields, version, code in (({"offset": 40, "group": "CG", "delayLevel": 0, "maxReconsumeTimes": 3}, 63, 0),
                                  ({"offset": 41, "group": "CG", "delayLevel": 0, "maxReconsumeTimes": 3}, 409, 0),
                                  ({"offset": 40, "group": "CG", "delayLevel": 0, "maxReconsumeTimes": 3}, 409, 1)):
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields, version=version)
        wire.answer("broker-a", wire.ask("broker-a", request), code)
    assert [r["max_reconsume_times"] for r in wire.rows("sendback")] == [16, None]
    # The pull answer's message is a derived delivery to the consumer (its listener's result is not on the wire).
    (delivered,) = wire.rows("consume.deliver")
    assert (delivered["node"], delivered["group"], delivered["topic"], delivered["offset"], delivered["msg_id"],
            delivered["reconsume_times"], delivered["derived"]) == ("cid-1", "CG", "T", 0, KEY, 16, "pull_answer")
    assert all(r.violations == 0 for r in check_python(wire.rows()).results)


@pytest.mark.parametrize("commit_first", [True, False])
def test_a_commit_passing_a_received_message_before_its_send_back_is_caught(commit_first: bool) -> None:
    """From the wire alone (OFF-3): the message came in a pull answer (a derived delivery), then its offset was
    committed past it and only then was it sent back: the commit passed a message the client had not consumed."""
    wire = Wire(send_mode="SYNC")
    wire.route()
    wire.ask("broker-a", heartbeat())
    wire.answer("broker-a", wire.ask("broker-a", pull_request(0)), ResponseCode.SUCCESS,
                {"nextBeginOffset": 1, "minOffset": 0, "maxOffset": 1}, body=message_body(40))
    commit = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "CG", "topic": "T", "queueId": 0, "commitOffset": 1}, oneway=True)
    back = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": 40, "group": "CG", "delayLevel": 0, "maxReconsumeTimes": 16})
    if commit_first:
        wire.ask("broker-a", commit)
    wire.answer("broker-a", wire.ask("broker-a", back))
    if not commit_first:
        wire.ask("broker-a", commit)
    result = check_python(wire.rows()).result("offset_not_past_unconsumed")
    assert (result.judged, result.violations) == (1, 1 if commit_first else 0)


def test_server_events_leave_the_broker_side_to_the_servers() -> None:
    wire = Wire(server_events=True, send_mode="SYNC")
    wire.route()
    wire.ask("broker-a", heartbeat())
    wire.answer("broker-a", wire.ask("broker-a", send()), fields=stored())
    wire.answer("broker-a", wire.ask("broker-a", send(extra={"TRAN_MSG": "true"}, key="A" * 32)), fields=stored())
    wire.answer("broker-a", wire.ask("broker-a", pull_request(0)), ResponseCode.PULL_NOT_FOUND,
                {"nextBeginOffset": 1, "minOffset": 0, "maxOffset": 1}, remark="OFFSET_OVERFLOW_ONE")
    wire.ask("broker-a", RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "CG", "topic": "T", "queueId": 1, "commitOffset": 9}, oneway=True))
    wire.frame("broker-a", RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {"msgId": KEY},
                                                   message_body(5, properties={
                                                       "PGROUP": "PG", "TRANSACTION_CHECK_TIMES": "1"}),
                                                   oneway=True), from_client=False)
    kinds = {r["kind"] for r in wire.rows()}
    assert kinds == {"route.update", "client.lifecycle", "send.attempt", "send.result", "pull.request",
                     "pull.response"}
    assert {r["node"] for r in wire.rows("pull.response")} == {"cid-1"}


def test_malformed_frames_write_nothing_and_never_raise() -> None:
    wire = Wire(send_mode="SYNC")
    garbage = [
        RemotingCommand.request(RequestCode.HEART_BEAT, body=b"\xff not json"),
        RemotingCommand.request(RequestCode.HEART_BEAT, body=b"[1, 2]"),
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG"}),
        RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T", "c": "T", "d": "x", "e": 0,
                                                              "f": 0, "g": 0, "h": 0}),
        RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, {"a": "PG", "b": "T", "c": "T", "d": 4, "e": 0,
                                                                 "f": 0, "g": 0, "h": 0}, b"\x00\x00"),
        RemotingCommand.request(RequestCode.PULL_MESSAGE, {"consumerGroup": "CG"}),
        RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG", "queueId": "q"}),
        RemotingCommand.request(RequestCode.END_TRANSACTION, {"producerGroup": "PG", "commitOrRollback": "5"}),
        RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": "x"}),
        RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}),
        RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO),
        RemotingCommand.request(RequestCode.UNREGISTER_CLIENT),
    ]
    for request in garbage:
        wire.answer("broker-a", wire.ask("broker-a", request), body=b"{not: json" if request.code > 100 else None)
    wire.frame("broker-a", RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {}, b"\x00" * 10),
               from_client=False)
    wire.answer("broker-a", wire.ask("broker-a", pull_request()), ResponseCode.SUCCESS,
                {"nextBeginOffset": "x"}, body=b"\x00\x00\x00\x20garbage")
    wire.answer("broker-a", RemotingCommand.request(999), code=12345)  # an answer to nothing
    assert {r["kind"] for r in wire.rows()} == {"pull.request", "pull.response"}
    assert wire.rows("pull.response")[0]["count"] == 0


def test_requests_never_answered_are_bounded() -> None:
    wire = Wire()
    for _ in range(MAX_PENDING_PER_CONNECTION + 10):
        wire.ask("broker-a", pull_request())
    assert wire.events.waiting(1) == MAX_PENDING_PER_CONNECTION


# ------------------------------------------------------------------------------------------ served, recorded once


@pytest.fixture()
def served_trace(tmp_path: Path) -> Iterator[tuple[ServedCluster, Path]]:
    out = tmp_path / "served"
    with TracedServer(out, fmt="jsonl", brokers=1) as served:
        served.create_topic("T", queues=1)
        yield served, out


def test_a_served_trace_is_cut_and_still_shows_an_acknowledged_message_lost(tmp_path: Path) -> None:
    """A served run ends CUT (the server stops, consumers may be behind); no_lost_message still checks its part (a)
    there: every SEND_OK has its store.put. With one put taken out of the trace (a broker that acknowledged and lost
    the message), the check says so, naming the send.result. (The producers' mode is declared, as ``serve
    --send-mode`` does: without it a sync send's answer is not written as a send.result.)"""
    out = tmp_path / "served"
    keys = [f"{'K' * 30}{i:02d}" for i in range(3)]
    with TracedServer(out, fmt="jsonl", send_mode="SYNC", brokers=1) as served:
        served.create_topic("T", queues=1)
        with WireClient(served.broker_addrs["broker-a"]) as broker:
            assert broker.request(heartbeat("cid-s")).code == ResponseCode.SUCCESS
            for key in keys:
                assert broker.request(send(key)).code == ResponseCode.SUCCESS
    result = check_python(out).result("no_lost_message")
    assert result.ok and result.counts.get(SKIPPED) == 1 and PART_A_SKIPPED not in result.counts, result.to_json()
    (trace_file,) = out.glob("*.jsonl")
    lines = trace_file.read_text().splitlines()
    lost = [line for line in lines if json.loads(line)["kind"] == "store.put" and json.loads(line)["msg_id"] == keys[1]]
    assert len(lost) == 1
    trace_file.write_text("\n".join(line for line in lines if line not in lost) + "\n")
    result = check_python(out).result("no_lost_message")
    assert result.violations == 1, result.to_json()
    assert (result.samples[0]["kind"], result.samples[0]["msg_id"]) == ("send.result", keys[1]), result.samples


def test_a_served_cluster_records_client_and_broker_events_once(served_trace: tuple[ServedCluster, Path]) -> None:
    served, out = served_trace
    with WireClient(served.namesrv_addr) as namesrv:
        route = TopicRouteData.from_json(namesrv.request(RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})).body or b"")
    addr = route.broker_datas[0].master_addr()
    assert addr is not None
    with WireClient(addr) as broker:
        assert broker.request(heartbeat("cid-s")).code == ResponseCode.SUCCESS
        assert broker.request(send()).code == ResponseCode.SUCCESS
        assert broker.request(pull_request(0, PULL_FLAG_SUBSCRIPTION)).code == ResponseCode.SUCCESS
        broker.oneway(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": "CG", "topic": "T", "queueId": 0, "commitOffset": 1}))
        assert broker.request(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {
            "consumerGroup": "CG", "topic": "T", "queueId": 0})).field("offset") == "1"
    served.close()
    rows = [row for _, rows in reading.read_traces(out) for row in rows]
    for row in rows:
        check_row(row)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    assert [r["node"] for r in by_kind["offset.commit"]] == ["broker-a"]  # the broker's row only
    assert len(by_kind["store.put"]) == 1
    assert sorted(r["node"] for r in by_kind["pull.response"]) == ["broker-a", "cid-s"]
    assert [r["node"] for r in by_kind["pull.request"]] == ["cid-s"]
    assert {r["action"] for r in by_kind["client.lifecycle"]} == {"start", "disconnect"}
    assert "route.update" in by_kind
    report = check_python(out)
    assert all(r.violations == 0 for r in report.results), [r.to_json() for r in report.results if r.violations]
