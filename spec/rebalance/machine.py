"""Rebalance: the state machine as a transition table: one guard, effect and candidate generator per action kind.

The state and the actions are ``state.py``, the candidate generators ``candidates.py``; ``TRANSITIONS`` is the
machine (``rocketspec.spec.transitions``), and ``enabled`` and ``step`` are its generic methods.
"""

from __future__ import annotations

from typing import TypeVar

import attrs

from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.rebalance.candidates import (
    Bounds,
    broker_left_route_candidates,
    broker_lock_released_candidates,
    broker_restarted_candidates,
    committed_candidates,
    crash_candidates,
    evicted_candidates,
    heartbeat_candidates,
    listed_ids,
    lock_renewed_candidates,
    persisted_candidates,
    queue_candidates,
    rebalanced_candidates,
    route_changed_candidates,
    route_refreshed_candidates,
    shutdown_candidates,
    started_candidates,
    unlock_arrived_candidates,
)
from rocketspec.spec.rebalance.clauses import CLAUSES
from rocketspec.spec.rebalance.oracles import (
    Unlock,
    new_queue_locked,
    plan_table_update,
    pull_commit_offset,
    removal,
)
from rocketspec.spec.rebalance.state import (
    Action,
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
    ProcessQueueState,
    PullExpired,
    Rebalanced,
    RouteChanged,
    RouteRefreshed,
    Setup,
    UnlockArrived,
)
from rocketspec.spec.transitions import Transition, TransitionTable

T = TypeVar("T")


def full_route(setup: Setup) -> frozenset[int]:
    return frozenset(range(len(setup.queues)))


def _replace(items: tuple[T, ...], position: int, value: T) -> tuple[T, ...]:
    return (*items[:position], value, *items[position + 1:])


def _tracked_room(setup: Setup, position: int, entry: ProcessQueueState) -> bool:
    """Whether consuming at ``position`` moves a tracked offset (see ``Setup.messages``)."""
    return position < setup.loaded and entry.offset < setup.messages


def _lock_may_lapse(state: GroupState, position: int) -> bool:
    """Whether the broker lock at ``position`` may go: its holder has no lock flag on it any more (REB-18)."""
    holder = state.lock_holders[position]
    if holder is None:
        return False
    owner = state.consumer(holder)
    if owner.phase is not Phase.LIVE:
        return True
    entry = owner.table[position]
    return entry is None or not entry.locked


def _persist_differs(state: GroupState, consumer_id: str, consumer: ConsumerState) -> bool:
    return any(
        e is not None and not e.dropped and e.offset != stored
        for e, stored in zip(consumer.table, state.offsets_of(consumer_id), strict=True)
    )


def _live(state: GroupState, consumer_id: str) -> ConsumerState | None:
    me = state.consumer(consumer_id)
    return me if me.phase is Phase.LIVE else None


def _entry(state: GroupState, consumer_id: str, queue: MessageQueue) -> ProcessQueueState | None:
    """The table entry of a live consumer's queue, or None."""
    me = _live(state, consumer_id)
    return None if me is None else me.table[state.setup.position(queue)]


# ---------------------------------------------------------------------------------------------------------------
# Guards
# ---------------------------------------------------------------------------------------------------------------


def _broker_left_route_enabled(state: GroupState, action: BrokerLeftRoute) -> bool:
    return state.setup.shrinking_route and state.route == full_route(state.setup)


def _route_changed_enabled(state: GroupState, action: RouteChanged) -> bool:
    return action.route != state.route and action.route <= full_route(state.setup)


def _broker_lock_released_enabled(state: GroupState, action: BrokerLockReleased) -> bool:
    return state.setup.orderly and _lock_may_lapse(state, state.setup.position(action.queue))


