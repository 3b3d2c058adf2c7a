"""offset_commit: the oracles (ProcessQueue, offset stores, broker commits, where a queue starts, the admin answers)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import offset_commit as oc
from rocketspec.spec.offset_commit import (
    NO_OFFSET,
    NO_TIME,
    ProcessQueueState,
    StoreRead,
)
from rocketspec.spec.protocol import (
    FLUSH_INTERVAL_COMMITLOG_MS,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    ConsumeFromWhere,
    MessageModel,
    ReadOffsetType,
    ResponseCode,
)
from rocketspec.spec.versions import V4_9_3, V4_9_8

CLUSTERING, BROADCASTING = MessageModel.CLUSTERING, MessageModel.BROADCASTING
FIRST, LAST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
TIMESTAMP = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP


# --- A transcription of the Java classes, to test the oracles against -------------------------------------


class JavaProcessQueue:
    """ProcessQueue's offset bookkeeping as the Java code does it (dict = TreeMap, mutable fields)."""

    def __init__(self) -> None:
        self.tree: dict[int, str] = {}
        self.consuming_tree: dict[int, str] = {}
        self.queue_offset_max = 0
        self.consuming = False
        self.msg_count = 0

    def state(self) -> ProcessQueueState:
        cached, taken = tuple(sorted(self.tree)), tuple(sorted(self.consuming_tree))
        return ProcessQueueState(cached, taken, self.queue_offset_max, self.consuming)

    def put_message(self, offsets: list[int]) -> bool:
        valid = 0
        for offset in offsets:
            old = self.tree.get(offset)
            self.tree[offset] = f"m{offset}"
            if old is None:
                valid += 1
                self.queue_offset_max = offset
        self.msg_count += valid
        dispatch = False
        if self.tree and not self.consuming:
            dispatch = True
            self.consuming = True
        return dispatch

    def remove_message(self, offsets: list[int]) -> int:
        result = -1
        if self.tree:
            result = self.queue_offset_max + 1
            for offset in offsets:
                if self.tree.pop(offset, None) is not None:
                    self.msg_count -= 1
            if self.tree:
                result = min(self.tree)
        return result

    def take_messages(self, batch_size: int) -> list[int]:
        result = []
        if self.tree:
            for _ in range(batch_size):
                if not self.tree:
                    break
                first = min(self.tree)
                self.consuming_tree[first] = self.tree.pop(first)
                result.append(first)
        if not result:
            self.consuming = False
        return result

    def commit(self) -> int:
        offset = max(self.consuming_tree)
        self.msg_count -= len(self.consuming_tree)
        self.consuming_tree.clear()
        return offset + 1

    def make_message_to_consume_again(self, offsets: list[int]) -> None:
        for offset in offsets:
            self.consuming_tree.pop(offset, None)
            self.tree[offset] = f"m{offset}"


small_offsets = st.integers(min_value=0, max_value=12)
offset_lists = st.lists(small_offsets, max_size=5)


@st.composite
def queues(draw: st.DrawFn, with_taken: bool = False) -> ProcessQueueState:
    taken = sorted(set(draw(st.lists(small_offsets, max_size=3)))) if with_taken else []
    cached = sorted(set(draw(st.lists(small_offsets, max_size=5))) - set(taken))
    qmax = draw(st.integers(min_value=0, max_value=14))
    return ProcessQueueState(tuple(cached), tuple(taken), qmax, draw(st.booleans()))


# --- ProcessQueue oracles (OFF-1 .. OFF-4, OFF-15) ---------------------------------------------------------


def test_seed_001_msg3_finishing_first_commits_msg1() -> None:
    """seed 001 §1.3: T3 finishes msg3 while msg1 and msg2 are still consumed: the progress stays at msg1."""
    pq, _ = oc.put_messages(ProcessQueueState(), (0, 1, 2))
    after, offset = oc.remove_messages(pq, (2,))
    assert offset == 0 and after.cached == (0, 1)


