"""Opening a store: the checkpoint, loading consume queues, checking the commit log and re-dispatching it (RocketMQ
4.9.8).

Modelled on ``DefaultMessageStore.load`` + ``recover`` with ``CommitLog.recoverAbnormally``,
``ConsumeQueue.load``/``truncateDirtyLogicFiles``, ``ReputMessageService`` from the checkpoint and
``recoverTopicQueueTable``. Recovery is always the abnormal one (a clean shutdown only says so through the abort
file, ``checkpoint.ABORT_PATH``):

- the checkpoint says up to which commit-log offset the consume queues on the disk can be trusted;
- consume queues are loaded (all of them rebuilt when their files have another size; after a gap or a short file,
  a queue's later files are deleted);
- commit-log segments are walked and checked (magic, sizes; CRC after the checkpoint); a torn tail is cut and later
  segments dropped (``truncateDirtyFiles``);
- consume queues are cut back to the recovered commit log, rebuilt by re-dispatching everything after the checkpoint,
  and their minimum offsets corrected against the commit log's first offset.
"""

from __future__ import annotations

import bisect
import urllib.parse

from rocketspec.refimpl import message as codec
from rocketspec.refimpl.disk import Disk
from rocketspec.refimpl.store.checkpoint import read_checkpoint
from rocketspec.refimpl.store.commit_log import COMMITLOG_DIR, CommitLog, _Segment, _segment_path
from rocketspec.refimpl.store.consume_queue import _CQ_UNIT, CONSUME_QUEUE_DIR, ConsumeQueueTable, _ConsumeQueue
from rocketspec.refimpl.store.housekeeping import clean_consume_queue
from rocketspec.refimpl.store.records import (
    _BLANK_MAGIC,
    _BLANK_MIN,
    _I32,
    _I64,
    _MAGIC,
    _NOT_DISPATCHED,
    _SIZE_MAGIC,
    _dispatch_fields,
    _tags_code,
    _verify_record,
)
from rocketspec.spec import protocol


def recover(commit_log: CommitLog, consume_queues: ConsumeQueueTable, delays: tuple[int, ...]) -> int:
    """Fill the empty ``commit_log`` and ``consume_queues`` from their disk (``delays``: the delay levels, for the
    tags codes of re-dispatched delayed messages). Returns the checkpoint the flushes go on from: -1 when it does not
    hold (none, unreadable, no consume queue to trust, or past the recovered commit log)."""
    disk = commit_log.disk
    checkpoint = read_checkpoint(disk)
    load_consume_queues(consume_queues)
    if not consume_queues.queues:
        checkpoint = -1  # nothing to trust: rebuild every queue from the commit log
    recover_commit_log(commit_log, max(checkpoint, 0))
    phy_max = commit_log.max_offset()
    for cq in consume_queues.queues.values():
        truncate_dirty_entries(disk, cq, phy_max)
    redispatch(commit_log, consume_queues, max(checkpoint, 0), delays)
    # recoverTopicQueueTable: correct every queue's min offset against the commit log's first offset.
    phy_min = commit_log.min_offset()
    for cq in consume_queues.queues.values():
        clean_consume_queue(disk, cq, phy_min)
    return checkpoint if checkpoint <= phy_max else -1


def load_consume_queues(consume_queues: ConsumeQueueTable) -> None:
    """``ConsumeQueue.load`` for every queue on the disk: whole entries of the files in order, up to the first gap or
    short file (later files deleted); all of them deleted when one was written with another file size."""
    disk = consume_queues.disk
    file_bytes = consume_queues.entries * _CQ_UNIT
    grouped: dict[tuple[str, int], list[tuple[int, str]]] = {}
    layout_ok = True
    for path in disk.list_files(CONSUME_QUEUE_DIR):
        parts = path[len(CONSUME_QUEUE_DIR):].split("/")
        try:
            if len(parts) != 3:
                raise ValueError(path)
            topic = urllib.parse.unquote(parts[0])
            queue_id = int(parts[1])
            start = int(parts[2])
        except ValueError:
            continue
        if start % file_bytes:
            layout_ok = False  # written with another file size: rebuild from the commit log
        grouped.setdefault((topic, queue_id), []).append((start, path))
    if not layout_ok:
        for files in grouped.values():
            for _, path in files:
                disk.delete(path)
        return
    for (topic, queue_id), files in grouped.items():
        files.sort()
        cq = consume_queues.create(topic, queue_id)
        cq.first_file = files[0][0] // file_bytes
        keep = True
        for position, (start, path) in enumerate(files):
            number = start // file_bytes
            if not keep or number != cq.first_file + len(cq.files):
                keep = False  # a gap or a torn file before: later files are not trusted
                disk.delete(path)
                continue
            data = disk.view(path)
            usable = min(len(data), file_bytes) // _CQ_UNIT * _CQ_UNIT
            if position >= len(files) - 3:
                # ConsumeQueue.recover (from the third last file): the queue ends at the first entry that is no
                # message (offset < 0 or size <= 0: bytes that never reached the disk read as zeros).
                usable = _entries_end(data, usable)
            if usable != len(data):
                disk.truncate(path, usable)
                data = disk.view(path)
            is_last = position == len(files) - 1
            if usable < file_bytes and not is_last:
                keep = False
            if usable < file_bytes or is_last:
                data = bytearray(data)  # the file that grows: our own copy
            cq.files.append(data)
            cq.flushed.append(len(data))
        if cq.files and len(cq.files[-1]) == 0 and len(cq.files) > 1:
            cq.files.pop()
            cq.flushed.pop()
        cq.max_offset = (cq.first_file + len(cq.files) - 1) * cq.entries + len(cq.files[-1]) // _CQ_UNIT


