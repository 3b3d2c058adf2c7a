"""What the offset_commit lockstep machine (``test_stateful_offset_commit.py``) reads off the reference implementation.

- :class:`Recorder`: one ordered log of the cluster's events and of *notes* the hooks take where refimpl emits no
  event (a read of a queue's offset being answered by the broker, a ProcessQueue added with its start offset, a
  persist, a drop, a pull answered and whether it was the current ProcessQueue's, a broker persisting its offset
  table, a heartbeat reaching a broker, a reset received and applied). Hooks wrap the live objects' methods (their
  code is what a broken copy of refimpl swaps, so the hooks see the broken behaviour).
- :class:`Gate`: the runtime's ``run_user`` replaced: every consume request stops at its listener until a rule
  releases it, so consume threads finish in any order, as the spec allows.
- :func:`loads_fastjson`: fastjson's output read back (maps keyed by objects, bare numeric keys).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.client import offset_store as offset_store_module
from rocketspec.refimpl.events import ConsumeDeliver, Event
from rocketspec.spec import fastjson
from rocketspec.spec.protocol import RequestCode, ResponseCode
from rocketspec.spec.queues import MessageQueue


@attrs.frozen
class Note:
    """What a hook saw: its kind, when, and its details."""

    kind: str
    ts_ms: int
    data: dict[str, Any] = attrs.field(eq=False, hash=False)

    def __getitem__(self, name: str) -> Any:
        return self.data[name]


class Recorder:
    """The cluster's events and the hooks' notes, in the order they happened."""

    def __init__(self, cluster: Any, admin: str = "", admin_codes: tuple[int, ...] = ()) -> None:
        self.cluster = cluster
        self.admin = admin
        self.admin_codes = admin_codes
        self.log: list[Event | Note] = []
        self.cursor = 0
        self.delivered: list[ConsumeDeliver] = []
        cluster.events.subscribe(self._event)
        self.stopping: str | None = None  # the client shutting down (its persistAll is the shutdown's)
        # Each ProcessQueue's pull cursor (its PullRequest), by the ProcessQueue's id, as the rebalance dispatched it.
        self.requests: dict[int, Any] = {}
        # The last start offset computed for a client's queue (a ProcessQueue's, until its pull is dispatched).
        self.starts: dict[tuple[str, MessageQueue], int | None] = {}

    def _event(self, event: Event) -> None:
        self.log.append(event)
        if isinstance(event, ConsumeDeliver):
            self.delivered.append(event)

    def note(self, kind: str, **data: Any) -> None:
        self.log.append(Note(kind, self.cluster.now_ms(), data))

    def new(self) -> list[Event | Note]:
        """What happened since the last call."""
        out, self.cursor = self.log[self.cursor:], len(self.log)
        return out

    # ---------------------------------------------------------------------------------------------- brokers
    def hook_broker(self, broker: Any) -> None:
        """QUERY_CONSUMER_OFFSET answered and HEART_BEAT taken (with the client they came from), a subscription group
        created, the offset table persisted."""
        handlers = broker._handlers
        query, heartbeat = handlers[RequestCode.QUERY_CONSUMER_OFFSET], handlers[RequestCode.HEART_BEAT]

        def on_query(request: Any, channel: Any) -> Any:
            response = query(request, channel)
            offset = response.field("offset") if response.code == ResponseCode.SUCCESS else None
            self.note("query", broker=broker.name, client=_client_of(channel), group=request.field("consumerGroup"),
                      mq=MessageQueue(request.field("topic") or "", broker.name, int(request.field("queueId") or 0)),
                      code=response.code, offset=-1 if offset is None else int(offset))
            return response

        def on_heartbeat(request: Any, channel: Any) -> Any:
            response = heartbeat(request, channel)
            if response is not None and response.code == ResponseCode.SUCCESS:
                self.note("heartbeat", broker=broker.name, client=_client_of(channel))
            return response

        handlers[RequestCode.QUERY_CONSUMER_OFFSET] = on_query
        handlers[RequestCode.HEART_BEAT] = on_heartbeat
        for code in self.admin_codes:
            handlers[code] = self._admin_hook(broker.name, code, handlers[code])
        groups = broker.subscription_groups
        find_or_create = groups.find_or_create

        def on_find_or_create(group: str) -> Any:
            known = group in groups.table
            found = find_or_create(group)
            if not known and found is not None:
                self.note("group_created", broker=broker.name, group=group)
            return found

        groups.find_or_create = on_find_or_create
        offsets = broker.consumer_offsets
        persist = offsets.persist

        def on_persist() -> None:
            self.note("broker_persist", broker=broker.name)
            persist()

        offsets.persist = on_persist

    def _admin_hook(self, broker: str, code: int, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        """An admin tool's request is handled now (a client's requests of the same code are not noted)."""

        def on_request(request: Any, channel: Any) -> Any:
            if _client_of(channel) == self.admin:
                self.note("admin", broker=broker, code=code, fields=dict(request.ext_fields or {}))
            return handler(request, channel)

        return on_request

    # ---------------------------------------------------------------------------------------------- consumers
    def hook_consumer(self, consumer: Any) -> None:
        """Hooks on a push consumer, installed when its start has built its store and rebalance (no rebalance has
        run yet then: it waits for the routes)."""
        start = consumer._start

        def started() -> None:
            start()
            self._hook_started(consumer)

        consumer._start = started

    def _hook_started(self, consumer: Any) -> None:
        client = consumer.instance.client_id
        store, rebalance = consumer.offset_store, consumer.rebalance
        persist_all, remove_dirty = store.persist_all, rebalance.remove_dirty_offset
        compute, remove = rebalance.compute_pull_from_where, rebalance.remove_unnecessary_message_queue
        pull_result = consumer._on_pull_result
        dispatch = rebalance.dispatch_pull_requests

        def on_dispatch(requests: list[Any]) -> None:
            for request in requests:
                self.requests[id(request.pq)] = request
            dispatch(requests)

        def on_persist_all(mqs: Any) -> None:
            self.note("persist_all", client=client, shutdown=self.stopping == client)
            persist_all(mqs)

        def on_remove_dirty(mq: MessageQueue) -> None:
            self.note("read", client=client, mq=mq)
            remove_dirty(mq)

        def on_compute(mq: MessageQueue) -> Any:
            future = compute(mq)

            def computed(f: Any) -> None:
                start = f.result() if f.exception() is None else None
                self.starts[(client, mq)] = start
                self.note("start", client=client, mq=mq, start=start)

            future.add_done_callback(computed)
            return future

        def on_remove(mq: MessageQueue, pq: Any) -> Any:
            self.note("drop", client=client, mq=mq)
            return remove(mq, pq)

        def on_pull_result(request: Any, result: Any) -> None:
            pq = request.pq
            live = rebalance.process_queue_table.get(request.mq) is pq and not pq.dropped
            self.note("pull_answer", client=client, mq=request.mq, live=live, empty=pq.msg_count == 0,
                      offset=request.next_offset, status=result.status.name, count=len(result.msg_found_list or ()),
                      next_offset=result.next_begin_offset, max_offset=result.max_offset)
            pull_result(request, result)

        store.persist_all = on_persist_all
        rebalance.remove_dirty_offset = on_remove_dirty
        rebalance.compute_pull_from_where = on_compute
        rebalance.remove_unnecessary_message_queue = on_remove
        consumer._on_pull_result = on_pull_result
        rebalance.dispatch_pull_requests = on_dispatch

    def hook_resets(self) -> Callable[[], None]:
        """A reset's start and end (``offset_store.begin_reset`` / ``apply_reset``); returns the undo."""
        begin, apply = offset_store_module.begin_reset, offset_store_module.apply_reset

        def on_begin(resets: Any) -> None:
            consumer = resets[0][0]
            self.note("reset_begin", client=consumer.instance.client_id, consumer=consumer)
            begin(resets)

        def on_apply(resets: Any) -> None:
            consumer = resets[0][0]
            client = consumer.instance.client_id
            self.note("reset_apply", client=client, consumer=consumer)
            try:
                apply(resets)
            finally:
                self.note("reset_done", client=client, consumer=consumer)

        offset_store_module.begin_reset = on_begin
        offset_store_module.apply_reset = on_apply

        def undo() -> None:
            offset_store_module.begin_reset = begin
            offset_store_module.apply_reset = apply

        return undo