def test_seed_001_a_b_c_d_with_d_first() -> None:
    """seed 001 §6.1: a, b, c, d consumed concurrently, d first: the progress is a's offset."""
    pq, dispatch = oc.put_messages(ProcessQueueState(), (100, 101, 102, 103))
    assert dispatch
    pq, offset = oc.remove_messages(pq, (103,))
    assert offset == 100
    pq, offset = oc.remove_messages(pq, (100, 101, 102))
    assert offset == 104 and pq.cached == () and pq.queue_offset_max == 103


def test_remove_message_on_an_empty_queue_answers_minus_one() -> None:
    empty = ProcessQueueState(queue_offset_max=7)
    assert oc.remove_messages(empty, (7,)) == (empty, -1)
    # Emptied by this call: queueOffsetMax + 1, even for a batch that was not cached.
    assert oc.remove_messages(ProcessQueueState((5,), (), 5), (5, 9))[1] == 6
    assert oc.remove_messages(ProcessQueueState((5,), (), 5), ())[1] == 5


def test_put_message_counts_only_new_offsets() -> None:
    pq, dispatch = oc.put_messages(ProcessQueueState(), (3, 4))
    assert (pq.cached, pq.queue_offset_max, dispatch) == ((3, 4), 4, True)
    again, dispatch = oc.put_messages(pq, (4, 3))
    assert (again.cached, again.queue_offset_max, dispatch) == ((3, 4), 4, False)
    # queueOffsetMax follows list order, not the largest offset.
    unordered, _ = oc.put_messages(ProcessQueueState(), (9, 2))
    assert unordered.queue_offset_max == 2
    empty, dispatch = oc.put_messages(ProcessQueueState(), ())
    assert empty == ProcessQueueState() and not dispatch


@given(queues(with_taken=True), offset_lists)
def test_put_messages_matches_java(pq: ProcessQueueState, offsets: list[int]) -> None:
    java = JavaProcessQueue()
    java.tree = {o: "x" for o in pq.cached}
    java.consuming_tree = {o: "x" for o in pq.taken}
    java.queue_offset_max, java.consuming = pq.queue_offset_max, pq.consuming
    dispatch = java.put_message(offsets)
    assert oc.put_messages(pq, tuple(offsets)) == (java.state(), dispatch)


@given(queues(), offset_lists)
def test_remove_messages_matches_java_and_never_passes_a_cached_message(
    pq: ProcessQueueState, offsets: list[int]
) -> None:
    java = JavaProcessQueue()
    java.tree = {o: "x" for o in pq.cached}
    java.queue_offset_max, java.consuming = pq.queue_offset_max, pq.consuming
    result = java.remove_message(offsets)
    after, offset = oc.remove_messages(pq, tuple(offsets))
    assert (after, offset) == (java.state(), result)
    assert all(offset <= o for o in after.cached)


@given(st.lists(st.tuples(st.sampled_from(["put", "remove", "take", "commit", "again"]), offset_lists,
                          st.integers(1, 3)), max_size=12))
def test_process_queue_operation_sequences_match_java(ops: list[tuple[str, list[int], int]]) -> None:
    """Any sequence of ProcessQueue calls leaves the oracles' queue where the Java one is."""
    java, pq = JavaProcessQueue(), ProcessQueueState()
    next_offset = 0
    for op, offsets, size in ops:
        if op == "put":
            batch = tuple(range(next_offset, next_offset + size))
            next_offset += size
            pq, dispatch = oc.put_messages(pq, batch)
            assert dispatch == java.put_message(list(batch))
        elif op == "remove" and not pq.taken:
            pq, result = oc.remove_messages(pq, tuple(offsets))
            assert result == java.remove_message(offsets)
        elif op == "take" and not pq.taken:
            pq, taken = oc.take_messages(pq, size)
            assert list(taken) == java.take_messages(size)
        elif op == "commit" and pq.taken:
            before = pq
            pq, result = oc.orderly_commit(pq)
            assert result == java.commit()
            assert all(result <= o for o in before.cached)
        elif op == "again" and pq.taken:
            back = pq.taken[:size]
            pq = oc.make_message_to_consume_again(pq, back)
            java.make_message_to_consume_again(list(back))
        assert pq == java.state()
        assert pq.msg_count == java.msg_count


