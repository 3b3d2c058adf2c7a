"""The reference implementation's message store (refimpl/store/): put/get, getMessage statuses, delay conversion,
transactions, segments, deletion, flushing and recovery."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl.message import (
    decode_offset_message_id,
    decode_stored_message,
    decode_stored_messages,
    java_string_hash,
)
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.refimpl.store import (
    CHECKPOINT_PATH,
    FileDisk,
    GetMessageResult,
    MemoryDisk,
    MessageStore,
    MessageToStore,
    PutResult,
)
from rocketspec.spec import protocol
from rocketspec.spec.protocol import GetMessageStatus, Property, PutMessageStatus

ADDR = "127.0.0.1:10911"
T = "TopicTest"


def make_store(runtime: SimulatedRuntime | None = None, **kwargs: object) -> MessageStore:
    return MessageStore(runtime or SimulatedRuntime(), "broker-a", ADDR, **kwargs)  # type: ignore[arg-type]


def msg(topic: str = T, queue_id: int = 0, body: bytes = b"body", tags: str | None = None, **kwargs: object
        ) -> MessageToStore:
    props = dict(kwargs.pop("properties", {}))  # type: ignore[call-overload]
    if tags is not None:
        props[Property.TAGS] = tags
    return MessageToStore(topic, queue_id, body, properties=props, born_host="10.0.0.1:4000", **kwargs)  # type: ignore[arg-type]


def put(store: MessageStore, *args: object, **kwargs: object) -> PutResult:
    result = store.put_message(msg(*args, **kwargs))  # type: ignore[arg-type]
    assert result.status is PutMessageStatus.PUT_OK
    return result


def bodies(result: GetMessageResult) -> list[bytes]:
    return [m.body for m in decode_stored_messages(b"".join(result.messages), "broker-a")]


# ---- put and get ------------------------------------------------------------------------------------------------


def test_put_then_get_round_trip() -> None:
    runtime = SimulatedRuntime()
    store = make_store(runtime)
    first = put(store, body=b"m0", tags="A", born_timestamp=7)
    runtime.advance(5)
    second = put(store, body=b"m1")
    assert (first.commit_log_offset, first.queue_offset, second.queue_offset) == (0, 0, 1)
    assert second.commit_log_offset == first.size
    assert first.queue_offsets == (0,) and first.offset_msg_ids == (first.offset_msg_id,)
    assert decode_offset_message_id(second.offset_msg_id) == ("127.0.0.1", 10911, second.commit_log_offset)
    assert second.store_timestamp == first.store_timestamp + 5
    result = store.get_message(T, 0, 0, 32)
    assert result.status is GetMessageStatus.FOUND
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (2, 0, 2)
    assert result.queue_offsets == (0, 1) and result.message_count == 2
    decoded = decode_stored_messages(b"".join(result.messages), "broker-a")
    assert [m.body for m in decoded] == [b"m0", b"m1"]
    m0 = decoded[0]
    assert (m0.topic, m0.queue_id, m0.tags, m0.born_timestamp, m0.born_host, m0.store_host) == (
        T, 0, "A", 7, "10.0.0.1:4000", ADDR)
    assert (m0.queue_offset, m0.commit_log_offset, m0.store_timestamp) == (0, 0, first.store_timestamp)
    assert store.look_message(second.commit_log_offset).body == b"m1"  # type: ignore[union-attr]
    assert store.look_message_bytes(first.commit_log_offset) == result.messages[0]
    assert store.topics() == [T] and store.queue_ids(T) == [0]
    assert store.stats()["messages"] == 2


def test_queue_offsets_are_per_queue_and_commit_log_is_shared() -> None:
    store = make_store()
    results = [put(store, queue_id=i % 3) for i in range(9)]
    assert [r.queue_offset for r in results] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [r.commit_log_offset for r in results] == sorted(r.commit_log_offset for r in results)
    assert store.queue_ids(T) == [0, 1, 2]
    assert [store.max_offset(T, q) for q in range(4)] == [3, 3, 3, 0]
    assert store.min_offset("nope", 0) == store.max_offset("nope", 0) == 0


def test_arrival_listener_sees_dispatched_messages() -> None:
    store = make_store()
    seen: list[tuple[str, int, int, int]] = []
    store.add_arrival_listener(lambda *args: seen.append(args))
    put(store, tags="A")
    put(store, queue_id=2)
    put(store, sys_flag=protocol.TRANSACTION_PREPARED_TYPE)
    assert seen == [(T, 0, 0, java_string_hash("A")), (T, 2, 0, 0)]


# ---- getMessage statuses ----------------------------------------------------------------------------------------


def test_status_no_message_in_queue_for_queues_never_written() -> None:
    store = make_store()
    # Java's findConsumeQueue creates a missing consume queue: a topic the store never saw is an empty queue too.
    assert store.get_message(T, 0, 5, 32) == GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
    put(store, queue_id=0)
    # A queue id of a known topic that never got a message is empty (Java's findConsumeQueue creates it).
    assert store.get_message(T, 1, 5, 32) == GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)


def test_status_offset_overflow_one_and_badly() -> None:
    store = make_store()
    for _ in range(3):
        put(store)
    one = store.get_message(T, 0, 3, 32)
    assert (one.status, one.next_begin_offset, one.messages) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3, ())
    badly = store.get_message(T, 0, 10, 32)
    # 4.9.8: next = max offset (4.9.0-4.9.3 answered min when min == 0).
    assert (badly.status, badly.next_begin_offset, badly.max_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3, 3)


def test_status_offset_too_small_after_deletion() -> None:
    store = make_store(segment_bytes=4096)
    results = [put(store, body=b"x" * 500) for _ in range(20)]
    segments_before = store.stats()["segments"]
    assert segments_before >= 3
    assert store.delete_oldest_segments(1) == 1
    phy_min = store.commit_log_min_offset()
    assert phy_min == 4096
    first_kept = next(r.queue_offset for r in results if r.commit_log_offset >= phy_min)
    assert store.min_offset(T, 0) == first_kept > 0
    small = store.get_message(T, 0, 0, 32)
    assert (small.status, small.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, first_kept)
    assert store.look_message(results[0].commit_log_offset) is None
    assert store.look_message_bytes(results[0].commit_log_offset) is None
    assert store.look_message(results[-1].commit_log_offset) is not None
    found = store.get_message(T, 0, first_kept, 32)
    assert found.status is GetMessageStatus.FOUND and found.queue_offsets[0] == first_kept
    assert store.max_offset(T, 0) == 20


def _deleted_queue_store() -> tuple[MessageStore, int]:
    """Queue "Old" has 15 entries (two consume-queue files of 10), all in commit-log segments that get deleted."""
    store = make_store(segment_bytes=4096, cq_segment_entries=10)
    for _ in range(15):
        put(store, topic="Old", body=b"o" * 100)
    for _ in range(30):
        put(store, topic="New", body=b"n" * 400)
    deleted = store.delete_oldest_segments(store.stats()["segments"] - 1)
    return store, deleted


def test_status_offset_found_null_and_message_was_removing() -> None:
    store, deleted = _deleted_queue_store()
    assert deleted >= 2
    # The first consume-queue file (offsets 0..9) went with the commit log; the last file is never deleted and has
    # no entry at or above the new commit-log minimum, so correctMinOffset leaves the min at 0.
    assert store.min_offset("Old", 0) == 0 and store.max_offset("Old", 0) == 15
    null = store.get_message("Old", 0, 3, 32)
    assert (null.status, null.next_begin_offset) == (GetMessageStatus.OFFSET_FOUND_NULL, 10)  # rollNextFile
    removing = store.get_message("Old", 0, 10, 32)
    assert (removing.status, removing.next_begin_offset, removing.messages) == (
        GetMessageStatus.MESSAGE_WAS_REMOVING, 15, ())
    assert store.queue_entries("Old", 0, 0, 100)[0][0] == 10


def test_status_no_matched_message_and_tags_filter() -> None:
    store = make_store()
    for i in range(6):
        put(store, tags="A" if i % 2 else "B", body=bytes([i]))
    code_a = java_string_hash("A")
    result = store.get_message(T, 0, 0, 32, lambda code: code == code_a)
    assert result.status is GetMessageStatus.FOUND
    assert bodies(result) == [b"\x01", b"\x03", b"\x05"] and result.queue_offsets == (1, 3, 5)
    assert result.next_begin_offset == 6
    none = store.get_message(T, 0, 0, 32, lambda code: False)
    assert (none.status, none.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 6)


def test_filter_scans_at_most_800_entries_or_max_msgs() -> None:
    store = make_store()
    for _ in range(1000):
        put(store, tags="B", body=b"")
    assert store.get_message(T, 0, 0, 32, lambda code: False).next_begin_offset == 800
    assert store.get_message(T, 0, 0, 900, lambda code: False).next_begin_offset == 900
    assert store.get_message(T, 0, 900, 32, lambda code: False).next_begin_offset == 1000


def test_batch_limits_count_bytes_and_max_msgs() -> None:
    store = make_store(segment_bytes=1 << 22)
    for _ in range(40):
        put(store, body=b"s")
    full = store.get_message(T, 0, 0, 100)
    assert full.message_count == 32 and full.next_begin_offset == 32  # maxTransferCountOnMessageInMemory
    assert store.get_message(T, 0, 0, 5).next_begin_offset == 5
    assert store.get_message(T, 0, 0, 0).message_count == 1  # Java: the first message always goes in
    for _ in range(4):
        put(store, queue_id=1, body=b"b" * 100_000)
    big = store.get_message(T, 1, 0, 32)
    assert big.message_count == 2 and big.next_begin_offset == 2  # 256 KiB in memory
    assert big.buffer_total_size > 200_000


def test_scan_stops_at_the_end_of_a_consume_queue_file() -> None:
    store = make_store(cq_segment_entries=10)
    for _ in range(25):
        put(store)
    result = store.get_message(T, 0, 5, 32)
    assert result.queue_offsets == (5, 6, 7, 8, 9) and result.next_begin_offset == 10
    assert store.get_message(T, 0, 10, 32).next_begin_offset == 20


# ---- validation -------------------------------------------------------------------------------------------------


def test_put_validation_statuses() -> None:
    store = make_store()
    assert store.put_message(msg(topic="T" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(msg(topic="T" * 127)).status is PutMessageStatus.PUT_OK
    too_many_chars = {"P": "v" * 33_000}
    assert store.put_message(msg(properties=too_many_chars)).status is PutMessageStatus.MESSAGE_ILLEGAL
    too_many_bytes = {"P": "中" * 12_000}  # 12k chars, 36k UTF-8 bytes
    assert store.put_message(msg(properties=too_many_bytes)).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    huge = msg(body=b"x" * (protocol.MAX_MESSAGE_SIZE + 1))
    assert store.put_message(huge).status is PutMessageStatus.MESSAGE_ILLEGAL
    bad_host = MessageToStore(T, 0, b"x", born_host="nowhere")
    assert store.put_message(bad_host).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(msg(properties={Property.DELAY_TIME_LEVEL: "x"})).status is PutMessageStatus.UNKNOWN_ERROR
    assert store.stats()["messages"] == 1
    store.close()
    assert store.put_message(msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.put_messages([msg()]).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_a_message_bigger_than_a_segment_gets_its_own() -> None:
    store = make_store(segment_bytes=4096)
    small = put(store, body=b"a")
    big = put(store, body=b"b" * 10_000)
    after = put(store, body=b"c")
    assert big.commit_log_offset == 4096
    assert after.commit_log_offset == 4096 + big.size  # the big segment is three segments long: room left
    rest = [put(store, body=b"d" * 1000) for _ in range(3)]
    assert 4096 + 12_288 in [r.commit_log_offset for r in rest]  # the next segment starts where the big one ends
    assert bodies(store.get_message(T, 0, 0, 3)) == [b"a", b"b" * 10_000, b"c"]
    assert store.look_message(small.commit_log_offset) is not None


# ---- segments ---------------------------------------------------------------------------------------------------


def test_messages_never_span_segments_and_end_with_a_blank() -> None:
    disk = MemoryDisk()
    store = make_store(disk=disk, segment_bytes=4096, flush="sync")
    results = [put(store, body=bytes(300)) for _ in range(40)]
    for r in results:
        assert r.commit_log_offset // 4096 == (r.commit_log_offset + r.size - 1) // 4096
    files = disk.list_files("commitlog/")
    assert files[0] == "commitlog/00000000000000000000" and files[1] == "commitlog/00000000000000004096"
    first = disk.files[files[0]]
    last_end = max(r.commit_log_offset + r.size for r in results if r.commit_log_offset < 4096)
    assert struct.unpack_from(">iI", first, last_end) == (4096 - last_end, protocol.BLANK_MAGIC_CODE)
    assert len(first) == last_end + 8
    for r in results:
        assert store.look_message(r.commit_log_offset).commit_log_offset == r.commit_log_offset  # type: ignore[union-attr]


# ---- delay and transactions -------------------------------------------------------------------------------------


def test_delay_level_moves_the_message_to_the_schedule_topic() -> None:
    runtime = SimulatedRuntime()
    store = make_store(runtime)
    seen: list[tuple[str, int, int, int]] = []
    store.add_arrival_listener(lambda *args: seen.append(args))
    result = put(store, queue_id=3, tags="A", properties={Property.DELAY_TIME_LEVEL: "3"})
    assert store.max_offset(T, 3) == 0 and store.max_offset(protocol.SCHEDULE_TOPIC, 2) == 1
    stored = store.look_message(result.commit_log_offset)
    assert stored is not None
    assert (stored.topic, stored.queue_id, stored.tags) == (protocol.SCHEDULE_TOPIC, 2, "A")
    assert stored.properties[Property.REAL_TOPIC] == T and stored.properties[Property.REAL_QUEUE_ID] == "3"
    deliver = result.store_timestamp + protocol.DELAY_LEVEL_MILLIS[2]
    assert store.queue_entries(protocol.SCHEDULE_TOPIC, 2, 0, 10) == [(0, result.commit_log_offset, result.size,
                                                                       deliver)]
    assert seen == [(protocol.SCHEDULE_TOPIC, 2, 0, deliver)]


def test_delay_level_is_clamped_and_zero_or_negative_is_ignored() -> None:
    store = make_store()
    clamped = put(store, properties={Property.DELAY_TIME_LEVEL: "99"})
    message = store.look_message(clamped.commit_log_offset)
    assert message is not None and message.queue_id == protocol.MAX_DELAY_LEVEL - 1
    assert message.properties[Property.DELAY_TIME_LEVEL] == str(protocol.MAX_DELAY_LEVEL)
    assert store.queue_entries(protocol.SCHEDULE_TOPIC, 17, 0, 1)[0][3] == (
        clamped.store_timestamp + protocol.DELAY_LEVEL_MILLIS[-1])
    put(store, properties={Property.DELAY_TIME_LEVEL: "0"})
    put(store, properties={Property.DELAY_TIME_LEVEL: "-2"})
    assert store.max_offset(T, 0) == 2


def test_transaction_types() -> None:
    store = make_store()
    seen: list[object] = []
    store.add_arrival_listener(lambda *args: seen.append(args))
    prepared = put(store, sys_flag=protocol.TRANSACTION_PREPARED_TYPE, properties={Property.DELAY_TIME_LEVEL: "2"})
    rollback = put(store, sys_flag=protocol.TRANSACTION_ROLLBACK_TYPE)
    assert prepared.queue_offset == rollback.queue_offset == 0
    assert store.max_offset(T, 0) == 0 and seen == []
    half = store.look_message(prepared.commit_log_offset)
    assert half is not None and half.topic == T and half.queue_offset == 0  # prepared: no delay conversion
    committed = put(store, sys_flag=protocol.TRANSACTION_COMMIT_TYPE, properties={Property.DELAY_TIME_LEVEL: "1"})
    assert store.look_message(committed.commit_log_offset).topic == protocol.SCHEDULE_TOPIC  # type: ignore[union-attr]
    normal = put(store)
    assert normal.queue_offset == 0 and store.max_offset(T, 0) == 1


# ---- batches ----------------------------------------------------------------------------------------------------


def test_put_messages_batch() -> None:
    store = make_store(segment_bytes=4096)
    put(store, body=b"x" * 3000)
    batch = [msg(body=bytes([i]) * 300, tags=f"T{i}") for i in range(5)]
    result = store.put_messages(batch)
    assert result.status is PutMessageStatus.PUT_OK
    assert result.queue_offsets == (1, 2, 3, 4, 5) and result.queue_offset == 1
    assert result.commit_log_offset == 4096  # did not fit behind the first message: one segment, contiguous
    assert len(result.offset_msg_ids) == 5 and result.offset_msg_id == result.offset_msg_ids[0]
    phys = [decode_offset_message_id(i)[2] for i in result.offset_msg_ids]
    assert phys[0] == 4096 and phys == sorted(set(phys))
    assert result.size == sum(store.look_message(p).store_size for p in phys)  # type: ignore[union-attr]
    got = store.get_message(T, 0, 1, 32)
    assert bodies(got) == [bytes([i]) * 300 for i in range(5)]
    assert [e[3] for e in store.queue_entries(T, 0, 1, 5)] == [java_string_hash(f"T{i}") for i in range(5)]


def test_put_messages_rejects_mixed_or_transactional_batches() -> None:
    store = make_store()
    assert store.put_messages([]).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_messages([msg(), msg(queue_id=1)]).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_messages([msg(), msg(topic="Other")]).status is PutMessageStatus.MESSAGE_ILLEGAL
    prepared = msg(sys_flag=protocol.TRANSACTION_PREPARED_TYPE)
    assert store.put_messages([prepared]).status is PutMessageStatus.MESSAGE_ILLEGAL
    big = [msg(body=b"x" * (1 << 21)), msg(body=b"x" * (1 << 21))]
    assert store.put_messages(big).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.max_offset(T, 0) == 0


# ---- offsets by time, queue entries -----------------------------------------------------------------------------


def test_offset_by_time() -> None:
    runtime = SimulatedRuntime()
    store = make_store(runtime)
    times = []
    for _ in range(10):
        times.append(put(store).store_timestamp)
        runtime.advance(100)
    # ConsumeQueue.getOffsetInQueueByTime (4.9.8): an exact store time, else the nearer neighbour (earlier on a tie).
    assert store.offset_by_time(T, 0, times[0] - 1) == 0  # all later: the first entry
    assert store.offset_by_time(T, 0, times[0]) == 0
    assert store.offset_by_time(T, 0, times[4]) == 4
    assert store.offset_by_time(T, 0, times[4] + 1) == 4  # nearer to entry 4 than to entry 5
    assert store.offset_by_time(T, 0, times[4] + 50) == 4  # a tie: the earlier
    assert store.offset_by_time(T, 0, times[4] + 51) == 5
    assert store.offset_by_time(T, 0, times[9] + 1) == 9  # all earlier: the last entry, not the max offset
    assert store.offset_by_time("nope", 0, 0) == 0
    assert make_store(runtime).offset_by_time(T, 0, 0) == 0  # an empty queue


def test_offset_by_time_after_deletion_starts_at_min() -> None:
    store = make_store(segment_bytes=4096)
    for _ in range(20):
        put(store, body=b"x" * 500)
    store.delete_oldest_segments(1)
    assert store.offset_by_time(T, 0, 0) == store.min_offset(T, 0) > 0


def test_queue_entries() -> None:
    store = make_store()
    results = [put(store, tags="A") for _ in range(5)]
    entries = store.queue_entries(T, 0, 2, 2)
    assert entries == [(q, results[q].commit_log_offset, results[q].size, java_string_hash("A")) for q in (2, 3)]
    assert store.queue_entries(T, 0, 4, 10) == [(4, results[4].commit_log_offset, results[4].size,
                                                 java_string_hash("A"))]
    assert store.queue_entries(T, 0, 5, 10) == [] and store.queue_entries("nope", 0, 0, 10) == []


# ---- deletion ---------------------------------------------------------------------------------------------------


def test_delete_expired_files_by_age_keeps_the_last_segment() -> None:
    runtime = SimulatedRuntime()
    store = make_store(runtime, segment_bytes=4096, file_reserved_ms=10_000)
    for _ in range(10):
        put(store, body=b"x" * 1000)
        runtime.advance(1_000)
    segments = store.stats()["segments"]
    assert segments >= 3
    assert store.delete_expired_files() == 0  # the oldest segment's last message is < 10 s old
    runtime.advance(6_000)
    deleted = store.delete_expired_files()
    assert 0 < deleted < segments
    assert store.delete_expired_files(now_ms=runtime.now_ms() + 10**9) == segments - deleted - 1
    assert store.stats()["segments"] == 1
    assert store.get_message(T, 0, store.min_offset(T, 0), 32).status is GetMessageStatus.FOUND
    assert store.delete_oldest_segments(5) == 0


# ---- flushing and recovery --------------------------------------------------------------------------------------


def _snapshot(store: MessageStore, topic: str = T, queue_id: int = 0) -> list[tuple[int, int, bytes]]:
    result = store.get_message(topic, queue_id, store.min_offset(topic, queue_id), 10_000)
    return [(m.queue_offset, m.commit_log_offset, m.body)
            for m in decode_stored_messages(b"".join(result.messages), "broker-a")]


def test_sync_flush_survives_a_crash() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk, flush="sync", segment_bytes=4096)
    results = [put(store, queue_id=i % 2, body=b"%d" % i * 50) for i in range(40)]
    before = [_snapshot(store, T, q) for q in (0, 1)]
    store.crash()
    reopened = make_store(runtime, disk=disk, flush="sync", segment_bytes=4096)
    assert [_snapshot(reopened, T, q) for q in (0, 1)] == before
    assert reopened.max_offset(T, 0) == 20 and reopened.stats()["messages"] == 40
    nxt = put(reopened, queue_id=0)
    assert nxt.queue_offset == 20 and nxt.commit_log_offset >= results[-1].commit_log_offset + results[-1].size


def test_async_flush_loses_only_the_unflushed_tail() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk, flush="async", flush_interval_ms=500)
    for i in range(5):
        put(store, body=b"early%d" % i)
    runtime.advance(600)  # the flush timer ran
    for i in range(5):
        put(store, body=b"late%d" % i)
    store.crash()
    reopened = make_store(runtime, disk=disk)
    assert [b for _, _, b in _snapshot(reopened)] == [b"early%d" % i for i in range(5)]
    assert reopened.max_offset(T, 0) == 5
    assert put(reopened, body=b"again").queue_offset == 5


def test_async_store_is_not_busy_and_close_flushes() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk)
    put(store)
    runtime.run_until_idle()  # the flush timer is a daemon
    put(store)
    store.close()
    assert _snapshot(make_store(runtime, disk=disk)) == _snapshot(store)


def test_recovery_cuts_a_torn_tail() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk, flush="sync")
    results = [put(store, body=b"m%d" % i) for i in range(4)]
    store.crash()
    path = disk.list_files("commitlog/")[-1]
    last = results[-1]
    del disk.files[path][last.commit_log_offset + last.size - 3:]  # the last message is cut short
    reopened = make_store(runtime, disk=disk)
    assert [b for _, _, b in _snapshot(reopened)] == [b"m0", b"m1", b"m2"]
    assert len(disk.files[path]) == last.commit_log_offset
    assert put(reopened, body=b"m3'").commit_log_offset == last.commit_log_offset


def test_recovery_rejects_a_bad_crc_after_the_checkpoint() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk, flush="sync")
    put(store, body=b"kept")
    store.flush()  # checkpoint covers the first message
    bad = put(store, body=b"flipped")
    put(store, body=b"after")
    store.crash()
    data = disk.files[disk.list_files("commitlog/")[0]]
    data[bad.commit_log_offset + 88] ^= 0xFF  # first body byte
    reopened = make_store(runtime, disk=disk)
    assert [b for _, _, b in _snapshot(reopened)] == [b"kept"]
    assert reopened.commit_log_max_offset() == bad.commit_log_offset


def test_recovery_after_deletion_keeps_min_and_max_offsets() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store, _ = _deleted_queue_store_on(runtime, disk)
    state = {q: (store.min_offset(*q), store.max_offset(*q)) for q in (("Old", 0), ("New", 0))}
    new_snapshot = _snapshot(store, "New")
    store.close()
    reopened = make_store(runtime, disk=disk, segment_bytes=4096, cq_segment_entries=10)
    assert {q: (reopened.min_offset(*q), reopened.max_offset(*q)) for q in state} == state
    assert reopened.max_offset("Old", 0) == 15  # a queue whose messages are all gone keeps its max offset
    assert _snapshot(reopened, "New") == new_snapshot
    assert reopened.get_message("Old", 0, 3, 32).status is GetMessageStatus.OFFSET_FOUND_NULL
    assert put(reopened, topic="Old").queue_offset == 15


def _deleted_queue_store_on(runtime: SimulatedRuntime, disk: MemoryDisk) -> tuple[MessageStore, int]:
    store = make_store(runtime, disk=disk, segment_bytes=4096, cq_segment_entries=10)
    for _ in range(15):
        put(store, topic="Old", body=b"o" * 100)
    for _ in range(30):
        put(store, topic="New", body=b"n" * 400)
    return store, store.delete_oldest_segments(store.stats()["segments"] - 1)


@pytest.mark.parametrize("segment_bytes", [1 << 20, 4100])
def test_consume_queues_are_rebuilt_when_lost(segment_bytes: int) -> None:
    """Rebuilt from the commit log, the consume queues are the ones lost; with commit-log segments whose size is not
    a power of two too (a message's offset is its segment's base plus its position, not a bitwise mix)."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk, cq_segment_entries=7, segment_bytes=segment_bytes)
    for i in range(60):  # over 6 KB: two segments of 4100 bytes
        put(store, queue_id=i % 3, tags="A" if i % 2 else None, properties={Property.DELAY_TIME_LEVEL: "2"}
            if i == 5 else {})
    prepared = put(store, sys_flag=protocol.TRANSACTION_PREPARED_TYPE)
    store.close()
    expected = {q: store.queue_entries(T, q, 0, 100) for q in range(3)}
    schedule = store.queue_entries(protocol.SCHEDULE_TOPIC, 1, 0, 10)
    for path in [*disk.list_files("consumequeue/"), CHECKPOINT_PATH]:
        disk.delete(path)
    rebuilt = make_store(runtime, disk=disk, cq_segment_entries=7, segment_bytes=segment_bytes)
    assert {q: rebuilt.queue_entries(T, q, 0, 100) for q in range(3)} == expected
    assert rebuilt.queue_entries(protocol.SCHEDULE_TOPIC, 1, 0, 10) == schedule
    assert rebuilt.look_message(prepared.commit_log_offset) is not None
    # Another consume-queue file size: the old files do not fit and the queues are rebuilt the same.
    rebuilt.close()
    resized = make_store(runtime, disk=disk, cq_segment_entries=4, segment_bytes=segment_bytes)
    assert {q: resized.queue_entries(T, q, 0, 100) for q in range(3)} == expected


