"""Requests waiting for a served node: one bounded queue per executor, drained fairly on the runtime loop.

The transport offers each decoded request to its node's queue for the request's executor
(``BROKER_EXECUTOR_OF``; a name server has one); the runtime loop takes them one node at a time, round robin, and a
node's executors round robin too, so a flood of one kind of request on one node never starves another node (a route
lookup while a broker is flooded) or another kind (sends while pulls pile up). A full queue, or a server whose
waiting requests hold their share of the byte budget, refuses the request: the caller answers SYSTEM_BUSY with
``OVERLOAD_REMARK`` (NettyRemotingAbstract). A request taken after waiting past its executor's limit is handed back
as expired, to be answered with ``TIMEOUT_CLEAN_QUEUE_REMARK`` (BrokerFastFailure).

A served cluster's runtime loop is its socket loop (``wireloop.WireRuntime``), so offers and takes are on one
thread there; the lock keeps the queues whole for any other caller (``hold``/``release``, a runtime of its own).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.limits import ServerLimits
from rocketspec.spec.protocol import BROKER_EXECUTOR_OF, Executor

log = logging.getLogger("rocketspec.tcp")

#: A decoded request is several times its frame in Python objects; this much is counted on top of the frame.
REQUEST_OVERHEAD_BYTES = 1024
#: Requests the runtime loop runs in one turn before it lets timers and other callbacks in.
DRAIN_BATCH = 32


def executor_of(code: int, *, namesrv: bool) -> Executor:
    """The executor that runs ``code`` on a broker (the admin one for every code not registered), or a name server's."""
    if namesrv:
        return Executor.NAMESRV
    return BROKER_EXECUTOR_OF.get(code, Executor.ADMIN)


@attrs.define(slots=True)
class Work:
    """One request waiting to run: ``run`` runs it, ``expire`` answers it busy instead, ``cost`` is its bytes.

    ``dead``: its connection is gone (it is dropped unrun). ``blocked``: its client leaves answers unread; it is
    handed to ``park`` instead of run, to run once the client reads again."""

    run: Callable[[], None]
    expire: Callable[[int, int], None]
    cost: int
    executor: Executor
    queued_at: float = 0.0
    dead: Callable[[], bool] = lambda: False
    blocked: Callable[[], bool] = lambda: False
    park: Callable[[Work], None] | None = None
    #: Where it came from (its connection): an executor takes one request per source in turn.
    source: object = None


class Lane:
    """One executor's queue: FIFO per connection, connections taken in turn.

    A client that pipelines a burst of requests (a fuzzer's hundred frames in one read) then delays another
    connection's request by one of its own, not by the whole burst; each connection's requests keep their order.
    RocketMQ's executors are thread pools, so requests of different connections have no order to keep there either.
    """

    __slots__ = ("_by_source", "_size", "_turns")

    def __init__(self) -> None:
        self._by_source: dict[object, collections.deque[Work]] = {}
        self._turns: collections.deque[object] = collections.deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, work: Work) -> None:
        queue = self._by_source.get(work.source)
        if queue is None:
            queue = self._by_source[work.source] = collections.deque()
            self._turns.append(work.source)
        queue.append(work)
        self._size += 1

    def popleft(self) -> Work:
        source = self._turns.popleft()
        queue = self._by_source[source]
        work = queue.popleft()
        if queue:
            self._turns.append(source)
        else:
            del self._by_source[source]
        self._size -= 1
        return work


class NodeQueues:
    """The bounded queues of one node; ``WorkQueues`` owns the lock and the budget they share."""

    def __init__(self, node: str, owner: WorkQueues) -> None:
        self.node = node
        self.owner = owner
        self.lanes: dict[Executor, Lane] = {}
        self._order: collections.deque[Executor] = collections.deque()
        self.refused = 0
        self.expired = 0

    def offer(self, work: Work) -> bool:
        """Queue ``work`` (any thread); False when its executor's queue or the server's byte budget is full."""
        return self.owner._offer(self, work)

    def size(self, executor: Executor) -> int:
        lane = self.lanes.get(executor)
        return len(lane) if lane is not None else 0

    def _take(self) -> Work | None:
        for _ in range(len(self._order)):
            executor = self._order[0]
            self._order.rotate(-1)
            lane = self.lanes[executor]
            if lane:
                return lane.popleft()
        return None

    def __bool__(self) -> bool:
        return any(self.lanes.values())


