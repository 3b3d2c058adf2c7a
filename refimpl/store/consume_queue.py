"""Consume queues: one per (topic, queue id), and the table of them (RocketMQ 4.9.8).

Modelled on ``ConsumeQueue`` and ``DefaultMessageStore.consumeQueueTable``. A consume queue holds 20-byte entries
(commit-log offset int64, size int32, tags code int64) in files of ``cq_segment_entries`` entries under
``consumequeue/<topic>/<queue id>/``, each named by its first entry's byte offset. Dispatch
(``CommitLogDispatcherBuildConsumeQueue``) is synchronous: the put path appends the entry before the put returns.

``ConsumeQueueTable`` owns the queues, knows which have entries not yet written to the disk (``dirty``) and writes
them (``flush``); when that happens is ``flush.FlushService``'s decision, and which queues or files go is
``housekeeping``'s.
"""

from __future__ import annotations

import struct
import urllib.parse

from rocketspec.refimpl.disk import Disk
from rocketspec.refimpl.store.records import _I64
from rocketspec.spec import protocol

CONSUME_QUEUE_DIR = "consumequeue/"

_CQ_ENTRY = struct.Struct(">qiq")  # commit-log offset, size, tags code (ConsumeQueue.CQ_STORE_UNIT_SIZE = 20)
_CQ_UNIT = protocol.CONSUME_QUEUE_ENTRY_BYTES
_BLANK_CQ_ENTRY = _CQ_ENTRY.pack(0, 0x7FFFFFFF, 0)  # ConsumeQueue.fillPreBlank


def _topic_dir(topic: str) -> str:
    # Topic names become directory names: escape everything that is not a plain name character (and dots, so that
    # "." and ".." stay harmless).
    return urllib.parse.quote(topic, safe="").replace(".", "%2E")


class _ConsumeQueue:
    """``ConsumeQueue``: 20-byte entries in files of ``entries`` entries; file k holds queue offsets
    [k*entries, (k+1)*entries). ``min_logic`` is ``minLogicOffset`` as a queue offset."""

    __slots__ = ("dir", "entries", "file_bytes", "files", "first_file", "flushed", "max_offset", "min_logic",
                 "queue_id", "topic")

    def __init__(self, topic: str, queue_id: int, entries: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.entries = entries
        self.file_bytes = entries * _CQ_UNIT
        self.dir = f"{CONSUME_QUEUE_DIR}{_topic_dir(topic)}/{queue_id}/"
        self.files: list[bytes | bytearray] = []
        self.flushed: list[int] = []
        self.first_file = 0
        self.max_offset = 0
        self.min_logic = 0

    def file_path(self, number: int) -> str:
        return f"{self.dir}{number * self.file_bytes:020d}"

    def append(self, commit_log_offset: int, size: int, tags_code: int) -> None:
        files = self.files
        if not files or len(files[-1]) >= self.file_bytes:
            if not files:
                self.first_file = self.max_offset // self.entries
            files.append(bytearray())
            self.flushed.append(0)
        last = files[-1]
        last += _CQ_ENTRY.pack(commit_log_offset, size, tags_code)
        self.max_offset += 1

    def pad_to(self, queue_offset: int) -> None:
        """Start an empty queue at ``queue_offset`` (blank entries before it in its file, as ``fillPreBlank``)."""
        self.first_file = queue_offset // self.entries
        blanks = queue_offset - self.first_file * self.entries
        self.files = [bytearray(_BLANK_CQ_ENTRY * blanks)]
        self.flushed = [0]
        self.max_offset = queue_offset
        self.min_logic = queue_offset

    def entry(self, queue_offset: int) -> tuple[int, int, int] | None:
        index = queue_offset // self.entries - self.first_file
        if index < 0 or index >= len(self.files) or queue_offset >= self.max_offset:
            return None
        return _CQ_ENTRY.unpack_from(self.files[index], (queue_offset % self.entries) * _CQ_UNIT)

    def first_at_or_above(self, file_index: int, commit_log_offset: int) -> int | None:
        """Index (within the file) of the first entry whose commit-log offset is ≥ the given one (entries are in
        commit-log order), or None."""
        data = self.files[file_index]
        lo, hi = 0, len(data) // _CQ_UNIT
        while lo < hi:
            mid = (lo + hi) // 2
            if _I64.unpack_from(data, mid * _CQ_UNIT)[0] < commit_log_offset:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(data) // _CQ_UNIT else None


class ConsumeQueueTable:
    """``consumeQueueTable``: the consume queues by (topic, queue id) and by topic, and the set of queues with entries
    not yet written to the disk. A queue is created when it gets its first entry or is loaded from the disk, with
    ``entries`` entries to a file (``cq_segment_entries`` at that moment)."""

    def __init__(self, disk: Disk, entries: int) -> None:
        self.disk = disk
        self.entries = entries
        self.queues: dict[tuple[str, int], _ConsumeQueue] = {}
        self.topics: dict[str, dict[int, _ConsumeQueue]] = {}
        self.dirty: set[_ConsumeQueue] = set()

    def __len__(self) -> int:
        return len(self.queues)

    def get(self, topic: str, queue_id: int) -> _ConsumeQueue | None:
        return self.queues.get((topic, queue_id))

    def create(self, topic: str, queue_id: int) -> _ConsumeQueue:
        cq = _ConsumeQueue(topic, queue_id, self.entries)
        self.queues[(topic, queue_id)] = cq
        self.topics.setdefault(topic, {})[queue_id] = cq
        return cq

    def destroy(self, cq: _ConsumeQueue) -> None:
        """Forget a queue and delete its files (``ConsumeQueue.destroy``); a topic left without queues goes too. Its
        next queue offset goes with it: created again, the queue starts at 0."""
        queues = self.topics.get(cq.topic)
        if queues is not None:
            queues.pop(cq.queue_id, None)
            if not queues:
                del self.topics[cq.topic]
        self.queues.pop((cq.topic, cq.queue_id), None)
        self.dirty.discard(cq)
        for path in self.disk.list_files(cq.dir):
            self.disk.delete(path)

    def flush(self, later: list[str] | None = None) -> None:
        """Write the dirty queues' new entries and flush them now, or (``later``) collect the files to flush off the
        loop. A full file that is written is then read from the disk's view of it: no second copy stays in memory."""
        if not self.dirty:
            return
        disk = self.disk
        for cq in self.dirty:
            files = cq.files
            for index, data in enumerate(files):
                done = cq.flushed[index]
                if done < len(data):
                    path = cq.file_path(cq.first_file + index)
                    disk.append(path, bytes(memoryview(data)[done:]))
                    if later is None:
                        disk.flush(path)
                    else:
                        later.append(path)
                    cq.flushed[index] = len(data)
                if index < len(files) - 1 and isinstance(data, bytearray):
                    files[index] = disk.view(cq.file_path(cq.first_file + index))
        self.dirty = set()
