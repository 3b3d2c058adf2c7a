"""The push consumer (``DefaultMQPushConsumerImpl`` of 4.9.8): rebalance, pull loop, consume services, offsets.

``start`` registers the consumer with its client instance, adds ``%RETRY%<group>`` to the subscriptions in clustering
mode (``copySubscription``), fetches the routes of the subscribed topics, heartbeats and rebalances. Each owned queue
has a pull request the pull loop (``pullMessage``) drives:

- flow control: more than ``pull_threshold_for_queue`` cached messages, ``pull_threshold_size_for_queue_mib`` MiB,
  or (concurrent) an offset span over ``consume_concurrently_max_span`` → pull again after 50 ms;
- orderly: pull only while the queue is locked; the first pull after locking re-reads the start offset;
- the PULL_MESSAGE carries the commit bit with the in-memory offset (clustering, offset > 0), the suspend bit (long
  polling, ``broker_suspend_max_time_ms``) and, with ``post_subscription_when_pull``, the subscription;
- FOUND → cache the messages, hand them to the consume service, pull again (after ``pull_interval_ms``);
  NO_NEW_MSG / NO_MATCHED_MSG → next offset, committed if nothing is cached (``correctTagsOffset``), pull again;
  OFFSET_ILLEGAL → drop the queue; 10 s later commit the broker's next offset (not increase-only), persist it and
  remove the queue, which the next rebalance adds back; errors → pull again after 3 s (FLOW_CONTROL: 20 ms).

Failed concurrent messages go back with CONSUMER_SEND_MSG_BACK to their broker's master, or, if that fails, with a
send of the client's own producer to ``%RETRY%<group>`` (``sendMessageBack``). ``shutdown`` persists the offsets,
releases orderly locks and unregisters (UNREGISTER_CLIENT).

Simulation: long-polling waits and retry back-offs are daemon timers; ``idle_pending`` tells the runtime while work
remains: cached or in-flight messages, consume tasks, an owned queue whose last known max offset is past its
consumed offset (unless its pulls fail), an offset not yet persisted (simulated clock only: on the real clock
waiting up to 10 s for the first persistence would make every idle wait slow), or a queue waiting for the
rebalance to add it back. One deviation
from Java: a route change of a subscribed topic after start triggers a rebalance at once (Java waits for the next
20 s tick), so a group's retry topic, created by the broker on the first heartbeat, is owned without that wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.client.allocate import make_strategy
from rocketspec.refimpl.client.consume_service import (
    ConsumeMessageConcurrentlyService,
    ConsumeMessageOrderlyService,
)
from rocketspec.refimpl.client.consumer_config import (
    ConsumerConfig,
    MessageSelector,
    SubscriptionData,
    build_selector_subscription,
    build_subscription,
    check_client_in_broker,
)
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.client.offset_store import LocalFileOffsetStore, RemoteBrokerOffsetStore
from rocketspec.refimpl.client.pull_api import (
    MQAdmin,
    PullAPIWrapper,
    PullResult,
    build_sys_flag,
    first_answer_grace_ms,
)
from rocketspec.refimpl.client.rebalance import PullRequest, RebalancePushImpl
from rocketspec.refimpl.events import ClientLifecycle, ConsumeDeliver, ConsumeResult, SendBack
from rocketspec.refimpl.message import Message, MessageExt
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import Future, Timer, when_all
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    CONSUME_TIMESTAMP_DEFAULT_LAG_MS,
    MASTER_ID,
    OFFSET_ILLEGAL_REMOVE_DELAY_MS,
    PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL,
    PULL_TIME_DELAY_MS_WHEN_EXCEPTION,
    PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL,
    CommunicationMode,
    ConsumeType,
    MessageModel,
    Property,
    PullStatus,
    RequestCode,
    ResponseCode,
    dlq_topic,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

PULL_TIME_DELAY_MS_WHEN_SUSPEND = 1_000
SEND_BACK_TIMEOUT_MS = 5_000


class PushConsumer:
    """A push consumer of ``config.group`` on a client instance; ``listener(msgs)`` or ``listener(msgs, context)``
    returns a ``ConsumeStatus`` (orderly: a ``ConsumeOrderlyStatus``)."""

    role = "push_consumer"

    def __init__(self, instance: Any, config: ConsumerConfig, listener: Any) -> None:
        if listener is None:
            raise ValueError("messageListener is null")
        self.instance = instance
        self.config = config
        self.listener = listener
        self.group = config.group
        self.runtime = instance.runtime
        self.events = instance.events
        self.running = False
        self.shut_down = False
        self.pause = False
        self._start_done = False
        # The MQClientException a Java start throws when CHECK_CLIENT_CONFIG refuses a subscription (FILTER-25).
        self.check_error: MQClientError | None = None
        self._needs_rebalance = False
        self._rebalance_wanted = 0
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._known_max: dict[MessageQueue, int] = {}
        self._pull_failing: set[MessageQueue] = set()
        self._pull_requests: dict[MessageQueue, PullRequest] = {}
        self._timers: list[Timer] = []
        self._pending_tasks = 0
        self.strategy: Any = None
        self.offset_store: Any = None
        self.rebalance: RebalancePushImpl = None  # type: ignore[assignment]
        self.pull_api: PullAPIWrapper = None  # type: ignore[assignment]
        self.admin = MQAdmin(instance)
        self.consume_service: Any = None

    # ------------------------------------------------------------------------------------------------ properties
    @property
    def message_model(self) -> MessageModel:
        return self.config.message_model

    @property
    def orderly(self) -> bool:
        return self.config.orderly

    @property
    def _exception_delay(self) -> int:
        delay = self.config.pull_time_delay_ms_when_exception
        return PULL_TIME_DELAY_MS_WHEN_EXCEPTION if delay is None else delay

    def alive(self) -> bool:
        """Running, and the client instance neither shut down nor crashed."""
        return self.running and not self.instance.stopped

    # ------------------------------------------------------------------------------------------------ user API
    def subscribe(self, topic: str, expression: str | MessageSelector | None = "*") -> None:
        """Subscribe to ``topic`` with a tag expression (``"*"``, ``"A || B"``) or a ``MessageSelector``
        (``MessageSelector.by_sql``: an SQL92 expression; ``FilterAPI.build``); a namespace wraps the topic."""
        topic = self.instance.config.with_namespace(topic)

        def run() -> None:
            if isinstance(expression, MessageSelector):
                sub = build_selector_subscription(topic, expression, self.runtime.now_ms())
            else:
                sub = build_subscription(topic, expression, self.runtime.now_ms())
            self._subscriptions[topic] = sub
            if self.rebalance is not None:
                self.rebalance.subscription_inner[topic] = sub
                if self.alive():
                    self.instance.send_heartbeat_to_all_brokers()

        self.runtime.submit(run)

    def unsubscribe(self, topic: str) -> None:
        topic = self.instance.config.with_namespace(topic)

        def run() -> None:
            self._subscriptions.pop(topic, None)
            if self.rebalance is not None:
                self.rebalance.subscription_inner.pop(topic, None)

        self.runtime.submit(run)

    def start(self) -> None:
        self.runtime.submit(self._start)

    def shutdown(self) -> None:
        self.runtime.submit(self._shutdown)

    def suspend(self) -> None:
        """Pause pulling (``suspend``)."""
        def run() -> None:
            self.pause = True

        self.runtime.submit(run)

    def resume(self) -> None:
        """Resume pulling and rebalance (``resume``)."""
        def run() -> None:
            self.pause = False
            self.do_rebalance()

        self.runtime.submit(run)

    def assignment(self) -> dict[str, set[MessageQueue]]:
        """The queues this consumer owns now (its process-queue table), by topic."""
        def collect() -> dict[str, set[MessageQueue]]:
            out: dict[str, set[MessageQueue]] = {}
            if self.rebalance is not None:
                for mq in self.rebalance.process_queue_table:
                    out.setdefault(mq.topic, set()).add(mq)
            return out

        return self.runtime.submit(collect)

    def offsets(self) -> dict[MessageQueue, int]:
        """The in-memory consume offsets."""
        return self.runtime.submit(lambda: dict(self.offset_store.clone_offset_table()) if self.offset_store else {})

    def update_consume_offset(self, mq: MessageQueue, offset: int) -> None:
        self.runtime.submit(lambda: self.offset_store.update_offset(mq, offset, False))

    # ------------------------------------------------------------------------------------------------ lifecycle
    def _start(self) -> None:
        if self.running or self.shut_down:
            raise MQClientError("The PushConsumer service state not OK, maybe started once")
        # DefaultMQPushConsumer.start: the group goes into the namespace (and is checked so); its retry topic too.
        self.config.group = self.group = self.instance.config.with_namespace(self.config.group)
        self.config.validate()
        if not self._subscriptions:
            raise MQClientError("subscription is null: subscribe to a topic before start")
        self.strategy = make_strategy(self.config.allocate_strategy, self.config.allocate_config)
        if self.config.message_model is MessageModel.BROADCASTING:
            self.offset_store = LocalFileOffsetStore(self.instance, self.group, self.config.offset_store_dir)
        else:
            self.offset_store = RemoteBrokerOffsetStore(self.instance, self.group)
        self.pull_api = PullAPIWrapper(self.instance, self.group, self.config.unit_mode)
        self.rebalance = RebalancePushImpl(self, self.instance, self.config, self.strategy, self.offset_store,
                                           self.admin)
        self.rebalance.consume_timestamp_ms = (
            self.config.consume_timestamp_ms if self.config.consume_timestamp_ms is not None
            else self.runtime.now_ms() - CONSUME_TIMESTAMP_DEFAULT_LAG_MS)
        # copySubscription: the user's topics, plus the group's retry topic in clustering mode.
        self.rebalance.subscription_inner.update(self._subscriptions)
        if self.config.message_model is MessageModel.CLUSTERING:
            topic = retry_topic(self.group)
            self.rebalance.subscription_inner[topic] = build_subscription(topic, "*", self.runtime.now_ms())
        self.offset_store.load()
        if self.config.orderly:
            self.consume_service = ConsumeMessageOrderlyService(self, self.listener)
        else:
            self.consume_service = ConsumeMessageConcurrentlyService(self, self.listener)
        try:
            self.instance.register_consumer(self.group, self)
        except ValueError as error:
            raise MQClientError(str(error)) from None
        self.consume_service.start()
        self.instance.start()
        self.running = True
        self.runtime.add_idle_probe(self.idle_pending)
        self.events.emit(ClientLifecycle(node=self.instance.client_id, group=self.group, role=self.role,
                                         action="start"))
        # updateTopicSubscribeInfoWhenSubscriptionChanged, heartbeat, then rebalanceImmediately.
        routes = [self.instance.update_topic_route(topic) for topic in sorted(self.rebalance.subscription_inner)]

        def routed() -> None:
            if not self.alive():
                return
            check_client_in_broker(self.instance, self.group, [self.rebalance.subscription_inner[t] for t in sorted(
                self.rebalance.subscription_inner)], self.instance.config.mq_client_api_timeout_ms
            ).add_done_callback(checked)

        def checked(f: Future[MQClientError | None]) -> None:
            # checkClientInBroker: a failure is what Java's start throws (kept as check_error); the heartbeat and
            # rebalance of the start are skipped, the periodic ones run on.
            self.check_error = f.result()
            if self.check_error is None and self.alive():
                self.instance.send_heartbeat_to_all_brokers().add_done_callback(lambda _f: self._started())

        when_all(routes, routed)

    def _started(self) -> None:
        if not self.alive():
            return
        self._start_done = True
        self.instance.rebalance_immediately()

    def _shutdown(self) -> None:
        """Clean shutdown: stop consuming, persist offsets, unregister, drop every queue."""
        if not self.running:
            self.shut_down = True
            return
        self.consume_service.shutdown()
        self.persist_offsets()
        self.instance.unregister_consumer(self.group)
        self.running = False
        self.shut_down = True
        for timer in self._timers:
            timer.cancel()
        self._timers = []
        self.rebalance.destroy()
        self.runtime.remove_idle_probe(self.idle_pending)
        self.events.emit(ClientLifecycle(node=self.instance.client_id, group=self.group, role=self.role,
                                         action="shutdown"))
        # MQClientInstance.shutdown does nothing while other consumers or producers still use the instance.
        others = [g for g in self.instance.producers if g != CLIENT_INNER_PRODUCER_GROUP]
        if not self.instance.consumers and not others:
            self.instance.shutdown()

    # ------------------------------------------------------------------------------------------------ instance hooks
    def heartbeat_data(self) -> dict[str, Any]:
        """ConsumerData of the heartbeat."""
        subs = self.rebalance.subscription_inner if self.rebalance is not None else self._subscriptions
        return {
            "groupName": self.group,
            "consumeType": ConsumeType.CONSUME_PASSIVELY.value,
            "messageModel": self.config.message_model.value,
            "consumeFromWhere": self.config.consume_from_where.value,
            "subscriptionDataSet": [subs[t].to_json() for t in sorted(subs)],
            "unitMode": self.config.unit_mode,
        }

    def subscribed_topics(self) -> set[str]:
        if self.rebalance is not None:
            return set(self.rebalance.subscription_inner)
        return set(self._subscriptions)

    def on_route(self, topic: str, queues: set[MessageQueue]) -> None:
        """``updateTopicSubscribeInfo``: the queues a subscribed topic can be read from."""
        if self.rebalance is None or topic not in self.rebalance.subscription_inner:
            return
        old = self.rebalance.topic_subscribe_info.get(topic)
        self.rebalance.topic_subscribe_info[topic] = set(queues)
        if self._start_done and old != set(queues) and self.alive():
            self.instance.rebalance_immediately()

    def do_rebalance(self) -> None:
        if self.alive() and not self.pause:
            self.rebalance.do_rebalance(self.config.orderly)

    def rebalance_finished(self, generation: int) -> None:
        if self._needs_rebalance and generation >= self._rebalance_wanted:
            self._needs_rebalance = False

    def persist_offsets(self) -> None:
        """``persistConsumerOffset``: the offsets of the owned queues."""
        if self.running and self.offset_store is not None and not self.instance.stopped:
            self.offset_store.persist_all(set(self.rebalance.process_queue_table))

    # ------------------------------------------------------------------------------------------------ idle probe
    def idle_pending(self) -> bool:
        """True while this consumer still has work the daemon timers will finish (see the module docstring)."""
        if not self.alive():
            return False
        if self._needs_rebalance or self._pending_tasks > 0:
            return True
        if self.consume_service is not None and self.consume_service.busy():
            return True
        for mq, pq in self.rebalance.process_queue_table.items():
            if pq.dropped:
                continue
            if pq.msg_count > 0 or pq.consuming_orderly:
                return True
            if self.runtime.simulated and self.offset_store.dirty([mq]):
                return True  # the periodic persistence still owes the broker this offset (simulated clock only)
            # A paused consumer, or a queue whose pulls fail (broker gone), is blocked, not pending.
            if self.pause or mq in self._pull_failing:
                continue
            known = self._known_max.get(mq)
            if known is None:
                # No pull answered yet: pending until the first pull reached the broker (if it is held there, the
                # queue had nothing to give).
                sent = self.pull_api.last_pull_sent_ms.get(mq)
                if sent is None or self.runtime.now_ms() <= sent + first_answer_grace_ms(self.instance):
                    return True
                continue
            consumed = self.offset_store.memory_offset(mq)
            if consumed < 0:
                request = self._pull_requests.get(mq)
                consumed = request.next_offset if request is not None else known
            if known > consumed:
                return True
        return False

    # ------------------------------------------------------------------------------------------------ pull loop
    def execute_pull_request_immediately(self, request: PullRequest) -> None:
        self._pull_requests[request.mq] = request
        self._task_later(0, lambda: self.pull_message(request), daemon=False)

    def execute_pull_request_later(self, request: PullRequest, delay_ms: int) -> None:
        # Back-offs are daemon: the idle probe says whether messages are still owed.
        self._task_later(delay_ms, lambda: self.pull_message(request), daemon=True)

    def _task_later(self, delay_ms: int, fn: Callable[[], None], *, daemon: bool) -> None:
        if not daemon:
            self._pending_tasks += 1

        def run() -> None:
            if not daemon:
                self._pending_tasks -= 1
            if timer in self._timers:
                self._timers.remove(timer)
            if self.alive():
                fn()

        timer = self.runtime.call_later(delay_ms, run, daemon=True)
        self._timers.append(timer)

    def pull_message(self, request: PullRequest) -> None:
        """``pullMessage``: checks, flow control, then one PULL_MESSAGE."""
        pq = request.pq
        if pq.dropped:
            return
        pq.last_pull_timestamp = self.runtime.now_ms()
        if not self.alive():
            return
        if self.pause:
            self.execute_pull_request_later(request, PULL_TIME_DELAY_MS_WHEN_SUSPEND)
            return
        cfg = self.config
        if pq.msg_count > cfg.pull_threshold_for_queue:
            self.execute_pull_request_later(request, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
            return
        if pq.msg_size // (1024 * 1024) > cfg.pull_threshold_size_for_queue_mib:
            self.execute_pull_request_later(request, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
            return
        if not cfg.orderly:
            if pq.max_span() > cfg.consume_concurrently_max_span:
                self.execute_pull_request_later(request, PULL_TIME_DELAY_MS_WHEN_FLOW_CONTROL)
                return
        elif pq.locked:
            if not request.previously_locked:
                # The first pull after the lock: start from the offset the broker has (another owner committed).
                def computed(f: Future[int]) -> None:
                    if f.exception() is not None:
                        self.execute_pull_request_later(request, self._exception_delay)
                        return
                    request.previously_locked = True
                    request.next_offset = f.result()
                    if self.alive() and not pq.dropped:
                        self._pull(request)

                self._pending_tasks += 1

                def counted(f: Future[int]) -> None:
                    self._pending_tasks -= 1
                    computed(f)

                self.rebalance.compute_pull_from_where(request.mq).add_done_callback(counted)
                return
        else:
            self.execute_pull_request_later(request, self._exception_delay)
            return
        self._pull(request)

    def _pull(self, request: PullRequest) -> None:
        mq = request.mq
        subscription = self.rebalance.subscription_inner.get(mq.topic)
        if subscription is None:
            self.execute_pull_request_later(request, self._exception_delay)
            return
        commit_offset = 0
        commit_enable = False
        if self.config.message_model is MessageModel.CLUSTERING:
            commit_offset = self.offset_store.memory_offset(mq)
            commit_enable = commit_offset > 0
        sub_expression = None
        if self.config.post_subscription_when_pull and not subscription.class_filter_mode:
            sub_expression = subscription.sub_string
        sys_flag = build_sys_flag(commit_enable, True, sub_expression is not None, subscription.class_filter_mode)
        offset = request.next_offset
        future = self.pull_api.pull_kernel(mq, sub_expression, subscription.expression_type, subscription.sub_version,
                                           offset, self.config.pull_batch_size, sys_flag, commit_offset,
                                           self.config.broker_suspend_max_time_ms,
                                           self.config.consumer_timeout_ms_when_suspend)

        def answered(f: Future[PullResult]) -> None:
            if not self.alive():
                return
            error = f.exception()
            if error is not None:
                self._pull_failing.add(mq)
                if isinstance(error, MQBrokerError) and error.code == ResponseCode.FLOW_CONTROL:
                    self.execute_pull_request_later(request, PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL)
                else:
                    self.execute_pull_request_later(request, self._exception_delay)
                return
            try:
                result = self.pull_api.process_pull_result(mq, f.result(), subscription, offset)
            except ValueError:  # a body that does not decode is a failed pull
                self._pull_failing.add(mq)
                self.execute_pull_request_later(request, self._exception_delay)
                return
            self._pull_failing.discard(mq)
            self._on_pull_result(request, result)

        future.add_done_callback(answered)

    def _on_pull_result(self, request: PullRequest, result: PullResult) -> None:
        """The PullCallback outcomes."""
        mq, pq = request.mq, request.pq
        self._known_max[mq] = result.max_offset
        status = result.status
        if status is PullStatus.FOUND:
            request.next_offset = result.next_begin_offset
            if not result.msg_found_list:
                self.execute_pull_request_immediately(request)
                return
            dispatch = pq.put_messages(result.msg_found_list)
            self.consume_service.submit_consume_request(result.msg_found_list, pq, mq, dispatch)
            if self.config.pull_interval_ms > 0:
                self.execute_pull_request_later(request, self.config.pull_interval_ms)
            else:
                self.execute_pull_request_immediately(request)
        elif status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            request.next_offset = result.next_begin_offset
            if pq.msg_count == 0:  # correctTagsOffset
                self.offset_store.update_offset(mq, request.next_offset, True)
            self.execute_pull_request_immediately(request)
        elif status is PullStatus.OFFSET_ILLEGAL:
            request.next_offset = result.next_begin_offset
            pq.dropped = True

            def fix() -> None:
                self.offset_store.update_offset(mq, request.next_offset, False)
                self.offset_store.persist(mq)
                self.rebalance.remove_process_queue(mq)
                # The next rebalance adds the queue back, from the corrected offset.
                self._needs_rebalance = True
                self._rebalance_wanted = self.rebalance.generation + 1

            self._task_later(OFFSET_ILLEGAL_REMOVE_DELAY_MS, fix, daemon=False)

    # ------------------------------------------------------------------------------------------------ send back
    def send_message_back(self, msg: MessageExt, delay_level: int, mq: MessageQueue,
                          shared: dict[str, str] | None = None) -> Future[bool]:
        """``sendMessageBack``: CONSUMER_SEND_MSG_BACK to the master of the queue's broker; if it fails, send the
        message to ``%RETRY%<group>`` with the client's producer. True when one of them worked. ``shared``: the
        consumed message's property map, which the fallback's message takes as its own (``setProperties``): what the
        send sets stays in it."""
        result: Future[bool] = Future()
        # The message goes back under its topic in the namespace (ConsumeMessageConcurrentlyService.sendMessageBack).
        msg = attrs.evolve(msg, topic=self.instance.config.with_namespace(msg.topic))
        max_times = self.config.push_max_reconsume_times()
        addr = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
            "offset": msg.commit_log_offset,
            "group": self.group,
            "delayLevel": delay_level,
            "originMsgId": msg.msg_id,
            "originTopic": msg.topic,
            "unitMode": self.config.unit_mode,
            "maxReconsumeTimes": max_times,
            "bname": mq.broker_name,
        })

        def answered(f: Future[RemotingCommand]) -> None:
            if f.exception() is None and f.result().code == ResponseCode.SUCCESS:
                to_dlq = msg.reconsume_times >= max_times or delay_level < 0
                self._emit_send_back(msg, msg.reconsume_times + 1, delay_level,
                                     dlq_topic(self.group) if to_dlq else retry_topic(self.group), "broker",
                                     max_times)
                result.set_result(True)
                return
            self._client_send_back(msg, max_times, result, shared)

        self.instance.invoke(addr, request, SEND_BACK_TIMEOUT_MS).add_done_callback(answered)
        return result

    def _client_send_back(self, msg: MessageExt, max_times: int, result: Future[bool],
                          shared: dict[str, str] | None = None) -> None:
        """The fallback of ``sendMessageBack``: a new message to the retry topic, delay level 3 + reconsumeTimes."""
        # setProperties: the received message's properties (no ORIGIN_MESSAGE_ID), its own map when shared.
        props = shared if shared is not None else dict(msg.properties)
        props[Property.RETRY_TOPIC] = msg.topic
        props[Property.RECONSUME_TIME] = str(msg.reconsume_times + 1)
        props[Property.MAX_RECONSUME_TIMES] = str(max_times)
        props.pop(Property.TRANSACTION_PREPARED, None)
        delay = 3 + msg.reconsume_times
        props[Property.DELAY_TIME_LEVEL] = str(delay)
        new_msg = Message(retry_topic(self.group), msg.body, properties=props, flag=msg.flag)
        if shared is not None:
            new_msg.properties = props  # the producer's first attempt moves RECONSUME_TIME / MAX into the header
        target = dlq_topic(self.group) if msg.reconsume_times + 1 >= max_times else retry_topic(self.group)

        def sent(ok: bool) -> None:
            if ok:
                self._emit_send_back(msg, msg.reconsume_times + 1, delay, target, "client", max_times)
            else:
                self._emit_send_back(msg, msg.reconsume_times + 1, 0, msg.topic, "local", max_times)
            result.set_result(ok)

        self.send_with_client_producer(new_msg, sent)

    def send_orderly_message_back(self, msg: MessageExt, max_times: int,
                                  shared: dict[str, str] | None = None) -> Future[bool]:
        """``ConsumeMessageOrderlyService.sendMessageBack``: past the reconsume limit, send the message to the retry
        topic with RECONSUME_TIME = its count, which the broker puts into the dead-letter queue. ``shared``: the
        consumed message's property map, which the new message takes as its own (``setProperties``)."""
        result: Future[bool] = Future()
        props = shared if shared is not None else dict(msg.properties)
        if not props.get(Property.ORIGIN_MESSAGE_ID):
            props[Property.ORIGIN_MESSAGE_ID] = msg.msg_id
        props[Property.RETRY_TOPIC] = msg.topic
        props[Property.RECONSUME_TIME] = str(msg.reconsume_times)
        props[Property.MAX_RECONSUME_TIMES] = str(max_times)
        props.pop(Property.TRANSACTION_PREPARED, None)
        delay = 3 + msg.reconsume_times
        props[Property.DELAY_TIME_LEVEL] = str(delay)
        new_msg = Message(retry_topic(self.group), msg.body, properties=props, flag=msg.flag)
        if shared is not None:
            new_msg.properties = props
        target = dlq_topic(self.group) if msg.reconsume_times >= max_times else retry_topic(self.group)

        def sent(ok: bool) -> None:
            if ok:
                self._emit_send_back(msg, msg.reconsume_times, delay, target, "client", max_times)
            result.set_result(ok)

        self.send_with_client_producer(new_msg, sent)
        return result

    def send_with_client_producer(self, msg: Message, done: Callable[[bool], None]) -> None:
        """Send with the instance's own producer (``CLIENT_INNER_PRODUCER``), SYNC semantics, reporting success."""
        self._pending_tasks += 1

        def finished(ok: bool) -> None:
            self._pending_tasks -= 1
            done(ok)

        try:
            # DefaultMQProducer.send(msg): a SYNC send (with its retries) on the loop.
            future = self.instance.inner_producer()._send(msg, CommunicationMode.SYNC, None, None, None, None, None)
        except Exception:  # the send could not even start: it failed
            self.runtime.call_soon(lambda: finished(False))
            return
        future.add_done_callback(lambda f: finished(f.exception() is None))

    # ------------------------------------------------------------------------------------------------ events
    def emit_deliver(self, mq: MessageQueue, msgs: list[MessageExt]) -> None:
        for msg in msgs:
            self.events.emit(ConsumeDeliver(
                node=self.instance.client_id, group=self.group, topic=mq.topic, broker=mq.broker_name,
                queue_id=mq.queue_id, offset=msg.queue_offset, msg_id=msg.msg_id,
                reconsume_times=msg.reconsume_times))

    def emit_result(self, mq: MessageQueue, msg: MessageExt, status: str) -> None:
        self.events.emit(ConsumeResult(
            node=self.instance.client_id, group=self.group, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=msg.queue_offset, msg_id=msg.msg_id, status=status))

    def _emit_send_back(self, msg: MessageExt, reconsume_times: int, delay_level: int, target: str, via: str,
                        max_reconsume_times: int) -> None:
        """``reconsume_times``: the count the message carries when it comes back (as the broker reports it)."""
        self.events.emit(SendBack(
            node=self.instance.client_id, group=self.group, topic=msg.topic, msg_id=msg.msg_id,
            reconsume_times=reconsume_times, delay_level=delay_level, target=target, via=via,
            max_reconsume_times=max_reconsume_times))
