"""Broker conformance cases: transactional messages (half messages, END_TRANSACTION, the check-back).

A send with TRAN_MSG=true, PGROUP and sysFlag PREPARED is a half message: stored in RMQ_SYS_TRANS_HALF_TOPIC and
invisible in its topic (TXN-1..3). END_TRANSACTION COMMIT stores the real message, ROLLBACK nothing, a mismatching
request answers SYSTEM_ERROR and an UNKNOW one is not answered (TXN-6..11). A half message nobody resolved is checked:
CHECK_TRANSACTION_STATE goes to a connection that registered the producer group (HEART_BEAT), once per check pass
after transactionTimeOut, at most transactionCheckMax times, then the message is discarded to
TRANS_CHECK_MAX_TIME_TOPIC (TXN-12..23). Timer cases read transactionTimeOut, transactionCheckInterval and
transactionCheckMax over the wire, wait bounded multiples of them, and are skipped when that would not fit the case's
time budget (a target with the 60 s default interval).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import (
    DISPATCH_WAIT_S,
    FAR_COMMIT_LOG_OFFSET,
    max_offset,
    new_client_id,
    producer_properties,
    pull_from,
    stored,
    unique_key,
    view,
    wait_keyed,
    wait_message,
)
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import MessageExt, decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import (
    SYSFLAG_TRANSACTION_MASK,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_OP_REMOVE_TAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
    RequestCode,
    ResponseCode,
)

cases = CaseList("broker/transaction")
CASES = cases.cases

# Slack added to every wait on the check service (a pass walks every producer's half messages of the broker).
CHECK_SLACK_S = 3.0
# Slack added to a wait that must see nothing (a check that should not come).
ABSENCE_SLACK_S = 1.0
# How long an END_TRANSACTION that gets no answer is waited for.
NO_ANSWER_WAIT_S = 1.0
# How many commit-log messages the op-message case walks past its marker before giving up.
COMMIT_LOG_WALK_LIMIT = 200


@attrs.frozen
class Half:
    """A half message as its send answered: UNIQ_KEY, offset message id, half queue offset, commit-log offset."""

    key: str
    msg_id: str
    queue_offset: int

    @property
    def commit_log_offset(self) -> int:
        return int(self.msg_id[-16:], 16)


def send_half(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int, group: str,
              body: bytes = b"half") -> Half:
    """Send a half message as a 4.9.8 transactional producer does (TRAN_MSG=true, PGROUP, sysFlag PREPARED)."""
    key = unique_key()
    props = producer_properties(key, extra={Property.TRANSACTION_PREPARED: "true", Property.PRODUCER_GROUP: group})
    answer = client.request(requests.send_v2(group, topic, body, queue_id, props,
                                             sys_flag=TRANSACTION_PREPARED_TYPE))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"the half message's SEND_MESSAGE_V2 to {topic}:{queue_id}")
    return Half(key, answer.require("msgId"), int(answer.require("queueOffset")))


def end(client: WireClient, group: str, half: Half, state: int, *, from_check: bool = False,
        queue_offset: int | None = None, commit_log_offset: int | None = None,
        timeout: float | None = None) -> RemotingCommand:
    """END_TRANSACTION for ``half`` sent as a request (producers send it oneway; the answer is what is judged)."""
    return client.request(requests.end_transaction(
        group, half.commit_log_offset if commit_log_offset is None else commit_log_offset,
        half.queue_offset if queue_offset is None else queue_offset, half.msg_id, half.key, state,
        from_check=from_check), timeout=timeout)


def producer_connection(ctx: BrokerContext, group: str) -> WireClient:
    """A connection to the first master registered (HEART_BEAT) as a producer of ``group``."""
    client = ctx.broker(0)
    answer = client.request(requests.heartbeat(new_client_id(ctx, "producer"), producer_groups=[group]))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT with producer group {group}")
    return client


def txn_settings(ctx: BrokerContext) -> tuple[float, float, int]:
    """(transactionTimeOut s, transactionCheckInterval s, transactionCheckMax) of the first master."""
    return (ctx.setting_int("transactionTimeOut") / 1000, ctx.setting_int("transactionCheckInterval") / 1000,
            ctx.setting_int("transactionCheckMax"))


def check_wait_s(ctx: BrokerContext, passes: int = 1) -> float:
    """How long the ``passes``-th check of a fresh half message may take: the timeout, one interval per pass plus
    one, and a slack; the case is skipped when that does not fit its time budget."""
    timeout_s, interval_s, _ = txn_settings(ctx)
    needed = timeout_s + (passes + 1) * interval_s + CHECK_SLACK_S
    if needed > ctx.remaining():
        ctx.skip(f"waiting for {passes} transaction check pass(es) takes up to {needed:g} s with "
                 f"transactionTimeOut={timeout_s * 1000:g} ms and transactionCheckInterval={interval_s * 1000:g} ms, "
                 f"more than the {ctx.remaining():.0f} s left of the case's budget (--timeout)")
    return needed


def no_check_wait_s(ctx: BrokerContext) -> float:
    """How long a case listens for a check that must not come: the timeout, two intervals and a slack."""
    timeout_s, interval_s, _ = txn_settings(ctx)
    return timeout_s + 2 * interval_s + ABSENCE_SLACK_S


def wait_check(ctx: BrokerContext, client: WireClient, half: Half, timeout: float, *, what: str) -> RemotingCommand:
    """The next CHECK_TRANSACTION_STATE for ``half`` on ``client`` within ``timeout`` s (the case fails otherwise)."""
    check = next_check(client, half, timeout)
    ctx.expect(check is not None, f"{what} within {timeout:g} s", "no CHECK_TRANSACTION_STATE came")
    assert check is not None
    return check


def next_check(client: WireClient, half: Half, timeout: float) -> RemotingCommand | None:
    """The next CHECK_TRANSACTION_STATE naming ``half`` (msgId or transactionId = its UNIQ_KEY) within ``timeout``
    s, or None."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        check = client.wait_request(RequestCode.CHECK_TRANSACTION_STATE, remaining)
        if check is None:
            return None
        if half.key in (check.field("msgId"), check.field("transactionId")):
            return check


