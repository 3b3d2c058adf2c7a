"""The producer (``DefaultMQProducer`` / ``DefaultMQProducerImpl`` / ``MQClientAPIImpl.sendMessage`` of 4.9.8).

``send`` (SYNC) is ``sendDefaultImpl``: up to ``1 + retryTimesWhenSendFailed`` attempts inside one
``sendMsgTimeout`` budget (checked before each attempt: over budget → ``RemotingTooMuchRequestError("sendDefaultImpl
call timeout")``). Each attempt picks a queue with the fault strategy, passing the previous attempt's broker. A
transport error or a client error retries; a broker error code retries only if it is in ``retryResponseCodes``
(otherwise it is raised, unless an earlier attempt left a result); FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT /
SLAVE_NOT_AVAILABLE give a ``SendResult`` with that status, retried only with ``retryAnotherBrokerWhenNotStoreOK``.
When everything failed: ``MQClientError("Send [n] times, still failed, ...")`` carrying the last failure.

ASYNC (``send_async``) makes one ``sendDefaultImpl`` attempt; the response callback retries transport failures
(never broker error codes) up to ``retryTimesWhenSendAsyncFailed`` times, each on a queue the fault strategy picks
away from the failed broker, resending the same request (same queue id) with the remaining time
(``MQClientAPIImpl.sendMessageAsync`` / ``onExceptionImpl``). ONEWAY makes one attempt and expects no answer.

Every attempt sets UNIQ_KEY if absent (``MessageClientIDSetter``), compresses bodies of at least
``compressMsgBodyOverHowmuch`` bytes with zlib (sysFlag 0x1 and, as 4.9.8 does, the ZLIB type 0x300), marks
``TRAN_MSG`` messages with sysFlag 0x4 and, for retry topics, moves RECONSUME_TIME / MAX_RECONSUME_TIMES into the
header. Topics without a route are sent with the route of ``createTopicKey`` (TBW102), capped at
``defaultTopicQueueNums`` queues: the broker creates the topic (``tryToFindTopicPublishInfo``).

Events: ``SendAttempt`` when an attempt starts (after the budget check), ``SendResultEvent`` when it ends (a
``SendStatus`` name, ``ERROR`` with the code or error, or ``ONEWAY`` for a written oneway request), ``final=True`` on
the last attempt of the send.

The retry loop of one send (``_Send``, ``_AsyncSend``) is in ``refimpl.client.sending``, the checks before it
(``Validators``) in ``refimpl.client.validators``; this module holds the producer, its kernel send and its requests.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from rocketspec.refimpl.client.config import ProducerConfig
from rocketspec.refimpl.client.errors import (
    MQBrokerError,
    MQClientError,
    RemotingCommandError,
    RemotingTooMuchRequestError,
)
from rocketspec.refimpl.client.latency import MQFaultStrategy, TopicPublishInfo
from rocketspec.refimpl.client.sending import _AsyncSend, _error_text, _failed_future, _Outgoing, _Send
from rocketspec.refimpl.client.validators import check_group, check_message
from rocketspec.refimpl.events import ClientLifecycle, SendAttempt, SendResultEvent
from rocketspec.refimpl.message import Message, MessageExt, encode_batch, encode_properties
from rocketspec.refimpl.remoting import (
    HeaderError,
    RemotingCommand,
    RemotingConnectError,
)
from rocketspec.refimpl.route import TopicRouteData
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    DEFAULT_PRODUCER_GROUP,
    DEFAULT_TRACE_REGION_ID,
    PROPERTY_MSG_REGION,
    PROPERTY_TRACE_SWITCH,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_ZLIB,
    TRANSACTION_PREPARED_TYPE,
    CommunicationMode,
    Property,
    RequestCode,
    ResponseCode,
    SendStatus,
    suggest_todo,
)
from rocketspec.spec.queues import MessageQueue

if TYPE_CHECKING:
    from rocketspec.refimpl.client.instance import ClientInstance

Selector = Callable[[list[MessageQueue], Message, Any], MessageQueue]
SendCallback = Callable[["SendResult | None", "BaseException | None"], None]

_NAME_PATTERN = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_STATUS_OF_CODE = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
# SEND_MESSAGE_V2 letters (SendMessageRequestHeaderV2) for the long names of SendMessageRequestHeader.
_V2_LETTERS = {
    "producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
    "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j", "unitMode": "k",
    "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}


@attrs.frozen
class SendResult:
    """What a send returns (``SendResult``): ``msg_id`` is the UNIQ_KEY (comma-joined for a batch)."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str | None
    queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = DEFAULT_TRACE_REGION_ID
    trace_on: bool = True


