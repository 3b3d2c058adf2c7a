"""The raw-socket remoting client of the TCP server tests: the conformance suite's ``WireClient`` with the
serialize type of every answer returned beside it, so tests can check that a response is written in its request's.

It speaks frames the simple way (read the 4-byte length, then that many bytes) rather than through ``FrameReader``,
so a bug in the server's framing cannot hide behind the same bug in the client. Every wait is bounded by a timeout.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from hypothesis import settings

from rocketspec.conformance import wire
from rocketspec.conformance.wire import ConnectionClosed, split_addr
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import SerializeType

DEFAULT_TIMEOUT_S = 2.0

__all__ = ["ConnectionClosed", "WireClient", "json_frame", "scaled_settings", "split_addr"]


def scaled_settings(examples: int) -> settings:
    """``examples`` under the bounded ``ci`` profile, 50 times as many under ``deep``; everything else comes from the
    profile in force (loaded before test modules are imported)."""
    deep = settings.default.max_examples >= 1000
    return settings(max_examples=examples * 50 if deep else examples)


def json_frame(header: dict[str, Any] | bytes, body: bytes = b"") -> bytes:
    """A JSON-serialized frame built by hand from a header dict (or raw header bytes), e.g. with numeric extFields
    the way real clients write them."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


class WireClient(wire.WireClient):
    """``recv`` and ``response_to`` return ``(command, serialize type)``."""

    def __init__(self, addr: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__(addr, timeout)

    def recv(self, timeout: float | None = None) -> tuple[RemotingCommand, SerializeType]:  # type: ignore[override]
        return self.next_command(timeout)

    def response_to(self, opaque: int,  # type: ignore[override]
                    timeout: float | None = None) -> tuple[RemotingCommand, SerializeType]:
        return self.next_response(opaque, timeout)

    def closed_by_server(self, timeout: float | None = None) -> bool:
        """True once the server closes the connection (EOF or reset) within ``timeout``."""
        return self.closed_by_peer(timeout)
