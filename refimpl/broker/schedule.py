"""Delayed delivery (``ScheduleMessageService`` of RocketMQ 4.9.8, the synchronous delivery variant).

The store parks a message with a delay level in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` (REAL_TOPIC / REAL_QID
properties; the consume-queue tags code is the delivery time). The levels and their delays are the store's table
(``MessageStore.delay_level_millis``, from the broker's ``messageDelayLevel``; level ``i`` is entry ``i - 1``, the
max level is its length). This service keeps one offset per level and one timer task per level:

- each level's task starts ``SCHEDULE_FIRST_DELAY_MS`` after ``start`` from its persisted offset and walks the
  level's consume queue from there; a delivery time later than ``now + level delay`` is corrected to ``now``
  (``correctDeliverTimestamp``); the first entry not yet due stops the walk and the task runs again after
  ``SCHEDULE_TICK_MS`` (``DELAY_FOR_A_WHILE``), so a message is delivered less than one tick after it is due. (Runs
  that could only find nothing are not simulated: the task sleeps to the first tick at or after the next delivery
  time, or, with nothing parked, until the store reports a parked message; the ticks stay on Java's grid.)
- a due message is looked up in the commit log and stored again under its real topic and queue with its body, flag,
  properties (DELAY removed), sysFlag, born host and time and reconsume times (``messageTimeup``); a message whose
  real topic is the transaction half topic is dropped, one that is gone is skipped;
- a successful put advances the level's offset; a failed put (or a malformed message) stops the walk and the same
  entry is tried again one tick later;
- offsets are loaded from ``config/delayOffset.json`` at start (corrected into the queue's [min, max]) and persisted
  every ``FLUSH_DELAY_OFFSET_INTERVAL_MS``; the broker persists them again on a clean shutdown, so a crash may deliver
  a delayed message twice.

Only a master runs the service (``DefaultMessageStore.handleScheduleMessageService``).
"""

from __future__ import annotations

from rocketspec.refimpl.broker.config import load_json, save_json
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.message import MessageExt, encode_properties
from rocketspec.refimpl.runtime import Timer
from rocketspec.refimpl.store import MessageToStore
from rocketspec.spec.java import parse_long
from rocketspec.spec.protocol import (
    FLUSH_DELAY_OFFSET_INTERVAL_MS,
    SCHEDULE_FIRST_DELAY_MS,
    SCHEDULE_TICK_MS,
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    Property,
    PutMessageStatus,
)

# StorePathConfigHelper.getDelayOffsetStorePath, relative to the store root.
DELAY_OFFSET_FILE = "config/delayOffset.json"
# How many consume-queue entries one task run reads at a time (Java reads the rest of one mapped file).
_WALK_BATCH = 256

class MalformedDelayedMessage(ValueError):
    """A parked message without a usable REAL_TOPIC / REAL_QID: Java's ``messageTimeup`` throws on it."""


def time_up(msg: MessageExt) -> MessageToStore:
    """``messageTimeup``: the parked message as it is delivered to its real topic and queue.

    The store decides with the map: DELAY cleared (so it is not parked again) and WAIT false. It writes the
    properties as they were stored in SCHEDULE_TOPIC_XXXX: 4.9.8 encodes the string before it changes the map, so the
    delivered message still shows the DELAY it was parked with, REAL_TOPIC, REAL_QID and any WAIT it had. The tags
    code follows from TAGS when the store writes it.
    """
    props = dict(msg.properties)
    props.pop(Property.DELAY_TIME_LEVEL, None)
    props[Property.WAIT_STORE_MSG_OK] = "false"
    topic = props.get(Property.REAL_TOPIC)
    queue_id = parse_long(props.get(Property.REAL_QUEUE_ID), 32)
    if topic is None or queue_id is None:
        raise MalformedDelayedMessage(f"parked message {msg.offset_msg_id} has no real topic / queue id")
    return MessageToStore(
        topic=topic,
        queue_id=queue_id,
        body=msg.body,
        flag=msg.flag,
        properties=props,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        reconsume_times=msg.reconsume_times,
        properties_text=encode_properties(msg.properties),
    )


