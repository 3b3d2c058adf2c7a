"""Tests of the rebalance spec: allocation oracles, the table update, the orderly lock, and the group machine."""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.contracts import CrosshairRun
from rocketspec.spec import rebalance as reb
from rocketspec.spec.explorer import Exploration, Invariant, explore
from rocketspec.spec.protocol import (
    BROKER_LOCK_EXPIRY_MS,
    CLIENT_LOCK_EXPIRY_MS,
    PULL_MAX_IDLE_MS,
    UNLOCK_DELAY_MS_WHEN_CACHED,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue, java_string_key, sorted_queues
from rocketspec.spec.versions import V4_9_3, V4_9_8, VersionProfile

TOPIC = "TopicTest"
FIRST, LAST, TIMESTAMP = (
    ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
)

# ---------------------------------------------------------------------------------------------------------------
# CrossHair on deliberately broken copies runs in the background while the other tests run.
# ---------------------------------------------------------------------------------------------------------------

CROSSHAIR_MUTANTS: dict[str, tuple[str, str, str]] = {
    # name: (old text, new text, function)
    "AVG start without + mod": (
        "start = index * size if (mod > 0 and index < mod) else index * size + mod",
        "start = index * size",
        "avg_slice",
    ),
    "AVG_BY_CIRCLE off by one": (
        "return tuple(j for j in range(index, queue_count) if j % consumer_count == index)",
        "return tuple(j for j in range(index + 1, queue_count) if j % consumer_count == index)",
        "circle_positions",
    ),
    "consumer ids left unsorted": (
        "    ids = sorted_ids(consumer_ids)\n",
        "    ids = list(dict.fromkeys(consumer_ids))\n",
        "allocate",
    ),
    "retry topic starts at the max offset under LAST_OFFSET": (
        "        if retry:\n            return 0\n",
        "        if retry:\n            return NOT_ADDED if max_offset is None else max_offset\n",
        "compute_pull_from_where",
    ),
    "orderly removal ignores a running batch": (
        "    if not consume_lock_free:\n"
        "        return Removal(persist_offset=True, removed=False, unlock=Unlock.NONE)\n",
        "",
        "removal",
    ),
    "lock granted from a live holder": (
        "    return idle_ms > BROKER_LOCK_EXPIRY_MS\n",
        "    return idle_ms > CLIENT_LOCK_EXPIRY_MS\n",
        "broker_lock_granted",
    ),
}

_pool = ThreadPoolExecutor(max_workers=2)
_crosshair_runs: dict[str, Future[CrosshairRun]] = {}


def _submit_crosshair_mutants() -> None:
    if not _crosshair_runs:
        for key, (old, new, function) in CROSSHAIR_MUTANTS.items():
            broken = mutant(reb, old, new)
            _crosshair_runs[key] = _pool.submit(crosshair_mutant, broken, function, 4.0)


def _crosshair_run(name: str) -> CrosshairRun:
    _submit_crosshair_mutants()
    return _crosshair_runs[name].result(timeout=600)


@pytest.fixture(scope="module", autouse=True)
def _start_crosshair_mutants() -> None:
    _submit_crosshair_mutants()


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def mq(broker: str, queue_id: int, topic: str = TOPIC) -> MessageQueue:
    return MessageQueue(topic, broker, queue_id)


def seed_queues() -> list[MessageQueue]:
    """seed 001 §1.1: b1_q0..b1_q3, b2_q0..b2_q3."""
    return [mq(b, i) for b in ("b1", "b2") for i in range(4)]


SEED_IDS = ["C1", "C2", "C3"]

queue_lists = st.lists(
    st.builds(MessageQueue, st.sampled_from([TOPIC, "%RETRY%g"]), st.sampled_from(["a", "b", "c"]),
              st.integers(0, 7)),
    min_size=1, max_size=10,
)
id_lists = st.lists(st.text(alphabet="abcXYZ09@.\u00e9\U0001f600", min_size=1, max_size=5), min_size=1, max_size=6)
even_strategies = st.sampled_from(["AVG", "AVG_BY_CIRCLE"])
partition_strategies = st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])