def _entries_end(data: bytes | bytearray, usable: int) -> int:
    """Where a consume-queue file's entries end: the first of its ``usable`` bytes' entries that is not
    ``offset >= 0 && size > 0`` (a blank entry padding a hole has size Integer.MAX_VALUE: it counts)."""
    pos = 0
    while pos < usable and _I64.unpack_from(data, pos)[0] >= 0 and _I32.unpack_from(data, pos + 8)[0] > 0:
        pos += _CQ_UNIT
    return pos


def truncate_dirty_entries(disk: Disk, cq: _ConsumeQueue, phy_max: int) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles``: drop entries pointing at or past the commit log's end."""
    while cq.files:
        data = cq.files[-1]
        count = len(data) // _CQ_UNIT
        keep = count
        while keep > 0 and _I64.unpack_from(data, (keep - 1) * _CQ_UNIT)[0] >= phy_max:
            keep -= 1
        if keep == count:
            break
        path = cq.file_path(cq.first_file + len(cq.files) - 1)
        if keep == 0 and len(cq.files) > 1:
            disk.delete(path)
            cq.files.pop()
            cq.flushed.pop()
            continue
        if not isinstance(data, bytearray):
            data = bytearray(data)
            cq.files[-1] = data
        del data[keep * _CQ_UNIT:]
        disk.truncate(path, keep * _CQ_UNIT)
        cq.flushed[-1] = min(cq.flushed[-1], len(data))
        break
    last = len(cq.files[-1]) // _CQ_UNIT if cq.files else 0
    cq.max_offset = (cq.first_file + len(cq.files) - 1) * cq.entries + last if cq.files else 0


def recover_commit_log(commit_log: CommitLog, verify_from: int) -> None:
    """Walk every segment: sizes and magic everywhere, full checks (CRC, field sizes) from ``verify_from``.
    Cut the first bad record and drop every later segment (``truncateDirtyFiles``)."""
    disk = commit_log.disk
    segment_bytes = commit_log.segment_bytes
    segments = commit_log.segments
    bases = []
    for path in disk.list_files(COMMITLOG_DIR):
        name = path[len(COMMITLOG_DIR):]
        if name.isdigit():
            bases.append(int(name))
    bases.sort()
    broken = False
    for index, base in enumerate(bases):
        path = _segment_path(base)
        if broken or (segments and base != segments[-1].base + segments[-1].capacity):
            broken = True  # after a cut, or not where the previous segment ends: not trusted
            disk.delete(path)
            continue
        data = disk.view(path)
        segment = _Segment(base, 0)
        pos = 0
        last_pos = -1
        end = len(data)
        while pos + 8 <= end:
            size, magic = _SIZE_MAGIC.unpack_from(data, pos)
            if magic == _BLANK_MAGIC:
                if size >= _BLANK_MIN:
                    segment.sealed = True
                    segment.capacity = pos + size
                    pos += _BLANK_MIN
                break
            if magic != _MAGIC or size < codec.STORED_FIXED_BYTES or pos + size > end:
                break
            if base + pos >= verify_from and not _verify_record(data, pos, size):
                break
            last_pos = pos
            segment.count += 1
            pos += size
        segment.length = pos
        segment.written = pos
        segment.flushed = pos
        if last_pos >= 0:
            segment.last_ts = _I64.unpack_from(
                data, last_pos + codec.STORE_TIMESTAMP_POS
                + (12 if _I32.unpack_from(data, last_pos + 36)[0] & protocol.SYSFLAG_BORNHOST_V6 else 0))[0]
        is_last = index == len(bases) - 1
        if not segment.sealed:
            if pos != end:
                disk.truncate(path, pos)  # a torn or corrupt tail
            if not is_last:
                broken = True
            segment.capacity = max(segment_bytes, -(-(pos + _BLANK_MIN) // segment_bytes) * segment_bytes)
            segment.data = bytearray(disk.view(path))  # the active segment grows: our own copy
        else:
            if pos != end:
                disk.truncate(path, pos)
            segment.data = disk.view(path)
        if segment.length == 0 and not segment.sealed:
            disk.delete(path)  # an empty file: the next put creates it again
            continue
        commit_log.adopt(segment)
    if segments and not segments[-1].sealed:
        commit_log.unflushed = [segments[-1]]


def redispatch(commit_log: CommitLog, consume_queues: ConsumeQueueTable, start: int, delays: tuple[int, ...]) -> None:
    """``ReputMessageService`` from the checkpoint: dispatch every message at or after ``start`` whose queue
    offset the consume queue does not have yet."""
    start = max(start, commit_log.min_offset())
    index = bisect.bisect_right(commit_log.bases, start) - 1
    if index < 0:
        index = 0
    for segment in commit_log.segments[index:]:
        data = segment.data
        pos = max(0, start - segment.base)
        end = segment.length - (_BLANK_MIN if segment.sealed else 0)
        while pos < end:
            size = _I32.unpack_from(data, pos)[0]
            topic, queue_id, queue_offset, sys_flag, store_ts, props = _dispatch_fields(data, pos, size)
            if sys_flag & protocol.SYSFLAG_TRANSACTION_MASK not in _NOT_DISPATCHED:
                cq = consume_queues.get(topic, queue_id)
                if cq is None:
                    cq = consume_queues.create(topic, queue_id)
                if queue_offset >= cq.max_offset:
                    if queue_offset > cq.max_offset:
                        if cq.max_offset == 0 and not cq.files:
                            cq.pad_to(queue_offset)
                        else:
                            while cq.max_offset < queue_offset:  # a hole: blank entries keep offsets aligned
                                cq.append(0, 0x7FFFFFFF, 0)
                    cq.append(segment.base + pos, size, _tags_code(topic, props, store_ts, delays))
                    consume_queues.dirty.add(cq)
            pos += size
