"""Client cases for transactions (TXN-*): the END_TRANSACTION a producer sends after its local transaction and in
answer to a check-back. Judged with ``rocketspec.spec.transaction_check`` (``first_end_transaction_type``,
``check_answer``).
"""

from __future__ import annotations

from rocketspec.conformance.client.context import SEND_CODES, ClientContext, Frame, client_case
from rocketspec.conformance.model import CaseList
from rocketspec.refimpl.message import decode_properties
from rocketspec.spec.protocol import Property, RequestCode, SendStatus, TransactionState
from rocketspec.spec.transaction_check import check_answer, first_end_transaction_type

cases = CaseList("client/transaction")
CASES = cases.cases

BROKER_A = "broker-a"
WAIT_S = 10.0
STATES = {"commit": TransactionState.COMMIT_MESSAGE, "rollback": TransactionState.ROLLBACK_MESSAGE,
          "unknown": TransactionState.UNKNOW}


def fields(frame: Frame) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(frame.command.ext_fields.items()))


def end_transactions(ctx: ClientContext, *, from_check: bool) -> list[Frame]:
    flag = "true" if from_check else "false"
    return ctx.requests(RequestCode.END_TRANSACTION, where=lambda f: (f.field("fromTransactionCheck") or "") == flag)


def unique_key(frame: Frame) -> str:
    """The UNIQ_KEY of a sent message: what END_TRANSACTION's msgId names (TXN-4)."""
    return decode_properties(frame.field("properties") or "").get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "")


def local_case(ctx: ClientContext, local: str) -> None:
    count = 2
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.name("txgroup")
    producer = ctx.start("transaction-producer", topic=topic, group=group, count=count, tx_local=local,
                         tx_check="commit")
    producer.require("send", count, WAIT_S, what="the half messages sent")
    expected_type = first_end_transaction_type(SendStatus.SEND_OK, STATES[local])
    ends = ctx.wait_requests(RequestCode.END_TRANSACTION, count, WAIT_S,
                             what=f"{count} END_TRANSACTION after the local transactions (TXN-4)",
                             where=lambda f: (f.field("fromTransactionCheck") or "") == "false")
    halves = {unique_key(f): f for f in ctx.requests(SEND_CODES, where=lambda f: f.field("topic") == topic)}
    for end in ends:
        half = halves.get(end.field("msgId") or "")
        ctx.expect(half is not None, "END_TRANSACTION names the msgId (UNIQ_KEY) of a half message it sent",
                   fields(end))
        assert half is not None
        answer = ctx.response_to(half)
        ctx.expect(answer is not None, "the half message's send answered", "no answer seen")
        assert answer is not None
        offset_id = answer.field("msgId") or ""
        want = {"commitOrRollback": str(expected_type), "producerGroup": group,
                "commitLogOffset": str(int(offset_id[-16:], 16)) if offset_id else "?",
                "tranStateTableOffset": answer.field("queueOffset")}
        got = {k: end.field(k) for k in want}
        ctx.expect(got == want, f"END_TRANSACTION {want} (TXN-4)", fields(end))


@cases.case("local-commit", clauses=("TXN-4", "TXN-1"),
            requirement="after a committed local transaction the producer ends the half message with COMMIT")
@client_case()
def local_commit(ctx: ClientContext) -> None:
    """executeLocalTransaction answers COMMIT_MESSAGE: after SEND_OK the producer sends one oneway END_TRANSACTION
    with commitOrRollback 0x8, fromTransactionCheck false, the commitLogOffset of the offsetMsgId and the queue
    offset of the send result as tranStateTableOffset (TXN-4)."""
    local_case(ctx, "commit")


@cases.case("local-rollback", clauses=("TXN-4",),
            requirement="after a rolled-back local transaction the producer ends the half message with ROLLBACK")
@client_case()
def local_rollback(ctx: ClientContext) -> None:
    """executeLocalTransaction answers ROLLBACK_MESSAGE: END_TRANSACTION with commitOrRollback 0xC (TXN-4)."""
    local_case(ctx, "rollback")


