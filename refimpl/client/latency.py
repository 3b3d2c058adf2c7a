"""Producer queue selection and broker fault avoidance of 4.9.8.

- ``RoundRobinIndex`` is ``ThreadLocalIndex``: a Java ``int`` starting at ``Math.abs(random.nextInt())``, each call
  stores ``index + 1`` (wrapping) and returns it masked with ``0x7FFFFFFF``. The loop is single-threaded, so the
  per-thread value is one value.
- ``TopicPublishInfo``: a topic's writable queues and the round-robin index; ``select_one`` with a last broker probes
  up to N positions (one index call each) for a queue on another broker, else plain round robin. A new route gives a
  new ``TopicPublishInfo`` (and a new random start), as ``updateTopicRouteInfoFromNameServer`` does.
- ``LatencyFaultTolerance`` (``LatencyFaultToleranceImpl``): per broker a fault item (latency, start); a broker is
  available when ``now - start >= 0``; ``pick_one_at_least`` sorts the items (available first, lower latency,
  earlier start) and takes the first if fewer than 2, else item ``whichItemWorst.next % (count / 2)``.
- ``MQFaultStrategy``: with ``sendLatencyFaultEnable`` one index call, then N probes ``abs(index++) % N`` for an
  available broker; else the "not best" broker with its writable queue count from the route's queue data (4.9.8:
  writable only; a new queue with ``index.next % writeQueueNums``), or that item is removed and plain round robin
  decides. Disabled: ``TopicPublishInfo.select_one(last_broker)``. ``update_fault_item`` records only when enabled:
  duration = notAvailableDuration[i] for the highest i with latency (30000 when isolated) >= latencyMax[i].
"""

from __future__ import annotations

import random

import attrs

from rocketspec.refimpl.route import TopicRouteData, is_order_topic, is_writeable, publish_queues
from rocketspec.refimpl.runtime import Runtime
from rocketspec.spec.java import int32
from rocketspec.spec.java import int_abs as java_abs
from rocketspec.spec.java import rem as java_rem
from rocketspec.spec.protocol import FAILED_CALL_LATENCY_MS, LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS
from rocketspec.spec.queues import MessageQueue

_POSITIVE_MASK = 0x7FFFFFFF


def _next_int(rng: random.Random) -> int:
    """``java.util.Random.nextInt()``-like: a uniformly random Java ``int`` from the runtime's generator."""
    return int32(rng.getrandbits(32))


class RoundRobinIndex:
    """``ThreadLocalIndex`` (4.9.4+): random start, ``incrementAndGet`` masked with ``0x7FFFFFFF``."""

    __slots__ = ("_rng", "value")

    def __init__(self, rng: random.Random, start: int | None = None) -> None:
        self._rng = rng
        self.value: int | None = start

    def next(self) -> int:
        if self.value is None:
            self.value = java_abs(_next_int(self._rng))
        self.value = int32(self.value + 1)
        return java_abs(self.value & _POSITIVE_MASK)


def _position(index: int, size: int) -> int:
    pos = java_rem(java_abs(index), size)
    return pos if pos >= 0 else 0


class TopicPublishInfo:
    """The queues a producer sends a topic to (``TopicPublishInfo``)."""

    def __init__(self, topic: str, route: TopicRouteData | None, rng: random.Random, *,
                 have_route: bool = False) -> None:
        self.topic = topic
        self.route = route
        self.queues: list[MessageQueue] = publish_queues(route, topic) if route is not None else []
        self.order_topic = route is not None and is_order_topic(route)
        self.have_topic_router_info = have_route
        self.index = RoundRobinIndex(rng)

    def ok(self) -> bool:
        return bool(self.queues)

    def select_one(self, last_broker: str | None = None) -> MessageQueue:
        """``selectOneMessageQueue(lastBrokerName)``: avoid the last broker when another queue exists."""
        if last_broker is not None:
            for _ in range(len(self.queues)):
                mq = self.queues[_position(self.index.next(), len(self.queues))]
                if mq.broker_name != last_broker:
                    return mq
        return self.queues[_position(self.index.next(), len(self.queues))]

    def write_queue_nums_of(self, broker_name: str | None) -> int:
        """``getQueueIdByBroker`` (4.9.8): the writable queue data of ``broker_name``'s write queue count, else -1."""
        if self.route is None:
            return -1
        for qd in self.route.queue_datas:
            if is_writeable(qd.perm) and qd.broker_name == broker_name:
                return qd.write_queue_nums
        return -1