def checked_message(ctx: BrokerContext, check: RemotingCommand) -> MessageExt:
    """The message in a CHECK_TRANSACTION_STATE body."""
    found = decode_stored_messages(check.body or b"", ctx.brokers[0].name)
    ctx.expect(len(found) == 1, "one message in the CHECK_TRANSACTION_STATE body", f"{len(found)} messages")
    return found[0]


def visible(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int,
            key: str) -> list[MessageExt]:
    """The messages of ``topic``:``queue_id`` carrying UNIQ_KEY ``key``."""
    return [m for m in pull_from(ctx, client, group, topic, queue_id) if m.unique_key == key]


def barrier(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int) -> None:
    """Send a plain message to the queue and wait until it can be pulled: anything stored before it is in the
    consume queue by then (the store dispatches in commit-log order)."""
    key = unique_key()
    ctx.send(client, topic, b"barrier", queue_id, properties=producer_properties(key))
    wait_keyed(ctx, client, group, topic, queue_id, key, what=f"a plain message in {topic}:{queue_id}")


def committed(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int, half: Half) -> MessageExt:
    """The message ``half`` committed to ``topic``:``queue_id``, waited for."""
    return wait_keyed(ctx, client, group, topic, queue_id, half.key,
                      what=f"the committed message in {topic}:{queue_id}")


class Pending(NamedTuple):
    """A half message just sent to a new topic of the first master, with what a case resolves or watches it by:
    the connection that sent it, the topic, its producer group, and a consumer group to read the topic with."""

    client: WireClient
    topic: str
    pgroup: str
    group: str
    half: Half


def pending(ctx: BrokerContext, *, queues: int = 1, queue_id: int = 0, producer: bool = False,
            body: bytes = b"half") -> Pending:
    """Send a half message to queue ``queue_id`` of a new topic; with ``producer`` the sending connection is
    registered as a producer of its group first (so that it gets the checks)."""
    topic = ctx.topic(queues, brokers=[0])
    pgroup = ctx.name("pgroup")
    group = ctx.group()
    client = producer_connection(ctx, pgroup) if producer else ctx.broker(0)
    return Pending(client, topic, pgroup, group, send_half(ctx, client, topic, queue_id, pgroup, body))


