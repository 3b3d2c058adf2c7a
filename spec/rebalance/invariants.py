"""Rebalance: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from collections.abc import Iterator

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import MessageModel
from rocketspec.spec.queues import MessageQueue, sorted_queues
from rocketspec.spec.rebalance.candidates import Bounds
from rocketspec.spec.rebalance.machine import TRANSITIONS, full_route
from rocketspec.spec.rebalance.oracles import CLUSTERING, STRATEGIES, java_split_at
from rocketspec.spec.rebalance.state import (
    Action,
    BatchConsumed,
    BrokerLeftRoute,
    BrokerLockReleased,
    BrokerRestarted,
    ConsumerCrashed,
    ConsumerState,
    GroupState,
    Phase,
    Rebalanced,
    RouteChanged,
    Setup,
    describe,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------------------------------------------


def _owners(live: list[tuple[str, ConsumerState]], position: int) -> list[str]:
    return [cid for cid, c in live if (e := c.table[position]) is not None and not e.dropped]


def views_agree(state: GroupState) -> bool:
    """The brokers list exactly the live consumers, and each last rebalanced on that list and the current route
    and applied its allocation fully (REB-20)."""
    if not state.setup.clustering:
        return False
    live = state.live()
    if not live or state.registered != frozenset(cid for cid, _ in live):
        return False
    return all(c.synced for _, c in live)


def _expected_owned(state: GroupState) -> frozenset[int]:
    setup = state.setup
    if setup.strategy != "MACHINE_ROOM":
        return state.route
    rooms = set(dict(setup.options).get("consumer_idcs", ()))  # type: ignore[call-overload]
    return frozenset(
        p for p in state.route
        if len(parts := java_split_at(setup.queues[p].broker_name)) == 2 and parts[0] in rooms
    )


def _one_owner_when_views_agree(state: GroupState) -> bool:
    # CONFIG's fixed lists make no ownership claim (REB-6).
    if state.setup.strategy == "CONFIG" or not views_agree(state):
        return True
    live = state.live()
    owned = _expected_owned(state)
    return all(len(_owners(live, p)) == (1 if p in owned else 0) for p in range(len(state.setup.queues)))


def _balanced_when_views_agree(state: GroupState) -> bool:
    if state.setup.strategy not in ("AVG", "AVG_BY_CIRCLE") or not views_agree(state):
        return True
    sizes = [sum(1 for e in c.table if e is not None and not e.dropped) for _, c in state.live()]
    return max(sizes) - min(sizes) <= 1


def _lock_flags_backed(state: GroupState) -> bool:
    return all(
        state.lock_holders[p] == cid
        for cid, c in state.live()
        for p, e in enumerate(c.table)
        if e is not None and e.locked and not e.unbacked
    )


def _one_backed_flag_per_queue(state: GroupState) -> bool:
    live = state.live()
    for p in range(len(state.setup.queues)):
        flagged = [cid for cid, c in live if (e := c.table[p]) is not None and e.locked and not e.unbacked]
        if len(flagged) > 1:
            return False
    return True


def _table_within_route_used(state: GroupState) -> bool:
    return all(
        c.route_used is not None and p in c.route_used
        for _, c in state.live()
        for p, e in enumerate(c.table)
        if e is not None and not e.dropped
    )


INVARIANTS: tuple[Invariant[GroupState], ...] = (
    Invariant(
        "one owner per queue when views agree", ("REB-1", "REB-3", "REB-4", "REB-5", "REB-7", "REB-20"),
        _one_owner_when_views_agree,
    ),
    Invariant("AVG / AVG_BY_CIRCLE owners differ by at most one queue", ("REB-21",), _balanced_when_views_agree),
    Invariant(
        "a lock flag is backed by the broker lock", ("REB-14", "REB-17", "REB-18", "REB-19", "REB-24"),
        _lock_flags_backed
    ),
    Invariant("at most one backed lock flag per queue", ("REB-17", "REB-18"), _one_backed_flag_per_queue),
    Invariant("owned queues come from the route the rebalance used", ("REB-8", "REB-12"), _table_within_route_used),
)


def _missing_owns_nothing(before: GroupState, action: Action, after: GroupState) -> bool:
    """A rebalance on an id list without the consumer leaves it owning nothing (REB-2, REB-10); CONFIG and
    broadcasting do not read the list (REB-6, REB-8)."""
    if not isinstance(action, Rebalanced) or action.consumer in before.registered:
        return True
    if before.setup.strategy == "CONFIG" or not before.setup.clustering:
        return True
    if not before.registered:
        return after == before  # an empty list makes the strategy throw: nothing changes (REB-9)
    return all(e is None or e.dropped for e in after.consumer(action.consumer).table)


def _persisted_when_dropped(before: GroupState, action: Action, after: GroupState) -> bool:
    if isinstance(action, (ConsumerCrashed, BrokerLeftRoute, BrokerLockReleased, BrokerRestarted, RouteChanged)):
        return True
    old = before.consumer(action.consumer)
    new = after.consumer(action.consumer)
    if old.table == new.table:
        return True
    for p, entry in enumerate(old.table):
        if entry is None or entry.dropped:
            continue
        later = new.table[p]
        if (later is None or later.dropped) and after.offsets_of(action.consumer)[p] != entry.offset:
            return False
    return True


def _batch_under_lock(before: GroupState, action: Action, after: GroupState) -> bool:
    if not isinstance(action, BatchConsumed):
        return True
    position = before.setup.position(action.queue)
    entry = before.consumer(action.consumer).table[position]
    holder = before.lock_holders[position]
    if not before.setup.clustering:  # a broadcasting batch needs no lock (REB-27)
        return entry is not None and not entry.dropped
    return entry is not None and not entry.dropped and (holder == action.consumer or entry.unbacked)


def _dropped_commits_nothing(before: GroupState, action: Action, after: GroupState) -> bool:
    """No step moves the offset of an entry that stays dropped: a batch on a dropped queue commits nothing."""
    for old, new in zip(before.consumers, after.consumers, strict=True):
        if old.table is new.table:
            continue
        for entry, later in zip(old.table, new.table, strict=True):
            if entry is not None and entry.dropped and later is not None and later.dropped:
                if later.offset != entry.offset:
                    return False
    return True


def _new_orderly_queue_locked(before: GroupState, action: Action, after: GroupState) -> bool:
    if not (before.setup.orderly and isinstance(action, Rebalanced)):
        return True
    old = before.consumer(action.consumer)
    new = after.consumer(action.consumer)
    return all(
        after.lock_holders[p] == action.consumer
        for p, e in enumerate(new.table)
        if e is not None and not e.dropped and ((was := old.table[p]) is None or was.dropped)
    )


def _new_queue_starts_at_stored_offset(before: GroupState, action: Action, after: GroupState) -> bool:
    if not isinstance(action, Rebalanced):
        return True
    old = before.consumer(action.consumer)
    new = after.consumer(action.consumer)
    return all(
        e.offset == after.offsets_of(action.consumer)[p]
        for p, e in enumerate(new.table)
        if e is not None and not e.dropped and ((was := old.table[p]) is None or was.dropped)
    )


def _crash_keeps_locks_and_registration(before: GroupState, action: Action, after: GroupState) -> bool:
    if not isinstance(action, ConsumerCrashed):
        return True
    return (after.lock_holders, after.registered, after.stored_offsets, after.local_offsets) == (
        before.lock_holders, before.registered, before.stored_offsets, before.local_offsets
    )


STEP_INVARIANTS: tuple[StepInvariant[GroupState, Action], ...] = (
    StepInvariant(
        "a consumer missing from its id list owns nothing after rebalancing", ("REB-2", "REB-9", "REB-10"),
        _missing_owns_nothing,
    ),
    StepInvariant(
        "an offset is persisted when its queue is dropped", ("REB-10", "REB-11", "REB-14", "REB-23", "REB-26"),
        _persisted_when_dropped,
    ),
    StepInvariant(
        "an orderly batch starts only under the broker lock", ("REB-16", "REB-18", "REB-19", "REB-24", "REB-27"),
        _batch_under_lock
    ),
    StepInvariant("a dropped queue commits no offset", ("REB-16",), _dropped_commits_nothing),
    StepInvariant(
        "an orderly consumer adds a queue only after locking it", ("REB-12", "REB-17"), _new_orderly_queue_locked
    ),
    StepInvariant(
        "a new queue starts at the stored offset", ("REB-12", "REB-13"), _new_queue_starts_at_stored_offset
    ),
    StepInvariant(
        "a crash leaves locks, registration and offsets", ("REB-23",), _crash_keeps_locks_and_registration
    ),
)


# ---------------------------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------------------------


def initial_state(setup: Setup) -> GroupState:
    """No consumer started; the whole route listed; nothing locked; stored offsets 0 (broadcasting: each consumer's
    local store, REB-26)."""
    n = len(setup.queues)
    idle = ConsumerState(Phase.NEW, frozenset(), None, False, tuple(None for _ in range(n)), frozenset())
    zeros = tuple(0 for _ in range(n))
    local = () if setup.clustering else tuple(zeros for _ in setup.consumer_ids)
    return GroupState(
        setup=setup, consumers=tuple(idle for _ in setup.consumer_ids), registered=frozenset(),
        route=full_route(setup), stored_offsets=zeros, lock_holders=tuple(None for _ in range(n)),
        flaps_left=setup.flaps, restarts_left=setup.restarts, local_offsets=local,
    )


#: The candidates the default model tries beyond each group's bounds: none (routes change only by BrokerLeftRoute).
DEFAULT_BOUNDS = Bounds()


def candidate_actions(state: GroupState, bounds: Bounds = DEFAULT_BOUNDS) -> Iterator[Action]:
    """The actions worth trying in ``state`` (a superset of the enabled ones; ``enabled`` decides)."""
    return TRANSITIONS.candidates(state, bounds)


def group(
    consumers: int = 3,
    brokers: int = 2,
    queues_per_broker: int = 2,
    strategy: str = "AVG",
    orderly: bool = False,
    messages: int = 1,
    loaded: int = 1,
    flaps: int = 1,
    shrinking_route: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
    restarts: int = 0,
    message_model: MessageModel = CLUSTERING,
    configured: tuple[tuple[int, ...], ...] | None = None,
    **options: object,
) -> Setup:
    """A group of push consumers to explore: ``consumers`` ids, ``brokers`` x ``queues_per_broker`` queues of one
    topic, ``strategy`` with its ``options`` (CONFIG: ``configured`` positions per consumer, by default every n-th
    queue from its slot); ``messages``, ``loaded`` and ``flaps`` bound it as ``Setup`` says; ``shrinking_route`` lets
    the last broker leave the route; ``restarts`` lets a broker restart (orderly, REB-24); ``message_model``
    clustering or broadcasting (REB-8, REB-26).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"groups run one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if strategy == "MACHINE_ROOM":
        options.setdefault("consumer_idcs", ("room0",))
        names = [f"room{b % 2}@broker-{chr(ord('a') + b)}" for b in range(brokers)]
    else:
        names = [f"broker-{chr(ord('a') + b)}" for b in range(brokers)]
    queues = tuple(sorted_queues(MessageQueue("TopicTest", n, i) for n in names for i in range(queues_per_broker)))
    if strategy == "CONFIG" and configured is None:
        configured = tuple(tuple(p for p in range(len(queues)) if p % consumers == i) for i in range(consumers))
    return Setup(
        topic="TopicTest", queues=queues, consumer_ids=tuple(f"10.0.0.{i + 1}@{i + 1}" for i in range(consumers)),
        strategy=strategy, orderly=orderly, messages=messages, loaded=loaded, profile=profile,
        shrinking_route=shrinking_route, flaps=flaps, restarts=restarts, options=tuple(sorted(options.items())),
        message_model=message_model, configured=configured or (),
    )


DEFAULT_GROUPS: tuple[Setup, ...] = (
    group(consumers=3, brokers=2, queues_per_broker=2),
    group(consumers=2, brokers=2, queues_per_broker=1, orderly=True),
)


def model(*groups: Setup, bounds: Bounds = DEFAULT_BOUNDS) -> Model[GroupState, Action]:
    """The rebalance machine over ``groups`` (default ``DEFAULT_GROUPS``: three concurrent consumers on 2 x 2
    queues, and two orderly consumers on 2 x 1 queues), each explored from its own initial state."""
    chosen = groups or DEFAULT_GROUPS
    return TRANSITIONS.model(
        bounds, "; ".join(describe(g) for g in chosen), (initial_state(g) for g in chosen), INVARIANTS,
        STEP_INVARIANTS,
    )
