"""Transactions over TCP: a half message, the broker's CHECK_TRANSACTION_STATE to the producer's connection (the
stored message encoded in its body, real topic and queue restored), and END_TRANSACTION from the check (TXN-*)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from wire_client import WireClient

from rocketspec.refimpl.message import decode_stored_message, encode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    RequestCode,
    ResponseCode,
)

GROUP = "TPG"


@pytest.fixture
def served() -> Iterator[ServedCluster]:
    with ServedCluster(transaction_timeout_ms=300, transaction_check_interval_ms=200) as served:
        served.create_topic("Pay", queues=2)
        yield served


def _half(key: str, queue_id: int) -> RemotingCommand:
    props = {"TRAN_MSG": "true", "PGROUP": GROUP, "UNIQ_KEY": key, "WAIT": "true"}
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, {
        "producerGroup": GROUP, "topic": "Pay", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
        "queueId": queue_id, "sysFlag": TRANSACTION_PREPARED_TYPE, "bornTimestamp": int(time.time() * 1000),
        "flag": 0, "properties": encode_properties(props)}, f"body-{key}".encode())


def _producer(served: ServedCluster) -> WireClient:
    client = WireClient(served.broker_addrs["broker-a"])
    heartbeat = {"clientID": "127.0.0.1@tx", "producerDataSet": [{"groupName": GROUP}], "consumerDataSet": []}
    assert client.request(RemotingCommand.request(RequestCode.HEART_BEAT, body=json.dumps(heartbeat).encode())
                          ).code == ResponseCode.SUCCESS
    return client


def _next_check(client: WireClient, timeout: float = 5.0) -> RemotingCommand:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.server_requests:
            return client.server_requests.pop(0)
        try:
            command, _ = client.recv(max(0.05, deadline - time.monotonic()))
        except TimeoutError:
            break
        if not command.is_response:
            client.server_requests.append(command)
    raise AssertionError("no CHECK_TRANSACTION_STATE in time")


def _end(check: RemotingCommand, commit_or_rollback: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.END_TRANSACTION, {
        "producerGroup": GROUP, "tranStateTableOffset": check.require("tranStateTableOffset"),
        "commitLogOffset": check.require("commitLogOffset"), "msgId": check.require("msgId"),
        "transactionId": check.field("transactionId"), "commitOrRollback": commit_or_rollback,
        "fromTransactionCheck": True}, oneway=True)


@pytest.mark.parametrize("decision", [TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE])
def test_the_broker_checks_back_and_the_producers_answer_decides(served: ServedCluster, decision: int) -> None:
    with _producer(served) as producer:
        sent = producer.request(_half("K1", 1))
        assert sent.code == ResponseCode.SUCCESS
        assert served.cluster.messages("Pay") == []  # a half message is not visible

        check = _next_check(producer)
        assert check.code == RequestCode.CHECK_TRANSACTION_STATE and check.is_oneway
        message, _ = decode_stored_message(check.body or b"", 0)
        assert (message.topic, message.queue_id, message.body) == ("Pay", 1, b"body-K1")
        assert message.properties["UNIQ_KEY"] == "K1" == check.field("transactionId")

        producer.oneway(_end(check, decision))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (decision == TRANSACTION_COMMIT_TYPE) != bool(
                served.cluster.messages("Pay")):
            time.sleep(0.05)
        stored = served.cluster.messages("Pay")
        if decision == TRANSACTION_COMMIT_TYPE:
            assert [(m.body, m.queue_id) for m in stored] == [(b"body-K1", 1)]
        else:
            time.sleep(0.5)  # a rollback never becomes visible, however long one waits
            assert served.cluster.messages("Pay") == []


def test_no_producer_connection_means_no_check_and_the_message_waits(served: ServedCluster) -> None:
    with _producer(served) as producer:
        assert producer.request(_half("K2", 0)).code == ResponseCode.SUCCESS
    # The producer's connection closed: the broker has no channel of the group to ask, so nothing resolves it.
    time.sleep(1.0)
    assert served.cluster.messages("Pay") == []
    with _producer(served) as again:
        check = _next_check(again)
        assert check.field("transactionId") == "K2"