def answer_check(client: WireClient, group: str, half: Half, check: RemotingCommand, state: int) -> RemotingCommand:
    """END_TRANSACTION ``state`` answering ``check`` as a producer does: fromTransactionCheck, the check's offsets."""
    checked = Half(half.key, check.field("offsetMsgId") or half.msg_id, int(check.field("tranStateTableOffset") or -1))
    return end(client, group, checked, state, from_check=True,
               commit_log_offset=int(check.field("commitLogOffset") or -1))


def expect_invisible(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int, half: Half,
                     when: str) -> None:
    barrier(ctx, client, group, topic, queue_id)
    found = visible(ctx, client, group, topic, queue_id, half.key)
    ctx.expect(not found, f"no message {half.key} in {topic}:{queue_id} {when}",
               f"{len(found)} at offsets {[m.queue_offset for m in found]}")


# -------------------------------------------------------------------------------------------------------- cases
@cases.case("half-stored-in-half-topic", clauses=("TXN-1", "TXN-2"),
            requirement="a half message is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC/REAL_QID and "
                        "its transaction bits reset")
def half_stored_in_half_topic(ctx: BrokerContext) -> None:
    """TXN-1/2: TRAN_MSG=true makes a send a half message, stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0, REAL_TOPIC /
    REAL_QID = the send's topic and queue, transaction bits NOT_TYPE; PGROUP kept."""
    topic = ctx.topic(2, brokers=[0])
    group = ctx.name("pgroup")
    client = ctx.broker(0)
    half = send_half(ctx, client, topic, 1, group)
    message = stored(ctx, client, half.commit_log_offset, f"the half message {half.msg_id}")
    ctx.expect_equal((message.topic, message.queue_id, message.queue_offset), (TRANS_HALF_TOPIC, 0, half.queue_offset),
                     "the half message's (topic, queueId, queueOffset)")
    ctx.expect_equal((message.get_property(Property.REAL_TOPIC), message.get_property(Property.REAL_QUEUE_ID),
                      message.get_property(Property.PRODUCER_GROUP)), (topic, "1", group),
                     "the half message's (REAL_TOPIC, REAL_QID, PGROUP)")
    ctx.expect_equal(message.sys_flag & SYSFLAG_TRANSACTION_MASK, TRANSACTION_NOT_TYPE,
                     "the half message's transaction bits")


@cases.case("tran-msg-parsed-as-boolean", clauses=("TXN-1",),
            requirement="TRAN_MSG makes a half message when it reads as true in any case (sysFlag aside); any other "
                        "value is an ordinary send")
def tran_msg_parsed_as_boolean(ctx: BrokerContext) -> None:
    """TXN-1: Boolean.parseBoolean(TRAN_MSG): "TRUE" (even with sysFlag 0) -> RMQ_SYS_TRANS_HALF_TOPIC; "yes" -> the
    topic itself."""
    topic = ctx.topic(1, brokers=[0])
    pgroup = ctx.name("pgroup")
    client = ctx.broker(0)
    for value, stored_in in (("TRUE", TRANS_HALF_TOPIC), ("yes", topic)):
        props = producer_properties(unique_key(), extra={Property.TRANSACTION_PREPARED: value,
                                                         Property.PRODUCER_GROUP: pgroup})
        sent = ctx.send(client, topic, b"maybe half", 0, properties=props)
        stored = view(ctx, client, sent.commit_log_offset)
        ctx.expect_equal(stored.topic if stored else None, stored_in, f"the topic a send with TRAN_MSG={value} "
                                                                       "is stored in")


@cases.case("half-invisible", clauses=("TXN-3", "TXN-22"),
            requirement="a half message takes no place in its topic's queue: consumers never see it")
def half_invisible(ctx: BrokerContext) -> None:
    """TXN-3/22: the half message gets no consume-queue entry in its topic: a plain message sent after it is at
    queue offset 0 and is the only one pulled."""
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    client = ctx.broker(0)
    half = send_half(ctx, client, topic, 0, ctx.name("pgroup"))
    expect_invisible(ctx, client, group, topic, 0, half, "after the half send")
    ctx.expect_equal(max_offset(client, topic, 0), 1, f"max offset of {topic}:0 (the plain message only)")


