"""Broker conformance cases: delay levels (SCHEDULE_TOPIC_XXXX and delivery after the level's time).

A message sent with DELAY = n > 0 is parked in SCHEDULE_TOPIC_XXXX queue n - 1 with REAL_TOPIC / REAL_QID (a level
above the max is rewritten to the max), then stored under its real topic and queue once the level's delay (the
target's messageDelayLevel) has passed (RETRY-1..3). The cases read messageDelayLevel over the wire and wait a bounded
multiple of the level's delay, so a target configured with short levels is checked in seconds.
"""

from __future__ import annotations

from typing import Any

from rocketspec.conformance.broker.common import max_offset, producer_properties, stored, unique_key, wait_keyed
from rocketspec.conformance.broker.sendback import delay_levels, delivery_wait_s
from rocketspec.conformance.context import BrokerContext, Sent
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import MessageExt
from rocketspec.spec.consume_retry import delay_millis
from rocketspec.spec.protocol import SCHEDULE_TOPIC, Property

cases = CaseList("broker/delay")
CASES = cases.cases


def _send_delayed(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int, level: str,
                  **options: Any) -> tuple[str, Sent]:
    key = unique_key()
    sent = ctx.send(client, topic, f"delayed {level}".encode(), queue_id,
                    properties=producer_properties(key, extra={Property.DELAY_TIME_LEVEL: level}), **options)
    return key, sent


def _stored(ctx: BrokerContext, client: WireClient, sent: Sent) -> MessageExt:
    return stored(ctx, client, sent.commit_log_offset, f"the message {sent.msg_id} just sent")


@cases.case("parked-in-level-queue", clauses=("RETRY-2",),
            requirement="a message with DELAY n is stored in SCHEDULE_TOPIC_XXXX queue n - 1 with REAL_TOPIC and "
                        "REAL_QID naming where it was sent")
def parked_in_level_queue(ctx: BrokerContext) -> None:
    """RETRY-2: DELAY = 1, 2, 3 -> SCHEDULE_TOPIC_XXXX queues 0, 1, 2; REAL_TOPIC / REAL_QID = the send's topic and
    queue; DELAY kept."""
    topic = ctx.topic(2, brokers=[0])
    client = ctx.broker(0)
    for level in (1, 2, 3):
        _, sent = _send_delayed(ctx, client, topic, 1, str(level))
        stored = _stored(ctx, client, sent)
        ctx.expect_equal((stored.topic, stored.queue_id), (SCHEDULE_TOPIC, level - 1),
                         f"(topic, queueId) of the message sent with DELAY {level}")
        ctx.expect_equal((stored.get_property(Property.REAL_TOPIC), stored.get_property(Property.REAL_QUEUE_ID),
                          stored.get_property(Property.DELAY_TIME_LEVEL)), (topic, "1", str(level)),
                         f"(REAL_TOPIC, REAL_QID, DELAY) of the message sent with DELAY {level}")


@cases.case("level-above-max", clauses=("RETRY-1", "RETRY-2"),
            requirement="a DELAY above the max level is parked at the max level (the last queue), DELAY rewritten")
def level_above_max(ctx: BrokerContext) -> None:
    """RETRY-2: a level above the max (the number of entries of messageDelayLevel, RETRY-1) is rewritten to the max:
    queue max - 1, DELAY = max."""
    max_level = len(delay_levels(ctx))
    topic = ctx.topic(1, brokers=[0])
    client = ctx.broker(0)
    _, sent = _send_delayed(ctx, client, topic, 0, str(max_level + 5))
    stored = _stored(ctx, client, sent)
    ctx.expect_equal((stored.topic, stored.queue_id, stored.get_property(Property.DELAY_TIME_LEVEL)),
                     (SCHEDULE_TOPIC, max_level - 1, str(max_level)),
                     f"(topic, queueId, DELAY) of the message sent with DELAY {max_level + 5}")


@cases.case("not-delayed-at-zero", clauses=("RETRY-2",),
            requirement="DELAY 0 or a negative DELAY stores the message in its own topic at once")
def not_delayed_at_zero(ctx: BrokerContext) -> None:
    """RETRY-2: DELAY <= 0 is not delayed."""
    topic = ctx.topic(1, brokers=[0])
    client = ctx.broker(0)
    for level in ("0", "-1"):
        _, sent = _send_delayed(ctx, client, topic, 0, level)
        stored = _stored(ctx, client, sent)
        ctx.expect_equal((stored.topic, stored.queue_id), (topic, 0),
                         f"(topic, queueId) of the message sent with DELAY {level}")


@cases.case("delivered-after-delay", clauses=("RETRY-1", "RETRY-3"),
            requirement="a parked message is stored in its real topic and queue once the level's delay has passed, "
                        "not before, with body, tags and reconsumeTimes unchanged")
def delivered_after_delay(ctx: BrokerContext) -> None:
    """RETRY-3: due at store time + delay(level) (messageDelayLevel, RETRY-1), then put to REAL_TOPIC / REAL_QID with
    reconsumeTimes unchanged; the delivered copy's store time is not before the parked one's + the delay."""
    topic = ctx.topic(3, brokers=[0])
    client = ctx.broker(0)
    key, sent = _send_delayed(ctx, client, topic, 2, "1", reconsume_times=2)
    ctx.expect_equal(max_offset(client, topic, 2), 0, f"max offset of {topic}:2 right after the send")
    parked = _stored(ctx, client, sent)
    group = ctx.group()
    delivered = wait_keyed(ctx, client, group, topic, 2, key, timeout=delivery_wait_s(ctx, 1),
                           what=f"the delayed message in {topic}:2")
    delay_ms = delay_millis(1, delay_levels(ctx))
    ctx.expect(delivered.store_timestamp >= parked.store_timestamp + delay_ms,
               f"delivered at or after the parked store time + {delay_ms} ms ({parked.store_timestamp + delay_ms})",
               f"stored in {topic} at {delivered.store_timestamp}")
    ctx.expect_equal((delivered.body, delivered.tags, delivered.reconsume_times),
                     (parked.body, parked.tags, 2), "the delivered copy's (body, tags, reconsumeTimes)")
    ctx.expect_equal(max_offset(client, topic, 2), 1, f"max offset of {topic}:2 (delivered once)")


@cases.case("delivered-keeps-parked-properties", clauses=("RETRY-3",), level=Level.SHOULD,
            requirement="the delivered copy's stored properties are the parked ones (DELAY, REAL_TOPIC, REAL_QID "
                        "still shown), as 4.9.8 writes them")
def delivered_keeps_parked_properties(ctx: BrokerContext) -> None:
    """RETRY-3: 4.9.8's messageTimeup writes the parked property string before it clears DELAY in the map, so the
    delivered copy (not parked again) still shows DELAY, REAL_TOPIC and REAL_QID; WAIT is as sent."""
    topic = ctx.topic(1, brokers=[0])
    client = ctx.broker(0)
    key, _ = _send_delayed(ctx, client, topic, 0, "1")
    group = ctx.group()
    delivered = wait_keyed(ctx, client, group, topic, 0, key, timeout=delivery_wait_s(ctx, 1),
                           what=f"the delayed message in {topic}:0")
    shown = {name: delivered.get_property(name) for name in
             (Property.DELAY_TIME_LEVEL, Property.REAL_TOPIC, Property.REAL_QUEUE_ID)}
    ctx.expect_equal(shown, {Property.DELAY_TIME_LEVEL: "1", Property.REAL_TOPIC: topic, Property.REAL_QUEUE_ID: "0"},
                     "the delivered copy's DELAY, REAL_TOPIC and REAL_QID")
