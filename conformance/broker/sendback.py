"""Broker conformance cases: consumer send-back (CONSUMER_SEND_MSG_BACK) and sends to a retry topic.

A consumer that failed a message asks the broker to store it again (RETRY-4..10): a copy goes to ``%RETRY%<group>``
(created with the group's retryQueueNums queues), parked in SCHEDULE_TOPIC_XXXX for delay level ``request's level``
or ``3 + reconsumeTimes``, with reconsumeTimes + 1, RETRY_TOPIC = the original topic and ORIGIN_MESSAGE_ID kept; past
the maximum (or with a negative level) the copy goes to ``%DLQ%<group>`` (one queue) at once. A plain send to
``%RETRY%<group>`` over the maximum is redirected to the DLQ too (RETRY-11, RETRY-12).

The helpers at the top (delay-level waits, the parked and dead-letter copies of a message) are shared with the delay
and transaction cases; reading messages back is ``common``'s.
"""

from __future__ import annotations

from typing import Any

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import (
    DISPATCH_WAIT_S,
    FAR_COMMIT_LOG_OFFSET,
    max_offset,
    producer_properties,
    pull_from,
    queue_datas,
    stored,
    unique_key,
    wait_keyed,
    wait_message,
)
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import MessageExt
from rocketspec.spec.consume_retry import delay_millis, effective_delay_level, parse_delay_levels
from rocketspec.spec.protocol import (
    DLQ_NUMS_PER_GROUP,
    PERM_READ,
    SCHEDULE_TOPIC,
    VERSION_V3_4_9,
    Property,
    ResponseCode,
    dlq_topic,
    retry_topic,
)

cases = CaseList("broker/sendback")
CASES = cases.cases

# How long a delayed delivery may take beyond its level's delay: a multiple of the delay plus a fixed slack.
DELIVERY_DELAY_FACTOR = 3
DELIVERY_SLACK_S = 5.0


# ------------------------------------------------------------------------------------------------------ helpers
def delay_levels(ctx: BrokerContext) -> tuple[int, ...]:
    """The target's delay table in ms (its messageDelayLevel, RETRY-1)."""
    return parse_delay_levels(ctx.setting("messageDelayLevel"))


def delivery_wait_s(ctx: BrokerContext, level: int) -> float:
    """How long a case waits for a message delayed by ``level``: a bounded multiple of the level's delay."""
    return DELIVERY_DELAY_FACTOR * delay_millis(level, delay_levels(ctx)) / 1000 + DELIVERY_SLACK_S


def parked_copy(ctx: BrokerContext, client: WireClient, group: str, level: int, real_topic: str, key: str,
                start: int) -> MessageExt:
    """The copy of message ``key`` parked for ``real_topic`` in the schedule queue of ``level``, read from
    ``start`` on (the queue is shared with every other delayed message of the broker)."""
    queue_id = effective_delay_level(level, len(delay_levels(ctx))) - 1
    return wait_message(ctx, client, group, SCHEDULE_TOPIC, [queue_id],
                        lambda m: m.get_property(Property.REAL_TOPIC) == real_topic and m.unique_key == key,
                        DISPATCH_WAIT_S, start={queue_id: start},
                        what=f"a copy of {key} for {real_topic} in {SCHEDULE_TOPIC} queue {queue_id} (level {level})")


def send_and_pull(ctx: BrokerContext, client: WireClient, topic: str, group: str, body: bytes = b"failed once",
                  properties: dict[str, str] | None = None, **options: Any) -> MessageExt:
    """Send one message to queue 0 of ``topic`` and pull it back, as the consumer that will send it back."""
    key = unique_key()
    ctx.send(client, topic, body, 0, properties={**producer_properties(key), **(properties or {})}, **options)
    return wait_keyed(ctx, client, group, topic, 0, key,
                      what=f"the message just sent ({key}) to be pulled from {topic}:0")


def dead_letter(ctx: BrokerContext, client: WireClient, group: str, key: str | None) -> MessageExt:
    """The copy of message ``key`` in %DLQ%<group> queue 0 (waited for: the consume queue is built after the put)."""
    return wait_keyed(ctx, client, group, dlq_topic(group), 0, key, what=f"the copy of {key} in {dlq_topic(group)}:0")


