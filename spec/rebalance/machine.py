"""Rebalance: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TypeVar

import attrs

from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.queues import MessageQueue, sorted_ids
from rocketspec.spec.rebalance.clauses import CLAUSES
from rocketspec.spec.rebalance.oracles import (
    CLUSTERING,
    Unlock,
    new_queue_locked,
    plan_table_update,
    rebalance_target,
    removal,
)
from rocketspec.spec.versions import VersionProfile

# ---------------------------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------------------------


class Phase(enum.Enum):
    """A consumer's life: not started yet, running, or shut down / crashed."""

    NEW = "NEW"
    LIVE = "LIVE"
    DOWN = "DOWN"


@attrs.frozen(cache_hash=True)
class ProcessQueueState:
    """One process-queue table entry.

    ``offset``: the consumer's in-memory offset; ``locked``: the orderly lock flag, meaning locked and not
    expired (REB-16); ``unbacked``: a ghost flag the spec keeps to mark a lock flag that REB-19 or REB-24 left
    without a broker lock behind it. Orderly batches are single steps: a batch still running when a rebalance drops the
    queue is the rebalance's ``busy`` choice (REB-14), and since such a batch commits nothing (REB-16) it needs
    no state of its own.
    """

    offset: int = 0
    dropped: bool = False
    pull_expired: bool = False
    locked: bool = False
    unbacked: bool = False


Table = tuple[ProcessQueueState | None, ...]


@attrs.frozen(cache_hash=True)
class ConsumerState:
    """One consumer of the group.

    ``route_view``: queue positions of its cached route; ``route_used``: the route its last rebalance ran on
    (``None`` before the first); ``synced``: a ghost flag, true when its last rebalance ran on the id list and
    route that still hold and left the table exactly equal to its allocation; ``table``: one entry per queue
    position; ``pending_unlocks``: positions with a delayed unlock scheduled (REB-14).
    """

    phase: Phase
    route_view: frozenset[int]
    route_used: frozenset[int] | None
    synced: bool
    table: Table
    pending_unlocks: frozenset[int]

    def with_table(self, table: Table, pending_unlocks: frozenset[int] | None = None) -> ConsumerState:
        pending = self.pending_unlocks if pending_unlocks is None else pending_unlocks
        return ConsumerState(self.phase, self.route_view, self.route_used, self.synced, table, pending)

    def unsynced(self) -> ConsumerState:
        if not self.synced:
            return self
        return ConsumerState(self.phase, self.route_view, self.route_used, False, self.table, self.pending_unlocks)