def test_consume_queue_entries_past_the_commit_log_are_dropped() -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk)
    results = [put(store) for _ in range(3)]
    store.close()
    path = disk.list_files("commitlog/")[0]
    disk.truncate(path, results[2].commit_log_offset)  # the commit log lost its last message, the queue did not
    reopened = make_store(runtime, disk=disk)
    assert reopened.max_offset(T, 0) == 2
    assert put(reopened).queue_offset == 2


def test_file_disk_recovery(tmp_path: Path) -> None:
    runtime = SimulatedRuntime()
    sync_store = make_store(runtime, disk=FileDisk(tmp_path / "sync"), flush="sync", segment_bytes=4096)
    for i in range(30):
        put(sync_store, queue_id=i % 2, body=b"s%d" % i * 40)
    snapshot = _snapshot(sync_store, T, 1)
    sync_store.crash()
    reopened = make_store(runtime, disk=FileDisk(tmp_path / "sync"), flush="sync", segment_bytes=4096)
    assert _snapshot(reopened, T, 1) == snapshot and reopened.max_offset(T, 0) == 15
    assert (tmp_path / "sync" / "commitlog" / "00000000000000000000").is_file()

    async_store = make_store(runtime, disk=FileDisk(tmp_path / "async"), flush_interval_ms=500)
    put(async_store, body=b"flushed")
    runtime.advance(500)
    put(async_store, body=b"written")
    async_store.crash()  # on a FileDisk a process crash: what was written is the OS's (tests/test_durability.py)
    reopened = make_store(runtime, disk=FileDisk(tmp_path / "async"))
    assert [b for _, _, b in _snapshot(reopened)] == [b"flushed", b"written"]