def _broker_restarted_enabled(state: GroupState, action: BrokerRestarted) -> bool:
    # With no lock on the broker a restart changes nothing modelled.
    setup = state.setup
    return setup.orderly and state.restarts_left > 0 and any(
        h is not None and q.broker_name == action.broker for q, h in zip(setup.queues, state.lock_holders, strict=True)
    )


def _started_enabled(state: GroupState, action: ConsumerStarted) -> bool:
    return state.consumer(action.consumer).phase is Phase.NEW


def _evicted_enabled(state: GroupState, action: ClientEvicted) -> bool:
    me = state.consumer(action.consumer)
    if action.consumer not in state.registered or me.phase is Phase.NEW:
        return False
    return me.phase is Phase.DOWN or state.flaps_left > 0


def _rebalanced_enabled(state: GroupState, action: Rebalanced) -> bool:
    if _live(state, action.consumer) is None:
        return False
    if action.list_failed and not state.setup.clustering:
        return False  # broadcasting asks for no id list
    return state.setup.orderly or not (action.busy or action.cached or action.cached_only or action.busy_only)


def _stop_enabled(state: GroupState, action: ConsumerShutdown | ConsumerCrashed) -> bool:
    return _live(state, action.consumer) is not None


def _heartbeat_enabled(state: GroupState, action: HeartbeatSent) -> bool:
    return _live(state, action.consumer) is not None and action.consumer not in state.registered


def _route_refreshed_enabled(state: GroupState, action: RouteRefreshed) -> bool:
    me = _live(state, action.consumer)
    return me is not None and me.route_view != state.route


def _persisted_enabled(state: GroupState, action: OffsetsPersisted) -> bool:
    me = _live(state, action.consumer)
    return me is not None and _persist_differs(state, action.consumer, me)


def _committed_enabled(state: GroupState, action: OffsetCommitted) -> bool:
    entry = _entry(state, action.consumer, action.queue)
    if entry is None or entry.dropped:
        return False
    return pull_commit_offset(state.setup.message_model, entry.offset) is not None


def _lock_renewed_enabled(state: GroupState, action: LockRenewed) -> bool:
    me = _live(state, action.consumer)
    setup = state.setup
    return me is not None and setup.orderly and setup.clustering and any(e is not None for e in me.table)


def _unlock_arrived_enabled(state: GroupState, action: UnlockArrived) -> bool:
    me = _live(state, action.consumer)
    return me is not None and state.setup.position(action.queue) in me.pending_unlocks


def _consumed_enabled(state: GroupState, action: MessageConsumed) -> bool:
    entry = _entry(state, action.consumer, action.queue)
    setup = state.setup
    if entry is None:
        return False
    return not setup.orderly and not entry.dropped and _tracked_room(setup, setup.position(action.queue), entry)


def _batch_enabled(state: GroupState, action: BatchConsumed) -> bool:
    entry = _entry(state, action.consumer, action.queue)
    setup = state.setup
    if entry is None:
        return False
    if setup.clustering:
        return setup.orderly and not entry.dropped and entry.locked
    # Broadcasting batches need no lock (REB-27).
    return setup.orderly and not entry.dropped


def _pull_expired_enabled(state: GroupState, action: PullExpired) -> bool:
    entry = _entry(state, action.consumer, action.queue)
    return entry is not None and entry.dropped and not entry.pull_expired


def _lock_lapsed_enabled(state: GroupState, action: LockLapsed) -> bool:
    entry = _entry(state, action.consumer, action.queue)
    return entry is not None and entry.locked


# ---------------------------------------------------------------------------------------------------------------
# Effects
# ---------------------------------------------------------------------------------------------------------------


