"""Rebalance: the candidate generators of the transition table (``machine.py``): the actions worth trying under a
model's bounds, one generator per action kind."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from rocketspec.spec.queues import sorted_ids
from rocketspec.spec.rebalance.state import (
    BatchConsumed,
    BrokerLeftRoute,
    BrokerLockReleased,
    BrokerRestarted,
    ClientEvicted,
    ConsumerCrashed,
    ConsumerShutdown,
    ConsumerStarted,
    ConsumerState,
    GroupState,
    HeartbeatSent,
    LockLapsed,
    LockRenewed,
    MessageConsumed,
    OffsetCommitted,
    OffsetsPersisted,
    Phase,
    PullExpired,
    Rebalanced,
    RouteChanged,
    RouteRefreshed,
    UnlockArrived,
)


def listed_ids(state: GroupState, reversed_list: bool) -> tuple[str, ...]:
    """The id list a broker answers: the registered ids, in Java order or reversed."""
    listed = sorted_ids(state.registered)
    return tuple(reversed(listed)) if reversed_list else tuple(listed)


@attrs.frozen
class Bounds:
    """What a model tries beyond each group's own bounds (``Setup``): other routes the name server may list
    (``routes``, as sets of queue positions) and whether pulls commit offsets (``commits``)."""

    routes: tuple[frozenset[int], ...] = ()
    commits: bool = False


def _consumers(state: GroupState, *phases: Phase) -> Iterator[tuple[str, ConsumerState]]:
    for cid, me in zip(state.setup.consumer_ids, state.consumers, strict=True):
        if me.phase in phases:
            yield cid, me


def broker_left_route_candidates(state: GroupState, bounds: Bounds) -> Iterator[BrokerLeftRoute]:
    if state.setup.shrinking_route:
        yield BrokerLeftRoute()


def route_changed_candidates(state: GroupState, bounds: Bounds) -> Iterator[RouteChanged]:
    for route in bounds.routes:
        yield RouteChanged(route)


def broker_lock_released_candidates(state: GroupState, bounds: Bounds) -> Iterator[BrokerLockReleased]:
    if state.setup.orderly:
        for p, holder in enumerate(state.lock_holders):
            if holder is not None:
                yield BrokerLockReleased(state.setup.queues[p])


def broker_restarted_candidates(state: GroupState, bounds: Bounds) -> Iterator[BrokerRestarted]:
    if state.setup.orderly and state.restarts_left:
        for broker in sorted({q.broker_name for q in state.setup.queues}):
            yield BrokerRestarted(broker)


def started_candidates(state: GroupState, bounds: Bounds) -> Iterator[ConsumerStarted]:
    for cid, _ in _consumers(state, Phase.NEW):
        yield ConsumerStarted(cid)


def evicted_candidates(state: GroupState, bounds: Bounds) -> Iterator[ClientEvicted]:
    for cid, _ in _consumers(state, Phase.LIVE, Phase.DOWN):
        if cid in state.registered:
            yield ClientEvicted(cid)


def shutdown_candidates(state: GroupState, bounds: Bounds) -> Iterator[ConsumerShutdown]:
    for cid, _ in _consumers(state, Phase.LIVE):
        yield ConsumerShutdown(cid)


def crash_candidates(state: GroupState, bounds: Bounds) -> Iterator[ConsumerCrashed]:
    for cid, _ in _consumers(state, Phase.LIVE):
        yield ConsumerCrashed(cid)


def heartbeat_candidates(state: GroupState, bounds: Bounds) -> Iterator[HeartbeatSent]:
    for cid, _ in _consumers(state, Phase.LIVE):
        if cid not in state.registered:
            yield HeartbeatSent(cid)


def route_refreshed_candidates(state: GroupState, bounds: Bounds) -> Iterator[RouteRefreshed]:
    if state.setup.shrinking_route or bounds.routes:
        for cid, _ in _consumers(state, Phase.LIVE):
            yield RouteRefreshed(cid)


def persisted_candidates(state: GroupState, bounds: Bounds) -> Iterator[OffsetsPersisted]:
    for cid, _ in _consumers(state, Phase.LIVE):
        yield OffsetsPersisted(cid)


def committed_candidates(state: GroupState, bounds: Bounds) -> Iterator[OffsetCommitted]:
    if bounds.commits:
        for cid, me in _consumers(state, Phase.LIVE):
            for p, entry in enumerate(me.table):
                if entry is not None:
                    yield OffsetCommitted(cid, state.setup.queues[p])


def lock_renewed_candidates(state: GroupState, bounds: Bounds) -> Iterator[LockRenewed]:
    if state.setup.orderly:
        for cid, _ in _consumers(state, Phase.LIVE):
            yield LockRenewed(cid)


def rebalanced_candidates(state: GroupState, bounds: Bounds) -> Iterator[Rebalanced]:
    """The rebalances that can differ: a reversed id list only when it has two ids or more; a running batch
    (``busy``) only when a queue not yet dropped is to go, and cached messages only when a queue goes."""
    setup = state.setup
    for cid, me in _consumers(state, Phase.LIVE):
        for reversed_list in (False, True) if len(state.registered) > 1 else (False,):
            yield Rebalanced(cid, reversed_list)
            if not setup.orderly:
                continue
            wanted = setup.target(cid, listed_ids(state, reversed_list), me.route_view)
            if wanted is None:
                continue
            going = [e for p, e in enumerate(me.table) if e is not None and (p not in wanted or e.pull_expired)]
            if not going:
                continue
            yield Rebalanced(cid, reversed_list, busy=False, cached=True)
            if any(not e.dropped for e in going):
                yield Rebalanced(cid, reversed_list, busy=True, cached=False)
                yield Rebalanced(cid, reversed_list, busy=True, cached=True)


QueueAction = MessageConsumed | BatchConsumed | PullExpired | LockLapsed


def queue_candidates(
    kind: type[MessageConsumed] | type[BatchConsumed] | type[PullExpired] | type[LockLapsed],
) -> Callable[[GroupState, Bounds], Iterator[QueueAction]]:
    """Every queue of every live consumer's table, as an action of ``kind``."""

    def candidates(state: GroupState, bounds: Bounds) -> Iterator[QueueAction]:
        for cid, me in _consumers(state, Phase.LIVE):
            for p, entry in enumerate(me.table):
                if entry is not None:
                    yield kind(cid, state.setup.queues[p])

    return candidates


def unlock_arrived_candidates(state: GroupState, bounds: Bounds) -> Iterator[UnlockArrived]:
    for cid, me in _consumers(state, Phase.LIVE):
        for p in sorted(me.pending_unlocks):
            yield UnlockArrived(cid, state.setup.queues[p])