@attrs.define
class FaultItem:
    name: str
    current_latency: int
    start_timestamp: int

    def available(self, now_ms: int) -> bool:
        return now_ms - self.start_timestamp >= 0


class LatencyFaultTolerance:
    """``LatencyFaultToleranceImpl``: brokers to avoid for a while after slow or failed calls."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self.items: dict[str, FaultItem] = {}
        self.which_item_worst = RoundRobinIndex(runtime.random)

    def update(self, name: str, current_latency: int, not_available_duration: int) -> None:
        start = self._runtime.now_ms() + not_available_duration
        item = self.items.get(name)
        if item is None:
            self.items[name] = FaultItem(name, current_latency, start)
        else:
            item.current_latency = current_latency
            item.start_timestamp = start

    def is_available(self, name: str) -> bool:
        item = self.items.get(name)
        return item is None or item.available(self._runtime.now_ms())

    def remove(self, name: str | None) -> None:
        if name is not None:
            self.items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        if not self.items:
            return None
        now = self._runtime.now_ms()
        # FaultItem.compareTo: available first, then lower latency, then earlier start (a stable sort keeps ties in
        # table order, one of the orders Java's ConcurrentHashMap may give).
        ordered = sorted(self.items.values(),
                         key=lambda i: (not i.available(now), i.current_latency, i.start_timestamp))
        half = len(ordered) // 2
        if half <= 0:
            return ordered[0].name
        return ordered[java_rem(self.which_item_worst.next(), half)].name


class MQFaultStrategy:
    """``MQFaultStrategy``: which queue an attempt goes to, and what a call's latency says about its broker."""

    def __init__(self, runtime: Runtime, *, enabled: bool = False,
                 latency_max: tuple[int, ...] = LATENCY_MAX_MS,
                 not_available_duration: tuple[int, ...] = NOT_AVAILABLE_DURATION_MS) -> None:
        self.enabled = enabled
        self.latency_max = tuple(latency_max)
        self.not_available_duration = tuple(not_available_duration)
        self.tolerance = LatencyFaultTolerance(runtime)

    def select_one(self, info: TopicPublishInfo, last_broker: str | None) -> MessageQueue:
        if not self.enabled:
            return info.select_one(last_broker)
        queues = info.queues
        index = info.index.next()
        for _ in range(len(queues)):
            pos = _position(index, len(queues))
            index = int32(index + 1)
            mq = queues[pos]
            if self.tolerance.is_available(mq.broker_name):
                return mq
        not_best = self.tolerance.pick_one_at_least()
        write_queue_nums = info.write_queue_nums_of(not_best)
        if write_queue_nums > 0:
            mq = info.select_one()
            if not_best is not None:
                return MessageQueue(mq.topic, not_best, java_rem(info.index.next(), write_queue_nums))
            return mq
        self.tolerance.remove(not_best)
        return info.select_one()

    def not_available_duration_for(self, latency: int) -> int:
        """``computeNotAvailableDuration``."""
        for i in range(len(self.latency_max) - 1, -1, -1):
            if latency >= self.latency_max[i]:
                return self.not_available_duration[i]
        return 0

    def update_fault_item(self, broker_name: str, current_latency: int, isolation: bool) -> None:
        if self.enabled:
            duration = self.not_available_duration_for(FAILED_CALL_LATENCY_MS if isolation else current_latency)
            self.tolerance.update(broker_name, current_latency, duration)
