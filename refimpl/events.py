"""Typed events: every protocol-relevant decision the reference implementation makes.

Components call ``EventLog.emit(SomeEvent(...))``; the log stamps ``seq`` (total order within a run) and ``ts_ms`` and
hands the event to subscribers (the trace recorder, tests). Field names follow the trace schema: ``node`` is a client id
or a broker name, ``broker`` the broker a queue lives on. An event's ``kind`` is its trace kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import attrs


@attrs.frozen(kw_only=True)
class Event:
    kind: ClassVar[str] = "event"
    node: str
    seq: int = -1
    ts_ms: int = -1
    # Set on a row an observer of the wire inferred rather than saw happen: what it was read from (the schema's
    # ``derived`` column).
    derived: str | None = None

    def fields(self) -> dict[str, Any]:
        """The event as a flat dict (with ``kind``), for recording."""
        data = attrs.asdict(self, recurse=False)
        data["kind"] = self.kind
        return data


@attrs.frozen(kw_only=True)
class SendAttempt(Event):
    """A producer sends one attempt of a message to a queue (SEND rules)."""

    kind: ClassVar[str] = "send.attempt"
    group: str
    topic: str
    broker: str
    queue_id: int
    msg_id: str
    attempt: int
    mode: str
    # The producer's configuration the SEND rules depend on (None when the emitter does not know it).
    retry_times: int | None = None
    retry_times_async: int | None = None
    timeout_ms: int | None = None
    latency_fault: bool | None = None


@attrs.frozen(kw_only=True)
class SendResultEvent(Event):
    """The outcome of one attempt: ``status`` is a SendStatus name, or ``ERROR`` with ``code`` / ``error``."""

    kind: ClassVar[str] = "send.result"
    group: str
    topic: str
    broker: str
    queue_id: int
    msg_id: str
    attempt: int
    status: str
    code: int | None = None
    offset: int | None = None
    error: str | None = None
    final: bool = False
    latency_ms: int | None = None  # the attempt's latency as the producer measured it (fed to its fault table)


@attrs.frozen(kw_only=True)
class RouteUpdate(Event):
    kind: ClassVar[str] = "route.update"
    topic: str
    queues: tuple[str, ...]  # "broker:queueId:perm" for each queue of the route (write side)


@attrs.frozen(kw_only=True)
class RebalanceAssign(Event):
    """A client's queue set for a topic after a rebalance (REB rules)."""

    kind: ClassVar[str] = "rebalance.assign"
    group: str
    topic: str
    strategy: str
    consumers: tuple[str, ...]
    queues: tuple[str, ...]  # "broker:queueId"
    all_queues: tuple[str, ...] | None = None  # the topic's queues the allocation ran on, "broker:queueId"
    expression: str | None = None  # the subscription expression of the topic


@attrs.frozen(kw_only=True)
class PullRequestEvent(Event):
    kind: ClassVar[str] = "pull.request"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    commit_offset: int | None = None


@attrs.frozen(kw_only=True)
class PullResponseEvent(Event):
    """A pull answer: broker side (``node`` = broker, with the store ``status``) or client side (client ``status``)."""

    kind: ClassVar[str] = "pull.response"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    code: int | None
    status: str
    next_offset: int | None = None
    min_offset: int | None = None
    max_offset: int | None = None
    count: int = 0


@attrs.frozen(kw_only=True)
class ConsumeDeliver(Event):
    kind: ClassVar[str] = "consume.deliver"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    msg_id: str
    reconsume_times: int


@attrs.frozen(kw_only=True)
class ConsumeResult(Event):
    kind: ClassVar[str] = "consume.result"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    msg_id: str
    status: str


@attrs.frozen(kw_only=True)
class OffsetUpdate(Event):
    """A client's in-memory consume offset changes (OFF rules)."""

    kind: ClassVar[str] = "offset.update"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    increase_only: bool


@attrs.frozen(kw_only=True)
class OffsetCommit(Event):
    """A broker stores a consumer group's offset (``node`` = broker)."""

    kind: ClassVar[str] = "offset.commit"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    previous: int | None


@attrs.frozen(kw_only=True)
class MessageStored(Event):
    """A broker appended a message to a queue (``node`` = broker)."""

    kind: ClassVar[str] = "store.put"
    topic: str
    broker: str
    queue_id: int
    offset: int
    msg_id: str
    commit_log_offset: int
    reconsume_times: int = 0
    tags: str | None = None


