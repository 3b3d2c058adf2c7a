"""The broker conformance cases, one module per area, in the order they run."""

from __future__ import annotations

from rocketspec.conformance.broker import (
    admin,
    clients,
    delay,
    filter,
    locks,
    longpoll,
    namesrv,
    offsets,
    pull,
    query,
    send,
    sendback,
    transaction,
)
from rocketspec.conformance.model import Case

MODULES = (namesrv, admin, send, pull, longpoll, filter, offsets, query, clients, locks, sendback, delay, transaction)
BROKER_CASES: tuple[Case, ...] = tuple(case for module in MODULES for case in module.CASES)

__all__ = ["BROKER_CASES", "MODULES"]