class WorkQueues:
    """Every node's queues on one runtime, drained by ``call_soon`` batches of ``DRAIN_BATCH`` requests."""

    def __init__(self, call_soon: Callable[[Callable[[], Any]], Any], limits: ServerLimits,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._call_soon = call_soon
        self.limits = limits
        self._clock = clock
        self._lock = threading.Lock()
        self._nodes: list[NodeQueues] = []
        self._next = 0
        self._scheduled = False
        self._held = False
        self.queued_bytes = 0
        self.queued = 0

    def node(self, name: str) -> NodeQueues:
        with self._lock:
            queues = NodeQueues(name, self)
            self._nodes.append(queues)
            return queues

    def _offer(self, queues: NodeQueues, work: Work) -> bool:
        with self._lock:
            lane = queues.lanes.get(work.executor)
            if lane is None:
                lane = queues.lanes[work.executor] = Lane()
                queues._order.append(work.executor)
            if len(lane) >= self.limits.capacity(work.executor) or \
                    self.queued_bytes + work.cost > self.limits.queued_bytes_limit:
                queues.refused += 1
                return False
            work.queued_at = self._clock()
            lane.append(work)
            self.queued_bytes += work.cost
            self.queued += 1
            schedule = not self._scheduled
            self._scheduled = True
        if schedule:
            self._call_soon(self._drain)
        return True

    def hold(self) -> None:
        """Stop taking requests until ``release``: a stalled server, whose queues fill (and refuse past capacity)
        while connections are still read, answers still written and timers still run."""
        with self._lock:
            self._held = True

    def release(self) -> None:
        """Take requests again (``hold``); those that waited past their limit are answered busy, as any."""
        with self._lock:
            self._held = False
            schedule = not self._scheduled and self.queued > 0
            self._scheduled = self._scheduled or schedule
        if schedule:
            self._call_soon(self._drain)

    def _take(self) -> tuple[Work, NodeQueues, int] | None:
        """The next request, one node after another (caller holds the lock), with its executor's queue size."""
        count = len(self._nodes)
        for step in range(count):
            queues = self._nodes[(self._next + step) % count]
            work = queues._take()
            if work is not None:
                self._next = (self._next + step + 1) % count
                self.queued_bytes -= work.cost
                self.queued -= 1
                return work, queues, queues.size(work.executor)
        return None

    def _drain(self) -> None:
        """Runtime loop: run up to ``DRAIN_BATCH`` requests, then come back later if more wait."""
        for _ in range(DRAIN_BATCH):
            with self._lock:
                taken = None if self._held else self._take()
                if taken is None:
                    self._scheduled = False
                    return
            work, queues, size = taken
            if work.dead():  # its connection closed while it waited: nobody to answer
                continue
            if work.park is not None and work.blocked():
                work.park(work)
                continue
            waited_ms = int((self._clock() - work.queued_at) * 1000)
            limit = self.limits.max_wait_ms.get(work.executor)
            try:
                if self.limits.fast_failure and limit is not None and waited_ms >= limit:
                    queues.expired += 1
                    work.expire(waited_ms, size)
                else:
                    work.run()
            except Exception:  # one request's failure must not stop the queues
                log.exception("%s: running a request failed", queues.node)
        self._call_soon(self._drain)


__all__ = ["DRAIN_BATCH", "REQUEST_OVERHEAD_BYTES", "Lane", "NodeQueues", "Work", "WorkQueues", "executor_of"]