@cases.case("commit-visible", clauses=("TXN-7", "TXN-8", "TXN-22"),
            requirement="END_TRANSACTION COMMIT answers SUCCESS and stores the message in its real topic and queue")
def commit_visible(ctx: BrokerContext) -> None:
    """TXN-8: COMMIT stores the real message in REAL_TOPIC / REAL_QID with the transaction bits COMMIT and
    preparedTransactionOffset = the half message's commit-log offset; body and tags unchanged."""
    client, topic, pgroup, group, half = pending(ctx, queues=2, queue_id=1, body=b"committed body")
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_COMMIT_TYPE), ResponseCode.SUCCESS, "END_TRANSACTION COMMIT")
    real = committed(ctx, client, group, topic, 1, half)
    ctx.expect_equal((real.body, real.tags), (b"committed body", "TagA"), "the committed message's (body, tags)")
    ctx.expect_equal(real.sys_flag & SYSFLAG_TRANSACTION_MASK, TRANSACTION_COMMIT_TYPE,
                     "the committed message's transaction bits")
    ctx.expect_equal(real.prepared_transaction_offset, half.commit_log_offset,
                     "the committed message's preparedTransactionOffset")


@cases.case("commit-keeps-half-properties", clauses=("TXN-8",), level=Level.SHOULD,
            requirement="the committed message shows the half message's stored properties (REAL_TOPIC, REAL_QID, "
                        "TRAN_MSG, PGROUP), as 4.9.8 writes them")
def commit_keeps_half_properties(ctx: BrokerContext) -> None:
    """TXN-8: 4.9.8's endMessageTransaction writes the half message's property string before it clears REAL_TOPIC,
    REAL_QID and TRAN_MSG in the map, so a consumer of the committed message still sees them."""
    client, topic, pgroup, group, half = pending(ctx)
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_COMMIT_TYPE), ResponseCode.SUCCESS, "END_TRANSACTION COMMIT")
    real = committed(ctx, client, group, topic, 0, half)
    names = (Property.REAL_TOPIC, Property.REAL_QUEUE_ID, Property.TRANSACTION_PREPARED, Property.PRODUCER_GROUP)
    ctx.expect_equal({name: real.get_property(name) for name in names},
                     dict(zip(names, (topic, "0", "true", pgroup), strict=True)),
                     "the committed message's REAL_TOPIC, REAL_QID, TRAN_MSG and PGROUP")


@cases.case("commit-twice-stores-twice", clauses=("TXN-11",), level=Level.SHOULD,
            requirement="END_TRANSACTION is not idempotent: a second COMMIT of the same half message stores a "
                        "second copy (4.9.8)")
def commit_twice_stores_twice(ctx: BrokerContext) -> None:
    """TXN-11: every accepted COMMIT stores one more real message; 4.9.8 finds the half message by commit-log offset
    again and accepts the second COMMIT."""
    client, topic, pgroup, group, half = pending(ctx)
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_COMMIT_TYPE), ResponseCode.SUCCESS, "the first COMMIT")
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_COMMIT_TYPE), ResponseCode.SUCCESS, "the second COMMIT")
    barrier(ctx, client, group, topic, 0)
    found = visible(ctx, client, group, topic, 0, half.key)
    ctx.expect_equal([m.queue_offset for m in found], [0, 1], f"queue offsets of {half.key} in {topic}:0")


@cases.case("rollback-never-visible", clauses=("TXN-9", "TXN-22", "TXN-14"),
            requirement="END_TRANSACTION ROLLBACK answers SUCCESS; the message is never stored in its topic nor "
                        "checked")
def rollback_never_visible(ctx: BrokerContext) -> None:
    """TXN-9: ROLLBACK writes only the op message: nothing reaches the real topic, and (TXN-14) the check passes
    over the resolved half message: no CHECK_TRANSACTION_STATE for it reaches the registered producer."""
    check_wait_s(ctx, 1)
    wait = no_check_wait_s(ctx)
    producer, topic, pgroup, group, half = pending(ctx, producer=True)
    ctx.expect_code(end(producer, pgroup, half, TRANSACTION_ROLLBACK_TYPE), ResponseCode.SUCCESS,
                    "END_TRANSACTION ROLLBACK")
    check = next_check(producer, half, wait)
    ctx.expect(check is None, f"no CHECK_TRANSACTION_STATE for the rolled-back {half.key} within {wait:g} s",
               f"one came: {check.ext_fields if check else ''}")
    expect_invisible(ctx, producer, group, topic, 0, half, "after the rollback")


