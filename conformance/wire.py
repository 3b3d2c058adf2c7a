"""A blocking remoting client that records what it exchanges: the conformance suite's only way to talk to a target.

It reads frames the simple way (the 4-byte length, then that many bytes) and decodes them with the project's frame
codec; nothing of the reference client decides anything here. Every wait is bounded by a timeout, so a case can never
hang on a target that does not answer, and every frame sent or received is kept as an :class:`Exchange` for the
report (``Expected: … Actual: …`` comes with the frames that led to it).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence

import attrs

from rocketspec.refimpl.frame import FrameError, decode, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import RPC_ONEWAY_FLAG, SerializeType, split_addr

DEFAULT_TIMEOUT_S = 3.0
# What a report keeps of a body: enough to read a route or an error, not a whole batch of messages.
BODY_PREVIEW_BYTES = 512


class ConnectionClosed(Exception):
    """The peer closed the connection (EOF or reset) while the client waited for bytes."""


class Unreachable(Exception):
    """No TCP connection could be made to the address."""


# The command type the suite sends and reads (the frame codec's), named here for the modules that talk through this
# one and need no other part of the codec.
Command = RemotingCommand
# What talking to a target can end in instead of an answer: no connection, a broken one, no answer in time, bytes
# that are not a frame.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (OSError, TimeoutError, ConnectionClosed, Unreachable, FrameError)


@attrs.frozen
class Exchange:
    """One frame on a recorded connection: who sent it, when (seconds since the case began) and what it said."""

    at_s: float
    direction: str  # ">" sent by the suite, "<" received from the target
    peer: str
    code: int
    name: str
    opaque: int
    flag: int
    remark: str | None
    fields: dict[str, str]
    body_len: int
    body_preview: str

    def line(self) -> str:
        """The exchange as one line of a report."""
        kind = "response" if self.flag & 1 else ("oneway" if self.flag & RPC_ONEWAY_FLAG else "request")
        fields = " ".join(f"{k}={v}" for k, v in sorted(self.fields.items()))
        remark = f" remark={self.remark!r}" if self.remark else ""
        body = f" body[{self.body_len}]={self.body_preview!r}" if self.body_len else ""
        head = f"{self.at_s:7.3f}s {self.direction} {self.peer} {self.name} ({kind} #{self.opaque})"
        return f"{head}{remark} {fields}{body}"

    def to_json(self) -> dict[str, object]:
        return attrs.asdict(self)


def command_name(command: RemotingCommand) -> str:
    return command.code_name()


class Recorder:
    """Collects the exchanges of every connection of one case (thread-safe: held pulls answer on other threads)."""

    def __init__(self, limit: int = 400) -> None:
        self.started = time.monotonic()
        self.limit = limit
        self.dropped = 0
        self._lock = threading.Lock()
        self.exchanges: list[Exchange] = []

    def record(self, direction: str, peer: str, command: RemotingCommand) -> None:
        body = command.body or b""
        preview = body[:BODY_PREVIEW_BYTES].decode("utf-8", "replace")
        exchange = Exchange(round(time.monotonic() - self.started, 3), direction, peer, command.code,
                            command_name(command), command.opaque, command.flag, command.remark,
                            dict(command.ext_fields), len(body), preview)
        with self._lock:
            if len(self.exchanges) < self.limit:
                self.exchanges.append(exchange)
            else:
                self.dropped += 1

    def snapshot(self) -> tuple[Exchange, ...]:
        with self._lock:
            return tuple(self.exchanges)


class WireClient:
    """One connection to ``addr`` (``host:port``): send commands or raw bytes, read frames with a timeout.

    ``request`` keeps requests the target sends on its own (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE) in
    ``server_requests`` while it waits for the response carrying the request's opaque.
    """

    def __init__(self, addr: str, timeout: float = DEFAULT_TIMEOUT_S, recorder: Recorder | None = None) -> None:
        self.addr = addr
        self.timeout = timeout
        self.recorder = recorder
        try:
            self.sock = socket.create_connection(split_addr(addr), timeout=timeout)
        except OSError as error:
            raise Unreachable(f"cannot connect to {addr}: {error.strerror or error}") from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server_requests: list[RemotingCommand] = []
        self.closed = False

    # sending ----------------------------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as error:
            raise ConnectionClosed(f"{self.addr}: {error}") from None

    def send(self, command: RemotingCommand, serialize: int = SerializeType.JSON) -> None:
        if self.recorder is not None:
            self.recorder.record(">", self.addr, command)
        self.send_raw(encode(command, serialize))

    # receiving --------------------------------------------------------------------------------------------------
    def _read_exactly(self, n: int, deadline: float) -> bytes:
        data = bytearray()
        while len(data) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no complete frame from {self.addr} in time")
            try:
                self.sock.settimeout(remaining)
                chunk = self.sock.recv(n - len(data))
            except TimeoutError:
                raise TimeoutError(f"no complete frame from {self.addr} in time") from None
            except OSError as error:
                raise ConnectionClosed(f"{self.addr}: {error}") from None
            if not chunk:
                raise ConnectionClosed(f"{self.addr} closed the connection")
            data += chunk
        return bytes(data)

    def recv_frame(self, timeout: float | None = None) -> bytes:
        """The next frame without its length prefix; ``TimeoutError`` or ``ConnectionClosed`` otherwise."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        (total,) = struct.unpack(">i", self._read_exactly(4, deadline))
        if total < 4 or total > 64 * 1024 * 1024:
            raise FrameError(f"{self.addr} sent a frame length of {total}: not the RocketMQ remoting protocol")
        return self._read_exactly(total, deadline)

    def next_command(self, timeout: float | None = None) -> tuple[RemotingCommand, SerializeType]:
        """The next command and the serialize type it came in (``FrameError`` when the bytes are not a frame)."""
        command, serialize = decode(self.recv_frame(timeout))
        if self.recorder is not None:
            self.recorder.record("<", self.addr, command)
        return command, serialize

    def recv(self, timeout: float | None = None) -> RemotingCommand:
        """The next command."""
        return self.next_command(timeout)[0]

    def next_response(self, opaque: int, timeout: float | None = None) -> tuple[RemotingCommand, SerializeType]:
        """Wait for the response with ``opaque`` (and its serialize type), keeping requests from the target met on
        the way."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            command, serialize = self.next_command(max(0.0, deadline - time.monotonic()))
            if command.is_response and command.opaque == opaque:
                return command, serialize
            if not command.is_response:
                self.server_requests.append(command)

    def response_to(self, opaque: int, timeout: float | None = None) -> RemotingCommand:
        """Wait for the response with ``opaque``."""
        return self.next_response(opaque, timeout)[0]

    def request(self, command: RemotingCommand, serialize: int = SerializeType.JSON,
                timeout: float | None = None) -> RemotingCommand:
        """Send ``command`` and return its response (``TimeoutError`` if none comes in time)."""
        self.send(command, serialize)
        return self.next_response(command.opaque, timeout)[0]

    def request_all(self, commands: Sequence[RemotingCommand], wait: Callable[[], float], window: int = 32) -> None:
        """Send ``commands`` ``window`` at a time, each window's answers read before the next goes out, in any order
        (4.9.8 runs admin requests on a pool of threads, so answers overtake each other). ``wait()`` gives how long
        the next read may wait (it may raise ``TimeoutError`` to stop); a window saves a round trip per command."""
        for start in range(0, len(commands), window):
            batch = commands[start:start + window]
            for command in batch:
                self.send(command)
            pending = {command.opaque for command in batch}
            while pending:
                answer = self.recv(wait())
                if answer.is_response:
                    pending.discard(answer.opaque)
                else:
                    self.server_requests.append(answer)

    def oneway(self, command: RemotingCommand, serialize: int = SerializeType.JSON) -> None:
        self.send(attrs.evolve(command, flag=command.flag | RPC_ONEWAY_FLAG), serialize)

    def wait_request(self, code: int, timeout: float | None = None) -> RemotingCommand | None:
        """The first request with ``code`` the target sends on this connection within ``timeout`` (kept ones first),
        or None. Responses met meanwhile are dropped."""
        for index, kept in enumerate(self.server_requests):
            if kept.code == code:
                return self.server_requests.pop(index)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                command, _ = self.next_command(remaining)
            except TimeoutError:
                return None
            if not command.is_response:
                if command.code == code:
                    return command
                self.server_requests.append(command)

    def closed_by_peer(self, timeout: float | None = None) -> bool:
        """True once the peer closes the connection within ``timeout``; frames meanwhile are skipped."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                self.sock.settimeout(remaining)
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return False
            except OSError:
                return True
            if not chunk:
                return True

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
