"""One send of the producer, from the first attempt to its outcome (``DefaultMQProducerImpl.sendDefaultImpl``,
``sendSelectImpl`` and ``sendKernelImpl`` to a given queue; ``MQClientAPIImpl.sendMessageAsync`` and
``onExceptionImpl`` for the ASYNC retries), and what it puts on the wire.

The producer (``refimpl.client.producer``) starts a :class:`_Send` per call and owns the kernel send, the request
and the events; this module owns the retry loop: the budget check before each attempt, which failures retry, the
queue each attempt takes, and the result or error the user gets.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from rocketspec.refimpl.client.errors import (
    MQBrokerError,
    MQClientError,
    RemotingCommandError,
    RemotingTooMuchRequestError,
)
from rocketspec.refimpl.client.latency import TopicPublishInfo
from rocketspec.refimpl.client.validators import check_message
from rocketspec.refimpl.message import Message
from rocketspec.refimpl.remoting import (
    RemotingCommand,
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.protocol import ClientErrorCode, CommunicationMode, Property, SendStatus, suggest_todo
from rocketspec.spec.queues import MessageQueue

if TYPE_CHECKING:  # the producer starts the sends of this module
    from rocketspec.refimpl.client.producer import Producer, Selector, SendResult


class _Outgoing:
    """What one send puts on the wire: a user message, or a batch of them (``MessageBatch``)."""

    def __init__(self, topic: str, properties: dict[str, str], body: bytes, flag: int,
                 batch: list[Message] | None = None) -> None:
        self.topic = topic
        self.properties = properties  # the user message's own dict: changes stay on the message, as in Java
        self.body = body
        self.flag = flag
        self.batch = batch

    @classmethod
    def of(cls, msg: Message) -> _Outgoing:
        return cls(msg.topic, msg.properties, msg.body, msg.flag)

    def uniq_id(self) -> str:
        if self.batch is not None:
            return ",".join(m.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "null") for m in self.batch)
        return self.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "")


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _done_future(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


def _failed_future(error: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(error)
    return future


class _Send:
    """One send: ``sendDefaultImpl`` (retry loop), ``sendSelectImpl`` or the kernel send to a given queue."""

    def __init__(self, producer: Producer, out: _Outgoing, mode: CommunicationMode, timeout_ms: int,
                 user: Future[SendResult | None], msg: Message | None) -> None:
        self.p = producer
        self.runtime = producer.runtime
        self.out = out
        self.mode = mode
        self.timeout = timeout_ms
        self.user = user
        self.msg = msg
        self.begin_first = self.runtime.now_ms()
        self.begin_prev = self.begin_first
        self.info: TopicPublishInfo | None = None
        self.mq: MessageQueue | None = None
        self.times = 0
        self.times_total = 1
        self.brokers_sent: list[str | None] = []
        self.exception: BaseException | None = None
        self.result: SendResult | None = None
        self.call_timeout = False

    # outcome --------------------------------------------------------------------------------------------------------
    def _fail(self, error: BaseException) -> None:
        self.user.set_exception(error)

    def _succeed(self, result: SendResult | None) -> None:
        self.user.set_result(result)

    def _unwrap_user_topic(self, _f: Future[SendResult | None] | None = None) -> None:
        """``sendKernelImpl``'s finally: once an attempt is made, the user's message shows its topic outside the
        namespace again (``out`` keeps the wrapped one for the next attempt, as the resend's re-wrap does)."""
        if self.msg is not None:
            self.msg.topic = self.p.instance.config.without_namespace(self.msg.topic)

    def _precheck(self) -> bool:
        try:
            self.p._make_sure_state_ok()
            if self.out.batch is None:
                check_message(self.msg, self.p.config.max_message_size)
            else:
                check_message(Message(self.out.topic, self.out.body), self.p.config.max_message_size)
        except MQClientError as error:
            self._fail(error)
            return False
        return True

    # sendDefaultImpl ------------------------------------------------------------------------------------------------
    def default(self) -> None:
        if not self._precheck():
            return
        self.p._find_publish_info(self.out.topic).add_done_callback(lambda f: self._with_info(f.result()))

    def _with_info(self, info: TopicPublishInfo | None) -> None:
        if info is None or not info.ok():
            self._fail(MQClientError(f"No route info of this topic: {self.out.topic}" + suggest_todo(),
                                     code=ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION))
            return
        self.info = info
        if self.mode is CommunicationMode.SYNC:
            self.times_total = 1 + self.p.config.retry_times_when_send_failed
        self.brokers_sent = [None] * self.times_total
        self._next_attempt()

    def _next_attempt(self) -> None:
        assert self.info is not None
        if self.times >= self.times_total:
            self._exhausted()
            return
        last = self.mq.broker_name if self.mq is not None else None
        self.mq = self.p.fault_strategy.select_one(self.info, last)
        self.brokers_sent[self.times] = self.mq.broker_name
        self.begin_prev = self.runtime.now_ms()
        cost = self.begin_prev - self.begin_first
        if self.timeout < cost:
            self.call_timeout = True
            self._exhausted()
            return
        attempt = self.p._kernel(self.out, self.mq, self.mode, self.info, self.timeout - cost, self.times + 1,
                                 self._adopt, self.timeout)
        attempt.add_done_callback(self._unwrap_user_topic)
        attempt.add_done_callback(self._attempt_done)

    def _adopt(self, sender: _AsyncSend) -> None:
        sender.user = self.user

    def _another_attempt_follows(self) -> bool:
        """Whether the loop goes on: attempts left and the budget not yet spent (checked as the next one starts)."""
        return self.times + 1 < self.times_total and not self.timeout < self.runtime.now_ms() - self.begin_first

    def _attempt_done(self, f: Future[SendResult | None]) -> None:
        assert self.mq is not None
        mq = self.mq
        latency = self.runtime.now_ms() - self.begin_prev
        error = f.exception()
        attempt = self.times + 1
        if error is None:
            self.p.fault_strategy.update_fault_item(mq.broker_name, latency, False)
            if self.mode is CommunicationMode.ASYNC:
                return  # written: the async sender reports the outcome through the same future
            if self.mode is CommunicationMode.ONEWAY:
                self.p._emit_result(self.out, mq, attempt, final=True, oneway=True, latency_ms=latency)
                self._succeed(None)
                return
            result = f.result()
            assert result is not None
            self.result = result
            if result.status is not SendStatus.SEND_OK and self.p.config.retry_another_broker_when_not_store_ok:
                follows = self._another_attempt_follows()
                self.p._emit_result(self.out, mq, attempt, result=result, final=not follows,
                                    latency_ms=latency)
                self.times += 1
                self._next_attempt()
                return
            self.p._emit_result(self.out, mq, attempt, result=result, final=True, latency_ms=latency)
            self._succeed(result)
            return
        if isinstance(error, (RemotingError, MQClientError)):
            self.p.fault_strategy.update_fault_item(mq.broker_name, latency, True)
            self.exception = error
            self.p._emit_result(self.out, mq, attempt, error=error, final=not self._another_attempt_follows(),
                                latency_ms=latency)
            self.times += 1
            self._next_attempt()
            return
        if isinstance(error, MQBrokerError):
            self.p.fault_strategy.update_fault_item(mq.broker_name, latency, True)
            self.exception = error
            if error.code in self.p.config.retry_response_codes:
                self.p._emit_result(self.out, mq, attempt, error=error,
                                    final=not self._another_attempt_follows(), latency_ms=latency)
                self.times += 1
                self._next_attempt()
                return
            self.p._emit_result(self.out, mq, attempt, error=error, final=True, latency_ms=latency)
            if self.result is not None:
                self._succeed(self.result)
            else:
                self._fail(error)
            return
        self.p._emit_result(self.out, mq, attempt, error=error, final=True, latency_ms=latency)
        self._fail(error)

    def _exhausted(self) -> None:
        if self.result is not None:
            self._succeed(self.result)
            return
        if self.call_timeout:
            self._fail(RemotingTooMuchRequestError("sendDefaultImpl call timeout"))
            return
        sent = ", ".join("null" if b is None else b for b in self.brokers_sent)
        # The message's topic, which the last attempt gave back unwrapped.
        topic = self.p.instance.config.without_namespace(self.out.topic)
        info = (f"Send [{self.times}] times, still failed, cost [{self.runtime.now_ms() - self.begin_first}]ms, "
                f"Topic: {topic}, BrokersSent: [{sent}]" + suggest_todo())
        error = self.exception
        if isinstance(error, MQBrokerError):
            code = error.code
        elif isinstance(error, RemotingConnectError):
            code = ClientErrorCode.CONNECT_BROKER_EXCEPTION
        elif isinstance(error, RemotingTimeoutError):
            code = ClientErrorCode.ACCESS_BROKER_TIMEOUT
        elif isinstance(error, MQClientError):
            code = ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION
        else:
            code = -1
        self._fail(MQClientError(info, code=code, cause=error))

    # sendSelectImpl -------------------------------------------------------------------------------------------------
    def with_selector(self, selector: Selector, arg: object) -> None:
        if not self._precheck():
            return

        def with_info(info: TopicPublishInfo | None) -> None:
            if info is None or not info.ok():
                self._fail(MQClientError(f"No route info for this topic, {self.out.topic}"))
                return
            try:
                target = self.msg if self.msg is not None else Message(self.out.topic, self.out.body)
                queues = list(info.queues)
                if self.p.instance.config.namespace:
                    # The selector sees the queues and a copy of the message outside the namespace; the queue it
                    # picks goes back in (sendSelectImpl, queueWithNamespace).
                    target = copy.copy(target)
                    target.properties = dict(target.properties)
                    target.topic = self.p.instance.config.without_namespace(target.topic)
                    queues = [self.p._queue_without_namespace(q) for q in queues]
                mq = selector(queues, target, arg)
                if self.p.instance.config.namespace:
                    if mq is None:
                        # queueWithNamespace dereferences the null the selector returned (a NullPointerException).
                        raise TypeError("queueWithNamespace(null)")
                    mq = self.p._queue_with_namespace(mq)
            except Exception as error:  # user code: Java wraps any Throwable
                self._fail(MQClientError("select message queue threw exception.", cause=error))
                return
            cost = self.runtime.now_ms() - self.begin_first
            if self.timeout < cost:
                self._fail(RemotingTooMuchRequestError("sendSelectImpl call timeout"))
                return
            if mq is None:
                self._fail(MQClientError("select message queue return null."))
                return
            self._single(mq, self.timeout - cost)

        self.p._find_publish_info(self.out.topic).add_done_callback(lambda f: with_info(f.result()))

    # send(msg, mq) --------------------------------------------------------------------------------------------------
    def to_queue(self, mq: MessageQueue) -> None:
        if not self._precheck():
            return
        if self.out.topic != mq.topic:
            self._fail(MQClientError("message's topic not equal mq's topic"))
            return
        cost = self.runtime.now_ms() - self.begin_first
        if self.timeout < cost:
            self._fail(RemotingTooMuchRequestError("call timeout"))
            return
        self._single(mq, self.timeout - cost)

    def _single(self, mq: MessageQueue, timeout_ms: int) -> None:
        """One kernel attempt without the retry loop (ASYNC still retries transport failures on the same broker)."""
        self.mq = mq
        begin = self.runtime.now_ms()

        def done(f: Future[SendResult | None]) -> None:
            latency = self.runtime.now_ms() - begin
            error = f.exception()
            if error is not None:
                self.p._emit_result(self.out, mq, 1, error=error, final=True, latency_ms=latency)
                self._fail(error)
            elif self.mode is CommunicationMode.SYNC:
                result = f.result()
                self.p._emit_result(self.out, mq, 1, result=result, final=True, latency_ms=latency)
                self._succeed(result)
            elif self.mode is CommunicationMode.ONEWAY:
                self.p._emit_result(self.out, mq, 1, final=True, oneway=True, latency_ms=latency)
                self._succeed(None)

        attempt = self.p._kernel(self.out, mq, self.mode, None, timeout_ms, 1, self._adopt, self.timeout)
        attempt.add_done_callback(self._unwrap_user_topic)
        attempt.add_done_callback(done)


class _AsyncSend:
    """``MQClientAPIImpl.sendMessageAsync`` + ``onExceptionImpl``: an ASYNC request and its transport retries."""

    def __init__(self, producer: Producer, out: _Outgoing, request: RemotingCommand, info: TopicPublishInfo | None,
                 mq: MessageQueue, attempt: int, budget_ms: int) -> None:
        self.p = producer
        self.runtime = producer.runtime
        self.out = out
        self.request = request
        self.info = info
        self.queue_id = mq.queue_id
        self.attempt = attempt
        self.budget_ms = budget_ms  # the send's timeout budget, for the attempt events
        self.times = 0  # curTimes
        self.user: Future[SendResult | None] | None = None

    def send(self, addr: str | None, broker: str, timeout_ms: int) -> None:
        begin = self.runtime.now_ms()
        mq = MessageQueue(self.out.topic, broker, self.queue_id)
        if addr is None:
            # invokeAsync throws; sendMessageAsync's catch records the broker with isolation, then retries.
            self.p.fault_strategy.update_fault_item(broker, 0, True)
            self._on_exception(broker, mq, RemotingConnectError("connect to null failed"), True, timeout_ms, begin)
            return
        if timeout_ms < 0:
            self.p.fault_strategy.update_fault_item(broker, 0, True)
            self._on_exception(broker, mq, RemotingTooMuchRequestError("invokeAsync call timeout"), True,
                               timeout_ms, begin)
            return

        def answered(f: Future[RemotingCommand]) -> None:
            cost = self.runtime.now_ms() - begin
            error = f.exception()
            if error is None:
                try:
                    result = self.p._process_response(broker, self.out, f.result(), addr)
                except (MQBrokerError, RemotingCommandError) as failure:
                    self.p.fault_strategy.update_fault_item(broker, cost, True)
                    self._on_exception(broker, mq, failure, False, timeout_ms - cost, begin)
                    return
                self.p._emit_result(self.out, mq, self.attempt, result=result, final=True, latency_ms=cost)
                self._deliver(result, None)
                self.p.fault_strategy.update_fault_item(broker, cost, False)
                return
            self.p.fault_strategy.update_fault_item(broker, cost, True)
            if isinstance(error, RemotingConnectError):
                wrapped: BaseException = error
            elif isinstance(error, RemotingTimeoutError):
                wrapped = MQClientError(f"wait response timeout {timeout_ms}ms", cause=error)
            elif isinstance(error, RemotingSendRequestError):
                wrapped = MQClientError("send request failed", cause=error)
            else:
                wrapped = MQClientError("unknow reseaon", cause=error)
            self._on_exception(broker, mq, wrapped, True, timeout_ms - cost, begin)

        self.p.instance.invoke(addr, self.request, timeout_ms).add_done_callback(answered)

    def _on_exception(self, broker: str, mq: MessageQueue, error: BaseException, need_retry: bool,
                      timeout_ms: int, begin: int) -> None:
        self.times += 1
        latency = self.runtime.now_ms() - begin
        if need_retry and self.times <= self.p.config.retry_times_when_send_async_failed:
            self.p._emit_result(self.out, mq, self.attempt, error=error, final=False, latency_ms=latency)
            retry_broker = broker
            if self.info is not None:
                retry_broker = self.p.fault_strategy.select_one(self.info, broker).broker_name
            addr = self.p.instance.find_broker_addr(retry_broker)
            cfg = self.p.instance.config
            # The same request (same header, same queue id) with a new opaque.
            self.request = RemotingCommand.request(self.request.code, self.request.ext_fields, self.request.body,
                                                   language=cfg.language, version=cfg.version)
            self.attempt += 1
            self.p.events.emit(self.p._attempt_event(self.out, retry_broker, self.queue_id, self.attempt,
                                                     CommunicationMode.ASYNC, self.budget_ms))
            self.send(None if addr is None else self.p._vip(addr), retry_broker, timeout_ms)
            return
        self.p._emit_result(self.out, mq, self.attempt, error=error, final=True, latency_ms=latency)
        self._deliver(None, error)

    def _deliver(self, result: SendResult | None, error: BaseException | None) -> None:
        if self.user is None:
            return
        if error is not None:
            self.user.set_exception(error)
        else:
            self.user.set_result(result)