def test_take_and_commit_orderly() -> None:
    pq, _ = oc.put_messages(ProcessQueueState(), (10, 11, 12))
    pq, taken = oc.take_messages(pq, 2)
    assert taken == (10, 11) and pq.cached == (12,) and pq.msg_count == 3
    suspended = oc.make_message_to_consume_again(pq, taken)
    assert suspended.cached == (10, 11, 12) and suspended.taken == ()
    assert oc.rollback(pq) == suspended
    pq, offset = oc.orderly_commit(pq)
    assert offset == 12 and pq.taken == () and pq.msg_count == 1
    empty = ProcessQueueState(consuming=True)
    assert oc.take_messages(empty, 1) == (ProcessQueueState(consuming=False), ())


@given(queues(with_taken=True))
def test_rollback_returns_every_taken_message(pq: ProcessQueueState) -> None:
    back = oc.rollback(pq)
    assert back.taken == () and set(back.cached) == set(pq.cached) | set(pq.taken)
    assert back.msg_count == pq.msg_count


@given(queues(), st.data(), st.sampled_from(list(MessageModel)), st.booleans())
def test_concurrent_consume_result(pq: ProcessQueueState, data: st.DataObject, model: MessageModel,
                                   dropped: bool) -> None:
    if not pq.cached:
        pq = ProcessQueueState((0,), (), pq.queue_offset_max)
    batch = tuple(data.draw(st.lists(st.sampled_from(pq.cached), min_size=1, max_size=3, unique=True)))
    failed = tuple(data.draw(st.lists(st.booleans(), min_size=len(batch), max_size=len(batch))))
    after, commit, retried = oc.concurrent_consume_result(pq, batch, failed, model, dropped)
    if model == CLUSTERING:
        assert retried == tuple(o for o, f in zip(batch, failed, strict=True) if f)
    else:
        assert retried == ()
    assert set(after.cached) == (set(pq.cached) - set(batch)) | set(retried)
    _, removed = oc.remove_messages(pq, tuple(o for o in batch if o not in retried))
    assert commit == (NO_OFFSET if dropped else removed)


def test_failed_send_back_keeps_the_offset_at_the_failed_message() -> None:
    pq = ProcessQueueState((4, 5, 6), (), 6, True)
    after, commit, retried = oc.concurrent_consume_result(pq, (4, 5), (True, False), CLUSTERING)
    assert (after.cached, commit, retried) == ((4, 6), 4, (4,))
    after, commit, retried = oc.concurrent_consume_result(pq, (4, 5), (True, False), BROADCASTING)
    assert (after.cached, commit, retried) == ((6,), 6, ())


# --- Offset store oracles (OFF-5, OFF-6, OFF-11, OFF-12, OFF-16) -------------------------------------------


@given(st.integers(NO_OFFSET, 50), st.integers(0, 50), st.booleans())
def test_update_offset(current: int, offset: int, increase_only: bool) -> None:
    result = oc.update_offset(current, offset, increase_only)
    if current == NO_OFFSET or not increase_only:
        assert result == offset
    else:
        assert result == max(current, offset)


def test_increase_only_ignores_a_stale_writer() -> None:
    assert oc.update_offset(8, 5, True) == 8
    assert oc.update_offset(8, 5, False) == 5
    assert oc.update_offset(NO_OFFSET, 5, True) == 5


