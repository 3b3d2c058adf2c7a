"""offset_commit: the machine: scenarios, random walks, exhaustive exploration, and broken rules it catches."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import mutant
from offset_spec_helpers import assign, consume, pull, run, start

from rocketspec.spec import offset_commit as oc
from rocketspec.spec.explorer import STEP_RAISED, ActionNotEnabled, explore
from rocketspec.spec.offset_commit import (
    NO_OFFSET,
    AdminCommit,
    BrokerRestarted,
    CommitArrives,
    Config,
    ConsumeFinished,
    ConsumerCrashed,
    ConsumerStarted,
    ConsumeStatsAsked,
    Heartbeat,
    OffsetRead,
    OffsetResetAsked,
    OffsetUpdated,
    OrderlyConsumed,
    PersistAll,
    PullFound,
    PullNoNewMessage,
    PullOffsetMoved,
    PullSent,
    QueueAssigned,
    QueueDropped,
    ResetApplied,
    ResetReceived,
    StalePullAnswered,
    TakeMessages,
)
from rocketspec.spec.protocol import (
    ConsumeFromWhere,
    MessageModel,
    ResponseCode,
)
from rocketspec.spec.versions import V4_9_3, V4_9_8

CLUSTERING, BROADCASTING = MessageModel.CLUSTERING, MessageModel.BROADCASTING
FIRST, LAST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
TIMESTAMP = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP


# --- The machine: scenarios ---------------------------------------------------------------------------------




def test_enabled_needs_the_queue_held() -> None:
    idle = start()
    assert oc.enabled(idle, OffsetRead(0, 0)) and oc.enabled(idle, ConsumerCrashed(0))
    for action in (PullSent(0, 0, 0, None), PullFound(0, 0, 3, 3), PullNoNewMessage(0, 0, 3), QueueDropped(0, 0),
                   TakeMessages(0, 0), OrderlyConsumed(0, 0, True), OffsetUpdated(0, 0, (0,)), CommitArrives(0, 0),
                   ConsumerStarted(0)):
        assert not oc.enabled(idle, action)
    held = assign(idle)
    assert not oc.enabled(held, OffsetRead(0, 0)) and oc.enabled(held, PullSent(0, 0, 0, None))
    assert not oc.enabled(held, PullSent(0, 0, 1, None))  # not the next offset
    assert not oc.enabled(held, TakeMessages(0, 0))  # concurrent machine
    with pytest.raises(ActionNotEnabled):
        oc.step(idle, PullFound(0, 0, 3, 3))


def test_increase_only_keeps_the_memory_offset_when_results_are_written_out_of_order() -> None:
    """Three consume threads remove 0, 1, 2 in order but write their results 3, then 1 and 2 (OFF-5)."""
    state = pull(assign(start()))
    for offset in (0, 1, 2):
        state = run(state, ConsumeFinished(0, 0, (offset,)))
    held = state.held
    assert held is not None
    assert {r.removed for r in held.requests} == {1, 2, 3}
    state = run(state, OffsetUpdated(0, 0, (2,)))
    assert state.memory == 3
    state = run(state, OffsetUpdated(0, 0, (0,)), OffsetUpdated(0, 0, (1,)))
    assert state.memory == 3


def test_broker_offset_can_move_back_and_at_least_once_holds() -> None:
    """Commits travel in any order and the broker overwrites (OFF-8): a stale persist lowers the offset."""
    state = consume(pull(assign(start())), 0)
    state = run(state, PersistAll(0))
    state = run(consume(state, 1), PersistAll(0))
    assert state.in_flight == (1, 2)
    state = run(state, CommitArrives(0, 2), CommitArrives(0, 1))
    assert state.stored == 1 and state.memory == 2


def test_crash_redelivers_from_the_broker_offset_only() -> None:
    """After a crash the consumer resumes at the broker offset: messages consumed since then come again."""
    state = run(consume(pull(assign(start())), 0), PersistAll(0), CommitArrives(0, 1))
    state = run(consume(state, 1), ConsumerCrashed(0), ConsumerStarted(0))
    state = assign(state)
    assert state.held is not None and state.held.next_offset == 1 and state.memory == 1
    assert state.done == {0, 1}
    state = pull(state)
    assert state.held is not None and state.held.pq.cached == (1, 2)


def test_stale_commit_after_a_crash_passes_a_redelivered_message() -> None:
    """A commit sent before a crash may land after the restart: the broker offset then passes a message the
    new ProcessQueue holds again, which is why OFF-18 speaks of the memory entry and OFF-17 of handled
    messages."""
    state = consume(pull(assign(start())), 0, 1)
    state = run(state, PersistAll(0), ConsumerCrashed(0), ConsumerStarted(0))
    state = pull(assign(state))
    assert state.held is not None and state.held.pq.cached == (0, 1, 2) and state.stored == NO_OFFSET
    state = run(state, CommitArrives(0, 2))
    assert state.held is not None
    assert state.stored == 2 and 0 in state.held.pq.cached and oc.at_least_once(state)


def test_a_pull_commits_what_memory_held_when_it_was_sent() -> None:
    """OFF-9: the commit travels with the pull as it was when sent, also when the memory entry rose since."""
    state = consume(pull(assign(start(Config(pull_batch=1, consume_from_where=FIRST)))), 0)
    state = run(state, PullSent(0, 0, 1, 1))
    state = run(state, PullFound(0, 0, 1, 3), ConsumeFinished(0, 0, (1,)), OffsetUpdated(0, 0, (1,)))
    assert state.in_flight == (1,) and state.memory == 2


def test_no_new_message_commits_the_end_only_when_nothing_is_cached() -> None:
    state = pull(pull(assign(start(Config(pull_batch=1, consume_from_where=FIRST), messages=1))))
    assert state.memory == 0
    state = pull(run(state, ConsumeFinished(0, 0, (0,))))
    assert state.memory == 1


def test_orderly_commit_writes_the_last_taken_plus_one() -> None:
    config = Config(orderly=True, pull_batch=3, consume_batch=2, consume_from_where=FIRST)
    state = run(pull(assign(start(config))), TakeMessages(0, 0), OrderlyConsumed(0, 0, False), TakeMessages(0, 0),
                OrderlyConsumed(0, 0, True))
    assert state.memory == 2 and state.done == {0, 1}


def test_late_write_after_a_drop_raises_the_new_memory_entry() -> None:
    """OFF-12: a consume thread of the dropped ProcessQueue that passed the isDropped check writes after the
    queue came back; the memory entry then passes messages of the new ProcessQueue, all already handled."""
    config = Config(CLUSTERING, False, V4_9_8, pull_batch=2, late_writes=True, consume_from_where=FIRST)
    state = pull(assign(start(config, messages=2)))
    state = run(state, ConsumeFinished(0, 0, (0,)), ConsumeFinished(0, 0, (1,)), QueueDropped(0, 0))
    assert state.late == (2,) and state.memory == NO_OFFSET and state.in_flight == (0,)
    state = run(pull(assign(state)), oc.LateOffsetWrite(0, 0, 2))
    assert state.held is not None and state.held.late_write and state.held.pq.cached == (0, 1)
    assert state.memory == 2 and oc.at_least_once(state)
    assert not oc.enabled(state, oc.LateOffsetWrite(0, 0, 2))


def test_stale_pull_answer_after_a_drop_raises_the_new_memory_entry() -> None:
    """OFF-12: a pull of the dropped ProcessQueue, with nothing cached, answered NO_NEW_MSG after the queue came
    back: correctTagsOffset (no isDropped check in 4.9.8) writes its offset over the new memory entry."""
    config = Config(CLUSTERING, False, V4_9_8, pull_batch=2, consume_from_where=FIRST)
    state = consume(pull(assign(start(config, messages=2))), 0, 1)
    state = run(state, PullSent(0, 0, 2, 2), QueueDropped(0, 0))
    lane = state.lane(0, 0)
    assert lane.stale == (oc.StalePull(2, True),) and state.memory == NO_OFFSET and state.in_flight == (2, 2)
    state = run(assign(state), StalePullAnswered(0, 0, 2, "NO_NEW_MSG"))
    assert state.held is not None and state.held.late_write and state.held.next_offset == 0
    assert state.memory == 2 and oc.at_least_once(state)


def test_broadcasting_before_4_9_8_keeps_a_stale_memory_offset_after_a_drop() -> None:
    """OFF-18's versions: 4.9.3's LocalFileOffsetStore neither persists nor forgets on a drop."""
    config = Config(BROADCASTING, False, V4_9_3, pull_batch=2, consume_from_where=FIRST)
    state = run(consume(pull(assign(start(config, messages=2))), 0), QueueDropped(0, 0))
    assert state.lane(0, 0).file == NO_OFFSET and state.memory == 1
    state = assign(state)
    assert state.held is not None and state.held.next_offset == 0 and state.memory == 1
    assert oc.at_least_once(state)
    newer = Config(BROADCASTING, False, V4_9_8, pull_batch=2, consume_from_where=FIRST)
    state = assign(run(consume(pull(assign(start(newer, messages=2))), 0), QueueDropped(0, 0)))
    assert state.lane(0, 0).file == 1 and state.memory == 1 and state.held is not None
    assert state.held.next_offset == 1


def test_broadcasting_from_the_last_offset_skips_what_was_stored_before() -> None:
    """OFF-20: a fresh local file answers -1; LAST starts at the max offset the broker answered (any since the
    read), which gives up the messages before it; a restarted client loads its file (OFF-24)."""
    config = Config(BROADCASTING, pull_batch=2, consume_from_where=LAST)
    state = run(start(config, messages=2), OffsetRead(0, 0), oc.MessageStored(0, 5))
    assert oc.allowed_starts(state, 0, 0) == {2, 3}
    state = run(state, QueueAssigned(0, 0, 3))
    assert state.lane(0, 0).waived == {0, 1, 2} and oc.first_unhandled(state) == 3
    state = run(state, PersistAll(0), ConsumerCrashed(0), ConsumerStarted(0))
    assert state.memory == NO_OFFSET  # nothing was in memory to persist
    timestamp = Config(BROADCASTING, pull_batch=2, consume_from_where=TIMESTAMP, consume_timestamp=1)
    state = run(start(timestamp, messages=3), OffsetRead(0, 0))
    assert oc.allowed_starts(state, 0, 0) == {1}
    default = Config(BROADCASTING, pull_batch=2, consume_from_where=TIMESTAMP)  # 30 minutes before the start
    state = oc.initial_state(default, (10, 20), alive=False)
    state = run(state, ConsumerStarted(0, 30 * 60_000 + 18), OffsetRead(0, 0))
    assert oc.allowed_starts(state, 0, 0) == {1}


def test_a_crash_loses_the_unflushed_tail_and_the_consumer_is_corrected() -> None:
    """OFF-22, OFF-23: an async broker crash keeps what was stored 500 ms before; a consumer past the new end is
    answered OFFSET_ILLEGAL and corrected to it, and what its dropped ProcessQueue cached is given up."""
    config = Config(pull_batch=3, consume_from_where=FIRST)
    state = pull(assign(oc.initial_state(config, (0, 1000, 1000))))
    assert not oc.enabled(state, BrokerRestarted("broker-a", True, (0,), 1400))
    state = run(state, BrokerRestarted("broker-a", True, (1,), 1400))
    assert state.queues[0].max_offset == 1 and state.queues[0].waived == {1, 2}
    state = run(state, PullSent(0, 0, 3, None))
    assert not oc.enabled(state, PullOffsetMoved(0, 0, 0))
    state = run(state, PullOffsetMoved(0, 0, 1), oc.OffsetCorrected(0, 0))
    assert state.held is None and state.memory == NO_OFFSET and state.in_flight == (1, 1)
    sync = oc.initial_state(Config(sync_flush=True), (0, 1000))
    assert not oc.enabled(sync, BrokerRestarted("broker-a", True, (1,), 1100))
    assert oc.enabled(sync, BrokerRestarted("broker-a", True, (2,), 1100))


def test_reset_by_time_drops_and_reapplies() -> None:
    """OFF-25, OFF-26: the broker computes the offsets and tells its online clients; a client drops and clears the
    listed ProcessQueues, then 10 s later writes, persists and forgets each offset, and resumes."""
    state = consume(pull(assign(run(start(), Heartbeat(0, "broker-a")))), 0, 1)
    state = run(state, PersistAll(0), CommitArrives(0, 2), OffsetResetAsked("broker-a", 0, True))
    assert state.answer == oc.Answer("INVOKE_BROKER_TO_RESET_OFFSET", ResponseCode.SUCCESS, ((0, 0),))
    state = run(state, ResetReceived(0))
    assert state.clients[0].paused and state.held is not None and state.held.dropped
    assert not oc.enabled(state, PullSent(0, 0, 3, 2))
    state = run(state, ResetApplied(0))
    assert state.held is None and state.memory == NO_OFFSET and state.in_flight == (0,)
    state = run(state, CommitArrives(0, 0))
    assert state.stored == 0 and not state.clients[0].paused
    offline = run(start(), AdminCommit(0, 1), CommitArrives(0, 1), OffsetResetAsked("broker-a", -1, False))
    assert offline.answer is not None and offline.answer.code == ResponseCode.CONSUMER_NOT_ONLINE
    never = run(start(), OffsetResetAsked("broker-a", -1, False))
    assert never.answer is not None and never.answer.code == ResponseCode.SYSTEM_ERROR


def test_consume_stats_answer() -> None:
    state = run(start(), AdminCommit(0, 2), CommitArrives(0, 2), ConsumeStatsAsked("broker-a"))
    assert state.answer == oc.Answer("GET_CONSUME_STATS", ResponseCode.SUCCESS, (("TopicTest", 0, 3, 2, 1),))


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


@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
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


def machine_config(mod: object, **settings: object) -> Config:
    """A configuration of the mutant's own Config class (its machine compares configs by class)."""
    return mod.Config(**{"profile": V4_9_8, "pull_batch": 2, "consume_from_where": FIRST,  # type: ignore[attr-defined]
                         **settings})


