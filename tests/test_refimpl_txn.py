"""Transactional messages on the broker: half messages, END_TRANSACTION and the check service."""

from __future__ import annotations

import attrs
import pytest
from broker_services_harness import BrokerHarness

from rocketspec.refimpl.broker.transaction import calculate_op_offset, immunity_time_ms
from rocketspec.refimpl.events import TxnCheck, TxnEnd, TxnHalf
from rocketspec.refimpl.message import decode_stored_message
from rocketspec.refimpl.remoting import RemotingCommand, RemotingTimeoutError
from rocketspec.refimpl.runtime import SIMULATED_EPOCH_MS
from rocketspec.refimpl.store import MessageToStore, PutResult
from rocketspec.spec.protocol import (
    SYSFLAG_TRANSACTION_MASK,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_SYS_GROUP,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    PutMessageStatus,
    RequestCode,
    ResponseCode,
)

TOPIC = "TopicTest"
GROUP = "PG"
INTERVAL = 60_000


@pytest.fixture
def h() -> BrokerHarness:
    harness = BrokerHarness()
    harness.broker.create_topic(TOPIC, 4, 4)
    return harness


@attrs.frozen
class Half:
    response: RemotingCommand
    commit_log_offset: int
    queue_offset: int
    unique_key: str


def send_half(h: BrokerHarness, body: bytes = b"txn", *, queue_id: int = 1, props: dict[str, str] | None = None,
              born_timestamp: int | None = None) -> Half:
    properties = {"TRAN_MSG": "true", "PGROUP": GROUP}
    properties.update(props or {})
    response = h.send(TOPIC, body, queue_id=queue_id, props=properties, born_timestamp=born_timestamp)
    assert response.code == ResponseCode.SUCCESS, response.remark
    half = h.messages(TRANS_HALF_TOPIC)[-1]
    return Half(response, h.commit_log_offset(response), int(response.ext_fields["queueOffset"]),
                half.properties["UNIQ_KEY"])


def end(h: BrokerHarness, half: Half, state: int, *, group: str = GROUP, from_check: bool = False,
        oneway: bool = True, tran_offset: int | None = None, commit_log_offset: int | None = None
        ) -> RemotingCommand | None:
    fields = {
        "producerGroup": group,
        "tranStateTableOffset": half.queue_offset if tran_offset is None else tran_offset,
        "commitLogOffset": half.commit_log_offset if commit_log_offset is None else commit_log_offset,
        "commitOrRollback": state,
        "fromTransactionCheck": from_check,
        "msgId": half.unique_key,
        "transactionId": half.unique_key,
    }
    if oneway:
        h.oneway(RequestCode.END_TRANSACTION, fields)
        return None
    return h.call(RequestCode.END_TRANSACTION, fields)


def checks(h: BrokerHarness) -> list[RemotingCommand]:
    return [r for r in h.received if r.code == RequestCode.CHECK_TRANSACTION_STATE]


def results(h: BrokerHarness) -> list[str | None]:
    return [e.result for e in h.events.of(TxnEnd)]


# ------------------------------------------------------------------------------------------------------ half messages


def test_half_message_is_stored_in_the_half_topic_and_invisible(h: BrokerHarness) -> None:
    half = send_half(h, queue_id=2)
    assert h.broker.store.max_offset(TOPIC, 2) == 0
    [stored] = h.messages(TRANS_HALF_TOPIC, 0)
    assert stored.properties["REAL_TOPIC"] == TOPIC and stored.properties["REAL_QID"] == "2"
    assert stored.properties["TRAN_MSG"] == "true"
    assert stored.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_NOT_TYPE
    assert half.queue_offset == 0 and half.commit_log_offset == stored.commit_log_offset


