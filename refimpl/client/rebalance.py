"""Rebalance: which queues a consumer owns, and the process-queue table that follows (``RebalanceImpl``).

``do_rebalance`` runs ``rebalanceByTopic`` for every subscribed topic, one at a time (Java's single RebalanceService
thread; a rebalance asked for while one runs is run again after it), then drops queues of topics no longer
subscribed (``truncateMessageQueueNotMyTopic``):

- broadcasting takes every queue of the cached route; clustering allocates from the sorted queues and the sorted
  consumer ids a broker gives (``allocate.py``);
- ``updateProcessQueueTableInRebalance``: queues no longer assigned are dropped and removed (their offsets persisted
  first); push consumers also drop queues not pulled for 120 s; then each newly assigned queue (orderly: after the
  broker lock) gets its stale in-memory offset cleared, a start offset from ``computePullFromWhere`` and, if that is
  >= 0, a ProcessQueue (created locked, 4.9.5+) and a pull request;
- ``messageQueueChanged``: the push consumer renews the subscription version and heartbeats; the lite pull consumer
  updates its assigned queues and pull tasks.

Orderly consumers hold broker locks (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ bodies of REFERENCE §A): ``lock`` one queue on
adding it, ``lock_all`` every 20 s, and on removal ``unlock`` once the ProcessQueue consume lock is free (waiting up
to 1 s), 20 s later when messages are still cached (``RebalancePushImpl.unlockDelay``).

The broker calls of Java's synchronous code are futures here; every step re-checks that the consumer still runs.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from rocketspec.refimpl.client.allocate import sort_consumer_ids, sort_queues, strategy_name
from rocketspec.refimpl.client.consumer_config import ConsumerConfig, SubscriptionData
from rocketspec.refimpl.client.process_queue import ProcessQueue
from rocketspec.refimpl.client.pull_api import MQAdmin
from rocketspec.refimpl.events import RebalanceAssign
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.protocol import (
    MASTER_ID,
    UNLOCK_DELAY_MS_WHEN_CACHED,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    ReadOffsetType,
    RequestCode,
    ResponseCode,
    is_retry_topic,
)
from rocketspec.spec.queues import MessageQueue

LOCK_TIMEOUT_MS = 1_000
CONSUME_LOCK_WAIT_MS = 1_000


@attrs.define(eq=False)
class PullRequest:
    """A queue's pull cursor (``PullRequest``)."""

    group: str
    mq: MessageQueue
    pq: ProcessQueue
    next_offset: int
    previously_locked: bool = False


def queue_label(mq: MessageQueue) -> str:
    return f"{mq.broker_name}:{mq.queue_id}"


def mq_to_json(mq: MessageQueue) -> dict[str, Any]:
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def mq_from_json(data: dict[str, Any]) -> MessageQueue:
    return MessageQueue(str(data["topic"]), str(data["brokerName"]), int(data["queueId"]))


def lock_body(group: str, client_id: str, mqs: Iterable[MessageQueue]) -> bytes:
    """``LockBatchRequestBody`` / ``UnlockBatchRequestBody`` JSON (fastjson field order)."""
    body = {"clientId": client_id, "consumerGroup": group, "mqSet": [mq_to_json(mq) for mq in sort_queues(mqs)]}
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def parse_lock_answer(body: bytes | None) -> set[MessageQueue]:
    """``LockBatchResponseBody.lockOKMQSet``."""
    if not body:
        return set()
    data = json.loads(body.decode("utf-8"))
    return {mq_from_json(item) for item in data.get("lockOKMQSet") or ()}


def run_in_order(items: list[Any], step: Callable[[Any], Future[Any]], done: Callable[[], None],
                 alive: Callable[[], bool]) -> None:
    """Run ``step(item)`` for each item, the next one when the previous future completes; then ``done``."""
    index = 0

    def next_item(_f: Future[Any] | None = None) -> None:
        nonlocal index
        while index < len(items):
            if not alive():
                return
            item = items[index]
            index += 1
            future = step(item)
            if not future.done():
                future.add_done_callback(next_item)
                return
        done()

    next_item()


