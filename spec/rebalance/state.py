"""Rebalance: the state machine's state and actions (frozen, hashable values); the machine is ``machine.py``."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from rocketspec.spec.protocol import MessageModel
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.rebalance.oracles import CLUSTERING, rebalance_target
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

    ``offset``: the consumer's in-memory offset; ``locked``: the orderly lock flag of a clustering consumer, meaning
    locked and not expired (REB-16; broadcasting consumers read no flag, REB-27); ``unbacked``: a ghost flag the spec
    keeps to mark a lock flag that REB-19 or REB-24 left without a broker lock behind it. Orderly batches are single
    steps: a batch still running when a rebalance drops the queue is the rebalance's ``busy`` choice (REB-14), and
    since such a batch commits nothing (REB-16) it needs no state of its own.
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
    """What does not change during a run (its configuration): the group's topic, the queues its route may hold
    (sorted), ids, strategy, consume mode and message model.

    ``messages``: the offsets of the first ``loaded`` queues are tracked up to ``messages`` (the others' are
    abstracted away and stay 0); ``flaps``: how often the brokers may evict a running consumer; ``restarts``: how
    often a broker may restart (orderly groups: its locks go, REB-24); ``options``: the strategy's options
    (``consumer_idcs`` for MACHINE_ROOM, ``virtual_nodes`` for CONSISTENT_HASH); ``configured``: for CONFIG, the
    queue positions each consumer (by slot) is configured with (REB-6).
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
    message_model: MessageModel = CLUSTERING
    configured: tuple[tuple[int, ...], ...] = ()
    _positions: Mapping[MessageQueue, int] = attrs.field(init=False, eq=False, hash=False, repr=False)
    _slots: Mapping[str, int] = attrs.field(init=False, eq=False, hash=False, repr=False)
    # Memo of the pure allocation per (id, id list as listed, route positions), so the explorer stays fast.
    _targets: dict[tuple[str, tuple[str, ...] | None, frozenset[int]], frozenset[int] | None] = attrs.field(
        init=False, eq=False, hash=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_positions", {q: p for p, q in enumerate(self.queues)})
        object.__setattr__(self, "_slots", {c: i for i, c in enumerate(self.consumer_ids)})
        object.__setattr__(self, "_targets", {})

    @property
    def clustering(self) -> bool:
        return self.message_model is CLUSTERING

    def target(
        self, consumer_id: str, listed: tuple[str, ...] | None, route_view: frozenset[int]
    ) -> frozenset[int] | None:
        """The positions ``rebalance_target`` hands to ``consumer_id`` for this id list (``None``: it could not be
        fetched) and route, or ``None``."""
        key = (consumer_id, listed, route_view)
        if key not in self._targets:
            route = [self.queues[p] for p in sorted(route_view)]
            options = dict(self.options)
            if self.strategy == "CONFIG":
                mine = self.configured[self.slot(consumer_id)] if self.configured else ()
                options["message_queues"] = tuple(self.queues[p] for p in mine)
            target = rebalance_target(self.message_model, self.strategy, consumer_id, route, listed, **options)
            self._targets[key] = None if target is None else frozenset(self._positions[q] for q in target)
        return self._targets[key]

    def position(self, queue: MessageQueue) -> int:
        return self._positions[queue]

    def slot(self, consumer_id: str) -> int:
        return self._slots[consumer_id]


def _no_local_offsets() -> tuple[tuple[int, ...], ...]:
    return ()


@attrs.frozen(cache_hash=True)
class GroupState:
    """A consumer group over one topic, with the brokers' and the name server's view of it.

    ``registered``: ids the brokers list for the group; ``route``: queue positions the name server lists;
    ``stored_offsets``: the brokers' committed offset per position (clustering); ``local_offsets``: each consumer's
    local offset store per position (broadcasting, REB-26; empty in clustering); ``lock_holders``: the broker lock
    holder per position (``None``: free or expired); ``flaps_left``: how many more times the brokers may evict a
    live consumer, ``restarts_left`` how many more times a broker may restart (bounds of the model).
    """

    setup: Setup = attrs.field(repr=lambda setup: f"<{describe(setup)}>")
    consumers: tuple[ConsumerState, ...]
    registered: frozenset[str]
    route: frozenset[int]
    stored_offsets: tuple[int, ...]
    lock_holders: tuple[str | None, ...]
    flaps_left: int = 0
    restarts_left: int = 0
    local_offsets: tuple[tuple[int, ...], ...] = attrs.field(factory=_no_local_offsets)

    def consumer(self, consumer_id: str) -> ConsumerState:
        return self.consumers[self.setup._slots[consumer_id]]

    def offsets_of(self, consumer_id: str) -> tuple[int, ...]:
        """The store ``consumer_id``'s offsets are persisted to: the brokers' (clustering) or its own (REB-26)."""
        if self.setup.clustering:
            return self.stored_offsets
        return self.local_offsets[self.setup.slot(consumer_id)]

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
        """This state with one consumer replaced and, where given, other fields (``stored_offsets`` are the
        consumer's own store in broadcasting, REB-26)."""
        slot = self.setup.slot(consumer_id)
        consumers = (*self.consumers[:slot], consumer, *self.consumers[slot + 1:])
        if registered is not None and registered != self.registered:
            # The id list changed: no earlier rebalance ran on the list that holds now.
            consumers = tuple(c.unsynced() for c in consumers)
        stored, local = self.stored_offsets, self.local_offsets
        if stored_offsets is not None:
            if self.setup.clustering:
                stored = stored_offsets
            else:
                local = (*local[:slot], stored_offsets, *local[slot + 1:])
        return GroupState(
            self.setup,
            consumers,
            self.registered if registered is None else registered,
            self.route,
            stored,
            self.lock_holders if lock_holders is None else lock_holders,
            self.flaps_left,
            self.restarts_left,
            local,
        )

    def reregistered(self, registered: frozenset[str], flaps_left: int) -> GroupState:
        """This state with another id list at the brokers (every consumer unsynced)."""
        consumers = tuple(c.unsynced() for c in self.consumers)
        return attrs.evolve(self, consumers=consumers, registered=registered, flaps_left=flaps_left)


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
class RouteChanged:
    """The topic's route at the name server changes to the queue positions ``route``: a broker's readQueueNums
    changed, or a broker's queues left or came back (REB-28)."""

    route: frozenset[int]


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
    consume lock; ``cached``: messages are still cached (REB-14); ``cached_only``, when given, names the removed
    queues that still cache messages (the others have none), instead of ``cached``; ``busy_only``, when given, names
    the removed queues whose batch still holds the consume lock, instead of ``busy``. ``list_failed``: the broker
    answered no id list (an error, no answer in time), so the topic is skipped and nothing changes (REB-9)."""

    consumer: str
    reversed_list: bool = False
    busy: bool = False
    cached: bool = False
    cached_only: frozenset[MessageQueue] | None = None
    busy_only: frozenset[MessageQueue] | None = None
    list_failed: bool = False

    def caches(self, queue: MessageQueue) -> bool:
        """Whether ``queue``, removed by this rebalance, still caches messages."""
        return self.cached if self.cached_only is None else queue in self.cached_only

    def busy_on(self, queue: MessageQueue) -> bool:
        """Whether a batch started earlier still holds ``queue``'s consume lock when this rebalance removes it."""
        return self.busy if self.busy_only is None else queue in self.busy_only


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
    """The periodic persist (every 5 s) writes the consumer's offsets to its offset store (REB-26)."""

    consumer: str


@attrs.frozen
class OffsetCommitted:
    """A pull request of a clustering consumer carries its in-memory offset of the queue, which the master stores
    (the commit bit of PULL_MESSAGE, REB-25)."""

    consumer: str
    queue: MessageQueue


@attrs.frozen
class PullExpired:
    """A table queue has not been pulled for more than ``PULL_MAX_IDLE_MS`` (a dropped queue pulls no more)."""

    consumer: str
    queue: MessageQueue


@attrs.frozen
class LockRenewed:
    """An orderly clustering consumer's periodic lockAll over every queue of its table (REB-17)."""

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
    a crashed or departed holder expires, or (broadcasting, never renewed) any holder's lock expires (REB-17, REB-18,
    REB-27)."""

    queue: MessageQueue


@attrs.frozen
class UnlockArrived:
    """A delayed unlock (``UNLOCK_DELAY_MS_WHEN_CACHED``) scheduled by a removal reaches the broker (REB-19)."""

    consumer: str
    queue: MessageQueue


Action = (
    ConsumerStarted | ConsumerShutdown | ConsumerCrashed | ClientEvicted | HeartbeatSent | BrokerLeftRoute
    | RouteChanged | BrokerRestarted | RouteRefreshed | Rebalanced | MessageConsumed | BatchConsumed
    | OffsetsPersisted | OffsetCommitted | PullExpired | LockRenewed | LockLapsed | BrokerLockReleased
    | UnlockArrived
)
_QUEUE_ACTIONS = (MessageConsumed, BatchConsumed, PullExpired, LockLapsed)


def describe(setup: Setup) -> str:
    """A one-line description of a group's bounds."""
    brokers = sorted({q.broker_name for q in setup.queues})
    mode = "orderly" if setup.orderly else "concurrent"
    model = "" if setup.clustering else " broadcasting"
    return (
        f"{len(setup.consumer_ids)} {mode}{model} consumers on {len(brokers)} brokers x "
        f"{len(setup.queues) // len(brokers)} queues ({setup.strategy}), {setup.messages} message(s) in "
        f"{setup.loaded} queue(s), {setup.flaps} eviction(s) of a running consumer"
        f"{f', {setup.restarts} broker restart(s)' if setup.restarts else ''}"
        f"{', shrinking route' if setup.shrinking_route else ''}, RocketMQ {setup.profile}"
    )