@cases.case("op-message", clauses=("TXN-10",), level=Level.SHOULD,
            requirement="a resolved half message gets an op message in RMQ_SYS_TRANS_OP_HALF_TOPIC: tag d, body = "
                        "the half queue offset")
def op_message(ctx: BrokerContext) -> None:
    """TXN-10: the op message goes to RMQ_SYS_TRANS_OP_HALF_TOPIC, the half message's queue id (0), tag "d", body =
    the half message's queue offset in decimal. 4.9.8 keeps no topic config for the op topic (a pull answers
    TOPIC_NOT_EXIST), so the case walks the commit log with VIEW_MESSAGE_BY_ID from a marker message on."""
    topic = ctx.topic(1, brokers=[0])
    pgroup = ctx.name("pgroup")
    client = ctx.broker(0)
    half = send_half(ctx, client, topic, 0, pgroup)
    marker = stored(ctx, client, ctx.send(client, topic, b"marker", 0).commit_log_offset, "the marker message")
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_ROLLBACK_TYPE), ResponseCode.SUCCESS,
                    "END_TRANSACTION ROLLBACK")
    cursor = {"offset": marker.commit_log_offset + marker.store_size, "walked": 0}

    def op_found() -> MessageExt | None:
        while cursor["walked"] < COMMIT_LOG_WALK_LIMIT:
            message = view(ctx, client, cursor["offset"])
            if message is None or message.store_size <= 0:
                return None  # the end of the commit log for now
            cursor["offset"] += message.store_size
            cursor["walked"] += 1
            if message.topic == TRANS_OP_HALF_TOPIC and message.body == str(half.queue_offset).encode():
                return message
        return None

    op = ctx.wait_until(op_found, DISPATCH_WAIT_S, what=f"an op message for half offset {half.queue_offset} in the "
                                                        f"commit log after the marker")
    ctx.expect_equal((op.queue_id, op.tags), (0, TRANS_OP_REMOVE_TAG), "the op message's (queueId, tags)")


@cases.case("end-wrong-producer-group", clauses=("TXN-7",),
            requirement="END_TRANSACTION naming another producer group answers SYSTEM_ERROR and changes nothing")
def end_wrong_producer_group(ctx: BrokerContext) -> None:
    """TXN-7: PGROUP of the half message differs from the header's producerGroup -> SYSTEM_ERROR, nothing written
    (the right group's COMMIT still works afterwards and stores one message)."""
    client, topic, pgroup, group, half = pending(ctx)
    answer = end(client, ctx.name("pgroup"), half, TRANSACTION_COMMIT_TYPE)
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "COMMIT with another producer group")
    expect_invisible(ctx, client, group, topic, 0, half, "after the refused COMMIT")
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_COMMIT_TYPE), ResponseCode.SUCCESS,
                    "COMMIT with the half message's producer group")
    committed(ctx, client, group, topic, 0, half)


@cases.case("end-wrong-producer-group-remark", clauses=("TXN-7",), level=Level.SHOULD,
            requirement="the SYSTEM_ERROR for a wrong producer group says 'The producer group wrong'")
def end_wrong_producer_group_remark(ctx: BrokerContext) -> None:
    """TXN-7, 4.9.8's remark text."""
    topic = ctx.topic(1, brokers=[0])
    client = ctx.broker(0)
    half = send_half(ctx, client, topic, 0, ctx.name("pgroup"))
    answer = end(client, ctx.name("pgroup"), half, TRANSACTION_ROLLBACK_TYPE)
    ctx.expect_equal(answer.remark, "The producer group wrong", "the remark")


@cases.case("end-wrong-queue-offset", clauses=("TXN-7",),
            requirement="END_TRANSACTION whose tranStateTableOffset is not the half message's queue offset answers "
                        "SYSTEM_ERROR and changes nothing")