def _rebalance(state: GroupState, action: Rebalanced) -> GroupState:
    """One rebalance of the topic by a live consumer.

    Clustering allocates from the sorted id list and route (REB-1) by the strategy (AVG REB-3, AVG_BY_CIRCLE REB-4,
    CONSISTENT_HASH REB-5, CONFIG REB-6, MACHINE_ROOM REB-7; a consumer missing from the list gets nothing, REB-2),
    broadcasting takes the whole cached route (REB-8); a throwing strategy, or an id list the broker did not give,
    changes nothing (REB-9). Queues no longer allocated (or pull-expired) are dropped, their offsets persisted to the
    consumer's store (the broker's, or its local one in broadcasting, REB-26) and removed (REB-10, REB-11), unless an
    orderly clustering batch holds the consume lock (REB-14, per queue: ``busy_only``); the broker lock of
    a removed orderly clustering queue is released now or, with cached messages, later (REB-14). New queues are
    added after the removals, orderly ones only once the broker lock is taken (REB-12, REB-27), starting at the
    stored offset (REB-13), with the lock flag of REB-15.
    """
    setup = state.setup
    cid = action.consumer
    me = state.consumer(cid)
    listed = None if action.list_failed else listed_ids(state, action.reversed_list)
    wanted = setup.target(cid, listed, me.route_view)
    if wanted is None:
        return state
    target = [setup.queues[p] for p in sorted(wanted)]
    table = list(me.table)
    offsets = list(state.offsets_of(cid))
    holders = list(state.lock_holders)
    pending = set(me.pending_unlocks)
    in_table = [setup.queues[p] for p, e in enumerate(table) if e is not None]
    expired = [setup.queues[p] for p, e in enumerate(table) if e is not None and e.pull_expired]
    plan = plan_table_update(setup.topic, in_table, target, expired)
    removed: set[MessageQueue] = set()
    for queue in sorted(plan.drop):
        p = setup.position(queue)
        entry = table[p]
        assert entry is not None
        # Only a queue that is not dropped yet can have a batch running (it started before the drop).
        free = not (action.busy_on(queue) and not entry.dropped)
        outcome = removal(setup.orderly, setup.message_model, free, action.caches(queue))
        if not entry.dropped and outcome.persist_offset:
            # An entry dropped earlier had its offset persisted then and cleared from the offset store.
            offsets[p] = entry.offset
        if not outcome.removed:
            table[p] = attrs.evolve(entry, dropped=True)
            continue
        table[p] = None
        removed.add(queue)
        if outcome.unlock is Unlock.DELAYED:
            pending.add(p)
        elif outcome.unlock is Unlock.NOW and holders[p] == cid:
            holders[p] = None
    for queue in sorted(plan.add | (plan.readd & removed)):
        p = setup.position(queue)
        if setup.orderly:
            if holders[p] not in (None, cid):
                continue
            holders[p] = cid
        # The lock flag is read by clustering orderly consumers only (REB-16, REB-27).
        locked = setup.orderly and setup.clustering and new_queue_locked(setup.orderly, setup.profile)
        table[p] = ProcessQueueState(offset=offsets[p], locked=locked)
    settled = all((p in wanted) == (e is not None) and (e is None or not e.dropped) for p, e in enumerate(table))
    synced = settled and me.route_view == state.route
    consumer = ConsumerState(me.phase, me.route_view, me.route_view, synced, tuple(table), frozenset(pending))
    return state.replaced(cid, consumer, stored_offsets=tuple(offsets), lock_holders=tuple(holders))


def _renew_locks(state: GroupState, action: LockRenewed) -> GroupState:
    """lockAll of a clustering orderly consumer (every 20 s): every table queue is locked again if the broker grants
    it (free, or already the caller's), and the lock flags follow the answer (REB-17); the broker lock of a restarted
    broker is taken again unless another consumer took it first (REB-24)."""
    cid = action.consumer
    me = state.consumer(cid)
    holders = list(state.lock_holders)
    table = list(me.table)
    for p, entry in enumerate(table):
        if entry is None:
            continue
        granted = holders[p] in (None, cid)
        if granted:
            holders[p] = cid
        table[p] = attrs.evolve(entry, locked=granted, unbacked=False)
    return state.replaced(cid, me.with_table(tuple(table)), lock_holders=tuple(holders))