def expect_dead_copy(ctx: BrokerContext, client: WireClient, group: str, topic: str, original: MessageExt,
                     reconsume_times: int) -> None:
    """The dead-letter copy of ``original`` (sent to ``topic``) has ``reconsume_times``, RETRY_TOPIC = ``topic`` and
    ORIGIN_MESSAGE_ID = the original's offset message id (the first failure's)."""
    dead = dead_letter(ctx, client, group, original.unique_key)
    ctx.expect_equal((dead.reconsume_times, dead.get_property(Property.RETRY_TOPIC),
                      dead.get_property(Property.ORIGIN_MESSAGE_ID)), (reconsume_times, topic, original.offset_msg_id),
                     "the dead-letter copy's (reconsumeTimes, RETRY_TOPIC, ORIGIN_MESSAGE_ID)")


def queue_data(ctx: BrokerContext, topic: str, broker: int = 0) -> dict[str, object]:
    """The name server's queue data of ``topic`` for one master, waited for (a created topic is registered)."""
    namesrv = ctx.namesrv()
    name = ctx.brokers[broker].name
    return ctx.wait_until(lambda: queue_datas(namesrv.request(requests.route(topic))).get(name), 10.0,
                          what=f"the name server to route {topic} on {name}", interval=0.2)


def consumer_group(ctx: BrokerContext, **options: Any) -> str:
    """A new consumer group (``ctx.group``) whose %RETRY% and %DLQ% topics are deleted after the run too."""
    group = ctx.group(**options)
    ctx.target.created_topics.update({retry_topic(group), dlq_topic(group)})
    return group


def consumed(ctx: BrokerContext, retry_queues: int = 1, *, group_options: dict[str, object] | None = None,
             **send_options: object) -> tuple[WireClient, str, str, MessageExt]:
    """A connection to the first master, a new one-queue topic there, a consumer group with ``retry_queues`` retry
    queues, and a message sent to the topic and pulled back by the group (what a consumer sends back)."""
    topic = ctx.topic(1, brokers=[0])
    group = consumer_group(ctx, retry_queues=retry_queues, **(group_options or {}))
    client = ctx.broker(0)
    return client, topic, group, send_and_pull(ctx, client, topic, group, **send_options)  # type: ignore[arg-type]


def send_back_ok(ctx: BrokerContext, client: WireClient, group: str, message: MessageExt, **options: object) -> None:
    """CONSUMER_SEND_MSG_BACK of a pulled message, requiring SUCCESS."""
    answer = client.request(requests.send_back(group, message.commit_log_offset, origin_msg_id=message.msg_id,
                                               origin_topic=message.topic, **options))  # type: ignore[arg-type]
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"CONSUMER_SEND_MSG_BACK of {message.offset_msg_id}")


# -------------------------------------------------------------------------------------------------------- cases
@cases.case("retry-copy", clauses=("RETRY-8", "RETRY-9", "RETRY-3"),
            requirement="a message sent back comes back in %RETRY%<group> with reconsumeTimes + 1, RETRY_TOPIC = "
                        "the original topic and ORIGIN_MESSAGE_ID = the original's offset message id")
def retry_copy(ctx: BrokerContext) -> None:
    """RETRY-8/9: CONSUMER_SEND_MSG_BACK (delayLevel 0) of a pulled message stores a copy in a queue of
    %RETRY%<group> once level 3's delay has passed (RETRY-3); the copy keeps body, tags and UNIQ_KEY, has
    reconsumeTimes = stored + 1, RETRY_TOPIC = the original topic and ORIGIN_MESSAGE_ID = the stored message's
    offset message id."""
    client, topic, group, original = consumed(ctx, 2, body=b"retry me")
    send_back_ok(ctx, client, group, original, delay_level=0)
    copy = wait_message(ctx, client, group, retry_topic(group), range(2), lambda m: m.unique_key == original.unique_key,
                        delivery_wait_s(ctx, 3), what=f"the copy of {original.offset_msg_id} in {retry_topic(group)}")
    ctx.expect_equal(copy.reconsume_times, original.reconsume_times + 1, "the copy's reconsumeTimes")
    ctx.expect_equal(copy.get_property(Property.RETRY_TOPIC), topic, "the copy's RETRY_TOPIC")
    ctx.expect_equal(copy.get_property(Property.ORIGIN_MESSAGE_ID), original.offset_msg_id,
                     "the copy's ORIGIN_MESSAGE_ID")
    ctx.expect_equal((copy.body, copy.tags), (original.body, original.tags), "the copy's (body, tags)")