def end_wrong_queue_offset(ctx: BrokerContext) -> None:
    """TXN-7: the half message's queue offset must equal tranStateTableOffset (4.9.8 remark "The transaction state
    table offset wrong")."""
    client, topic, pgroup, group, half = pending(ctx)
    answer = end(client, pgroup, half, TRANSACTION_COMMIT_TYPE, queue_offset=half.queue_offset + 1000)
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "COMMIT with a wrong tranStateTableOffset")
    expect_invisible(ctx, client, group, topic, 0, half, "after the refused COMMIT")


@cases.case("end-unknown-offset", clauses=("TXN-7",),
            requirement="END_TRANSACTION naming a commit-log offset with no message answers SYSTEM_ERROR")
def end_unknown_offset(ctx: BrokerContext) -> None:
    """TXN-7: no message at commitLogOffset -> SYSTEM_ERROR (4.9.8: "Find prepared transaction message failed")."""
    pgroup = ctx.name("pgroup")
    client = ctx.broker(0)
    fake = Half(unique_key(), f"7F00000100002A9F{FAR_COMMIT_LOG_OFFSET:016X}", 0)
    for state in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        ctx.expect_code(end(client, pgroup, fake, state), ResponseCode.SYSTEM_ERROR,
                        f"END_TRANSACTION {state:#x} for commit-log offset {FAR_COMMIT_LOG_OFFSET}")


@cases.case("end-unknown-state-not-answered", clauses=("TXN-6",),
            requirement="END_TRANSACTION with commitOrRollback UNKNOW (0) gets no response and changes nothing")
def end_unknown_state_not_answered(ctx: BrokerContext) -> None:
    """TXN-6: state 0 returns no response, even for a request, and leaves the half message pending."""
    client, topic, pgroup, group, half = pending(ctx)
    for from_check in (False, True):
        try:
            answer = end(client, pgroup, half, TRANSACTION_NOT_TYPE, from_check=from_check, timeout=NO_ANSWER_WAIT_S)
        except TimeoutError:
            continue
        ctx.expect(False, f"no answer to END_TRANSACTION UNKNOW (fromTransactionCheck={from_check})",
                   f"answered {answer.code} {answer.remark!r}")
    expect_invisible(ctx, client, group, topic, 0, half, "after END_TRANSACTION UNKNOW")
    ctx.expect_code(end(client, pgroup, half, TRANSACTION_COMMIT_TYPE), ResponseCode.SUCCESS,
                    "a COMMIT afterwards (the half message is still pending)")


@cases.case("end-bad-state", clauses=("TXN-6",),
            requirement="END_TRANSACTION with commitOrRollback outside 0/8/12 is refused (header check) and changes "
                        "nothing")
def end_bad_state(ctx: BrokerContext) -> None:
    """TXN-6: a commitOrRollback other than 0, 8, 12 fails the header's checkFields: the request is answered with
    SYSTEM_ERROR (the remoting layer's answer to a header that does not decode) and has no effect."""
    client, topic, pgroup, group, half = pending(ctx)
    answer = end(client, pgroup, half, TRANSACTION_COMMIT_TYPE | 0x1)
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "END_TRANSACTION with commitOrRollback 9")
    expect_invisible(ctx, client, group, topic, 0, half, "after the refused END_TRANSACTION")


@cases.case("check-on-producer-connection", clauses=("TXN-12", "TXN-15", "TXN-19"),
            requirement="an unresolved half message is checked after transactionTimeOut: CHECK_TRANSACTION_STATE "
                        "reaches the connection registered with its producer group, naming a re-appended copy")
