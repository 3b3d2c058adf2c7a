"""Client cases for consume retries (RETRY-*): the send-back a failed message gets, the fallback send, the orderly
suspension. Judged with ``rocketspec.spec.consume_retry`` (``after_listener``, ``effective_max_reconsume_times``,
``client_retry_message``, ``orderly_suspend``, ``visible_topic``).
"""

from __future__ import annotations

from rocketspec.conformance import requests
from rocketspec.conformance.client.context import SEND_CODES, SERVED_OPTIONS, ClientContext, Frame, client_case
from rocketspec.conformance.model import CaseList, Level
from rocketspec.refimpl.message import decode_properties
from rocketspec.spec.consume_retry import (
    Target,
    after_listener,
    client_retry_message,
    consumer_send_back,
    delay_millis,
    effective_max_reconsume_times,
    orderly_suspend,
    parse_delay_levels,
    suspend_millis,
    visible_topic,
)
from rocketspec.spec.protocol import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    ConsumeStatus,
    MessageModel,
    Property,
    RequestCode,
    ResponseCode,
)

cases = CaseList("client/retry")
CASES = cases.cases

BROKER_A = "broker-a"
# A positive wait: only a failing case (or a loaded machine) waits it out. A new group's retry topic is made by its
# first heartbeat, after the Java client fetched its routes at start: its route can come with the next route poll
# (pollNameServerInterval, 30 s), then the 10 s delay level.
WAIT_S = 50.0
# The consumer's maxReconsumeTimes when not configured (the drivers leave it alone).
CONFIGURED_MAX = -1


def fields(frame: Frame) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(frame.command.ext_fields.items()))


def redelivered(ctx: ClientContext, topic: str, group: str) -> None:
    """The second delivery: the same message, shown under its own topic (RETRY-19), with reconsumeTimes 1."""
    consumer = ctx.drivers[0]
    got = consumer.require("received", 2, WAIT_S, what="the message delivered again")
    again = got[1]
    shown = visible_topic(RETRY_GROUP_TOPIC_PREFIX + group, topic, group)
    ctx.expect(again.get("topic") == shown and int(again.get("reconsumeTimes", -1)) == 1,
               f"the re-delivery shown as topic {shown} with reconsumeTimes 1 (RETRY-19, RETRY-9)",
               f"topic {again.get('topic')} reconsumeTimes {again.get('reconsumeTimes')}")


@cases.case("send-back-on-later", clauses=("RETRY-13", "RETRY-15", "RETRY-22", "RETRY-19"),
            requirement="a message the listener answers RECONSUME_LATER is sent back with the header RETRY-15 names",
            level=Level.SHOULD)
