"""The broker's traffic statistics (``BrokerStatsManager`` / ``StatsItemSet`` / ``StatsItem`` of 4.9.8), read by
VIEW_BROKER_STATS_DATA (mqadmin ``statsAll``, ``DefaultMQAdminExt.viewBrokerStatsData``).

A stats item is a (name, key) pair with two running totals, ``value`` and ``times``, created on its first increment.
Every 10 s (from broker start) each item appends a ``(timestamp, times, value)`` sample to its minute list (7 kept),
every 10 min to its hour list (7 kept) and every hour to its day list (25 kept); a list's first sample, when it
starts empty, is ``(now - period, 0, 0)``. A snapshot over a list is ``sum = last.value - first.value``,
``tps = sum * 1000 / (last.ts - first.ts)`` and ``avgpt = sum / (last.times - first.times)`` (``computeStatsData``).

What is counted, as in 4.9.8 with its defaults (``enableDetailStat=true``, so the queue-level stats exist; the
commercial stats need send/consume hooks nobody registers, and QUEUE_GET_* only the asynchronous schedule delivery,
off by default):

- a stored send: TOPIC_PUT_NUMS (key: the stored topic, i.e. SCHEDULE_TOPIC_XXXX for a delayed message and the half
  topic for a prepared one; value: messages, times 1), TOPIC_PUT_SIZE (bytes), BROKER_PUT_NUMS (key: the cluster;
  times not counted); a delayed one also QUEUE_PUT_NUMS / QUEUE_PUT_SIZE (``SCHEDULE_TOPIC_XXXX@queueId``);
- a pull that found messages: GROUP_GET_NUMS and GROUP_GET_SIZE (key ``topic@group``), BROKER_GET_NUMS (cluster),
  GROUP_GET_LATENCY (``queueId@topic@group``, the pull's handling time: 0 here, the reference broker answers at
  once);
- a consumer send-back stored: SNDBCK_PUT_NUMS (``originalTopic@group``), plus TOPIC_PUT_* and QUEUE_PUT_* when it
  went to SCHEDULE_TOPIC_XXXX (``asyncConsumerSendMsgBack``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import attrs

from rocketspec.spec.protocol import (
    SCHEDULE_TOPIC,
    STATS_BROKER_PUT_NUMS,
    STATS_SAMPLING,
    STATS_TOPIC_PUT_NUMS,
    STATS_TOPIC_PUT_SIZE,
    STORED_PUT_STATUSES,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    Property,
)

if TYPE_CHECKING:
    from rocketspec.refimpl.runtime import Runtime, Timer
    from rocketspec.refimpl.store import MessageToStore, PutResult

# StatsItemSet sampling periods and how many samples each list keeps (StatsItem.samplingIn*).
(_, MINUTE_SAMPLE_MS, MINUTE_SAMPLES), (_, HOUR_SAMPLE_MS, HOUR_SAMPLES), (_, DAY_SAMPLE_MS, DAY_SAMPLES) = \
    STATS_SAMPLING

# Stats names (BrokerStatsManager / Stats constants) the reference broker counts.
QUEUE_PUT_NUMS = "QUEUE_PUT_NUMS"
QUEUE_PUT_SIZE = "QUEUE_PUT_SIZE"
QUEUE_GET_NUMS = "QUEUE_GET_NUMS"
QUEUE_GET_SIZE = "QUEUE_GET_SIZE"
TOPIC_PUT_NUMS = STATS_TOPIC_PUT_NUMS
TOPIC_PUT_SIZE = STATS_TOPIC_PUT_SIZE
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
GROUP_GET_LATENCY = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS = STATS_BROKER_PUT_NUMS
BROKER_GET_NUMS = "BROKER_GET_NUMS"


@attrs.define
class StatsSnapshot:
    """``StatsSnapshot`` over one sample list."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@attrs.define
class StatsItem:
    """``StatsItem``: running totals and the three sample lists of ``(timestamp, times, value)``."""

    value: int = 0
    times: int = 0
    minute: deque[tuple[int, int, int]] = attrs.field(factory=deque)
    hour: deque[tuple[int, int, int]] = attrs.field(factory=deque)
    day: deque[tuple[int, int, int]] = attrs.field(factory=deque)

    def sample(self, samples: deque[tuple[int, int, int]], now_ms: int, period_ms: int, keep: int) -> None:
        if not samples:
            samples.append((now_ms - period_ms, 0, 0))
        samples.append((now_ms, self.times, self.value))
        if len(samples) > keep:
            samples.popleft()

    @staticmethod
    def snapshot(samples: deque[tuple[int, int, int]]) -> StatsSnapshot:
        """``computeStatsData``; Java's 0/0 (two samples at the same instant) is NaN, kept as such."""
        if not samples:
            return StatsSnapshot()
        (first_ts, first_times, first_value), (last_ts, last_times, last_value) = samples[0], samples[-1]
        total = last_value - first_value
        span = last_ts - first_ts
        tps = total * 1000.0 / span if span else (float("nan") if total == 0 else float("inf") * total)
        times = last_times - first_times
        return StatsSnapshot(total, tps, total / times if times > 0 else 0.0)


def stored_queue(msg: MessageToStore, delay_levels: int) -> tuple[str, int]:
    """The topic and queue a put ends up under as the send processor sees them afterwards
    (``CommitLog.asyncPutMessage`` moves a delayed non-transactional message to SCHEDULE_TOPIC_XXXX, queue
    level - 1, in place)."""
    tran_type = msg.sys_flag & SYSFLAG_TRANSACTION_MASK
    if tran_type in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE):
        try:
            level = int(msg.properties.get(Property.DELAY_TIME_LEVEL, "0"))
        except ValueError:
            level = 0
        if level > 0:
            return SCHEDULE_TOPIC, min(level, delay_levels) - 1
    return msg.topic, msg.queue_id