@cases.case("retry-delay-level", clauses=("RETRY-8", "RETRY-2"),
            requirement="the copy is parked at the request's delay level, or at 3 + reconsumeTimes when the "
                        "request's level is 0")
def retry_delay_level(ctx: BrokerContext) -> None:
    """RETRY-8: delay level = the request's delayLevel if > 0, else 3 + the stored reconsumeTimes; RETRY-2: the copy
    is stored in SCHEDULE_TOPIC_XXXX queue level - 1 with DELAY = level, REAL_TOPIC = %RETRY%<group> and
    REAL_QID = its retry queue."""
    client, _topic, group, original = consumed(ctx, 1, reconsume_times=2)
    ctx.expect_equal(original.reconsume_times, 2, "the stored reconsumeTimes (sent in the header)")
    max_level = len(delay_levels(ctx))
    for requested, expected in ((0, effective_delay_level(3 + 2, max_level)), (2, effective_delay_level(2, max_level))):
        queue_id = expected - 1
        start = max_offset(client, SCHEDULE_TOPIC, queue_id)
        send_back_ok(ctx, client, group, original, delay_level=requested)
        parked = parked_copy(ctx, client, group, expected, retry_topic(group), original.unique_key or "", start)
        ctx.expect_equal(parked.get_property(Property.DELAY_TIME_LEVEL), str(expected),
                         f"DELAY of the copy parked for request delayLevel {requested}")
        ctx.expect_equal(parked.get_property(Property.REAL_QUEUE_ID), "0", "REAL_QID of the parked copy")
        ctx.expect_equal(parked.reconsume_times, 3, "reconsumeTimes of the parked copy")


@cases.case("retry-topic-created", clauses=("RETRY-10",),
            requirement="the first send back creates %RETRY%<group> with the group's retryQueueNums queues, "
                        "readable and writable")
def retry_topic_created(ctx: BrokerContext) -> None:
    """RETRY-10: a missing %RETRY%<group> is created on send back with retryQueueNums read and write queues and
    perm RW, and registered at the name server."""
    client, _topic, group, original = consumed(ctx, 3)
    send_back_ok(ctx, client, group, original)
    data = queue_data(ctx, retry_topic(group))
    ctx.expect_equal((data.get("readQueueNums"), data.get("writeQueueNums"), data.get("perm")), (3, 3, 6),
                     f"{retry_topic(group)} (readQueueNums, writeQueueNums, perm)")


@cases.case("dlq-after-max", clauses=("RETRY-6", "RETRY-7", "RETRY-10"),
            requirement="a message reconsumed maxReconsumeTimes times goes to %DLQ%<group> (one queue) at once")
def dlq_after_max(ctx: BrokerContext) -> None:
    """RETRY-6/7: with the request's maxReconsumeTimes = 2 and a stored reconsumeTimes of 2 the copy goes to
    %DLQ%<group> queue 0 without delay; RETRY-10: the DLQ topic is created with one queue."""
    client, topic, group, original = consumed(ctx, 1, reconsume_times=2)
    send_back_ok(ctx, client, group, original, max_reconsume_times=2)
    expect_dead_copy(ctx, client, group, topic, original, 3)
    data = queue_data(ctx, dlq_topic(group))
    ctx.expect_equal((data.get("readQueueNums"), data.get("writeQueueNums")),
                     (DLQ_NUMS_PER_GROUP, DLQ_NUMS_PER_GROUP), f"{dlq_topic(group)} (readQueueNums, writeQueueNums)")


@cases.case("dlq-negative-delay-level", clauses=("RETRY-7",),
            requirement="a send back with delayLevel < 0 goes to %DLQ%<group> whatever the reconsume count")
def dlq_negative_delay_level(ctx: BrokerContext) -> None:
    """RETRY-7: a negative delayLevel sends the copy to the dead-letter queue even on the first failure."""
    client, _topic, group, original = consumed(ctx, 1)
    send_back_ok(ctx, client, group, original, delay_level=-1)
    dead = dead_letter(ctx, client, group, original.unique_key)
    ctx.expect_equal(dead.reconsume_times, 1, "the dead-letter copy's reconsumeTimes")


@cases.case("dlq-exactly-at-threshold", clauses=("RETRY-6", "RETRY-7", "RETRY-8", "RETRY-9"),
            requirement="with maxReconsumeTimes 1 the first send back retries and the retried copy's send back "
                        "is dead-lettered, RETRY_TOPIC and ORIGIN_MESSAGE_ID kept")