def check_on_producer_connection(ctx: BrokerContext) -> None:
    """TXN-19: the check goes (oneway) to a channel that registered PGROUP by HEART_BEAT, not to the connection that
    sent the half message; it names the re-appended copy (new half queue offset / commit-log offset), its msgId is
    the UNIQ_KEY, TRANSACTION_CHECK_TIMES is 1 (TXN-15), the body is the message with its real topic and queue."""
    wait = check_wait_s(ctx, 1)
    topic = ctx.topic(2, brokers=[0])
    pgroup = ctx.name("pgroup")
    producer = producer_connection(ctx, pgroup)
    sender = ctx.broker(0)
    half = send_half(ctx, sender, topic, 1, pgroup, b"check me")
    check = wait_check(ctx, producer, half, wait, what=f"CHECK_TRANSACTION_STATE for {half.key} on the producer's "
                                                       "connection")
    ctx.expect(check.is_oneway, "a oneway CHECK_TRANSACTION_STATE", f"flag {check.flag}")
    ctx.expect(int(check.field("tranStateTableOffset") or -1) > half.queue_offset,
               f"tranStateTableOffset of a re-appended copy (> {half.queue_offset})",
               str(check.field("tranStateTableOffset")))
    ctx.expect(int(check.field("commitLogOffset") or -1) > half.commit_log_offset,
               f"commitLogOffset of a re-appended copy (> {half.commit_log_offset})",
               str(check.field("commitLogOffset")))
    message = checked_message(ctx, check)
    ctx.expect_equal((message.topic, message.queue_id, message.body), (topic, 1, b"check me"),
                     "the checked message's (topic, queueId, body)")
    ctx.expect_equal(message.get_property(Property.TRANSACTION_CHECK_TIMES), "1", "TRANSACTION_CHECK_TIMES")
    ctx.expect(next_check(sender, half, 0.2) is None, "no check on the connection that only sent the half message",
               "one came")


@cases.case("check-answer-commits", clauses=("TXN-19", "TXN-7", "TXN-8", "TXN-14", "TXN-25"),
            requirement="a COMMIT answering a check (fromTransactionCheck, the check's offsets) stores the message "
                        "once and ends the checks")
def check_answer_commits(ctx: BrokerContext) -> None:
    """TXN-7/8: END_TRANSACTION COMMIT with fromTransactionCheck=true and the check's offsets commits the message;
    TXN-14: the resolved entry is not checked again."""
    check_wait_s(ctx, 3)
    producer, topic, pgroup, group, half = pending(ctx, producer=True)
    check = wait_check(ctx, producer, half, check_wait_s(ctx, 1), what=f"a check of {half.key}")
    answer = answer_check(producer, pgroup, half, check, TRANSACTION_COMMIT_TYPE)
    ctx.expect_code(answer, ResponseCode.SUCCESS, "END_TRANSACTION COMMIT answering the check")
    committed(ctx, producer, group, topic, 0, half)
    again = next_check(producer, half, no_check_wait_s(ctx))
    ctx.expect(again is None, "no further check after the COMMIT", f"one came: {again.ext_fields if again else ''}")
    ctx.expect_equal(len(visible(ctx, producer, group, topic, 0, half.key)), 1, f"copies of {half.key} in {topic}:0")


@cases.case("check-answer-rollback", clauses=("TXN-9", "TXN-19", "TXN-22"),
            requirement="a ROLLBACK answering a check ends the checks; the message is never stored in its topic")
def check_answer_rollback(ctx: BrokerContext) -> None:
    """TXN-9/22: END_TRANSACTION ROLLBACK (fromTransactionCheck, the check's offsets) answers SUCCESS, no further
    check comes and the message never reaches its topic."""
    check_wait_s(ctx, 3)
    producer, topic, pgroup, group, half = pending(ctx, producer=True)
    check = wait_check(ctx, producer, half, check_wait_s(ctx, 1), what=f"a check of {half.key}")
    answer = answer_check(producer, pgroup, half, check, TRANSACTION_ROLLBACK_TYPE)
    ctx.expect_code(answer, ResponseCode.SUCCESS, "END_TRANSACTION ROLLBACK answering the check")
    again = next_check(producer, half, no_check_wait_s(ctx))
    ctx.expect(again is None, "no further check after the ROLLBACK", f"one came: {again.ext_fields if again else ''}")
    expect_invisible(ctx, producer, group, topic, 0, half, "after the rollback")


@cases.case("check-max-then-discard", clauses=("TXN-15", "TXN-16", "TXN-23", "TXN-19", "TXN-24"),
            requirement="an unanswered half message is checked transactionCheckMax times, then discarded to "
                        "TRANS_CHECK_MAX_TIME_TOPIC and never checked again")
