"""What the pull-correction lockstep machine reads off the reference implementation, in the order it happens.

A :class:`Recorder` watches one simulated ``Cluster`` and turns what the broker, its store and one consumer do into
:class:`Obs` records, one per decision, in execution order (the simulated runtime is single threaded, so the order
is the order things happened): a message stored, the broker's processing of a PULL_MESSAGE (first, or again after a
hold; with the store's result and the response, or held), an offset update reaching the broker, the group's
registration changing, the consumer sending a pull, receiving its answer, consuming a message, sending an offset
update, its rebalance adding queues, its lite pull tasks starting (a queue assigned, or a seek), the OFFSET_ILLEGAL
fix storing the correction and removing the queue. The hooks wrap instance attributes and only read; the machine
translates the records into spec actions.

It also reads the implementation's state for the machine's projection (:func:`store_view`, :func:`consumer_view`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl import Cluster
from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.events import (
    ConsumeDeliver,
    ConsumeResult,
    Event,
    MessageStored,
    PullRequestEvent,
    PullResponseEvent,
)
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.store import GetMessageResult, MessageStore
from rocketspec.spec.protocol import RequestCode
from rocketspec.spec.queues import MessageQueue

#: The requests whose processing can change the group's registration.
REGISTRATION_CODES = frozenset({RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT})


@attrs.frozen
class Obs:
    """One thing the implementation did, at ``ts`` (simulated ms): ``kind`` and its details."""

    ts: int
    kind: str
    data: dict[str, Any] = attrs.field(eq=False)


@attrs.define(eq=False)
class Processing:
    """A PULL_MESSAGE being processed by the broker: the store's result, once it reads."""

    result: GetMessageResult | None = None


