"""Tests of the rebalance spec's group machine (REB-*): the explorer over the models, and replayed runs of the
transition table (the oracles' tests and the sensitivity checks are ``test_spec_rebalance.py``)."""

from __future__ import annotations

import attrs
import pytest

from rocketspec.spec import rebalance as reb
from rocketspec.spec.explorer import Exploration, Invariant, explore
from rocketspec.spec.protocol import MessageModel
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.rebalance.invariants import _owners
from rocketspec.spec.versions import V4_9_3

TOPIC = "TopicTest"


def mq(broker: str, queue_id: int, topic: str = TOPIC) -> MessageQueue:
    return MessageQueue(topic, broker, queue_id)


def _run(state: reb.GroupState, *actions: reb.Action) -> reb.GroupState:
    for action in actions:
        assert reb.enabled(state, action), action
        state = reb.step(state, action)
    return state


def explored(*groups: reb.Setup, invariants: tuple[Invariant, ...] | None = None) -> Exploration:
    model = reb.model(*groups)
    if invariants is not None:
        model = attrs.evolve(model, invariants=invariants, step_invariants=())
    return explore(model)


# ---------------------------------------------------------------------------------------------------------------
# The group machine
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
def test_default_model_explores_clean() -> None:
    result = explored()  # its speed is a benchmark's business (docs/benchmarks.md), never a test's
    assert result.ok, "\n".join(v.describe() for v in result.violations)
    assert result.complete and result.states > 10_000
    assert set(result.clauses) <= set(reb.CLAUSES.ids)


@pytest.mark.parametrize(
    "group",
    [
        dict(consumers=3, strategy="AVG_BY_CIRCLE", flaps=0),
        dict(consumers=3, strategy="CONSISTENT_HASH", flaps=0),
        dict(consumers=2, strategy="MACHINE_ROOM", brokers=2, queues_per_broker=2),
        dict(consumers=2, shrinking_route=True),
        dict(consumers=2, queues_per_broker=1, orderly=True, flaps=0, profile=V4_9_3),
        dict(consumers=3, brokers=1, queues_per_broker=1, orderly=True, flaps=0),
        dict(consumers=2, queues_per_broker=1, orderly=True, flaps=0, restarts=2),
        dict(consumers=2, strategy="CONFIG", flaps=0),
        dict(consumers=2, queues_per_broker=1, flaps=0, message_model=MessageModel.BROADCASTING),
        dict(consumers=2, brokers=1, queues_per_broker=2, orderly=True, flaps=0,
             message_model=MessageModel.BROADCASTING),
    ],
)
def test_other_groups_explore_clean(group: dict) -> None:
    result = explored(reb.group(**group))
    assert result.ok, "\n".join(v.describe() for v in result.violations)


def test_route_changes_and_commits_explore_clean() -> None:
    """The wider bounds: other routes the name server may list (REB-28) and commits by pull (REB-25)."""
    bounds = reb.Bounds(routes=(frozenset({0}), frozenset({0, 1})), commits=True)
    setup = reb.group(consumers=2, brokers=2, queues_per_broker=1, flaps=0, messages=2, loaded=2)
    result = explore(reb.model(setup, bounds=bounds))
    assert result.ok, "\n".join(v.describe() for v in result.violations)
    assert result.complete


def test_every_clause_is_checked() -> None:
    cited = {c for o in reb.CLAUSES.oracles for c in o.clauses}
    cited |= {c for inv in (*reb.INVARIANTS, *reb.STEP_INVARIANTS) for c in inv.clauses}
    assert cited == set(reb.CLAUSES.ids)
    assert all(len(c.statement.splitlines()) == 1 for c in reb.CLAUSES.clauses)


def test_groups_reject_an_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="ROUND_ROBIN"):
        reb.group(strategy="ROUND_ROBIN")


def test_config_group_takes_its_configured_queues() -> None:
    """CONFIG (REB-6): each consumer takes its configured list whatever the id list, even missing from it."""
    setup = reb.group(consumers=2, strategy="CONFIG", flaps=0, configured=((0, 3), (1,)))
    c1, c2 = setup.consumer_ids
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1))
    assert [p for p, e in enumerate(state.consumer(c1).table) if e is not None] == [0, 3]
    state = _run(state, reb.ConsumerStarted(c2), reb.Rebalanced(c2))
    assert [p for p, e in enumerate(state.consumer(c2).table) if e is not None] == [1]


