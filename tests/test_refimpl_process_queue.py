"""The push consumer's ProcessQueue (refimpl/client/process_queue.py): ProcessQueue.java semantics."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl.client.process_queue import ProcessQueue
from rocketspec.refimpl.message import MessageExt
from rocketspec.spec.protocol import CLIENT_LOCK_EXPIRY_MS, PULL_MAX_IDLE_MS, Property
from rocketspec.spec.queues import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def msg(offset: int, body: bytes = b"xx", **props: str) -> MessageExt:
    return MessageExt(
        topic="T", body=body, tags=None, keys=(), msg_id=f"id{offset}", offset_msg_id=f"o{offset}", queue=MQ,
        queue_id=0, queue_offset=offset, commit_log_offset=offset * 100, reconsume_times=0, properties=dict(props),
        born_timestamp=0, store_timestamp=0, born_host="127.0.0.1:1", store_host="127.0.0.1:10911", sys_flag=0,
        flag=0, prepared_transaction_offset=0, store_size=100, broker_name="broker-a", body_crc=0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_put_caches_only_new_offsets_and_dispatches_once() -> None:
    pq = ProcessQueue(Clock())
    assert pq.put_messages([msg(0), msg(1)]) is True
    assert pq.consuming
    assert pq.put_messages([msg(1), msg(2)]) is False  # already consuming
    assert pq.msg_count == 3 and pq.msg_size == 6
    assert pq.queue_offset_max == 2
    assert pq.max_span() == 2


def test_put_sets_accumulated_count_from_max_offset() -> None:
    pq = ProcessQueue(Clock())
    pq.put_messages([msg(3, **{Property.MAX_OFFSET: "10"})])
    assert pq.msg_acc_cnt == 7


def test_remove_returns_smallest_remaining_or_max_plus_one() -> None:
    pq = ProcessQueue(Clock())
    assert pq.remove_messages([msg(0)]) == -1  # empty before
    pq.put_messages([msg(5), msg(6), msg(7)])
    assert pq.remove_messages([msg(6)]) == 5
    assert pq.remove_messages([msg(5)]) == 7
    assert pq.remove_messages([msg(7)]) == 8
    assert pq.msg_count == 0 and pq.msg_size == 0


def test_orderly_take_commit_and_consume_again() -> None:
    pq = ProcessQueue(Clock())
    pq.put_messages([msg(i) for i in range(4)])
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [0, 1]
    assert list(pq.consuming_orderly) == [0, 1] and list(pq.msg_tree) == [2, 3]
    again = [attrs.evolve(m, reconsume_times=1) for m in taken]
    pq.make_message_to_consume_again(again)
    assert not pq.consuming_orderly and list(pq.msg_tree) == [0, 1, 2, 3]
    assert pq.msg_tree[0].reconsume_times == 1
    assert [m.queue_offset for m in pq.take_messages(3)] == [0, 1, 2]
    assert pq.commit() == 3
    assert pq.msg_count == 1 and pq.msg_size == 2
    assert [m.queue_offset for m in pq.take_messages(5)] == [3]
    assert pq.commit() == 4 and pq.msg_count == 0 and pq.msg_size == 0
    assert pq.take_messages(1) == [] and not pq.consuming
    assert pq.commit() == -1


def test_rollback_puts_the_batch_back() -> None:
    pq = ProcessQueue(Clock())
    pq.put_messages([msg(0), msg(1)])
    pq.take_messages(2)
    pq.rollback()
    assert list(pq.msg_tree) == [0, 1] and not pq.consuming_orderly


def test_lock_and_pull_expiry() -> None:
    clock = Clock()
    pq = ProcessQueue(clock)
    assert not pq.is_lock_expired() and not pq.is_pull_expired()
    clock.now += CLIENT_LOCK_EXPIRY_MS + 1
    assert pq.is_lock_expired() and not pq.is_pull_expired()
    clock.now += PULL_MAX_IDLE_MS
    assert pq.is_pull_expired()


def test_consume_lock_waiters() -> None:
    pq = ProcessQueue(Clock())
    woken: list[Any] = []
    assert pq.try_consume_lock()
    assert not pq.try_consume_lock()
    pq.on_consume_lock_released(lambda: woken.append(pq.try_consume_lock()))
    pq.release_consume_lock()
    assert woken == [True] and pq.consume_lock_held


def test_clear() -> None:
    pq = ProcessQueue(Clock())
    pq.put_messages([msg(0), msg(1)])
    pq.take_messages(1)
    pq.clear()
    assert pq.msg_count == 0 and not pq.msg_tree and not pq.consuming_orderly and pq.queue_offset_max == 0


@given(st.lists(st.lists(st.integers(0, 30), max_size=6), max_size=6), st.data())
def test_commit_offset_never_passes_an_unconsumed_message(batches: list[list[int]], data: st.DataObject) -> None:
    """Concurrent consumption: whatever order batches finish in, the returned offset is at most the smallest
    offset still cached (so no unconsumed message is committed past)."""
    pq = ProcessQueue(Clock())
    cached: set[int] = set()
    for batch in batches:
        pq.put_messages([msg(o) for o in batch])
        cached |= set(batch)
        if cached:
            done = data.draw(st.lists(st.sampled_from(sorted(cached)), max_size=4, unique=True))
            offset = pq.remove_messages([msg(o) for o in done])
            cached -= set(done)
            if cached:
                assert offset == min(cached)
            assert pq.msg_count == len(cached)