def test_to_half_message_resets_the_transaction_bits(h: BrokerHarness) -> None:
    msg = MessageToStore(topic=TOPIC, queue_id=3, body=b"x", properties={"TRAN_MSG": "true"}, sys_flag=0x4 | 0x1)
    half = h.broker.transactions.to_half_message(msg)
    assert (half.topic, half.queue_id, half.sys_flag) == (TRANS_HALF_TOPIC, 0, 0x1)
    assert half.properties == {"TRAN_MSG": "true", "REAL_TOPIC": TOPIC, "REAL_QID": "3"}
    assert msg.properties == {"TRAN_MSG": "true"}


def test_after_half_stored_records_the_half_message(h: BrokerHarness) -> None:
    msg = h.broker.transactions.to_half_message(MessageToStore(
        topic=TOPIC, queue_id=1, body=b"x", properties={"TRAN_MSG": "true", "PGROUP": GROUP, "UNIQ_KEY": "U1"}))
    result = h.broker.put_message(msg)
    h.broker.transactions.after_half_stored(msg, result)
    h.broker.transactions.after_half_stored(msg, PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE))
    [event] = h.events.of(TxnHalf)
    assert (event.group, event.topic, event.msg_id, event.transaction_id, event.offset) == (GROUP, TOPIC, "U1",
                                                                                             "U1", 0)


# ------------------------------------------------------------------------------------------------------ END_TRANSACTION


def test_commit_makes_the_message_visible_and_writes_the_op_message(h: BrokerHarness) -> None:
    half = send_half(h, b"commit me", queue_id=1, props={"KEYS": "order-1"})
    end(h, half, TRANSACTION_COMMIT_TYPE)
    [real] = h.messages(TOPIC, 1)
    assert real.body == b"commit me" and real.properties["KEYS"] == "order-1"
    assert real.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_COMMIT_TYPE
    assert real.prepared_transaction_offset == half.commit_log_offset
    # The half's properties as stored, REAL_TOPIC / REAL_QID / TRAN_MSG included (RocketMQ 4.9.8 keeps them).
    assert real.properties["TRAN_MSG"] == "true" and real.properties["REAL_QID"] == "1"
    assert real.msg_id == half.unique_key
    [op] = h.messages(TRANS_OP_HALF_TOPIC, 0)
    assert op.body == b"0" and op.tags == "d" and op.properties["WAIT"] == "true"
    assert results(h) == ["COMMITTED"]
    [event] = h.events.of(TxnEnd)
    assert (event.node, event.group, event.state, event.from_check) == ("broker-a", GROUP, "COMMIT_MESSAGE", False)


def test_rollback_writes_only_the_op_message(h: BrokerHarness) -> None:
    half = send_half(h)
    end(h, half, TRANSACTION_ROLLBACK_TYPE)
    assert h.broker.store.max_offset(TOPIC, 1) == 0
    assert [m.body for m in h.messages(TRANS_OP_HALF_TOPIC, 0)] == [b"0"]
    assert results(h) == ["ROLLED_BACK"]
    h.register_producer(GROUP)
    h.runtime.advance(5 * INTERVAL)
    assert h.broker.store.max_offset(TOPIC, 1) == 0 and not checks(h)
    assert not h.broker.transactions.pending()


def test_unknown_state_does_nothing(h: BrokerHarness) -> None:
    half = send_half(h)
    end(h, half, TRANSACTION_NOT_TYPE)
    end(h, half, TRANSACTION_NOT_TYPE, from_check=True)
    # Even a request that expects an answer gets none (the processor returns null).
    with pytest.raises(RemotingTimeoutError):
        end(h, half, TRANSACTION_NOT_TYPE, oneway=False)
    assert h.broker.store.max_offset(TRANS_OP_HALF_TOPIC, 0) == 0
    assert results(h)[-1] == "IGNORED"
    assert h.broker.transactions.pending()


def test_end_transaction_for_a_missing_half_message(h: BrokerHarness) -> None:
    half = send_half(h)
    response = end(h, half, TRANSACTION_COMMIT_TYPE, oneway=False, commit_log_offset=10_000_000)
    assert response is not None and response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "Find prepared transaction message failed"


