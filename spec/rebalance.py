"""Consumer rebalance: queue allocation, the process-queue table, and the orderly broker lock.

Follows RocketMQ 4.x ``RebalanceImpl`` (``rebalanceByTopic``, ``updateProcessQueueTableInRebalance``, ``lock``,
``lockAll``), ``RebalancePushImpl`` (``removeUnnecessaryMessageQueue``, ``computePullFromWhereWithException``),
the strategies of ``client/consumer/rebalance`` (``AllocateMessageQueueAveragely``, ``...AveragelyByCircle``,
``...ConsistentHash`` with ``ConsistentHashRouter``, ``...ByConfig``, ``...ByMachineRoom``),
``ConsumeMessageOrderlyService`` (when a batch may start) and the broker's ``RebalanceLockManager``.

Every consumer of a clustering group allocates on its own, from the queue list of its cached route and the
client id list it just fetched from a broker; consumers agree only because they sort both lists the same way.
The state machine gives each consumer its own view, process-queue table and offsets; brokers hold the stored
offsets, the registered client ids and the orderly queue locks.

Abstractions of the machine (each only adds behaviour or drops state nothing observable depends on):
time is a set of events whose guards carry the timing facts (REB-18); a lock flag's expiry and the broker
lock's later expiry are one ``LockLapsed`` step; an orderly batch is one step, and a batch still running when
its queue is dropped is the rebalance's ``busy`` choice (its result commits nothing, REB-16); offsets are
tracked on the first ``loaded`` queues only; ``synced`` is a ghost flag saying a consumer's last rebalance ran
on the id list and route that still hold. Contract ``pre:`` lines bound what CrossHair explores; they do not
restrict callers.

Version notes (``profile``): up to 4.9.4 a new ProcessQueue is created unlocked, from 4.9.5 locked (REB-15);
the argument checks of MACHINE_ROOM changed in 4.9.3 and 4.9.4 (REB-2).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.java import is_blank
from rocketspec.spec.protocol import (
    BROKER_LOCK_EXPIRY_MS,
    CLIENT_LOCK_EXPIRY_MS,
    CONSISTENT_HASH_VIRTUAL_NODES,
    PULL_MAX_IDLE_MS,
    UNLOCK_DELAY_MS_WHEN_CACHED,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    is_retry_topic,
)
from rocketspec.spec.queues import MessageQueue, sorted_ids, sorted_queues
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

CLAUSES = ClauseTable(
    area="rebalance",
    prefix="REB",
    clauses=(
        Clause(
            "REB-1",
            "Clustering allocation runs on the topic's queues sorted by (topic, brokerName, queueId) and the client "
            "ids sorted in Java string order, so consumers with equal views compute one consistent assignment.",
            "RebalanceImpl.rebalanceByTopic; seed 001 §五 第二步",
        ),
        Clause(
            "REB-2",
            "Strategies other than CONFIG reject an empty current id, queue list or id list (IllegalArgumentException)"
            " and give nothing to a consumer whose id is not in the id list.",
            "AbstractAllocateMessageQueueStrategy.check",
            versions="up to 4.9.2: MACHINE_ROOM checks nothing (a missing id still gets nothing); 4.9.3: MACHINE_ROOM "
            "also rejects a blank (whitespace) id; 4.9.4+: all strategies share check(), which rejects empty ids",
        ),
        Clause(
            "REB-3",
            "AVG: with m queues, n ids and index i, consumer i takes m//n queues plus one if i < m%n, the consecutive "
            "run that starts at i*(m//n) + min(i, m%n).",
            "AllocateMessageQueueAveragely.allocate; seed 001 §1.1 (8 queues, 3 consumers: 3, 3, 2)",
        ),
        Clause(
            "REB-4",
            "AVG_BY_CIRCLE: consumer i takes the queues at the sorted positions j with j % n == i.",
            "AllocateMessageQueueAveragelyByCircle.allocate; seed 001 §1.1",
        ),
        Clause(
            "REB-5",
            "CONSISTENT_HASH: each sorted id puts virtual nodes '<id>-<k>' (k < virtualNodeCnt, default 10) on a ring "
            "keyed by the first 4 MD5 bytes (big-endian, unsigned; a later node replaces an equal key); a queue goes "
            "to the first node at or after the hash of its toString, wrapping; a negative count is an error.",
            "AllocateMessageQueueConsistentHash; ConsistentHashRouter; VirtualNode.getKey; MD5Hash.hash",
        ),
        Clause(
            "REB-6",
            "CONFIG returns the configured queue list whatever the ids or queues (no argument check).",
            "AllocateMessageQueueByConfig.allocate",
        ),
        Clause(
            "REB-7",
            "MACHINE_ROOM keeps the sorted queues whose broker name splits on '@' into exactly two parts with the "
            "first in the configured rooms; of those p, consumer i takes [i*(p//n), (i+1)*(p//n)) plus i + (p//n)*n "
            "if i < p%n.",
            "AllocateMessageQueueByMachineRoom.allocate",
        ),
        Clause(
            "REB-8",
            "Broadcasting does not allocate: every consumer takes every queue of its cached route.",
            "RebalanceImpl.rebalanceByTopic (BROADCASTING); seed 001 §1.1",
        ),
        Clause(
            "REB-9",
            "A rebalance of a topic changes nothing when the route is not cached, the id list cannot be fetched, "
            "or the strategy throws (for example on an empty queue or id list).",
            "RebalanceImpl.rebalanceByTopic",
        ),
        Clause(
            "REB-10",
            "A table queue of the topic that is no longer allocated is marked dropped, its offset persisted to the "
            "broker and removed from the offset store, then the queue leaves the table (unless REB-14 keeps it).",
            "RebalanceImpl.updateProcessQueueTableInRebalance; RebalancePushImpl.removeUnnecessaryMessageQueue; "
            "seed 001 §五 第三步",
        ),
        Clause(
            "REB-11",
            "A push consumer (CONSUME_PASSIVELY) also drops and removes an allocated queue not pulled for more than "
            "120 s, which the same pass then adds back; pull consumers (CONSUME_ACTIVELY) ignore pull expiry.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; ProcessQueue.isPullExpired",
        ),
        Clause(
            "REB-12",
            "An allocated queue not in the table is added after the removals: orderly consumers first take the broker "
            "lock (skip on refusal); then the in-memory offset is cleared, the start offset computed, and a "
            "ProcessQueue with a pull request created if it is >= 0; a queue still in the table, even dropped, is "
            "not re-added.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; seed 001 §五 第四步",
        ),
        Clause(
            "REB-13",
            "computePullFromWhere: a stored offset >= 0 is used; none (-1): LAST_OFFSET -> 0 for %RETRY% topics else "
            "the broker max offset, FIRST_OFFSET -> 0, TIMESTAMP -> the max offset for %RETRY% topics else the offset "
            "searched by consumeTimestamp; a failed read (-2) or a failed broker query skips the queue this round.",
            "RebalancePushImpl.computePullFromWhereWithException; RemoteBrokerOffsetStore.readOffset; "
            "seed 001 §6.3.2",
        ),
        Clause(
            "REB-14",
            "Orderly clustering removal needs the ProcessQueue consume lock within 1 s: if a batch holds it the queue "
            "stays in the table, dropped, until a later pass; otherwise the broker lock is released by a oneway "
            "unlock, sent 20 s later when messages are still cached.",
            "RebalancePushImpl.removeUnnecessaryMessageQueue; RebalancePushImpl.unlockDelay",
        ),
        Clause(
            "REB-15",
            "The lock flag of a new ProcessQueue: unlocked until the next lockAll, or locked at creation.",
            "RebalanceImpl.updateProcessQueueTableInRebalance (pq.setLocked); apache/rocketmq#2621",
            versions="up to 4.9.4: created unlocked (orderly consumption waits up to 20 s for lockAll); "
            "4.9.5+: created locked",
        ),
        Clause(
            "REB-16",
            "An orderly batch starts only on a queue that is not dropped and, in clustering, whose ProcessQueue is "
            "locked with the last lock at most 30 s old; the result of a batch on a dropped queue commits no offset.",
            "ConsumeMessageOrderlyService.ConsumeRequest.run; processConsumeResult; ProcessQueue.isLockExpired",
        ),
        Clause(
            "REB-17",
            "The broker keeps one lock holder per (group, queue): tryLock grants it when free, expired (60 s without "
            "renewal) or already the caller's; unlock frees only the caller's; lockAll (every 20 s) renews and sets "
            "each ProcessQueue's lock flag to the answer.",
            "RebalanceLockManager.tryLockBatch/unlockBatch; RebalanceImpl.lockAll; ConsumeMessageOrderlyService",
        ),
        Clause(
            "REB-18",
            "The client lock lifetime (30 s) is shorter than the broker's (60 s) and both are renewed together, so a "
            "broker lock lapses only after its holder stopped believing in it; a fresh client lock is backed.",
            "ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME; RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME",
        ),
        Clause(
            "REB-19",
            "A delayed unlock frees the broker lock even if its sender took the queue again meanwhile; that consumer "
            "then holds an unbacked lock flag until its next lockAll (a 4.x race the model keeps).",
            "RebalancePushImpl.unlockDelay; RebalanceLockManager.unlockBatch",
        ),
        Clause(
            "REB-20",
            "When every live consumer rebalanced from the same queue list and the id list of exactly the live "
            "consumers and applied its allocation fully, each queue has exactly one owner (AVG, AVG_BY_CIRCLE, "
            "CONSISTENT_HASH; MACHINE_ROOM: each queue of a configured room).",
            "RebalanceImpl.rebalanceByTopic; seed 001 §五 (同一个消费队列不会被多个消费者分配)",
        ),
        Clause(
            "REB-21",
            "AVG and AVG_BY_CIRCLE give consumers of one id list allocation sizes that differ by at most one.",
            "AllocateMessageQueueAveragely; AllocateMessageQueueAveragelyByCircle; seed 001 §1.1",
        ),
        Clause(
            "REB-22",
            "Queues of topics no longer subscribed are dropped and removed without persisting their offsets.",
            "RebalanceImpl.truncateMessageQueueNotMyTopic",
        ),
        Clause(
            "REB-23",
            "A shutdown persists every offset, releases its orderly broker locks and unregisters; a crash persists "
            "nothing and leaves its registration until the broker evicts it and its locks until they expire.",
            "DefaultMQPushConsumerImpl.shutdown; ConsumeMessageOrderlyService.shutdown; ClientHousekeepingService",
        ),
        Clause(
            "REB-24",
            "A broker restart loses its lock table (kept in memory only): each lock flag on its queues is then "
            "unbacked, and orderly batches go on under it (a batch checks only the ProcessQueue), until the holder's "
            "next lockAll, which takes the lock again unless another consumer took it first (REB-17).",
            "RebalanceLockManager.mqLockTable; BrokerController; ConsumeMessageOrderlyService.ConsumeRequest.run",
        ),
    ),
)

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


def _java_split_at(text: str) -> list[str]:
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
        return allocate_by_config(tuple(configured), consumer_id, queues, consumer_ids)  # type: ignore[call-overload]
    mqs = sorted_queues(queues)
    ids = sorted_ids(consumer_ids)
    if strategy == "MACHINE_ROOM":
        idcs = config.get("consumer_idcs")
        if idcs is None or isinstance(idcs, str):
            raise ValueError("MACHINE_ROOM needs consumer_idcs= (a collection of machine room names)")
        rooms = set(idcs)  # type: ignore[call-overload]
        if profile.at_least("4.9.3"):
            _check_arguments(consumer_id, mqs, ids, blank_is_empty=not profile.at_least("4.9.4"))
        if consumer_id not in ids:
            return []
        eligible = [q for q in mqs if len(p := _java_split_at(q.broker_name)) == 2 and p[0] in rooms]
        return [eligible[j] for j in machine_room_positions(ids.index(consumer_id), len(eligible), len(ids))]
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


def _replace(items: tuple, position: int, value: object) -> tuple:
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


# ---------------------------------------------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------------------------------------------


def _owners(live: list[tuple[str, ConsumerState]], position: int) -> list[str]:
    return [cid for cid, c in live if (e := c.table[position]) is not None and not e.dropped]


def views_agree(state: GroupState) -> bool:
    """The brokers list exactly the live consumers, and each last rebalanced on that list and the current route
    and applied its allocation fully (REB-20)."""
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
        if len(parts := _java_split_at(setup.queues[p].broker_name)) == 2 and parts[0] in rooms
    )


def _one_owner_when_views_agree(state: GroupState) -> bool:
    if not views_agree(state):
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
    """A rebalance on an id list without the consumer leaves it owning nothing (REB-2, REB-10)."""
    if not isinstance(action, Rebalanced) or action.consumer in before.registered:
        return True
    if not before.registered:
        return after == before  # an empty list makes the strategy throw: nothing changes (REB-9)
    return all(e is None or e.dropped for e in after.consumer(action.consumer).table)


def _persisted_when_dropped(before: GroupState, action: Action, after: GroupState) -> bool:
    if isinstance(action, (ConsumerCrashed, BrokerLeftRoute, BrokerLockReleased, BrokerRestarted)):
        return True
    old = before.consumer(action.consumer)
    new = after.consumer(action.consumer)
    if old.table == new.table:
        return True
    for p, entry in enumerate(old.table):
        if entry is None or entry.dropped:
            continue
        later = new.table[p]
        if (later is None or later.dropped) and after.stored_offsets[p] != entry.offset:
            return False
    return True


def _batch_under_lock(before: GroupState, action: Action, after: GroupState) -> bool:
    if not isinstance(action, BatchConsumed):
        return True
    position = before.setup.position(action.queue)
    entry = before.consumer(action.consumer).table[position]
    holder = before.lock_holders[position]
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
        e.offset == after.stored_offsets[p]
        for p, e in enumerate(new.table)
        if e is not None and not e.dropped and ((was := old.table[p]) is None or was.dropped)
    )


def _crash_keeps_locks_and_registration(before: GroupState, action: Action, after: GroupState) -> bool:
    if not isinstance(action, ConsumerCrashed):
        return True
    return (after.lock_holders, after.registered, after.stored_offsets) == (
        before.lock_holders, before.registered, before.stored_offsets
    )


STEP_INVARIANTS: tuple[StepInvariant[GroupState, Action], ...] = (
    StepInvariant(
        "a consumer missing from its id list owns nothing after rebalancing", ("REB-2", "REB-9", "REB-10"),
        _missing_owns_nothing,
    ),
    StepInvariant(
        "an offset is persisted when its queue is dropped", ("REB-10", "REB-11", "REB-14", "REB-23"),
        _persisted_when_dropped,
    ),
    StepInvariant(
        "an orderly batch starts only under the broker lock", ("REB-16", "REB-18", "REB-19", "REB-24"),
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
    """No consumer started; the whole route listed; nothing locked; stored offsets 0."""
    n = len(setup.queues)
    idle = ConsumerState(Phase.NEW, frozenset(), None, False, tuple(None for _ in range(n)), frozenset())
    return GroupState(
        setup=setup, consumers=tuple(idle for _ in setup.consumer_ids), registered=frozenset(),
        route=_full_route(setup), stored_offsets=tuple(0 for _ in range(n)),
        lock_holders=tuple(None for _ in range(n)), flaps_left=setup.flaps, restarts_left=setup.restarts,
    )


def _rebalance_variants(state: GroupState, cid: str, me: ConsumerState) -> Iterator[Rebalanced]:
    """The rebalances that can differ: a reversed id list only when it has two ids or more; a running batch
    (``busy``) only when a queue not yet dropped is to go, and cached messages only when a queue goes."""
    setup = state.setup
    for reversed_list in (False, True) if len(state.registered) > 1 else (False,):
        yield Rebalanced(cid, reversed_list)
        if not setup.orderly:
            continue
        wanted = setup.target(cid, _listed(state, reversed_list), me.route_view)
        if wanted is None:
            continue
        going = [e for p, e in enumerate(me.table) if e is not None and (p not in wanted or e.pull_expired)]
        if not going:
            continue
        yield Rebalanced(cid, reversed_list, busy=False, cached=True)
        if any(not e.dropped for e in going):
            yield Rebalanced(cid, reversed_list, busy=True, cached=False)
            yield Rebalanced(cid, reversed_list, busy=True, cached=True)


def candidate_actions(state: GroupState) -> Iterator[Action]:
    """The actions worth trying in ``state`` (a superset of the enabled ones; ``enabled`` decides)."""
    setup = state.setup
    if setup.shrinking_route:
        yield BrokerLeftRoute()
    if setup.orderly:
        for p, holder in enumerate(state.lock_holders):
            if holder is not None:
                yield BrokerLockReleased(setup.queues[p])
        if state.restarts_left:
            for broker in sorted({q.broker_name for q in setup.queues}):
                yield BrokerRestarted(broker)
    for cid, me in zip(setup.consumer_ids, state.consumers, strict=True):
        if me.phase is Phase.NEW:
            yield ConsumerStarted(cid)
            continue
        registered = cid in state.registered
        if registered:
            yield ClientEvicted(cid)
        if me.phase is Phase.DOWN:
            continue
        yield ConsumerShutdown(cid)
        yield ConsumerCrashed(cid)
        if not registered:
            yield HeartbeatSent(cid)
        if setup.shrinking_route:
            yield RouteRefreshed(cid)
        yield OffsetsPersisted(cid)
        if setup.orderly:
            yield LockRenewed(cid)
        yield from _rebalance_variants(state, cid, me)
        for p, entry in enumerate(me.table):
            if entry is not None:
                for kind in _QUEUE_ACTIONS:
                    yield kind(cid, setup.queues[p])
        for p in sorted(me.pending_unlocks):
            yield UnlockArrived(cid, setup.queues[p])


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
    **options: object,
) -> Setup:
    """A clustering group of push consumers to explore: ``consumers`` ids, ``brokers`` x ``queues_per_broker``
    queues of one topic, ``strategy`` with its ``options``; ``messages``, ``loaded`` and ``flaps`` bound it as
    ``Setup`` says; ``shrinking_route`` lets the last broker leave the route; ``restarts`` lets a broker restart
    (orderly, REB-24). CONFIG is not modelled: its fixed
    lists make no ownership claim.
    """
    if strategy not in STRATEGIES or strategy == "CONFIG":
        raise ValueError(f"groups run AVG, AVG_BY_CIRCLE, CONSISTENT_HASH or MACHINE_ROOM, not {strategy!r}")
    if strategy == "MACHINE_ROOM":
        options.setdefault("consumer_idcs", ("room0",))
        names = [f"room{b % 2}@broker-{chr(ord('a') + b)}" for b in range(brokers)]
    else:
        names = [f"broker-{chr(ord('a') + b)}" for b in range(brokers)]
    queues = tuple(sorted_queues(MessageQueue("TopicTest", n, i) for n in names for i in range(queues_per_broker)))
    return Setup(
        topic="TopicTest", queues=queues, consumer_ids=tuple(f"10.0.0.{i + 1}@{i + 1}" for i in range(consumers)),
        strategy=strategy, orderly=orderly, messages=messages, loaded=loaded, profile=profile,
        shrinking_route=shrinking_route, flaps=flaps, restarts=restarts, options=tuple(sorted(options.items())),
    )


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


DEFAULT_GROUPS: tuple[Setup, ...] = (
    group(consumers=3, brokers=2, queues_per_broker=2),
    group(consumers=2, brokers=2, queues_per_broker=1, orderly=True),
)


def model(*groups: Setup) -> Model[GroupState, Action]:
    """The rebalance machine over ``groups`` (default ``DEFAULT_GROUPS``: three concurrent consumers on 2 x 2
    queues, and two orderly consumers on 2 x 1 queues), each explored from its own initial state."""
    chosen = groups or DEFAULT_GROUPS
    actions: Callable[[GroupState], Iterable[Action]] = candidate_actions
    return Model(
        area="rebalance",
        bounds="; ".join(describe(g) for g in chosen),
        initial=tuple(initial_state(g) for g in chosen),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