def _restart_broker(state: GroupState, action: BrokerRestarted) -> GroupState:
    """A broker restart loses its lock table: its lock holders are gone and live consumers' lock flags on its queues
    stay, unbacked (REB-24)."""
    on_broker = frozenset(p for p, q in enumerate(state.setup.queues) if q.broker_name == action.broker)
    holders = tuple(None if p in on_broker else h for p, h in enumerate(state.lock_holders))
    consumers = tuple(
        c.with_table(tuple(
            attrs.evolve(e, unbacked=True) if p in on_broker and e is not None and e.locked else e
            for p, e in enumerate(c.table)
        )) if c.phase is Phase.LIVE else c
        for c in state.consumers
    )
    return attrs.evolve(state, consumers=consumers, lock_holders=holders, restarts_left=state.restarts_left - 1)


def _stop(state: GroupState, cid: str, clean: bool) -> GroupState:
    me = state.consumer(cid)
    empty = tuple(None for _ in me.table)
    down = ConsumerState(Phase.DOWN, me.route_view, me.route_used, False, empty, frozenset())
    if not clean:
        return state.replaced(cid, down)
    offsets = list(state.offsets_of(cid))
    holders = list(state.lock_holders)
    for p, entry in enumerate(me.table):
        if entry is None:
            continue
        if not entry.dropped:
            offsets[p] = entry.offset
        # unlockAll runs in clustering only (REB-27).
        if state.setup.orderly and state.setup.clustering and holders[p] == cid:
            holders[p] = None
    return state.replaced(
        cid, down, registered=state.registered - {cid}, stored_offsets=tuple(offsets), lock_holders=tuple(holders)
    )


def _shutdown(state: GroupState, action: ConsumerShutdown) -> GroupState:
    """A clean shutdown persists every offset of its table to its store (REB-26), releases its orderly clustering
    broker locks (REB-27) and unregisters (REB-23)."""
    return _stop(state, action.consumer, clean=True)


def _crash(state: GroupState, action: ConsumerCrashed) -> GroupState:
    """A crash persists nothing and leaves the registration and the broker locks as they are (REB-23)."""
    return _stop(state, action.consumer, clean=False)


def _start(state: GroupState, action: ConsumerStarted) -> GroupState:
    """A new consumer takes the name server's route and registers; every earlier view of the id list is stale
    (REB-20)."""
    me = state.consumer(action.consumer)
    started = ConsumerState(Phase.LIVE, state.route, None, False, me.table, frozenset())
    return state.replaced(action.consumer, started, registered=state.registered | {action.consumer})


def _evict(state: GroupState, action: ClientEvicted) -> GroupState:
    """The brokers drop a client: a crashed one's registration goes (REB-23), a live one may come back by heartbeat;
    every view of the id list is stale (REB-20)."""
    flaps = state.flaps_left - (1 if state.consumer(action.consumer).phase is Phase.LIVE else 0)
    return state.reregistered(state.registered - {action.consumer}, flaps)


def _heartbeat(state: GroupState, action: HeartbeatSent) -> GroupState:
    """A live consumer's heartbeat registers it again; every view of the id list is stale (REB-20)."""
    return state.reregistered(state.registered | {action.consumer}, state.flaps_left)


def _broker_left_route(state: GroupState, action: BrokerLeftRoute) -> GroupState:
    """The last broker's queues leave the route: views of the route are stale (REB-8, REB-20)."""
    setup = state.setup
    last = setup.queues[-1].broker_name
    route = frozenset(p for p, q in enumerate(setup.queues) if q.broker_name != last)
    return attrs.evolve(state, route=route, consumers=tuple(c.unsynced() for c in state.consumers))