@pytest.mark.parametrize(("change", "remark"), [
    ({"group": "OTHER"}, "The producer group wrong"),
    ({"tran_offset": 5}, "The transaction state table offset wrong"),
])
def test_end_transaction_must_match_the_half_message(h: BrokerHarness, change: dict[str, object],
                                                     remark: str) -> None:
    half = send_half(h)
    for state in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        response = end(h, half, state, oneway=False, **change)  # type: ignore[arg-type]
        assert response is not None and response.code == ResponseCode.SYSTEM_ERROR and response.remark == remark
    assert h.broker.store.max_offset(TOPIC, 1) == 0
    assert h.broker.store.max_offset(TRANS_OP_HALF_TOPIC, 0) == 0
    assert results(h) == [f"SYSTEM_ERROR: {remark}"] * 2


def test_commit_of_a_message_that_is_not_a_half_message(h: BrokerHarness) -> None:
    plain = h.send(TOPIC, queue_id=0)
    half = Half(plain, h.commit_log_offset(plain), 0, "U")
    response = end(h, half, TRANSACTION_COMMIT_TYPE, oneway=False)
    assert response is not None and response.code == ResponseCode.SYSTEM_ERROR


def test_oneway_end_transaction_gets_no_answer_but_is_applied(h: BrokerHarness) -> None:
    half = send_half(h)
    request = RemotingCommand.request(RequestCode.END_TRANSACTION, {
        "producerGroup": GROUP, "tranStateTableOffset": half.queue_offset, "commitLogOffset": half.commit_log_offset,
        "commitOrRollback": TRANSACTION_COMMIT_TYPE, "msgId": half.unique_key}, oneway=True)
    assert h.broker.handle(request, None) is None  # type: ignore[arg-type]
    assert len(h.messages(TOPIC, 1)) == 1


def test_bad_commit_or_rollback_value_is_a_header_error(h: BrokerHarness) -> None:
    half = send_half(h)
    response = end(h, half, 3, oneway=False)
    assert response is not None and response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "commitOrRollback field wrong"


def test_slave_refuses_end_transaction() -> None:
    harness = BrokerHarness(broker_id=1)
    half = Half(RemotingCommand(code=0), 0, 0, "U")
    response = end(harness, half, TRANSACTION_COMMIT_TYPE, oneway=False)
    assert response is not None and response.code == ResponseCode.SLAVE_NOT_AVAILABLE
    assert not harness.broker.transactions.started


# ------------------------------------------------------------------------------------------------------ check service


def test_unresolved_half_message_is_checked_with_its_producer(h: BrokerHarness) -> None:
    h.register_producer(GROUP)
    half = send_half(h, b"ask me", queue_id=3, props={"KEYS": "k"})
    h.runtime.advance(INTERVAL - 100)
    assert not checks(h)
    h.runtime.advance(200)
    [check] = checks(h)
    assert check.is_oneway
    fields = check.ext_fields
    assert fields["msgId"] == half.unique_key and fields["transactionId"] == half.unique_key
    # The check refers to the half message put back at the end of the half queue.
    assert fields["tranStateTableOffset"] == "1"
    [_, renewed] = h.messages(TRANS_HALF_TOPIC)
    assert int(fields["commitLogOffset"]) == renewed.commit_log_offset
    assert fields["offsetMsgId"] == renewed.offset_msg_id
    assert renewed.properties["TRANSACTION_CHECK_TIMES"] == "1"
    body, _ = decode_stored_message(check.body)
    assert (body.topic, body.queue_id, body.queue_offset) == (TOPIC, 3, 1)
    assert body.commit_log_offset == renewed.commit_log_offset and body.body == b"ask me"
    assert body.properties["TRANSACTION_CHECK_TIMES"] == "1" and body.properties["KEYS"] == "k"
    assert h.broker.consumer_offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0) == 1
    [event] = h.events.of(TxnCheck)
    assert (event.group, event.msg_id, event.check_times, event.action) == (GROUP, half.unique_key, 1, "check")

    # The producer answers from the check: the renewed half message is committed.
    renewed_half = Half(half.response, renewed.commit_log_offset, 1, half.unique_key)
    end(h, renewed_half, TRANSACTION_COMMIT_TYPE, from_check=True)
    assert [m.body for m in h.messages(TOPIC, 3)] == [b"ask me"]
    assert results(h) == ["COMMITTED"] and h.events.of(TxnEnd)[-1].from_check
    assert not h.broker.transactions.pending()
    h.runtime.advance(INTERVAL)
    assert len(checks(h)) == 1
    assert h.broker.consumer_offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0) == 2
    assert h.broker.consumer_offsets.query(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, 0) == 1