def test_mutant_increase_only_ignored() -> None:
    mod = mutant(oc, "lane, memory=update_offset(lane.memory, request.removed, True),",
                 "lane, memory=update_offset(lane.memory, request.removed, False),")
    assert "OFF-5" in failed(mod, (machine_config(mod),))


def test_mutant_remove_returns_largest_removed_plus_one() -> None:
    mod = mutant(oc, "result = remaining[0] if remaining else pq.queue_offset_max + 1",
                 "result = max((o for o in pq.cached if o in offsets), default=pq.queue_offset_max) + 1")
    clauses = failed(mod, (machine_config(mod),))
    assert {"OFF-18", "OFF-17"} <= clauses


def test_mutant_remove_returns_max_plus_one_while_messages_remain() -> None:
    mod = mutant(oc, "result = remaining[0] if remaining else pq.queue_offset_max + 1",
                 "result = pq.queue_offset_max + 1")
    assert {"OFF-18", "OFF-17", "OFF-3"} <= failed(mod, (machine_config(mod),))


def test_mutant_commit_before_consumption() -> None:
    """The pulled batch is committed on arrival, before any listener ran."""
    mod = mutant(oc, "return state.with_lane(action.client, action.queue, but(lane, held=pulled))",
                 "return state.with_lane(action.client, action.queue, but(lane, held=pulled, "
                 "memory=pulled.next_offset))")
    assert {"OFF-17", "OFF-18"} <= failed(mod, (machine_config(mod),))


