"""Edges of the message store (refimpl/store/) that the broad store tests do not reach: a consume queue rebuilt
from a commit log whose head was deleted, a queue left empty by recovery, store times of records that are not whole,
recovery of IPv6 records and of a record whose topic runs past its end (RocketMQ 4.9.8)."""

from __future__ import annotations

import struct

from test_refimpl_store import T, bodies, make_store, put

from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.refimpl.store import (
    CHECKPOINT_PATH,
    GetMessageResult,
    MemoryDisk,
    MessageStore,
    MessageToStore,
    PutResult,
)
from rocketspec.spec.protocol import GetMessageStatus

_CQ_UNIT = 20  # ConsumeQueue.CQ_STORE_UNIT_SIZE
_BODY_AT = 88  # where the body starts in a stored message with IPv4 hosts (after BODYLENGTH)


# ---- a consume queue rebuilt after deletion ---------------------------------------------------------------------


def test_a_queue_rebuilt_after_deletion_starts_at_its_first_surviving_message() -> None:
    """``ConsumeQueue.putMessagePositionInfo`` rebuilding a lost queue from a commit log whose head was deleted: its
    first entry is written at its own queue offset (``fillPreBlank`` pads the file before it) and becomes
    ``minLogicOffset``; the entries, min and max offsets are the ones lost, pulls below the min are OFFSET_TOO_SMALL,
    and the padded file loads back the same after another restart."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    config: dict[str, object] = {"disk": disk, "segment_bytes": 4096, "cq_segment_entries": 10}
    store = make_store(runtime, **config)
    for i in range(30):
        put(store, body=b"m%02d" % i + b"x" * 400)  # 503 bytes: 8 to a 4 KiB segment
    assert store.delete_oldest_segments(2) == 2
    assert (store.min_offset(T, 0), store.max_offset(T, 0)) == (16, 30)  # 16: six blank entries in file 1
    entries = store.queue_entries(T, 0, 0, 100)
    store.close()
    for path in [*disk.list_files("consumequeue/"), CHECKPOINT_PATH]:
        disk.delete(path)
    for _ in ("rebuilt", "loaded back"):
        reopened = make_store(runtime, **config)
        assert (reopened.min_offset(T, 0), reopened.max_offset(T, 0)) == (16, 30)
        assert reopened.queue_entries(T, 0, 0, 100) == entries
        result = reopened.get_message(T, 0, 16, 32)  # up to the end of the consume-queue file holding 16
        assert (result.status, result.next_begin_offset, result.queue_offsets) == (
            GetMessageStatus.FOUND, 20, (16, 17, 18, 19))
        assert [body[:3] for body in bodies(result)] == [b"m16", b"m17", b"m18", b"m19"]
        assert reopened.get_message(T, 0, 15, 32) == GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, 16, 16, 30)
        reopened.close()
    assert put(make_store(runtime, **config)).queue_offset == 30


# ---- a queue left without entries by recovery -------------------------------------------------------------------


def _queue_emptied_by_recovery() -> tuple[MessageStore, PutResult]:
    """Queue 1's only message is lost from the commit log while its consume-queue entry is on disk: recovery
    (``ConsumeQueue.truncateDirtyLogicFiles``) drops the entry and the queue is left without any."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk)
    put(store, queue_id=0)
    lost = put(store, queue_id=1)
    store.close()
    disk.truncate(disk.list_files("commitlog/")[0], lost.commit_log_offset)
    return make_store(runtime, disk=disk), lost


def test_a_pull_from_a_queue_emptied_by_recovery_is_told_to_start_at_0() -> None:
    """``DefaultMessageStore.getMessage`` on a queue whose max offset is 0: NO_MESSAGE_IN_QUEUE with next begin
    offset ``nextOffsetCorrection(offset, 0)``, i.e. 0 on a master, whatever offset was asked; the queue's next
    message gets queue offset 0."""
    store, _ = _queue_emptied_by_recovery()
    empty = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
    assert store.get_message(T, 1, 0, 32) == empty
    assert store.get_message(T, 1, 5, 32) == empty
    assert put(store, queue_id=1).queue_offset == 0


def test_offset_by_time_of_a_queue_emptied_by_recovery_is_0() -> None:
    """``ConsumeQueue.getOffsetInQueueByTime`` on a queue without entries answers 0 (not -1, not the max offset),
    even for the store time its lost message had."""
    store, lost = _queue_emptied_by_recovery()
    assert store.offset_by_time(T, 1, lost.store_timestamp) == 0
    assert store.offset_by_time(T, 1, 0) == 0
    assert store.message_store_timestamp(T, 1, 0) == -1