@client_case()
def send_back_on_later(ctx: ClientContext) -> None:
    """The listener answers RECONSUME_LATER to a message's first delivery: it failed (RETRY-13) and is sent back with
    CONSUMER_SEND_MSG_BACK naming the group, its commit-log offset, delayLevel 0 (the context's default),
    originMsgId and originTopic, and maxReconsumeTimes 16 (-1 means 16, RETRY-15, RETRY-22); it comes back from the
    retry topic under its own topic (RETRY-19)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    sent = ctx.put_messages(topic, BROKER_A, 0, 1)[0]
    ctx.start("consumer", topic=topic, group=group, consume_result="later-once")
    outcome = after_listener(ConsumeStatus.RECONSUME_LATER, 1)
    backs = ctx.wait_requests(RequestCode.CONSUMER_SEND_MSG_BACK, len(outcome.send_back), WAIT_S,
                              what="CONSUMER_SEND_MSG_BACK for the failed message (RETRY-15)")
    back = backs[0]
    expected = {"group": group, "offset": str(sent.commit_log_offset), "delayLevel": "0",
                "originMsgId": sent.msg_id, "originTopic": topic,
                "maxReconsumeTimes": str(effective_max_reconsume_times(CONFIGURED_MAX))}
    actual = {k: back.field(k) for k in expected}
    ctx.expect(actual == expected, f"CONSUMER_SEND_MSG_BACK {expected} (RETRY-15)", fields(back))
    redelivered(ctx, topic, group)
    ctx.expect(len(ctx.requests(RequestCode.CONSUMER_SEND_MSG_BACK)) == 1,
               "one send-back only (the re-delivery succeeded)",
               str(len(ctx.requests(RequestCode.CONSUMER_SEND_MSG_BACK))))


@cases.case("fallback-send-when-send-back-fails", clauses=("RETRY-16", "RETRY-25"),
            requirement="when CONSUMER_SEND_MSG_BACK fails the consumer sends the message to %RETRY%<group> itself",
            level=Level.SHOULD)
@client_case()
def fallback_send(ctx: ClientContext) -> None:
    """The broker answers CONSUMER_SEND_MSG_BACK with SYSTEM_ERROR: the consumer sends the message to
    %RETRY%<group> itself with RETRY_TOPIC, DELAY 3 + n and header reconsumeTimes n + 1 and maxReconsumeTimes
    (RETRY-16); it comes back with reconsumeTimes 1 (RETRY-25)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.put_messages(topic, BROKER_A, 0, 1)
    ctx.faults.fail("*", "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR")
    ctx.start("consumer", topic=topic, group=group, consume_result="later-once")
    retry_topic = RETRY_GROUP_TOPIC_PREFIX + group
    sends = ctx.wait_requests(SEND_CODES, 1, WAIT_S, what=f"a send to {retry_topic} (RETRY-16)",
                              where=lambda f: f.field("topic") == retry_topic)
    send = sends[0]
    want = client_retry_message(topic, 0, effective_max_reconsume_times(CONFIGURED_MAX), group=group)
    props = decode_properties(send.field("properties") or "")
    expected = {"topic": want.topic, Property.RETRY_TOPIC: topic, Property.DELAY_TIME_LEVEL: str(want.delay_level),
                "reconsumeTimes": str(want.header_reconsume_times),
                "maxReconsumeTimes": str(want.header_max_reconsume_times)}
    actual = {"topic": send.field("topic"), Property.RETRY_TOPIC: props.get(Property.RETRY_TOPIC),
              Property.DELAY_TIME_LEVEL: props.get(Property.DELAY_TIME_LEVEL),
              "reconsumeTimes": send.field("reconsumeTimes"), "maxReconsumeTimes": send.field("maxReconsumeTimes")}
    ctx.expect(actual == expected, f"the fallback send {expected} (RETRY-16)", str(actual))
    redelivered(ctx, topic, group)


@cases.case("orderly-suspend-reconsumes-locally", clauses=("RETRY-21", "RETRY-22", "REB-12"),
            requirement="an orderly consumer re-consumes a suspended message itself, with reconsumeTimes + 1",
            level=Level.SHOULD)
