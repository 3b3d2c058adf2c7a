"""Pull correction: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import GetMessageStatus, ResponseCode
from rocketspec.spec.pull_correction.machine import (
    Action,
    Answer,
    Config,
    DelayedFix,
    HoldTimeout,
    Pull,
    PullState,
    Rebalance,
    Store,
    Wake,
    _candidates,
    _live,
    enabled,
    step,
)
from rocketspec.spec.pull_correction.oracles import V4_9_4
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# --------------------------------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------------------------------


def _answer_of(action: Action) -> Answer | None:
    if isinstance(action, Pull | Wake | HoldTimeout):
        return action.answer
    return None


def _plain_slave(state: PullState) -> bool:
    return state.config.is_slave and not state.config.offset_check_in_slave


def _next_within_queue(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is None:
        return True
    if _plain_slave(before) and a.next_offset == a.requested:
        return True
    return a.min_offset <= a.next_offset <= a.max_offset


def _found_advances(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.FOUND:
        return True
    return a.next_offset > a.requested and bool(a.delivered) and all(
        a.requested <= o < a.next_offset for o in a.delivered
    )


def _too_small_to_min(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.OFFSET_TOO_SMALL:
        return True
    expected = a.requested if _plain_slave(before) else a.min_offset
    return a.next_offset == expected and after.pull_offset == expected


def _overflow_badly_per_version(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.OFFSET_OVERFLOW_BADLY or _plain_slave(before):
        return True
    back_to_zero = a.min_offset == 0 and before.config.profile < V4_9_4
    return a.next_offset == (a.min_offset if back_to_zero else a.max_offset)


def _moved_only_outside(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.PULL_OFFSET_MOVED:
        return True
    return a.requested < a.min_offset or a.requested > a.max_offset


def _no_skip(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is None:
        return True
    return all(o in a.delivered for o in range(a.requested, a.next_offset) if before.store.readable(o))


def _held_only_without_message(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not None:
        return True
    store = before.store
    return isinstance(action, Pull) and (
        a.requested == store.max_offset or store.min_offset <= a.requested < store.cq_from
    )


def _answered_once(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, Wake | HoldTimeout):
        return before.held == action.answer.requested and after.held is None and action.answer.code is not None
    if isinstance(action, Pull):
        return before.held is None and (after.held is None) == (action.answer.code is not None)
    return after.held == before.held


def _commits(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, Wake | HoldTimeout):
        return after.broker_offset == before.broker_offset
    if isinstance(action, Pull):
        memory = before.memory_offset
        if before.config.is_slave or memory is None or memory <= 0:
            return after.broker_offset == before.broker_offset
        return after.broker_offset == memory
    return True


def _retry_increase_only(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code not in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
        return True
    assert before.pq is not None
    if before.pq.cached:
        return after.memory_offset == before.memory_offset
    if before.memory_offset is None:
        return after.memory_offset == a.next_offset
    return after.memory_offset == max(before.memory_offset, a.next_offset)


def _illegal_drops(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.PULL_OFFSET_MOVED:
        return True
    return (
        after.pq is not None
        and after.pq.dropped
        and after.fix is not None
        and after.fix.offset == a.next_offset
        and after.memory_offset == before.memory_offset
    )


def _fix_stores_correction(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, DelayedFix):
        return True
    assert before.fix is not None
    return after.broker_offset == before.fix.offset and after.pq is None and after.memory_offset is None


def _rebalance_resumes(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Rebalance):
        return True
    return after.pull_offset == before.broker_offset and after.memory_offset == before.broker_offset


def _found_enqueues(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.SUCCESS:
        return True
    assert after.pq is not None
    return (
        after.pull_offset == a.next_offset
        and set(a.delivered) <= after.pq.cached
        and after.memory_offset == before.memory_offset
    )


def _held_requires_live_queue(state: PullState) -> bool:
    return state.held is None or _live(state)


def _fix_only_when_dropped(state: PullState) -> bool:
    return state.fix is None or (state.pq is not None and state.pq.dropped)


def _store_bounds(state: PullState) -> bool:
    s = state.store
    return s.min_offset <= s.data_from <= s.max_offset and s.cq_from <= s.data_from and s.min_offset >= 0


INVARIANTS: tuple[Invariant[PullState], ...] = (
    Invariant("held request has a live process queue", ("PULL-13", "PULL-22"), _held_requires_live_queue),
    Invariant("pending fix only for a dropped queue", ("PULL-22",), _fix_only_when_dropped),
    Invariant("store bounds are ordered", ("PULL-3", "PULL-6"), _store_bounds),
)

STEP_INVARIANTS: tuple[StepInvariant[PullState, Action], ...] = (
    StepInvariant("answer's next offset within [min, max]", ("PULL-25", "PULL-7", "PULL-6"), _next_within_queue),
    StepInvariant("FOUND advances past the requested offset", ("PULL-25", "PULL-8", "PULL-9"), _found_advances),
    StepInvariant("OFFSET_TOO_SMALL corrects to min", ("PULL-3", "PULL-7"), _too_small_to_min),
    StepInvariant("OFFSET_OVERFLOW_BADLY correction per version", ("PULL-5",), _overflow_badly_per_version),
    StepInvariant("PULL_OFFSET_MOVED only outside [min, max]", ("PULL-26", "PULL-10", "PULL-2", "PULL-4"),
                  _moved_only_outside),
    StepInvariant("no readable matching message is skipped", ("PULL-27", "PULL-4", "PULL-9", "PULL-21"), _no_skip),
    StepInvariant("held only when no message at the offset", ("PULL-13", "PULL-4", "PULL-6"),
                  _held_only_without_message),
    StepInvariant("a held request is answered exactly once", ("PULL-14",), _answered_once),
    StepInvariant("only a first processing on a master commits", ("PULL-18",), _commits),
    StepInvariant("NO_NEW_MSG / NO_MATCHED_MSG store increase-only", ("PULL-21", "PULL-19"), _retry_increase_only),
    StepInvariant("OFFSET_ILLEGAL drops and schedules the fix", ("PULL-22", "PULL-19"), _illegal_drops),
    StepInvariant("the fix stores the correction as is", ("PULL-22",), _fix_stores_correction),
    StepInvariant("FOUND enqueues and moves on", ("PULL-20", "PULL-19"), _found_enqueues),
    StepInvariant("rebalance resumes from the broker's offset", ("PULL-24",), _rebalance_resumes),
)


def model(
    *,
    profile: VersionProfile = DEFAULT_PROFILE,
    is_slave: bool = False,
    offset_check_in_slave: bool = False,
    max_messages: int = 3,
    cq_file_entries: int = 2,
    batch: int = 2,
    filtered_messages: bool = True,
) -> Model[PullState, Action]:
    """One queue of up to ``max_messages`` messages (appended, deleted from the head, consume-queue files of
    ``cq_file_entries`` entries), pulled ``batch`` messages at a time by one push consumer whose broker-stored
    offset starts anywhere in ``[0, max_messages + 1]``, served by a master or a slave."""
    config = Config(profile, is_slave, offset_check_in_slave, max_messages, cq_file_entries, batch, filtered_messages)
    initial = tuple(PullState(config, Store(), broker_offset=b) for b in range(max_messages + 2))
    role = "master" if not is_slave else ("slave, offsetCheckInSlave" if offset_check_in_slave else "slave")
    bounds = (
        f"1 queue of <= {max_messages} messages ({'some' if filtered_messages else 'none'} filtered out), "
        f"consume-queue files of {cq_file_entries}, batch {batch}, stored offset 0..{max_messages + 1}, "
        f"{role}, {profile}"
    )
    return Model(
        area="pull_correction",
        bounds=bounds,
        initial=initial,
        actions=_candidates,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
