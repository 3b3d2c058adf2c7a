"""The message index: messages by key and by unique key (``IndexService`` / ``IndexFile`` of RocketMQ 4.9.8), and the
query the broker answers QUERY_MESSAGE with (``DefaultMessageStore.queryMessage``).

Rules, as 4.9.8 builds and reads its index:

- Every message written to the commit log is indexed (``CommitLogDispatcherBuildIndex``, ``messageIndexEnable``),
  except rolled-back transaction messages: under ``<topic>#<UNIQ_KEY>`` and under ``<topic>#<k>`` for every non-empty
  ``k`` of ``KEYS`` split on a space (``KEY_SEPARATOR``). The topic is the one stored, so a delayed message is indexed
  under SCHEDULE_TOPIC_XXXX while it waits and under its real topic once delivered; a half message under
  RMQ_SYS_TRANS_HALF_TOPIC, the committed one under its topic.
- An entry is (key hash, commit-log offset, seconds since the index's first entry). The hash is Java's
  ``String.hashCode`` made non-negative (``indexKeyHashMethod``); a slot (hash mod ``hashSlotNum``) chains entries
  newest first. A lookup walks the key's slot and takes every entry whose *hash* equals the key's and whose time is
  in ``[begin, end]`` (time read back at second granularity: begin timestamp + whole seconds), stopping at ``maxNum``
  (at most ``maxMsgsNumBatch`` = 64) or at the first entry older than ``begin``. Equal hashes of different keys are
  returned too: clients drop messages whose keys do not match (``MQAdminImpl.queryMessage``).
- ``query`` sorts the offsets found, answers the stored bytes of each message still in the commit log, and tries up to
  three times with an earlier end when none is (``DefaultMessageStore.queryMessage``). The last-update timestamp and
  commit-log offset (of the newest entry) are reported only when something was found, else 0 and 0.

Deliberate simplifications: one index "file" without the 20,000,000-entry limit, kept in memory and rebuilt from the
commit log when the store recovers (4.9.8 persists index files; the content it queries is the same, as both cover
exactly the messages in the commit log). Entries whose message was deleted stay and are skipped when read.
"""

from __future__ import annotations

import weakref
from typing import Any

import attrs

from rocketspec.refimpl.message import java_string_hash
from rocketspec.refimpl.store import MessageStore, StoredRecord
from rocketspec.spec.protocol import (
    INDEX_HASH_SLOT_NUM,
    KEY_SEPARATOR,
    MAX_MSGS_NUM_BATCH,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
)

