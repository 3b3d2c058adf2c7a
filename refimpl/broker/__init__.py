"""The broker: a Server that maps remoting requests to responses, with its store and services.

Names load on first use (``from rocketspec.refimpl.broker import Broker``), so the sub-services can import the
broker's modules without an import cycle.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Broker": "rocketspec.refimpl.broker.broker",
    "BrokerConfig": "rocketspec.refimpl.broker.config",
    "TopicConfig": "rocketspec.refimpl.broker.topics",
    "TopicConfigManager": "rocketspec.refimpl.broker.topics",
    "SubscriptionGroupConfig": "rocketspec.refimpl.broker.groups",
    "SubscriptionGroupManager": "rocketspec.refimpl.broker.groups",
    "ConsumerOffsetManager": "rocketspec.refimpl.broker.offsets",
    "ConsumerManager": "rocketspec.refimpl.broker.clients",
    "ConsumerGroupInfo": "rocketspec.refimpl.broker.clients",
    "ProducerManager": "rocketspec.refimpl.broker.clients",
    "SubscriptionData": "rocketspec.refimpl.broker.clients",
    "RebalanceLockManager": "rocketspec.refimpl.broker.locks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rocketspec.refimpl.broker' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
