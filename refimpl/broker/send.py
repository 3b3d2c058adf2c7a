"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (``SendMessageProcessor`` / ``AbstractSendMessageProcessor``
of 4.9.8, the ``asyncSendMessage`` / ``asyncSendBatchMessage`` paths).

Order of checks (``msgCheck``): a broker without write permission refuses order topics (NO_PERMISSION); the topic
name must be valid (SYSTEM_ERROR) and not a system topic closed to clients (NO_PERMISSION); an unknown topic is
created from the default topic (TBW102) when that is allowed, a retry topic with one queue, else TOPIC_NOT_EXIST; a
queue id beyond both queue counts is a SYSTEM_ERROR. A negative queue id picks a random writable queue. A message for
a retry topic that has been reconsumed too often goes to the group's dead-letter topic; a prepared transaction
message becomes a half message. The store's status becomes the response code (``handlePutMessageResult``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from rocketspec.refimpl.broker.sendback import redirect_retry_to_dlq
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.broker.topics import TopicConfig, is_not_allowed_send_topic, validate_topic
from rocketspec.refimpl.message import decode_batch, decode_properties, encode_properties
from rocketspec.refimpl.remoting import Channel, HeaderError, RemotingCommand, java_null_unboxed
from rocketspec.refimpl.store import MessageToStore, PutResult
from rocketspec.spec.protocol import (
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    PROPERTY_MSG_REGION,
    PROPERTY_SEPARATOR,
    PROPERTY_TRACE_SWITCH,
    RANDOM_QUEUE_ID_BOUND,
    RETRY_GROUP_TOPIC_PREFIX,
    SEND_MESSAGE_V2_FIELDS,
    SYSFLAG_MULTI_TAGS,
    SYSFLAG_TRANSACTION_MASK,
    TOPIC_MAX_LENGTH,
    TRANSACTION_NOT_TYPE,
    VERSION_V3_4_9,
    Property,
    PutMessageStatus,
    RequestCode,
    ResponseCode,
    suggest_todo,
)

_V2_NAME = {long: letter for letter, long in SEND_MESSAGE_V2_FIELDS.items()}
# TopicSysFlag: bit 0 unit, bit 1 unit-sub.
_TOPIC_SYS_FLAG_UNIT = 0x1
_TOPIC_SYS_FLAG_UNIT_SUB = 0x2
# Remark of a MESSAGE_ILLEGAL put status (the body limit is the store's maxMessageSize).
_ILLEGAL_REMARK = ("the message is illegal, maybe msg body or properties length not matched. msg body length limit "
                   "{}B, msg properties length limit 32KB.")


def perm_to_string(perm: int) -> str:
    """``PermName.perm2String``: ``RWX`` with ``-`` for missing read, write and inherit bits."""
    return (("R" if perm & PERM_READ else "-") + ("W" if perm & PERM_WRITE else "-")
            + ("X" if perm & PERM_INHERIT else "-"))


def topic_config_text(topic: TopicConfig) -> str:
    """``TopicConfig.toString``."""
    return (f"TopicConfig [topicName={topic.topic_name}, readQueueNums={topic.read_queue_nums}, "
            f"writeQueueNums={topic.write_queue_nums}, perm={perm_to_string(topic.perm)}, "
            f"topicFilterType={topic.topic_filter_type}, topicSysFlag={topic.topic_sys_flag}, "
            f"order={'true' if topic.order else 'false'}]")


def parse_java_bool(value: str | None) -> bool:
    """``Boolean.parseBoolean``."""
    return value is not None and value.lower() == "true"