def explored(*groups: reb.Setup, invariants: tuple[Invariant, ...] | None = None) -> Exploration:
    model = reb.model(*groups)
    if invariants is not None:
        model = attrs.evolve(model, invariants=invariants, step_invariants=())
    return explore(model)


def explored_mutant(old: str, new: str, *groups: reb.Setup) -> Exploration:
    broken = mutant(reb, old, new)
    return explore(broken.model(*(broken.group(**g) for g in groups)))


# ---------------------------------------------------------------------------------------------------------------
# Worked examples (seeds)
# ---------------------------------------------------------------------------------------------------------------


def test_seed_001_avg_eight_queues_three_consumers() -> None:
    names = {cid: [f"{q.broker_name}_q{q.queue_id}" for q in reb.allocate("AVG", cid, seed_queues(), SEED_IDS)]
             for cid in SEED_IDS}
    assert names == {
        "C1": ["b1_q0", "b1_q1", "b1_q2"],
        "C2": ["b1_q3", "b2_q0", "b2_q1"],
        "C3": ["b2_q2", "b2_q3"],
    }


def test_seed_001_avg_by_circle_eight_queues_three_consumers() -> None:
    names = {
        cid: [f"{q.broker_name}_q{q.queue_id}" for q in reb.allocate("AVG_BY_CIRCLE", cid, seed_queues(), SEED_IDS)]
        for cid in SEED_IDS
    }
    assert names == {
        "C1": ["b1_q0", "b1_q3", "b2_q2"],
        "C2": ["b1_q1", "b2_q0", "b2_q3"],
        "C3": ["b1_q2", "b2_q1"],
    }


def test_seed_001_section_5_q1_to_q8() -> None:
    """seed 001 §五: q1..q8 and c1..c3; AVG c1: q1-q3, c2: q4-q6, c3: q7-q8; AVG_BY_CIRCLE c1: q1 q4 q7, ..."""
    queues = [mq("b", i) for i in range(1, 9)]
    ids = ["c1", "c2", "c3"]

    def ids_of(strategy: str, cid: str) -> list[int]:
        return [q.queue_id for q in reb.allocate(strategy, cid, queues, ids)]

    assert [ids_of("AVG", c) for c in ids] == [[1, 2, 3], [4, 5, 6], [7, 8]]
    assert [ids_of("AVG_BY_CIRCLE", c) for c in ids] == [[1, 4, 7], [2, 5, 8], [3, 6]]


def test_seed_001_examples_do_not_depend_on_list_order() -> None:
    shuffled_queues = list(reversed(seed_queues()))
    for strategy in ("AVG", "AVG_BY_CIRCLE"):
        for cid in SEED_IDS:
            assert reb.allocate(strategy, cid, shuffled_queues, ["C3", "C1", "C2"]) == reb.allocate(
                strategy, cid, seed_queues(), SEED_IDS
            )


def test_avg_with_fewer_queues_than_consumers() -> None:
    queues = [mq("a", 0), mq("a", 1)]
    ids = ["c1", "c2", "c3"]
    assert [reb.allocate("AVG", c, queues, ids) for c in ids] == [[queues[0]], [queues[1]], []]
    assert reb.avg_slice(2, 2, 3) == (4, 0)


def test_allocation_sorts_ids_in_java_order() -> None:
    # U+1F600 is a surrogate pair in UTF-16, so Java sorts it before U+FFFD; Python's code point order does not.
    early, late = "\U0001f600", "\ufffd"
    assert java_string_key(early) < java_string_key(late) and late < early
    queues = [mq("a", 0), mq("a", 1)]
    assert reb.allocate("AVG", early, queues, [late, early]) == [queues[0]]
    assert reb.allocate("AVG", late, queues, [late, early]) == [queues[1]]


