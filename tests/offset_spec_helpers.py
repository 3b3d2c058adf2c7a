"""Helpers of the offset_commit spec tests: a state, actions run with every invariant checked, and the usual
sequences (an assignment, a pull answered as the queue is, consumption)."""

from __future__ import annotations

from rocketspec.spec import offset_commit as oc
from rocketspec.spec.offset_commit import (
    Config,
    ConsumeFinished,
    OffsetRead,
    OffsetState,
    OffsetUpdated,
    PullFound,
    PullNoNewMessage,
    PullSent,
    QueueAssigned,
)
from rocketspec.spec.protocol import ConsumeFromWhere

FIRST = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET


def start(config: Config | None = None, messages: int = 3) -> OffsetState:
    return oc.initial_state(config or Config(pull_batch=3, consume_from_where=FIRST), range(messages))


def run(state: OffsetState, *actions: oc.Action) -> OffsetState:
    for action in actions:
        assert oc.enabled(state, action), action
        state = oc.step(state, action)
        for inv in oc.INVARIANTS:
            assert inv.holds(state), inv.name
    return state


def assign(state: OffsetState, client: int = 0, queue: int = 0) -> OffsetState:
    """The rebalance adds the queue: the read, then the start it allows (the only one)."""
    state = run(state, OffsetRead(client, queue))
    starts = oc.allowed_starts(state, client, queue)
    assert len(starts) == 1, starts
    state = run(state, QueueAssigned(client, queue, next(iter(starts))))
    if state.config.orderly:  # the first pull after the lock reads the offset again (OFF-31)
        state = run(state, oc.LockedRead(client, queue))
        state = run(state, oc.LockedStart(client, queue, next(iter(oc.allowed_starts(state, client, queue)))))
    return state


def pull(state: OffsetState, client: int = 0, queue: int = 0) -> OffsetState:
    """One pull, answered as the queue is now."""
    lane = state.lane(client, queue)
    assert lane.held is not None
    offset = lane.held.next_offset
    state = run(state, PullSent(client, queue, offset, oc.pull_commit(state, client, queue)))
    end = state.queues[queue].max_offset
    if offset < end:
        return run(state, PullFound(client, queue, min(state.config.pull_batch, end - offset), end))
    return run(state, PullNoNewMessage(client, queue, end))


def consume(state: OffsetState, *offsets: int) -> OffsetState:
    """Each offset's consume request finishes and writes its result."""
    for offset in offsets:
        state = run(state, ConsumeFinished(0, 0, (offset,)), OffsetUpdated(0, 0, (offset,)))
    return state