def test_mutant_broker_takes_the_max() -> None:
    mod = mutant(oc, "return offset, offset < stored", "return max(offset, stored), offset < stored")
    assert "OFF-8" in failed(mod, (machine_config(mod),))


def test_mutant_failed_send_back_dropped_from_the_process_queue() -> None:
    mod = mutant(oc, "after, offset = _without(pq, tuple(o for o in batch if o not in retried))",
                 "after, offset = _without(pq, batch)")
    assert "OFF-19" in failed(mod, (machine_config(mod, consume_batch=2, max_send_back_failures=1),))


def test_mutant_pull_commits_offset_zero_and_slave_pulls() -> None:
    mod = mutant(oc, "if commit_value > 0 and not to_slave:", "if commit_value >= 0:")
    assert "OFF-9" in failed(mod, (machine_config(mod),))


def test_mutant_no_new_message_ignores_taken_messages() -> None:
    """correctTagsOffset must look at msgCount, which counts orderly taken messages too (OFF-14)."""
    mod = mutant(oc, "    if held.pq.msg_count == 0:\n", "    if not held.pq.cached:\n")
    assert "OFF-14" in failed(mod, (machine_config(mod, orderly=True),), messages=2)


def test_mutant_orderly_commit_skips_a_message() -> None:
    mod = mutant(oc, "pq.taken[-1] + 1", "pq.taken[-1] + 2")
    assert {"OFF-17", "OFF-15"} <= failed(mod, (machine_config(mod, orderly=True),))