def correct_deliver_timestamp(now_ms: int, deliver_ms: int, level_delay_ms: int) -> int:
    """``correctDeliverTimestamp``: a delivery time beyond ``now + level delay`` (a clock step back) means now."""
    return now_ms if deliver_ms > now_ms + level_delay_ms else deliver_ms


class ScheduleService:
    """``ScheduleMessageService``: delivers parked messages of every delay level when they are due."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        # level -> offset of the next message to deliver (what is persisted).
        self.offset_table: dict[int, int] = {}
        # level -> offset the level's pending task starts from (moves past skipped entries too).
        self._task_offsets: dict[int, int] = {}
        self._tasks: dict[int, Timer] = {}
        # level -> time of its last (or first scheduled) run: the level's runs fall on this tick grid.
        self._anchors: dict[int, int] = {}
        self._persist_timer: Timer | None = None
        self.started = False

    @property
    def max_level(self) -> int:
        """``maxDelayLevel``: the number of levels in the store's delay table."""
        return len(self.broker.store.delay_level_millis)

    # ---------------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """``start``: load and correct the offsets, then one task per level after ``SCHEDULE_FIRST_DELAY_MS``."""
        if self.started or not self.broker.is_master():
            return
        self.started = True
        self.load()
        first_run = self.broker.runtime.now_ms() + SCHEDULE_FIRST_DELAY_MS
        for level in range(1, self.max_level + 1):
            self._anchors[level] = first_run
            self._schedule(level, self.offset_table.get(level, 0), SCHEDULE_FIRST_DELAY_MS)
        self.broker.store.add_arrival_listener(self._on_arrival)
        self._persist_timer = self.broker.runtime.call_every(
            FLUSH_DELAY_OFFSET_INTERVAL_MS, self._persist_tick, initial_delay_ms=FLUSH_DELAY_OFFSET_INTERVAL_MS)
        self.broker.runtime.add_idle_probe(self.pending)

    def shutdown(self) -> None:
        """Stop every task (the broker persists the offsets itself on a clean shutdown; a crash does not)."""
        if not self.started:
            return
        self.started = False
        for timer in self._tasks.values():
            timer.cancel()
        self._tasks.clear()
        self.broker.store.remove_arrival_listener(self._on_arrival)
        if self._persist_timer is not None:
            self._persist_timer.cancel()
            self._persist_timer = None
        self.broker.runtime.remove_idle_probe(self.pending)

    def pending(self) -> bool:
        """Idle probe: some delay level still has parked messages its task has not passed.

        Only levels with a task to run are looked at: a level sleeps only once its task has passed every parked
        message, and a message parked later wakes it (``_on_arrival``). The runtime asks this on every step."""
        if not self.started:
            return False
        store = self.broker.store
        offsets = self._task_offsets
        return any(offsets[level] < store.max_offset(SCHEDULE_TOPIC, level - 1) for level in self._tasks)

    # ---------------------------------------------------------------------------------------------- persistence
    def load(self) -> None:
        """``load``: read ``config/delayOffset.json`` and ``correctDelayOffset`` against the consume queues."""
        data = load_json(self.broker.disk, DELAY_OFFSET_FILE)
        table = data.get("offsetTable") if data is not None else None
        if isinstance(table, dict):
            for key, value in table.items():
                level = parse_long(str(key), 32)
                offset = parse_long(str(value))
                if level is not None and offset is not None:
                    self.offset_table[level] = offset
        store = self.broker.store
        for level, offset in list(self.offset_table.items()):
            # Java's findConsumeQueue creates a missing queue empty: its bounds are then [0, 0].
            if not 1 <= level <= self.max_level:
                continue
            low, high = store.min_offset(SCHEDULE_TOPIC, level - 1), store.max_offset(SCHEDULE_TOPIC, level - 1)
            corrected = low if offset < low else high if offset > high else offset
            self.offset_table[level] = corrected

    def encode(self) -> dict[str, dict[str, int]]:
        """``DelayOffsetSerializeWrapper``: ``{"offsetTable": {level: offset}}``."""
        return {"offsetTable": {str(level): offset for level, offset in sorted(self.offset_table.items())}}

    def persist(self) -> None:
        save_json(self.broker.disk, DELAY_OFFSET_FILE, self.encode())

    def _persist_tick(self) -> None:
        if self.started:
            self.persist()

    # ---------------------------------------------------------------------------------------------- delivery
    def _schedule(self, level: int, offset: int, delay_ms: int) -> None:
        """``scheduleNextTimerTask``: the level's next task run, from ``offset``."""
        self._task_offsets[level] = offset
        self._tasks[level] = self.broker.runtime.call_later(delay_ms, lambda: self._run(level, offset), daemon=True)

    def _sleep(self, level: int, offset: int) -> None:
        """Nothing parked at ``offset``: no run until a message arrives (Java's runs every tick would find none)."""
        self._task_offsets[level] = offset

    def _on_arrival(self, topic: str, queue_id: int, queue_offset: int, tags_code: int) -> None:
        """A message was parked: wake its level's task at the next tick of the level's tick grid."""
        level = queue_id + 1
        if topic != SCHEDULE_TOPIC or not self.started or level in self._tasks or level not in self._task_offsets:
            return
        now = self.broker.runtime.now_ms()
        anchor = self._anchors.get(level, now)
        delay = -(now - anchor) % SCHEDULE_TICK_MS
        self._schedule(level, self._task_offsets[level], delay)

    def _run(self, level: int, offset: int) -> None:
        """``DeliverDelayedMessageTimerTask.executeOnTimeup`` for one level.

        Java runs the task every tick; here a run that finds the next message not yet due sleeps straight to the
        first tick at or after its delivery time (the run that would deliver it), on the same tick grid.
        """
        self._tasks.pop(level, None)
        if not self.started:
            return
        runtime = self.broker.runtime
        self._anchors[level] = runtime.now_ms()
        store = self.broker.store
        queue_id = level - 1
        low = store.min_offset(SCHEDULE_TOPIC, queue_id)
        high = store.max_offset(SCHEDULE_TOPIC, queue_id)
        if offset < low or offset >= high:
            # getIndexBuffer found nothing at this offset: restart from the queue's bounds if it left them.
            reset = low if low > offset else high if high < offset else offset
            if reset < high:
                self._schedule(level, reset, SCHEDULE_TICK_MS)
            else:
                self._sleep(level, reset)
            return
        level_delay = self.broker.store.delay_level_millis[level - 1]
        cursor = offset
        while cursor < high and self.started:
            entries = store.queue_entries(SCHEDULE_TOPIC, queue_id, cursor, min(_WALK_BATCH, high - cursor))
            if not entries:
                break
            for queue_offset, commit_log_offset, _size, tags_code in entries:
                now = runtime.now_ms()
                countdown = correct_deliver_timestamp(now, tags_code, level_delay) - now
                if countdown > 0:
                    ticks = -(-countdown // SCHEDULE_TICK_MS)
                    self._schedule(level, queue_offset, ticks * SCHEDULE_TICK_MS)
                    return
                delivered = self._deliver(level, queue_offset, commit_log_offset)
                if delivered is None:
                    continue  # gone from the commit log, or a half message: skipped
                if not delivered:
                    self._schedule(level, queue_offset, SCHEDULE_TICK_MS)
                    return
            cursor = entries[-1][0] + 1
        if cursor < store.max_offset(SCHEDULE_TOPIC, queue_id):
            self._schedule(level, cursor, SCHEDULE_TICK_MS)
        else:
            self._sleep(level, cursor)

    def _deliver(self, level: int, queue_offset: int, commit_log_offset: int) -> bool | None:
        """Deliver one due message (``syncDeliver``): True stored, False failed (retry later), None skipped."""
        msg = self.broker.store.look_message(commit_log_offset)
        if msg is None:
            return None
        try:
            inner = time_up(msg)
        except MalformedDelayedMessage:
            # executeOnTimeup's catch: the same entry is tried again on the next run.
            return False
        if inner.topic == TRANS_HALF_TOPIC:
            return None  # "[BUG] the real topic of schedule msg is RMQ_SYS_TRANS_HALF_TOPIC, discard the msg"
        result = self.broker.put_message(inner)
        if result.status is not PutMessageStatus.PUT_OK:
            return False
        self.offset_table[level] = queue_offset + 1
        return True