@attrs.frozen(cache_hash=True)
class Setup:
    """What does not change during a run: the group's topic, its queues (sorted), ids, strategy and mode.

    ``messages``: the offsets of the first ``loaded`` queues are tracked up to ``messages`` (the others' are
    abstracted away and stay 0); ``flaps``: how often the brokers may evict a running consumer; ``restarts``: how
    often a broker may restart (orderly groups: its locks go, REB-24).
    """

    topic: str
    queues: tuple[MessageQueue, ...]
    consumer_ids: tuple[str, ...]
    strategy: str
    orderly: bool
    messages: int
    loaded: int
    profile: VersionProfile
    shrinking_route: bool
    flaps: int = 0
    restarts: int = 0
    options: tuple[tuple[str, object], ...] = ()
    _positions: Mapping[MessageQueue, int] = attrs.field(init=False, eq=False, hash=False, repr=False)
    _slots: Mapping[str, int] = attrs.field(init=False, eq=False, hash=False, repr=False)
    # Memo of the pure allocation per (id, id list as listed, route positions), so the explorer stays fast.
    _targets: dict[tuple[str, tuple[str, ...], frozenset[int]], frozenset[int] | None] = attrs.field(
        init=False, eq=False, hash=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_positions", {q: p for p, q in enumerate(self.queues)})
        object.__setattr__(self, "_slots", {c: i for i, c in enumerate(self.consumer_ids)})
        object.__setattr__(self, "_targets", {})

    def target(self, consumer_id: str, listed: tuple[str, ...], route_view: frozenset[int]) -> frozenset[int] | None:
        """The positions ``rebalance_target`` hands to ``consumer_id`` for this id list and route, or ``None``."""
        key = (consumer_id, listed, route_view)
        if key not in self._targets:
            route = [self.queues[p] for p in sorted(route_view)]
            options = dict(self.options)
            target = rebalance_target(CLUSTERING, self.strategy, consumer_id, route or None, listed, **options)
            self._targets[key] = None if target is None else frozenset(self._positions[q] for q in target)
        return self._targets[key]

    def position(self, queue: MessageQueue) -> int:
        return self._positions[queue]

    def slot(self, consumer_id: str) -> int:
        return self._slots[consumer_id]


@attrs.frozen(cache_hash=True)
class GroupState:
    """A clustering consumer group over one topic, with the brokers' and the name server's view of it.

    ``registered``: ids the brokers list for the group; ``route``: queue positions the name server lists;
    ``stored_offsets``: the brokers' committed offset per position; ``lock_holders``: the broker lock holder
    per position (``None``: free or expired); ``flaps_left``: how many more times the brokers may evict a live
    consumer, ``restarts_left`` how many more times a broker may restart (bounds of the model).
    """

    setup: Setup = attrs.field(repr=lambda setup: f"<{describe(setup)}>")
    consumers: tuple[ConsumerState, ...]
    registered: frozenset[str]
    route: frozenset[int]
    stored_offsets: tuple[int, ...]
    lock_holders: tuple[str | None, ...]
    flaps_left: int = 0
    restarts_left: int = 0

    def consumer(self, consumer_id: str) -> ConsumerState:
        return self.consumers[self.setup._slots[consumer_id]]

    def live(self) -> list[tuple[str, ConsumerState]]:
        """The live consumers with their ids, in slot order."""
        return [
            (cid, c) for cid, c in zip(self.setup.consumer_ids, self.consumers, strict=True) if c.phase is Phase.LIVE
        ]

    def replaced(
        self,
        consumer_id: str,
        consumer: ConsumerState,
        stored_offsets: tuple[int, ...] | None = None,
        lock_holders: tuple[str | None, ...] | None = None,
        registered: frozenset[str] | None = None,
    ) -> GroupState:
        """This state with one consumer replaced and, where given, other fields."""
        slot = self.setup.slot(consumer_id)
        consumers = (*self.consumers[:slot], consumer, *self.consumers[slot + 1:])
        if registered is not None and registered != self.registered:
            # The id list changed: no earlier rebalance ran on the list that holds now.
            consumers = tuple(c.unsynced() for c in consumers)
        return GroupState(
            self.setup,
            consumers,
            self.registered if registered is None else registered,
            self.route,
            self.stored_offsets if stored_offsets is None else stored_offsets,
            self.lock_holders if lock_holders is None else lock_holders,
            self.flaps_left,
            self.restarts_left,
        )

    def reregistered(self, registered: frozenset[str], flaps_left: int) -> GroupState:
        """This state with another id list at the brokers (every consumer unsynced)."""
        consumers = tuple(c.unsynced() for c in self.consumers)
        return GroupState(
            self.setup, consumers, registered, self.route, self.stored_offsets, self.lock_holders, flaps_left,
            self.restarts_left,
        )


# ---------------------------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------------------------


@attrs.frozen
class ConsumerStarted:
    """A consumer starts: it fetches the route and registers with the brokers by heartbeat."""

    consumer: str


@attrs.frozen
class ConsumerShutdown:
    """A consumer shuts down cleanly (REB-23)."""

    consumer: str


@attrs.frozen
class ConsumerCrashed:
    """A consumer process dies without a word (REB-23)."""

    consumer: str


@attrs.frozen
class ClientEvicted:
    """The brokers drop a client whose channel closed or stayed idle: crashed, or cut off while running."""

    consumer: str


@attrs.frozen
class HeartbeatSent:
    """A running consumer's heartbeat registers it again."""

    consumer: str


@attrs.frozen
class BrokerLeftRoute:
    """The last broker's queues leave the topic route at the name server."""


@attrs.frozen
class BrokerRestarted:
    """A broker restarts and its lock table is gone (REB-24). Its registrations go too, but a consumer that asks it
    for the id list before the next heartbeat gets an error and skips the topic (``rebalanceByTopic``), so the
    tables do not see it: the model keeps the registrations."""

    broker: str


@attrs.frozen
class RouteRefreshed:
    """A consumer refreshes its cached route from the name server."""

    consumer: str


@attrs.frozen
class Rebalanced:
    """A consumer rebalances: fetches the id list (``reversed_list``: the broker lists it in reverse Java order)
    and updates its table. For the orderly queues it removes, ``busy``: a batch started earlier still holds the
    consume lock; ``cached``: messages are still cached (REB-14)."""

    consumer: str
    reversed_list: bool = False
    busy: bool = False
    cached: bool = False


@attrs.frozen
class MessageConsumed:
    """A concurrent consumer consumes the next message of a queue, moving its in-memory offset."""

    consumer: str
    queue: MessageQueue


@attrs.frozen
class BatchConsumed:
    """An orderly consumer runs a batch on a queue under its consume lock and commits its offset (REB-16)."""

    consumer: str
    queue: MessageQueue


@attrs.frozen
class OffsetsPersisted:
    """The periodic persist (every 5 s) writes the consumer's offsets to the brokers."""

    consumer: str


@attrs.frozen
class PullExpired:
    """A table queue has not been pulled for more than ``PULL_MAX_IDLE_MS`` (a dropped queue pulls no more)."""

    consumer: str
    queue: MessageQueue


@attrs.frozen
class LockRenewed:
    """An orderly consumer's periodic lockAll over every queue of its table (REB-17)."""

    consumer: str


@attrs.frozen
class LockLapsed:
    """A consumer's renewals fail: its lock flag outlives ``CLIENT_LOCK_EXPIRY_MS`` and, later, its broker lock
    ``BROKER_LOCK_EXPIRY_MS`` (REB-16, REB-18).

    The two expiries are one step: in between the consumer merely may not consume, and letting other consumers
    take the lock at once only adds behaviour.
    """

    consumer: str
    queue: MessageQueue


@attrs.frozen
class BrokerLockReleased:
    """A broker lock whose holder has no lock flag on the queue goes: the holder's unlock arrives, or the lock of
    a crashed or departed holder expires (REB-17, REB-18)."""

    queue: MessageQueue


@attrs.frozen
class UnlockArrived:
    """A delayed unlock (``UNLOCK_DELAY_MS_WHEN_CACHED``) scheduled by a removal reaches the broker (REB-19)."""

    consumer: str
    queue: MessageQueue


Action = (
    ConsumerStarted | ConsumerShutdown | ConsumerCrashed | ClientEvicted | HeartbeatSent | BrokerLeftRoute
    | BrokerRestarted | RouteRefreshed | Rebalanced | MessageConsumed | BatchConsumed | OffsetsPersisted
    | PullExpired | LockRenewed | LockLapsed | BrokerLockReleased | UnlockArrived
)
_QUEUE_ACTIONS = (MessageConsumed, BatchConsumed, PullExpired, LockLapsed)


# ---------------------------------------------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------------------------------------------


def _full_route(setup: Setup) -> frozenset[int]:
    return frozenset(range(len(setup.queues)))


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


def _persist_differs(state: GroupState, consumer: ConsumerState) -> bool:
    return any(
        e is not None and not e.dropped and e.offset != stored
        for e, stored in zip(consumer.table, state.stored_offsets, strict=True)
    )


@CLAUSES.oracle("REB-14", "REB-16", "REB-17", "REB-18", "REB-23", "REB-24")
def enabled(state: GroupState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state``.

    The guards carry the timing facts: a broker lock lapses only once its holder dropped its lock flag, or left
    (REB-17, REB-18, REB-23); an orderly batch needs the lock flag on a queue not dropped (REB-16); a rebalance
    chooses a running batch or cached messages only for orderly consumers (REB-14); a broker restarts only while
    it holds a lock of the group, within the model's bound (REB-24).
    """
    setup = state.setup
    if isinstance(action, BrokerLeftRoute):
        return setup.shrinking_route and state.route == _full_route(setup)
    if isinstance(action, BrokerLockReleased):
        return setup.orderly and _lock_may_lapse(state, setup.position(action.queue))
    if isinstance(action, BrokerRestarted):  # with no lock on the broker a restart changes nothing modelled
        return setup.orderly and state.restarts_left > 0 and any(
            h is not None and q.broker_name == action.broker
            for q, h in zip(setup.queues, state.lock_holders, strict=True)
        )
    me = state.consumer(action.consumer)
    if isinstance(action, ConsumerStarted):
        return me.phase is Phase.NEW
    if isinstance(action, ClientEvicted):
        if action.consumer not in state.registered or me.phase is Phase.NEW:
            return False
        return me.phase is Phase.DOWN or state.flaps_left > 0
    if me.phase is not Phase.LIVE:
        return False
    if isinstance(action, Rebalanced):
        return setup.orderly or not (action.busy or action.cached)
    if isinstance(action, (ConsumerShutdown, ConsumerCrashed)):
        return True
    if isinstance(action, HeartbeatSent):
        return action.consumer not in state.registered
    if isinstance(action, RouteRefreshed):
        return me.route_view != state.route
    if isinstance(action, OffsetsPersisted):
        return _persist_differs(state, me)
    if isinstance(action, LockRenewed):
        return setup.orderly and any(e is not None for e in me.table)
    position = setup.position(action.queue)
    if isinstance(action, UnlockArrived):
        return position in me.pending_unlocks
    entry = me.table[position]
    if entry is None:
        return False
    if isinstance(action, MessageConsumed):
        return not setup.orderly and not entry.dropped and _tracked_room(setup, position, entry)
    if isinstance(action, BatchConsumed):
        return setup.orderly and not entry.dropped and entry.locked
    if isinstance(action, PullExpired):
        return entry.dropped and not entry.pull_expired
    if isinstance(action, LockLapsed):
        return entry.locked
    raise TypeError(f"not a rebalance action: {action!r}")


def _tracked_room(setup: Setup, position: int, entry: ProcessQueueState) -> bool:
    """Whether consuming at ``position`` moves a tracked offset (see ``Setup.messages``)."""
    return position < setup.loaded and entry.offset < setup.messages


T = TypeVar("T")


def _replace(items: tuple[T, ...], position: int, value: T) -> tuple[T, ...]:
    return (*items[:position], value, *items[position + 1:])


def _listed(state: GroupState, reversed_list: bool) -> tuple[str, ...]:
    """The id list a broker answers: the registered ids, in Java order or reversed."""
    listed = sorted_ids(state.registered)
    return tuple(reversed(listed)) if reversed_list else tuple(listed)


def _rebalance(state: GroupState, action: Rebalanced) -> GroupState:
    """One clustering rebalance of the topic by ``action.consumer`` (REB-1..REB-12, REB-14, REB-15)."""
    setup = state.setup
    cid = action.consumer
    me = state.consumer(cid)
    listed = _listed(state, action.reversed_list)
    wanted = setup.target(cid, listed, me.route_view)
    if wanted is None:
        return state
    target = [setup.queues[p] for p in sorted(wanted)]
    table = list(me.table)
    offsets = list(state.stored_offsets)
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
        outcome = removal(setup.orderly, CLUSTERING, not (action.busy and not entry.dropped), action.cached)
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
        locked = setup.orderly and new_queue_locked(setup.orderly, setup.profile)
        table[p] = ProcessQueueState(offset=offsets[p], locked=locked)
    settled = all((p in wanted) == (e is not None) and (e is None or not e.dropped) for p, e in enumerate(table))
    synced = settled and me.route_view == state.route
    consumer = ConsumerState(me.phase, me.route_view, me.route_view, synced, tuple(table), frozenset(pending))
    return state.replaced(cid, consumer, stored_offsets=tuple(offsets), lock_holders=tuple(holders))


def _renew_locks(state: GroupState, cid: str, me: ConsumerState) -> GroupState:
    """lockAll: every table queue is locked again if the broker grants it; the flags follow the answer."""
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


def _restart_broker(state: GroupState, broker: str) -> GroupState:
    """REB-24: the broker's lock holders are gone; live consumers' lock flags on its queues stay, unbacked."""
    on_broker = frozenset(p for p, q in enumerate(state.setup.queues) if q.broker_name == broker)
    holders = tuple(None if p in on_broker else h for p, h in enumerate(state.lock_holders))
    consumers = tuple(
        c.with_table(tuple(
            attrs.evolve(e, unbacked=True) if p in on_broker and e is not None and e.locked else e
            for p, e in enumerate(c.table)
        )) if c.phase is Phase.LIVE else c
        for c in state.consumers
    )
    return attrs.evolve(state, consumers=consumers, lock_holders=holders, restarts_left=state.restarts_left - 1)


def _stop(state: GroupState, cid: str, me: ConsumerState, clean: bool) -> GroupState:
    """Shutdown (``clean``: persist, unlock the table's queues, unregister) or crash (nothing) (REB-23)."""
    empty = tuple(None for _ in me.table)
    down = ConsumerState(Phase.DOWN, me.route_view, me.route_used, False, empty, frozenset())
    if not clean:
        return state.replaced(cid, down)
    offsets = list(state.stored_offsets)
    holders = list(state.lock_holders)
    for p, entry in enumerate(me.table):
        if entry is None:
            continue
        if not entry.dropped:
            offsets[p] = entry.offset
        if state.setup.orderly and holders[p] == cid:
            holders[p] = None
    return state.replaced(
        cid, down, registered=state.registered - {cid}, stored_offsets=tuple(offsets), lock_holders=tuple(holders)
    )


@CLAUSES.oracle("REB-10", "REB-12", "REB-14", "REB-16", "REB-17", "REB-19", "REB-23", "REB-24")
def step(state: GroupState, action: Action) -> GroupState:
    """The group after ``action`` (only called on enabled actions).

    A rebalance drops, persists and removes (REB-10), keeps a busy orderly queue (REB-14), locks before adding
    (REB-12, REB-17); lockAll follows the broker's answer (REB-17); a delayed unlock may orphan a lock flag
    (REB-19); batches commit only on queues not dropped (REB-16); shutdown and crash differ as REB-23 says; a
    broker restart frees its locks and leaves the flags on them unbacked (REB-24).
    """
    require_enabled(enabled, state, action, Action)
    setup = state.setup
    if isinstance(action, BrokerLeftRoute):
        last = setup.queues[-1].broker_name
        route = frozenset(p for p, q in enumerate(setup.queues) if q.broker_name != last)
        return attrs.evolve(state, route=route, consumers=tuple(c.unsynced() for c in state.consumers))
    if isinstance(action, BrokerLockReleased):
        return attrs.evolve(state, lock_holders=_replace(state.lock_holders, setup.position(action.queue), None))
    if isinstance(action, BrokerRestarted):
        return _restart_broker(state, action.broker)
    cid = action.consumer
    me = state.consumer(cid)
    if isinstance(action, Rebalanced):
        return _rebalance(state, action)
    if isinstance(action, ConsumerStarted):
        started = ConsumerState(Phase.LIVE, state.route, None, False, me.table, frozenset())
        return state.replaced(cid, started, registered=state.registered | {cid})
    if isinstance(action, (ConsumerShutdown, ConsumerCrashed)):
        return _stop(state, cid, me, clean=isinstance(action, ConsumerShutdown))
    if isinstance(action, ClientEvicted):
        flaps = state.flaps_left - (1 if me.phase is Phase.LIVE else 0)
        return state.reregistered(state.registered - {cid}, flaps)
    if isinstance(action, HeartbeatSent):
        return state.reregistered(state.registered | {cid}, state.flaps_left)
    if isinstance(action, RouteRefreshed):
        refreshed = ConsumerState(me.phase, state.route, me.route_used, me.synced, me.table, me.pending_unlocks)
        return state.replaced(cid, refreshed)
    if isinstance(action, OffsetsPersisted):
        offsets = tuple(
            e.offset if e is not None and not e.dropped else stored
            for e, stored in zip(me.table, state.stored_offsets, strict=True)
        )
        return attrs.evolve(state, stored_offsets=offsets)
    if isinstance(action, LockRenewed):
        return _renew_locks(state, cid, me)
    position = setup.position(action.queue)
    entry = me.table[position]
    if isinstance(action, UnlockArrived):
        holders = state.lock_holders
        table = me.table
        if holders[position] == cid:
            holders = _replace(holders, position, None)
            if entry is not None and entry.locked:
                table = _replace(table, position, attrs.evolve(entry, unbacked=True))
        return state.replaced(cid, me.with_table(table, me.pending_unlocks - {position}), lock_holders=holders)
    assert entry is not None
    if isinstance(action, (MessageConsumed, BatchConsumed)):
        if not _tracked_room(setup, position, entry):
            return state
        changed = attrs.evolve(entry, offset=entry.offset + 1)
    elif isinstance(action, PullExpired):
        changed = attrs.evolve(entry, pull_expired=True)
    elif isinstance(action, LockLapsed):
        changed = attrs.evolve(entry, locked=False, unbacked=False)
        holders = state.lock_holders
        if holders[position] == cid:
            holders = _replace(holders, position, None)
        return state.replaced(cid, me.with_table(_replace(me.table, position, changed)), lock_holders=holders)
    else:
        raise TypeError(f"not a rebalance action: {action!r}")
    return state.replaced(cid, me.with_table(_replace(me.table, position, changed)))


def describe(setup: Setup) -> str:
    """A one-line description of a group's bounds."""
    brokers = sorted({q.broker_name for q in setup.queues})
    mode = "orderly" if setup.orderly else "concurrent"
    return (
        f"{len(setup.consumer_ids)} {mode} consumers on {len(brokers)} brokers x "
        f"{len(setup.queues) // len(brokers)} queues ({setup.strategy}), {setup.messages} message(s) in "
        f"{setup.loaded} queue(s), {setup.flaps} eviction(s) of a running consumer"
        f"{f', {setup.restarts} broker restart(s)' if setup.restarts else ''}"
        f"{', shrinking route' if setup.shrinking_route else ''}, RocketMQ {setup.profile}"
    )
