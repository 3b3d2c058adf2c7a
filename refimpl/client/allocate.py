"""Queue allocation strategies of a clustering consumer group (``client/consumer/rebalance``).

Every consumer of a group allocates on its own, from the queue list of its cached route and the consumer id list a
broker gave it. ``RebalanceImpl.rebalanceByTopic`` sorts both lists first (queues by topic, broker name, queue id;
ids in Java string order), so consumers with the same view compute one consistent assignment. ``allocate`` here does
the same sorting (idempotent for callers that already sorted) and drops duplicates, since RebalanceImpl works on sets.

Strategies (names as ``AllocateMessageQueueStrategy.getName``): ``AVG`` (AllocateMessageQueueAveragely),
``AVG_BY_CIRCLE`` (AllocateMessageQueueAveragelyByCircle), ``CONSISTENT_HASH`` (AllocateMessageQueueConsistentHash over
ConsistentHashRouter with MD5), ``CONFIG`` (AllocateMessageQueueByConfig) and ``MACHINE_ROOM``
(AllocateMessageQueueByMachineRoom). All but CONFIG share ``AbstractAllocateMessageQueueStrategy.check``: an empty
consumer id, queue list or id list is an error (``ValueError``, Java's IllegalArgumentException) and a consumer whose
id is not in the list gets nothing.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from rocketspec.spec.protocol import CONSISTENT_HASH_VIRTUAL_NODES
from rocketspec.spec.queues import MessageQueue

DEFAULT_VIRTUAL_NODES = CONSISTENT_HASH_VIRTUAL_NODES


def java_string_key(s: str) -> bytes:
    """Sort key ordering strings as Java's ``String.compareTo`` (UTF-16 code units, not code points)."""
    return s.encode("utf-16-be", "surrogatepass")


def sort_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    """Queues in ``MessageQueue.compareTo`` order, duplicates removed."""
    return sorted(set(queues))


def sort_consumer_ids(ids: Iterable[str]) -> list[str]:
    """Consumer ids in ``Collections.sort`` (Java string) order, duplicates removed."""
    return sorted(set(ids), key=java_string_key)


class AllocateStrategy(Protocol):
    """What RebalanceImpl calls: ``allocate(group, current_id, queues, consumer_ids)`` and a ``name``."""

    name: str

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]: ...


def _check(consumer_id: str, queues: Sequence[MessageQueue], consumer_ids: Sequence[str]) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check``: reject empty inputs; False when the id is not listed."""
    if not consumer_id:
        raise ValueError("currentCID is empty")
    if not queues:
        raise ValueError("mqAll is null or mqAll empty")
    if not consumer_ids:
        raise ValueError("cidAll is null or cidAll empty")
    return consumer_id in consumer_ids


class AllocateMessageQueueAveragely:
    """``AVG``: consumer i of n takes a consecutive run of m/n queues, the first m%n consumers one more."""

    name = "AVG"

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        mq_all, cid_all = sort_queues(queues), sort_consumer_ids(consumer_ids)
        if not _check(consumer_id, mq_all, cid_all):
            return []
        m, n = len(mq_all), len(cid_all)
        index = cid_all.index(consumer_id)
        mod = m % n
        if m <= n:
            size = 1
        elif mod > 0 and index < mod:
            size = m // n + 1
        else:
            size = m // n
        start = index * size if mod > 0 and index < mod else index * size + mod
        count = min(size, m - start)
        return [mq_all[(start + i) % m] for i in range(count)]


class AllocateMessageQueueAveragelyByCircle:
    """``AVG_BY_CIRCLE``: consumer i takes the queues at sorted positions j with j % n == i."""

    name = "AVG_BY_CIRCLE"

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        mq_all, cid_all = sort_queues(queues), sort_consumer_ids(consumer_ids)
        if not _check(consumer_id, mq_all, cid_all):
            return []
        index = cid_all.index(consumer_id)
        n = len(cid_all)
        return [mq_all[j] for j in range(index, len(mq_all)) if j % n == index]


def md5_hash(key: str) -> int:
    """``ConsistentHashRouter.MD5Hash.hash``: the first 4 bytes of MD5(key), big-endian, unsigned."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