def dlq_exactly_at_threshold(ctx: BrokerContext) -> None:
    """RETRY-6/7/8: the copy is dead-lettered when its stored reconsumeTimes reaches the max (>=), not before;
    RETRY-9: a copy's RETRY_TOPIC and ORIGIN_MESSAGE_ID are kept on the next send back."""
    client, topic, group, original = consumed(ctx, 1)
    send_back_ok(ctx, client, group, original, max_reconsume_times=1)
    retried = wait_message(ctx, client, group, retry_topic(group), [0],
                           lambda m: m.unique_key == original.unique_key, delivery_wait_s(ctx, 3),
                           what=f"the copy in {retry_topic(group)}")
    # The consume queues are built in commit-log order: a dead-letter copy of the first send back would show by now.
    ctx.expect_equal(max_offset(client, dlq_topic(group), 0), 0, f"max offset of {dlq_topic(group)}:0 after the "
                                                                 "first send back (reconsumeTimes 0 < 1)")
    send_back_ok(ctx, client, group, retried, max_reconsume_times=1)
    expect_dead_copy(ctx, client, group, topic, original, 2)


@cases.case("max-from-group-unless-request", clauses=("RETRY-6", "RETRY-7"),
            requirement="without maxReconsumeTimes in the request the group's retryMaxTimes is the maximum; "
                        "with it, the request's")
def max_from_group_unless_request(ctx: BrokerContext) -> None:
    """RETRY-6: the group's retryMaxTimes (1 here) decides when the request carries no maxReconsumeTimes (stored
    reconsumeTimes 1 -> DLQ); a request (version >= V3_4_9) carrying 5 overrides it (-> retry)."""
    client, _topic, group, original = consumed(ctx, 1, group_options={"retry_max_times": 1}, reconsume_times=1)
    send_back_ok(ctx, client, group, original, max_reconsume_times=None)
    dead_letter(ctx, client, group, original.unique_key)
    level = effective_delay_level(3 + 1, len(delay_levels(ctx)))
    start = max_offset(client, SCHEDULE_TOPIC, level - 1)
    send_back_ok(ctx, client, group, original, max_reconsume_times=5)
    parked_copy(ctx, client, group, level, retry_topic(group), original.unique_key or "", start)
    ctx.expect_equal(max_offset(client, dlq_topic(group), 0), 1,
                     f"max offset of {dlq_topic(group)}:0 after a send back with maxReconsumeTimes 5")


@cases.case("max-ignored-before-v3-4-9", clauses=("RETRY-6",), level=Level.SHOULD,
            requirement="a send back from a client older than V3_4_9 (version < 121) is judged by the group's "
                        "retryMaxTimes even if it carries maxReconsumeTimes")
def max_ignored_before_v3_4_9(ctx: BrokerContext) -> None:
    """RETRY-6: the request's maxReconsumeTimes replaces the group's only when the request version >= V3_4_9; an
    older request carrying maxReconsumeTimes 0 is retried (group max 16), not dead-lettered."""
    client, _topic, group, original = consumed(ctx, 1)
    level = effective_delay_level(3, len(delay_levels(ctx)))
    start = max_offset(client, SCHEDULE_TOPIC, level - 1)
    old = attrs.evolve(requests.send_back(group, original.commit_log_offset, max_reconsume_times=0),
                       version=VERSION_V3_4_9 - 1)
    ctx.expect_code(client.request(old), ResponseCode.SUCCESS, f"CONSUMER_SEND_MSG_BACK version {VERSION_V3_4_9 - 1}")
    parked_copy(ctx, client, group, level, retry_topic(group), original.unique_key or "", start)
    ctx.expect_equal(max_offset(client, dlq_topic(group), 0), 0, f"max offset of {dlq_topic(group)}:0")


@cases.case("retry-queue-nums-zero", clauses=("RETRY-4", "RETRY-5"),
            requirement="a group with retryQueueNums 0 gets SUCCESS and nothing is stored")