def _resolved(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


class RebalanceImpl(abc.ABC):
    """``RebalanceImpl``: the shared part of the push and lite pull rebalances."""

    consume_type = ConsumeType.CONSUME_PASSIVELY
    read_type = ReadOffsetType.READ_FROM_STORE

    def __init__(self, consumer: Any, instance: Any, config: ConsumerConfig, strategy: Any, offset_store: Any,
                 admin: MQAdmin) -> None:
        self.consumer = consumer
        self.instance = instance
        self.config = config
        self.group = config.group
        self.message_model = config.message_model
        self.strategy = strategy
        self.offset_store = offset_store
        self.admin = admin
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        self.topic_subscribe_info: dict[str, set[MessageQueue]] = {}
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.consume_timestamp_ms = 0
        self._running = False
        self._again = False
        self._again_order = False
        self.generation = 0  # rebalance runs started so far

    # ---------------------------------------------------------------------------------------------------- helpers
    def alive(self) -> bool:
        return bool(self.consumer.alive())

    def _clock(self) -> int:
        return int(self.instance.runtime.now_ms())

    # ---------------------------------------------------------------------------------------------------- rebalance
    def do_rebalance(self, is_order: bool) -> None:
        """``doRebalance``: every subscribed topic in turn, then truncate queues of unsubscribed topics."""
        if self._running:
            self._again = True
            self._again_order = is_order
            return
        self._running = True
        self.generation += 1
        generation = self.generation

        def finished() -> None:
            self.truncate_message_queue_not_my_topic()
            self._running = False
            self.consumer.rebalance_finished(generation)
            if self._again and self.alive():
                self._again = False
                self.do_rebalance(self._again_order)

        def guarded_alive() -> bool:
            if self.alive():
                return True
            self._running = False
            return False

        run_in_order(sorted(self.subscription_inner), lambda topic: self.rebalance_by_topic(topic, is_order),
                     finished, guarded_alive)

    def rebalance_by_topic(self, topic: str, is_order: bool) -> Future[None]:
        """``rebalanceByTopic``: the queue set this consumer should own, then the table update."""
        done: Future[None] = Future()
        mq_set = self.topic_subscribe_info.get(topic)
        if self.message_model is MessageModel.BROADCASTING:
            if mq_set is None:
                done.set_result(None)
                return done
            self._emit_assign(topic, "BROADCASTING", (self.instance.client_id,), mq_set, mq_set)
            self._apply(topic, set(mq_set), set(mq_set), is_order, done)
            return done

        def with_ids(f: Future[list[str] | None]) -> None:
            cid_all = f.result() if f.exception() is None else None
            if not self.alive() or mq_set is None or cid_all is None:
                done.set_result(None)
                return
            mq_all = sort_queues(mq_set)
            ids = sort_consumer_ids(cid_all)
            try:
                allocated = self.strategy.allocate(self.group, self.instance.client_id, mq_all, ids)
            except Exception:  # AllocateMessageQueueStrategy.allocate Exception: nothing changes this round
                done.set_result(None)
                return
            result_set = set(allocated or ())
            self._emit_assign(topic, strategy_name(self.strategy), tuple(ids), result_set, mq_all)
            self._apply(topic, set(mq_set), result_set, is_order, done)

        # findConsumerIdList gives null when the list cannot be fetched: the topic is skipped (even by CONFIG, which
        # would allocate from an empty list).
        self.instance.find_consumer_id_list(topic, self.group).add_done_callback(with_ids)
        return done

    def _emit_assign(self, topic: str, strategy: str, consumers: tuple[str, ...], queues: Iterable[MessageQueue],
                     all_queues: Iterable[MessageQueue]) -> None:
        """``RebalanceAssign``: the queues taken, with the inputs of the allocation (queues, consumer ids) and the
        subscription expression, so a trace checker can recompute it (REB-1..REB-5)."""
        subscription = self.subscription_inner.get(topic)
        self.instance.events.emit(RebalanceAssign(
            node=self.instance.client_id, group=self.group, topic=topic, strategy=strategy, consumers=consumers,
            queues=tuple(queue_label(mq) for mq in sort_queues(queues)),
            all_queues=tuple(queue_label(mq) for mq in sort_queues(all_queues)),
            expression=subscription.sub_string if subscription is not None else None))

    def _apply(self, topic: str, mq_all: set[MessageQueue], divided: set[MessageQueue], is_order: bool,
               done: Future[None]) -> None:
        def updated(f: Future[bool]) -> None:
            changed = f.exception() is None and f.result()
            if changed and self.alive():
                self.message_queue_changed(topic, mq_all, divided)
            done.set_result(None)

        self.update_process_queue_table(topic, divided, is_order).add_done_callback(updated)

    def truncate_message_queue_not_my_topic(self) -> None:
        """Queues of topics no longer subscribed are dropped and removed (offsets not persisted)."""
        for mq in list(self.process_queue_table):
            if mq.topic not in self.subscription_inner:
                pq = self.process_queue_table.pop(mq)
                pq.dropped = True

    def update_process_queue_table(self, topic: str, mq_set: set[MessageQueue], is_order: bool) -> Future[bool]:
        """``updateProcessQueueTableInRebalance``; the future says whether the table changed."""
        result: Future[bool] = Future()
        changed = False
        pull_requests: list[PullRequest] = []

        def removal(item: tuple[MessageQueue, ProcessQueue]) -> Future[Any]:
            nonlocal changed
            mq, pq = item
            if self.process_queue_table.get(mq) is not pq:
                return _resolved(None)
            if mq not in mq_set:
                drop = True
            elif pq.is_pull_expired() and self.consume_type is ConsumeType.CONSUME_PASSIVELY:
                drop = True
            else:
                drop = False
            if not drop:
                return _resolved(None)
            pq.dropped = True
            step: Future[None] = Future()

            def removed(f: Future[bool]) -> None:
                nonlocal changed
                if f.exception() is None and f.result() and self.process_queue_table.get(mq) is pq:
                    del self.process_queue_table[mq]
                    changed = True
                step.set_result(None)

            self.remove_unnecessary_message_queue(mq, pq).add_done_callback(removed)
            return step

        def addition(mq: MessageQueue) -> Future[Any]:
            if mq in self.process_queue_table:
                return _resolved(None)
            step: Future[None] = Future()

            def locked(f: Future[bool]) -> None:
                if f.exception() is not None or not f.result() or not self.alive():
                    step.set_result(None)  # lock failed: try again next rebalance
                    return
                self.remove_dirty_offset(mq)
                pq = ProcessQueue(self._clock)
                pq.locked = True

                def computed(g: Future[int]) -> None:
                    nonlocal changed
                    if g.exception() is None and self.alive():
                        next_offset = g.result()
                        if next_offset >= 0 and mq not in self.process_queue_table:
                            self.process_queue_table[mq] = pq
                            pull_requests.append(PullRequest(self.group, mq, pq, next_offset))
                            changed = True
                    step.set_result(None)

                self.compute_pull_from_where(mq).add_done_callback(computed)

            (self.lock(mq) if is_order else _resolved(True)).add_done_callback(locked)
            return step

        existing = [(mq, pq) for mq, pq in sorted(self.process_queue_table.items()) if mq.topic == topic]

        def removals_done() -> None:
            def additions_done() -> None:
                self.dispatch_pull_requests(pull_requests)
                result.set_result(changed)

            run_in_order(sort_queues(mq_set), addition, additions_done, self._alive_or_fail(result))

        run_in_order(existing, removal, removals_done, self._alive_or_fail(result))
        return result

    def _alive_or_fail(self, result: Future[bool]) -> Callable[[], bool]:
        def check() -> bool:
            if self.alive():
                return True
            result.set_result(False)
            return False

        return check

    def remove_process_queue(self, mq: MessageQueue) -> None:
        """``removeProcessQueue``: drop a queue outside a rebalance (the OFFSET_ILLEGAL fix)."""
        pq = self.process_queue_table.pop(mq, None)
        if pq is not None:
            pq.dropped = True
            self.remove_unnecessary_message_queue(mq, pq)

    # ---------------------------------------------------------------------------------------------------- offsets
    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.offset_store.remove_offset(mq)

    def compute_pull_from_where(self, mq: MessageQueue) -> Future[int]:
        """``computePullFromWhereWithException``: the offset a newly assigned queue starts at (error: skip it)."""
        result: Future[int] = Future()
        where = self.config.consume_from_where

        def forward(f: Future[int]) -> None:
            if f.exception() is not None:
                result.set_exception(f.exception())  # type: ignore[arg-type]
            else:
                result.set_result(f.result())

        def with_last(f: Future[int]) -> None:
            last = f.result() if f.exception() is None else -2
            if last >= 0:
                result.set_result(last)
                return
            if last != -1:
                result.set_result(-1)  # the store could not be read: skip the queue this round
                return
            if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
                result.set_result(0)
            elif where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
                if is_retry_topic(mq.topic):
                    self.admin.max_offset(mq).add_done_callback(forward)
                else:
                    self.admin.search_offset(mq, self.consume_timestamp_ms).add_done_callback(forward)
            elif is_retry_topic(mq.topic):
                result.set_result(0)
            else:
                self.admin.max_offset(mq).add_done_callback(forward)

        self.offset_store.read_offset(mq, self.read_type).add_done_callback(with_last)
        return result

    # ---------------------------------------------------------------------------------------------------- locks
    def lock(self, mq: MessageQueue) -> Future[bool]:
        """LOCK_BATCH_MQ for one queue; locked table entries get their flag and timestamp renewed."""
        result: Future[bool] = Future()
        addr = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)
        if addr is None:
            result.set_result(False)
            return result
        request = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, None,
                                          lock_body(self.group, self.instance.client_id, [mq]))

        def answered(f: Future[RemotingCommand]) -> None:
            locked = self._lock_answer(f)
            if locked is None:
                result.set_result(False)
                return
            now = self._clock()
            for locked_mq in locked:
                pq = self.process_queue_table.get(locked_mq)
                if pq is not None:
                    pq.locked = True
                    pq.last_lock_timestamp = now
            result.set_result(mq in locked)

        self.instance.invoke(addr, request, LOCK_TIMEOUT_MS).add_done_callback(answered)
        return result

    @staticmethod
    def _lock_answer(f: Future[RemotingCommand]) -> set[MessageQueue] | None:
        if f.exception() is not None:
            return None
        response = f.result()
        if response.code != ResponseCode.SUCCESS:
            return None
        try:
            return parse_lock_answer(response.body)
        except (ValueError, KeyError, TypeError):
            return None

    def _table_by_broker(self) -> dict[str, set[MessageQueue]]:
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in self.process_queue_table:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        return by_broker

    def lock_all(self) -> None:
        """``lockAll`` (every 20 s): renew the locks of every table queue, broker by broker."""
        for broker, mqs in sorted(self._table_by_broker().items()):
            addr = self.instance.find_broker_addr(broker, MASTER_ID)
            if addr is None or not mqs:
                continue
            request = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, None,
                                              lock_body(self.group, self.instance.client_id, mqs))

            def answered(f: Future[RemotingCommand], mqs: set[MessageQueue] = mqs) -> None:
                locked = self._lock_answer(f)
                if locked is None:
                    return
                now = self._clock()
                for mq in locked:
                    pq = self.process_queue_table.get(mq)
                    if pq is not None:
                        pq.locked = True
                        pq.last_lock_timestamp = now
                for mq in mqs - locked:
                    pq = self.process_queue_table.get(mq)
                    if pq is not None:
                        pq.locked = False

            self.instance.invoke(addr, request, LOCK_TIMEOUT_MS, daemon=True).add_done_callback(answered)

    def unlock(self, mq: MessageQueue, oneway: bool) -> None:
        """UNLOCK_BATCH_MQ for one queue."""
        addr = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)
        if addr is None:
            return
        body = lock_body(self.group, self.instance.client_id, [mq])
        if oneway:
            self.instance.invoke_oneway(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body,
                                                                      oneway=True))
        else:
            self.instance.invoke(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body),
                                 LOCK_TIMEOUT_MS).add_done_callback(lambda _f: None)

    def unlock_all(self, oneway: bool) -> None:
        """``unlockAll`` (orderly shutdown): release every table queue's broker lock."""
        for broker, mqs in sorted(self._table_by_broker().items()):
            addr = self.instance.find_broker_addr(broker, MASTER_ID)
            if addr is None or not mqs:
                continue
            body = lock_body(self.group, self.instance.client_id, mqs)
            if oneway:
                self.instance.invoke_oneway(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body,
                                                                          oneway=True))
            else:
                self.instance.invoke(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body),
                                     LOCK_TIMEOUT_MS).add_done_callback(lambda _f: None)
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = False

    # ---------------------------------------------------------------------------------------------------- hooks
    @abc.abstractmethod
    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> Future[bool]:
        """Implemented by the push and lite-pull variants."""

    @abc.abstractmethod
    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        """Implemented by the push and lite-pull variants."""

    @abc.abstractmethod
    def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], divided: set[MessageQueue]) -> None:
        """Implemented by the push and lite-pull variants."""

    def destroy(self) -> None:
        """Every ProcessQueue dropped, the table cleared (shutdown)."""
        for pq in self.process_queue_table.values():
            pq.dropped = True
        self.process_queue_table.clear()


