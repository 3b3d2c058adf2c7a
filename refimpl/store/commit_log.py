"""The commit log: its segments, where a put goes, reading records back, and handing bytes to the disk (RocketMQ 4.9.8).

Modelled on ``CommitLog`` over a ``MappedFileQueue`` of ``MappedFile``s. The commit log is a sequence of segments
("mapped files") of ``segment_bytes``, named by their start offset under ``commitlog/``. A message never spans
segments: when it does not fit (with the 8-byte end-of-file blank, ``END_FILE_MIN_BLANK_LENGTH``) the segment is
closed with a BLANK record and a new one starts at the next multiple of ``segment_bytes``. A message larger than a
segment gets a segment of its own, rounded up to whole multiples.

``CommitLog`` owns the segments and knows nothing of consume queues, timers or listeners: the store's put path
(``writing``) encodes and appends, ``flush.FlushService`` decides when ``write`` and ``flush`` run, ``housekeeping``
drops old segments and ``recovery`` rebuilds the segments from the disk (``adopt``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from rocketspec.refimpl import message as codec
from rocketspec.refimpl.disk import Disk
from rocketspec.refimpl.store.records import (
    _BLANK_MAGIC,
    _BLANK_MIN,
    _I32,
    _I64,
    _MAGIC,
    _SIZE_MAGIC,
    _dispatch_fields,
)
from rocketspec.refimpl.store.values import StoredRecord
from rocketspec.spec import protocol

COMMITLOG_DIR = "commitlog/"


def _segment_path(base: int) -> str:
    return f"{COMMITLOG_DIR}{base:020d}"


class _Segment:
    """One commit-log file. ``data`` is a bytearray while it can grow or has unflushed bytes; once sealed and flushed
    it is the disk's view of the file (no second copy)."""

    __slots__ = ("base", "capacity", "count", "data", "flushed", "last_ts", "length", "path", "sealed", "written")

    def __init__(self, base: int, capacity: int) -> None:
        self.base = base
        self.capacity = capacity
        self.path = _segment_path(base)
        self.data: bytes | bytearray = bytearray()
        self.length = 0
        self.written = 0  # handed to the disk (the page cache)
        self.flushed = 0  # flushed by the disk (fsync)
        self.sealed = False
        self.last_ts = -1
        self.count = 0