class BrokerStats:
    """``BrokerStatsManager``: stats name → key → item, sampled on the broker's runtime clock."""

    def __init__(self, runtime: Runtime, cluster_name: str, delay_levels: int) -> None:
        self._runtime = runtime
        self._cluster = cluster_name
        self._delay_levels = delay_levels
        self._table: dict[str, dict[str, StatsItem]] = {name: {} for name in (
            QUEUE_PUT_NUMS, QUEUE_PUT_SIZE, QUEUE_GET_NUMS, QUEUE_GET_SIZE, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE,
            GROUP_GET_NUMS, GROUP_GET_SIZE, GROUP_GET_LATENCY, SNDBCK_PUT_NUMS, BROKER_PUT_NUMS, BROKER_GET_NUMS)}

    def start(self) -> list[Timer]:
        """The three sampling timers (``StatsItemSet.init``: first run at once); the broker cancels them."""
        call_every = self._runtime.call_every
        return [
            call_every(MINUTE_SAMPLE_MS, lambda: self._sample("minute", MINUTE_SAMPLE_MS, MINUTE_SAMPLES),
                       initial_delay_ms=0),
            call_every(HOUR_SAMPLE_MS, lambda: self._sample("hour", HOUR_SAMPLE_MS, HOUR_SAMPLES), initial_delay_ms=0),
            call_every(DAY_SAMPLE_MS, lambda: self._sample("day", DAY_SAMPLE_MS, DAY_SAMPLES), initial_delay_ms=0),
        ]

    def _sample(self, which: str, period_ms: int, keep: int) -> None:
        now = self._runtime.now_ms()
        for items in self._table.values():
            for item in items.values():
                item.sample(getattr(item, which), now, period_ms, keep)

    def item(self, name: str | None, key: str | None) -> StatsItem | None:
        """``getStatsItem``: None for an unknown (or null) name or a key never counted."""
        if name is None or key is None:  # ConcurrentHashMap.get(null) throws; getStatsItem answers null
            return None
        return self._table.get(name, {}).get(key)

    def items(self) -> dict[tuple[str, str], StatsItem]:
        """Every item counted so far, by (stats name, key) (read-only: what VIEW_BROKER_STATS_DATA can be asked)."""
        return {(name, key): item for name, items in self._table.items() for key, item in items.items()}

    def add(self, name: str, key: str, value: int, times: int) -> None:
        """``StatsItemSet.addValue``."""
        item = self._table[name].setdefault(key, StatsItem())
        item.value += value
        item.times += times

    # ---- the hooks of the send / pull / send-back paths ----------------------------------------------------------
    def on_put(self, msg: MessageToStore, result: PutResult | None, count: int = 1) -> None:
        """``handlePutMessageResult`` of a stored send (any of the four "stored" statuses)."""
        if result is None or result.status not in STORED_PUT_STATUSES:
            return
        topic, queue_id = stored_queue(msg, self._delay_levels)
        if topic == SCHEDULE_TOPIC:
            self.add(QUEUE_PUT_NUMS, f"{topic}@{queue_id}", count, 1)
            self.add(QUEUE_PUT_SIZE, f"{topic}@{queue_id}", result.size, 1)
        self.add(TOPIC_PUT_NUMS, topic, count, 1)
        self.add(TOPIC_PUT_SIZE, topic, result.size, 1)
        self.add(BROKER_PUT_NUMS, self._cluster, count, 0)

    def on_get(self, group: str, topic: str, queue_id: int, count: int, size: int, *, rt: bool = True) -> None:
        """A pull answered SUCCESS (``PullMessageProcessor.processRequest``), or the transaction check's read of the
        half / op topic (``TransactionalMessageBridge.getMessage``, group CID_RMQ_SYS_TRANS: no latency)."""
        key = f"{topic}@{group}"
        self.add(GROUP_GET_NUMS, key, count, 1)
        self.add(GROUP_GET_SIZE, key, size, 1)
        self.add(BROKER_GET_NUMS, self._cluster, count, 0)
        if rt:
            self.add(GROUP_GET_LATENCY, f"{queue_id}@{topic}@{group}", 0, 1)

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        """``tpsGroupGetNums``: the minute TPS of GROUP_GET_NUMS ``topic@group`` (0.0 if never counted), what
        GET_CONSUME_STATS / GET_BROKER_CONSUME_STATS report as ``consumeTps``."""
        item = self.item(GROUP_GET_NUMS, f"{topic}@{group}")
        return StatsItem.snapshot(item.minute).tps if item is not None else 0.0

    def on_send_back(self, group: str, original_topic: str, msg: MessageToStore, size: int) -> None:
        """A consumer send-back stored (``asyncConsumerSendMsgBack``)."""
        topic, queue_id = stored_queue(msg, self._delay_levels)
        if topic == SCHEDULE_TOPIC:
            self.add(TOPIC_PUT_NUMS, topic, 1, 1)
            self.add(TOPIC_PUT_SIZE, topic, size, 1)
            self.add(QUEUE_PUT_NUMS, f"{topic}@{queue_id}", 1, 1)
            self.add(QUEUE_PUT_SIZE, f"{topic}@{queue_id}", size, 1)
        self.add(SNDBCK_PUT_NUMS, f"{original_topic}@{group}", 1, 1)