# ---------------------------------------------------------------------------------------------------------------
# Allocation by position
# ---------------------------------------------------------------------------------------------------------------


@given(st.integers(1, 40), st.integers(1, 12))
def test_avg_runs_tile_the_queues_in_id_order(queue_count: int, consumer_count: int) -> None:
    covered: list[int] = []
    sizes = []
    for index in range(consumer_count):
        start, size = reb.avg_slice(index, queue_count, consumer_count)
        covered.extend(range(start, start + size))
        sizes.append(size)
    assert covered == list(range(queue_count))
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)


@given(st.integers(1, 40), st.integers(1, 12))
def test_circle_positions_partition_and_balance(queue_count: int, consumer_count: int) -> None:
    runs = [reb.circle_positions(i, queue_count, consumer_count) for i in range(consumer_count)]
    assert sorted(j for run in runs for j in run) == list(range(queue_count))
    assert max(map(len, runs)) - min(map(len, runs)) <= 1


@given(st.integers(0, 40), st.integers(1, 12))
def test_machine_room_positions_partition_the_room_queues(eligible: int, consumer_count: int) -> None:
    runs = [reb.machine_room_positions(i, eligible, consumer_count) for i in range(consumer_count)]
    assert sorted(j for run in runs for j in run) == list(range(eligible))
    assert max(map(len, runs)) - min(map(len, runs)) <= 1


def test_ring_hash_is_the_first_four_md5_bytes_unsigned() -> None:
    # RFC 1321 test vectors: MD5("") = d41d8cd9..., MD5("abc") = 90015098...; both exceed 2**31 (unsigned).
    assert reb.ring_hash("") == 0xD41D8CD9 == 3558706393
    assert reb.ring_hash("abc") == 0x90015098
    assert reb.ring_hash("a") == 0x0CC175B9


@given(st.text(max_size=30))
def test_ring_hash_range(key: str) -> None:
    value = reb.ring_hash(key)
    assert 0 <= value < reb.HASH_SPACE
    assert value == int(hashlib.md5(key.encode()).hexdigest()[:8], 16)


def test_hash_ring_virtual_node_keys() -> None:
    ring = reb.hash_ring(["c2", "c1"], virtual_nodes=2)
    assert sorted(ring) == sorted({(reb.ring_hash(f"{c}-{k}"), c) for c in ("c1", "c2") for k in range(2)})
    assert reb.hash_ring(["c1"], 0) == ()
    with pytest.raises(ValueError, match="virtual_nodes"):
        reb.hash_ring(["c1"], -1)


def test_hash_ring_later_node_replaces_an_equal_key() -> None:
    # The same id twice collapses (sorted_ids removes duplicates); distinct ids keep distinct nodes.
    assert reb.hash_ring(["c1", "c1"], 3) == reb.hash_ring(["c1"], 3)


@given(st.lists(st.integers(0, reb.HASH_SPACE - 1), min_size=1, max_size=8, unique=True),
       st.integers(0, reb.HASH_SPACE - 1))
def test_ring_owner_is_the_first_node_at_or_after_the_key(positions: list[int], key: int) -> None:
    ring = tuple(sorted((p, f"n{p}") for p in positions))
    owner = reb.ring_owner(ring, key)
    later = [p for p in sorted(positions) if p >= key]
    assert owner == f"n{later[0] if later else min(positions)}"
    assert reb.ring_owner((), key) is None


def test_consistent_hash_queue_key_is_java_to_string() -> None:
    queue = mq("broker-a", 3)
    assert str(queue) == "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3]"
    ring = reb.hash_ring(["c1", "c2", "c3"])
    owner = reb.ring_owner(ring, reb.ring_hash(str(queue)))
    assert reb.allocate("CONSISTENT_HASH", owner, [queue], ["c1", "c2", "c3"]) == [queue]


# ---------------------------------------------------------------------------------------------------------------
# allocate / assignment
# ---------------------------------------------------------------------------------------------------------------


