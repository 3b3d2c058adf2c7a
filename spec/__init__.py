"""The executable specification of RocketMQ 4.x client/broker protocols.

Pure and deterministic: no IO, no clock. One package per protocol area (``clauses``, ``oracles``, ``machine``,
``invariants``): a clause table, oracle functions with contracts, frozen state and actions, ``enabled``/``step``,
invariants and a model (see ``docs/spec-authoring.md``). Shared facts: ``protocol``, ``java``, ``queues``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from rocketspec.spec.queues import MessageQueue, java_string_key, sorted_ids, sorted_queues
from rocketspec.spec.versions import DEFAULT_PROFILE, V4_9_3, V4_9_8, VersionProfile

AREAS: tuple[str, ...] = (
    "send_retry",
    "rebalance",
    "offset_commit",
    "pull_correction",
    "transaction_check",
    "consume_retry",
    "message_filter",
    "name_server",
    "broker_requests",
    "remoting",
)


def area_module(name: str) -> ModuleType:
    """The spec module of one area, by its name in :data:`AREAS`."""
    if name not in AREAS:
        raise KeyError(f"unknown spec area {name!r}; areas are: {', '.join(AREAS)}")
    return importlib.import_module(f"rocketspec.spec.{name}")


__all__ = [
    "AREAS",
    "DEFAULT_PROFILE",
    "V4_9_3",
    "V4_9_8",
    "MessageQueue",
    "VersionProfile",
    "area_module",
    "java_string_key",
    "sorted_ids",
    "sorted_queues",
]