@client_case()
def orderly_suspend_locally(ctx: ClientContext) -> None:
    """An orderly consumer locks its queue on the broker before pulling it (REB-12: LOCK_BATCH_MQ). The listener
    answers SUSPEND_CURRENT_QUEUE_A_MOMENT to the first delivery: under the orderly maximum (Integer.MAX_VALUE,
    RETRY-22) the message gets + 1 and the batch is consumed again after the suspension, with nothing sent back
    or to the retry topic (RETRY-21)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    sent = ctx.put_messages(topic, BROKER_A, 0, 1)[0]
    consumer = ctx.start("consumer", topic=topic, group=group, orderly=True, consume_result="later-once")
    got = consumer.require("received", 2, WAIT_S, what="the suspended message consumed again")
    plan = orderly_suspend((0,), effective_max_reconsume_times(CONFIGURED_MAX, orderly=True), (True,))
    ctx.expect(plan.suspend and [e.get("msgId") for e in got[:2]] == [sent.msg_id] * 2,
               "the same message consumed again after the suspension (RETRY-21)", str([e.get("msgId") for e in got]))
    ctx.expect(int(got[1].get("reconsumeTimes", -1)) == plan.reconsume_times[0],
               f"reconsumeTimes {plan.reconsume_times[0]} on the second delivery (RETRY-21)",
               str(got[1].get("reconsumeTimes")))
    backs = ctx.requests(RequestCode.CONSUMER_SEND_MSG_BACK)
    retry_sends = ctx.requests(SEND_CODES,
                               where=lambda f: (f.field("topic") or "").startswith(RETRY_GROUP_TOPIC_PREFIX))
    ctx.expect(not backs and not retry_sends and not plan.dead_lettered,
               "nothing sent back or to the retry topic (RETRY-21)",
               f"{len(backs)} CONSUMER_SEND_MSG_BACK, {len(retry_sends)} retry-topic sends")
    pulls = ctx.requests(RequestCode.PULL_MESSAGE, node=BROKER_A, where=lambda f: f.field("topic") == topic)
    locks = ctx.requests(RequestCode.LOCK_BATCH_MQ, node=BROKER_A,
                         where=lambda f: topic in (f.command.body or b"").decode("utf-8", "replace"))
    ctx.expect(bool(locks) and bool(pulls) and locks[0].at_s <= pulls[0].at_s,
               "LOCK_BATCH_MQ for the queue before its first pull (REB-12)",
               f"first lock {locks[0].at_s if locks else None}, first pull {pulls[0].at_s if pulls else None}")


@cases.case("broadcasting-drops-failures", clauses=("RETRY-14", "RETRY-13"),
            requirement="a broadcasting consumer drops a message its listener failed: no send-back, no redelivery")
@client_case()
def broadcasting_drops_failures(ctx: ClientContext) -> None:
    """A BROADCASTING consumer's listener answers RECONSUME_LATER to every delivery: the batch failed (RETRY-13),
    and in broadcasting the failed messages are logged and dropped (RETRY-14): no CONSUMER_SEND_MSG_BACK, no send to
    a retry topic, and no message delivered again, also not after the local re-consume delay."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    sent = ctx.put_messages(topic, BROKER_A, 0, 2)
    consumer = ctx.start("consumer", topic=topic, group=group, message_model="BROADCASTING", consume_result="later")
    consumer.require("received", len(sent), WAIT_S, what="both messages delivered")
    ctx.sleep(SEND_BACK_LOCAL_RETRY_DELAY_MS / 1000 + 1.0)
    outcome = after_listener(ConsumeStatus.RECONSUME_LATER, 1, MessageModel.BROADCASTING)
    backs = ctx.requests(RequestCode.CONSUMER_SEND_MSG_BACK)
    retry_sends = ctx.requests(SEND_CODES,
                               where=lambda f: (f.field("topic") or "").startswith(RETRY_GROUP_TOPIC_PREFIX))
    ctx.expect(len(backs) == len(outcome.send_back) and not retry_sends,
               f"{len(outcome.send_back)} CONSUMER_SEND_MSG_BACK and no retry-topic send (RETRY-14)",
               f"{len(backs)} CONSUMER_SEND_MSG_BACK, {len(retry_sends)} retry-topic sends")
    ids = [e.get("msgId") for e in consumer.of("received")]
    ctx.expect(sorted(ids, key=str) == sorted(s.msg_id for s in sent),
               "each message delivered once, the failed ones dropped (RETRY-14)", str(ids))


@cases.case("retry-copy-not-before-its-delay", clauses=("RETRY-26", "RETRY-15"),
            requirement="a message sent back is delivered again no earlier than its delay level's delay")
