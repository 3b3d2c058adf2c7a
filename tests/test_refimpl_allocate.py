"""The reference implementation's queue allocation strategies (refimpl/client/allocate.py).

Pinned examples from RocketMQ's behaviour, properties (every queue owned exactly once for AVG, AVG_BY_CIRCLE and
CONSISTENT_HASH; AVG/AVG_BY_CIRCLE sizes differ by at most one), and agreement with the spec's oracle (the refimpl is
written independently of it; the test may compare the two).
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl.client.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueConsistentHash,
    java_string_key,
    make_strategy,
    md5_hash,
    sort_consumer_ids,
    strategy_name,
)
from rocketspec.spec import rebalance as spec_rebalance
from rocketspec.spec.queues import MessageQueue


def queues(n: int, topic: str = "T", brokers: tuple[str, ...] = ("broker-a",)) -> list[MessageQueue]:
    return [MessageQueue(topic, b, i) for b in brokers for i in range(n)]


def owners(strategy: str, mqs: list[MessageQueue], ids: list[str], **config: object) -> dict[str, list]:
    impl = make_strategy(strategy, config)
    return {cid: impl.allocate("G", cid, mqs, ids) for cid in ids}


def test_avg_eight_queues_three_consumers() -> None:
    mqs = queues(8)
    got = owners("AVG", mqs, ["c1", "c2", "c3"])
    assert got == {"c1": mqs[0:3], "c2": mqs[3:6], "c3": mqs[6:8]}


def test_avg_more_consumers_than_queues() -> None:
    mqs = queues(2)
    got = owners("AVG", mqs, ["a", "b", "c"])
    assert got == {"a": [mqs[0]], "b": [mqs[1]], "c": []}


def test_avg_by_circle_pinned() -> None:
    mqs = queues(8)
    got = owners("AVG_BY_CIRCLE", mqs, ["c1", "c2", "c3"])
    assert got == {"c1": [mqs[0], mqs[3], mqs[6]], "c2": [mqs[1], mqs[4], mqs[7]], "c3": [mqs[2], mqs[5]]}


def test_inputs_are_sorted_like_rebalance_impl() -> None:
    mqs = queues(2, brokers=("broker-b", "broker-a"))
    impl = AllocateMessageQueueAveragely()
    assert impl.allocate("G", "x", list(reversed(mqs)), ["y", "x"]) == [
        MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)]


def test_consumer_not_listed_gets_nothing_and_bad_args_raise() -> None:
    for name in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
        impl = make_strategy(name)
        assert impl.allocate("G", "ghost", queues(3), ["a", "b"]) == []
        with pytest.raises(ValueError):
            impl.allocate("G", "", queues(3), ["a"])
        with pytest.raises(ValueError):
            impl.allocate("G", "a", [], ["a"])
        with pytest.raises(ValueError):
            impl.allocate("G", "a", queues(3), [])
    with pytest.raises(ValueError):
        AllocateMessageQueueConsistentHash(-1)
    with pytest.raises(ValueError):
        make_strategy("NOPE")
    with pytest.raises(ValueError):
        make_strategy("CONFIG")
    with pytest.raises(ValueError):
        make_strategy("MACHINE_ROOM")


def test_config_returns_the_configured_list() -> None:
    configured = [MessageQueue("T", "broker-b", 3)]
    impl = make_strategy("CONFIG", {"queues": configured})
    assert impl.allocate("G", "anyone", queues(2), ["x"]) == configured
    assert strategy_name(impl) == "CONFIG"


def test_machine_room_pinned() -> None:
    mqs = [MessageQueue("T", f"{idc}@broker-{b}", i) for idc in ("hz", "sh") for b in "ab" for i in range(2)]
    got = owners("MACHINE_ROOM", mqs, ["c1", "c2", "c3"], consumer_idcs=["hz"])
    hz = sorted(m for m in mqs if m.broker_name.startswith("hz@"))
    assert got == {"c1": [hz[0], hz[3]], "c2": [hz[1]], "c3": [hz[2]]}


def test_consistent_hash_ring_uses_md5_of_virtual_node_keys() -> None:
    impl = AllocateMessageQueueConsistentHash(2)
    keys, ring_owners = impl.ring(["a"])
    assert keys == sorted([md5_hash("a-0"), md5_hash("a-1")]) and ring_owners == ["a", "a"]
    # md5("a-0") = a165efd1...: the first four bytes, big-endian, unsigned.
    assert md5_hash("a-0") == 0xA165EFD1


def test_custom_strategy_object_is_used_as_is() -> None:
    class Mine:
        name = "MINE"

        def allocate(self, group, cid, mqs, ids):
            return list(mqs)[:1]

    mine = Mine()
    assert make_strategy(mine) is mine
    with pytest.raises(ValueError):
        make_strategy(object())


def test_java_string_order_of_ids() -> None:
    # U+FFFF sorts after a supplementary character in Python but before it in Java (UTF-16 code units).
    ids = ["\uffff", "\U00010000", "b", "a"]
    assert sort_consumer_ids(ids) == ["a", "b", "\U00010000", "\uffff"]
    assert sorted(ids) == ["a", "b", "\uffff", "\U00010000"]
    assert java_string_key("\uffff") > java_string_key("\U00010000")


id_lists = st.lists(st.text(alphabet="abcxyz@.:0123456789", min_size=1, max_size=6), min_size=1, max_size=6,
                    unique=True)
queue_lists = st.lists(
    st.builds(MessageQueue, st.sampled_from(["T", "U"]), st.sampled_from(["broker-a", "broker-b", "hz@broker-c"]),
              st.integers(0, 7)),
    min_size=1, max_size=16, unique=True)


@given(queue_lists, id_lists, st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]))
def test_every_queue_has_exactly_one_owner(mqs: list[MessageQueue], ids: list[str], name: str) -> None:
    got = owners(name, mqs, ids)
    counts = Counter(mq for owned in got.values() for mq in owned)
    assert set(counts) == set(mqs)
    assert set(counts.values()) == {1}


@given(queue_lists, id_lists, st.sampled_from(["AVG", "AVG_BY_CIRCLE"]))
def test_average_sizes_differ_by_at_most_one(mqs: list[MessageQueue], ids: list[str], name: str) -> None:
    sizes = [len(v) for v in owners(name, mqs, ids).values()]
    assert max(sizes) - min(sizes) <= 1


@given(queue_lists, id_lists, st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"]),
       st.data())
def test_agrees_with_the_spec_oracle(mqs: list[MessageQueue], ids: list[str], name: str, data: st.DataObject) -> None:
    cid = data.draw(st.sampled_from([*ids, "not-listed"]))
    config: dict[str, object] = {}
    if name == "MACHINE_ROOM":
        config = {"consumer_idcs": ["hz"]}
    impl = make_strategy(name, config)
    ours = impl.allocate("G", cid, list(reversed(mqs)), list(reversed(ids)))
    assert ours == spec_rebalance.allocate(name, cid, mqs, ids, **config)