def retry_queue_nums_zero(ctx: BrokerContext) -> None:
    """RETRY-4/5: retryQueueNums <= 0 answers SUCCESS before anything else is looked at: no retry copy, no
    dead-letter copy (even for delayLevel -1 or an offset with no message)."""
    client, topic, group, original = consumed(ctx, 0)
    send_back_ok(ctx, client, group, original, delay_level=-1)
    answer = client.request(requests.send_back(group, FAR_COMMIT_LOG_OFFSET))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "CONSUMER_SEND_MSG_BACK of an offset with no message")
    send_and_pull(ctx, client, topic, group, b"barrier")  # consume queues are built in order: anything stored shows
    ctx.expect_equal(max_offset(client, dlq_topic(group), 0), 0, f"max offset of {dlq_topic(group)}:0")
    route = ctx.namesrv().request(requests.route(retry_topic(group)))
    ctx.expect_code(route, ResponseCode.TOPIC_NOT_EXIST, f"the route of {retry_topic(group)} (never created)")


@cases.case("unknown-offset", clauses=("RETRY-4",),
            requirement="a send back naming a commit-log offset with no message answers SYSTEM_ERROR")
def unknown_offset(ctx: BrokerContext) -> None:
    """RETRY-4: no message at the offset -> SYSTEM_ERROR ("look message by offset failed, <offset>" in 4.9.8)."""
    group = consumer_group(ctx, retry_queues=1)
    client = ctx.broker(0)
    answer = client.request(requests.send_back(group, FAR_COMMIT_LOG_OFFSET))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "CONSUMER_SEND_MSG_BACK of an offset with no message")


@cases.case("unknown-offset-remark", clauses=("RETRY-4",), level=Level.SHOULD,
            requirement="the SYSTEM_ERROR for an unknown offset says 'look message by offset failed, <offset>'")
def unknown_offset_remark(ctx: BrokerContext) -> None:
    """RETRY-4, 4.9.8's remark text."""
    group = consumer_group(ctx, retry_queues=1)
    answer = ctx.broker(0).request(requests.send_back(group, FAR_COMMIT_LOG_OFFSET))
    expected = f"look message by offset failed, {FAR_COMMIT_LOG_OFFSET}"
    ctx.expect_equal(answer.remark, expected, "the remark")


@cases.case("retry-topic-not-writable", clauses=("RETRY-4",),
            requirement="a send back when %RETRY%<group> exists without the write bit answers NO_PERMISSION")
def retry_topic_not_writable(ctx: BrokerContext) -> None:
    """RETRY-4: the retry topic's perm is checked (NO_PERMISSION) before the message is looked up."""
    client, _topic, group, original = consumed(ctx, 1)
    answer = client.request(requests.create_topic(retry_topic(group), 1, perm=PERM_READ))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"UPDATE_AND_CREATE_TOPIC {retry_topic(group)} perm R")
    answer = client.request(requests.send_back(group, original.commit_log_offset))
    ctx.expect_code(answer, ResponseCode.NO_PERMISSION, "CONSUMER_SEND_MSG_BACK to a read-only retry topic")
    answer = client.request(requests.send_back(group, FAR_COMMIT_LOG_OFFSET))
    ctx.expect_code(answer, ResponseCode.NO_PERMISSION, "the same for an offset with no message")


@cases.case("preset-origin-kept", clauses=("RETRY-9",),
            requirement="a message already carrying RETRY_TOPIC and ORIGIN_MESSAGE_ID keeps both in its copy")
def preset_origin_kept(ctx: BrokerContext) -> None:
    """RETRY-9: RETRY_TOPIC is set only when absent; ORIGIN_MESSAGE_ID is kept unless blank (the request's
    originMsgId is not what 4.9.8 stores)."""
    preset = {Property.RETRY_TOPIC: "rscf_first_topic", Property.ORIGIN_MESSAGE_ID: "0A0A0A0A00002A9F0000000000000001"}
    client, _topic, group, original = consumed(ctx, 1, properties=preset)
    send_back_ok(ctx, client, group, original, delay_level=-1)
    dead = dead_letter(ctx, client, group, original.unique_key)
    ctx.expect_equal((dead.get_property(Property.RETRY_TOPIC), dead.get_property(Property.ORIGIN_MESSAGE_ID)),
                     (preset[Property.RETRY_TOPIC], preset[Property.ORIGIN_MESSAGE_ID]),
                     "the copy's (RETRY_TOPIC, ORIGIN_MESSAGE_ID)")


def _send_to_retry(ctx: BrokerContext, client: WireClient, group: str, reconsume_times: int, max_times: int,
                   extra: dict[str, str] | None = None) -> tuple[str, str]:
    """A plain send to %RETRY%<group> queue 0 as a consumer's fallback does; returns (UNIQ_KEY, answered msgId)."""
    key = unique_key()
    answer = client.request(requests.send_v2("rscf_producer", retry_topic(group), b"fallback", 0,
                                             producer_properties(key, extra=extra), reconsume_times=reconsume_times,
                                             max_reconsume_times=max_times))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_MESSAGE_V2 to {retry_topic(group)} "
                                                  f"(reconsumeTimes {reconsume_times}, max {max_times})")
    return key, answer.require("msgId")