def test_broadcasting_group_takes_every_queue_and_keeps_offsets_locally() -> None:
    """REB-8, REB-26: every consumer takes the whole route; a removal persists to the consumer's own store."""
    setup = reb.group(consumers=2, brokers=2, queues_per_broker=1, flaps=0, messages=2, loaded=2,
                      message_model=MessageModel.BROADCASTING)
    c1, c2 = setup.consumer_ids
    _qa, qb = setup.queues
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.ConsumerStarted(c2),
                 reb.Rebalanced(c2), reb.MessageConsumed(c1, qb))
    assert all(e is not None for c in state.consumers for e in c.table)
    assert not reb.enabled(state, reb.OffsetCommitted(c1, qb))  # broadcasting pulls commit nothing (REB-25)
    state = _run(state, reb.RouteChanged(frozenset({0})), reb.RouteRefreshed(c1), reb.Rebalanced(c1))
    assert state.local_offsets == ((0, 1), (0, 0)) and state.stored_offsets == (0, 0)
    state = _run(state, reb.RouteChanged(frozenset({0, 1})), reb.RouteRefreshed(c1), reb.Rebalanced(c1))
    assert state.consumer(c1).table[1] == reb.ProcessQueueState(offset=1)


def test_orderly_broadcasting_locks_to_add_and_never_releases() -> None:
    """REB-27: the first consumer's lock keeps the second off the queue until the lock expires."""
    setup = reb.group(consumers=2, brokers=1, queues_per_broker=1, orderly=True, flaps=0,
                      message_model=MessageModel.BROADCASTING)
    c1, c2 = setup.consumer_ids
    (q,) = setup.queues
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.ConsumerStarted(c2),
                 reb.Rebalanced(c2))
    assert state.lock_holders == (c1,) and state.consumer(c2).table == (None,)
    assert state.consumer(c1).table == (reb.ProcessQueueState(),)  # no lock flag in broadcasting
    assert not reb.enabled(state, reb.LockRenewed(c1))
    state = _run(state, reb.BatchConsumed(c1, q), reb.BrokerLockReleased(q), reb.Rebalanced(c2))
    assert state.lock_holders == (c2,) and state.consumer(c2).table[0] is not None
    state = _run(state, reb.ConsumerShutdown(c2))
    assert state.lock_holders == (c2,)  # unlockAll is clustering-only


def test_pull_commits_the_in_memory_offset() -> None:
    """REB-25: a clustering pull commits the in-memory offset once it is > 0."""
    setup = reb.group(consumers=1, brokers=1, queues_per_broker=1, flaps=0, messages=3)
    (c1,) = setup.consumer_ids
    (q,) = setup.queues
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1))
    assert not reb.enabled(state, reb.OffsetCommitted(c1, q))
    state = _run(state, reb.MessageConsumed(c1, q), reb.MessageConsumed(c1, q), reb.OffsetCommitted(c1, q))
    assert state.stored_offsets == (2,)


def test_delayed_unlock_race_leaves_an_unbacked_lock_flag() -> None:
    """REB-19 replayed: c1 drops queue b with cached messages (unlock in 20 s), takes it back, the unlock lands."""
    setup = reb.group(consumers=2, brokers=2, queues_per_broker=1, orderly=True)
    c1, c2 = setup.consumer_ids
    qa, qb = setup.queues
    state = _run(
        reb.initial_state(setup),
        reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.ConsumerStarted(c2),
        reb.Rebalanced(c1, cached=True),  # c1 gives qb to c2; the unlock waits 20 s
        reb.ClientEvicted(c2), reb.Rebalanced(c1),  # c2's channel drops: c1 takes qb back, lock still its own
        reb.UnlockArrived(c1, qb),  # the delayed unlock frees the broker lock c1 relies on
    )
    entry = state.consumer(c1).table[1]
    assert entry is not None and entry.locked and entry.unbacked and state.lock_holders[1] is None
    state = _run(state, reb.HeartbeatSent(c2), reb.Rebalanced(c2))  # c2 is back and locks qb
    assert state.lock_holders[1] == c2 and state.consumer(c2).table[1] is not None
    assert state.consumer(c1).table[1].locked  # both believe; only c1's next lockAll ends it
    state = _run(state, reb.LockRenewed(c1))
    assert not state.consumer(c1).table[1].locked
    assert state.consumer(c1).table[0] is not None and qa == setup.queues[0]


