"""How much work and memory a served node accepts from its clients, whatever they do.

RocketMQ bounds a broker's work per request kind (a bounded queue per executor, ``BrokerController``), answers
SYSTEM_BUSY past it (``NettyRemotingAbstract``) or when a request waited too long (``BrokerFastFailure``), and closes
a connection idle for ``serverChannelMaxIdleTimeSeconds``. ``serve`` does the same and adds what a server written in
Python needs to keep its memory bounded by configuration: a cap on the bytes it holds for its clients (requests
waiting, partial frames, answers not yet read) and backpressure (a connection is not read while it has too many
requests unanswered or too many answer bytes unread).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from rocketspec.spec.protocol import (
    EXECUTOR_MAX_WAIT_MS,
    EXECUTOR_QUEUE_CAPACITY,
    SERVER_CHANNEL_MAX_IDLE_S,
    Executor,
)

MIB = 1024 * 1024


def _positive(_instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{attribute.name} must be a positive integer, not {value!r}")


def _not_negative(_instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{attribute.name} must be a number >= 0, not {value!r}")


def _capacities(_instance: object, attribute: attrs.Attribute[Mapping[Executor, int]],
                value: Mapping[Executor, int]) -> None:
    for executor, capacity in value.items():
        if not isinstance(executor, Executor):
            raise ValueError(f"{attribute.name} keys must be Executor values, not {executor!r}")
        _positive(None, attribute, capacity)


@attrs.frozen
class ServerLimits:
    """The bounds of one served cluster (every node shares them; the byte budget is the whole server's).

    - ``idle_close_s``: a connection with no traffic either way for this long is closed (0: never).
    - ``max_connections``: connections beyond this many are closed as they are accepted.
    - ``max_requests_in_flight``: a connection is not read while this many of its requests wait to run.
    - ``max_held_requests``: nor while this many of its requests wait for an answer the server gives later (held
      pulls: a push consumer holds one per queue it pulls from that broker).
    - ``write_high_water`` / ``write_low_water``: a connection is not read while more answer bytes than the high
      mark wait for it to read them, and is read again below the low mark.
    - ``max_unsent_bytes``: a connection leaving more answer bytes than this unread is closed.
    - ``socket_send_buffer``: the kernel's send buffer of each connection (SO_SNDBUF; 0 leaves the system's), kept
      small so that a client that does not read meets backpressure after a little work, not megabytes of it.
    - ``buffer_limit_bytes``: what the server holds for all clients together; half for requests waiting in queues
      (a request past it is answered SYSTEM_BUSY), a quarter for partial frames (a connection is not read while it
      is over), a quarter for unread answers (the connection with the most is closed while it is over).
    - ``frame_deadline_s``: a frame must arrive whole within this long of its first byte (0: no deadline).
    - ``queue_capacity``: requests waiting per executor and node (``EXECUTOR_QUEUE_CAPACITY``).
    - ``max_wait_ms``: a request waiting longer is answered SYSTEM_BUSY, as BrokerFastFailure does
      (``fast_failure`` False turns it off, as ``brokerFastFailureEnable=false``).
    """

    idle_close_s: float = attrs.field(default=SERVER_CHANNEL_MAX_IDLE_S, validator=_not_negative)
    max_connections: int = attrs.field(default=4096, validator=_positive)
    max_requests_in_flight: int = attrs.field(default=256, validator=_positive)
    max_held_requests: int = attrs.field(default=1024, validator=_positive)
    write_high_water: int = attrs.field(default=256 * 1024, validator=_positive)
    write_low_water: int = attrs.field(default=64 * 1024, validator=_positive)
    max_unsent_bytes: int = attrs.field(default=16 * MIB, validator=_positive)
    socket_send_buffer: int = attrs.field(default=64 * 1024, validator=_not_negative)
    buffer_limit_bytes: int = attrs.field(default=128 * MIB, validator=_positive)
    frame_deadline_s: float = attrs.field(default=60.0, validator=_not_negative)
    queue_capacity: Mapping[Executor, int] = attrs.field(factory=lambda: dict(EXECUTOR_QUEUE_CAPACITY),
                                                         validator=_capacities)
    max_wait_ms: Mapping[Executor, int] = attrs.field(factory=lambda: dict(EXECUTOR_MAX_WAIT_MS),
                                                      validator=_capacities)
    fast_failure: bool = True

    def __attrs_post_init__(self) -> None:
        if self.write_low_water > self.write_high_water:
            raise ValueError("write_low_water must not be above write_high_water")

    @property
    def queued_bytes_limit(self) -> int:
        return self.buffer_limit_bytes // 2

    @property
    def partial_bytes_limit(self) -> int:
        return self.buffer_limit_bytes // 4

    @property
    def unsent_bytes_limit(self) -> int:
        return self.buffer_limit_bytes // 4

    def capacity(self, executor: Executor) -> int:
        return self.queue_capacity.get(executor, EXECUTOR_QUEUE_CAPACITY[executor])


__all__ = ["MIB", "ServerLimits"]
