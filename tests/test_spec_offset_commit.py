"""offset_commit: ProcessQueue offsets, offset stores, broker commits and the at-least-once machine."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import offset_commit as oc
from rocketspec.spec.explorer import STEP_RAISED, explore
from rocketspec.spec.offset_commit import (
    NO_OFFSET,
    CommitArrives,
    Config,
    ConsumeFinished,
    ConsumerCrashed,
    ConsumeRequest,
    OffsetState,
    OffsetUpdated,
    OrderlyConsumed,
    PersistAll,
    ProcessQueueState,
    PullFound,
    PullNoNewMessage,
    QueueAssigned,
    QueueDropped,
    StoreRead,
    TakeMessages,
)
from rocketspec.spec.protocol import (
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    MessageModel,
    ReadOffsetType,
    ResponseCode,
)
from rocketspec.spec.versions import V4_9_3, V4_9_8

CLUSTERING, BROADCASTING = MessageModel.CLUSTERING, MessageModel.BROADCASTING


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


# --- The machine: scenarios ---------------------------------------------------------------------------------


def run(state: OffsetState, *actions: oc.Action) -> OffsetState:
    for action in actions:
        assert oc.enabled(state, action), action
        state = oc.step(state, action)
        for inv in oc.INVARIANTS:
            assert inv.holds(state), inv.name
    return state


def test_enabled_needs_the_queue_held() -> None:
    idle = OffsetState(Config())
    assert oc.enabled(idle, QueueAssigned()) and oc.enabled(idle, ConsumerCrashed())
    for action in (PullFound(), PullNoNewMessage(), PersistAll(), QueueDropped(), TakeMessages(),
                   OrderlyConsumed(True), OffsetUpdated(ConsumeRequest((0,), 1)), CommitArrives(0)):
        assert not oc.enabled(idle, action)
    held = oc.step(idle, QueueAssigned())
    assert not oc.enabled(held, QueueAssigned()) and oc.enabled(held, PullFound())
    assert not oc.enabled(held, TakeMessages())  # concurrent machine
    with pytest.raises(ValueError):
        oc.step(idle, PullFound())


def test_increase_only_keeps_the_memory_offset_when_results_are_written_out_of_order() -> None:
    """Three consume threads remove 0, 1, 2 in order but write their results 3, then 1 and 2 (OFF-5)."""
    state = run(OffsetState(Config(messages=3, pull_batch=3)), QueueAssigned(), PullFound())
    for offset in (0, 1, 2):
        state = run(state, ConsumeFinished(ConsumeRequest((offset,))))
    pending = {r.removed: r for r in state.held.requests}  # type: ignore[union-attr]
    assert set(pending) == {1, 2, 3}
    state = run(state, OffsetUpdated(pending[3]))
    assert state.memory == 3
    state = run(state, OffsetUpdated(pending[1]), OffsetUpdated(pending[2]))
    assert state.memory == 3


def test_broker_offset_can_move_back_and_at_least_once_holds() -> None:
    """Commits travel in any order and the broker overwrites (OFF-8): a stale persist lowers the offset."""
    state = run(OffsetState(Config(messages=3, pull_batch=3)), QueueAssigned(), PullFound())
    first = ConsumeRequest((0,))
    state = run(state, ConsumeFinished(first), OffsetUpdated(ConsumeRequest((0,), 1)), PersistAll())
    state = run(state, ConsumeFinished(ConsumeRequest((1,))), OffsetUpdated(ConsumeRequest((1,), 2)),
                PersistAll())
    assert state.in_flight == (1, 2)
    state = run(state, CommitArrives(2), CommitArrives(1))
    assert state.stored == 1 and state.memory == 2


def test_crash_redelivers_from_the_broker_offset_only() -> None:
    """After a crash the consumer resumes at the broker offset: messages consumed since then come again."""
    state = run(OffsetState(Config(messages=3, pull_batch=3)), QueueAssigned(), PullFound())
    state = run(state, ConsumeFinished(ConsumeRequest((0,))), OffsetUpdated(ConsumeRequest((0,), 1)),
                PersistAll(), CommitArrives(1))
    state = run(state, ConsumeFinished(ConsumeRequest((1,))), OffsetUpdated(ConsumeRequest((1,), 2)))
    state = run(state, ConsumerCrashed(), QueueAssigned())
    assert state.held is not None and state.held.next_offset == 1 and state.memory == 1
    assert state.done == {0, 1}
    state = run(state, PullFound())
    assert state.held is not None and state.held.pq.cached == (1, 2)


def test_stale_commit_after_a_crash_passes_a_redelivered_message() -> None:
    """A commit sent before a crash may land after the restart: the broker offset then passes a message the
    new ProcessQueue holds again, which is why OFF-18 speaks of the memory entry and OFF-17 of handled
    messages."""
    state = run(OffsetState(Config(messages=3, pull_batch=3)), QueueAssigned(), PullFound())
    for offset in (0, 1):
        state = run(state, ConsumeFinished(ConsumeRequest((offset,))),
                    OffsetUpdated(ConsumeRequest((offset,), offset + 1)))
    state = run(state, PersistAll(), ConsumerCrashed(), QueueAssigned(), PullFound())
    assert state.held is not None and state.held.pq.cached == (0, 1, 2) and state.stored == NO_OFFSET
    state = run(state, CommitArrives(2))
    assert state.stored == 2 and 0 in state.held.pq.cached and oc.at_least_once(state)


def test_no_new_message_commits_the_end_only_when_nothing_is_cached() -> None:
    state = run(OffsetState(Config(messages=1, pull_batch=1)), QueueAssigned(), PullFound(),
                PullNoNewMessage())
    assert state.memory == 0
    state = run(state, ConsumeFinished(ConsumeRequest((0,))), PullNoNewMessage())
    assert state.memory == 1


def test_orderly_commit_writes_the_last_taken_plus_one() -> None:
    state = run(OffsetState(Config(orderly=True, messages=3, pull_batch=3, consume_batch=2)), QueueAssigned(),
                PullFound(), TakeMessages(), OrderlyConsumed(False), TakeMessages(), OrderlyConsumed(True))
    assert state.memory == 2 and state.done == {0, 1}


def test_late_write_after_a_drop_raises_the_new_memory_entry() -> None:
    """OFF-12: a consume thread of the dropped ProcessQueue that passed the isDropped check writes after the
    queue came back; the memory entry then passes messages of the new ProcessQueue, all already handled."""
    config = Config(CLUSTERING, False, V4_9_8, messages=2, pull_batch=2, late_writes=True)
    state = run(OffsetState(config), QueueAssigned(), PullFound(), ConsumeFinished(ConsumeRequest((0,))),
                ConsumeFinished(ConsumeRequest((1,))), QueueDropped())
    assert state.late == (2,) and state.memory == NO_OFFSET and state.in_flight == (0,)
    state = run(state, QueueAssigned(), PullFound(), oc.LateOffsetWrite(2))
    assert state.held is not None and state.held.late_write and state.held.pq.cached == (0, 1)
    assert state.memory == 2 and oc.at_least_once(state)
    assert not oc.enabled(state, oc.LateOffsetWrite(2))


def test_late_pull_answer_after_a_drop_raises_the_new_memory_entry() -> None:
    """OFF-12: a pull of the dropped ProcessQueue, with nothing cached, answered NO_NEW_MSG after the queue came
    back: correctTagsOffset (no isDropped check in 4.9.8) writes its offset over the new memory entry."""
    config = Config(CLUSTERING, False, V4_9_8, messages=2, pull_batch=2, late_writes=True)
    state = run(OffsetState(config), QueueAssigned(), PullFound(), ConsumeFinished(ConsumeRequest((0,))),
                ConsumeFinished(ConsumeRequest((1,))), OffsetUpdated(ConsumeRequest((0,), 1)),
                OffsetUpdated(ConsumeRequest((1,), 2)), QueueDropped())
    assert state.late == (2,) and state.memory == NO_OFFSET and state.in_flight == (2,)
    state = run(state, QueueAssigned(), oc.LateOffsetWrite(2))
    assert state.held is not None and state.held.late_write and state.held.next_offset == 0
    assert state.memory == 2 and oc.at_least_once(state)


def test_broadcasting_before_4_9_8_keeps_a_stale_memory_offset_after_a_drop() -> None:
    """OFF-18's versions: 4.9.3's LocalFileOffsetStore neither persists nor forgets on a drop."""
    config = Config(BROADCASTING, False, V4_9_3, messages=2, pull_batch=2)
    state = run(OffsetState(config), QueueAssigned(), PullFound(), ConsumeFinished(ConsumeRequest((0,))),
                OffsetUpdated(ConsumeRequest((0,), 1)), QueueDropped())
    assert state.stored == NO_OFFSET and state.memory == 1
    state = run(state, QueueAssigned())
    assert state.held is not None and state.held.next_offset == 0 and state.memory == 1
    assert oc.at_least_once(state)
    newer = run(OffsetState(Config(BROADCASTING, False, V4_9_8, messages=2, pull_batch=2)), QueueAssigned(),
                PullFound(), ConsumeFinished(ConsumeRequest((0,))), OffsetUpdated(ConsumeRequest((0,), 1)),
                QueueDropped(), QueueAssigned())
    assert newer.stored == 1 and newer.memory == 1 and newer.held is not None and newer.held.next_offset == 1


@given(st.lists(st.integers(0, 10_000), max_size=40), st.sampled_from(range(len(oc.default_variants()))))
def test_random_walks_keep_every_invariant(choices: list[int], variant: int) -> None:
    """enabled/step on random paths of each default machine: every invariant holds after every step."""
    machine = oc.model()
    state = machine.initial[variant]
    for choice in choices:
        options = [a for a in machine.actions(state) if oc.enabled(state, a)]
        if not options:
            break
        action = options[choice % len(options)]
        after = oc.step(state, action)
        assert all(inv.holds(after) for inv in oc.INVARIANTS)
        assert all(inv.holds(state, action, after) for inv in oc.STEP_INVARIANTS)
        state = after


# --- Exhaustive exploration --------------------------------------------------------------------------------


def test_explore_default_model() -> None:
    started = time.perf_counter()
    result = explore(oc.model())
    seconds = time.perf_counter() - started
    assert result.complete and result.ok, [v.describe() for v in result.violations]
    assert result.states > 40_000
    print(f"offset_commit: {result.states} states, {result.transitions} transitions, depth {result.depth}, "
          f"{seconds:.1f} s")


# --- Sensitivity: broken rules are caught ------------------------------------------------------------------

SMALL = {"messages": 3, "pull_batch": 2, "max_crashes": 0, "max_drops": 0}


def failed(mod: object, variants: tuple[Config, ...], **bounds: int) -> set[str]:
    """The clauses whose invariants the explorer breaks on the mutant (a step that raises does not count)."""
    result = explore(mod.model(variants=variants, **{**SMALL, **bounds}))  # type: ignore[attr-defined]
    assert result.complete
    assert all(v.invariant != STEP_RAISED for v in result.violations), result.violations
    return result.failed_clauses()


def concurrent(consume_batch: int = 1, failures: int = 0) -> tuple[Config, ...]:
    return (Config(CLUSTERING, False, V4_9_8, 3, 2, consume_batch, failures),)


def test_mutant_increase_only_ignored() -> None:
    mod = mutant(oc, "memory = update_offset(state.memory, written, True)",
                 "memory = update_offset(state.memory, written, False)")
    assert "OFF-5" in failed(mod, concurrent())


def test_mutant_remove_returns_largest_removed_plus_one() -> None:
    mod = mutant(oc, "result = remaining[0] if remaining else pq.queue_offset_max + 1",
                 "result = max((o for o in pq.cached if o in offsets), default=pq.queue_offset_max) + 1")
    clauses = failed(mod, concurrent())
    assert {"OFF-18", "OFF-17"} <= clauses


def test_mutant_remove_returns_max_plus_one_while_messages_remain() -> None:
    mod = mutant(oc, "result = remaining[0] if remaining else pq.queue_offset_max + 1",
                 "result = pq.queue_offset_max + 1")
    assert {"OFF-18", "OFF-17", "OFF-3"} <= failed(mod, concurrent())


def test_mutant_commit_before_consumption() -> None:
    """The pulled batch is committed on arrival, before any listener ran."""
    mod = mutant(oc, "held=pulled)", "held=pulled, memory=end)")
    assert {"OFF-17", "OFF-18"} <= failed(mod, concurrent())


def test_mutant_broker_takes_the_max() -> None:
    mod = mutant(oc, "return offset, offset < stored", "return max(offset, stored), offset < stored")
    assert "OFF-8" in failed(mod, concurrent())


def test_mutant_failed_send_back_dropped_from_the_process_queue() -> None:
    mod = mutant(oc, "after, offset = _without(pq, tuple(o for o in batch if o not in retried))",
                 "after, offset = _without(pq, batch)")
    assert "OFF-19" in failed(mod, concurrent(2, 1))


def test_mutant_pull_commits_offset_zero_and_slave_pulls() -> None:
    mod = mutant(oc, "if commit_value > 0 and not to_slave:", "if commit_value >= 0:")
    assert "OFF-9" in failed(mod, concurrent())


def test_mutant_no_new_message_ignores_taken_messages() -> None:
    """correctTagsOffset must look at msgCount, which counts orderly taken messages too (OFF-14)."""
    mod = mutant(oc, "if held.pq.msg_count == 0:", "if not held.pq.cached:")
    orderly = (Config(CLUSTERING, True, V4_9_8, 2, 2, 1),)
    assert "OFF-14" in failed(mod, orderly)


def test_mutant_orderly_commit_skips_a_message() -> None:
    mod = mutant(oc, "pq.taken[-1] + 1", "pq.taken[-1] + 2")
    orderly = (Config(CLUSTERING, True, V4_9_8, 3, 2, 1),)
    assert {"OFF-17", "OFF-15"} <= failed(mod, orderly)


def test_mutant_assignment_ignores_the_broker_offset() -> None:
    """A re-added queue that starts at the memory entry's successor instead of the stored offset loses
    messages consumed by nobody (OFF-13, OFF-19)."""
    mod = mutant(oc, "start = answer if answer >= 0 else 0", "start = max(answer, 0) + 1")
    assert {"OFF-13", "OFF-19"} <= failed(mod, concurrent(), max_crashes=1)


def test_late_writes_need_the_exemption() -> None:
    """Without OFF-18's exception for late writes the explorer finds the race of OFF-12."""
    mod = mutant(oc, "if state.memory == NO_OFFSET or not state.config.forgets or held.late_write:",
                 "if state.memory == NO_OFFSET or not state.config.forgets:")
    late = (Config(CLUSTERING, False, V4_9_8, 2, 2, 1, late_writes=True),)
    assert "OFF-18" in failed(mod, late, max_drops=1)
    assert failed(oc, late, max_drops=1, max_crashes=1) == set()


def test_broadcasting_4_9_3_needs_the_versioned_exemption() -> None:
    """Without OFF-18's version note the explorer finds 4.9.3's stale memory offset after a drop."""
    mod = mutant(oc, "if state.memory == NO_OFFSET or not state.config.forgets or held.late_write:",
                 "if state.memory == NO_OFFSET or held.late_write:")
    old = (Config(BROADCASTING, False, V4_9_3, 2, 2, 1),)
    new = (Config(BROADCASTING, False, V4_9_8, 2, 2, 1),)
    assert "OFF-18" in failed(mod, old, max_drops=1)
    assert failed(mod, new, max_drops=1) == set()


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