class RebalancePushImpl(RebalanceImpl):
    """``RebalancePushImpl``: pull requests go to the push consumer's pull loop."""

    consume_type = ConsumeType.CONSUME_PASSIVELY
    read_type = ReadOffsetType.READ_FROM_STORE

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> Future[bool]:
        """Persist and forget the offset; orderly clustering also releases the broker lock once the consume lock
        is free within 1 s (else the queue stays, dropped, until a later rebalance)."""
        self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        if not (self.config.orderly and self.message_model is MessageModel.CLUSTERING):
            return _resolved(True)
        result: Future[bool] = Future()
        if pq.try_consume_lock():
            try:
                result.set_result(self._unlock_delay(mq, pq))
            finally:
                pq.release_consume_lock()
            return result
        runtime = self.instance.runtime

        def released() -> None:
            timer.cancel()
            if result.done():
                return
            if pq.try_consume_lock():
                try:
                    result.set_result(self._unlock_delay(mq, pq))
                finally:
                    pq.release_consume_lock()
            else:
                pq.on_consume_lock_released(released)

        def gave_up() -> None:
            pq.forget_lock_waiter(released)
            pq.try_unlock_times += 1
            result.set_result(False)

        timer = runtime.call_later(CONSUME_LOCK_WAIT_MS, gave_up)
        pq.on_consume_lock_released(released)
        return result

    def _unlock_delay(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if pq.has_temp_message():
            # Messages are still cached: release the broker lock only later (a consume may still be running).
            self.instance.runtime.call_later(UNLOCK_DELAY_MS_WHEN_CACHED, lambda: self.unlock(mq, True))
        else:
            self.unlock(mq, True)
        return True

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        for request in requests:
            self.consumer.execute_pull_request_immediately(request)

    def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], divided: set[MessageQueue]) -> None:
        """A new subscription version, told to the brokers by a heartbeat."""
        sub = self.subscription_inner.get(topic)
        if sub is not None:
            sub.sub_version = self._clock()
        self.instance.send_heartbeat_to_all_brokers()


class RebalanceLitePullImpl(RebalanceImpl):
    """``RebalanceLitePullImpl``: the lite pull consumer's assigned queues and pull tasks follow the result."""

    consume_type = ConsumeType.CONSUME_ACTIVELY
    read_type = ReadOffsetType.MEMORY_FIRST_THEN_STORE

    def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> Future[bool]:
        self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return _resolved(True)

    def dispatch_pull_requests(self, requests: list[PullRequest]) -> None:
        """Lite pull: the pull tasks start from ``message_queue_changed``."""

    def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], divided: set[MessageQueue]) -> None:
        self.consumer.update_assign_queue_and_start_pull_task(topic, mq_all, divided)