@attrs.frozen
class SendMessageHeader:
    """``SendMessageRequestHeader`` (V2 letters are mapped to these names)."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None
    batch: bool = False

    @classmethod
    def parse(cls, request: RemotingCommand, unboxing: Mapping[str, tuple[str, str, str]] | None = None
              ) -> SendMessageHeader:
        """Decode the long-name header (SEND_MESSAGE) or the letter header (V2, batch) as 4.9.8 does: nothing is
        checked at decoding (``SendMessageRequestHeader.checkFields`` is empty, the letter header a FastCodesHeader),
        so a missing producer group or default topic is accepted, and a missing topic meets msgCheck's "The
        specified topic is blank.". A missing number (or, in the long header, one that is not a number: the
        reflective decoder leaves it null) is unboxed later: ``HeaderError`` with Java's NullPointerException text,
        in the order the processor unboxes them (``unboxing``: field -> getter, boxed type, throwing frame; the send
        path's by default). A letter header's bad number is Java's NumberFormatException."""
        v2 = request.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                              RequestCode.SEND_REPLY_MESSAGE_V2)

        def name(long: str) -> str:
            return _V2_NAME[long] if v2 else long

        def number(long: str) -> int | None:
            text = request.field(name(long))
            if text is None:
                return None
            try:
                return int(text)
            except ValueError:
                if v2:
                    raise HeaderError(f'java.lang.NumberFormatException: For input string: "{text}", '
                                      f"{_NUMBER_FORMAT_AT}") from None
                return None

        order = SEND_UNBOXING if unboxing is None else unboxing
        numbers = {long: number(long) for long in _V2_NAME if long in order or long in _OPTIONAL_NUMBERS}
        topic = request.field(name("topic")) or ""
        if topic.strip():
            for long, (getter, boxed, at) in order.items():
                if numbers[long] is None:
                    raise HeaderError(java_null_unboxed("SendMessageRequestHeader", getter, boxed, at))
        return cls(
            producer_group=request.field(name("producerGroup")) or "",
            topic=topic,
            default_topic=request.field(name("defaultTopic")) or "",
            default_topic_queue_nums=numbers["defaultTopicQueueNums"] or 0,
            queue_id=numbers["queueId"] or 0,
            sys_flag=numbers["sysFlag"] or 0,
            born_timestamp=numbers["bornTimestamp"] or 0,
            flag=numbers["flag"] or 0,
            properties=request.field(name("properties")),
            reconsume_times=numbers["reconsumeTimes"],
            unit_mode=request.bool_field(name("unitMode")),
            max_reconsume_times=numbers["maxReconsumeTimes"],
            batch=request.bool_field(name("batch")),
        )


# Header numbers the send path unboxes, in the order 4.9.8 does (msgCheck, then asyncSendMessage, handleRetryAndDLQ).
JAVA_PROCESSOR_PACKAGE = "org.apache.rocketmq.broker.processor."
_PROCESSOR = JAVA_PROCESSOR_PACKAGE
MSG_CHECK_FRAME = f"{_PROCESSOR}AbstractSendMessageProcessor.msgCheck(AbstractSendMessageProcessor.java:218)"
SEND_UNBOXING = {
    "queueId": ("getQueueId", "Integer.intValue", MSG_CHECK_FRAME),
    "flag": ("getFlag", "Integer.intValue",
             f"{_PROCESSOR}SendMessageProcessor.asyncSendMessage(SendMessageProcessor.java:294)"),
    "bornTimestamp": ("getBornTimestamp", "Long.longValue",
                      f"{_PROCESSOR}SendMessageProcessor.asyncSendMessage(SendMessageProcessor.java:297)"),
    "sysFlag": ("getSysFlag", "Integer.intValue",
                f"{_PROCESSOR}SendMessageProcessor.handleRetryAndDLQ(SendMessageProcessor.java:381)"),
}
# Where Java 17 throws a NumberFormatException for a letter header's bad number.
_NUMBER_FORMAT_AT = "java.base/java.lang.NumberFormatException.forInputString(NumberFormatException.java:67)"
_OPTIONAL_NUMBERS = ("defaultTopicQueueNums", "reconsumeTimes", "maxReconsumeTimes")


