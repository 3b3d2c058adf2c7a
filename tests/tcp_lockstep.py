"""What the socket server's lockstep machine (``test_stateful_tcp.py``) is made of: its raw client, the frames it writes
by hand, the server limits its runs draw, the log of what the served nodes did, and its connections and calls.

The raw client is a plain blocking socket (no ``FrameReader``: a bug in the server's framing cannot hide behind the
same bug in the client) that splits what it reads into frames by their length prefix and keeps each frame's bytes
whole, for the spec's ``parse_frame`` to read. Every wait is bounded.
"""

from __future__ import annotations

import collections
import json
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from rocketspec.refimpl.faults import FaultRule
from rocketspec.refimpl.limits import ServerLimits
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import remoting as wire
from rocketspec.spec.protocol import MAX_FRAME_BYTES, Executor, ResponseCode, SerializeType, split_addr

#: How long a socket operation of the test may block (a server that stops reading cannot hang the run).
SOCKET_TIMEOUT_S = 2.0
#: The longest a rule waits for the server to settle (only a broken server makes it wait that long).
SETTLE_S = 3.0


def frame_of(kind: int, header: bytes, body: bytes = b"") -> bytes:
    """A frame written by hand: length, mark (serialize type and header length), header, body (WIRE-1)."""
    return struct.pack(">ii", 4 + len(header) + len(body), (kind << 24) | len(header)) + header + body


def odd_json_request(code: int, opaque: int, flag: int, remark: str) -> bytes:
    """A request as an odd peer writes its JSON header, which a 4.9.8 peer still reads as ``code`` under ``opaque``
    with ``flag`` (WIRE-2): numbers as text and booleans, the language name in another case, an ext field that is
    a number, a null remark, unknown fields."""
    header = {"code": str(code), "language": "jAvA", "version": True, "opaque": str(opaque), "flag": str(flag),
              "remark": None, "extFields": {"note": remark, "n": 1.50, "gone": None}, "serializeTypeCurrentRPC": 7}
    return frame_of(SerializeType.JSON, json.dumps(header, ensure_ascii=False).encode())


def odd_binary_request(code: int, opaque: int, flag: int, remark: str) -> bytes:
    """A request with a binary header (WIRE-3) carrying a remark, and an ext field whose value is empty."""
    text = remark.encode()
    key, value = b"note", text
    fields = struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value
    fields += struct.pack(">h", 1) + b"e" + struct.pack(">i", 0)
    header = struct.pack(">hbhii", code, 0, 409, opaque, flag) + struct.pack(">i", len(text)) + text \
        + struct.pack(">i", len(fields)) + fields
    return frame_of(SerializeType.ROCKETMQ, header)


#: Bytes a 4.9.8 peer refuses as a frame, closing the connection (WIRE-1, WIRE-6): a length over 16 MiB, a length
#: under a mark's, a header length past the frame, an unknown serialize type, JSON headers that do not parse or whose
#: fields cannot be cast, a truncated binary header.
REFUSED_FRAMES: dict[str, bytes] = {
    "oversized": struct.pack(">ii", MAX_FRAME_BYTES + 1, 0),
    "oversized by far": struct.pack(">ii", 17 * 2**20, 0) + b"{}",
    "under a mark": struct.pack(">i", 2) + b"ab",
    "header past the frame": struct.pack(">ii", 4, 12),
    "serialize type 2": frame_of(2, b"{}"),
    "not JSON": frame_of(0, b'{"code": NaN}'),
    "not an object": frame_of(0, b"[1]"),
    "code out of int": frame_of(0, b'{"code": 3000000000}'),
    "extFields not an object": frame_of(0, b'{"extFields": [1]}'),
    "language 99": frame_of(0, b'{"language": 99}'),
    "binary truncated": frame_of(1, struct.pack(">hbhii", 26, 0, 409, 7, 0) + struct.pack(">i", 9)),
}
for _name, _data in REFUSED_FRAMES.items():
    assert isinstance(wire.parse_frame(_data), wire.Refused), _name


# ------------------------------------------------------------------------------------------------------ limits
def _every(value: int) -> dict[Executor, int]:
    return {executor: value for executor in Executor}


@attrs.frozen
class Profile:
    """The server limits of a run (``ServerLimits``) and what its rules may do with them: ``faults`` (fault injection
    on single requests), ``manual_sweep`` (the guard's periodic sweep is stopped: the test sweeps, so an idle or
    slow connection is closed only where a rule says), ``rcvbuf`` (the raw clients' receive buffer: small, the
    server meets backpressure after a few answers)."""

    name: str
    limits: ServerLimits
    faults: bool = True
    manual_sweep: bool = False
    rcvbuf: int = 0


#: The limits the runs draw from (not configuration of RocketMQ's: rocketspec's own ``ServerLimits``, drawn beside).
PROFILES: tuple[Profile, ...] = (
    Profile("default", ServerLimits()),
    # One request per executor queue, two in flight per connection, a send taken after 40 ms answered busy.
    Profile("queues", ServerLimits(queue_capacity=_every(1), max_requests_in_flight=2,
                                   max_wait_ms={Executor.SEND: 40}), faults=False),
    Profile("idle", ServerLimits(idle_close_s=0.15, frame_deadline_s=0), manual_sweep=True),
    # A frame must arrive whole within 0.1 s; a 16 KiB byte budget (8 KiB for queued requests, 4 KiB for partial
    # frames).
    Profile("slow", ServerLimits(frame_deadline_s=0.1, idle_close_s=0, buffer_limit_bytes=16 * 1024),
            faults=False, manual_sweep=True),
    Profile("unread", ServerLimits(write_high_water=1024, write_low_water=512, socket_send_buffer=4096),
            rcvbuf=4096),
    Profile("connections", ServerLimits(max_connections=3)),
)