def test_read_offset_examples() -> None:
    mem, store = ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.READ_FROM_STORE
    first = ReadOffsetType.MEMORY_FIRST_THEN_STORE
    assert oc.read_offset(mem, NO_OFFSET, StoreRead.FOUND, 9) == (-1, NO_OFFSET)
    assert oc.read_offset(mem, 4, StoreRead.FOUND, 9) == (4, 4)
    assert oc.read_offset(first, 4, StoreRead.FOUND, 9) == (4, 4)
    assert oc.read_offset(first, NO_OFFSET, StoreRead.FOUND, 9) == (9, 9)
    assert oc.read_offset(store, 4, StoreRead.FOUND, 2) == (2, 2)
    assert oc.read_offset(store, 4, StoreRead.NOT_FOUND) == (-1, 4)
    assert oc.read_offset(store, 4, StoreRead.FAILED) == (-2, 4)
    assert oc.read_offset(store, 4, StoreRead.FAILED, remote=False) == (-1, 4)


@given(st.sampled_from(list(ReadOffsetType)), st.integers(NO_OFFSET, 20), st.sampled_from(list(StoreRead)),
       st.integers(0, 20), st.booleans())
def test_read_offset_property(read_type: ReadOffsetType, memory: int, store: StoreRead, value: int,
                              remote: bool) -> None:
    answer, after = oc.read_offset(read_type, memory, store, value, remote)
    reads_store = read_type == ReadOffsetType.READ_FROM_STORE or (
        read_type == ReadOffsetType.MEMORY_FIRST_THEN_STORE and memory == NO_OFFSET
    )
    if not reads_store:
        assert (answer, after) == (memory, memory)
    elif store == StoreRead.FOUND:
        assert (answer, after) == (value, value)
    else:
        assert after == memory and answer == (-2 if remote and store == StoreRead.FAILED else -1)


def test_remote_persist_all() -> None:
    assert oc.remote_persist_all((3, NO_OFFSET, 7), (True, True, False)) == ((3, NO_OFFSET, NO_OFFSET),
                                                                               ((0, 3),))
    # No queue held: nothing sent and nothing forgotten.
    assert oc.remote_persist_all((3, 7), (False, False)) == ((3, 7), ())


@given(st.lists(st.tuples(st.integers(NO_OFFSET, 9), st.booleans()), max_size=4))
def test_remote_persist_all_property(entries: list[tuple[int, bool]]) -> None:
    memory = tuple(m for m, _ in entries)
    held = tuple(h for _, h in entries)
    after, sent = oc.remote_persist_all(memory, held)
    if any(held):
        assert dict(sent) == {q: m for q, (m, h) in enumerate(entries) if h and m != NO_OFFSET}
        assert after == tuple(m if h else NO_OFFSET for m, h in entries)
    else:
        assert (after, sent) == (memory, ())


def test_local_store_versions() -> None:
    file, memory, held = (5, 8), (6, 9), (True, False)
    assert oc.local_persist_all(file, memory, held, V4_9_8) == (6, 8)
    assert oc.local_persist_all(file, memory, held, V4_9_3) == (6, NO_OFFSET)
    assert oc.local_persist(file, memory, 1, V4_9_8) == (5, 9)
    assert oc.local_persist(file, memory, 1, V4_9_3) == file
    assert oc.remove_offset(memory, 0, local=True, profile=V4_9_8) == (NO_OFFSET, 9)
    assert oc.remove_offset(memory, 0, local=True, profile=V4_9_3) == memory
    assert oc.remove_offset(memory, 0, local=False, profile=V4_9_3) == (NO_OFFSET, 9)


@given(st.lists(st.tuples(st.integers(NO_OFFSET, 9), st.integers(NO_OFFSET, 9), st.booleans()), max_size=4),
       st.sampled_from([V4_9_3, V4_9_8]))
def test_local_persist_all_property(entries: list[tuple[int, int, bool]], profile: object) -> None:
    file = tuple(f for f, _, _ in entries)
    memory = tuple(m for _, m, _ in entries)
    held = tuple(h for _, _, h in entries)
    after = oc.local_persist_all(file, memory, held, profile)  # type: ignore[arg-type]
    for q, (f, m, h) in enumerate(entries):
        if not any(held):
            assert after[q] == f
        elif h and m != NO_OFFSET:
            assert after[q] == m
        else:
            assert after[q] == (f if profile == V4_9_8 else NO_OFFSET)