def _route_changed(state: GroupState, action: RouteChanged) -> GroupState:
    """The name server's route lists other read queues (REB-28): consumers see it when they refresh (REB-8,
    REB-20)."""
    return attrs.evolve(state, route=action.route, consumers=tuple(c.unsynced() for c in state.consumers))


def _route_refreshed(state: GroupState, action: RouteRefreshed) -> GroupState:
    """A consumer caches the name server's route; its next rebalance allocates from it (REB-8, REB-28)."""
    me = state.consumer(action.consumer)
    refreshed = ConsumerState(me.phase, state.route, me.route_used, me.synced, me.table, me.pending_unlocks)
    return state.replaced(action.consumer, refreshed)


def _persist(state: GroupState, action: OffsetsPersisted) -> GroupState:
    """The periodic persist writes the offset of every table queue not dropped to the consumer's store: the brokers'
    (REB-10) or its local one (REB-26)."""
    cid = action.consumer
    me = state.consumer(cid)
    offsets = tuple(
        e.offset if e is not None and not e.dropped else stored
        for e, stored in zip(me.table, state.offsets_of(cid), strict=True)
    )
    return state.replaced(cid, me, stored_offsets=offsets)


def _commit(state: GroupState, action: OffsetCommitted) -> GroupState:
    """A clustering pull request carries the in-memory offset (> 0) of its queue and the master stores it
    (REB-25)."""
    p = state.setup.position(action.queue)
    entry = state.consumer(action.consumer).table[p]
    assert entry is not None
    return attrs.evolve(state, stored_offsets=_replace(state.stored_offsets, p, entry.offset))


def _unlock_arrived(state: GroupState, action: UnlockArrived) -> GroupState:
    """A delayed unlock frees the broker lock if its sender holds it, even when the sender took the queue again
    meanwhile: its lock flag is then unbacked (REB-19)."""
    cid = action.consumer
    me = state.consumer(cid)
    position = state.setup.position(action.queue)
    entry = me.table[position]
    holders = state.lock_holders
    table = me.table
    if holders[position] == cid:
        holders = _replace(holders, position, None)
        if entry is not None and entry.locked:
            table = _replace(table, position, attrs.evolve(entry, unbacked=True))
    return state.replaced(cid, me.with_table(table, me.pending_unlocks - {position}), lock_holders=holders)


def _queue_changed(state: GroupState, consumer_id: str, queue: MessageQueue,
                   entry: ProcessQueueState) -> GroupState:
    me = state.consumer(consumer_id)
    return state.replaced(consumer_id, me.with_table(_replace(me.table, state.setup.position(queue), entry)))


def _consume(state: GroupState, action: MessageConsumed) -> GroupState:
    """A concurrent consumer consumes the next message of a queue it holds (not dropped): its in-memory offset moves
    on (REB-10, REB-12)."""
    entry = _entry(state, action.consumer, action.queue)
    assert entry is not None
    return _queue_changed(state, action.consumer, action.queue, attrs.evolve(entry, offset=entry.offset + 1))


def _batch(state: GroupState, action: BatchConsumed) -> GroupState:
    """An orderly batch runs on a queue not dropped under its lock flag (clustering; broadcasting needs none, REB-27)
    and commits its offset (REB-16)."""
    entry = _entry(state, action.consumer, action.queue)
    assert entry is not None
    if not _tracked_room(state.setup, state.setup.position(action.queue), entry):
        return state
    return _queue_changed(state, action.consumer, action.queue, attrs.evolve(entry, offset=entry.offset + 1))


def _pull_expire(state: GroupState, action: PullExpired) -> GroupState:
    """A dropped queue pulls no more: it becomes pull-expired, and the next rebalance removes it (REB-11)."""
    entry = _entry(state, action.consumer, action.queue)
    assert entry is not None
    return _queue_changed(state, action.consumer, action.queue, attrs.evolve(entry, pull_expired=True))


