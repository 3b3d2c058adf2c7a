"""Reference implementation of a RocketMQ 4.x name server, broker and clients.

The test-double API is the facade ``Cluster`` (see ``docs/refimpl.md``)::

    from rocketspec.refimpl import Cluster, Message, ConsumeStatus

Everything runs in-process on a simulated (seeded, deterministic, fault-injectable) or real clock. Names are loaded
on first use, so importing one submodule (``rocketspec.refimpl.store``) does not import the whole implementation.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, statically, for type checkers (at run time __getattr__ loads them on first use)
    from rocketspec.refimpl.client.errors import MQBrokerError as MQBrokerError
    from rocketspec.refimpl.client.errors import MQClientError as MQClientError
    from rocketspec.refimpl.client.producer import SendResult as SendResult
    from rocketspec.refimpl.client.transaction import TransactionSendResult as TransactionSendResult
    from rocketspec.refimpl.cluster import Cluster as Cluster
    from rocketspec.refimpl.message import Message as Message
    from rocketspec.refimpl.message import MessageExt as MessageExt
    from rocketspec.refimpl.remoting import RemotingError as RemotingError
    from rocketspec.refimpl.remoting import RemotingTimeoutError as RemotingTimeoutError
    from rocketspec.refimpl.runtime import NotIdle as NotIdle
    from rocketspec.spec.protocol import ConsumeFromWhere as ConsumeFromWhere
    from rocketspec.spec.protocol import ConsumeOrderlyStatus as ConsumeOrderlyStatus
    from rocketspec.spec.protocol import ConsumeStatus as ConsumeStatus
    from rocketspec.spec.protocol import MessageModel as MessageModel
    from rocketspec.spec.protocol import SendStatus as SendStatus
    from rocketspec.spec.protocol import TransactionState as TransactionState
    from rocketspec.spec.queues import MessageQueue as MessageQueue

_EXPORTS = {
    "Cluster": "rocketspec.refimpl.cluster",
    "Message": "rocketspec.refimpl.message",
    "MessageExt": "rocketspec.refimpl.message",
    "MQBrokerError": "rocketspec.refimpl.client.errors",
    "MQClientError": "rocketspec.refimpl.client.errors",
    "SendResult": "rocketspec.refimpl.client.producer",
    "TransactionSendResult": "rocketspec.refimpl.client.transaction",
    "RemotingError": "rocketspec.refimpl.remoting",
    "RemotingTimeoutError": "rocketspec.refimpl.remoting",
    "NotIdle": "rocketspec.refimpl.runtime",
    "ConsumeFromWhere": "rocketspec.spec.protocol",
    "ConsumeOrderlyStatus": "rocketspec.spec.protocol",
    "ConsumeStatus": "rocketspec.spec.protocol",
    "MessageModel": "rocketspec.spec.protocol",
    "SendStatus": "rocketspec.spec.protocol",
    "TransactionState": "rocketspec.spec.protocol",
    "MessageQueue": "rocketspec.spec.queues",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rocketspec.refimpl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