@given(partition_strategies, queue_lists, id_lists)
def test_agreeing_views_give_every_queue_exactly_one_owner(strategy: str, queues: list, ids: list) -> None:
    owners = reb.assignment(strategy, queues, ids)
    taken = [q for owned in owners.values() for q in owned]
    assert sorted(taken) == sorted_queues(queues)
    assert set(owners) == set(ids)


@given(even_strategies, queue_lists, id_lists)
def test_avg_strategies_balance_within_one(strategy: str, queues: list, ids: list) -> None:
    sizes = [len(v) for v in reb.assignment(strategy, queues, ids).values()]
    assert max(sizes) - min(sizes) <= 1


@given(partition_strategies, queue_lists, id_lists, st.randoms(use_true_random=False))
def test_allocation_ignores_the_order_of_both_lists(strategy: str, queues: list, ids: list, rnd) -> None:
    shuffled_q, shuffled_i = list(queues), list(ids)
    rnd.shuffle(shuffled_q)
    rnd.shuffle(shuffled_i)
    for cid in ids:
        assert reb.allocate(strategy, cid, queues, ids) == reb.allocate(strategy, cid, shuffled_q, shuffled_i)


@given(st.sampled_from(["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "MACHINE_ROOM"]), queue_lists, id_lists,
       st.text(alphabet="qrs", min_size=1, max_size=3))
def test_a_consumer_missing_from_the_list_gets_nothing(strategy: str, queues: list, ids: list, me: str) -> None:
    options = {"consumer_idcs": {"a"}} if strategy == "MACHINE_ROOM" else {}
    assert reb.allocate(strategy, me, queues, ids, **options) == []


@given(queue_lists, id_lists)
def test_consistent_hash_removing_a_consumer_moves_only_its_queues(queues: list, ids: list) -> None:
    before = {q: c for c, owned in reb.assignment("CONSISTENT_HASH", queues, ids).items() for q in owned}
    gone = sorted(set(ids), key=java_string_key)[0]
    rest = [c for c in ids if c != gone]
    if not rest:
        return
    after = {q: c for c, owned in reb.assignment("CONSISTENT_HASH", queues, rest).items() for q in owned}
    assert all(after[q] == c for q, c in before.items() if c != gone)


def test_consistent_hash_with_no_virtual_nodes_owns_nothing() -> None:
    queues = seed_queues()
    assert all(reb.allocate("CONSISTENT_HASH", c, queues, SEED_IDS, virtual_nodes=0) == [] for c in SEED_IDS)


def test_config_returns_the_configured_list_whatever_the_view() -> None:
    configured = [mq("x", 2), mq("x", 0), mq("x", 2)]
    assert reb.allocate("CONFIG", "not-listed", seed_queues(), SEED_IDS, message_queues=configured) == configured
    # CONFIG has no argument check at all (REB-6).
    assert reb.allocate("CONFIG", "", [], [], message_queues=configured) == configured


@given(st.lists(st.builds(MessageQueue, st.just(TOPIC), st.sampled_from(["a", "b"]), st.integers(0, 3)),
                max_size=5), st.text(max_size=3), queue_lists, id_lists)
def test_allocate_by_config_ignores_the_view(configured: list, cid: str, queues: list, ids: list) -> None:
    assert reb.allocate_by_config(tuple(configured), cid, queues, ids) == configured


def test_machine_room_takes_room_queues_only() -> None:
    queues = [mq("room1@broker-a", i) for i in range(3)] + [mq("room2@broker-b", i) for i in range(3)]
    queues += [mq("broker-c", 0), mq("room1@x@y", 0), mq("room1@", 0), mq("@room1", 0)]
    ids = ["c1", "c2"]
    got = {c: reb.allocate("MACHINE_ROOM", c, queues, ids, consumer_idcs={"room1"}) for c in ids}
    room1 = [q for q in sorted_queues(queues) if q.broker_name == "room1@broker-a"]
    assert got == {"c1": [room1[0], room1[2]], "c2": [room1[1]]}
    # "@room1" splits into ["", "room1"]: two parts, room "" (Java keeps the leading empty string).
    assert reb.allocate("MACHINE_ROOM", "c1", queues, ["c1"], consumer_idcs={""}) == [mq("@room1", 0)]


def test_machine_room_argument_checks_by_release() -> None:
    queues = [mq("r@b", 0)]
    assert reb.allocate("MACHINE_ROOM", " ", queues, [" "], consumer_idcs={"r"}, profile=V4_9_8) == queues
    with pytest.raises(reb.AllocationRejected):
        reb.allocate("MACHINE_ROOM", " ", queues, [" "], consumer_idcs={"r"}, profile=V4_9_3)
    old = VersionProfile.of("4.9.2")
    assert reb.allocate("MACHINE_ROOM", "c1", [], [], consumer_idcs={"r"}, profile=old) == []
    with pytest.raises(reb.AllocationRejected):
        reb.allocate("MACHINE_ROOM", "c1", [], ["c1"], consumer_idcs={"r"}, profile=V4_9_8)


@pytest.mark.parametrize("strategy", ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"])
@pytest.mark.parametrize(
    ("cid", "queues", "ids", "message"),
    [("", [mq("a", 0)], ["c1"], "currentCID"), ("c1", [], ["c1"], "mqAll"), ("c1", [mq("a", 0)], [], "cidAll")],
)
def test_java_argument_check(strategy: str, cid: str, queues: list, ids: list, message: str) -> None:
    with pytest.raises(reb.AllocationRejected, match=message):
        reb.allocate(strategy, cid, queues, ids)


@pytest.mark.parametrize(
    ("strategy", "options", "message"),
    [
        ("ROUND_ROBIN", {}, "unknown allocation strategy"),
        ("AVG", {"virtual_nodes": 3}, "takes no option"),
        ("CONFIG", {}, "message_queues"),
        ("MACHINE_ROOM", {}, "consumer_idcs"),
        ("MACHINE_ROOM", {"consumer_idcs": "room1"}, "consumer_idcs"),
        ("CONSISTENT_HASH", {"virtual_nodes": -1}, "virtual_nodes"),
        ("CONSISTENT_HASH", {"virtual_nodes": True}, "virtual_nodes"),
        ("AVG", {"profile": "4.9.8"}, "profile"),
    ],
)
def test_bad_strategy_or_options_raise_value_error(strategy: str, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reb.allocate(strategy, "c1", seed_queues(), ["c1"], **options)
    with pytest.raises(ValueError, match=message):
        reb.rebalance_target(MessageModel.CLUSTERING, strategy, "c1", seed_queues(), ["c1"], **options)


# ---------------------------------------------------------------------------------------------------------------
# rebalance_target and the table update
# ---------------------------------------------------------------------------------------------------------------


@given(queue_lists, id_lists)
def test_broadcasting_takes_every_queue(queues: list, ids: list) -> None:
    for cid in ids:
        assert reb.rebalance_target(MessageModel.BROADCASTING, "AVG", cid, queues, None) == frozenset(queues)


def test_rebalance_target_skips_what_rebalance_by_topic_skips() -> None:
    queues = seed_queues()
    clustering = MessageModel.CLUSTERING
    assert reb.rebalance_target(clustering, "AVG", "C1", None, SEED_IDS) is None
    assert reb.rebalance_target(clustering, "AVG", "C1", queues, None) is None
    assert reb.rebalance_target(clustering, "AVG", "C1", queues, []) is None
    assert reb.rebalance_target(clustering, "AVG", "C1", [], SEED_IDS) is None
    assert reb.rebalance_target(MessageModel.BROADCASTING, "AVG", "C1", None, SEED_IDS) is None
    assert reb.rebalance_target(clustering, "AVG", "C9", queues, SEED_IDS) == frozenset()
    assert reb.rebalance_target(clustering, "AVG", "C3", queues, SEED_IDS) == frozenset(queues[6:])


@given(queue_lists, queue_lists, st.sampled_from(list(ConsumeType)), st.data())
def test_plan_table_update(table: list, target: list, consume_type: ConsumeType, data: st.DataObject) -> None:
    expired = data.draw(st.lists(st.sampled_from(table), max_size=len(table)))
    plan = reb.plan_table_update(TOPIC, table, target, expired, consume_type)
    for q in set(table):
        stale = q in expired and consume_type is ConsumeType.CONSUME_PASSIVELY
        assert (q in plan.drop) == (q.topic == TOPIC and (q not in target or stale))
    assert plan.add == frozenset(target) - frozenset(table)
    assert plan.readd == plan.drop & frozenset(target)


def test_pull_expired_allocated_queue_is_dropped_and_readded_by_push_consumers_only() -> None:
    q = mq("a", 0)
    push = reb.plan_table_update(TOPIC, [q], [q], [q])
    assert push == reb.TablePlan(drop=frozenset({q}), add=frozenset(), readd=frozenset({q}))
    pull = reb.plan_table_update(TOPIC, [q], [q], [q], ConsumeType.CONSUME_ACTIVELY)
    assert pull == reb.TablePlan(frozenset(), frozenset(), frozenset())
    other_topic = mq("a", 0, topic="Other")
    assert reb.plan_table_update(TOPIC, [other_topic], [], []).drop == frozenset()


@given(st.integers(0, 10 * PULL_MAX_IDLE_MS), st.sampled_from(list(ConsumeType)))
def test_pull_expiry(idle_ms: int, consume_type: ConsumeType) -> None:
    passive = consume_type is ConsumeType.CONSUME_PASSIVELY
    assert reb.pull_expired(idle_ms, consume_type) == (passive and idle_ms > PULL_MAX_IDLE_MS)


def test_pull_expiry_boundary() -> None:
    assert not reb.pull_expired(PULL_MAX_IDLE_MS) and reb.pull_expired(PULL_MAX_IDLE_MS + 1)


@given(queue_lists, st.lists(st.sampled_from([TOPIC, "%RETRY%g", "Other"]), max_size=3))
def test_truncated_queues(table: list, topics: list) -> None:
    assert reb.truncated_queues(table, topics) == frozenset(q for q in table if q.topic not in topics)


@pytest.mark.parametrize(
    ("orderly", "model", "free", "cached", "expected"),
    [
        (False, MessageModel.CLUSTERING, False, True, (True, reb.Unlock.NONE, 0)),
        (True, MessageModel.BROADCASTING, False, True, (True, reb.Unlock.NONE, 0)),
        (True, MessageModel.CLUSTERING, False, False, (False, reb.Unlock.NONE, 0)),
        (True, MessageModel.CLUSTERING, True, False, (True, reb.Unlock.NOW, 0)),
        (True, MessageModel.CLUSTERING, True, True, (True, reb.Unlock.DELAYED, UNLOCK_DELAY_MS_WHEN_CACHED)),
    ],
)
def test_removal(orderly: bool, model: MessageModel, free: bool, cached: bool, expected: tuple) -> None:
    outcome = reb.removal(orderly, model, free, cached)
    assert outcome.persist_offset
    assert (outcome.removed, outcome.unlock, outcome.unlock_delay_ms) == expected


# ---------------------------------------------------------------------------------------------------------------
# computePullFromWhere
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "topic", "stored", "max_offset", "time_offset", "expected"),
    [
        (LAST, TOPIC, 42, 100, 7, 42),
        (FIRST, TOPIC, 0, 100, 7, 0),
        (LAST, TOPIC, -1, 100, 7, 100),
        (LAST, retry_topic("g"), -1, 100, 7, 0),
        (FIRST, TOPIC, -1, 100, 7, 0),
        (FIRST, retry_topic("g"), -1, None, None, 0),
        (TIMESTAMP, TOPIC, -1, 100, 7, 7),
        (TIMESTAMP, retry_topic("g"), -1, 100, 7, 100),
        (LAST, TOPIC, -1, None, 7, reb.NOT_ADDED),
        (TIMESTAMP, TOPIC, -1, 100, None, reb.NOT_ADDED),
        (TIMESTAMP, retry_topic("g"), -1, None, 7, reb.NOT_ADDED),
        (LAST, TOPIC, -2, 100, 7, reb.NOT_ADDED),
        (FIRST, TOPIC, -2, 100, 7, reb.NOT_ADDED),
        (TIMESTAMP, retry_topic("g"), -2, 100, 7, reb.NOT_ADDED),
    ],
)
def test_compute_pull_from_where(where, topic, stored, max_offset, time_offset, expected) -> None:
    assert reb.compute_pull_from_where(where, topic, stored, max_offset, time_offset) == expected


@given(st.sampled_from(list(ConsumeFromWhere)), st.sampled_from([TOPIC, retry_topic("g")]), st.integers(-2, 10**6),
       st.none() | st.integers(0, 10**6), st.none() | st.integers(0, 10**6))
def test_compute_pull_from_where_properties(where, topic, stored, max_offset, time_offset) -> None:
    got = reb.compute_pull_from_where(where, topic, stored, max_offset, time_offset)
    if stored >= 0:
        assert got == stored
    elif stored == -2:
        assert got == reb.NOT_ADDED
    else:
        assert got in (0, reb.NOT_ADDED, max_offset, time_offset)
        if where is FIRST:
            assert got == 0


# ---------------------------------------------------------------------------------------------------------------
# Locks
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("profile", "locked"), [(V4_9_3, False), (VersionProfile.of("4.9.4"), False),
                                                 (VersionProfile.of("4.9.5"), True), (V4_9_8, True)])
def test_new_process_queue_lock_flag_by_release(profile: VersionProfile, locked: bool) -> None:
    assert reb.new_queue_locked(True, profile) is locked


@given(st.sampled_from(list(MessageModel)), st.booleans(), st.booleans(), st.integers(0, 4 * CLIENT_LOCK_EXPIRY_MS))
def test_orderly_batch_may_start(model: MessageModel, dropped: bool, locked: bool, age: int) -> None:
    allowed = reb.orderly_batch_may_start(model, dropped, locked, age)
    if model is MessageModel.BROADCASTING:
        assert allowed == (not dropped)
    else:
        assert allowed == (not dropped and locked and age <= CLIENT_LOCK_EXPIRY_MS)


@given(st.sampled_from([None, "c1", "c2"]), st.integers(0, 3 * BROKER_LOCK_EXPIRY_MS))
def test_broker_lock_granted(holder: str | None, idle: int) -> None:
    granted = reb.broker_lock_granted(holder, idle, "c1")
    assert granted == (holder in (None, "c1") or idle > BROKER_LOCK_EXPIRY_MS)
    # REB-18: whoever takes a lock from someone else does so after that holder's client lock expired.
    assert not granted or holder in (None, "c1") or idle > CLIENT_LOCK_EXPIRY_MS
    assert CLIENT_LOCK_EXPIRY_MS < BROKER_LOCK_EXPIRY_MS


# ---------------------------------------------------------------------------------------------------------------
# Pull commits, route queues, MACHINE_ROOM
# ---------------------------------------------------------------------------------------------------------------


@given(st.sampled_from(list(MessageModel)), st.integers(-1, 100))
def test_pull_commit_offset(model: MessageModel, offset: int) -> None:
    got = reb.pull_commit_offset(model, offset)
    assert got == (offset if model is MessageModel.CLUSTERING and offset > 0 else None)


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 4), st.integers(0, 4),
                          st.sampled_from([2, 4, 6])), max_size=2, unique_by=lambda t: t[0]))
