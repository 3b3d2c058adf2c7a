"""Rebalance: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Collection, Iterable, Mapping

import attrs

from rocketspec.spec.java import is_blank
from rocketspec.spec.protocol import (
    BROKER_LOCK_EXPIRY_MS,
    CLIENT_LOCK_EXPIRY_MS,
    CONSISTENT_HASH_VIRTUAL_NODES,
    PERM_READ,
    PULL_MAX_IDLE_MS,
    UNLOCK_DELAY_MS_WHEN_CACHED,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    is_retry_topic,
)
from rocketspec.spec.queues import MessageQueue, sorted_ids, sorted_queues
from rocketspec.spec.rebalance.clauses import CLAUSES
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

STRATEGIES: tuple[str, ...] = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")
CLUSTERING = MessageModel.CLUSTERING
BROADCASTING = MessageModel.BROADCASTING
FIRST_OFFSET = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
LAST_OFFSET = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
TIMESTAMP = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
PASSIVELY = ConsumeType.CONSUME_PASSIVELY
DEFAULT_VIRTUAL_NODES = CONSISTENT_HASH_VIRTUAL_NODES
NOT_ADDED = -1  # what computePullFromWhere yields when a queue must wait for the next rebalance
HASH_SPACE = 1 << 32

_CONFIG_KEYS: dict[str, frozenset[str]] = {
    "AVG": frozenset({"profile"}),
    "AVG_BY_CIRCLE": frozenset({"profile"}),
    "CONSISTENT_HASH": frozenset({"profile", "virtual_nodes"}),
    "CONFIG": frozenset({"profile", "message_queues"}),
    "MACHINE_ROOM": frozenset({"profile", "consumer_idcs"}),
}


# ---------------------------------------------------------------------------------------------------------------
# Allocation by position
# ---------------------------------------------------------------------------------------------------------------


@CLAUSES.oracle("REB-3", "REB-21")
def avg_slice(index: int, queue_count: int, consumer_count: int) -> tuple[int, int]:
    """AVG: the ``(start, size)`` of consumer ``index``'s consecutive run of sorted queues (REB-3).

    The sizes are floor(m/n) or one more (REB-21); the runs tile the queues in id order.

    pre: 0 < consumer_count <= 64 and 0 <= index < consumer_count and 0 < queue_count <= 64
    post: __return__[1] == queue_count // consumer_count + (1 if index < queue_count % consumer_count else 0)
    post: __return__[1] == 0 or __return__[0] == _run_start(index, queue_count, consumer_count)
    post: __return__[1] == 0 or __return__[0] + __return__[1] <= queue_count
    """
    mod = queue_count % consumer_count
    if queue_count <= consumer_count:
        size = 1
    elif mod > 0 and index < mod:
        size = queue_count // consumer_count + 1
    else:
        size = queue_count // consumer_count
    start = index * size if (mod > 0 and index < mod) else index * size + mod
    # Java takes min(size, m - start) queues; a consumer past the queues (m < n) gets a non-positive range.
    return start, max(0, min(size, queue_count - start))


@CLAUSES.oracle("REB-4", "REB-21")
def circle_positions(index: int, queue_count: int, consumer_count: int) -> tuple[int, ...]:
    """AVG_BY_CIRCLE: the sorted positions consumer ``index`` takes, those ``j`` with ``j % n == index`` (REB-4);
    the counts differ by at most one between consumers (REB-21).

    pre: 0 < consumer_count <= 6 and 0 <= index < consumer_count and 0 < queue_count <= 8
    post: all(j % consumer_count == index and 0 <= j < queue_count for j in __return__)
    post: len(__return__) == queue_count // consumer_count + (1 if index < queue_count % consumer_count else 0)
    post: list(__return__) == sorted(set(__return__))
    """
    return tuple(j for j in range(index, queue_count) if j % consumer_count == index)


@CLAUSES.oracle("REB-7")
def machine_room_positions(index: int, eligible_count: int, consumer_count: int) -> tuple[int, ...]:
    """MACHINE_ROOM: positions among the ``eligible_count`` room queues that consumer ``index`` takes (REB-7).

    pre: 0 < consumer_count <= 16 and 0 <= index < consumer_count and 0 <= eligible_count <= 16
    post: len(__return__) == eligible_count // consumer_count + (1 if index < eligible_count % consumer_count else 0)
    post: all(0 <= j < eligible_count for j in __return__)
    post: len(set(__return__)) == len(__return__)
    """
    mod = eligible_count // consumer_count
    rem = eligible_count % consumer_count
    positions = list(range(index * mod, index * mod + mod))
    if rem > index:
        positions.append(index + mod * consumer_count)
    return tuple(positions)


@CLAUSES.oracle("REB-5")
def ring_hash(key: str) -> int:
    """The ring position of ``key``: the first four bytes of its MD5 digest, big-endian and unsigned (REB-5).

    Java hashes ``key.getBytes()`` in the platform charset; the spec takes UTF-8 (equal for ASCII keys). The
    result lies in ``[0, HASH_SPACE)`` (no contract: CrossHair cannot see through MD5; the tests pin values).
    """
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


@CLAUSES.oracle("REB-5")
def hash_ring(
    consumer_ids: Iterable[str], virtual_nodes: int = DEFAULT_VIRTUAL_NODES
) -> tuple[tuple[int, str], ...]:
    """The CONSISTENT_HASH ring of sorted ``consumer_ids``: ``(position, id)`` pairs in ring order (REB-5).

    Each id contributes ``virtual_nodes`` nodes keyed ``"<id>-<k>"``; on an equal position the later node (later
    id in Java order, or higher ``k``) wins; a negative count raises ValueError (the Java constructor throws).
    """
    if virtual_nodes < 0:
        raise ValueError(f"CONSISTENT_HASH virtual_nodes must be >= 0, not {virtual_nodes}")
    ring: dict[int, str] = {}
    for cid in sorted_ids(consumer_ids):
        for k in range(virtual_nodes):
            # Later nodes replace earlier ones on an equal key, as TreeMap.put does.
            ring[ring_hash(f"{cid}-{k}")] = cid
    return tuple(sorted(ring.items()))


def _first_at_or_after(ring: tuple[tuple[int, str], ...], key_hash: int) -> int:
    """The smallest ring position >= ``key_hash``, or the smallest position of all when there is none."""
    later = [p for p, _ in ring if p >= key_hash]
    return min(later) if later else min(p for p, _ in ring)


@CLAUSES.oracle("REB-5")
def ring_owner(ring: tuple[tuple[int, str], ...], key_hash: int) -> str | None:
    """The id owning ``key_hash`` on ``ring`` (sorted ``(position, id)`` pairs): the first node at or after it,
    wrapping to the first node; ``None`` on an empty ring (REB-5).

    pre: len(ring) <= 3 and all(ring[i][0] < ring[i + 1][0] for i in range(len(ring) - 1))
    pre: 0 <= key_hash < HASH_SPACE
    post: (__return__ is None) == (len(ring) == 0)
    post: __return__ is None or any(cid == __return__ and _first_at_or_after(ring, key_hash) == p for p, cid in ring)
    """
    for position, cid in ring:
        if position >= key_hash:
            return cid
    return ring[0][1] if ring else None


def _run_start(index: int, queue_count: int, consumer_count: int) -> int:
    """Where consumer ``index``'s run starts when consumer i takes m//n queues plus one if i < m%n, in id order."""
    return index * (queue_count // consumer_count) + min(index, queue_count % consumer_count)


def java_split_at(text: str) -> list[str]:
    """``String.split("@")``: no match gives the whole string; otherwise trailing empty parts are removed."""
    if "@" not in text:
        return [text]
    parts = text.split("@")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


# ---------------------------------------------------------------------------------------------------------------
# Allocation oracles
# ---------------------------------------------------------------------------------------------------------------


def _validated_config(strategy: str, config: Mapping[str, object]) -> VersionProfile:
    if strategy not in _CONFIG_KEYS:
        raise ValueError(f"unknown allocation strategy {strategy!r}; strategies are: {', '.join(STRATEGIES)}")
    unknown = sorted(set(config) - _CONFIG_KEYS[strategy])
    if unknown:
        raise ValueError(f"{strategy} takes no option(s) {', '.join(unknown)}")
    profile = config.get("profile", DEFAULT_PROFILE)
    if not isinstance(profile, VersionProfile):
        raise ValueError(f"profile must be a VersionProfile, not {profile!r}")
    return profile


def _reversed(items: Collection[object]) -> list[object]:
    return list(reversed(list(items)))


class AllocationRejected(ValueError):
    """What a strategy's argument check throws (IllegalArgumentException in Java, REB-2)."""


def _check_arguments(
    consumer_id: str, queues: list[MessageQueue], ids: list[str], blank_is_empty: bool
) -> None:
    if not consumer_id or (blank_is_empty and is_blank(consumer_id)):
        raise AllocationRejected("currentCID is empty")
    if not queues:
        raise AllocationRejected("mqAll is null or mqAll empty")
    if not ids:
        raise AllocationRejected("cidAll is null or cidAll empty")


@CLAUSES.oracle("REB-6")
def allocate_by_config(
    message_queues: tuple[MessageQueue, ...],
    consumer_id: str,
    queues: Collection[MessageQueue],
    consumer_ids: Collection[str],
) -> list[MessageQueue]:
    """CONFIG: the configured list as it is, in its order and with its repeats, whoever asks and whatever the
    queues and ids; there is no argument check (REB-6).

    pre: len(message_queues) <= 3 and len(queues) <= 2 and len(consumer_ids) <= 2
    post: __return__ == list(message_queues)
    post: __return__ == allocate_by_config(message_queues, "", (), ())
    """
    del consumer_id, queues, consumer_ids  # AllocateMessageQueueByConfig reads none of them
    return list(message_queues)


def _in_rooms(broker_name: str, rooms: Collection[str]) -> bool:
    """Whether a broker named ``<room>@<name>`` is in one of ``rooms`` (exactly two parts of ``split("@")``)."""
    parts = java_split_at(broker_name)
    return len(parts) == 2 and parts[0] in rooms


@CLAUSES.oracle("REB-2", "REB-7")
def allocate_by_machine_room(
    consumer_idcs: frozenset[str],
    consumer_id: str,
    queues: Collection[MessageQueue],
    consumer_ids: Collection[str],
    profile: VersionProfile = DEFAULT_PROFILE,
) -> list[MessageQueue]:
    """MACHINE_ROOM: of the sorted queues whose broker is named ``<room>@<name>`` with room in ``consumer_idcs``,
    consumer i of the sorted ids takes its share by ``machine_room_positions`` (REB-7); from 4.9.3 on the argument
    check of REB-2 applies (``AllocationRejected``), and a consumer not in the list gets nothing (REB-2).

    pre: 0 < len(queues) <= 3 and 0 < len(consumer_ids) <= 2 and len(consumer_idcs) <= 2 and len(consumer_id) > 0
    pre: profile == DEFAULT_PROFILE and consumer_id.strip() == consumer_id
    post: all(q in queues and _in_rooms(q.broker_name, consumer_idcs) for q in __return__)
    post: consumer_id in consumer_ids or __return__ == []
    post: __return__ == sorted(__return__) and len(set(__return__)) == len(__return__)
    """
    mqs, ids = sorted_queues(queues), sorted_ids(consumer_ids)
    if profile.at_least("4.9.3"):
        _check_arguments(consumer_id, mqs, ids, blank_is_empty=not profile.at_least("4.9.4"))
    if consumer_id not in ids:
        return []
    eligible = [q for q in mqs if _in_rooms(q.broker_name, consumer_idcs)]
    return [eligible[j] for j in machine_room_positions(ids.index(consumer_id), len(eligible), len(ids))]


@CLAUSES.oracle("REB-1", "REB-2", "REB-3", "REB-4", "REB-5", "REB-6", "REB-7")
def allocate(
    strategy: str,
    consumer_id: str,
    queues: Collection[MessageQueue],
    consumer_ids: Collection[str],
    **config: object,
) -> list[MessageQueue]:
    """The queues ``consumer_id`` takes under ``strategy`` after sorting both lists (REB-1): AVG (REB-3),
    AVG_BY_CIRCLE (REB-4), CONSISTENT_HASH (REB-5), CONFIG (REB-6), MACHINE_ROOM (REB-7).

    ``strategy`` is one of ``STRATEGIES``. Options: ``message_queues=`` (CONFIG), ``consumer_idcs=`` (MACHINE_ROOM),
    ``virtual_nodes=`` (CONSISTENT_HASH, default 10), ``profile=`` (all). An unknown strategy, a missing or unknown
    option, or what Java rejects with IllegalArgumentException (REB-2) raises ValueError. Apart from CONFIG, a
    consumer missing from ``consumer_ids`` gets nothing (REB-2), and the answer does not depend on the order of
    either list (REB-1).

    pre: strategy in ("AVG", "AVG_BY_CIRCLE") and not config
    pre: 0 < len(queues) <= 3 and 0 < len(consumer_ids) <= 2 and len(consumer_id) > 0
    post: set(__return__) <= set(queues) and (consumer_id in consumer_ids or __return__ == [])
    post: __return__ == _allocate(strategy, consumer_id, _reversed(queues), _reversed(consumer_ids), config)
    """
    return _allocate(strategy, consumer_id, queues, consumer_ids, config)


def _allocate(
    strategy: str,
    consumer_id: str,
    queues: Collection[MessageQueue],
    consumer_ids: Collection[str],
    config: Mapping[str, object],
) -> list[MessageQueue]:
    profile = _validated_config(strategy, config)
    if strategy == "CONFIG":
        configured = config.get("message_queues")
        if configured is None or not all(isinstance(q, MessageQueue) for q in configured):  # type: ignore[attr-defined]
            raise ValueError("CONFIG needs message_queues= (the configured list of MessageQueue)")
        return allocate_by_config(tuple(configured), consumer_id, queues, consumer_ids)  # type: ignore[arg-type]
    mqs = sorted_queues(queues)
    ids = sorted_ids(consumer_ids)
    if strategy == "MACHINE_ROOM":
        idcs = config.get("consumer_idcs")
        if idcs is None or isinstance(idcs, str):
            raise ValueError("MACHINE_ROOM needs consumer_idcs= (a collection of machine room names)")
        return allocate_by_machine_room(frozenset(idcs), consumer_id, mqs, ids, profile)  # type: ignore[call-overload]
    _check_arguments(consumer_id, mqs, ids, blank_is_empty=False)
    if consumer_id not in ids:
        return []
    index = ids.index(consumer_id)
    if strategy == "AVG":
        start, size = avg_slice(index, len(mqs), len(ids))
        return mqs[start:start + size]
    if strategy == "AVG_BY_CIRCLE":
        return [mqs[j] for j in circle_positions(index, len(mqs), len(ids))]
    nodes = config.get("virtual_nodes", DEFAULT_VIRTUAL_NODES)
    if not isinstance(nodes, int) or isinstance(nodes, bool):
        raise ValueError(f"CONSISTENT_HASH virtual_nodes must be an int, not {nodes!r}")
    ring = hash_ring(ids, nodes)
    return [q for q in mqs if ring_owner(ring, ring_hash(str(q))) == consumer_id]


@CLAUSES.oracle("REB-25")
def pull_commit_offset(message_model: MessageModel, in_memory_offset: int) -> int | None:
    """The offset a push consumer's pull request commits: its in-memory offset of the queue when that is > 0 and the
    group is clustering, else none (broadcasting offsets stay local, REB-25).

    pre: in_memory_offset >= -1
    post: (__return__ is None) == (message_model is BROADCASTING or in_memory_offset <= 0)
    post: __return__ is None or __return__ == in_memory_offset
    """
    if message_model is MessageModel.BROADCASTING or in_memory_offset <= 0:
        return None
    return in_memory_offset


@attrs.frozen
class RouteQueueData:
    """One queue data of a topic route: the broker, its read and write queue counts and its permission (PermName)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int


def _readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def _readables(queue_datas: tuple[RouteQueueData, ...]) -> list[RouteQueueData]:
    return [qd for qd in queue_datas if _readable(qd.perm)]


def _read_queue_of(queue: MessageQueue, queue_datas: tuple[RouteQueueData, ...]) -> bool:
    """Whether ``queue`` is a read queue of a readable queue data of its broker."""
    readable = _readables(queue_datas)
    return any(qd.broker_name == queue.broker_name and queue.queue_id < qd.read_queue_nums for qd in readable)


def _read_queues_of(topic: str, queue_datas: tuple[RouteQueueData, ...]) -> list[MessageQueue]:
    """Every read queue of every readable queue data, one by one."""
    return [MessageQueue(topic, qd.broker_name, i) for qd in _readables(queue_datas) for i in range(qd.read_queue_nums)]


@CLAUSES.oracle("REB-28")
def route_queues(topic: str, queue_datas: tuple[RouteQueueData, ...]) -> frozenset[MessageQueue]:
    """The queues consumers allocate from a route: ids below ``read_queue_nums`` of every readable queue data
    (REB-28); the write count plays no part.

    pre: len(queue_datas) <= 2 and all(0 <= qd.read_queue_nums <= 3 for qd in queue_datas)
    post: all(_read_queue_of(q, queue_datas) for q in __return__)
    post: all(q in __return__ for q in _read_queues_of(topic, queue_datas))
    """
    return frozenset(
        MessageQueue(topic, qd.broker_name, i)
        for qd in queue_datas
        if _readable(qd.perm)
        for i in range(qd.read_queue_nums)
    )


@CLAUSES.oracle("REB-1", "REB-20", "REB-21")
def assignment(
    strategy: str, queues: Collection[MessageQueue], consumer_ids: Collection[str], **config: object
) -> dict[str, list[MessageQueue]]:
    """What every consumer of ``consumer_ids`` takes when all share this view (sorted, REB-1): ``{id: allocate}``.

    With a shared view each queue has exactly one owner under AVG, AVG_BY_CIRCLE and CONSISTENT_HASH (with at
    least one virtual node) and MACHINE_ROOM owns each queue of a configured room once (REB-20); AVG and
    AVG_BY_CIRCLE sizes differ by at most one (REB-21).

    pre: strategy in ("AVG", "AVG_BY_CIRCLE") and not config
    pre: 0 < len(queues) <= 4 and 0 < len(consumer_ids) <= 3 and all(consumer_ids)
    post: sorted(q for owned in __return__.values() for q in owned) == sorted(set(queues))
    post: max(len(v) for v in __return__.values()) - min(len(v) for v in __return__.values()) <= 1
    """
    return {cid: _allocate(strategy, cid, queues, consumer_ids, config) for cid in sorted_ids(consumer_ids)}


@CLAUSES.oracle("REB-8", "REB-9")
def rebalance_target(
    message_model: MessageModel,
    strategy: str,
    consumer_id: str,
    route: Collection[MessageQueue] | None,
    consumer_ids: Collection[str] | None,
    **config: object,
) -> frozenset[MessageQueue] | None:
    """The queue set one rebalance of a topic hands to the table update, or ``None`` when it changes nothing.

    Broadcasting takes every queue of the cached ``route`` (REB-8). Clustering allocates (REB-1..REB-7); an
    uncached route, an id list that could not be fetched (``None``) or a strategy that throws leave the table
    as it is (REB-9). An unknown strategy or a missing or bad option still raises ValueError (a misuse of the
    spec, not a protocol event).

    pre: strategy in ("AVG", "AVG_BY_CIRCLE") and not config and len(consumer_id) > 0
    pre: (route is None or len(route) <= 3) and (consumer_ids is None or len(consumer_ids) <= 2)
    post: (__return__ is None) == (route is None or (message_model is CLUSTERING and not (consumer_ids and route)))
    post: message_model is not BROADCASTING or route is None or __return__ == frozenset(route)
    """
    if route is None:
        return None
    if message_model is MessageModel.BROADCASTING:
        return frozenset(route)
    if consumer_ids is None:
        return None
    try:
        return frozenset(_allocate(strategy, consumer_id, route, consumer_ids, config))
    except AllocationRejected:
        # RebalanceImpl catches what the strategy throws and leaves the table alone.
        return None


# ---------------------------------------------------------------------------------------------------------------
# The process-queue table update
# ---------------------------------------------------------------------------------------------------------------


@attrs.frozen
class TablePlan:
    """What one ``updateProcessQueueTableInRebalance`` pass does (REB-10..REB-12).

    ``drop``: table queues marked dropped and handed to removeUnnecessaryMessageQueue; ``add``: allocated queues
    not in the table, to create; ``readd``: dropped queues (pull expired) created again in the same pass if their
    removal succeeds.
    """

    drop: frozenset[MessageQueue]
    add: frozenset[MessageQueue]
    readd: frozenset[MessageQueue]


def _goes(
    queue: MessageQueue,
    topic: str,
    target: Collection[MessageQueue],
    pull_expired: Collection[MessageQueue],
    consume_type: ConsumeType,
) -> bool:
    """A table queue of ``topic`` leaves when it is not allocated, or is pull-expired at a push consumer."""
    if queue.topic != topic:
        return False
    return queue not in target or (queue in pull_expired and consume_type is PASSIVELY)


@CLAUSES.oracle("REB-10", "REB-11", "REB-12")
def plan_table_update(
    topic: str,
    table: Collection[MessageQueue],
    target: Collection[MessageQueue],
    pull_expired: Collection[MessageQueue] = (),
    consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY,
) -> TablePlan:
    """The drops and adds of one table update for ``topic`` (REB-10, REB-11, REB-12).

    Table queues of ``topic`` outside ``target`` are dropped (REB-10); allocated ones in ``pull_expired`` are
    dropped too by push consumers and, being allocated, re-added once removed (REB-11); allocated queues not in
    the table are added (REB-12). Queues of other topics in the table are left alone.

    pre: len(table) <= 3 and len(target) <= 3
    post: __return__.add == frozenset(target) - frozenset(table)
    post: __return__.readd == __return__.drop & frozenset(target) and __return__.drop <= frozenset(table)
    post: all((q in __return__.drop) == _goes(q, topic, target, pull_expired, consume_type) for q in table)
    """
    in_table = frozenset(table)
    wanted = frozenset(target)
    expired = frozenset(pull_expired)
    drop = frozenset(q for q in in_table if _goes(q, topic, wanted, expired, consume_type))
    return TablePlan(drop=drop, add=wanted - in_table, readd=drop & wanted)


@CLAUSES.oracle("REB-22")
def truncated_queues(
    table: Collection[MessageQueue], subscribed_topics: Collection[str]
) -> frozenset[MessageQueue]:
    """Table queues of topics no longer subscribed: dropped and removed, offsets not persisted (REB-22).

    pre: len(table) <= 3 and len(subscribed_topics) <= 2
    post: __return__ <= frozenset(table) and all((q in __return__) == (q.topic not in subscribed_topics) for q in table)
    """
    topics = set(subscribed_topics)
    return frozenset(q for q in table if q.topic not in topics)


class Unlock(enum.Enum):
    """How a removed orderly queue's broker lock is released (REB-14)."""

    NONE = "NONE"
    NOW = "NOW"
    DELAYED = "DELAYED"


@attrs.frozen
class Removal:
    """The outcome of removeUnnecessaryMessageQueue for one dropped queue (REB-10, REB-14)."""

    persist_offset: bool
    removed: bool
    unlock: Unlock
    unlock_delay_ms: int = 0


@CLAUSES.oracle("REB-10", "REB-14")
def removal(
    orderly: bool,
    message_model: MessageModel,
    consume_lock_free: bool,
    messages_cached: bool,
) -> Removal:
    """What removing a dropped queue does (REB-10, REB-14).

    The offset is always persisted and cleared first. Only orderly clustering consumers need the consume lock: if
    a batch holds it the queue stays (dropped); otherwise the broker lock is released now, or after
    ``UNLOCK_DELAY_MS_WHEN_CACHED`` when messages are cached.

    post: __return__.persist_offset
    post: __return__.removed == (not (orderly and message_model is CLUSTERING) or consume_lock_free)
    post: (__return__.unlock is not Unlock.NONE) == (orderly and message_model is CLUSTERING and consume_lock_free)
    post: __return__.unlock is not Unlock.DELAYED or messages_cached
    post: __return__.unlock_delay_ms == (UNLOCK_DELAY_MS_WHEN_CACHED if __return__.unlock is Unlock.DELAYED else 0)
    """
    if not (orderly and message_model is MessageModel.CLUSTERING):
        return Removal(persist_offset=True, removed=True, unlock=Unlock.NONE)
    if not consume_lock_free:
        return Removal(persist_offset=True, removed=False, unlock=Unlock.NONE)
    if messages_cached:
        return Removal(True, removed=True, unlock=Unlock.DELAYED, unlock_delay_ms=UNLOCK_DELAY_MS_WHEN_CACHED)
    return Removal(persist_offset=True, removed=True, unlock=Unlock.NOW)


@CLAUSES.oracle("REB-11")
def pull_expired(idle_ms: int, consume_type: ConsumeType = ConsumeType.CONSUME_PASSIVELY) -> bool:
    """Whether a rebalance treats an allocated queue as stalled: a push consumer's queue not pulled for more
    than ``PULL_MAX_IDLE_MS`` (REB-11); pull consumers never do.

    pre: idle_ms >= 0
    post: __return__ == (consume_type is ConsumeType.CONSUME_PASSIVELY and idle_ms > PULL_MAX_IDLE_MS)
    post: idle_ms <= PULL_MAX_IDLE_MS or __return__ or consume_type is ConsumeType.CONSUME_ACTIVELY
    """
    return consume_type is ConsumeType.CONSUME_PASSIVELY and idle_ms > PULL_MAX_IDLE_MS


def _answer(offset: int | None) -> int:
    """A broker query's answer as a start offset: a failed query (``None``) leaves the queue for later."""
    return NOT_ADDED if offset is None else offset


def _case(
    stored_offset: int, consume_from_where: ConsumeFromWhere, topic: str
) -> tuple[ConsumeFromWhere, bool] | None:
    """With no stored offset (-1): the start rule and whether the topic is a retry topic; else ``None``."""
    return (consume_from_where, is_retry_topic(topic)) if stored_offset == -1 else None


@CLAUSES.oracle("REB-13")
def compute_pull_from_where(
    consume_from_where: ConsumeFromWhere,
    topic: str,
    stored_offset: int,
    max_offset: int | None = None,
    time_offset: int | None = None,
) -> int:
    """Where a newly allocated queue starts pulling, or ``NOT_ADDED`` (-1) to retry at the next rebalance (REB-13).

    ``stored_offset`` is what the offset store read from its store gives: >= 0 an offset, -1 none (for the broker
    store: QUERY_CONSUMER_OFFSET answered any error code, e.g. QUERY_NOT_FOUND), -2 the read failed (no broker,
    remoting error; the local file store never gives -2). ``max_offset`` and ``time_offset`` are the answers
    to GET_MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP (consumeTimestamp, default 30 minutes before start), ``None``
    if that query failed; they are asked only when needed. (A broker answers 0 rather than "not found" for a
    group with no offset on a queue whose min offset is 0 and whose first message is still in memory; that is
    the broker's rule, see offset_commit, and reaches this oracle as ``stored_offset == 0``.)

    pre: stored_offset >= -2
    pre: max_offset is None or max_offset >= 0
    pre: time_offset is None or time_offset >= 0
    post: __return__ >= NOT_ADDED
    post: stored_offset < 0 or __return__ == stored_offset
    post: stored_offset != -2 or __return__ == NOT_ADDED
    post: stored_offset != -1 or consume_from_where is not FIRST_OFFSET or __return__ == 0
    post: _case(stored_offset, consume_from_where, topic) != (LAST_OFFSET, True) or __return__ == 0
    post: _case(stored_offset, consume_from_where, topic) != (LAST_OFFSET, False) or __return__ == _answer(max_offset)
    post: _case(stored_offset, consume_from_where, topic) != (TIMESTAMP, True) or __return__ == _answer(max_offset)
    post: _case(stored_offset, consume_from_where, topic) != (TIMESTAMP, False) or __return__ == _answer(time_offset)
    """
    if stored_offset >= 0:
        return stored_offset
    if stored_offset != -1:
        return NOT_ADDED
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return 0
    retry = is_retry_topic(topic)
    if consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
        if retry:
            return 0
        answer = max_offset
    else:
        # CONSUME_FROM_TIMESTAMP: a retry topic starts at its end rather than at a point in time.
        answer = max_offset if retry else time_offset
    # A failed broker query throws; RebalanceImpl skips the queue until the next pass.
    return NOT_ADDED if answer is None else answer


@CLAUSES.oracle("REB-15")
def new_queue_locked(orderly: bool, profile: VersionProfile = DEFAULT_PROFILE) -> bool:
    """Whether a freshly created ProcessQueue already carries the lock flag (REB-15).

    4.9.5+ sets it on every new ProcessQueue (it only matters to orderly consumers, which took the broker lock
    just before); earlier releases leave it to the next lockAll, up to 20 s later.

    post: __return__ == profile.at_least("4.9.5")
    """
    del orderly  # set for concurrent consumers too, where nothing reads it
    return profile.at_least("4.9.5")


@CLAUSES.oracle("REB-16")
def orderly_batch_may_start(
    message_model: MessageModel, dropped: bool, locked: bool, lock_age_ms: int
) -> bool:
    """Whether an orderly consume batch may start on a queue (REB-16).

    pre: lock_age_ms >= 0
    post: not __return__ or not dropped
    post: not __return__ or message_model is BROADCASTING or (locked and lock_age_ms <= CLIENT_LOCK_EXPIRY_MS)
    post: __return__ or dropped or (message_model is CLUSTERING and (not locked or lock_age_ms > CLIENT_LOCK_EXPIRY_MS))
    """
    if dropped:
        return False
    if message_model is MessageModel.BROADCASTING:
        return True
    return locked and lock_age_ms <= CLIENT_LOCK_EXPIRY_MS


@CLAUSES.oracle("REB-17", "REB-18")
def broker_lock_granted(holder: str | None, idle_ms: int, client_id: str) -> bool:
    """Whether the broker grants ``client_id`` the lock now held by ``holder`` (``None``: no entry), last
    renewed ``idle_ms`` ago (REB-17).

    Because the client gives up its own lock after ``CLIENT_LOCK_EXPIRY_MS``, well before the broker's
    ``BROKER_LOCK_EXPIRY_MS`` (REB-18), another client can win only from a holder that stopped believing. The
    ``pre:`` picks two ids only to keep CrossHair's search finite.

    pre: idle_ms >= 0 and client_id in ("10.0.0.1@1", "10.0.0.2@2") and holder in (None, "10.0.0.1@1", "10.0.0.2@2")
    post: __return__ == (holder is None or holder == client_id or idle_ms > BROKER_LOCK_EXPIRY_MS)
    post: not __return__ or holder in (None, client_id) or idle_ms > CLIENT_LOCK_EXPIRY_MS
    """
    if holder is None or holder == client_id:
        return True
    return idle_ms > BROKER_LOCK_EXPIRY_MS
