"""A blocking raw-socket remoting client for tests of the TCP server.

It speaks frames the simple way (read the 4-byte length, then that many bytes) rather than through ``FrameReader``,
so a bug in the server's framing cannot hide behind the same bug in the client. Every wait is bounded by a timeout:
a test can never hang on a server that does not answer.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

from hypothesis import settings

from rocketspec.refimpl.frame import decode, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import RPC_ONEWAY_FLAG, SerializeType

DEFAULT_TIMEOUT_S = 2.0


def scaled_settings(examples: int) -> settings:
    """``examples`` under the bounded ``ci`` profile, 50 times as many under ``deep``; everything else comes from the
    profile in force (loaded before test modules are imported)."""
    deep = settings.default.max_examples >= 1000
    return settings(max_examples=examples * 50 if deep else examples)


class ConnectionClosed(Exception):
    """The server closed the connection (EOF or reset) while the client waited for bytes."""


def json_frame(header: dict[str, Any] | bytes, body: bytes = b"") -> bytes:
    """A JSON-serialized frame built by hand from a header dict (or raw header bytes), e.g. with numeric extFields
    the way real clients write them."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


class WireClient:
    """One connection to ``addr`` (``host:port``): send commands or raw bytes, read frames with a timeout.

    ``request`` skips (and keeps in ``server_requests``) requests the server sends on its own, such as
    NOTIFY_CONSUMER_IDS_CHANGED, while it waits for the response with the request's opaque.
    """

    def __init__(self, addr: str, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.addr = addr
        self.timeout = timeout
        self.sock = socket.create_connection(split_addr(addr), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server_requests: list[RemotingCommand] = []

    # sending ----------------------------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, command: RemotingCommand, serialize: int = SerializeType.JSON) -> None:
        self.send_raw(encode(command, serialize))

    # receiving --------------------------------------------------------------------------------------------------
    def _read_exactly(self, n: int, deadline: float) -> bytes:
        data = bytearray()
        while len(data) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no complete frame from {self.addr} in time")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(n - len(data))
            except TimeoutError:
                raise TimeoutError(f"no complete frame from {self.addr} in time") from None
            except (ConnectionResetError, BrokenPipeError) as error:
                raise ConnectionClosed(f"{self.addr}: {error}") from None
            if not chunk:
                raise ConnectionClosed(f"{self.addr} closed the connection")
            data += chunk
        return bytes(data)

    def recv_frame(self, timeout: float | None = None) -> bytes:
        """The next frame without its length prefix; ``TimeoutError`` or ``ConnectionClosed`` otherwise."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        (total,) = struct.unpack(">i", self._read_exactly(4, deadline))
        return self._read_exactly(total, deadline)

    def recv(self, timeout: float | None = None) -> tuple[RemotingCommand, SerializeType]:
        """The next command and the serialize type it came in."""
        return decode(self.recv_frame(timeout))

    def response_to(self, opaque: int, timeout: float | None = None) -> tuple[RemotingCommand, SerializeType]:
        """Wait for the response with ``opaque``, keeping server-initiated requests met on the way."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            command, serialize = self.recv(max(0.0, deadline - time.monotonic()))
            if command.is_response and command.opaque == opaque:
                return command, serialize
            if not command.is_response:
                self.server_requests.append(command)

    def request(self, command: RemotingCommand, serialize: int = SerializeType.JSON,
                timeout: float | None = None) -> RemotingCommand:
        """Send ``command`` and return its response (``TimeoutError`` if none comes in time)."""
        self.send(command, serialize)
        return self.response_to(command.opaque, timeout)[0]

    def oneway(self, command: RemotingCommand, serialize: int = SerializeType.JSON) -> None:
        self.send(RemotingCommand(command.code, command.ext_fields, command.body, command.remark, command.opaque,
                                  command.flag | RPC_ONEWAY_FLAG, command.language, command.version), serialize)

    def closed_by_server(self, timeout: float | None = None) -> bool:
        """True once the server closes the connection (EOF or reset) within ``timeout``; frames meanwhile are
        skipped. False when the connection is still open at the deadline."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return False
            except (ConnectionResetError, BrokenPipeError):
                return True
            if not chunk:
                return True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