class SendMessageProcessor:
    """The broker's send path; ``process`` answers one send request."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker

    # -------------------------------------------------------------------------------------------------- helpers
    def _reply(self, request: RemotingCommand, code: int, remark: str | None = None,
               fields: dict[str, Any] | None = None) -> RemotingCommand:
        config = self.broker.config
        all_fields: dict[str, Any] = {PROPERTY_MSG_REGION: config.region_id, PROPERTY_TRACE_SWITCH: config.trace_on}
        all_fields.update(fields or {})
        return request.response(code, all_fields, remark=remark)

    def _broker_ip(self) -> str:
        return self.broker.config.host

    # ------------------------------------------------------------------------------------------------- msgCheck
    def check(self, request: RemotingCommand, header: SendMessageHeader, channel: Channel
              ) -> tuple[RemotingCommand | None, TopicConfig | None]:
        """``msgCheck``: an error response, or the topic config (created on the fly when allowed)."""
        broker = self.broker
        if not broker.is_writeable() and broker.topics.is_order_topic(header.topic):
            return self._reply(request, ResponseCode.NO_PERMISSION,
                               f"the broker[{self._broker_ip()}] sending message is forbidden"), None
        remark = validate_topic(header.topic)
        if remark is not None:
            return self._reply(request, ResponseCode.SYSTEM_ERROR, remark), None
        if is_not_allowed_send_topic(header.topic):
            return self._reply(request, ResponseCode.NO_PERMISSION,
                               f"Sending message to topic[{header.topic}] is forbidden."), None
        topic_config = broker.topics.get(header.topic)
        if topic_config is None:
            sys_flag = 0
            if header.unit_mode:
                sys_flag = (_TOPIC_SYS_FLAG_UNIT_SUB if header.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
                            else _TOPIC_SYS_FLAG_UNIT)
            topic_config = broker.topics.create_in_send(header.topic, header.default_topic,
                                                        header.default_topic_queue_nums, sys_flag)
            if topic_config is None and header.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                topic_config = broker.topics.create_in_send_back(header.topic, 1, PERM_READ | PERM_WRITE, sys_flag)
            if topic_config is None:
                return self._reply(request, ResponseCode.TOPIC_NOT_EXIST,
                                   f"topic[{header.topic}] not exist, apply first please!{suggest_todo()}"), None
        valid = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if header.queue_id >= valid:
            return self._reply(request, ResponseCode.SYSTEM_ERROR,
                               f"request queueId[{header.queue_id}] is illegal, {topic_config_text(topic_config)} "
                               f"Producer: {channel.remote_addr}"), None
        return None, topic_config

    # -------------------------------------------------------------------------------------------------- process
    def process(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        header = SendMessageHeader.parse(request)
        error, topic_config = self.check(request, header, channel)
        if error is not None:
            return error
        assert topic_config is not None
        queue_id = header.queue_id
        if queue_id < 0:
            if topic_config.write_queue_nums <= 0:
                return self._reply(request, ResponseCode.SYSTEM_ERROR,
                                   f"topic[{header.topic}] has no writable queue: {topic_config_text(topic_config)}")
            queue_id = self.broker.runtime.random.randrange(RANDOM_QUEUE_ID_BOUND) % topic_config.write_queue_nums
        # The header's batch field picks the batch path, whatever the code (SendMessageProcessor, BRK-7).
        if header.batch:
            response = self._send_batch(request, header, topic_config, queue_id, channel)
        else:
            response = self._send_one(request, header, topic_config, queue_id, channel)
        return self._after_flush(request, header, channel, response)

    def _after_flush(self, request: RemotingCommand, header: SendMessageHeader, channel: Channel,
                     response: RemotingCommand) -> RemotingCommand | None:
        """``CommitLog.handleDiskFlush`` in SYNC_FLUSH: a message with WAIT (``isWaitStoreMsgOK``, true unless the
        property says "false") is answered once the group commit has flushed it; the answer is sent then."""
        store = self.broker.store
        if not store.awaiting_flush or request.is_oneway or response.code != ResponseCode.SUCCESS:
            return response
        wait = decode_properties(header.properties or "").get(Property.WAIT_STORE_MSG_OK)
        if wait is not None and wait.lower() != "true":  # Boolean.parseBoolean
            return response
        store.when_durable(lambda: channel.send_response(response))
        return None

    def _send_one(self, request: RemotingCommand, header: SendMessageHeader, topic_config: TopicConfig,
                  queue_id: int, channel: Channel) -> RemotingCommand:
        """``asyncSendMessage``."""
        broker = self.broker
        sys_flag = header.sys_flag | (SYSFLAG_MULTI_TAGS if topic_config.multi_tag else 0)
        original = decode_properties(header.properties or "")
        stored = dict(original)
        stored[Property.CLUSTER] = broker.config.cluster_name
        prepared = parse_java_bool(original.get(Property.TRANSACTION_PREPARED))
        written = None
        if Property.WAIT_STORE_MSG_OK in stored:
            # WAIT is not worth storing: 4.9.8 leaves it out of the properties string it writes but keeps it in the
            # map, so wherever the string is rebuilt from the map (a delayed message parked, a half message) it is
            # written after all.
            written = encode_properties({k: v for k, v in stored.items() if k != Property.WAIT_STORE_MSG_OK})
        msg = MessageToStore(
            topic=header.topic,
            queue_id=queue_id,
            body=request.body or b"",
            flag=header.flag,
            properties=stored,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=channel.remote_addr,
            reconsume_times=header.reconsume_times or 0,
            properties_text=written,
        )
        if header.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            redirected = self._retry_or_dlq(request, header, msg)
            if isinstance(redirected, RemotingCommand):
                return redirected
            msg = redirected
        if prepared:
            if broker.config.reject_transaction_message:
                return self._reply(request, ResponseCode.NO_PERMISSION,
                                   f"the broker[{self._broker_ip()}] sending transaction message is forbidden")
            msg = broker.transactions.to_half_message(msg)
            result = broker.put_message(msg)
            broker.stats.on_put(msg, result)
            if result is not None and result.status is PutMessageStatus.PUT_OK:
                broker.transactions.after_half_stored(msg, result)
            return self.put_response(request, result, queue_id)
        result = broker.put_message(msg)
        broker.stats.on_put(msg, result)
        return self.put_response(request, result, queue_id)

    def _retry_or_dlq(self, request: RemotingCommand, header: SendMessageHeader, msg: MessageToStore
                      ) -> MessageToStore | RemotingCommand:
        """``handleRetryAndDLQ``: the group must exist; too many reconsumes → the group's DLQ."""
        group = header.topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        group_config = self.broker.subscription_groups.find_or_create(group)
        if group_config is None:
            return self._reply(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                               f"subscription group not exist, {group} {suggest_todo()}")
        max_times = group_config.retry_max_times
        if request.version >= VERSION_V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        outcome = redirect_retry_to_dlq(self.broker, msg, group, max_times)
        if isinstance(outcome, RemotingCommand):
            # The service builds the error; answer it on this request (opaque, send fields).
            return self._reply(request, outcome.code, outcome.remark)
        return outcome

    def _send_batch(self, request: RemotingCommand, header: SendMessageHeader, topic_config: TopicConfig,
                    queue_id: int, channel: Channel) -> RemotingCommand:
        """``asyncSendBatchMessage``: one put of every message of the body, with the batch's properties appended to
        each message's own. Transaction and delay batches are MESSAGE_ILLEGAL."""
        broker = self.broker
        if len(header.topic) > TOPIC_MAX_LENGTH:
            return self._reply(request, ResponseCode.MESSAGE_ILLEGAL,
                               f"message topic length too long {len(header.topic)}")
        sys_flag = header.sys_flag | (SYSFLAG_MULTI_TAGS if topic_config.multi_tag else 0)
        batch_props = decode_properties(header.properties or "")
        batch_props[Property.CLUSTER] = broker.config.cluster_name
        body = request.body or b""
        illegal = (
            sys_flag & SYSFLAG_TRANSACTION_MASK != TRANSACTION_NOT_TYPE
            or _delay_level(batch_props) > 0
            or len(body) > broker.config.max_message_size
        )
        if illegal:
            return self._reply(request, ResponseCode.MESSAGE_ILLEGAL,
                               _ILLEGAL_REMARK.format(broker.config.max_message_size))
        try:
            entries = decode_batch(body)
        except ValueError as error:
            return self._reply(request, ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {error}")
        if not entries:
            return self._reply(request, ResponseCode.MESSAGE_ILLEGAL, "bad batch body: no message")
        messages = []
        batch_text = encode_properties(batch_props)
        for entry in entries:
            props = dict(entry.properties)
            props.update(batch_props)
            own_text = encode_properties(entry.properties)
            messages.append(MessageToStore(
                topic=header.topic,
                queue_id=queue_id,
                body=entry.body,
                flag=entry.flag,
                properties=props,
                sys_flag=sys_flag,
                born_timestamp=header.born_timestamp,
                born_host=channel.remote_addr,
                reconsume_times=header.reconsume_times or 0,
                # MessageExtBatchEncoder appends the batch's properties to each message's, repeats and all.
                properties_text=f"{own_text}{PROPERTY_SEPARATOR}{batch_text}" if own_text else batch_text,
            ))
        result = broker.put_messages(messages)
        broker.stats.on_put(messages[0], result, len(messages))
        return self.put_response(request, result, queue_id, batch=True)

    # -------------------------------------------------------------------------------------- put status mapping
    def put_response(self, request: RemotingCommand, result: PutResult | None, queue_id: int, *,
                     batch: bool = False) -> RemotingCommand:
        """``handlePutMessageResult``: FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE are stored
        (with their own codes and the send result fields); everything else is a failure."""
        if result is None:
            return self._reply(request, ResponseCode.SYSTEM_ERROR, "store putMessage return null")
        status = result.status
        ok_codes = {
            PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
            PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
            PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
            PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
        }
        if status in ok_codes:
            ids = list(getattr(result, "offset_msg_ids", None) or ()) if batch else []
            msg_id = ",".join(ids) if ids else result.offset_msg_id
            return self._reply(request, ok_codes[status], None,
                               {"msgId": msg_id, "queueId": queue_id, "queueOffset": result.queue_offset})
        code, remark = self._failure(status)
        return self._reply(request, code, remark)

    def _failure(self, status: PutMessageStatus) -> tuple[int, str]:
        if status == PutMessageStatus.CREATE_MAPEDFILE_FAILED:
            return ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK.format(self.broker.config.max_message_size)
        if status == PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return (ResponseCode.SERVICE_NOT_AVAILABLE,
                    "service not available now. It may be caused by one of the following reasons: the broker's disk "
                    "is full [CL:  0.00 CQ:  0.00 INDEX:  0.00], messages are put to the slave, message store has "
                    "been shut down, etc.")
        if status == PutMessageStatus.OS_PAGECACHE_BUSY:
            return ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
        if status == PutMessageStatus.LMQ_CONSUME_QUEUE_NUM_EXCEEDED:
            return (ResponseCode.SYSTEM_ERROR,
                    "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, lmq "
                    "consumeQueue num exceed maxLmqConsumeQueueNum config num, default limit 2w.")
        if status == PutMessageStatus.UNKNOWN_ERROR:
            return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"


def _delay_level(props: dict[str, str]) -> int:
    """``Message.getDelayTimeLevel``: the DELAY property as a number, 0 when absent."""
    value = props.get(Property.DELAY_TIME_LEVEL)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        raise HeaderError(f"For input string: \"{value}\"") from None
