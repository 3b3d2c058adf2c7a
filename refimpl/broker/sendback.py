"""Messages a consumer failed to consume go back to the broker (``SendMessageProcessor.consumerSendMsgBack`` and
``handleRetryAndDLQ`` of RocketMQ 4.9.8).

CONSUMER_SEND_MSG_BACK, in order:

1. unknown group (no auto creation) → SUBSCRIPTION_GROUP_NOT_EXIST; broker without write permission → NO_PERMISSION;
   a group with ``retryQueueNums <= 0`` → SUCCESS and the message is dropped;
2. a random retry queue is drawn, ``%RETRY%<group>`` is created (read/write, unit-sub flag in unit mode) and must be
   writable (NO_PERMISSION); the message is read by its commit-log offset (SYSTEM_ERROR when gone);
3. RETRY_TOPIC is set to the message's topic if absent and WAIT to false; the limit is the group's ``retryMaxTimes``,
   or the header's ``maxReconsumeTimes`` from clients at V3_4_9 or later;
4. ``reconsumeTimes >= limit`` or a negative delay level → ``%DLQ%<group>`` (one queue, read/write, DELAY 0);
   otherwise DELAY = the header's level, or ``3 + reconsumeTimes`` for level 0, so the store parks it;
5. the new message keeps body, flag, properties, sysFlag, born host and time; reconsumeTimes + 1; ORIGIN_MESSAGE_ID
   stays, or becomes the original's offset message id (the header's ``originMsgId`` is not used by 4.9.8);
6. PUT_OK → SUCCESS, any other store status → SYSTEM_ERROR with the status name as remark.

A message sent by a client straight to a retry topic (the client's fallback) is redirected to the DLQ when it has
been reconsumed too often (``redirect_retry_to_dlq``).
"""

from __future__ import annotations

import attrs

from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.events import SendBack
from rocketspec.refimpl.remoting import Channel, RemotingCommand
from rocketspec.refimpl.store import MessageToStore
from rocketspec.spec.protocol import (
    DLQ_NUMS_PER_GROUP,
    PERM_READ,
    PERM_WRITE,
    RANDOM_QUEUE_ID_BOUND,
    RETRY_GROUP_TOPIC_PREFIX,
    VERSION_V3_4_9,
    Property,
    PutMessageStatus,
    ResponseCode,
    dlq_topic,
    retry_topic,
    suggest_todo,
)

# TopicSysFlag.buildSysFlag(false, true): the retry topic of a unit-mode consumer carries the unit-sub bit.
_TOPIC_SYS_FLAG_UNIT_SUB = 0x2


@attrs.frozen
class SendBackHeader:
    """``ConsumerSendMsgBackRequestHeader``: offset, group and delayLevel are required."""

    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None

    @classmethod
    def parse(cls, request: RemotingCommand) -> SendBackHeader:
        """Decode the header; ``HeaderError`` (→ SYSTEM_ERROR) when a required field is missing or not a number."""
        return cls(
            offset=request.require_int("offset"),
            group=request.require("group"),
            delay_level=request.require_int("delayLevel"),
            origin_msg_id=request.field("originMsgId"),
            origin_topic=request.field("originTopic"),
            unit_mode=request.bool_field("unitMode"),
            max_reconsume_times=request.int_field("maxReconsumeTimes"),
        )


def _random_queue(broker: BrokerServices, queue_nums: int) -> int:
    """``ThreadLocalRandom.current().nextInt(99999999) % queueNums``."""
    return broker.runtime.random.randrange(RANDOM_QUEUE_ID_BOUND) % queue_nums