def check_max_then_discard(ctx: BrokerContext) -> None:
    """TXN-15/23: checks carry TRANSACTION_CHECK_TIMES 1..max, one per pass; at the next pass the message is
    discarded (TXN-16) to TRANS_CHECK_MAX_TIME_TOPIC (1 queue) and no check follows."""
    _, interval_s, check_max = txn_settings(ctx)
    check_wait_s(ctx, check_max + 2)
    topic = ctx.topic(1, brokers=[0])
    pgroup = ctx.name("pgroup")
    group = ctx.group()
    producer = producer_connection(ctx, pgroup)
    discard_start = max_offset(producer, TRANS_CHECK_MAX_TIME_TOPIC, 0)
    half = send_half(ctx, producer, topic, 0, pgroup)
    counts: list[str | None] = []
    for number in range(1, max(check_max, 1) + 1):
        check = wait_check(ctx, producer, half, check_wait_s(ctx, 1), what=f"check {number} of {half.key}")
        counts.append(checked_message(ctx, check).get_property(Property.TRANSACTION_CHECK_TIMES))
    ctx.expect_equal(counts, [str(n) for n in range(1, max(check_max, 1) + 1)],
                     "TRANSACTION_CHECK_TIMES of the successive checks")
    wait_message(ctx, producer, group, TRANS_CHECK_MAX_TIME_TOPIC, [0], lambda m: m.unique_key == half.key,
                 2 * interval_s + CHECK_SLACK_S, start={0: discard_start},
                 what=f"the discarded {half.key} in {TRANS_CHECK_MAX_TIME_TOPIC}:0")
    extra = next_check(producer, half, interval_s + ABSENCE_SLACK_S)
    ctx.expect(extra is None, f"no check after the {check_max}th",
               f"one more came: {extra.ext_fields if extra else ''}")
    expect_invisible(ctx, producer, group, topic, 0, half, "after the discard")


@cases.case("unregistered-producer-discarded", clauses=("TXN-19", "TXN-16", "TXN-23"),
            requirement="a half message whose producer group has no connection is still counted by each pass and "
                        "discarded to TRANS_CHECK_MAX_TIME_TOPIC after transactionCheckMax passes")
def unregistered_producer_discarded(ctx: BrokerContext) -> None:
    """TXN-19: with no connected producer of PGROUP no check is sent, but the count is spent all the same, so after
    transactionCheckMax passes the message is discarded (TXN-16, TXN-23) like an unanswered one."""
    wait = check_wait_s(ctx, txn_settings(ctx)[2] + 1)
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    client = ctx.broker(0)
    discard_start = max_offset(client, TRANS_CHECK_MAX_TIME_TOPIC, 0)
    half = send_half(ctx, client, topic, 0, ctx.name("pgroup"))
    wait_message(ctx, client, group, TRANS_CHECK_MAX_TIME_TOPIC, [0], lambda m: m.unique_key == half.key, wait,
                 start={0: discard_start}, what=f"the discarded {half.key} in {TRANS_CHECK_MAX_TIME_TOPIC}:0")
    expect_invisible(ctx, client, group, topic, 0, half, "after the discard")


@cases.case("late-check-answer-commits", clauses=("TXN-11", "TXN-19", "TXN-7"),
            requirement="a COMMIT answering an earlier check, after a later check re-appended the message, still "
                        "commits it")
def late_check_answer_commits(ctx: BrokerContext) -> None:
    """TXN-11/19: ops name half-queue entries; an answer naming the entry of check 1, sent after check 2 named a
    newer copy, passes the TXN-7 checks (that entry still exists) and stores the message."""
    check_wait_s(ctx, 3)
    producer, topic, pgroup, group, half = pending(ctx, producer=True)
    first = wait_check(ctx, producer, half, check_wait_s(ctx, 1), what=f"the first check of {half.key}")
    wait_check(ctx, producer, half, check_wait_s(ctx, 1), what=f"the second check of {half.key}")
    answer = answer_check(producer, pgroup, half, first, TRANSACTION_COMMIT_TYPE)
    ctx.expect_code(answer, ResponseCode.SUCCESS, "END_TRANSACTION COMMIT answering the first check late")
    committed(ctx, producer, group, topic, 0, half)

