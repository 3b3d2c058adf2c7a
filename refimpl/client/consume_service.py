"""Running the user's listener over cached messages (``ConsumeMessageConcurrentlyService``,
``ConsumeMessageOrderlyService``).

Concurrent: every pulled batch is cut into requests of ``consume_message_batch_max_size`` messages that run on a
bounded pool (``consume_thread_max`` at once). The listener's status decides: CONSUME_SUCCESS acknowledges messages up
to ``context.ack_index``; RECONSUME_LATER, an exception or None fail them all. In clustering mode failed messages go
back to the broker (CONSUMER_SEND_MSG_BACK; on failure the client sends them to ``%RETRY%<group>`` itself; if that
fails too they are consumed again here after 5 s); broadcasting drops them. The messages leave the ProcessQueue and
its smallest remaining offset is committed with increaseOnly, unless the queue was dropped meanwhile.

Orderly: one consume loop per queue at a time (``MessageQueueLock``), only while the queue's broker lock is held and
fresh (clustering), taking batches in offset order under the ProcessQueue consume lock. SUCCESS commits the batch;
SUSPEND_CURRENT_QUEUE_A_MOMENT (also an exception or None) puts it back and retries after
``suspend_current_queue_time_ms``, unless a message reached the reconsume limit: it is sent to ``%RETRY%<group>``
with that count, which the broker turns into the dead-letter queue, and the batch is committed.

The listener runs through ``runtime.run_user``; ``consume_duration_ms`` is simulated processing time after it returns
(the orderly consume lock is held meanwhile). Messages of ``%RETRY%<group>`` reach the listener with their original
topic (``resetRetryAndNamespace``).
"""

from __future__ import annotations