def consumer_send_back(broker: BrokerServices, request: RemotingCommand, channel: Channel) -> RemotingCommand:
    """CONSUMER_SEND_MSG_BACK: store the message again for a later retry, or in the group's dead-letter topic."""
    header = SendBackHeader.parse(request)
    group_config = broker.subscription_groups.find_or_create(header.group)
    if group_config is None:
        return request.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                remark=f"subscription group not exist, {header.group} {suggest_todo()}")
    if not broker.is_writeable():
        return request.response(ResponseCode.NO_PERMISSION,
                                remark=f"the broker[{broker.config.host}] sending message is forbidden")
    if group_config.retry_queue_nums <= 0:
        return request.response(ResponseCode.SUCCESS)

    new_topic = retry_topic(header.group)
    queue_id = _random_queue(broker, group_config.retry_queue_nums)
    topic_config = broker.topics.create_retry_topic(
        header.group, group_config.retry_queue_nums, _TOPIC_SYS_FLAG_UNIT_SUB if header.unit_mode else 0)
    if topic_config is None:
        return request.response(ResponseCode.SYSTEM_ERROR, remark=f"topic[{new_topic}] not exist")
    if not topic_config.perm & PERM_WRITE:
        return request.response(ResponseCode.NO_PERMISSION,
                                remark=f"the topic[{new_topic}] sending message is forbidden")

    original = broker.store.look_message(header.offset)
    if original is None:
        return request.response(ResponseCode.SYSTEM_ERROR, remark=f"look message by offset failed, {header.offset}")

    props = dict(original.properties)
    if props.get(Property.RETRY_TOPIC) is None:
        props[Property.RETRY_TOPIC] = original.topic
    props[Property.WAIT_STORE_MSG_OK] = "false"

    max_times = group_config.retry_max_times
    if request.version >= VERSION_V3_4_9 and header.max_reconsume_times is not None:
        max_times = header.max_reconsume_times

    delay_level = header.delay_level
    if original.reconsume_times >= max_times or delay_level < 0:
        new_topic = dlq_topic(header.group)
        queue_id = _random_queue(broker, DLQ_NUMS_PER_GROUP)
        # 4.9.8 creates the dead-letter topic readable and writable (write-only was 4.9.0 and 4.9.1 only).
        dlq_config = broker.topics.create_dlq_topic(header.group, DLQ_NUMS_PER_GROUP, PERM_READ | PERM_WRITE)
        if dlq_config is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=f"topic[{new_topic}] not exist")
        delay_level = 0
    elif delay_level == 0:
        delay_level = 3 + original.reconsume_times
    props[Property.DELAY_TIME_LEVEL] = str(delay_level)

    # MessageAccessor.setOriginMessageId: the first failure records the stored message's offset id.
    origin = props.get(Property.ORIGIN_MESSAGE_ID)
    props[Property.ORIGIN_MESSAGE_ID] = origin if origin and origin.strip() else original.offset_msg_id

    inner = MessageToStore(
        topic=new_topic,
        queue_id=queue_id,
        body=original.body,
        flag=original.flag,
        properties=props,
        sys_flag=original.sys_flag,
        born_timestamp=original.born_timestamp,
        born_host=original.born_host,
        reconsume_times=original.reconsume_times + 1,
    )
    # The copy's delay runs from its store timestamp, taken in the put: the sendback is stamped as of before the
    # put, so that however long the put and what it wakes take, the copy is never seen earlier than the sendback's
    # time plus the delay (retry_delay_dlq, RETRY-1/2).
    sent_back_at = broker.runtime.now_ms()
    result = broker.put_message(inner)
    if result.status is not PutMessageStatus.PUT_OK:
        return request.response(ResponseCode.SYSTEM_ERROR, remark=result.status.name)
    broker.stats.on_send_back(header.group, props[Property.RETRY_TOPIC], inner, result.size)
    broker.events.emit(SendBack(
        node=broker.name,
        group=header.group,
        topic=props[Property.RETRY_TOPIC],
        msg_id=original.msg_id,
        reconsume_times=inner.reconsume_times,
        delay_level=delay_level,
        target=new_topic,
        via="broker",
        max_reconsume_times=max_times,
        broker=broker.name,
    ), ts_ms=sent_back_at)
    return request.response(ResponseCode.SUCCESS)


def redirect_retry_to_dlq(broker: BrokerServices, msg: MessageToStore, group: str, max_reconsume_times: int
                          ) -> MessageToStore | RemotingCommand:
    """``handleRetryAndDLQ`` for a message sent to ``%RETRY%<group>`` (the group is known, the limit decided).

    Reconsumed ``max_reconsume_times`` times or more → the message goes to a random queue of ``%DLQ%<group>``
    (created read/write). Its properties are left as sent: RocketMQ's ``setDelayTimeLevel(0)`` here is overwritten
    when the send processor sets the request's properties afterwards, so a DELAY the client set still parks it.
    Returns the (possibly redirected) message, or a SYSTEM_ERROR command (``topic[...] not exist``) the send
    processor answers with.
    """
    if not msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or msg.reconsume_times < max_reconsume_times:
        return msg
    new_topic = dlq_topic(group)
    queue_id = _random_queue(broker, DLQ_NUMS_PER_GROUP)
    if broker.topics.create_dlq_topic(group, DLQ_NUMS_PER_GROUP, PERM_READ | PERM_WRITE) is None:
        return RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark=f"topic[{new_topic}] not exist")
    return attrs.evolve(msg, topic=new_topic, queue_id=queue_id)