@given(st.lists(st.tuples(st.integers(NO_OFFSET, 9), st.integers(NO_OFFSET, 9)), min_size=1, max_size=3),
       st.data(), st.sampled_from([V4_9_3, V4_9_8]), st.booleans())
def test_local_persist_and_remove_offset_property(entries: list[tuple[int, int]], data: st.DataObject,
                                                   profile: object, local: bool) -> None:
    file = tuple(f for f, _ in entries)
    memory = tuple(m for _, m in entries)
    q = data.draw(st.integers(0, len(entries) - 1))
    written = oc.local_persist(file, memory, q, profile)  # type: ignore[arg-type]
    acts = profile == V4_9_8
    expected = memory[q] if acts and memory[q] != NO_OFFSET else file[q]
    assert written == (*file[:q], expected, *file[q + 1:])
    forgotten = oc.remove_offset(memory, q, local, profile)  # type: ignore[arg-type]
    assert forgotten == (memory if local and not acts else (*memory[:q], NO_OFFSET, *memory[q + 1:]))


# --- Broker and pull oracles (OFF-7 .. OFF-10) -------------------------------------------------------------


def test_broker_query_offset_quirk() -> None:
    assert oc.broker_query_offset(12, 50, True) == (ResponseCode.SUCCESS, 12)
    assert oc.broker_query_offset(NO_OFFSET, 0, False) == (ResponseCode.SUCCESS, 0)
    assert oc.broker_query_offset(NO_OFFSET, 0, True) == (ResponseCode.QUERY_NOT_FOUND, -1)
    assert oc.broker_query_offset(NO_OFFSET, 5, False) == (ResponseCode.QUERY_NOT_FOUND, -1)


@given(st.integers(-3, 20), st.integers(-3, 20), st.booleans())
def test_broker_query_offset_property(stored: int, min_offset: int, on_disk: bool) -> None:
    code, offset = oc.broker_query_offset(stored, min_offset, on_disk)
    if stored >= 0:
        assert (code, offset) == (ResponseCode.SUCCESS, stored)
    elif min_offset <= 0 and not on_disk:
        assert (code, offset) == (ResponseCode.SUCCESS, 0)
    else:
        assert code == ResponseCode.QUERY_NOT_FOUND


@given(st.integers(NO_OFFSET, 30), st.integers(0, 30))
def test_broker_commit_overwrites(stored: int, offset: int) -> None:
    assert oc.broker_commit(stored, offset) == (offset, offset < stored)


def test_broker_commit_takes_a_lower_offset() -> None:
    assert oc.broker_commit(10, 3) == (3, True)
    assert oc.broker_commit(NO_OFFSET, 3) == (3, False)


def test_pull_commit_request_examples() -> None:
    """What a Java push consumer puts in PULL_MESSAGE: sysFlag 2|3, or 6|7 with postSubscriptionWhenPull as
    the C++ client always does (shared/REFERENCE.md D)."""
    assert oc.pull_commit_request(CLUSTERING, 5) == (5, PULL_FLAG_SUSPEND | PULL_FLAG_COMMIT_OFFSET)
    assert oc.pull_commit_request(CLUSTERING, 0) == (0, PULL_FLAG_SUSPEND)
    assert oc.pull_commit_request(CLUSTERING, NO_OFFSET) == (-1, PULL_FLAG_SUSPEND)
    assert oc.pull_commit_request(CLUSTERING, 5, to_slave=True) == (5, PULL_FLAG_SUSPEND)
    assert oc.pull_commit_request(BROADCASTING, 5) == (0, PULL_FLAG_SUSPEND)
    assert oc.pull_commit_request(CLUSTERING, 5, post_subscription=True) == (5, 7)
    assert oc.pull_commit_request(CLUSTERING, 0, post_subscription=True) == (0, 6)
    assert oc.pull_commit_request(CLUSTERING, 5, post_subscription=True, class_filter=True) == (5, 11)