def _client_of(channel: Any) -> str:
    """The client node behind a server channel of the in-process network (test-only introspection)."""
    conn = getattr(channel, "_conn", None)
    return str(conn.client.node) if conn is not None else ""


@attrs.define(eq=False)
class Waiting:
    """A consume request stopped at its listener."""

    ident: int
    client: str
    mq: MessageQueue
    offsets: tuple[int, ...]
    msg_ids: tuple[tuple[str, int], ...]
    pq: Any = attrs.field(repr=False)
    fn: Callable[[], Any] = attrs.field(repr=False)
    on_done: Callable[[Any, BaseException | None], None] = attrs.field(repr=False)


class Gate:
    """``runtime.run_user``: a consume request (its ConsumeDeliver events were just emitted, right before the
    listener call) waits for a rule; anything else runs at once."""

    def __init__(self, recorder: Recorder, pq_of: Callable[[str, MessageQueue], Any]) -> None:
        self.recorder = recorder
        self.pq_of = pq_of
        self.waiting: list[Waiting] = []
        self._ident = 0

    def __call__(self, fn: Callable[[], Any], on_done: Callable[[Any, BaseException | None], None]) -> None:
        delivered, self.recorder.delivered = self.recorder.delivered, []
        if not delivered:
            on_done(fn(), None)
            return
        first = delivered[0]
        mq = MessageQueue(first.topic, first.broker, first.queue_id)
        self.recorder.note("batch", client=first.node, mq=mq, offsets=tuple(e.offset for e in delivered))
        # A message is known by its id and how often it was consumed before (a retry copy keeps the id).
        self.waiting.append(Waiting(self._ident, first.node, mq, tuple(e.offset for e in delivered),
                                    tuple((e.msg_id, e.reconsume_times) for e in delivered),
                                    self.pq_of(first.node, mq), fn, on_done))
        self._ident += 1

    def forget(self, client: str) -> None:
        """A stopped client's listeners never return (their ProcessQueues went with it)."""
        self.waiting = [w for w in self.waiting if w.client != client]


# ------------------------------------------------------------------------------------------------ fastjson

def loads_fastjson(body: bytes | None) -> Any:
    """fastjson output: maps keyed by a MessageQueue (``{{"brokerName":..}:5}``) give MessageQueue keys, bare
    numeric keys ints (``rocketspec.spec.fastjson``)."""
    return fastjson.loads(body or b"{}", object_key=lambda key: MessageQueue(
        str(key["topic"]), str(key["brokerName"]), int(key["queueId"])))