def _lock_lapse(state: GroupState, action: LockLapsed) -> GroupState:
    """Renewals fail: the lock flag expires (REB-16) and later the broker lock (REB-18)."""
    cid = action.consumer
    me = state.consumer(cid)
    position = state.setup.position(action.queue)
    entry = me.table[position]
    assert entry is not None
    holders = state.lock_holders
    if holders[position] == cid:
        holders = _replace(holders, position, None)
    changed = attrs.evolve(entry, locked=False, unbacked=False)
    return state.replaced(cid, me.with_table(_replace(me.table, position, changed)), lock_holders=holders)


def _release_lock(state: GroupState, action: BrokerLockReleased) -> GroupState:
    """A broker lock whose holder has no lock flag on it goes: its unlock arrives, or it expires (REB-17, REB-18,
    REB-27)."""
    return attrs.evolve(state, lock_holders=_replace(state.lock_holders, state.setup.position(action.queue), None))


# ---------------------------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------------------------

TRANSITIONS: TransitionTable[GroupState, Action, Bounds] = TransitionTable("rebalance", CLAUSES, (
    Transition(BrokerLeftRoute, _broker_left_route_enabled, _broker_left_route, broker_left_route_candidates,
               ("REB-8", "REB-20")),
    Transition(RouteChanged, _route_changed_enabled, _route_changed, route_changed_candidates,
               ("REB-8", "REB-20", "REB-28")),
    Transition(BrokerLockReleased, _broker_lock_released_enabled, _release_lock, broker_lock_released_candidates,
               ("REB-17", "REB-18", "REB-27")),
    Transition(BrokerRestarted, _broker_restarted_enabled, _restart_broker, broker_restarted_candidates,
               ("REB-24",)),
    Transition(ConsumerStarted, _started_enabled, _start, started_candidates, ("REB-20",)),
    Transition(ClientEvicted, _evicted_enabled, _evict, evicted_candidates, ("REB-20", "REB-23")),
    Transition(ConsumerShutdown, _stop_enabled, _shutdown, shutdown_candidates, ("REB-23", "REB-26", "REB-27")),
    Transition(ConsumerCrashed, _stop_enabled, _crash, crash_candidates, ("REB-23",)),
    Transition(HeartbeatSent, _heartbeat_enabled, _heartbeat, heartbeat_candidates, ("REB-20",)),
    Transition(RouteRefreshed, _route_refreshed_enabled, _route_refreshed, route_refreshed_candidates,
               ("REB-8", "REB-28")),
    Transition(OffsetsPersisted, _persisted_enabled, _persist, persisted_candidates, ("REB-10", "REB-26")),
    Transition(OffsetCommitted, _committed_enabled, _commit, committed_candidates, ("REB-25",)),
    Transition(LockRenewed, _lock_renewed_enabled, _renew_locks, lock_renewed_candidates, ("REB-17", "REB-24")),
    Transition(Rebalanced, _rebalanced_enabled, _rebalance, rebalanced_candidates,
               ("REB-1", "REB-2", "REB-3", "REB-4", "REB-5", "REB-6", "REB-7", "REB-8", "REB-9", "REB-10",
                "REB-11", "REB-12", "REB-13", "REB-14", "REB-15", "REB-26", "REB-27")),
    Transition(MessageConsumed, _consumed_enabled, _consume, queue_candidates(MessageConsumed),
               ("REB-10", "REB-12")),
    Transition(BatchConsumed, _batch_enabled, _batch, queue_candidates(BatchConsumed),
               ("REB-16", "REB-27")),
    Transition(PullExpired, _pull_expired_enabled, _pull_expire, queue_candidates(PullExpired),
               ("REB-11",)),
    Transition(LockLapsed, _lock_lapsed_enabled, _lock_lapse, queue_candidates(LockLapsed),
               ("REB-16", "REB-18")),
    Transition(UnlockArrived, _unlock_arrived_enabled, _unlock_arrived, unlock_arrived_candidates, ("REB-19",)),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step