def test_file_disk_basics(tmp_path: Path) -> None:
    disk = FileDisk(tmp_path)
    disk.write_file("config/topics.json", b"{}")
    assert disk.read_file("config/topics.json") == b"{}" and disk.read_file("config/none.json") is None
    disk.append("a/b/file", b"12")
    disk.append("a/b/file", b"34")
    disk.flush("a/b/file")
    assert disk.view("a/b/file") == b"1234" and disk.size("a/b/file") == 4 and disk.exists("a/b/file")
    disk.truncate("a/b/file", 1)
    assert disk.read_file("a/b/file") == b"1"
    assert disk.list_files("a/") == ["a/b/file"] and disk.list_files("config/") == ["config/topics.json"]
    disk.delete("a/b/file")
    disk.delete("a/b/file")
    assert not disk.exists("a/b/file") and disk.size("a/b/file") == -1
    with pytest.raises(ValueError):
        disk.read_file("../outside")


def test_memory_disk_config_files_survive_a_store() -> None:
    disk = MemoryDisk()
    disk.write_file("config/topics.json", b'{"a": 1}')
    store = make_store(disk=disk)
    put(store)
    store.crash()
    assert disk.read_file("config/topics.json") == b'{"a": 1}'
    assert make_store(disk=disk).max_offset(T, 0) == 0  # async, never flushed