@cases.case("retry-send-over-max-to-dlq", clauses=("RETRY-11",),
            requirement="a plain send to %RETRY%<group> with reconsumeTimes >= max is stored in %DLQ%<group>; "
                        "below max it stays in the retry topic")
def retry_send_over_max_to_dlq(ctx: BrokerContext) -> None:
    """RETRY-11: the header's reconsumeTimes is compared with the header's maxReconsumeTimes: >= max -> %DLQ%<group>
    queue 0 with the header's reconsumeTimes; < max -> the retry topic as asked."""
    group = consumer_group(ctx, retry_queues=1)
    client = ctx.broker(0)
    below, _ = _send_to_retry(ctx, client, group, 2, 3)
    over, _ = _send_to_retry(ctx, client, group, 3, 3)
    dead_letter(ctx, client, group, over)
    retried = [m.unique_key for m in pull_from(ctx, client, group, retry_topic(group), 0)]
    ctx.expect_equal(retried, [below], f"UNIQ_KEYs stored in {retry_topic(group)}:0")
    dead = [m for m in pull_from(ctx, client, group, dlq_topic(group), 0)]
    ctx.expect_equal([(m.unique_key, m.reconsume_times) for m in dead], [(over, 3)],
                     f"(UNIQ_KEY, reconsumeTimes) stored in {dlq_topic(group)}:0")


@cases.case("retry-send-max-from-group", clauses=("RETRY-11",),
            requirement="a plain send to %RETRY%<group> without maxReconsumeTimes is judged by the group's "
                        "retryMaxTimes")
def retry_send_max_from_group(ctx: BrokerContext) -> None:
    """RETRY-11: with no maxReconsumeTimes in the header the group's retryMaxTimes (2 here) is the max:
    reconsumeTimes 1 stays in the retry topic, 2 goes to %DLQ%<group>."""
    group = consumer_group(ctx, retry_queues=1, retry_max_times=2)
    client = ctx.broker(0)
    keys = []
    for reconsume_times in (1, 2):
        key = unique_key()
        answer = client.request(requests.send_v2("rscf_producer", retry_topic(group), b"fallback", 0,
                                                 producer_properties(key), reconsume_times=reconsume_times))
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_MESSAGE_V2 to {retry_topic(group)} without "
                                                      f"maxReconsumeTimes (reconsumeTimes {reconsume_times})")
        keys.append(key)
    dead_letter(ctx, client, group, keys[1])
    retried = [m.unique_key for m in pull_from(ctx, client, group, retry_topic(group), 0)]
    ctx.expect_equal(retried, [keys[0]], f"UNIQ_KEYs stored in {retry_topic(group)}:0")


@cases.case("retry-send-dlq-keeps-delay", clauses=("RETRY-11", "RETRY-12", "RETRY-2"), level=Level.SHOULD,
            requirement="a plain send to %RETRY%<group> over max with DELAY is parked for %DLQ%<group> and lands "
                        "there after the delay")
def retry_send_dlq_keeps_delay(ctx: BrokerContext) -> None:
    """RETRY-12: the request's properties are applied after the switch to the DLQ, so DELAY 1 parks the message in
    SCHEDULE_TOPIC_XXXX queue 0 with REAL_TOPIC %DLQ%<group> before it reaches the DLQ."""
    group = consumer_group(ctx, retry_queues=1)
    client = ctx.broker(0)
    key, msg_id = _send_to_retry(ctx, client, group, 5, 3, {Property.DELAY_TIME_LEVEL: "1"})
    parked = stored(ctx, client, int(msg_id[-16:], 16), f"the message {msg_id}")
    ctx.expect_equal((parked.topic, parked.queue_id, parked.get_property(Property.REAL_TOPIC)),
                     (SCHEDULE_TOPIC, 0, dlq_topic(group)), "the stored message's (topic, queueId, REAL_TOPIC)")
    wait_keyed(ctx, client, group, dlq_topic(group), 0, key, timeout=delivery_wait_s(ctx, 1),
               what=f"the message in {dlq_topic(group)}:0 after level 1's delay")