def test_half_topic_is_created_by_the_first_check(h: BrokerHarness) -> None:
    assert h.broker.topics.get(TRANS_HALF_TOPIC) is None
    h.runtime.advance(INTERVAL)
    half_topic = h.broker.topics.get(TRANS_HALF_TOPIC)
    assert half_topic is not None and half_topic.read_queue_nums == 1


def test_check_times_grow_until_the_message_is_discarded() -> None:
    h = BrokerHarness(transaction_check_max=3)
    h.broker.create_topic(TOPIC, 4, 4)
    h.register_producer(GROUP)
    half = send_half(h, b"forgotten")
    h.runtime.run_until_idle()
    events = h.events.of(TxnCheck)
    assert [(e.check_times, e.action) for e in events] == [(1, "check"), (2, "check"), (3, "check"),
                                                            (3, "discard")]
    # The copy put back by the third check already has the maximum count: discarded in the same pass (the count
    # is looked at before the "stored after the pass began" stop).
    assert [e.ts_ms - events[0].ts_ms for e in events] == [0, INTERVAL, 2 * INTERVAL, 2 * INTERVAL]
    assert len(checks(h)) == 3
    [dropped] = h.messages(TRANS_CHECK_MAX_TIME_TOPIC)
    assert dropped.body == b"forgotten" and dropped.properties["TRANSACTION_CHECK_TIMES"] == "3"
    assert h.broker.topics.get(TRANS_CHECK_MAX_TIME_TOPIC) is not None
    assert h.broker.store.max_offset(TOPIC, 1) == 0
    assert events[0].msg_id == half.unique_key
    assert not h.broker.transactions.pending()


def test_young_half_message_waits_for_the_transaction_timeout(h: BrokerHarness) -> None:
    h.register_producer(GROUP)
    send_half(h)
    h.runtime.advance(1_000)
    assert h.broker.transactions.check_now()
    assert not checks(h)
    assert h.broker.consumer_offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0) == -1
    h.runtime.advance(6_000)
    assert h.broker.transactions.check_now()
    h.runtime.advance(5)
    assert len(checks(h)) == 1


def test_check_immunity_time_is_respected(h: BrokerHarness) -> None:
    h.register_producer(GROUP)
    send_half(h, props={"CHECK_IMMUNITY_TIME_IN_SECONDS": "100"})
    h.runtime.advance(INTERVAL + 10)
    # Pass 1 (age 60 s < 100 s): put back once with the first offset recorded, nothing asked.
    assert not checks(h)
    [_, immune] = h.messages(TRANS_HALF_TOPIC)
    assert immune.properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0"
    assert "TRANSACTION_CHECK_TIMES" in immune.properties
    h.runtime.advance(INTERVAL)
    # Pass 2 (age 120 s): checked.
    [check] = checks(h)
    assert check.ext_fields["tranStateTableOffset"] == "2"