def check_case(ctx: ClientContext, answer_with: str) -> None:
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.name("txgroup")
    producer = ctx.start("transaction-producer", topic=topic, group=group, count=1, tx_local="unknown",
                         tx_check=answer_with)
    producer.require("send", 1, WAIT_S, what="the half message sent")
    checks = ctx.wait_until(lambda: ctx.server_requests(RequestCode.CHECK_TRANSACTION_STATE), WAIT_S,
                            what="the broker's CHECK_TRANSACTION_STATE (set-up: the local transaction was UNKNOW)")
    check = checks[0]
    ctx.wait_until(lambda: end_transactions(ctx, from_check=True), 5.0,
                   what="an END_TRANSACTION with fromTransactionCheck=true answering the check (TXN-21)")
    expected_type = check_answer(STATES[answer_with])
    end = next((e for e in end_transactions(ctx, from_check=True)
                if e.field("commitLogOffset") == check.field("commitLogOffset")), None)
    ctx.expect(end is not None, "an END_TRANSACTION naming the check's commitLogOffset (TXN-21)",
               "; ".join(fields(e) for e in end_transactions(ctx, from_check=True)))
    assert end is not None
    want = {"commitOrRollback": str(expected_type), "fromTransactionCheck": "true", "producerGroup": group,
            "commitLogOffset": check.field("commitLogOffset"),
            "tranStateTableOffset": check.field("tranStateTableOffset")}
    got = {k: end.field(k) for k in want}
    ctx.expect(got == want, f"END_TRANSACTION {want} (TXN-21)", fields(end))
    # The driver's line comes through its stdout, which can trail the END_TRANSACTION the broker already read.
    producer.require("check", 1, 5.0, what="the driver's report of the check (check event)")


@cases.case("check-answer-commit", clauses=("TXN-21", "TXN-4"),
            requirement="a check-back answered COMMIT gets END_TRANSACTION COMMIT for the checked half message")
@client_case()
def check_answer_commit(ctx: ClientContext) -> None:
    """The local transaction answers UNKNOW (END_TRANSACTION 0x0, TXN-4); the broker checks back after
    transactionTimeOut; checkLocalTransaction answers COMMIT_MESSAGE: the producer sends a oneway END_TRANSACTION
    with fromTransactionCheck true, the check's commitLogOffset and tranStateTableOffset and 0x8 (TXN-21)."""
    check_case(ctx, "commit")


@cases.case("check-answer-rollback", clauses=("TXN-21",),
            requirement="a check-back answered ROLLBACK gets END_TRANSACTION ROLLBACK for the checked half message")
@client_case()
def check_answer_rollback(ctx: ClientContext) -> None:
    """As check-answer-commit with checkLocalTransaction answering ROLLBACK_MESSAGE: 0xC (TXN-21)."""
    check_case(ctx, "rollback")


@cases.case("only-committed-consumed", clauses=("TXN-22", "TXN-4"),
            requirement="of two transactional messages only the committed one is ever delivered to a consumer")
@client_case()
def only_committed_consumed(ctx: ClientContext) -> None:
    """Two transaction producers send one half message each to the topic; one local transaction commits, the other
    rolls back (END_TRANSACTION 0x8 and 0xC, TXN-4). A consumer of the topic receives the committed message and
    never the rolled-back one, also not after a few check intervals (TXN-22)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    consumer = ctx.start("consumer", topic=topic, group=group)
    producers = {local: ctx.start("transaction-producer", topic=topic, group=ctx.name("txgroup"), count=1,
                                  tx_local=local, tx_check=local) for local in ("commit", "rollback")}
    sent = {local: p.require("send", 1, WAIT_S, what=f"the {local} half message sent")[0]
            for local, p in producers.items()}
    ctx.wait_requests(RequestCode.END_TRANSACTION, 2, WAIT_S, what="both END_TRANSACTION requests (TXN-4)")
    types = {e.field("commitOrRollback") for e in ctx.requests(RequestCode.END_TRANSACTION)}
    wanted = {str(first_end_transaction_type(SendStatus.SEND_OK, STATES[local])) for local in producers}
    ctx.expect(types == wanted, f"END_TRANSACTION types {sorted(wanted)} (TXN-4)", str(sorted(types, key=str)))
    consumer.require("received", 1, WAIT_S, what="the committed message delivered")
    ctx.sleep(3.0)  # three check intervals: the rolled-back message would show by now
    got = [e.get("msgId") for e in consumer.of("received")]
    ctx.expect(got == [sent["commit"].get("msgId")],
               f"only the committed message {sent['commit'].get('msgId')} delivered, not the rolled-back "
               f"{sent['rollback'].get('msgId')} (TXN-22)", str(got))