class CommitLog:
    """``CommitLog``: the segments in offset order (``bases`` mirrors their start offsets for bisection), those with
    bytes not yet flushed (``unflushed``: the active segment and any sealed since the last flush) and the number of
    messages they hold."""

    def __init__(self, disk: Disk, segment_bytes: int) -> None:
        self.disk = disk
        self.segment_bytes = segment_bytes
        self.segments: list[_Segment] = []
        self.bases: list[int] = []
        self.unflushed: list[_Segment] = []
        self.messages = 0

    # ---- appending ----------------------------------------------------------------------------------------------

    def segment_for(self, size: int) -> _Segment:
        """The segment the next ``size`` bytes go to (``MappedFileQueue.getLastMappedFile`` + END_OF_FILE roll)."""
        segments = self.segments
        if segments:
            last = segments[-1]
            if not last.sealed and last.length + size + _BLANK_MIN <= last.capacity:
                return last
            if not last.sealed:
                # DefaultAppendMessageCallback: maxBlank total size + BLANK_MAGIC_CODE, the rest of the file unused.
                last.data += _SIZE_MAGIC.pack(last.capacity - last.length, _BLANK_MAGIC)
                last.length += _BLANK_MIN
                last.sealed = True
                if last not in self.unflushed:
                    self.unflushed.append(last)
            base = last.base + last.capacity
        else:
            base = 0
        capacity = self.segment_bytes
        if size + _BLANK_MIN > capacity:
            capacity = -(-(size + _BLANK_MIN) // self.segment_bytes) * self.segment_bytes
        segment = _Segment(base, capacity)
        segments.append(segment)
        self.bases.append(base)
        self.unflushed.append(segment)
        return segment

    def appended(self, segment: _Segment, size: int, count: int, store_timestamp: int) -> None:
        """Count ``count`` messages, ``size`` bytes in all, just added to ``segment.data`` at ``store_timestamp``
        (the segment's last store time is what expiry goes by)."""
        segment.length += size
        segment.last_ts = store_timestamp
        segment.count += count
        self.messages += count

    def adopt(self, segment: _Segment) -> None:
        """Take a segment recovery read back from the disk as the next one."""
        self.segments.append(segment)
        self.bases.append(segment.base)
        self.messages += segment.count

    def drop_first(self) -> None:
        """Delete the oldest segment, file and all, and forget its messages."""
        segment = self.segments.pop(0)
        self.bases.pop(0)
        if segment in self.unflushed:
            self.unflushed.remove(segment)
        self.messages -= segment.count
        self.disk.delete(segment.path)

    # ---- handing bytes to the disk ------------------------------------------------------------------------------

    def write(self) -> None:
        """Hand the bytes appended since the last call to the disk (a mapped file's page cache: a crash of the process
        does not lose them, a power loss does until they are flushed)."""
        disk = self.disk
        for segment in self.unflushed:
            if segment.written < segment.length:
                disk.append(segment.path, bytes(memoryview(segment.data)[segment.written:segment.length]))
                segment.written = segment.length

    def flush(self, later: list[str] | None = None) -> None:
        """Write and flush every unflushed segment now, or (``later``) collect the files to flush off the loop. A
        sealed segment is then read from the disk's view of its file: no second copy stays in memory."""
        unflushed = self.unflushed
        disk = self.disk
        for segment in unflushed:
            if segment.written < segment.length:
                disk.append(segment.path, bytes(memoryview(segment.data)[segment.written:segment.length]))
                segment.written = segment.length
            if segment.flushed < segment.written:
                if later is None:
                    disk.flush(segment.path)
                else:
                    later.append(segment.path)
                segment.flushed = segment.written
            if segment.sealed:
                segment.data = disk.view(segment.path)  # read the sealed file from the disk: no second copy
        if unflushed:
            last = self.segments[-1] if self.segments else None
            self.unflushed = [last] if last is not None and not last.sealed else []

    def has_unflushed(self) -> bool:
        """Whether some bytes are not flushed yet."""
        return any(segment.flushed < segment.length for segment in self.unflushed)

    # ---- reading ------------------------------------------------------------------------------------------------

    def min_offset(self) -> int:
        """``CommitLog.getMinOffset``: start of the first segment (0 when empty)."""
        return self.segments[0].base if self.segments else 0

    def max_offset(self) -> int:
        """``CommitLog.getMaxOffset``: end of the written data."""
        if not self.segments:
            return 0
        last = self.segments[-1]
        return last.base + (last.capacity if last.sealed else last.length)

    def total_bytes(self) -> int:
        """Bytes written to the segments that are left, blanks included."""
        return sum(segment.length for segment in self.segments)

    def segment_at(self, phy: int) -> _Segment | None:
        """The segment holding written data at this offset, or None."""
        index = bisect.bisect_right(self.bases, phy) - 1
        if index < 0:
            return None
        segment = self.segments[index]
        return segment if phy < segment.base + segment.length else None

    def read(self, phy: int, size: int) -> bytes | None:
        """``CommitLog.getMessage(offset, size)``: None when the bytes are not (or no longer) in the commit log."""
        segment = self.segment_at(phy)
        if segment is None or size <= 0:
            return None
        pos = phy - segment.base
        if pos + size > segment.length:
            return None
        data = segment.data
        if isinstance(data, bytes):
            return data[pos:pos + size]
        return bytes(memoryview(data)[pos:pos + size])

    def look_bytes(self, commit_log_offset: int) -> bytes | None:
        """``selectOneMessageByOffset``: the stored bytes of the message at this offset, or None (not a message's
        start: a bad magic code or size)."""
        segment = self.segment_at(commit_log_offset)
        if segment is None:
            return None
        pos = commit_log_offset - segment.base
        if pos + 8 > segment.length:
            return None
        size, magic = _SIZE_MAGIC.unpack_from(segment.data, pos)
        if magic != _MAGIC or size < codec.STORED_FIXED_BYTES:
            return None
        return self.read(commit_log_offset, size)

    def store_timestamp(self, phy: int, size: int) -> int:
        """``CommitLog.pickupStoreTimestamp``: -1 when the message is gone, or not whole within the written data
        (``getMessage(offset, size)`` selects nothing past the read position)."""
        segment = self.segment_at(phy)
        if segment is None:
            return -1
        pos = phy - segment.base
        if pos + size > segment.length or size < codec.STORED_FIXED_BYTES:
            return -1
        sys_flag = _I32.unpack_from(segment.data, pos + 36)[0]
        ts_pos = codec.STORE_TIMESTAMP_POS + (12 if sys_flag & protocol.SYSFLAG_BORNHOST_V6 else 0)
        return _I64.unpack_from(segment.data, pos + ts_pos)[0]

    def earliest_store_timestamp(self) -> int:
        """Store time of the first message of the commit log; -1 when there is none."""
        if not self.segments or self.segments[0].length < codec.STORED_FIXED_BYTES:
            return -1
        first = self.segments[0]
        return self.store_timestamp(first.base, _I32.unpack_from(first.data, 0)[0])

    def records(self) -> Iterator[StoredRecord]:
        """Every message, oldest first (the segments as they are when the walk starts)."""
        for segment in list(self.segments):
            data = segment.data
            pos = 0
            end = segment.length - (_BLANK_MIN if segment.sealed else 0)
            while pos < end:
                size = _I32.unpack_from(data, pos)[0]
                topic, queue_id, _, sys_flag, store_ts, props = _dispatch_fields(data, pos, size)
                yield StoredRecord(topic, queue_id, segment.base + pos, size, sys_flag, store_ts, props)
                pos += size