# Query attempts with an earlier end time when every message found is gone (DefaultMessageStore.queryMessage).
_QUERY_ATTEMPTS = 3


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: ``Math.abs(key.hashCode())``, 0 for Integer.MIN_VALUE."""
    value = abs(java_string_hash(key))
    return 0 if value > 0x7FFFFFFF else value


def build_key(topic: str, key: str) -> str:
    """``IndexService.buildKey``."""
    return f"{topic}#{key}"


@attrs.frozen
class QueryResult:
    """``QueryMessageResult``: the stored bytes of every message found, and where the index was last updated."""

    messages: tuple[bytes, ...] = ()
    index_last_update_timestamp: int = 0
    index_last_update_phy_offset: int = 0

    @property
    def buffer_total_size(self) -> int:
        return sum(len(data) for data in self.messages)


@attrs.define
class _Entry:
    key_hash: int
    commit_log_offset: int
    time_diff_s: int


@attrs.frozen
class _SavedIndex:
    """An index as a stopped broker left it (see :meth:`IndexService.save`)."""

    hash_slot_num: int
    log_end: int  # the commit log's end when the index was left
    slots: dict[int, list[_Entry]]
    count: int
    begin_timestamp: int
    end_timestamp: int
    end_phy_offset: int


#: The index each disk holds, keyed weakly by the disk: it goes when the disk goes.
_SAVED: weakref.WeakKeyDictionary[Any, _SavedIndex] = weakref.WeakKeyDictionary()


class IndexService:
    """The index of one store: fed by the store's dispatch of every write; at start taken over from the broker that
    stopped on the same disk, or rebuilt from the commit log."""

    def __init__(self, store: MessageStore, *, enabled: bool = True, hash_slot_num: int = INDEX_HASH_SLOT_NUM,
                 max_msgs_num_batch: int = MAX_MSGS_NUM_BATCH) -> None:
        self.store = store
        self.enabled = enabled
        self.hash_slot_num = hash_slot_num
        self.max_msgs_num_batch = max_msgs_num_batch
        self._slots: dict[int, list[_Entry]] = {}  # slot → entries, oldest first (read backwards)
        self._count = 0
        self.begin_timestamp = 0
        self.end_timestamp = 0
        self.end_phy_offset = 0
        if enabled:
            saved = _SAVED.pop(store.disk, None)
            if saved is None or not self._resume(saved):
                for record in store.records():
                    self.build_index(record)
        store.add_dispatcher(self.build_index)

    def _resume(self, saved: _SavedIndex) -> bool:
        """Take over the index a stopped broker left on this disk, when it is what rebuilding it from the commit log
        would give: the same settings and the commit log as it was when the index was left (nothing lost in a crash,
        nothing deleted: a rebuild would leave those out and start its times at the first message kept)."""
        if (saved.hash_slot_num != self.hash_slot_num or self.store.commit_log_min_offset() != 0
                or self.store.commit_log_max_offset() != saved.log_end):
            return False
        self._slots, self._count = saved.slots, saved.count
        self.begin_timestamp, self.end_timestamp, self.end_phy_offset = (
            saved.begin_timestamp, saved.end_timestamp, saved.end_phy_offset)
        return True

    def save(self) -> None:
        """Leave the index with the disk when the broker stops (``IndexFile`` is on disk in RocketMQ): the next
        broker on this disk takes it over instead of re-indexing the whole commit log, whose cost grows with every
        restart of a long run."""
        if self.enabled:
            _SAVED[self.store.disk] = _SavedIndex(self.hash_slot_num, self.store.commit_log_max_offset(), self._slots,
                                                  self._count, self.begin_timestamp, self.end_timestamp,
                                                  self.end_phy_offset)

    # ------------------------------------------------------------------------------------------------- building
    def build_index(self, record: StoredRecord) -> None:
        """``IndexService.buildIndex``: index the unique key and every key of one written message."""
        if not self.enabled or record.commit_log_offset < self.end_phy_offset:
            return
        if record.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_ROLLBACK_TYPE:
            return
        uniq = record.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if uniq is not None:
            self._put_key(build_key(record.topic, uniq), record)
        keys = record.properties.get(Property.KEYS)
        if keys:
            for key in keys.split(KEY_SEPARATOR):
                if key:
                    self._put_key(build_key(record.topic, key), record)

    def _put_key(self, key: str, record: StoredRecord) -> None:
        """``IndexFile.putKey``: the time is kept in whole seconds after the first entry's store time."""
        key_hash = index_key_hash(key)
        if self._count == 0:
            time_diff = 0
        else:
            time_diff = min(max((record.store_timestamp - self.begin_timestamp) // 1000, 0), 0x7FFFFFFF)
        self._slots.setdefault(key_hash % self.hash_slot_num, []).append(
            _Entry(key_hash, record.commit_log_offset, time_diff))
        if self._count == 0:
            self.begin_timestamp = record.store_timestamp
        self._count += 1
        self.end_phy_offset = record.commit_log_offset
        self.end_timestamp = record.store_timestamp

    # ------------------------------------------------------------------------------------------------- reading
    def _time_matched(self, begin: int, end: int) -> bool:
        """``IndexFile.isTimeMatched``: the index's time range overlaps [begin, end]."""
        first, last = self.begin_timestamp, self.end_timestamp
        return ((begin < first and end > last) or first <= begin <= last or first <= end <= last)

    def query_offsets(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """``IndexService.queryOffset`` → ``IndexFile.selectPhyOffset``: commit-log offsets, newest first."""
        max_num = min(max_num, self.max_msgs_num_batch)
        found: list[int] = []
        if self._count == 0 or not self._time_matched(begin, end):
            return found
        key_hash = index_key_hash(build_key(topic, key))
        chain = self._slots.get(key_hash % self.hash_slot_num, [])
        for entry in reversed(chain):
            if len(found) >= max_num:
                break
            time_read = self.begin_timestamp + entry.time_diff_s * 1000
            if entry.key_hash == key_hash and begin <= time_read <= end:
                found.append(entry.commit_log_offset)
            if time_read < begin:
                break
        return found

    def query(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryResult:
        """``DefaultMessageStore.queryMessage``: the stored messages found, in commit-log order."""
        messages: list[bytes] = []
        last_timestamp = last_offset = 0
        end_time = end
        for _ in range(_QUERY_ATTEMPTS):
            offsets = sorted(self.query_offsets(topic, key, max_num, begin, end_time))
            if not offsets:
                break
            last_timestamp, last_offset = self.end_timestamp, self.end_phy_offset
            for position, offset in enumerate(offsets):
                data = self.store.look_message_bytes(offset)
                if data is None:
                    continue  # lookMessageByOffset failed: logged and skipped in 4.9.8
                if position == 0:
                    found = self.store.look_message(offset)
                    if found is not None:
                        end_time = found.store_timestamp
                messages.append(data)
            if messages or end_time < begin:
                break
        return QueryResult(tuple(messages), last_timestamp, last_offset)


__all__ = ["IndexService", "QueryResult", "build_key", "index_key_hash"]