# ------------------------------------------------------------------------------------------------------ the log
class ServerLog:
    """What the served nodes did, as they did it (appended on the socket loop, read by the test after a barrier)."""

    def __init__(self) -> None:
        self.actions: collections.deque[wire.Action] = collections.deque()
        self.lock = threading.Lock()

    def add(self, *actions: wire.Action) -> None:
        with self.lock:
            self.actions.extend(actions)

    def take(self) -> list[wire.Action]:
        with self.lock:
            taken = list(self.actions)
            self.actions.clear()
        return taken


# ------------------------------------------------------------------------------------------------------ client
class RawConnection:
    """One raw TCP connection of the test to ``addr``: writes bytes (in pieces if asked), reads whole frames."""

    def __init__(self, addr: str, rcvbuf: int = 0) -> None:
        self.addr = addr
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(SOCKET_TIMEOUT_S)
        self.sock.connect(split_addr(addr))
        host, port = self.sock.getsockname()[:2]
        #: The address the server knows this connection by (``TcpChannel.remote_addr``).
        self.local = f"{host}:{port}"
        self.buffer = bytearray()
        self.eof = False
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # the server closed it as it accepted it (max_connections)
            self.eof = True
        self.garbage: str | None = None

    def write(self, data: bytes, cuts: Iterable[int] = (), between: Callable[[], None] | None = None) -> None:
        """Write ``data``, cut at ``cuts`` into pieces; ``between`` runs after each piece but the last."""
        at = 0
        for cut in [*sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]:
            try:
                self.sock.sendall(data[at:cut])
            except OSError:
                self.eof = True
                return
            at = cut
            if cut < len(data) and between is not None:
                between()

    def read(self) -> list[bytes]:
        """The whole frames that arrived (each with its length prefix), without waiting for more."""
        while not self.eof:
            try:
                ready, _, _ = select.select([self.sock], [], [], 0)
                if not ready:
                    break
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                break
            self.buffer += chunk
        frames = []
        while len(self.buffer) >= 4:
            (length,) = struct.unpack_from(">i", self.buffer)
            if not 4 <= length <= MAX_FRAME_BYTES:
                self.garbage = f"the server wrote a frame length of {length}"
                self.buffer.clear()
                break
            if len(self.buffer) < 4 + length:
                break
            frames.append(bytes(self.buffer[:4 + length]))
            del self.buffer[:4 + length]
        return frames

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def wait_readable(connections: Iterable[RawConnection], timeout: float) -> None:
    """Return once one of ``connections`` has bytes (or EOF) to read, or after ``timeout``."""
    socks = [c.sock for c in connections if not c.eof]
    if socks:
        try:
            select.select(socks, [], [], timeout)
        except (OSError, ValueError):
            pass
    else:
        time.sleep(timeout)


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.002) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


def first_answer(responses: list[wire.Frame]) -> tuple[int, str | None] | None:
    return (responses[0].code, responses[0].remark) if responses else None


def one_of(actual: Any, allowed: Mapping[Any, Any] | Iterable[Any]) -> Any:
    """The value the spec allows that the implementation shows, or the first one it allows (where the spec allows
    several outcomes, the projection takes the implementation's if it is one of them)."""
    options = list(allowed)
    return actual if actual in options else options[0]


# ------------------------------------------------------------------------------------------------------ calls
@attrs.define(eq=False)
class Conn:
    """One raw connection of the test, and what the spec says of it: closed by a rule (and why)."""

    index: int
    target: str  # "broker", "vip" or "namesrv"
    raw: RawConnection
    closed_by: str = ""
    #: A refused frame was read on it: the server counts it (``frame_errors``).
    refused_frame: bool = False
    #: The codes of the requests the server sent on it.
    server_requests: list[int] = attrs.Factory(list)
    #: A request was written on it while open: its node knows it (and its observers hear when it closes).
    spoke: bool = False
    seen_closed: bool = False


@attrs.define(eq=False)
class Call:
    """One request of the test: its slot in the spec, its connection and frame, what the network does to it
    (``delivered`` copies reach the server, ``lost`` answers are lost on the way back) and what came back."""

    slot: int
    conn: Conn
    what: str
    kind: str
    request: wire.Frame
    rule: FaultRule | None
    delivered: int
    lost: int
    #: The answer an oracle (or the injected fault) decides, and others the spec allows in its place.
    expected: tuple[int, str | None] | None = None
    allowed: tuple[Any, ...] = ()
    waiting: bool = True
    copies: int = 0
    answers: int = 0
    responses: list[wire.Frame] = attrs.Factory(list)
    commands: list[RemotingCommand] = attrs.Factory(list)
    handed: int = 0
    #: The messages a send carried, bodies and properties as the spec reads them (to find them again in pulls).
    sent: tuple[tuple[bytes, dict[str, str]], ...] = ()
    #: Held in a stalled server's queue at least this long (ms): answered as WIRE-15's fast failure says.
    stalled_ms: int | None = None
    #: It may wait in its queue past its executor's limit (answered SYSTEM_BUSY then, WIRE-15).
    may_expire: bool = False
    #: Copies processed whose answer the node gives later.
    held: int = 0


def flow_control(frame: wire.Frame) -> bool:
    """An answer flow control gives in the server's place (WIRE-15): a full queue's, or one that waited too long."""
    return frame.code == ResponseCode.SYSTEM_BUSY and (frame.remark or "").startswith(
        ("[OVERLOAD]", "[TIMEOUT_CLEAN_QUEUE]"))