@attrs.frozen(kw_only=True)
class StoreDelete(Event):
    """A broker deleted old data and a consume queue's min offset moved up to ``offset`` (``node`` = broker)."""

    kind: ClassVar[str] = "store.delete"
    topic: str
    broker: str
    queue_id: int
    offset: int


@attrs.frozen(kw_only=True)
class SendBack(Event):
    """A consumed message goes back for retry: ``target`` is the retry or DLQ topic (RETRY rules)."""

    kind: ClassVar[str] = "sendback"
    group: str
    topic: str
    msg_id: str
    reconsume_times: int
    delay_level: int | None  # None: not known to the emitter (a client's request: the broker decides)
    target: str | None  # None: not known to the emitter (the broker does not answer it)
    via: str  # "broker" (CONSUMER_SEND_MSG_BACK) or "client" (fallback send) or "local" (consume again)
    broker: str | None = None  # set (to ``node``) on the row the broker that made the copy writes
    max_reconsume_times: int | None = None  # the maximum the consumer sends (None: not known to the emitter)


@attrs.frozen(kw_only=True)
class TxnHalf(Event):
    kind: ClassVar[str] = "txn.half"
    group: str
    topic: str
    msg_id: str
    transaction_id: str
    offset: int  # half queue offset


@attrs.frozen(kw_only=True)
class TxnEnd(Event):
    """A transaction outcome: at the producer (sent) or at the broker (applied, with ``result``)."""

    kind: ClassVar[str] = "txn.end"
    group: str
    msg_id: str
    transaction_id: str
    state: str
    from_check: bool
    result: str | None = None


@attrs.frozen(kw_only=True)
class TxnCheck(Event):
    kind: ClassVar[str] = "txn.check"
    group: str
    msg_id: str
    transaction_id: str
    check_times: int
    action: str  # "check", "discard"
    check_max: int | None = None  # the broker's transactionCheckMax


@attrs.frozen(kw_only=True)
class BrokerRestart(Event):
    kind: ClassVar[str] = "broker.restart"
    broker: str
    crashed: bool


@attrs.frozen(kw_only=True)
class FaultInject(Event):
    kind: ClassVar[str] = "fault.inject"
    target: str
    code: int
    action: str
    detail: str = ""


@attrs.frozen(kw_only=True)
class ClientLifecycle(Event):
    """A client starts, shuts down or crashes."""

    kind: ClassVar[str] = "client.lifecycle"
    group: str
    role: str
    action: str


class EventSink(Protocol):
    """What a run hands its events to, passed in by the caller (``Cluster(sinks=[...])``): a trace recorder, say.

    ``attach`` is called once, when the run's log exists and before its nodes start, with the run's delay table (the
    ms of levels 1..n); ``close`` when the run ends (on its loop)."""

    def attach(self, log: EventLog, delay_level_millis: tuple[int, ...]) -> None: ...

    def close(self) -> object: ...


class EventLog:
    """Stamps and distributes events; keeps them when ``keep`` is set."""

    def __init__(self, clock: Callable[[], int], *, keep: bool = True) -> None:
        self._clock = clock
        self._seq = 0
        self.keep = keep
        self.events: list[Event] = []
        self._subscribers: list[Callable[[Event], None]] = []

    def subscribe(self, subscriber: Callable[[Event], None]) -> None:
        self._subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Callable[[Event], None]) -> None:
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    def emit(self, event: Event, *, ts_ms: int | None = None) -> Event:
        """Stamp ``event`` (just built by the emitter, not yet shared) and hand it out. ``ts_ms``: when it happened,
        for an event emitted after work that took time (its ``seq`` still says where it came)."""
        if not self.keep and not self._subscribers:
            self._seq += 1
            return event
        # Stamping in place instead of attrs.evolve: emitting is on every hot path and the object is still private.
        object.__setattr__(event, "seq", self._seq)
        object.__setattr__(event, "ts_ms", self._clock() if ts_ms is None else ts_ms)
        self._seq += 1
        if self.keep:
            self.events.append(event)
        for subscriber in self._subscribers:
            subscriber(event)
        return event

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