# ---- store times of records that are not whole ------------------------------------------------------------------


def test_an_entry_whose_message_is_not_whole_in_the_commit_log_has_no_store_time() -> None:
    """``CommitLog.pickupStoreTimestamp``: the entry's bytes must lie within the commit log's written data
    (``MappedFile.selectMappedBuffer`` answers null past the read position), else the store time is -1; and
    ``getOffsetInQueueByTime`` answers 0 when its search meets such an entry. Here a consume-queue entry on disk points
    8 bytes before the commit log's end (still below it, so recovery keeps it), then one whose fixed fields are
    written but whose body runs past the end."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk)
    results = []
    for _ in range(3):
        results.append(put(store))
        runtime.advance(100)
    store.close()
    end = results[-1].commit_log_offset + results[-1].size
    cq_file = disk.files[disk.list_files("consumequeue/")[0]]
    struct.pack_into(">q", cq_file, 2 * _CQ_UNIT, end - 8)  # entry 2: its commit-log offset
    reopened = make_store(runtime, disk=disk)
    assert reopened.max_offset(T, 0) == 3
    assert reopened.message_store_timestamp(T, 0, 1) == results[1].store_timestamp
    assert reopened.message_store_timestamp(T, 0, 2) == -1
    assert reopened.offset_by_time(T, 0, results[1].store_timestamp + 1_000) == 0  # the search reaches entry 2
    reopened.close()
    struct.pack_into(">q", cq_file, 2 * _CQ_UNIT, end - results[-1].size + 8)
    again = make_store(runtime, disk=disk)
    assert again.max_offset(T, 0) == 3 and again.message_store_timestamp(T, 0, 2) == -1


# ---- recovery of the commit log ---------------------------------------------------------------------------------


def test_recovery_reads_the_last_store_time_of_a_segment_of_ipv6_messages() -> None:
    """A segment expires ``file_reserved_ms`` after its last message (``CleanCommitLogService``; 4.9.8 uses the
    file's last modification). After a restart that time is read back from the segment's last record, whose
    storeTimestamp follows a 20-byte born host when the born host is IPv6 (sysFlag ``BORNHOST_V6_FLAG``,
    ``MessageDecoder``)."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    config: dict[str, object] = {"disk": disk, "segment_bytes": 4096, "file_reserved_ms": 10_000}
    store = make_store(runtime, **config)
    results = []
    for i in range(12):
        result = store.put_message(MessageToStore(T, 0, b"%02d" % i * 200, born_host="[2001:db8::7]:4000"))
        assert result.ok
        results.append(result)
        runtime.advance(1_000)
    store.close()
    last_of_first = max((r for r in results if r.commit_log_offset < 4096), key=lambda r: r.commit_log_offset)
    expires = last_of_first.store_timestamp + 10_000
    reopened = make_store(runtime, **config)
    assert reopened.stats()["segments"] == 2
    assert reopened.delete_expired_files(now_ms=expires - 1) == 0
    assert reopened.delete_expired_files(now_ms=expires) == 1
    assert reopened.min_offset(T, 0) == last_of_first.queue_offset + 1


def test_recovery_cuts_a_record_whose_topic_runs_past_its_end() -> None:
    """``CommitLog.checkMessageAndReturnSize``: a record whose topic length leaves no room for its properties length
    within TOTALSIZE is not a message; recovery cuts the commit log before it (``truncateDirtyFiles``), keeps what
    precedes it, and the next put takes its place."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk, flush="sync")
    put(store, body=b"kept")
    store.flush()  # the checkpoint covers the first message: the second is checked in full
    torn = put(store, body=b"torn")
    store.crash()
    data = disk.files[disk.list_files("commitlog/")[0]]
    topic_len_at = torn.commit_log_offset + _BODY_AT + len(b"torn")
    assert data[topic_len_at] == len(T)
    data[topic_len_at] = torn.size - _BODY_AT - len(b"torn") - 2  # the topic ends 1 byte before the record does
    reopened = make_store(runtime, disk=disk)
    assert bodies(reopened.get_message(T, 0, 0, 32)) == [b"kept"]
    assert reopened.commit_log_max_offset() == torn.commit_log_offset
    again = put(reopened, body=b"again")
    assert (again.commit_log_offset, again.queue_offset) == (torn.commit_log_offset, 1)