class AllocateMessageQueueConsistentHash:
    """``CONSISTENT_HASH``: a ring of ``virtual_nodes`` nodes per consumer keyed ``"<cid>-<k>"``.

    The ring is a sorted map hash -> consumer filled in sorted id order (a later node replaces an equal hash); a
    queue goes to the first node whose hash is >= the hash of its ``toString``, wrapping to the first node.
    """

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = DEFAULT_VIRTUAL_NODES) -> None:
        if not isinstance(virtual_nodes, int) or isinstance(virtual_nodes, bool) or virtual_nodes < 0:
            raise ValueError(f"illegal virtualNodeCnt :{virtual_nodes}")
        self.virtual_nodes = virtual_nodes

    def ring(self, consumer_ids: Sequence[str]) -> tuple[list[int], list[str]]:
        """The ring as parallel sorted lists (hashes, owners)."""
        table: dict[int, str] = {}
        for cid in consumer_ids:
            for k in range(self.virtual_nodes):
                table[md5_hash(f"{cid}-{k}")] = cid
        keys = sorted(table)
        return keys, [table[k] for k in keys]

    def route(self, keys: list[int], owners: list[str], object_key: str) -> str | None:
        """``ConsistentHashRouter.routeNode``: the owner of the first node at or after the key's hash."""
        if not keys:
            return None
        i = bisect.bisect_left(keys, md5_hash(object_key))
        return owners[i if i < len(keys) else 0]

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        mq_all, cid_all = sort_queues(queues), sort_consumer_ids(consumer_ids)
        if not _check(consumer_id, mq_all, cid_all):
            return []
        keys, owners = self.ring(cid_all)
        return [mq for mq in mq_all if self.route(keys, owners, str(mq)) == consumer_id]


class AllocateMessageQueueByConfig:
    """``CONFIG``: the configured queue list, whatever the ids or queues (no argument check)."""

    name = "CONFIG"

    def __init__(self, queues: Iterable[MessageQueue]) -> None:
        self.queues = list(queues)
        for mq in self.queues:
            if not isinstance(mq, MessageQueue):
                raise ValueError(f"CONFIG queues must be MessageQueue values, not {mq!r}")

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        return list(self.queues)


class AllocateMessageQueueByMachineRoom:
    """``MACHINE_ROOM``: queues of brokers named ``"<idc>@<name>"`` with idc in the consumer's rooms.

    Of those p queues consumer i of n takes ``[i*(p//n), (i+1)*(p//n))`` plus queue ``i + (p//n)*n`` if ``i < p%n``.
    """

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        if consumer_idcs is None or isinstance(consumer_idcs, str):
            raise ValueError("MACHINE_ROOM needs consumer_idcs, a collection of machine room names")
        self.consumer_idcs = frozenset(consumer_idcs)

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        mq_all, cid_all = sort_queues(queues), sort_consumer_ids(consumer_ids)
        if not _check(consumer_id, mq_all, cid_all):
            return []
        index = cid_all.index(consumer_id)
        in_rooms = []
        for mq in mq_all:
            parts = mq.broker_name.split("@")
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                in_rooms.append(mq)
        n = len(cid_all)
        mod, rem = divmod(len(in_rooms), n)
        result = in_rooms[mod * index: mod * index + mod]
        if rem > index:
            result.append(in_rooms[index + mod * n])
        return result


STRATEGY_NAMES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")


def make_strategy(strategy: str | Any, config: Mapping[str, Any] | None = None) -> AllocateStrategy:
    """The strategy named ``strategy`` configured from ``config``, or ``strategy`` itself if it has ``allocate``.

    ``config`` keys: CONFIG ``queues``; MACHINE_ROOM ``consumer_idcs``; CONSISTENT_HASH ``virtual_nodes`` (10).
    """
    config = dict(config or {})
    if not isinstance(strategy, str):
        if not callable(getattr(strategy, "allocate", None)):
            raise ValueError("an allocation strategy is a name or an object with allocate(group, id, queues, ids)")
        return strategy
    name = strategy.upper()
    if name == "AVG":
        return AllocateMessageQueueAveragely()
    if name == "AVG_BY_CIRCLE":
        return AllocateMessageQueueAveragelyByCircle()
    if name == "CONSISTENT_HASH":
        return AllocateMessageQueueConsistentHash(config.get("virtual_nodes", DEFAULT_VIRTUAL_NODES))
    if name == "CONFIG":
        if "queues" not in config:
            raise ValueError("the CONFIG strategy needs allocate_config={'queues': [...]} ")
        return AllocateMessageQueueByConfig(config["queues"])
    if name == "MACHINE_ROOM":
        if "consumer_idcs" not in config:
            raise ValueError("the MACHINE_ROOM strategy needs allocate_config={'consumer_idcs': [...]}")
        return AllocateMessageQueueByMachineRoom(config["consumer_idcs"])
    raise ValueError(f"unknown allocation strategy {strategy!r}; one of {', '.join(STRATEGY_NAMES)}")


def strategy_name(strategy: Any) -> str:
    """The name a strategy reports (``getName``), or its class name."""
    return str(getattr(strategy, "name", type(strategy).__name__))