import functools
import inspect
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.client.process_queue import ProcessQueue
from rocketspec.refimpl.message import MessageExt
from rocketspec.refimpl.runtime import Future, Runtime
from rocketspec.spec.protocol import (
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
    Property,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

# ConsumeMessageOrderlyService.MAX_TIME_CONSUME_CONTINUOUSLY: a loop yields the thread after 60 s.
MAX_TIME_CONSUME_CONTINUOUSLY_MS = 60_000
ORDERLY_LOCK_RETRY_MS = 10
ORDERLY_LOCK_FAILED_RETRY_MS = 3_000
ORDERLY_NOT_LOCKED_RETRY_MS = 100
ORDERLY_LOCK_INTERVAL_MS = 20_000
ORDERLY_LOCK_INITIAL_DELAY_MS = 1_000
MAX_ACK_INDEX = 2**31 - 1


@attrs.define
class ConsumeConcurrentlyContext:
    """``ConsumeConcurrentlyContext``: a listener may set ``ack_index`` and ``delay_level_when_next_consume``."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = MAX_ACK_INDEX


@attrs.define
class ConsumeOrderlyContext:
    """``ConsumeOrderlyContext``: ``auto_commit`` and the suspend time of this batch (-1: the configured one)."""

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_ms: int = -1


def adapt_listener(listener: Any) -> Callable[[list[MessageExt], Any], Any]:
    """Call a listener as ``listener(msgs)`` or ``listener(msgs, context)`` (two required positional parameters or
    ``*args``); objects with ``consume_message`` are called through it."""
    fn = getattr(listener, "consume_message", listener)
    if not callable(fn):
        raise TypeError("a listener is a callable taking the messages (and optionally a context)")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return lambda msgs, ctx: fn(msgs)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.kind in positional and p.default is inspect.Parameter.empty]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params) or len(required) >= 2:
        return lambda msgs, ctx: fn(msgs, ctx)
    return lambda msgs, ctx: fn(msgs)


def concurrent_status(value: Any) -> ConsumeStatus | None:
    """A concurrent listener's answer: a ConsumeStatus (or its name); anything else is no answer (None)."""
    if isinstance(value, ConsumeStatus):
        return value
    if isinstance(value, str) and value in ConsumeStatus.__members__:
        return ConsumeStatus[value]
    return None


def orderly_status(value: Any) -> ConsumeOrderlyStatus | None:
    """An orderly listener's answer; CONSUME_SUCCESS / RECONSUME_LATER are taken as SUCCESS / SUSPEND."""
    if isinstance(value, ConsumeOrderlyStatus):
        return value
    if value is ConsumeStatus.CONSUME_SUCCESS:
        return ConsumeOrderlyStatus.SUCCESS
    if value is ConsumeStatus.RECONSUME_LATER:
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
    if isinstance(value, str):
        if value in ConsumeOrderlyStatus.__members__:
            return ConsumeOrderlyStatus[value]
        if value in ConsumeStatus.__members__:
            return orderly_status(ConsumeStatus[value])
    return None


def reset_retry_topic(msgs: list[MessageExt], group: str,
                      without_namespace: Callable[[str], str] | None = None) -> list[MessageExt]:
    """``resetRetryAndNamespace``: a message of ``%RETRY%<group>`` gets its RETRY_TOPIC back as topic; with a
    namespace (``without_namespace``) the topic is then shown outside it."""
    group_topic = retry_topic(group)
    out = []
    for msg in msgs:
        real = msg.properties.get(Property.RETRY_TOPIC)
        topic = real if real is not None and msg.topic == group_topic else msg.topic
        if without_namespace is not None:
            topic = without_namespace(topic)
        out.append(msg if topic == msg.topic else attrs.evolve(msg, topic=topic))
    return out


def _namespace_view(consumer: Any) -> Callable[[str], str] | None:
    """How the listener sees a topic: outside the client's namespace, when it has a non-empty one."""
    config = consumer.instance.config
    return config.without_namespace if config.namespace else None


def with_consume_start_time(msgs: list[MessageExt], now_ms: int) -> list[MessageExt]:
    """``MessageAccessor.setConsumeStartTimeStamp`` on each message of a concurrent batch."""
    out = []
    for msg in msgs:
        props = dict(msg.properties)
        props[Property.CONSUME_START_TIME] = str(now_ms)
        out.append(attrs.evolve(msg, properties=props))
    return out


class ConsumeExecutor:
    """The consume thread pool: at most ``threads`` tasks at once, the rest wait in order.

    A task is ``fn(finish)``; it calls ``finish()`` once when its work (listener, processing time, result handling)
    is over.
    """

    def __init__(self, runtime: Runtime, threads: int) -> None:
        self.runtime = runtime
        self.threads = threads
        self._queue: deque[Callable[[Callable[[], None]], None]] = deque()
        self._running = 0
        self.stopped = False

    def submit(self, task: Callable[[Callable[[], None]], None]) -> None:
        if self.stopped:
            return
        self._queue.append(task)
        self._pump()

    def _pump(self) -> None:
        while not self.stopped and self._running < self.threads and self._queue:
            task = self._queue.popleft()
            self._running += 1
            self.runtime.call_soon(functools.partial(self._start, task))

    def _start(self, task: Callable[[Callable[[], None]], None]) -> None:
        finished = False

        def finish() -> None:
            nonlocal finished
            if finished:
                return
            finished = True
            self._running -= 1
            self._pump()

        if self.stopped:
            finish()
            return
        try:
            task(finish)
        except Exception:
            finish()
            raise

    def busy(self) -> bool:
        return not self.stopped and (self._running > 0 or bool(self._queue))

    def shutdown(self) -> None:
        self.stopped = True
        self._queue.clear()


class ConsumeMessageConcurrentlyService:
    """``ConsumeMessageConcurrentlyService`` of a push consumer (``consumer`` is the PushConsumer)."""

    def __init__(self, consumer: Any, listener: Any) -> None:
        self.consumer = consumer
        self.config = consumer.config
        self.runtime: Runtime = consumer.instance.runtime
        self.listener = adapt_listener(listener)
        self.executor = ConsumeExecutor(self.runtime, self.config.consume_thread_max)
        self._later = 0  # local re-consumption tasks waiting for their 5 s
        self._without_namespace = _namespace_view(consumer)

    def start(self) -> None:
        """Expired-message cleaning is not simulated (consume_timeout_minutes only bounds the listener)."""

    def shutdown(self) -> None:
        self.executor.shutdown()

    def busy(self) -> bool:
        return self.executor.busy() or self._later > 0

    def submit_consume_request(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue,
                               dispatch_to_consume: bool) -> None:
        """Cut ``msgs`` into requests of ``consume_message_batch_max_size`` messages."""
        size = self.config.consume_message_batch_max_size
        for start in range(0, len(msgs), size):
            batch = list(msgs[start:start + size])
            self.executor.submit(functools.partial(self._run, batch, pq, mq))

    def _submit_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        self._later += 1

        def again() -> None:
            self._later -= 1
            if self.consumer.alive():
                self.submit_consume_request(msgs, pq, mq, True)

        self.runtime.call_later(SEND_BACK_LOCAL_RETRY_DELAY_MS, again)

    def _run(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, finish: Callable[[], None]) -> None:
        """``ConsumeRequest.run``."""
        if pq.dropped or not self.consumer.alive():
            finish()
            return
        context = ConsumeConcurrentlyContext(mq)
        msgs = reset_retry_topic(msgs, self.config.group, self._without_namespace)
        msgs = with_consume_start_time(msgs, self.runtime.now_ms())
        self.consumer.emit_deliver(mq, msgs)
        view = list(msgs)

        def returned(value: Any, error: BaseException | None) -> None:
            status = None if error is not None else concurrent_status(value)
            if status is None:
                status = ConsumeStatus.RECONSUME_LATER

            def processed() -> None:
                if pq.dropped or not self.consumer.alive():
                    finish()
                    return
                self.process_consume_result(status, context, msgs, pq, mq, finish)

            if self.config.consume_duration_ms > 0:
                self.runtime.call_later(self.config.consume_duration_ms, processed)
            else:
                processed()

        self.runtime.run_user(lambda: self.listener(view, context), returned)

    def process_consume_result(self, status: ConsumeStatus, context: ConsumeConcurrentlyContext,
                               msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue,
                               finish: Callable[[], None]) -> None:
        """``processConsumeResult``: acknowledge, send failures back, remove from the cache, commit."""
        if not msgs:
            finish()
            return
        ack_index = context.ack_index
        if status is ConsumeStatus.CONSUME_SUCCESS:
            if ack_index >= len(msgs):
                ack_index = len(msgs) - 1
        else:
            ack_index = -1
        for i, msg in enumerate(msgs):
            ok = i <= ack_index
            self.consumer.emit_result(mq, msg, ConsumeStatus.CONSUME_SUCCESS.name if ok
                                      else ConsumeStatus.RECONSUME_LATER.name)
        failed = list(range(max(ack_index + 1, 0), len(msgs)))

        def commit(kept: list[MessageExt]) -> None:
            offset = pq.remove_messages(kept)
            if offset >= 0 and not pq.dropped:
                self.consumer.offset_store.update_offset(mq, offset, True)
            finish()

        if self.config.message_model is MessageModel.BROADCASTING or not failed:
            # Broadcasting: a failed message is only logged ("BROADCASTING, the message consume failed, drop it").
            commit(msgs)
            return
        back_failed: list[int] = []
        # Each failed message's property map, which a fallback send shares (DefaultMQPushConsumerImpl.sendMessageBack:
        # MessageAccessor.setProperties): a message consumed again locally shows what that send set.
        shared = {i: dict(msgs[i].properties) for i in failed}

        def send_back(index: int) -> Future[None]:
            step: Future[None] = Future()

            def sent(f: Future[bool]) -> None:
                if f.exception() is not None or not f.result():
                    back_failed.append(index)
                step.set_result(None)

            self.consumer.send_message_back(msgs[index], context.delay_level_when_next_consume,
                                            mq, shared[index]).add_done_callback(sent)
            return step

        def all_sent() -> None:
            if not self.consumer.alive():
                finish()
                return
            again = [attrs.evolve(msgs[i], reconsume_times=msgs[i].reconsume_times + 1, properties=shared[i])
                     for i in back_failed]
            kept = [m for i, m in enumerate(msgs) if i not in back_failed]
            if again:
                self._submit_later(again, pq, mq)
            commit(kept)

        _in_order(failed, send_back, all_sent)


def _in_order(items: list[Any], step: Callable[[Any], Future[Any]], done: Callable[[], None]) -> None:
    index = 0

    def next_item(_f: Future[Any] | None = None) -> None:
        nonlocal index
        while index < len(items):
            item = items[index]
            index += 1
            future = step(item)
            if not future.done():
                future.add_done_callback(next_item)
                return
        done()

    next_item()


class ConsumeMessageOrderlyService:
    """``ConsumeMessageOrderlyService`` of a push consumer."""

    def __init__(self, consumer: Any, listener: Any) -> None:
        self.consumer = consumer
        self.config = consumer.config
        self.runtime: Runtime = consumer.instance.runtime
        self.listener = adapt_listener(listener)
        self.executor = ConsumeExecutor(self.runtime, self.config.consume_thread_max)
        self.stopped = False
        self._without_namespace = _namespace_view(consumer)
        self._active: set[MessageQueue] = set()  # queues whose consume loop runs (MessageQueueLock)
        self._waiting: dict[MessageQueue, int] = {}
        self._scheduled = 0
        self._lock_timer: Any = None

    @property
    def clustering(self) -> bool:
        return self.config.message_model is MessageModel.CLUSTERING

    def start(self) -> None:
        """Clustering: renew every queue lock every 20 s (``lockMQPeriodically``), first after 1 s."""
        if self.clustering:
            self._lock_timer = self.runtime.call_every(ORDERLY_LOCK_INTERVAL_MS, self.lock_mq_periodically,
                                                       initial_delay_ms=ORDERLY_LOCK_INITIAL_DELAY_MS)

    def lock_mq_periodically(self) -> None:
        if not self.stopped and self.consumer.alive():
            self.consumer.rebalance.lock_all()

    def shutdown(self) -> None:
        """Stop and, in clustering, release every broker lock (``unlockAllMQ``)."""
        self.stopped = True
        if self._lock_timer is not None:
            self._lock_timer.cancel()
        self.executor.shutdown()
        if self.clustering:
            self.consumer.rebalance.unlock_all(False)

    def busy(self) -> bool:
        return self.executor.busy() or self._scheduled > 0 or bool(self._active)

    def submit_consume_request(self, msgs: list[MessageExt] | None, pq: ProcessQueue, mq: MessageQueue,
                               dispatch_to_consume: bool) -> None:
        if dispatch_to_consume:
            self.executor.submit(lambda finish: self._run(pq, mq, finish))

    def _later(self, delay_ms: int, fn: Callable[[], None]) -> None:
        self._scheduled += 1

        def run() -> None:
            self._scheduled -= 1
            if not self.stopped and self.consumer.alive():
                fn()

        self.runtime.call_later(delay_ms, run)

    def submit_consume_request_later(self, pq: ProcessQueue, mq: MessageQueue, suspend_ms: int) -> None:
        """Resubmit after ``suspend_ms`` (-1: the configured suspend time), clamped to [10, 30000] ms."""
        delay = self.config.suspend_current_queue_time_ms if suspend_ms == -1 else suspend_ms
        delay = min(max(delay, 10), 30_000)
        self._later(delay, lambda: self.submit_consume_request(None, pq, mq, True))

    def try_lock_later_and_reconsume(self, mq: MessageQueue, pq: ProcessQueue, delay_ms: int) -> None:
        def attempt() -> None:
            def locked(f: Future[bool]) -> None:
                ok = f.exception() is None and f.result()
                self.submit_consume_request_later(pq, mq, ORDERLY_LOCK_RETRY_MS if ok else ORDERLY_LOCK_FAILED_RETRY_MS)

            self.lock_one_mq(mq).add_done_callback(locked)

        self._later(delay_ms, attempt)

    def lock_one_mq(self, mq: MessageQueue) -> Future[bool]:
        if self.stopped:
            future: Future[bool] = Future()
            future.set_result(False)
            return future
        return self.consumer.rebalance.lock(mq)

    # ------------------------------------------------------------------------------------------ the consume loop
    def _run(self, pq: ProcessQueue, mq: MessageQueue, finish: Callable[[], None]) -> None:
        """``ConsumeRequest.run``: wait for the queue's loop lock, then consume batch after batch."""
        if pq.dropped or not self.consumer.alive():
            finish()
            return
        if mq in self._active:
            # Another loop holds this queue's MessageQueueLock: run after it (Java blocks on synchronized).
            self._waiting[mq] = self._waiting.get(mq, 0) + 1
            finish()
            return
        self._active.add(mq)

        def release() -> None:
            self._active.discard(mq)
            if self._waiting.pop(mq, 0):
                self.submit_consume_request(None, pq, mq, True)
            finish()

        if not self.clustering or (pq.locked and not pq.is_lock_expired()):
            self._loop(pq, mq, self.runtime.now_ms(), release)
        else:
            if not pq.dropped:
                self.try_lock_later_and_reconsume(mq, pq, ORDERLY_NOT_LOCKED_RETRY_MS)
            release()

    def _loop(self, pq: ProcessQueue, mq: MessageQueue, begin_ms: int, release: Callable[[], None]) -> None:
        while True:
            if pq.dropped or not self.consumer.alive():
                release()
                return
            if self.clustering and (not pq.locked or pq.is_lock_expired()):
                self.try_lock_later_and_reconsume(mq, pq, ORDERLY_LOCK_RETRY_MS)
                release()
                return
            if self.runtime.now_ms() - begin_ms > MAX_TIME_CONSUME_CONTINUOUSLY_MS:
                self.submit_consume_request_later(pq, mq, ORDERLY_LOCK_RETRY_MS)
                release()
                return
            msgs = pq.take_messages(self.config.consume_message_batch_max_size)
            msgs = reset_retry_topic(msgs, self.config.group, self._without_namespace)
            if not msgs:
                release()
                return
            self._consume_batch(pq, mq, msgs, begin_ms, release)
            return

    def _consume_batch(self, pq: ProcessQueue, mq: MessageQueue, msgs: list[MessageExt], begin_ms: int,
                       release: Callable[[], None]) -> None:
        context = ConsumeOrderlyContext(mq)
        if not pq.try_consume_lock():
            # The rebalance holds it while removing the queue; the queue is being dropped.
            pq.rollback()
            release()
            return
        if pq.dropped:
            pq.release_consume_lock()
            release()
            return
        self.consumer.emit_deliver(mq, msgs)
        view = list(msgs)

        def returned(value: Any, error: BaseException | None) -> None:
            status = None if error is not None else orderly_status(value)
            if status is None:
                status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT

            def processed() -> None:
                pq.release_consume_lock()
                if not self.consumer.alive():
                    release()
                    return
                for msg in msgs:
                    self.consumer.emit_result(mq, msg, status.name)

                def continued(f: Future[bool]) -> None:
                    if f.exception() is None and f.result():
                        # The next batch of the same loop (a new callback: no recursion, no time passes).
                        self.runtime.call_soon(lambda: self._loop(pq, mq, begin_ms, release))
                    else:
                        release()

                self.process_consume_result(msgs, status, context, pq, mq).add_done_callback(continued)

            if self.config.consume_duration_ms > 0:
                self.runtime.call_later(self.config.consume_duration_ms, processed)
            else:
                processed()

        self.runtime.run_user(lambda: self.listener(view, context), returned)

    def process_consume_result(self, msgs: list[MessageExt], status: ConsumeOrderlyStatus,
                               context: ConsumeOrderlyContext, pq: ProcessQueue, mq: MessageQueue) -> Future[bool]:
        """``processConsumeResult``: commit or suspend; the future says whether the loop continues."""
        result: Future[bool] = Future()

        def commit_offset(offset: int) -> None:
            if offset >= 0 and not pq.dropped:
                self.consumer.offset_store.update_offset(mq, offset, False)

        if status is ConsumeOrderlyStatus.SUCCESS:
            if context.auto_commit:
                commit_offset(pq.commit())
            result.set_result(True)
            return result

        def checked(f: Future[tuple[bool, list[MessageExt]]]) -> None:
            suspend, again = f.result()
            if suspend:
                pq.make_message_to_consume_again(again)
                self.submit_consume_request_later(pq, mq, context.suspend_current_queue_time_ms)
                result.set_result(False)
                return
            if context.auto_commit:
                commit_offset(pq.commit())
            result.set_result(True)

        self.check_reconsume_times(msgs).add_done_callback(checked)
        return result

    def check_reconsume_times(self, msgs: list[MessageExt]) -> Future[tuple[bool, list[MessageExt]]]:
        """``checkReconsumeTimes``: at the limit a message goes to the DLQ (via its retry topic) if that send works;
        every other message counts one more reconsumption. True: the batch is suspended."""
        result: Future[tuple[bool, list[MessageExt]]] = Future()
        limit = self.config.orderly_max_reconsume_times()
        suspend = False
        updated: list[MessageExt] = []

        def check(msg: MessageExt) -> Future[None]:
            nonlocal suspend
            step: Future[None] = Future()
            if msg.reconsume_times >= limit:
                # The message's own map: RECONSUME_TIME set here, then shared with the dead-letter message
                # (sendMessageBack's setProperties), so the message keeps what the send sets and loses what the
                # producer moves into the header (RECONSUME_TIME, MAX_RECONSUME_TIMES).
                props = dict(msg.properties)
                props[Property.RECONSUME_TIME] = str(msg.reconsume_times)

                def sent(f: Future[bool], msg: MessageExt = msg, props: dict[str, str] = props) -> None:
                    nonlocal suspend
                    msg = attrs.evolve(msg, properties=dict(props))
                    if f.exception() is not None or not f.result():
                        suspend = True
                        updated.append(attrs.evolve(msg, reconsume_times=msg.reconsume_times + 1))
                    else:
                        updated.append(msg)
                    step.set_result(None)

                self.consumer.send_orderly_message_back(msg, limit, props).add_done_callback(sent)
                return step
            suspend = True
            updated.append(attrs.evolve(msg, reconsume_times=msg.reconsume_times + 1))
            step.set_result(None)
            return step

        _in_order(list(msgs), check, lambda: result.set_result((suspend, updated)))
        return result
