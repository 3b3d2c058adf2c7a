"""The connections of one served cluster, kept within ``ServerLimits`` on the wire loop.

Every connection's reading is paused for as long as any reason holds (``Reading``): too many requests unanswered,
answers it does not read past the write high-water mark, or the server's partial frames over their share of the byte
budget. A periodic sweep closes what must go: connections idle (no traffic either way) for ``idle_close_s``, as
RocketMQ's server closes a channel idle for ``serverChannelMaxIdleTimeSeconds``; connections whose frame has not
arrived whole within ``frame_deadline_s`` (a slow sender holding a large partial frame); and, while the answers no
client reads exceed their share of the budget, the connection holding the most.

Everything here runs on the wire loop's thread (``WireLoop``), the served nodes' runtime loop too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from rocketspec.refimpl.limits import ServerLimits

log = logging.getLogger("rocketspec.tcp")

#: How often the sweep runs (seconds): idle and deadline closes happen within this much of their time.
SWEEP_INTERVAL_S = 1.0

INFLIGHT = "requests waiting"
HELD = "requests held"
WRITE = "answers unread"
PARTIAL = "partial frames over budget"


class Guarded(Protocol):
    """What the guard needs of a connection (``tcp.TcpChannel``)."""

    remote_addr: str
    transport: asyncio.Transport
    last_activity: float
    frame_started: float
    partial: int
    unsent: int
    paused: set[str]

    def drop(self, why: str) -> None: ...


class ConnectionGuard:
    """Counts and sweeps the connections of every endpoint of one served cluster (wire loop only)."""

    def __init__(self, limits: ServerLimits, loop: asyncio.AbstractEventLoop,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._loop = loop
        self._clock = clock
        self.connections: set[Guarded] = set()
        self.partial_bytes = 0
        # Unread answer bytes as last seen per connection: buffers only shrink unseen, so this never undercounts.
        self.unsent_bytes = 0
        self.refused_connections = 0
        self.closed_idle = 0
        self.closed_slow = 0
        self.closed_unread = 0
        self._sweeper: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Begin sweeping (on the wire loop)."""
        if self._sweeper is None:
            self._sweeper = self._loop.call_later(SWEEP_INTERVAL_S, self._sweep)

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    # ---------------------------------------------------------------------------------------------- connections
    def admit(self, connection: Guarded) -> bool:
        """A new connection: False (and it is to be closed) when the server already has ``max_connections``."""
        if len(self.connections) >= self.limits.max_connections:
            self.refused_connections += 1
            if self.refused_connections == 1 or self.refused_connections % 1000 == 0:
                log.warning("refusing connection from %s: %d connections open (max_connections)",
                            connection.remote_addr, len(self.connections))
            return False
        self.connections.add(connection)
        connection.last_activity = self._clock()
        return True

    def left(self, connection: Guarded) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            self.partial_bytes -= connection.partial
            connection.partial = 0
            self.unsent_bytes -= connection.unsent
            connection.unsent = 0

    def active(self, connection: Guarded) -> None:
        connection.last_activity = self._clock()

    def wrote(self, connection: Guarded) -> None:
        """Answers were written to ``connection``: past the unread-answer budget, close the biggest readers' debts."""
        size = connection.transport.get_write_buffer_size()
        self.unsent_bytes += size - connection.unsent
        connection.unsent = size
        if self.unsent_bytes > self.limits.unsent_bytes_limit:
            self._shed_unsent()

    # ----------------------------------------------------------------------------------------------- reading
    def pause(self, connection: Guarded, reason: str) -> None:
        if reason not in connection.paused:
            connection.paused.add(reason)
            if len(connection.paused) == 1 and not connection.transport.is_closing():
                connection.transport.pause_reading()

    def resume(self, connection: Guarded, reason: str) -> None:
        if reason in connection.paused:
            connection.paused.discard(reason)
            if not connection.paused and not connection.transport.is_closing():
                connection.transport.resume_reading()

    def held(self, connection: Guarded, pending: int) -> None:
        """``pending`` bytes of an incomplete frame are now held for ``connection``."""
        if pending and not connection.partial:
            connection.frame_started = self._clock()
        self.partial_bytes += pending - connection.partial
        connection.partial = pending
        if pending and self.partial_bytes > self.limits.partial_bytes_limit:
            self.pause(connection, PARTIAL)

    # ------------------------------------------------------------------------------------------------- sweep
    def _sweep(self) -> None:
        self._sweeper = self._loop.call_later(SWEEP_INTERVAL_S, self._sweep)
        try:
            self.sweep()
        except Exception:  # the sweep must go on whatever one connection did
            log.exception("connection sweep failed")

    def sweep(self) -> None:
        """Close idle, slow and unread connections; read partial-paused ones again once the budget allows."""
        now = self._clock()
        limits = self.limits
        for connection in list(self.connections):
            if limits.idle_close_s and now - connection.last_activity >= limits.idle_close_s:
                self.closed_idle += 1
                connection.drop(f"idle for {limits.idle_close_s:g} s")
            elif limits.frame_deadline_s and connection.partial and \
                    now - connection.frame_started >= limits.frame_deadline_s:
                self.closed_slow += 1
                connection.drop(f"a frame not whole after {limits.frame_deadline_s:g} s")
        live = self._shed_unsent()
        if self.partial_bytes <= limits.partial_bytes_limit:
            for connection in live:
                self.resume(connection, PARTIAL)

    def _shed_unsent(self) -> list[Guarded]:
        """Recount the unread answers; while over their budget, close the connection with the most. The open
        connections are returned."""
        live = [c for c in self.connections if not c.transport.is_closing()]
        total = 0
        for connection in live:
            connection.unsent = connection.transport.get_write_buffer_size()
            total += connection.unsent
        self.unsent_bytes = total
        limit = self.limits.unsent_bytes_limit
        for connection in sorted(live, key=lambda c: c.unsent, reverse=True):
            if self.unsent_bytes <= limit:
                break
            self.closed_unread += 1
            connection.drop(f"{connection.unsent} answer bytes unread while the server's unread answers are over "
                            f"{limit} bytes")
            self.unsent_bytes -= connection.unsent
            connection.unsent = 0
        return [c for c in live if not c.transport.is_closing()]


__all__ = ["HELD", "INFLIGHT", "PARTIAL", "SWEEP_INTERVAL_S", "WRITE", "ConnectionGuard", "Guarded"]