class Recorder:
    """Records what the cluster's broker and the watched consumer do (see the module docstring)."""

    def __init__(self, cluster: Cluster, broker_name: str, topic: str) -> None:
        self.cluster = cluster
        self.broker_name = broker_name
        self.topic = topic
        self.group = ""
        self.consumer: Any = None
        self.client_id = ""
        self.client_addr = ""
        self.log: list[Obs] = []
        self.registered = False
        self.computing = 0  # computePullFromWhere calls in flight
        self._stack: list[Processing] = []
        self._tasks: dict[int, Any] = {}  # the pull tasks seen, kept alive so that their ids stay theirs
        cluster.events.subscribe(self._on_event)
        self.watch_broker(cluster.broker(broker_name))

    # ------------------------------------------------------------------------------------------------ helpers
    def now(self) -> int:
        return self.cluster.now_ms()

    def add(self, kind: str, **data: Any) -> None:
        self.log.append(Obs(self.now(), kind, data))

    def take(self) -> list[Obs]:
        out, self.log = self.log, []
        return out

    @property
    def broker(self) -> Broker:
        return self.cluster.broker(self.broker_name)

    # ------------------------------------------------------------------------------------------------ the broker
    def watch_broker(self, broker: Broker) -> None:
        """Hook a (new) broker: its request handler, its hold service's re-processing, its store's reads."""
        handle = broker.handle
        process = broker.puller.process
        channel_closed = broker.channel_closed
        store = broker.store
        get_message = store.get_message

        def watched_handle(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            if request.code == RequestCode.PULL_MESSAGE:
                return self._processing(request, channel, True, lambda: handle(request, channel))
            response = handle(request, channel)
            if request.code == RequestCode.UPDATE_CONSUMER_OFFSET:
                fields = request.ext_fields
                self.add("offset_update", group=fields.get("consumerGroup"), topic=fields.get("topic"),
                         queue_id=int(fields.get("queueId", -1)), offset=int(fields.get("commitOffset", -1)),
                         client=channel.remote_addr)
            if request.code in REGISTRATION_CODES:
                self._registration()
            return response

        def watched_process(request: RemotingCommand, channel: Any, allow_suspend: bool = True
                            ) -> RemotingCommand | None:
            return self._processing(request, channel, allow_suspend,
                                    lambda: process(request, channel, allow_suspend))

        def watched_closed(channel: Any) -> None:
            channel_closed(channel)
            self._registration()

        def watched_get_message(*args: Any, **kwargs: Any) -> GetMessageResult:
            result = get_message(*args, **kwargs)
            if self._stack and self._stack[-1].result is None:
                self._stack[-1].result = result
            return result

        drop = store._drop_leading_segments

        def watched_drop(another: Callable[[int], bool]) -> int:
            deleted = drop(another)
            if deleted:
                self.add("deleted", views={key: store_view(store, *key) for key in store.consume_queues.queues})
            return deleted

        store._drop_leading_segments = watched_drop  # type: ignore[method-assign]
        clean_expired = store.clean_expired_consume_queues
        clean_unused = store.clean_unused_topics

        def watched_clean_expired() -> list[tuple[str, int]]:
            destroyed = clean_expired()
            self.add("destroyed", queues=list(destroyed))
            return destroyed

        def watched_clean_unused(keep: set[str]) -> list[str]:
            dropped = clean_unused(keep)
            self.add("destroyed", queues=[(t, q) for t in dropped for q in range(64)])
            return dropped

        flusher = store.flusher
        flush, periodic = flusher.flush, flusher._periodic_flush

        def watched_flush() -> None:
            flush()
            if not flusher.stopped:
                self.add("flushed")

        def watched_periodic() -> None:
            periodic()
            if not flusher.stopped:
                self.add("flushed")

        flusher.flush = watched_flush  # type: ignore[method-assign]
        flusher._periodic_flush = watched_periodic  # type: ignore[method-assign]
        offsets = broker.consumer_offsets
        persist = offsets.persist

        def watched_persist() -> None:
            persist()
            self.add("offsets_persisted")

        offsets.persist = watched_persist  # type: ignore[method-assign]
        store.clean_expired_consume_queues = watched_clean_expired  # type: ignore[method-assign]
        store.clean_unused_topics = watched_clean_unused  # type: ignore[method-assign]
        broker.handle = watched_handle  # type: ignore[method-assign]
        broker.puller.process = watched_process  # type: ignore[method-assign]
        broker.channel_closed = watched_closed  # type: ignore[method-assign]
        store.get_message = watched_get_message  # type: ignore[method-assign]
        self.registered = self._is_registered()

    def _processing(self, request: RemotingCommand, channel: Any, first: bool,
                    run: Callable[[], RemotingCommand | None]) -> RemotingCommand | None:
        processing = Processing()
        self._stack.append(processing)
        try:
            response = run()
        finally:
            self._stack.pop()
        self.add("pull", first=first, fields=dict(request.ext_fields), client=channel.remote_addr,
                 response=response, result=processing.result)
        return response

    def _is_registered(self) -> bool:
        broker = self.cluster.brokers.get(self.broker_name)
        if not self.group or broker is None or not broker.running:
            return False
        return broker.consumers.find_subscription(self.group, self.topic) is not None

    def _registration(self) -> None:
        now = self._is_registered()
        if now != self.registered:
            self.registered = now
            self.add("registered", value=now)

    # ------------------------------------------------------------------------------------------------ events
    def _on_event(self, event: Event) -> None:
        if isinstance(event, MessageStored):
            if event.node == self.broker_name:
                self.add("stored", topic=event.topic, queue_id=event.queue_id, offset=event.offset, tags=event.tags)
            return
        if not self.client_id or event.node != self.client_id:
            return
        if isinstance(event, PullRequestEvent):
            self.add("sent", mq=MessageQueue(event.topic, event.broker, event.queue_id), offset=event.offset,
                     commit=event.commit_offset)
        elif isinstance(event, PullResponseEvent):
            self.add("answered", mq=MessageQueue(event.topic, event.broker, event.queue_id), offset=event.offset,
                     status=event.status, code=event.code)
        elif isinstance(event, ConsumeDeliver):
            self.add("delivered", mq=MessageQueue(event.topic, event.broker, event.queue_id), offset=event.offset)
        elif isinstance(event, ConsumeResult):
            self.add("consumed", mq=MessageQueue(event.topic, event.broker, event.queue_id), offset=event.offset,
                     status=event.status)

    # ------------------------------------------------------------------------------------------------ the consumer
    def watch_consumer(self, consumer: Any, group: str, lite: bool) -> None:
        """Hook a consumer not started yet: its parts once it starts (push), its pull tasks (lite)."""
        self.consumer = consumer
        self.group = group
        self.client_id = consumer.instance.client_id
        self.client_addr = consumer.instance.remoting.addr
        self.registered = self._is_registered()
        start = consumer._start

        def watched_start() -> None:
            start()
            self._watch_parts(consumer)

        consumer._start = watched_start
        if lite:
            self._watch_tasks(consumer)

    def _watch_parts(self, consumer: Any) -> None:
        store = consumer.offset_store
        rebalance = consumer.rebalance
        update_offset = store.update_offset
        to_broker = store.update_consume_offset_to_broker
        dispatch = rebalance.dispatch_pull_requests
        remove = rebalance.remove_process_queue
        compute = rebalance.compute_pull_from_where

        def watched_update(mq: MessageQueue, offset: int, increase_only: bool) -> None:
            if consumer is self.consumer:
                pq = rebalance.process_queue_table.get(mq)
                cached = tuple(pq.msg_tree.keys()) if pq is not None else ()
                self.add("offset", mq=mq, offset=offset, increase_only=increase_only, cached=cached)
            update_offset(mq, offset, increase_only)

        def watched_to_broker(mq: MessageQueue, offset: int, oneway: bool = True) -> Any:
            if consumer is self.consumer:
                self.add("persist_sent", mq=mq, offset=offset)
            return to_broker(mq, offset, oneway)

        def watched_dispatch(requests: list[Any]) -> None:
            if consumer is self.consumer:
                self.add("rebalanced", starts=[(r.mq, r.next_offset) for r in requests])
            dispatch(requests)

        def watched_remove(mq: MessageQueue) -> None:
            remove(mq)
            if consumer is self.consumer:
                self.add("removed", mq=mq)

        def watched_compute(mq: MessageQueue) -> Any:
            self.computing += 1
            future = compute(mq)

            def done(_f: Any) -> None:
                self.computing -= 1

            future.add_done_callback(done)
            return future

        store.update_offset = watched_update
        store.update_consume_offset_to_broker = watched_to_broker
        rebalance.dispatch_pull_requests = watched_dispatch
        rebalance.remove_process_queue = watched_remove
        rebalance.compute_pull_from_where = watched_compute

    def _watch_tasks(self, consumer: Any) -> None:
        schedule = consumer._schedule

        def watched_schedule(task: Any, delay_ms: int) -> None:
            if id(task) not in self._tasks and consumer is self.consumer:
                self._tasks[id(task)] = task
                state = consumer.assigned.get(task.mq)
                if state is not None and state.seek_offset != -1:
                    self.add("seek", mq=task.mq, offset=state.seek_offset)
                else:
                    self.add("assigned", mq=task.mq)
            schedule(task, delay_ms)

        consumer._schedule = watched_schedule

    def forget_consumer(self) -> None:
        self.consumer = None
        self.client_id = ""
        self.client_addr = ""


# ---------------------------------------------------------------------------------------------------- views


def store_view(store: MessageStore, topic: str, queue_id: int) -> tuple[int, int, int, int]:
    """(min offset, max offset, first offset whose data is readable, first consume-queue file's first offset)."""
    cq = store.consume_queues.get(topic, queue_id)
    if cq is None:
        return 0, 0, 0, 0
    first_file = cq.first_file * cq.entries if cq.files else cq.max_offset
    readable = cq.max_offset
    for offset in range(max(first_file, 0), cq.max_offset):
        entry = cq.entry(offset)
        if entry is not None and store.commit_log.read(entry[0], entry[1]) is not None:
            readable = offset
            break
    return cq.min_logic, cq.max_offset, readable, min(first_file, cq.max_offset)