def test_odd_topic_names_are_safe_on_disk(tmp_path: Path) -> None:
    runtime = SimulatedRuntime()
    topics = ["%RETRY%group", "..", "a/b", "中文"]
    store = make_store(runtime, disk=FileDisk(tmp_path))
    for topic in topics:
        put(store, topic=topic, body=topic.encode())
    store.close()
    reopened = make_store(runtime, disk=FileDisk(tmp_path))
    assert reopened.topics() == sorted(topics)
    for topic in topics:
        assert [b for _, _, b in _snapshot(reopened, topic)] == [topic.encode()]
    assert all(p.is_relative_to(tmp_path) for p in tmp_path.rglob("*"))


def test_decoded_pull_body_matches_store_entries() -> None:
    store = make_store()
    result = put(store, tags="X", properties={Property.KEYS: "k1 k2"})
    data = store.get_message(T, 0, 0, 1).messages[0]
    message, size = decode_stored_message(data, broker_name="broker-a")
    assert size == result.size and message.offset_msg_id == result.offset_msg_id
    assert message.keys == ("k1", "k2") and message.queue.broker_name == "broker-a"


# ---- randomized: crash/reopen against a model -------------------------------------------------------------------

_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 2), st.integers(0, 700)),
        st.tuples(st.just("batch"), st.integers(0, 2), st.integers(1, 4)),
        st.tuples(st.just("flush"), st.just(0), st.just(0)),
        st.tuples(st.just("crash"), st.just(0), st.just(0)),
        st.tuples(st.just("close"), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@given(mode=st.sampled_from(["sync", "async"]), ops=_ops, cq_entries=st.sampled_from([3, 5, 1000]))
def test_reopen_matches_a_model(mode: str, ops: list[tuple[str, int, int]], cq_entries: int) -> None:
    runtime = SimulatedRuntime()
    disk = MemoryDisk()

    def open_store() -> MessageStore:
        return make_store(runtime, disk=disk, flush=mode, segment_bytes=4096, cq_segment_entries=cq_entries,
                          flush_interval_ms=10**9)

    store = open_store()
    durable: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    volatile: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    counter = 0
    for op, queue_id, arg in ops:
        if op in ("put", "batch"):
            counter += 1
            if op == "put":
                new = [bytes([counter % 256]) * arg]
                result = store.put_message(msg(queue_id=queue_id, body=new[0]))
            else:
                new = [bytes([counter % 256, i]) for i in range(arg)]
                result = store.put_messages([msg(queue_id=queue_id, body=b) for b in new])
            assert result.status is PutMessageStatus.PUT_OK
            assert result.queue_offset == len(durable[queue_id]) + len(volatile[queue_id])
            (durable if mode == "sync" else volatile)[queue_id].extend(new)
        elif op == "flush":
            store.flush()
            for q in volatile:
                durable[q].extend(volatile[q])
                volatile[q] = []
        else:
            if op == "close":
                store.close()
                for q in volatile:
                    durable[q].extend(volatile[q])
            else:
                store.crash()
            volatile = {0: [], 1: [], 2: []}
            store = open_store()
        for q in range(3):
            expected = durable[q] + volatile[q]
            assert store.max_offset(T, q) == len(expected)
            got: list[bytes] = []
            offset = 0
            while offset < len(expected):
                result = store.get_message(T, q, offset, 32)
                assert result.status is GetMessageStatus.FOUND
                assert result.queue_offsets[0] == offset
                got.extend(bodies(result))
                offset = result.next_begin_offset
            assert got == expected


def test_a_long_queue_is_rebuilt_whole() -> None:
    """Queue offsets past 256 are rebuilt too (the rebuild compares offsets by value; CPython shares the objects of
    small ints only, so an identity test would stop there)."""
    runtime = SimulatedRuntime()
    disk = MemoryDisk()
    store = make_store(runtime, disk=disk)
    for _ in range(300):
        put(store, queue_id=0)
    store.close()
    expected = store.queue_entries(T, 0, 0, 400)
    for path in [*disk.list_files("consumequeue/"), CHECKPOINT_PATH]:
        disk.delete(path)
    rebuilt = make_store(runtime, disk=disk)
    assert len(expected) == 300 and rebuilt.queue_entries(T, 0, 0, 400) == expected