def test_immune_copy_of_a_resolved_message_is_still_checked_after_its_immunity_time(h: BrokerHarness) -> None:
    """RocketMQ 4.9.8: the op for the original offset lies behind the walk, so it never reaches the remove map that
    ``checkPrepareQueueOffset`` consults; the copy is put back every pass and checked once it is old enough."""
    h.register_producer(GROUP)
    half = send_half(h, props={"CHECK_IMMUNITY_TIME_IN_SECONDS": "300"})
    born = h.messages(TRANS_HALF_TOPIC)[0].born_timestamp
    h.runtime.advance(INTERVAL + 10)  # pass 1: immune copy at offset 1
    end(h, half, TRANSACTION_ROLLBACK_TYPE)  # the producer answers for the original (offset 0): op "0"
    assert h.broker.transactions.pending()
    h.runtime.advance(5 * INTERVAL)
    [check] = checks(h)
    [event] = h.events.of(TxnCheck)
    assert event.ts_ms - born > 300_000 and event.ts_ms - born - 300_000 <= INTERVAL
    copies = h.messages(TRANS_HALF_TOPIC)
    assert all(m.properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0" for m in copies[1:])
    assert check.ext_fields["tranStateTableOffset"] == str(len(copies) - 1)


def test_message_exactly_at_its_immunity_time_is_checked_a_millisecond_later(h: BrokerHarness) -> None:
    h.register_producer(GROUP)
    first_pass = SIMULATED_EPOCH_MS + INTERVAL  # the broker started at the epoch
    send_half(h, born_timestamp=first_pass - 6_000)
    h.runtime.advance(first_pass - h.runtime.now_ms())
    assert not checks(h)  # the pass waits: Java's thread spins until the message is older than its immunity time
    h.runtime.advance(5)
    [check] = checks(h)
    assert h.events.of(TxnCheck)[0].ts_ms == first_pass + 1
    assert check.ext_fields["tranStateTableOffset"] == "1"


def test_half_message_born_in_the_future_is_checked_at_once(h: BrokerHarness) -> None:
    h.register_producer(GROUP)
    send_half(h, born_timestamp=h.runtime.now_ms() + 3_600_000)
    h.runtime.advance(10)
    assert h.broker.transactions.check_now()
    h.runtime.advance(5)
    assert len(checks(h)) == 1


def test_half_message_past_the_file_reserved_time_is_discarded(h: BrokerHarness) -> None:
    send_half(h, born_timestamp=h.runtime.now_ms() - h.config.file_reserved_ms - 1)
    h.runtime.advance(10)
    h.broker.transactions.check_now()
    assert [e.action for e in h.events.of(TxnCheck)] == ["discard"]
    assert len(h.messages(TRANS_CHECK_MAX_TIME_TOPIC)) == 1


def test_check_without_a_producer_still_counts(h: BrokerHarness) -> None:
    send_half(h)
    h.runtime.advance(INTERVAL + 10)
    assert not checks(h)
    assert [e.check_times for e in h.events.of(TxnCheck)] == [1]


def test_many_resolved_transactions_advance_both_offsets(h: BrokerHarness) -> None:
    halves = [send_half(h, str(i).encode(), queue_id=i % 4) for i in range(40)]
    for i, half in enumerate(halves):
        end(h, half, TRANSACTION_COMMIT_TYPE if i % 2 else TRANSACTION_ROLLBACK_TYPE)
    h.runtime.advance(INTERVAL + 10)
    assert h.broker.consumer_offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0) == 40
    assert h.broker.consumer_offsets.query(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, 0) == 40
    assert sum(len(h.messages(TOPIC, q)) for q in range(4)) == 20
    assert not h.events.of(TxnCheck)


def test_run_until_idle_ends_once_transactions_are_resolved_or_discarded() -> None:
    h = BrokerHarness(transaction_check_max=2)
    h.broker.create_topic(TOPIC, 4, 4)
    send_half(h)
    assert h.broker.transactions.pending()
    used = h.runtime.run_until_idle()
    assert INTERVAL < used <= 2 * INTERVAL
    assert not h.broker.transactions.pending()


def test_op_offset_and_immunity_helpers() -> None:
    assert calculate_op_offset([5, 3, 4, 7], 3) == 6
    assert calculate_op_offset([4], 3) == 3
    assert immunity_time_ms("10", 6_000) == 10_000
    assert immunity_time_ms("-1", 6_000) == 6_000 and immunity_time_ms("x", 6_000) == 6_000
