"""A push consumer's per-queue cache of pulled, not yet consumed messages (``ProcessQueue``).

``msg_tree`` holds the cached messages by queue offset (Java's ``msgTreeMap``); orderly consumption moves the batch
it works on into ``consuming_orderly`` (``consumingMsgOrderlyTreeMap``) until commit or rollback. The smallest cached
offset is what a concurrent consumer may commit: everything below it was consumed. The flags (dropped, locked and
the timestamps) are read by the pull loop, the rebalance and the orderly consume service.

Everything runs on the runtime loop, so the Java read/write lock is not needed; the orderly ``consumeLock`` is a flag
with waiters (``RebalancePushImpl.removeUnnecessaryMessageQueue`` tries it for up to 1 s).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sortedcontainers import SortedDict

from rocketspec.refimpl.message import MessageExt
from rocketspec.spec.protocol import CLIENT_LOCK_EXPIRY_MS, PULL_MAX_IDLE_MS, Property


class ProcessQueue:
    """``ProcessQueue`` of RocketMQ 4.9.8 on a sorted map; ``clock`` gives the runtime's milliseconds."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        now = clock()
        self.msg_tree: SortedDict = SortedDict()
        self.consuming_orderly: SortedDict = SortedDict()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.locked = False
        self.last_lock_timestamp = now
        self.last_pull_timestamp = now
        self.last_consume_timestamp = now
        self.consuming = False
        self.msg_acc_cnt = 0
        self.try_unlock_times = 0
        self._consume_lock_held = False
        self._lock_waiters: list[Callable[[], None]] = []

    # --------------------------------------------------------------------------------------------- timing checks
    def is_lock_expired(self) -> bool:
        """The client-side lock is trusted for 30 s after the last successful broker lock."""
        return self._clock() - self.last_lock_timestamp > CLIENT_LOCK_EXPIRY_MS

    def is_pull_expired(self) -> bool:
        """No pull for more than 120 s: the rebalance drops and re-adds the queue (push consumers)."""
        return self._clock() - self.last_pull_timestamp > PULL_MAX_IDLE_MS

    # --------------------------------------------------------------------------------------------- caching
    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """``putMessage``: cache only new offsets; True when a consume request must be dispatched.

        The dispatch flag is set (and ``consuming`` raised) when the cache is non-empty and no orderly consume loop
        is running; ``queue_offset_max`` is the offset of the last newly cached message, as in Java.
        """
        msgs = list(msgs)
        valid = 0
        for msg in msgs:
            if msg.queue_offset not in self.msg_tree:
                self.msg_tree[msg.queue_offset] = msg
                valid += 1
                self.queue_offset_max = msg.queue_offset
                self.msg_size += len(msg.body)
            else:
                self.msg_tree[msg.queue_offset] = msg
        self.msg_count += valid
        dispatch = False
        if self.msg_tree and not self.consuming:
            dispatch = True
            self.consuming = True
        if msgs:
            max_offset = msgs[-1].properties.get(Property.MAX_OFFSET)
            if max_offset is not None:
                acc = int(max_offset) - msgs[-1].queue_offset
                if acc > 0:
                    self.msg_acc_cnt = acc
        return dispatch

    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """``removeMessage``: -1 if the cache was empty, else the smallest remaining offset, or
        ``queue_offset_max + 1`` when nothing remains (the offset a concurrent consumer commits)."""
        self.last_consume_timestamp = self._clock()
        if not self.msg_tree:
            return -1
        result = self.queue_offset_max + 1
        removed = 0
        for msg in msgs:
            if self.msg_tree.pop(msg.queue_offset, None) is not None:
                removed += 1
                self.msg_size -= len(msg.body)
        self.msg_count -= removed
        if self.msg_count == 0:
            self.msg_size = 0
        if self.msg_tree:
            result = self.msg_tree.keys()[0]
        return result

    def max_span(self) -> int:
        """Offset distance between the first and last cached message (flow control of concurrent consumers)."""
        if not self.msg_tree:
            return 0
        keys = self.msg_tree.keys()
        return int(keys[-1] - keys[0])

    def has_temp_message(self) -> bool:
        return bool(self.msg_tree)

    def clear(self) -> None:
        """Forget every cached message (lite pull ``seek``)."""
        self.msg_tree.clear()
        self.consuming_orderly.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    # --------------------------------------------------------------------------------------------- orderly
    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """``takeMessages``: move up to ``batch_size`` first messages into the consuming map; when there are
        none, the consume loop ends (``consuming`` False)."""
        self.last_consume_timestamp = self._clock()
        result: list[MessageExt] = []
        while self.msg_tree and len(result) < batch_size:
            offset, msg = self.msg_tree.popitem(0)
            result.append(msg)
            self.consuming_orderly[offset] = msg
        if not result:
            self.consuming = False
        return result

    def commit(self) -> int:
        """``commit``: the consumed batch leaves the cache; returns the offset after it (-1 if there was none)."""
        if not self.consuming_orderly:
            return -1
        offset = self.consuming_orderly.keys()[-1]
        self.msg_count -= len(self.consuming_orderly)
        if self.msg_count == 0:
            self.msg_size = 0
        else:
            for msg in self.consuming_orderly.values():
                self.msg_size -= len(msg.body)
        self.consuming_orderly.clear()
        return int(offset) + 1

    def rollback(self) -> None:
        """``rollback``: the consuming batch goes back into the cache."""
        for offset, msg in self.consuming_orderly.items():
            self.msg_tree[offset] = msg
        self.consuming_orderly.clear()

    def make_message_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """``makeMessageToConsumeAgain``: these messages (possibly with a new reconsume count) are cached again."""
        for msg in msgs:
            self.consuming_orderly.pop(msg.queue_offset, None)
            self.msg_tree[msg.queue_offset] = msg

    # --------------------------------------------------------------------------------------------- consume lock
    @property
    def consume_lock_held(self) -> bool:
        return self._consume_lock_held

    def try_consume_lock(self) -> bool:
        """Take the orderly consume lock if it is free."""
        if self._consume_lock_held:
            return False
        self._consume_lock_held = True
        return True

    def release_consume_lock(self) -> None:
        self._consume_lock_held = False
        waiters, self._lock_waiters = self._lock_waiters, []
        for waiter in waiters:
            waiter()

    def on_consume_lock_released(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once the lock is next released (used by a timed tryLock)."""
        self._lock_waiters.append(fn)

    def forget_lock_waiter(self, fn: Callable[[], None]) -> None:
        if fn in self._lock_waiters:
            self._lock_waiters.remove(fn)

    def __repr__(self) -> str:
        return (f"ProcessQueue(count={self.msg_count}, dropped={self.dropped}, locked={self.locked}, "
                f"consuming={self.consuming}, first={self.msg_tree.keys()[0] if self.msg_tree else None})")