@client_case()
def retry_copy_not_before_its_delay(ctx: ClientContext) -> None:
    """The listener answers RECONSUME_LATER to the first delivery; the send-back asks for the context's delay level
    (0: the broker takes 3 + reconsumeTimes, RETRY-15). The copy is stored no earlier than the send-back request,
    so the message comes back no earlier than delay(level) after that request (RETRY-26).

    The group's %RETRY% topic exists before the consumer starts, as for a group that consumed before: the route of
    a retry topic the heartbeat creates reaches a client only at its next name server poll (30 s in the Java
    client), which would decide when the copy comes instead of its delay."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.cluster.create_topic(RETRY_GROUP_TOPIC_PREFIX + group, 1, brokers=[BROKER_A])
    ctx.put_messages(topic, BROKER_A, 0, 1)
    consumer = ctx.start("consumer", topic=topic, group=group, consume_result="later-once")
    back = ctx.wait_requests(RequestCode.CONSUMER_SEND_MSG_BACK, 1, WAIT_S, what="the failed message sent back")[0]
    got = consumer.require("received", 2, WAIT_S, what="the message delivered again")
    result = consumer_send_back(int(got[0].get("reconsumeTimes", 0)), back.int_field("delayLevel", 0),
                                back.int_field("maxReconsumeTimes", CONFIGURED_MAX))
    table = parse_delay_levels(str(SERVED_OPTIONS["message_delay_level"]))
    delay_s = delay_millis(result.delay_level, table) / 1000 if result.delay_level > 0 else 0.0
    ctx.expect(float(got[1]["_at"]) >= back.at_s + delay_s,
               f"the re-delivery at least {delay_s:g} s (level {result.delay_level}) after the send-back at "
               f"{back.at_s:.3f}s (RETRY-26)", f"at {got[1]['_at']}s")


@cases.case("local-reconsume-not-before-5s", clauses=("RETRY-26", "RETRY-17"),
            requirement="a message whose send-back failed is consumed again locally no earlier than 5 s later")
@client_case()
def local_reconsume_not_before_5s(ctx: ClientContext) -> None:
    """Every CONSUMER_SEND_MSG_BACK and every send (the %RETRY% fallback) fails: the message stays with the consumer
    and is consumed again with reconsumeTimes + 1 (RETRY-17), no earlier than 5000 ms after the failure, i.e.
    after the answer to its last failed fallback send (RETRY-26)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.put_messages(topic, BROKER_A, 0, 1)
    ctx.faults.fail("*", "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR")
    ctx.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_ERROR")
    consumer = ctx.start("consumer", topic=topic, group=group, consume_result="later-once")
    got = consumer.require("received", 2, WAIT_S, what="the message consumed again locally")
    ctx.expect(int(got[1].get("reconsumeTimes", -1)) == int(got[0].get("reconsumeTimes", 0)) + 1,
               "the local re-delivery with reconsumeTimes + 1 (RETRY-17)", str(got[1].get("reconsumeTimes")))
    first_at = float(got[0]["_at"])
    failed = [f for f in ctx.requests({*SEND_CODES, RequestCode.CONSUMER_SEND_MSG_BACK})
              if f.at_s >= first_at - 1.0 and f.at_s <= float(got[1]["_at"])]
    answers = [a.at_s for a in map(ctx.response_to, failed) if a is not None]
    ctx.expect(bool(answers), "the failed send-back and fallback sends on the wire", "none seen")
    failure_at = max(answers)
    ctx.expect(float(got[1]["_at"]) >= failure_at + SEND_BACK_LOCAL_RETRY_DELAY_MS / 1000,
               f"the local re-delivery at least {SEND_BACK_LOCAL_RETRY_DELAY_MS} ms after the last failure at "
               f"{failure_at:.3f}s (RETRY-26)", f"at {got[1]['_at']}s")


@cases.case("dead-letter-is-final", clauses=("RETRY-27", "RETRY-15", "RETRY-19"),
            requirement="a message sent back at its last reconsume time goes to the DLQ and is never delivered again")
