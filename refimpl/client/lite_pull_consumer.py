"""The lite pull consumer (``DefaultLitePullConsumerImpl`` and ``AssignedMessageQueue`` of 4.9.8).

Queues come from a subscription (rebalanced like a push consumer's, ``RebalanceLitePullImpl``) or from ``assign``.
Every assigned queue has a pull task that pulls (long polling, lite pull sysFlag: suspend + subscription + lite)
into the queue's ProcessQueue and appends a consume request to a shared cache; ``poll`` takes the next request,
removes its messages from the ProcessQueue and remembers the offset after them as the queue's consume offset.
``commit`` (commitSync) copies those consume offsets into the offset store and, by default, persists them at once;
with ``auto_commit`` a ``poll`` also commits every ``auto_commit_interval_ms``. ``seek`` restarts a queue's pull task
from an offset between the queue's min and max offsets.

Flow control as in ``PullTaskImpl.run``: the whole cache (requests × pull batch size) over
``pull_threshold_for_all``, or one queue over its count / size / span thresholds → pull again after 50 ms; paused
queues after 1 s; failures after ``pull_time_delay_ms_when_exception`` (1 s; FLOW_CONTROL 20 ms).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from rocketspec.refimpl.client.allocate import make_strategy
from rocketspec.refimpl.client.consumer_config import (
    ConsumerConfig,
    SubscriptionData,
    build_subscription,
)
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.client.offset_store import LocalFileOffsetStore, RemoteBrokerOffsetStore
from rocketspec.refimpl.client.process_queue import ProcessQueue
from rocketspec.refimpl.client.pull_api import (
    MQAdmin,
    PullAPIWrapper,
    PullResult,
    build_sys_flag,
    first_answer_grace_ms,
)
from rocketspec.refimpl.client.rebalance import RebalanceLitePullImpl
from rocketspec.refimpl.events import ClientLifecycle, ConsumeDeliver
from rocketspec.refimpl.message import MessageExt
from rocketspec.refimpl.route import subscribe_queues
from rocketspec.refimpl.runtime import Future, RuntimeTimeout, Timer, when_all
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    CONSUME_TIMESTAMP_DEFAULT_LAG_MS,
    LITE_PULL_TIME_DELAY_MS_WHEN_EXCEPTION,
    PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL,
    PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL,
    SUB_ALL,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    PullStatus,
    ReadOffsetType,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

PULL_TIME_DELAY_MS_WHEN_PAUSE = 1_000
PULL_TIME_DELAY_MS_ON_OFFSET_ERROR = 3_000


class SubscriptionType(enum.Enum):
    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"


@attrs.define(eq=False)
class MessageQueueState:
    """``AssignedMessageQueue.MessageQueueState``: -1 means unset."""

    mq: MessageQueue
    pq: ProcessQueue
    paused: bool = False
    pull_offset: int = -1
    consume_offset: int = -1
    seek_offset: int = -1


@attrs.define(eq=False)
class ConsumeRequest:
    msgs: list[MessageExt]
    mq: MessageQueue
    pq: ProcessQueue


@attrs.define(eq=False)
class PullTask:
    mq: MessageQueue
    cancelled: bool = False


class LitePullConsumer:
    """A lite pull consumer of ``config.group`` on a client instance."""

    role = "lite_pull_consumer"

    def __init__(self, instance: Any, config: ConsumerConfig) -> None:
        self.instance = instance
        self.config = config
        # DefaultLitePullConsumer: the group, topics and queues the user names live in the client's namespace.
        config.group = instance.config.with_namespace(config.group)
        self.group = config.group
        self.runtime = instance.runtime
        self.events = instance.events
        self.running = False
        self.shut_down = False
        self.subscription_type = SubscriptionType.NONE
        self.assigned: dict[MessageQueue, MessageQueueState] = {}
        self.task_table: dict[MessageQueue, PullTask] = {}
        self.cache: deque[ConsumeRequest] = deque()
        self.topic_to_sub_expression: dict[str, str] = {}
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._poll_waiters: deque[Future[ConsumeRequest | None]] = deque()
        self._known_max: dict[MessageQueue, int] = {}
        self._pull_failing: set[MessageQueue] = set()
        self._timers: list[Timer] = []
        self._next_auto_commit_deadline = -1
        self.strategy: Any = None
        self.offset_store: Any = None
        self.pull_api: PullAPIWrapper = None  # type: ignore[assignment]
        self.admin = MQAdmin(instance)
        self.rebalance = RebalanceLitePullImpl(self, instance, config, None, None, self.admin)

    # ------------------------------------------------------------------------------------------------ helpers
    def alive(self) -> bool:
        return self.running and not self.instance.stopped

    def _check_running(self) -> None:
        if not self.alive():
            raise MQClientError("The consumer not running, please start it first.")

    def _set_subscription_type(self, kind: SubscriptionType) -> None:
        if self.subscription_type is SubscriptionType.NONE:
            self.subscription_type = kind
        elif self.subscription_type is not kind:
            raise MQClientError("Subscribe and assign are mutually exclusive.")

    def _wait(self, future: Future[Any], timeout_ms: int | None = None) -> Any:
        return self.runtime.wait(future, timeout_ms)

    @property
    def _exception_delay(self) -> int:
        delay = self.config.pull_time_delay_ms_when_exception
        return LITE_PULL_TIME_DELAY_MS_WHEN_EXCEPTION if delay is None else delay

    # ------------------------------------------------------------------------------------------------ subscribing
    def _ns(self, topic: str) -> str:
        wrapped: str = self.instance.config.with_namespace(topic)
        return wrapped

    def _ns_queue(self, mq: MessageQueue) -> MessageQueue:
        """``queueWithNamespace``."""
        return MessageQueue(self._ns(mq.topic), mq.broker_name, mq.queue_id)

    def subscribe(self, topic: str, expression: str | None = SUB_ALL) -> None:
        """Subscribe to ``topic``: its queues are rebalanced among the group (exclusive with ``assign``)."""
        topic = self._ns(topic) if isinstance(topic, str) else topic

        def run() -> None:
            if not isinstance(topic, str) or not topic:
                raise ValueError("Topic can not be null or empty.")
            self._set_subscription_type(SubscriptionType.SUBSCRIBE)
            sub = build_subscription(topic, expression, self.runtime.now_ms())
            self._subscriptions[topic] = sub
            self.rebalance.subscription_inner[topic] = sub
            if self.alive():
                self.instance.send_heartbeat_to_all_brokers()
                self.instance.update_topic_route(topic)

        self.runtime.submit(run)

    def unsubscribe(self, topic: str) -> None:
        topic = self._ns(topic)

        def run() -> None:
            self._subscriptions.pop(topic, None)
            self.rebalance.subscription_inner.pop(topic, None)
            self._remove_pull_tasks(topic)
            for mq in [mq for mq in self.assigned if mq.topic == topic]:
                del self.assigned[mq]

        self.runtime.submit(run)

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Pull exactly these queues (no rebalance)."""
        queues = [self._ns_queue(mq) for mq in queues]

        def run() -> None:
            if not queues:
                raise ValueError("Message queues can not be null or empty.")
            self._set_subscription_type(SubscriptionType.ASSIGN)
            self._update_assigned(None, set(queues))
            if self.alive():
                self._update_assign_pull_tasks(set(queues))

        self.runtime.submit(run)

    def set_sub_expression_for_assign(self, topic: str, expression: str) -> None:
        def run() -> None:
            if not expression or not expression.strip():
                raise ValueError("subExpression can not be null or empty.")
            if self.running or self.shut_down:
                raise MQClientError("setAssignTag only can be called before start.")
            self._set_subscription_type(SubscriptionType.ASSIGN)
            self.topic_to_sub_expression[topic] = expression

        self.runtime.submit(run)

    # ------------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.runtime.submit(self._start)

    def _start(self) -> None:
        if self.running or self.shut_down:
            raise MQClientError("The PullConsumer service state not OK, maybe started once")
        self.config.validate()
        self.strategy = make_strategy(self.config.allocate_strategy, self.config.allocate_config)
        self.rebalance.strategy = self.strategy
        self.rebalance.consume_timestamp_ms = (
            self.config.consume_timestamp_ms if self.config.consume_timestamp_ms is not None
            else self.runtime.now_ms() - CONSUME_TIMESTAMP_DEFAULT_LAG_MS)
        try:
            self.instance.register_consumer(self.group, self)
        except ValueError as error:
            raise MQClientError(str(error)) from None
        self.pull_api = PullAPIWrapper(self.instance, self.group, self.config.unit_mode)
        if self.config.message_model is MessageModel.BROADCASTING:
            self.offset_store = LocalFileOffsetStore(self.instance, self.group, self.config.offset_store_dir)
        else:
            self.offset_store = RemoteBrokerOffsetStore(self.instance, self.group)
        self.rebalance.offset_store = self.offset_store
        self.offset_store.load()
        self.instance.start()
        self.running = True
        self.runtime.add_idle_probe(self.idle_pending)
        self.events.emit(ClientLifecycle(node=self.instance.client_id, group=self.group, role=self.role,
                                         action="start"))
        # operateAfterRunning.
        if self.subscription_type is SubscriptionType.SUBSCRIBE:
            routes = [self.instance.update_topic_route(t) for t in sorted(self.rebalance.subscription_inner)]

            def routed() -> None:
                if self.alive():
                    self.instance.send_heartbeat_to_all_brokers().add_done_callback(
                        lambda _f: self.alive() and self.instance.rebalance_immediately())

            when_all(routes, routed)
        elif self.subscription_type is SubscriptionType.ASSIGN:
            self._update_assign_pull_tasks(set(self.assigned))

    def shutdown(self) -> None:
        self.runtime.submit(self._shutdown)

    def _shutdown(self) -> None:
        if not self.running:
            self.shut_down = True
            return
        self.persist_offsets()
        self.instance.unregister_consumer(self.group)
        self.running = False
        self.shut_down = True
        for task in self.task_table.values():
            task.cancelled = True
        self.task_table.clear()
        for timer in self._timers:
            timer.cancel()
        self._timers = []
        while self._poll_waiters:
            self._poll_waiters.popleft().set_result(None)
        self.runtime.remove_idle_probe(self.idle_pending)
        self.events.emit(ClientLifecycle(node=self.instance.client_id, group=self.group, role=self.role,
                                         action="shutdown"))
        others = [g for g in self.instance.producers if g != CLIENT_INNER_PRODUCER_GROUP]
        if not self.instance.consumers and not others:
            self.instance.shutdown()

    # ------------------------------------------------------------------------------------------------ instance hooks
    def heartbeat_data(self) -> dict[str, Any]:
        subs = self.rebalance.subscription_inner
        return {
            "groupName": self.group,
            "consumeType": ConsumeType.CONSUME_ACTIVELY.value,
            "messageModel": self.config.message_model.value,
            # DefaultLitePullConsumerImpl.consumeFromWhere() always reports CONSUME_FROM_LAST_OFFSET.
            "consumeFromWhere": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET.value,
            "subscriptionDataSet": [subs[t].to_json() for t in sorted(subs)],
            "unitMode": self.config.unit_mode,
        }

    def subscribed_topics(self) -> set[str]:
        return set(self.rebalance.subscription_inner)

    def on_route(self, topic: str, queues: set[MessageQueue]) -> None:
        if topic in self.rebalance.subscription_inner:
            self.rebalance.topic_subscribe_info[topic] = set(queues)

    def do_rebalance(self) -> None:
        if self.alive():
            self.rebalance.do_rebalance(False)

    def rebalance_finished(self, generation: int) -> None:
        """Nothing waits for a lite pull rebalance."""

    def persist_offsets(self) -> None:
        """``persistConsumerOffset``: subscribed → the rebalanced queues; assigned → the assigned queues."""
        if not self.running or self.offset_store is None or self.instance.stopped:
            return
        if self.subscription_type is SubscriptionType.SUBSCRIBE:
            mqs = set(self.rebalance.process_queue_table)
        elif self.subscription_type is SubscriptionType.ASSIGN:
            mqs = set(self.assigned)
        else:
            mqs = set()
        self.offset_store.persist_all(mqs)

    def idle_pending(self) -> bool:
        """True while messages known to be on a broker are not fetched yet (for a queue with nothing cached), or a
        committed offset still waits to be persisted. Fetched messages wait for the user's ``poll``."""
        if not self.alive():
            return False
        for mq, state in self.assigned.items():
            if state.pq.dropped or state.paused or mq not in self.task_table:
                continue
            if self.runtime.simulated and self.offset_store is not None and self.offset_store.dirty([mq]):
                return True  # a committed offset waits for the periodic persistence (simulated clock only)
            if mq in self._pull_failing or state.pq.msg_count > 0:
                continue  # blocked (broker gone), or fetched messages wait for the user's poll
            known = self._known_max.get(mq)
            if known is None:
                # No pull answered yet: pending until the first pull reached the broker (held there: nothing to give).
                sent = self.pull_api.last_pull_sent_ms.get(mq) if self.pull_api is not None else None
                if sent is None or self.runtime.now_ms() <= sent + first_answer_grace_ms(self.instance):
                    return True
            elif state.pull_offset >= 0 and known > state.pull_offset:
                return True  # messages are still to fetch
        return False

    # ------------------------------------------------------------------------------------------------ assignment
    def update_assign_queue_and_start_pull_task(self, topic: str, mq_all: set[MessageQueue],
                                                divided: set[MessageQueue]) -> None:
        """The rebalance result (broadcasting: every queue) becomes the topic's assigned queues and pull tasks."""
        queues = mq_all if self.config.message_model is MessageModel.BROADCASTING else divided
        self._update_assigned(topic, queues)
        for mq, task in list(self.task_table.items()):
            if mq.topic == topic and mq not in queues:
                task.cancelled = True
                del self.task_table[mq]
        self._start_pull_tasks(queues)

    def _update_assigned(self, topic: str | None, queues: set[MessageQueue]) -> None:
        for mq in list(self.assigned):
            if (topic is None or mq.topic == topic) and mq not in queues:
                self.assigned.pop(mq).pq.dropped = True
        for mq in sorted(queues):
            if mq not in self.assigned:
                pq = self.rebalance.process_queue_table.get(mq) or ProcessQueue(self.runtime.now_ms)
                self.assigned[mq] = MessageQueueState(mq, pq)

    def _update_assign_pull_tasks(self, queues: set[MessageQueue]) -> None:
        for mq, task in list(self.task_table.items()):
            if mq not in queues:
                task.cancelled = True
                del self.task_table[mq]
        self._start_pull_tasks(queues)

    def _start_pull_tasks(self, queues: Iterable[MessageQueue]) -> None:
        for mq in sorted(queues):
            if mq not in self.task_table:
                task = PullTask(mq)
                self.task_table[mq] = task
                self._schedule(task, 0)

    def _remove_pull_tasks(self, topic: str) -> None:
        for mq, task in list(self.task_table.items()):
            if mq.topic == topic:
                task.cancelled = True
                del self.task_table[mq]

    def _schedule(self, task: PullTask, delay_ms: int) -> None:
        def run() -> None:
            if timer in self._timers:
                self._timers.remove(timer)
            if self.alive():
                self._run_pull_task(task)

        timer = self.runtime.call_later(delay_ms, run, daemon=True)
        self._timers.append(timer)

    # ------------------------------------------------------------------------------------------------ pull tasks
    def _run_pull_task(self, task: PullTask) -> None:
        """``PullTaskImpl.run``."""
        if task.cancelled:
            return
        mq = task.mq
        state = self.assigned.get(mq)
        if state is None or state.paused:
            # AssignedMessageQueue.isPaused is true for an unknown queue.
            self._schedule(task, PULL_TIME_DELAY_MS_WHEN_PAUSE)
            return
        pq = state.pq
        if pq.dropped:
            return
        cfg = self.config
        if len(self.cache) * cfg.pull_batch_size > cfg.pull_threshold_for_all:
            self._schedule(task, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
            return
        if pq.msg_count > cfg.pull_threshold_for_queue:
            self._schedule(task, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
            return
        if pq.msg_size // (1024 * 1024) > cfg.pull_threshold_size_for_queue_mib:
            self._schedule(task, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
            return
        if pq.max_span() > cfg.consume_concurrently_max_span:
            self._schedule(task, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
            return

        def with_offset(f: Future[int]) -> None:
            if not self.alive():
                return
            if f.exception() is not None:
                self._schedule(task, PULL_TIME_DELAY_MS_ON_OFFSET_ERROR)
                return
            if task.cancelled or pq.dropped:
                return
            self._pull(task, state, f.result())

        self._next_pull_offset(state).add_done_callback(with_offset)

    def _next_pull_offset(self, state: MessageQueueState) -> Future[int]:
        """``nextPullOffset``: a pending seek, else the pull cursor, else ``computePullFromWhere``."""
        future: Future[int] = Future()
        if state.seek_offset != -1:
            offset = state.seek_offset
            state.consume_offset = offset
            state.seek_offset = -1
            future.set_result(offset)
            return future
        if state.pull_offset != -1:
            future.set_result(state.pull_offset)
            return future

        def computed(f: Future[int]) -> None:
            error = f.exception()
            if error is not None:
                future.set_exception(error)
            elif f.result() < 0:
                future.set_exception(MQClientError("offset < 0"))
            else:
                future.set_result(f.result())

        self.rebalance.compute_pull_from_where(state.mq).add_done_callback(computed)
        return future

    def _subscription_for(self, topic: str) -> SubscriptionData:
        if self.subscription_type is SubscriptionType.SUBSCRIBE:
            sub = self.rebalance.subscription_inner.get(topic)
            if sub is not None:
                return sub
        return build_subscription(topic, self.topic_to_sub_expression.get(topic, SUB_ALL), 0)

    def _pull(self, task: PullTask, state: MessageQueueState, offset: int) -> None:
        mq, pq = state.mq, state.pq
        sub = self._subscription_for(mq.topic)
        sys_flag = build_sys_flag(False, True, True, False, lite_pull=True)
        sub_version = 0 if sub.expression_type == "TAG" else sub.sub_version
        future = self.pull_api.pull_kernel(mq, sub.sub_string, sub.expression_type, sub_version, offset,
                                           self.config.pull_batch_size, sys_flag, 0,
                                           self.config.broker_suspend_max_time_ms,
                                           self.config.consumer_timeout_ms_when_suspend)

        def answered(f: Future[PullResult]) -> None:
            if not self.alive():
                return
            error = f.exception()
            delay = 0
            if error is None:
                try:
                    result = self.pull_api.process_pull_result(mq, f.result(), sub, offset)
                except ValueError as bad:
                    error = bad
            if error is not None:
                self._pull_failing.add(mq)
                if isinstance(error, MQBrokerError) and error.code == ResponseCode.FLOW_CONTROL:
                    delay = PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL
                else:
                    delay = self._exception_delay
            else:
                self._pull_failing.discard(mq)
                self._known_max[mq] = result.max_offset
                if task.cancelled or pq.dropped:
                    return
                if result.status is PullStatus.FOUND and result.msg_found_list and state.seek_offset == -1:
                    pq.put_messages(result.msg_found_list)
                    self._submit(ConsumeRequest(self._reset_topic(result.msg_found_list), mq, pq))
                if state.seek_offset == -1 and self.assigned.get(mq) is state and state.pq is pq:
                    state.pull_offset = result.next_begin_offset
            if not task.cancelled:
                self._schedule(task, delay)

        future.add_done_callback(answered)

    def _submit(self, request: ConsumeRequest) -> None:
        while self._poll_waiters:
            waiter = self._poll_waiters.popleft()
            if not waiter.done():
                waiter.set_result(request)
                return
        self.cache.append(request)

    # ------------------------------------------------------------------------------------------------ user API
    def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """The next batch of messages, waiting up to ``timeout_ms`` (default ``poll_timeout_ms``); [] if none."""
        timeout = self.config.poll_timeout_ms if timeout_ms is None else timeout_ms
        if timeout < 0:
            raise ValueError("Timeout must not be negative")

        def begin() -> Future[ConsumeRequest | None]:
            self._check_running()
            if self.config.auto_commit:
                self._maybe_auto_commit()
            future: Future[ConsumeRequest | None] = Future()
            while self.cache:
                request = self.cache.popleft()
                if not request.pq.dropped:
                    future.set_result(request)
                    return future
            self._poll_waiters.append(future)
            return future

        future = self.runtime.submit(begin)
        try:
            request = self._wait(future, timeout)
        except RuntimeTimeout:
            def cancel() -> ConsumeRequest | None:
                if future.done():
                    return future.result()
                if future in self._poll_waiters:
                    self._poll_waiters.remove(future)
                future.set_result(None)
                return None

            request = self.runtime.submit(cancel)
        if request is None:
            return []
        return self.runtime.submit(lambda: self._take(request))

    def _reset_topic(self, msgs: list[MessageExt]) -> list[MessageExt]:
        """``resetTopic``: with a namespace the user sees each message's topic outside it."""
        cfg = self.instance.config
        if cfg.namespace is None:
            return msgs
        return [attrs.evolve(m, topic=cfg.without_namespace(m.topic)) for m in msgs]

    def _take(self, request: ConsumeRequest) -> list[MessageExt]:
        if request.pq.dropped:
            return []
        offset = request.pq.remove_messages(request.msgs)
        state = self.assigned.get(request.mq)
        if state is not None:
            state.consume_offset = offset
        for msg in request.msgs:
            self.events.emit(ConsumeDeliver(
                node=self.instance.client_id, group=self.group, topic=request.mq.topic,
                broker=request.mq.broker_name, queue_id=request.mq.queue_id, offset=msg.queue_offset,
                msg_id=msg.msg_id, reconsume_times=msg.reconsume_times))
        return list(request.msgs)

    def _maybe_auto_commit(self) -> None:
        now = self.runtime.now_ms()
        if now >= self._next_auto_commit_deadline:
            self._commit_all()
            self._next_auto_commit_deadline = now + self.config.auto_commit_interval_ms

    def _commit_all(self) -> None:
        for mq in list(self.assigned):
            self._commit_queue(mq)

    def _commit_queue(self, mq: MessageQueue) -> None:
        state = self.assigned.get(mq)
        if state is None or state.consume_offset == -1 or state.pq.dropped:
            return
        self.offset_store.update_offset(mq, state.consume_offset, False)

    def commit(self, offsets: dict[MessageQueue, int] | None = None, *, persist: bool = True) -> None:
        """commitSync: the consume offsets of polled messages (or ``offsets``) into the store; ``persist`` sends them
        to the brokers now (else the 5 s persistence does)."""
        def run() -> None:
            self._check_running()
            if offsets is None:
                self._commit_all()
                queues = set(self.assigned)
            else:
                for mq, offset in offsets.items():
                    state = self.assigned.get(mq)
                    if offset != -1 and state is not None and not state.pq.dropped:
                        self.offset_store.update_offset(mq, offset, False)
                queues = set(offsets)
            if persist:
                self.offset_store.persist_all(queues)

        self.runtime.submit(run)

    def committed(self, mq: MessageQueue) -> int:
        """The committed offset (memory first, then the store); -1 when there is none."""
        mq = self._ns_queue(mq)
        def begin() -> Future[int]:
            self._check_running()
            return self.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)

        offset = self._wait(self.runtime.submit(begin))
        if offset == -2:
            raise MQClientError("Fetch consume offset from broker exception")
        return int(offset)

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Restart ``mq`` from ``offset`` (between the queue's min and max offsets)."""
        mq = self._ns_queue(mq)
        def check() -> Future[int]:
            self._check_running()
            if mq not in self.assigned:
                kind = ", may be rebalancing" if self.subscription_type is SubscriptionType.SUBSCRIBE else ""
                raise MQClientError(f"The message queue is not in assigned list{kind}, message queue: {mq}")
            return self.admin.min_offset(mq)

        min_offset = self._wait(self.runtime.submit(check))
        max_offset = self._wait(self.runtime.submit(lambda: self.admin.max_offset(mq)))
        if offset < min_offset or offset > max_offset:
            raise MQClientError(f"Seek offset illegal, seek offset = {offset}, min offset = {min_offset}, "
                                f"max offset = {max_offset}")

        def apply() -> None:
            state = self.assigned.get(mq)
            if state is None:
                raise MQClientError(f"The message queue is not in assigned list, message queue: {mq}")
            state.pq.clear()
            self.cache = deque(r for r in self.cache if r.mq != mq)
            old = self.task_table.pop(mq, None)
            if old is not None:
                old.cancelled = True
            state.seek_offset = offset
            task = PullTask(mq)
            self.task_table[mq] = task
            self._schedule(task, 0)

        self.runtime.submit(apply)

    def seek_to_begin(self, mq: MessageQueue) -> None:
        mq = self._ns_queue(mq)
        self.seek(mq, self._wait(self.runtime.submit(lambda: self._admin_checked(self.admin.min_offset, mq))))

    def seek_to_end(self, mq: MessageQueue) -> None:
        mq = self._ns_queue(mq)
        self.seek(mq, self._wait(self.runtime.submit(lambda: self._admin_checked(self.admin.max_offset, mq))))

    def _admin_checked(self, fn: Callable[[MessageQueue], Future[int]], mq: MessageQueue) -> Future[int]:
        self._check_running()
        return fn(mq)

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """``fetchSubscribeMessageQueues``: the topic's readable queues from the name server."""
        def begin() -> Future[Any]:
            self._check_running()
            return self.instance.update_topic_route(topic)

        route = self._wait(self.runtime.submit(begin))
        if route is None:
            raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
        queues = subscribe_queues(route, topic)
        if not queues:
            raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
        return set(queues)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        queues = [self._ns_queue(mq) for mq in queues]

        def run() -> None:
            for mq in queues:
                if mq in self.assigned:
                    self.assigned[mq].paused = True

        self.runtime.submit(run)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        queues = [self._ns_queue(mq) for mq in queues]

        def run() -> None:
            for mq in queues:
                if mq in self.assigned:
                    self.assigned[mq].paused = False

        self.runtime.submit(run)

    def assignment(self) -> set[MessageQueue]:
        """The queues assigned now (subscribed: the rebalance result)."""
        return self.runtime.submit(lambda: set(self.assigned))

    def offsets(self) -> dict[MessageQueue, int]:
        """The offset store's in-memory offsets."""
        return self.runtime.submit(lambda: dict(self.offset_store.clone_offset_table()) if self.offset_store else {})
