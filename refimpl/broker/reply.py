"""SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 (``ReplyMessageProcessor`` of RocketMQ 4.9.8): request-reply.

A requester (``DefaultMQProducer.request``) sends a message carrying CORRELATION_ID, REPLY_TO_CLIENT (its client id)
and TTL; the consumer answers with ``MessageUtil.createReplyMessage`` (topic ``<CLUSTER>_REPLY_TOPIC``, MSG_TYPE
``reply``), which its producer sends with a reply request code. The broker, in order:

1. parses the send header (V2: the one-letter names) and runs the send path's ``msgCheck`` (topic validity, system
   topics, auto creation, queue id): its errors are answered as for a send; a missing topic is "The specified topic
   is blank." (4.9.8's decoder leaves it null); a missing number is SYSTEM_ERROR with Java's NullPointerException
   text at the frame that unboxes it (``REPLY_UNBOXING``), as ``SendMessageHeader.parse`` renders it;
2. a negative queue id becomes a random writable queue;
3. pushes the reply to the requester: PUSH_REPLY_MESSAGE_TO_CLIENT (``ReplyMessageRequestHeader``: the send header's
   fields, properties plus PUSH_REPLY_TIME, bornHost and storeHost as ``ip:port``, storeTimestamp) on the connection
   the producer manager knows for that client id, waiting up to 10 s (``Broker2Client.callClient``). The answer is
   SUCCESS (msgId "0", queue id, queue offset 0) when the client answers SUCCESS; otherwise SYSTEM_ERROR with
   "reply message properties[REPLY_TO_CLIENT] is null", "push reply message fail, channel of <id> not found." or
   "push reply message to <id>fail." (sic: no space);
4. with ``storeReplyMessageEnable`` (default true) stores the reply as sent: the properties string of the header
   (neither CLUSTER nor PUSH_REPLY_TIME added, WAIT kept), sysFlag 0 (the processor never sets it), born host = the
   replier's address; a stored reply takes the store's msgId, queue id and offset in the answer, whose code stays the
   push's. A failed put is only logged.

The requester's client adds ARRIVE_TIME and completes the request whose CORRELATION_ID matches. Here the push is
asynchronous: the answer to the replier is sent when the requester's answer (or the timeout) arrives, as 4.9.8's
blocking call amounts to.
"""

from __future__ import annotations

from typing import Any

from rocketspec.refimpl.broker.send import JAVA_PROCESSOR_PACKAGE, MSG_CHECK_FRAME, SendMessageHeader
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.message import decode_properties, encode_properties
from rocketspec.refimpl.remoting import Channel, RemotingCommand
from rocketspec.refimpl.runtime import Future
from rocketspec.refimpl.store import MessageToStore
from rocketspec.spec.protocol import (
    BROKER_CALL_CLIENT_TIMEOUT_MS,
    RANDOM_QUEUE_ID_BOUND,
    STORED_PUT_STATUSES,
    Property,
    RequestCode,
    ResponseCode,
)


def _push_header(broker: BrokerServices, header: SendMessageHeader, channel: Channel, properties: str | None
                 ) -> dict[str, Any]:
    """``ReplyMessageRequestHeader`` as ``pushReplyMessage`` fills it (null fields left out)."""
    fields: dict[str, Any] = {
        "producerGroup": header.producer_group,
        "topic": header.topic,
        "defaultTopic": header.default_topic,
        "defaultTopicQueueNums": header.default_topic_queue_nums,
        "queueId": header.queue_id,
        "sysFlag": header.sys_flag,
        "bornTimestamp": header.born_timestamp,
        "flag": header.flag,
        "unitMode": header.unit_mode,
        "bornHost": channel.remote_addr,
        "storeHost": broker.addr,
        "storeTimestamp": broker.runtime.now_ms(),
    }
    if properties is not None:
        fields["properties"] = properties
    if header.reconsume_times is not None:
        fields["reconsumeTimes"] = header.reconsume_times
    return fields


# Header numbers ReplyMessageProcessor.processReplyMessageRequest unboxes, in its order, with the throwing frame.
_REPLY_AT = f"{JAVA_PROCESSOR_PACKAGE}ReplyMessageProcessor.processReplyMessageRequest(ReplyMessageProcessor.java:"
REPLY_UNBOXING = {
    "queueId": ("getQueueId", "Integer.intValue", MSG_CHECK_FRAME),
    "flag": ("getFlag", "Integer.intValue", f"{_REPLY_AT}137)"),
    "bornTimestamp": ("getBornTimestamp", "Long.longValue", f"{_REPLY_AT}140)"),
    "sysFlag": ("getSysFlag", "Integer.intValue", f"{_REPLY_AT}170)"),
}


def send_reply_message(broker: BrokerServices, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
    """SEND_REPLY_MESSAGE(_V2): push the reply to its requester, store it, answer (once the push is decided)."""
    sender = broker.sender
    header = SendMessageHeader.parse(request, REPLY_UNBOXING)
    error, topic_config = sender.check(request, header, channel)
    if error is not None:
        return error
    assert topic_config is not None
    queue_id = header.queue_id
    if queue_id < 0:
        if topic_config.write_queue_nums <= 0:  # Java's "% 0": an ArithmeticException, answered as SYSTEM_ERROR
            return sender._reply(request, ResponseCode.SYSTEM_ERROR, "ArithmeticException: / by zero")
        queue_id = broker.runtime.random.randrange(RANDOM_QUEUE_ID_BOUND) % topic_config.write_queue_nums
    properties = decode_properties(header.properties or "")
    msg = MessageToStore(
        topic=header.topic,
        queue_id=queue_id,
        body=request.body or b"",
        flag=header.flag,
        properties=properties,
        sys_flag=0,
        born_timestamp=header.born_timestamp,
        born_host=channel.remote_addr,
        reconsume_times=header.reconsume_times or 0,
    )

    def finish(push_ok: bool, remark: str | None) -> RemotingCommand:
        fields: dict[str, Any] = {}
        if push_ok:
            fields = {"msgId": "0", "queueId": queue_id, "queueOffset": 0}
        if broker.config.store_reply_message_enable:
            result = broker.put_message(msg)
            broker.stats.on_put(msg, result)
            if result.status in STORED_PUT_STATUSES:
                fields = {"msgId": result.offset_msg_id, "queueId": queue_id, "queueOffset": result.queue_offset}
        if push_ok:
            return sender._reply(request, ResponseCode.SUCCESS, None, fields)
        return sender._reply(request, ResponseCode.SYSTEM_ERROR, remark, fields)

    sender_id = properties.get(Property.MESSAGE_REPLY_TO_CLIENT)
    if sender_id is None:
        return finish(False, f"reply message properties[{Property.MESSAGE_REPLY_TO_CLIENT}] is null")
    target = broker.producers.find_channel(sender_id)
    if target is None:
        return finish(False, f"push reply message fail, channel of <{sender_id}> not found.")
    pushed = dict(properties)
    pushed[Property.PUSH_REPLY_TIME] = str(broker.runtime.now_ms())
    push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
                                   _push_header(broker, header, channel, encode_properties(pushed)),
                                   request.body or b"")
    future = target.invoke(push, BROKER_CALL_CLIENT_TIMEOUT_MS)

    def pushed_done(done: Future[RemotingCommand]) -> None:
        ok = done.exception() is None and done.result().code == ResponseCode.SUCCESS
        response = finish(ok, None if ok else f"push reply message to {sender_id}fail.")
        if not request.is_oneway:
            channel.send_response(response)

    future.add_done_callback(pushed_done)
    return None


__all__ = ["send_reply_message"]