def test_mutant_assignment_ignores_the_broker_offset() -> None:
    """A re-added queue that starts after the stored offset instead of at it loses messages consumed by nobody
    (OFF-13, OFF-19)."""
    mod = mutant(oc, "    if answer >= 0:\n        return answer\n", "    if answer >= 0:\n        return answer + 1\n")
    assert {"OFF-13", "OFF-19"} <= failed(mod, (machine_config(mod),), max_crashes=1)


@pytest.mark.slow  # long: the slow tier runs it (the README suite stays under 8 minutes)
def test_late_writes_need_the_exemption() -> None:
    """Without OFF-18's exception for late writes the explorer finds the race of OFF-12."""
    mod = mutant(oc, "if lane.memory == NO_OFFSET or not state.config.forgets or held.late_write:",
                 "if lane.memory == NO_OFFSET or not state.config.forgets:")
    late = (machine_config(mod, late_writes=True),)
    assert "OFF-18" in failed(mod, late, max_drops=1, messages=2)
    assert failed(oc, (machine_config(oc, late_writes=True),), max_drops=1, max_crashes=1, messages=2) == set()


def test_broadcasting_4_9_3_needs_the_versioned_exemption() -> None:
    """Without OFF-18's version note the explorer finds 4.9.3's stale memory offset after a drop."""
    mod = mutant(oc, "if lane.memory == NO_OFFSET or not state.config.forgets or held.late_write:",
                 "if lane.memory == NO_OFFSET or held.late_write:")
    old = (machine_config(mod, message_model=BROADCASTING, profile=V4_9_3),)
    new = (machine_config(mod, message_model=BROADCASTING),)
    assert "OFF-18" in failed(mod, old, max_drops=1, messages=2)
    assert failed(mod, new, max_drops=1, messages=2) == set()