@given(st.sampled_from(list(MessageModel)), st.integers(NO_OFFSET, 20), st.booleans(), st.booleans(),
       st.booleans())
def test_pull_commit_request_property(model: MessageModel, memory: int, to_slave: bool, post_sub: bool,
                                      class_filter: bool) -> None:
    commit, flag = oc.pull_commit_request(model, memory, to_slave, post_sub, class_filter)
    assert flag & PULL_FLAG_SUSPEND
    assert commit == (memory if model == CLUSTERING else 0)
    assert bool(flag & PULL_FLAG_COMMIT_OFFSET) == (model == CLUSTERING and memory > 0 and not to_slave)
    assert bool(flag & PULL_FLAG_SUBSCRIPTION) == (post_sub and not class_filter)


@given(st.integers(0, 31), st.booleans(), st.booleans(), st.booleans())
def test_broker_stores_pull_commit(flag: int, first: bool, slave: bool, checked: bool) -> None:
    stores = oc.broker_stores_pull_commit(flag, first, slave, checked)
    assert stores == (bool(flag & PULL_FLAG_COMMIT_OFFSET) and first and not slave and checked)
    # A long-poll wake-up re-runs the request without committing again.
    assert not oc.broker_stores_pull_commit(flag, False, slave, checked)


# --- Where a queue starts; the broker's oracles (OFF-20 .. OFF-22, OFF-25, OFF-27, OFF-28) ---------------------


def test_pull_start_by_consume_from_where() -> None:
    """computePullFromWhereWithException: a stored offset wins; without one FIRST starts at 0, LAST at the end (a
    retry topic at 0), TIMESTAMP at searchOffset (a retry topic at the end); a failed read leaves the queue out."""
    for where in (FIRST, LAST, TIMESTAMP):
        assert oc.pull_start(where, 7, False, 20, 3) == 7
        assert oc.pull_start(where, -2, False, 20, 3) == -1
    assert oc.pull_start(FIRST, -1, False, 20, 3) == 0
    assert oc.pull_start(LAST, -1, False, 20, 3) == 20
    assert oc.pull_start(LAST, -1, True, 20, 3) == 0
    assert oc.pull_start(TIMESTAMP, -1, False, 20, 3) == 3
    assert oc.pull_start(TIMESTAMP, -1, True, 20, 3) == 20