@client_case()
def dead_letter_is_final(ctx: ClientContext) -> None:
    """A message waits in %RETRY%<group> with reconsumeTimes 15 (one below the default max of 16). The listener
    always answers RECONSUME_LATER: the send-back gives a copy with 16, delivered again; its send-back (max 16,
    RETRY-15) puts it in %DLQ%<group>. Nothing subscribes to the DLQ: the consumer never pulls it and the message
    is not delivered a third time (RETRY-27)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    retry_topic, dlq = RETRY_GROUP_TOPIC_PREFIX + group, DLQ_GROUP_TOPIC_PREFIX + group
    ctx.cluster.create_topic(retry_topic, 1, brokers=[BROKER_A])
    consumer = ctx.start("consumer", topic=topic, group=group, consume_result="later")
    ctx.wait_until(lambda: ctx.consumer_ids(group, BROKER_A), WAIT_S, what="the consumer registered")
    max_times = effective_max_reconsume_times(CONFIGURED_MAX)
    start_times = max_times - 1
    props = requests.message_properties(extra={Property.RETRY_TOPIC: topic})
    suite = ctx.suite_client(BROKER_A)
    answer = suite.request(requests.send_v2(
        "rscf_setup_producer", retry_topic, b"rocketspec dead letter", 0, props, reconsume_times=start_times,
        max_reconsume_times=max_times))
    ctx.expect(answer.code == ResponseCode.SUCCESS, f"the set-up send to {retry_topic} answered SUCCESS",
               str(answer.code))
    got = consumer.require("received", 2, WAIT_S, what="the message delivered at reconsumeTimes 15 and 16")
    backs = ctx.wait_requests(RequestCode.CONSUMER_SEND_MSG_BACK, 2, WAIT_S, what="both deliveries sent back")
    last = backs[1]
    result = consumer_send_back(int(got[1].get("reconsumeTimes", 0)), last.int_field("delayLevel", 0),
                                last.int_field("maxReconsumeTimes", CONFIGURED_MAX))
    ctx.expect(result.target is Target.DLQ, "the oracle: the second send-back dead-letters the message (RETRY-7)",
               f"{result.target.value} (reconsumeTimes {got[1].get('reconsumeTimes')}, "
               f"maxReconsumeTimes {last.field('maxReconsumeTimes')})")
    ctx.wait_until(lambda: suite.request(requests.get_max_offset(dlq, 0)).field("offset") not in (None, "0"),
                   WAIT_S, what=f"the message stored in {dlq}")
    ctx.sleep(3.0)  # three retry delays: a delivery from anywhere would show now
    ctx.expect(len(consumer.of("received")) == 2, "no delivery after the message went to the DLQ (RETRY-27)",
               str([(e.get("reconsumeTimes"), e.get("_at")) for e in consumer.of("received")]))
    pulls = ctx.requests(RequestCode.PULL_MESSAGE, where=lambda f: f.field("topic") == dlq)
    ctx.expect(not pulls, f"no pull of {dlq} (RETRY-27)", f"{len(pulls)} pulls")


@cases.case("orderly-suspend-lasts", clauses=("RETRY-24", "RETRY-21"),
            requirement="an orderly consumer waits suspendCurrentQueueTimeMillis before consuming a suspended batch "
                        "again", level=Level.SHOULD)
@client_case()
def orderly_suspend_lasts(ctx: ClientContext) -> None:
    """The orderly listener answers SUSPEND_CURRENT_QUEUE_A_MOMENT to the first delivery (context value -1): the
    queue is suspended for the consumer's suspendCurrentQueueTimeMillis (default 1000 ms, within [10, 30000]:
    RETRY-24) before the batch is consumed again (RETRY-21). The listener reports a delivery before it returns, so
    the re-delivery is reported at least that long after the first."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.put_messages(topic, BROKER_A, 0, 1)
    consumer = ctx.start("consumer", topic=topic, group=group, orderly=True, consume_result="later-once")
    got = consumer.require("received", 2, WAIT_S, what="the suspended message consumed again")
    pause_s = suspend_millis(-1) / 1000
    gap = float(got[1]["_at"]) - float(got[0]["_at"])
    # 50 ms for reading the two lines from the driver.
    ctx.expect(gap >= pause_s - 0.05, f"the batch consumed again at least {pause_s:g} s after the first delivery "
                                      "(RETRY-24)", f"{gap:.3f} s later")


@cases.case("send-back-copy-counts-from-stored", clauses=("RETRY-18", "RETRY-17", "RETRY-9"),
            requirement="a send-back after a local re-consume gives a copy counting from the stored message, not "
                        "the local count", level=Level.SHOULD)
@client_case()
def send_back_copy_counts_from_stored(ctx: ClientContext) -> None:
    """The listener always answers RECONSUME_LATER. The first CONSUMER_SEND_MSG_BACK fails and so does the fallback
    send: the message is consumed again locally with reconsumeTimes 1 (RETRY-17). Its send-back then succeeds: the
    broker builds the copy from the stored message (reconsumeTimes 0) + 1 (RETRY-9), so the local raise is lost and
    the copy is delivered with reconsumeTimes 1 again (RETRY-18). The group's %RETRY% topic exists from the start
    (see retry-copy-not-before-its-delay)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.cluster.create_topic(RETRY_GROUP_TOPIC_PREFIX + group, 1, brokers=[BROKER_A])
    ctx.put_messages(topic, BROKER_A, 0, 1)
    ctx.faults.fail("*", "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR", times=1)
    ctx.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_ERROR")
    consumer = ctx.start("consumer", topic=topic, group=group, consume_result="later")
    consumer.require("received", 2, WAIT_S, what="the local re-delivery")
    got = consumer.require("received", 3, WAIT_S, what="the broker's copy after the local re-delivery")
    backs = ctx.requests(RequestCode.CONSUMER_SEND_MSG_BACK)
    ctx.expect(len(backs) >= 2, "a second send-back after the local re-delivery", f"{len(backs)} send-backs")
    stored_times = int(got[0].get("reconsumeTimes", 0))
    copy = consumer_send_back(stored_times, backs[1].int_field("delayLevel", 0),
                              backs[1].int_field("maxReconsumeTimes", CONFIGURED_MAX))
    times = [int(e.get("reconsumeTimes", -1)) for e in got[:3]]
    expected = [stored_times, stored_times + 1, copy.reconsume_times]
    ctx.expect(times == expected, f"reconsumeTimes {expected}: local + 1, then the stored message's + 1 "
                                  "(RETRY-17, RETRY-18)", str(times))