def test_broker_restart_leaves_unbacked_lock_flags_until_lock_all() -> None:
    """REB-24 replayed: broker-b restarts under c1's lock on qb; c1 consumes on its flag; c2 takes the free lock
    first (it rebalanced onto qb), so c1's next lockAll loses qb; broker-a's locks are untouched."""
    setup = reb.group(consumers=2, brokers=2, queues_per_broker=1, orderly=True, flaps=0, restarts=1)
    c1, c2 = setup.consumer_ids
    qa, qb = setup.queues
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1))
    assert state.lock_holders == (c1, c1)
    assert not reb.enabled(state, reb.BrokerRestarted("broker-c"))
    state = _run(state, reb.BrokerRestarted("broker-b"))
    assert state.lock_holders == (c1, None) and state.restarts_left == 0
    assert state.consumer(c1).table[1] == reb.ProcessQueueState(locked=True, unbacked=True)
    assert not state.consumer(c1).table[0].unbacked
    assert not reb.enabled(state, reb.BrokerRestarted("broker-a"))  # the bound: one restart
    state = _run(state, reb.BatchConsumed(c1, qb))  # orderly consumption goes on under the client's flag
    assert state.consumer(c1).table[1].offset == 0  # offsets are tracked on the first queue only
    state = _run(state, reb.ConsumerStarted(c2), reb.Rebalanced(c2))  # c2 is allocated qb and finds it free
    assert state.lock_holders == (c1, c2)
    state = _run(state, reb.LockRenewed(c1))
    assert not state.consumer(c1).table[1].locked and state.consumer(c1).table[0].locked
    assert qa == setup.queues[0]


def test_busy_removal_keeps_a_dropped_queue_until_pull_expiry() -> None:
    setup = reb.group(consumers=2, brokers=2, queues_per_broker=1, orderly=True, flaps=0)
    c1, c2 = setup.consumer_ids
    state = _run(
        reb.initial_state(setup),
        reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.BatchConsumed(c1, setup.queues[0]),
        reb.ConsumerStarted(c2), reb.Rebalanced(c1, busy=True),
    )
    kept = state.consumer(c1).table[1]
    assert kept is not None and kept.dropped and state.stored_offsets == (0, 0)
    assert state.consumer(c1).table[0] == reb.ProcessQueueState(offset=1, locked=True)
    state = _run(state, reb.Rebalanced(c2))  # refused: c1 still holds the lock of the kept queue
    assert state.consumer(c2).table[1] is None and not state.consumer(c2).synced
    state = _run(state, reb.ConsumerShutdown(c2), reb.Rebalanced(c1))  # allocated again but dropped: stuck
    assert state.consumer(c1).table[1].dropped
    state = _run(state, reb.PullExpired(c1, setup.queues[1]), reb.Rebalanced(c1))  # expiry repairs it
    assert state.consumer(c1).table[1] == reb.ProcessQueueState(locked=True)


def test_busy_only_keeps_just_the_queues_whose_batch_runs() -> None:
    """REB-14 per queue: of the queues one rebalance removes, only those named in ``busy_only`` stay, dropped."""
    setup = reb.group(consumers=2, brokers=2, queues_per_broker=2, orderly=True, flaps=0)
    c1, c2 = setup.consumer_ids
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.ConsumerStarted(c2))
    going = [q for p, q in enumerate(setup.queues) if p not in setup.target(c1, tuple(sorted(state.registered)),
                                                                         state.consumer(c1).route_view)]
    assert len(going) == 2
    state = _run(state, reb.Rebalanced(c1, busy_only=frozenset(going[:1])))
    table = state.consumer(c1).table
    assert table[setup.position(going[0])] is not None and table[setup.position(going[0])].dropped
    assert table[setup.position(going[1])] is None
    concurrent = reb.group(consumers=1)
    only = concurrent.consumer_ids[0]
    started = _run(reb.initial_state(concurrent), reb.ConsumerStarted(only))
    assert not reb.enabled(started, reb.Rebalanced(only, busy_only=frozenset(concurrent.queues[:1])))


def test_a_rebalance_without_an_id_list_changes_nothing() -> None:
    """REB-9: the broker gave no id list (an error, no answer in time): the topic is skipped; broadcasting asks for
    none, so such a rebalance is not one of its actions."""
    setup = reb.group(consumers=2, flaps=0)
    c1, c2 = setup.consumer_ids
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.ConsumerStarted(c2))
    assert _run(state, reb.Rebalanced(c1, list_failed=True)) == state
    broadcasting = reb.group(consumers=2, flaps=0, message_model=MessageModel.BROADCASTING)
    started = _run(reb.initial_state(broadcasting), reb.ConsumerStarted(c1))
    assert not reb.enabled(started, reb.Rebalanced(c1, list_failed=True))


def test_transient_double_ownership_is_reachable_and_settles() -> None:
    setup = reb.group(consumers=2, flaps=0)
    c1, c2 = setup.consumer_ids
    state = _run(reb.initial_state(setup), reb.ConsumerStarted(c1), reb.Rebalanced(c1), reb.ConsumerStarted(c2),
                 reb.Rebalanced(c2))
    owners = [_owners(state.live(), p) for p in range(4)]
    assert owners[2] == [c1, c2] and not reb.views_agree(state)
    state = _run(state, reb.Rebalanced(c1, reversed_list=True))
    assert reb.views_agree(state) and [_owners(state.live(), p) for p in range(4)] == [[c1], [c1], [c2], [c2]]