def java_offset_by_time(times: list[int], timestamp: int) -> int:
    """ConsumeQueue.getOffsetInQueueByTime over one file, transcribed with its byte arithmetic (20-byte units)."""
    unit = 20
    if not times:
        return 0
    low, high = 0, len(times) * unit - unit
    target = left = right = -1
    left_value = right_value = -1
    while high >= low:
        mid = (low + high) // (2 * unit) * unit
        stored = times[mid // unit]
        if stored == timestamp:
            target = mid
            break
        if stored > timestamp:
            high, right, right_value = mid - unit, mid, stored
        else:
            low, left, left_value = mid + unit, mid, stored
    if target != -1:
        offset = target
    elif left_value == -1:
        offset = right
    elif right_value == -1:
        offset = left
    else:
        offset = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
    return offset // unit


@given(st.lists(st.integers(0, 30), max_size=7).map(sorted), st.integers(-5, 40))
def test_offset_by_time_matches_java(times: list[int], timestamp: int) -> None:
    found = oc.offset_by_time(tuple(times), timestamp)
    assert found == java_offset_by_time(times, timestamp)
    if times:
        assert all(abs(times[found] - timestamp) <= abs(t - timestamp) for t in times)


def test_offset_by_time_examples() -> None:
    """OFF-21: an exact entry, the nearer neighbour (the earlier on a tie), the first entry before every message,
    the last entry (not the max offset) after every message, 0 for an empty queue."""
    times = (100, 200, 300)
    assert oc.offset_by_time(times, 200) == 1
    assert oc.offset_by_time(times, 240) == 1 and oc.offset_by_time(times, 260) == 2
    assert oc.offset_by_time(times, 250) == 1
    assert oc.offset_by_time(times, 5) == 0
    assert oc.offset_by_time(times, 10**13) == 2
    assert oc.offset_by_time((), 5) == 0


@given(st.lists(st.integers(0, 3000), max_size=5).map(sorted), st.integers(0, 4000), st.booleans())
def test_crash_keeps(times: list[int], crash_ms: int, sync: bool) -> None:
    kept = oc.crash_keeps(tuple(times), crash_ms, sync)
    if sync:
        assert kept == len(times)
    else:
        assert kept == len([t for t in times if t <= crash_ms - FLUSH_INTERVAL_COMMITLOG_MS])
    assert oc.offset_after_restart(5, 2, True) == 2 and oc.offset_after_restart(5, 2, False) == 5


@given(st.lists(st.integers(1, 50), max_size=4).map(sorted), st.integers(NO_OFFSET, 6),
       st.sampled_from([-1, 0, 10, 25, 60]), st.booleans())
def test_reset_target(times: list[int], committed: int, timestamp: int, force: bool) -> None:
    target = oc.reset_target(tuple(times), committed, timestamp, force)
    if committed == NO_OFFSET:
        assert target is None
        return
    by_time = len(times) if timestamp == -1 else oc.offset_by_time(tuple(times), timestamp)
    assert target == (by_time if force or by_time < committed else committed)


def test_consume_stats_and_time_span_rows() -> None:
    times = (1000, 2000, 3000)
    assert oc.consume_stats_row(times, 2) == (3, 2, 2000)
    assert oc.consume_stats_row(times, NO_OFFSET) == (3, 0, 0)
    assert oc.consume_stats_row(times, 5) == (3, 5, 0)  # past the max offset: no message before it
    assert oc.consume_time_span(times, 1, 9000) == (1000, 3000, 1000, 7000)
    assert oc.consume_time_span(times, 3, 9000) == (1000, 3000, 3000, 0)
    assert oc.consume_time_span(times, NO_OFFSET, 9000) == (1000, 3000, 1000, 9000 - NO_TIME)
    assert oc.consume_time_span((), NO_OFFSET, 9000) == (NO_TIME, NO_TIME, NO_TIME, 9000 - NO_TIME)




# --- Sensitivity: CrossHair finds broken oracles ---------------------------------------------------------


def test_crosshair_finds_remove_returning_largest_removed_plus_one() -> None:
    mod = mutant(oc, "result = remaining[0] if remaining else pq.queue_offset_max + 1",
                 "result = max((o for o in pq.cached if o in offsets), default=pq.queue_offset_max) + 1")
    run_ = crosshair_mutant(mod, "remove_messages", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


def test_crosshair_finds_broker_taking_the_max() -> None:
    mod = mutant(oc, "return offset, offset < stored", "return max(offset, stored), offset < stored")
    run_ = crosshair_mutant(mod, "broker_commit", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


def test_crosshair_finds_increase_only_ignored() -> None:
    mod = mutant(oc, "if current == NO_OFFSET or not increase_only:", "if True:")
    run_ = crosshair_mutant(mod, "update_offset", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


def test_crosshair_finds_last_offset_taken_as_first() -> None:
    mod = mutant(oc, "    return 0 if retry else max_offset\n", "    return 0\n")
    run_ = crosshair_mutant(mod, "pull_start", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


def test_crosshair_finds_search_by_time_past_the_end_answering_the_max_offset() -> None:
    mod = mutant(oc, "    if right_time == NO_TIME:\n        return left\n",
                 "    if right_time == NO_TIME:\n        return left + 1\n")
    run_ = crosshair_mutant(mod, "offset_by_time", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)