def test_route_queues_are_the_read_queues(datas: list) -> None:
    queue_datas = tuple(reb.RouteQueueData(*d) for d in datas)
    got = reb.route_queues(TOPIC, queue_datas)
    assert got == {mq(b, i) for b, r, _w, perm in datas if perm & 4 for i in range(r)}


def test_machine_room_oracle_matches_allocate() -> None:
    queues = [mq("room1@broker-a", i) for i in range(3)] + [mq("room2@broker-b", i) for i in range(2)]
    for cid in ("c1", "c2"):
        assert reb.allocate_by_machine_room(frozenset({"room1"}), cid, queues, ["c2", "c1"]) == reb.allocate(
            "MACHINE_ROOM", cid, queues, ["c1", "c2"], consumer_idcs={"room1"})


# ---------------------------------------------------------------------------------------------------------------
# Sensitivity: broken rules are caught
# ---------------------------------------------------------------------------------------------------------------

CONCURRENT = dict(consumers=3)
ORDERLY = dict(consumers=2, queues_per_broker=1, orderly=True, flaps=0)


@pytest.mark.parametrize(
    ("old", "new", "group", "invariant", "clause"),
    [
        pytest.param(
            "start = index * size if (mod > 0 and index < mod) else index * size + mod", "start = index * size",
            CONCURRENT, "one owner per queue when views agree", "REB-20", id="AVG start without + mod",
        ),
        pytest.param(
            "    ids = sorted_ids(consumer_ids)\n", "    ids = list(dict.fromkeys(consumer_ids))\n",
            CONCURRENT, "one owner per queue when views agree", "REB-1", id="consumer ids left unsorted",
        ),
        pytest.param(
            "    if consumer_id not in ids:\n        return []\n    index = ids.index(consumer_id)\n",
            "    index = ids.index(consumer_id) if consumer_id in ids else 0\n",
            CONCURRENT, "a consumer missing from its id list owns nothing after rebalancing", "REB-2",
            id="missing consumer still gets queues",
        ),
        pytest.param(
            "        if not entry.dropped and outcome.persist_offset:\n",
            "        if False:\n",
            dict(consumers=2, flaps=0), "an offset is persisted when its queue is dropped", "REB-10",
            id="dropped without persisting",
        ),
        pytest.param(
            "        return setup.orderly and not entry.dropped and entry.locked\n",
            "        return setup.orderly and not entry.dropped\n",
            ORDERLY, "an orderly batch starts only under the broker lock", "REB-16",
            id="orderly batch without the lock",
        ),
        pytest.param(
            "        if setup.orderly:\n            if holders[p] not in (None, cid):\n                continue\n"
            "            holders[p] = cid\n",
            "",
            ORDERLY, "an orderly consumer adds a queue only after locking it", "REB-12",
            id="orderly queue added without the broker lock",
        ),
        pytest.param(
            "    return entry is None or not entry.locked\n", "    return True\n",
            ORDERLY, "a lock flag is backed by the broker lock", "REB-18",
            id="broker lock lapses under a live lock flag",
        ),
        pytest.param(
            "attrs.evolve(e, unbacked=True) if p in on_broker", "attrs.evolve(e, unbacked=False) if p in on_broker",
            dict(ORDERLY, restarts=1), "a lock flag is backed by the broker lock", "REB-24",
            id="lock flags trusted as backed after a broker restart",
        ),
    ],
)
def test_explorer_catches_broken_rule(old: str, new: str, group: dict, invariant: str, clause: str) -> None:
    result = explored_mutant(old, new, group)
    failed = {v.invariant for v in result.violations}
    assert invariant in failed, [v.describe() for v in result.violations]
    assert clause in result.failed_clauses()


@pytest.mark.parametrize("name", list(CROSSHAIR_MUTANTS))
def test_crosshair_catches_broken_rule(name: str) -> None:
    run = _crosshair_run(name)
    assert not run.crashed, run.stderr[-2000:]
    assert any(r.failed for r in run.results), [f"{r.line}: {r.message}" for r in run.results]