class ServiceState:
    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"




def _sync_result(result: SendResult | None) -> SendResult:
    """A SYNC send's outcome: a result (or an error raised before): only a ONEWAY send ends without one."""
    assert result is not None, "a SYNC send ended without a result"
    return result


class Producer:
    """A RocketMQ producer on a ``ClientInstance``."""

    role = "producer"

    def __init__(self, instance: ClientInstance, config: ProducerConfig, *, inner: bool = False) -> None:
        self.instance = instance
        self.config = config
        self.runtime = instance.runtime
        self.events = instance.events
        self.group = config.group
        self._inner = inner
        self.state = ServiceState.CREATE_JUST if not inner else ServiceState.RUNNING
        self.publish_info: dict[str, TopicPublishInfo] = {}
        self.fault_strategy = MQFaultStrategy(self.runtime, enabled=config.send_latency_fault_enable,
                                              latency_max=config.latency_max_ms,
                                              not_available_duration=config.not_available_duration_ms)
        if inner:
            self.publish_info[config.create_topic_key] = TopicPublishInfo(config.create_topic_key, None,
                                                                          self.runtime.random)

    @property
    def client_id(self) -> str:
        return self.instance.client_id

    # lifecycle ------------------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.runtime.submit(self._start)

    def _start(self) -> None:
        if self.state != ServiceState.CREATE_JUST:
            raise MQClientError(f"The producer service state not OK, maybe started once, {self.state}"
                                + suggest_todo())
        self.state = ServiceState.START_FAILED
        # DefaultMQProducer.start: the group lives in the client's namespace from here on (and is checked so).
        self.group = self.instance.config.with_namespace(self.group)
        check_group(self.group)
        if self.group == DEFAULT_PRODUCER_GROUP:
            raise MQClientError(f"producerGroup can not equal {DEFAULT_PRODUCER_GROUP}, please specify another one.")
        try:
            self.instance.register_producer(self.group, self)
        except ValueError as error:
            self.state = ServiceState.CREATE_JUST
            raise MQClientError(str(error) + suggest_todo()) from None
        self.publish_info[self.config.create_topic_key] = TopicPublishInfo(self.config.create_topic_key, None,
                                                                           self.runtime.random)
        self.instance.start()
        self.state = ServiceState.RUNNING
        self.events.emit(ClientLifecycle(node=self.client_id, group=self.group, role=self.role, action="start"))
        # DefaultMQProducerImpl.start ends with sendHeartbeatToAllBrokerWithLock.
        self.instance.send_heartbeat_to_all_brokers()

    def shutdown(self) -> None:
        self.runtime.submit(self._shutdown)

    def _shutdown(self) -> None:
        if self.state != ServiceState.RUNNING:
            return
        self.instance.unregister_producer(self.group)
        self.state = ServiceState.SHUTDOWN_ALREADY
        self.events.emit(ClientLifecycle(node=self.client_id, group=self.group, role=self.role, action="shutdown"))
        # DefaultMQProducerImpl.shutdown(true) shuts the instance down when nothing else uses it.
        others = [g for g in self.instance.producers if g != CLIENT_INNER_PRODUCER_GROUP]
        if not self.instance.consumers and not others:
            self.instance.shutdown()

    def _make_sure_state_ok(self) -> None:
        if self.state != ServiceState.RUNNING:
            raise MQClientError(f"The producer service state not OK, {self.state}" + suggest_todo())

    # MQProducerInner ------------------------------------------------------------------------------------------------
    def publish_topics(self) -> set[str]:
        return set(self.publish_info)

    def is_publish_topic_need_update(self, topic: str) -> bool:
        info = self.publish_info.get(topic)
        return info is None or not info.ok()

    def on_route(self, topic: str, route: TopicRouteData) -> None:
        """``updateTopicPublishInfo``: a fresh ``TopicPublishInfo`` (and round-robin index) for the new route."""
        self.publish_info[topic] = TopicPublishInfo(topic, route, self.runtime.random, have_route=True)

    def check_transaction_state(self, broker_addr: str, message: MessageExt, request: RemotingCommand) -> None:
        """A plain producer has no transaction listener: Java logs a warning and does nothing."""

    # public sends ---------------------------------------------------------------------------------------------------
    def send(self, msg: Message, *, timeout_ms: int | None = None, queue: MessageQueue | None = None,
             selector: Selector | None = None, arg: object = None) -> SendResult:
        """A SYNC send: to ``queue``, to the queue ``selector(queues, msg, arg)`` picks, or with retries."""
        future = self.runtime.submit(
            lambda: self._send(msg, CommunicationMode.SYNC, timeout_ms, queue, selector, arg, None))
        return _sync_result(self.runtime.wait(future))

    def send_async(self, msg: Message, callback: SendCallback | None = None, *, timeout_ms: int | None = None,
                   queue: MessageQueue | None = None, selector: Selector | None = None,
                   arg: object = None) -> Future[SendResult]:
        """An ASYNC send: ``callback(result, error)`` (user code) and the future get the outcome."""
        # An ASYNC send ends in a result or an error, never None (only ONEWAY does).
        return cast("Future[SendResult]", self.runtime.submit(
            lambda: self._send(msg, CommunicationMode.ASYNC, timeout_ms, queue, selector, arg, callback)))

    def send_oneway(self, msg: Message, *, timeout_ms: int | None = None, queue: MessageQueue | None = None,
                    selector: Selector | None = None, arg: object = None) -> None:
        """A ONEWAY send: written once, no answer."""
        future = self.runtime.submit(
            lambda: self._send(msg, CommunicationMode.ONEWAY, timeout_ms, queue, selector, arg, None))
        self.runtime.wait(future)

    def send_batch(self, msgs: Sequence[Message], *, timeout_ms: int | None = None,
                   queue: MessageQueue | None = None, selector: Selector | None = None,
                   arg: object = None) -> SendResult:
        """SEND_BATCH_MESSAGE of messages of one topic (``DefaultMQProducer.send(Collection)``)."""

        def start() -> Future[SendResult | None]:
            try:
                out = self._batch(msgs)
            except MQClientError as error:
                return _failed_future(error)
            return self._dispatch(out, CommunicationMode.SYNC, timeout_ms, queue, selector, arg, None)

        future = self.runtime.submit(start)
        return _sync_result(self.runtime.wait(future))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` would choose from (fetching the route if needed), named by the topic
        outside the namespace (``MQAdminImpl.parsePublishMessageQueues``)."""
        cfg = self.instance.config

        def start() -> Future[list[MessageQueue]]:
            result: Future[list[MessageQueue]] = Future()
            def found(f: Future[TopicPublishInfo | None]) -> None:
                info = f.result()
                result.set_result([self._queue_without_namespace(q) for q in info.queues] if info is not None else [])

            self._find_publish_info(cfg.with_namespace(topic)).add_done_callback(found)
            return result

        return self.runtime.wait(self.runtime.submit(start))

    # internals ------------------------------------------------------------------------------------------------------
    def _queue_without_namespace(self, mq: MessageQueue) -> MessageQueue:
        topic = self.instance.config.without_namespace(mq.topic)
        return mq if topic == mq.topic else MessageQueue(topic, mq.broker_name, mq.queue_id)

    def _queue_with_namespace(self, mq: MessageQueue) -> MessageQueue:
        """``ClientConfig.queueWithNamespace``: a queue the user names, as the brokers know it."""
        topic = self.instance.config.with_namespace(mq.topic)
        return mq if topic == mq.topic else MessageQueue(topic, mq.broker_name, mq.queue_id)

    def _timeout(self, timeout_ms: int | None) -> int:
        return self.config.send_msg_timeout_ms if timeout_ms is None else timeout_ms

    def _batch(self, msgs: Sequence[Message]) -> _Outgoing:
        """``DefaultMQProducer.batch`` / ``MessageBatch.generateFromList``."""
        msgs = list(msgs)
        try:
            if not msgs:
                raise ValueError("the message batch is empty")
            first = msgs[0]
            for m in msgs:
                if m.delay_level > 0:
                    raise ValueError("TimeDelayLevel is not supported for batching")
                if m.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    raise ValueError("Retry Group is not supported for batching")
                if m.topic != first.topic:
                    raise ValueError("The topic of the messages in one batch should be the same")
                if m.wait_store_msg_ok != first.wait_store_msg_ok:
                    raise ValueError("The waitStoreMsgOK of the messages in one batch should the same")
            for m in msgs:
                check_message(m, self.config.max_message_size)
                self._set_uniq_id(m.properties)
                # Each message's topic goes into the namespace after its check; the batch's too (below).
                m.topic = self.instance.config.with_namespace(m.topic)
            body = encode_batch(msgs)
        except (ValueError, MQClientError) as error:
            raise MQClientError("Failed to initiate the MessageBatch", cause=error) from None
        props = {Property.WAIT_STORE_MSG_OK: "true" if first.wait_store_msg_ok else "false"}
        return _Outgoing(self.instance.config.with_namespace(first.topic), props, body, 0, msgs)

    def _set_uniq_id(self, properties: dict[str, str]) -> None:
        """``MessageClientIDSetter.setUniqID``: only when the message has none."""
        if Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in properties:
            properties[Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = self.instance.next_unique_id()

    def _send(self, msg: Message, mode: CommunicationMode, timeout_ms: int | None, queue: MessageQueue | None,
              selector: Selector | None, arg: object, callback: SendCallback | None) -> Future[SendResult | None]:
        if msg is None or not isinstance(msg, Message):
            error = MQClientError("the message is null", code=ResponseCode.MESSAGE_ILLEGAL)
            if mode is CommunicationMode.ASYNC:
                return self._async_outcome(_failed_future(error), callback)
            return _failed_future(error)
        # DefaultMQProducer.send: the user's message takes the wrapped topic before any check (each attempt gives it
        # back unwrapped, ``_Send``); a message the checks refuse keeps it.
        msg.topic = self.instance.config.with_namespace(msg.topic)
        return self._dispatch(_Outgoing.of(msg), mode, timeout_ms, queue, selector, arg, callback, msg)

    def _dispatch(self, out: _Outgoing, mode: CommunicationMode, timeout_ms: int | None, queue: MessageQueue | None,
                  selector: Selector | None, arg: object, callback: SendCallback | None,
                  msg: Message | None = None) -> Future[SendResult | None]:
        user: Future[SendResult | None] = Future()
        if mode is CommunicationMode.ASYNC:
            self._async_outcome(user, callback)
        send = _Send(self, out, mode, self._timeout(timeout_ms), user, msg)
        if queue is not None:
            send.to_queue(self._queue_with_namespace(queue))
        elif selector is not None:
            send.with_selector(selector, arg)
        else:
            send.default()
        return user

    def _async_outcome(self, future: Future[SendResult | None], callback: SendCallback | None
                       ) -> Future[SendResult | None]:
        """Run the user's callback (user code) once the outcome of an ASYNC send is known."""
        if callback is not None:
            def call(f: Future[SendResult | None]) -> None:
                error = f.exception()
                value = None if error is not None else f.result()
                self.runtime.run_user(lambda: callback(value, error), lambda _v, _e: None)

            future.add_done_callback(call)
        return future

    def _find_publish_info(self, topic: str) -> Future[TopicPublishInfo | None]:
        """``tryToFindTopicPublishInfo``: the topic's route, else the route of ``createTopicKey`` (TBW102)."""
        result: Future[TopicPublishInfo | None] = Future()
        info = self.publish_info.get(topic)
        if info is not None and info.ok():
            result.set_result(info)
            return result

        def second() -> None:
            info = self.publish_info.get(topic)
            if info is not None and (info.have_topic_router_info or info.ok()):
                result.set_result(info)
                return
            self.instance.update_topic_route(
                topic, default_topic=self.config.create_topic_key,
                default_queue_nums=self.config.default_topic_queue_nums,
            ).add_done_callback(lambda _f: result.set_result(self.publish_info.get(topic)))

        self.publish_info.setdefault(topic, TopicPublishInfo(topic, None, self.runtime.random))
        self.instance.update_topic_route(topic).add_done_callback(lambda _f: second())
        return result

    # one attempt (sendKernelImpl) -------------------------------------------------------------------------------------
    def _kernel(self, out: _Outgoing, mq: MessageQueue, mode: CommunicationMode, info: TopicPublishInfo | None,
                timeout_ms: int, attempt: int, on_async: Callable[[_AsyncSend], None] | None = None,
                budget_ms: int | None = None) -> Future[SendResult | None]:
        """One attempt to one queue; ASYNC resolves when the request is written (``_AsyncSend`` does the rest).
        ``timeout_ms`` is what is left of the send's budget ``budget_ms`` (recorded on the attempt event)."""
        begin = self.runtime.now_ms()
        result: Future[SendResult | None] = Future()
        if out.batch is None:
            self._set_uniq_id(out.properties)
        if self.instance.config.namespace is not None:
            out.properties[Property.INSTANCE_ID] = self.instance.config.namespace
        self.events.emit(self._attempt_event(out, mq.broker_name, mq.queue_id, attempt, mode,
                                             budget_ms if budget_ms is not None else timeout_ms))

        def with_addr(addr: str | None) -> None:
            if addr is None:
                result.set_exception(MQClientError(f"The broker[{mq.broker_name}] not exist"))
                return
            addr = self._vip(addr)
            request = self._build_request(out, mq)
            cost = self.runtime.now_ms() - begin
            if timeout_ms < cost:
                result.set_exception(RemotingTooMuchRequestError("sendKernelImpl call timeout"))
                return
            remaining = timeout_ms - cost
            if mode is CommunicationMode.ONEWAY:
                if not self.instance.can_connect(addr):
                    result.set_exception(RemotingConnectError(f"connect to {addr} failed"))
                    return
                self.instance.invoke_oneway(addr, request)
                result.set_result(None)
            elif mode is CommunicationMode.SYNC:
                def answered(f: Future[RemotingCommand]) -> None:
                    error = f.exception()
                    if error is not None:
                        result.set_exception(error)
                        return
                    try:
                        result.set_result(self._process_response(mq.broker_name, out, f.result(), addr))
                    except (MQBrokerError, RemotingCommandError) as failure:
                        result.set_exception(failure)

                self.instance.invoke(addr, request, remaining).add_done_callback(answered)
            else:
                sender = _AsyncSend(self, out, request, info, mq, attempt,
                                    budget_ms if budget_ms is not None else timeout_ms)
                if on_async is not None:
                    on_async(sender)
                sender.send(addr, mq.broker_name, remaining)
                result.set_result(None)

        addr = self.instance.find_broker_addr(mq.broker_name)
        if addr is not None:
            with_addr(addr)
        else:
            self._find_publish_info(mq.topic).add_done_callback(
                lambda _f: with_addr(self.instance.find_broker_addr(mq.broker_name)))
        return result

    def _vip(self, addr: str) -> str:
        """``MixAll.brokerVIPChannel``: the VIP port is the broker port - 2."""
        if not self.config.send_message_with_vip_channel:
            return addr
        host, _, port = addr.rpartition(":")
        return f"{host}:{int(port) - 2}"

    def _build_request(self, out: _Outgoing, mq: MessageQueue) -> RemotingCommand:
        body = out.body
        sys_flag = 0
        if out.batch is None and len(body) >= self.config.compress_msg_body_over_bytes:
            body = zlib.compress(body, self.config.compress_level)
            sys_flag |= SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZLIB
        if out.properties.get(Property.TRANSACTION_PREPARED, "").lower() == "true":
            sys_flag |= TRANSACTION_PREPARED_TYPE
        header: dict[str, object] = {
            "producerGroup": self.group,
            "topic": out.topic,
            "defaultTopic": self.config.create_topic_key,
            "defaultTopicQueueNums": self.config.default_topic_queue_nums,
            "queueId": mq.queue_id,
            "sysFlag": sys_flag,
            "bornTimestamp": self.runtime.now_ms(),
            "flag": out.flag,
            "properties": encode_properties(out.properties),
            "reconsumeTimes": 0,
            "unitMode": self.config.unit_mode,
            "batch": out.batch is not None,
            "bname": mq.broker_name,
        }
        if out.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            # The properties text above still carries them; the message loses them for later attempts (as in Java).
            reconsume = out.properties.pop(Property.RECONSUME_TIME, None)
            if reconsume is not None:
                header["reconsumeTimes"] = int(reconsume)
            max_reconsume = out.properties.pop(Property.MAX_RECONSUME_TIMES, None)
            if max_reconsume is not None:
                header["maxReconsumeTimes"] = int(max_reconsume)
        if out.batch is not None or self.config.use_v2_header:
            code = RequestCode.SEND_BATCH_MESSAGE if out.batch is not None else RequestCode.SEND_MESSAGE_V2
            header = {_V2_LETTERS[name]: value for name, value in header.items()}
        else:
            code = RequestCode.SEND_MESSAGE
        cfg = self.instance.config
        return RemotingCommand.request(code, header, body, language=cfg.language, version=cfg.version)

    def _process_response(self, broker_name: str, out: _Outgoing, response: RemotingCommand, addr: str
                          ) -> SendResult:
        """``MQClientAPIImpl.processSendResponse``."""
        status = _STATUS_OF_CODE.get(response.code)  # type: ignore[call-overload]
        if status is None:
            raise MQBrokerError(response.code, response.remark, addr)
        try:
            msg_id = response.require("msgId")
            queue_id = response.require_int("queueId")
            queue_offset = response.require_int("queueOffset")
        except HeaderError as error:
            raise RemotingCommandError(str(error)) from None
        region = response.field(PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID
        trace_on = response.field(PROPERTY_TRACE_SWITCH) != "false"
        # The result names the topic outside the namespace again.
        topic = self.instance.config.without_namespace(out.topic)
        return SendResult(status=status, msg_id=out.uniq_id(), offset_msg_id=msg_id,
                          queue=MessageQueue(topic, broker_name, queue_id), queue_offset=queue_offset,
                          transaction_id=response.field("transactionId"), region_id=region, trace_on=trace_on)

    def _attempt_event(self, out: _Outgoing, broker: str, queue_id: int, attempt: int, mode: CommunicationMode,
                       budget_ms: int) -> SendAttempt:
        """The ``SendAttempt`` of one attempt, with the configuration the SEND rules depend on (SEND-1, SEND-9,
        SEND-13): retry limits, the send's timeout budget and whether the latency fault strategy is on."""
        config = self.config
        return SendAttempt(node=self.client_id, group=self.group, topic=out.topic, broker=broker, queue_id=queue_id,
                           msg_id=out.uniq_id(), attempt=attempt, mode=mode.value,
                           retry_times=config.retry_times_when_send_failed,
                           retry_times_async=config.retry_times_when_send_async_failed, timeout_ms=budget_ms,
                           latency_fault=config.send_latency_fault_enable)

    def _emit_result(self, out: _Outgoing, mq: MessageQueue, attempt: int, *, result: SendResult | None = None,
                     error: BaseException | None = None, final: bool, oneway: bool = False,
                     latency_ms: int | None = None) -> None:
        if result is not None:
            status, code, offset, text = result.status.value, None, result.queue_offset, None
        elif oneway:
            status, code, offset, text = "ONEWAY", None, None, None
        else:
            code = error.code if isinstance(error, MQBrokerError) else None
            status, offset, text = "ERROR", None, _error_text(error) if error is not None else None
        self.events.emit(SendResultEvent(node=self.client_id, group=self.group, topic=out.topic,
                                         broker=mq.broker_name, queue_id=mq.queue_id, msg_id=out.uniq_id(),
                                         attempt=attempt, status=status, code=code, offset=offset, error=text,
                                         final=final, latency_ms=latency_ms))


