"""Remoting commands and the in-process network that carries them.

A ``RemotingCommand`` is what crosses the wire (4.9.8 ``RemotingCommand``; WIRE-1..6): code, language, version,
opaque, flag, remark, extFields (text values) and a body. Servers (name server, broker) implement ``Server.handle`` —
a request in, a response out (or ``None`` when it answers later through the channel, or the request was oneway) — so a
TCP transport only has to encode and decode frames.

``Network`` is the simulated transport: every delivery is a timer on the runtime (``latency_ms`` each way), and a
``Faults`` table (``refimpl.faults``) can fail, drop, delay, duplicate or disconnect any request by target node,
request code and client.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol, overload

import attrs

from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.faults import NO_ACTIONS, Faults
from rocketspec.refimpl.runtime import Future, Runtime
from rocketspec.spec.protocol import (
    RPC_ONEWAY_FLAG,
    RPC_RESPONSE_FLAG,
    VERSION_V4_9_8,
    LanguageCode,
    RequestCode,
    ResponseCode,
)


class RemotingError(Exception):
    """A request did not get a response: the transport failed (the client may retry)."""


class RemotingConnectError(RemotingError):
    pass


class RemotingSendRequestError(RemotingError):
    pass


class RemotingTimeoutError(RemotingError):
    pass


class HeaderError(Exception):
    """A request header field is missing or malformed (the server answers SYSTEM_ERROR with this text)."""


JAVA_HEADER_PACKAGE = "org.apache.rocketmq.common.protocol.header."


def java_null_unboxed(header_class: str, getter: str, boxed: str, at: str | None = None) -> str:
    """The SYSTEM_ERROR remark of a header field Java's decoder left null and the processor then unboxed: Java 17's
    helpful NullPointerException text and, where known, the throwing frame ``RemotingHelper.exceptionSimpleDesc``
    appends (``at``: ``Class.method(File.java:line)`` of the 4.9.8 broker)."""
    text = (f'java.lang.NullPointerException: Cannot invoke "java.lang.{boxed}()" because the return value of '
            f'"{JAVA_HEADER_PACKAGE}{header_class}.{getter}()" is null')
    return text if at is None else f"{text}, {at}"


# A NullPointerException without message or stack: what a warm 4.9.8 JVM answers (HotSpot's
# OmitStackTraceInFastThrow preallocated exception) once a site threw often, and what an explicit ``throw new
# NullPointerException()`` inside a JDK collection gives.
JAVA_NPE = "java.lang.NullPointerException"
_JDK_CHM = "java.base/java.util.concurrent.ConcurrentHashMap"
# ``ConcurrentHashMap.get(null)`` / ``remove(null)`` as a cold 4.9.8 JVM answers them (Java 17 helpful NPE text and the
# throwing frame, ``RemotingHelper.exceptionSimpleDesc``).
JAVA_NPE_NULL_KEY_GET = (f'{JAVA_NPE}: Cannot invoke "Object.hashCode()" because "key" is null, '
                         f'{_JDK_CHM}.get(ConcurrentHashMap.java:936)')
JAVA_NPE_NULL_KEY_REMOVE = (f'{JAVA_NPE}: Cannot invoke "Object.hashCode()" because "key" is null, '
                            f'{_JDK_CHM}.replaceNode(ConcurrentHashMap.java:1111)')
# ``ConcurrentHashMap.put(null, v)``: an explicit ``throw new NullPointerException()``, never a helpful message.
JAVA_NPE_NULL_KEY_PUT = f"{JAVA_NPE}, {_JDK_CHM}.putVal(ConcurrentHashMap.java:1011)"
# ``new String(null)`` of a missing body (``RemotingSerializable.decode``-style callers).
JAVA_NPE_NULL_BODY_STRING = (f'{JAVA_NPE}: Cannot read the array length because "bytes" is null, '
                             'java.base/java.lang.String.<init>(String.java:1387)')


def java_npe(message: str, at: str) -> str:
    """``RemotingHelper.exceptionSimpleDesc`` of a NullPointerException with Java 17's helpful MESSAGE thrown AT
    (``Class.method(File.java:line)``)."""
    return f"{JAVA_NPE}: {message}, {at}"


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def header_text(value: object) -> str:
    """extFields values are text: booleans as Java prints them, numbers in decimal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    raise TypeError(f"a header value must be text, a number or a boolean, not {type(value).__name__}")


def make_fields(fields: Mapping[str, object]) -> dict[str, str]:
    """extFields from a mapping, leaving out ``None`` values as RocketMQ does."""
    return {k: header_text(v) for k, v in fields.items() if v is not None}


_opaque = itertools.count(1)


@attrs.frozen
class RemotingCommand:
    code: int
    ext_fields: dict[str, str] = attrs.field(factory=dict)
    body: bytes | None = None
    remark: str | None = None
    opaque: int = 0
    flag: int = 0
    language: int = LanguageCode.JAVA
    version: int = VERSION_V4_9_8

    @classmethod
    def request(
        cls,
        code: int,
        fields: Mapping[str, object] | None = None,
        body: bytes | None = None,
        *,
        oneway: bool = False,
        language: int = LanguageCode.JAVA,
        version: int = VERSION_V4_9_8,
    ) -> RemotingCommand:
        return cls(
            code=int(code),
            ext_fields=make_fields(fields or {}),
            body=body,
            opaque=next(_opaque),
            flag=RPC_ONEWAY_FLAG if oneway else 0,
            language=language,
            version=version,
        )

    def response(
        self,
        code: int = ResponseCode.SUCCESS,
        fields: Mapping[str, object] | None = None,
        body: bytes | None = None,
        remark: str | None = None,
    ) -> RemotingCommand:
        """The response to this request: same opaque, the response flag set."""
        return RemotingCommand(
            code=int(code),
            ext_fields=make_fields(fields or {}),
            body=body,
            remark=remark,
            opaque=self.opaque,
            flag=RPC_RESPONSE_FLAG,
            language=LanguageCode.JAVA,
            version=VERSION_V4_9_8,
        )

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY_FLAG)

    @overload
    def field(self, name: str) -> str | None: ...

    @overload
    def field(self, name: str, default: str) -> str: ...

    @overload
    def field(self, name: str, default: str | None) -> str | None: ...

    def field(self, name: str, default: str | None = None) -> str | None:
        return self.ext_fields.get(name, default)

    def require(self, name: str) -> str:
        value = self.ext_fields.get(name)
        if value is None:
            raise HeaderError(f"the custom field <{name}> is null")
        return value

    def int_field(self, name: str, default: int | None = None) -> int | None:
        value = self.ext_fields.get(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except ValueError:
            raise HeaderError(f"the custom field <{name}> is not a number: {value!r}") from None

    def decoded_int(self, name: str, bits: int = 32) -> int | None:
        """A boxed ``Integer`` (``bits=64``: ``Long``) header field as 4.9.8's ``decodeCommandCustomHeader`` leaves it:
        None when missing or when ``parseInt`` / ``parseLong`` refuses the text (the decoder logs and goes on)."""
        value = self.ext_fields.get(name)
        if value is None or not _JAVA_INT.fullmatch(value):
            return None
        number = int(value)
        return number if -(1 << (bits - 1)) <= number < (1 << (bits - 1)) else None

    def require_int(self, name: str) -> int:
        value = self.int_field(name)
        if value is None:
            raise HeaderError(f"the custom field <{name}> is null")
        return value

    def bool_field(self, name: str, default: bool = False) -> bool:
        value = self.ext_fields.get(name)
        if value is None:
            return default
        return value.lower() == "true"

    def code_name(self) -> str:
        try:
            return RequestCode(self.code).name if not self.is_response else ResponseCode(self.code).name
        except ValueError:
            return str(self.code)


class Channel(Protocol):
    """One connection as the server sees it."""

    remote_addr: str
    local_addr: str

    @property
    def active(self) -> bool: ...

    def send_response(self, response: RemotingCommand) -> None: ...

    def invoke_oneway(self, request: RemotingCommand) -> None: ...

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]: ...

    def close(self) -> None: ...


class Server(Protocol):
    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None: ...

    def channel_closed(self, channel: Channel) -> None: ...


class RequestHandler(Protocol):
    """A client's handler for requests a server sends it (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE)."""

    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None: ...


# ----------------------------------------------------------------------------------------------------------- network


class _Connection:
    """A connection between a client endpoint and a server endpoint on the in-process network."""

    def __init__(self, network: Network, client: _Endpoint, server: _Listener) -> None:
        self.network = network
        self.client = client
        self.server = server
        self.open = True
        self.server_side = _ServerChannel(self)
        self.client_side = _ClientChannel(self)
        # Requests the server sent to the client and waits on: opaque -> future.
        self.server_pending: dict[int, Future[RemotingCommand]] = {}

    def close(self) -> None:
        if not self.open:
            return
        self.open = False
        self.network._forget(self)
        for future in self.client.pending_on(self):
            future.set_exception(RemotingSendRequestError(f"connection to {self.server.addr} closed"))
        for future in list(self.server_pending.values()):
            future.set_exception(RemotingSendRequestError(f"connection to {self.client.addr} closed"))
        self.server_pending.clear()
        self.server.server.channel_closed(self.server_side)


class _ServerChannel:
    """The server's view of a connection: remote is the client."""

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self.remote_addr = conn.client.addr
        self.local_addr = conn.server.addr

    @property
    def active(self) -> bool:
        return self._conn.open

    @property
    def client_node(self) -> str:
        return self._conn.client.node

    def send_response(self, response: RemotingCommand) -> None:
        self._conn.network._deliver_response(self._conn, response, 0)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self._conn.network._server_to_client(self._conn, request, None)

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
        future: Future[RemotingCommand] = Future()
        self._conn.network._server_to_client(self._conn, request, future, timeout_ms)
        return future

    def close(self) -> None:
        self._conn.network.runtime.call_soon(self._conn.close)

    def __repr__(self) -> str:
        return f"<channel {self.remote_addr} -> {self.local_addr}>"


class _ClientChannel:
    """The client's view of a connection (passed to its handler for server-initiated requests)."""

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self.remote_addr = conn.server.addr
        self.local_addr = conn.client.addr

    @property
    def active(self) -> bool:
        return self._conn.open

    def send_response(self, response: RemotingCommand) -> None:
        conn = self._conn
        if not conn.open:
            return
        latency = conn.network.latency_ms

        def arrive() -> None:
            future = conn.server_pending.pop(response.opaque, None)
            if future is not None and conn.open:
                future.set_result(conn.network.wire(response))

        conn.network.runtime.call_later(latency, arrive)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        raise TypeError("clients send requests through their RemotingClient")

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
        raise TypeError("clients send requests through their RemotingClient")

    def close(self) -> None:
        self._conn.network.runtime.call_soon(self._conn.close)


class _Listener:
    def __init__(self, addr: str, node: str, server: Server) -> None:
        self.addr = addr
        self.node = node
        self.server = server


class _Endpoint:
    """A client endpoint: its address, node name, handler and outstanding requests."""

    def __init__(self, addr: str, node: str, handler: RequestHandler | None) -> None:
        self.addr = addr
        self.node = node
        self.handler = handler
        self.pending: dict[int, tuple[_Connection, Future[RemotingCommand]]] = {}

    def pending_on(self, conn: _Connection) -> list[Future[RemotingCommand]]:
        out = [f for opaque, (c, f) in list(self.pending.items()) if c is conn]
        for opaque in [o for o, (c, _) in self.pending.items() if c is conn]:
            del self.pending[opaque]
        return out


def _as_is(command: RemotingCommand) -> RemotingCommand:
    return command


class Network:
    """The in-process transport of a simulated or real cluster.

    Servers ``listen`` on an address; clients get a ``RemotingClient`` from ``client``. Each direction of each
    delivery takes ``latency_ms`` on the runtime's clock, plus any fault delay. ``wire``, when given, is applied to
    every command as it arrives (request or response, either way): a round trip through the frame codec makes the
    in-process network carry only what bytes on a socket carry (``Cluster(wire_codec=...)``).
    """

    def __init__(self, runtime: Runtime, events: EventLog | None = None, latency_ms: int = 1,
                 wire: Callable[[RemotingCommand], RemotingCommand] | None = None) -> None:
        self.runtime = runtime
        self.events = events
        self.latency_ms = latency_ms
        self.wire: Callable[[RemotingCommand], RemotingCommand] = wire if wire is not None else _as_is
        self.faults = Faults(runtime, events)
        self._listeners: dict[str, _Listener] = {}
        self._connections: dict[tuple[str, str], _Connection] = {}
        self._ports = itertools.count(40_001)

    # servers ------------------------------------------------------------------------------------------------------
    def listen(self, addr: str, node: str, server: Server) -> None:
        if addr in self._listeners:
            raise ValueError(f"address {addr} already in use")
        self._listeners[addr] = _Listener(addr, node, server)

    def unlisten(self, addr: str) -> None:
        """Stop a server: its address refuses connections and every open connection to it closes."""
        self._listeners.pop(addr, None)
        for key, conn in list(self._connections.items()):
            if key[1] == addr:
                conn.close()

    def node_of(self, addr: str) -> str | None:
        listener = self._listeners.get(addr)
        return listener.node if listener else None

    # clients ------------------------------------------------------------------------------------------------------
    def client(self, node: str, handler: RequestHandler | None = None, host: str = "127.0.0.1") -> RemotingClient:
        endpoint = _Endpoint(f"{host}:{next(self._ports)}", node, handler)
        return RemotingClient(self, endpoint)

    def disconnect_client(self, endpoint: _Endpoint) -> None:
        for key, conn in list(self._connections.items()):
            if key[0] == endpoint.addr:
                conn.close()

    def _forget(self, conn: _Connection) -> None:
        key = (conn.client.addr, conn.server.addr)
        if self._connections.get(key) is conn:
            del self._connections[key]

    def _connect(self, endpoint: _Endpoint, addr: str) -> _Connection:
        key = (endpoint.addr, addr)
        conn = self._connections.get(key)
        if conn is not None and conn.open:
            return conn
        listener = self._listeners.get(addr)
        if listener is None:
            raise RemotingConnectError(f"connect to {addr} failed")
        conn = _Connection(self, endpoint, listener)
        self._connections[key] = conn
        return conn

    # deliveries ---------------------------------------------------------------------------------------------------
    def _send(
        self,
        endpoint: _Endpoint,
        addr: str,
        request: RemotingCommand,
        timeout_ms: int | None,
        daemon: bool,
    ) -> Future[RemotingCommand]:
        future: Future[RemotingCommand] = Future()
        try:
            conn = self._connect(endpoint, addr)
        except RemotingConnectError as error:
            # Connection failures surface asynchronously, as a real client sees them.
            failure = error
            self.runtime.call_soon(lambda: future.set_exception(failure))
            return future
        oneway = request.is_oneway
        target = conn.server.node
        rules = self.faults.decide(target, request.code, endpoint.node) if self.faults.armed else []
        if rules:
            actions: set[str] | frozenset[str] = {r.action for r in rules}
            extra = sum(r.delay_ms for r in rules if r.action == "delay")
        else:
            actions, extra = NO_ACTIONS, 0
        if not oneway:
            endpoint.pending[request.opaque] = (conn, future)
            if timeout_ms is not None:
                timer = self.runtime.call_later(timeout_ms, lambda: self._timeout(endpoint, request, addr, timeout_ms),
                                                daemon=daemon)
                future.add_done_callback(lambda _f: timer.cancel())
        else:
            self.runtime.call_soon(lambda: future.set_result(request))
        if "disconnect" in actions:
            self.runtime.call_later(self.latency_ms + extra, conn.close)
            return future
        # A fail rule answers in the server's place, so never a frame the server takes for a response (WIRE-7).
        fail = next((r for r in rules if r.action == "fail"), None) if not request.is_response else None
        if fail is not None:
            if not oneway:
                response = request.response(fail.response_code, remark=fail.remark)
                self.runtime.call_later(2 * self.latency_ms + extra, lambda: self._arrive_response(conn, response))
            return future
        if "drop" in actions:
            return future
        copies = 2 if "duplicate" in actions else 1
        drop_response = "drop_response" in actions
        for _ in range(copies):
            self.runtime.call_later(
                self.latency_ms + extra,
                lambda: self._arrive_request(conn, request, extra, drop_response),
                daemon=daemon,
            )
        return future

    def _timeout(self, endpoint: _Endpoint, request: RemotingCommand, addr: str, timeout_ms: int) -> None:
        entry = endpoint.pending.pop(request.opaque, None)
        if entry is not None:
            entry[1].set_exception(RemotingTimeoutError(f"wait response on {addr} timeout {timeout_ms} ms"))

    def _arrive_request(self, conn: _Connection, request: RemotingCommand, extra: int, drop_response: bool) -> None:
        if not conn.open:
            return
        arrived = self.wire(request)
        if arrived.is_response:
            # processMessageReceived: a frame with the response bit is the answer to one of the server's own requests
            # under that opaque, never a request to process; one that matches nothing is dropped (WIRE-7).
            future = conn.server_pending.pop(arrived.opaque, None)
            if future is not None:
                future.set_result(arrived)
            return
        response = conn.server.server.handle(arrived, conn.server_side)
        if response is not None and not request.is_oneway and not drop_response:
            self._deliver_response(conn, response, extra)

    def _deliver_response(self, conn: _Connection, response: RemotingCommand, extra: int) -> None:
        if conn.open:
            self.runtime.call_later(self.latency_ms + extra, lambda: self._arrive_response(conn, response))

    def _arrive_response(self, conn: _Connection, response: RemotingCommand) -> None:
        if not conn.open:
            return
        # The frame is read whether or not a caller still waits for it; a late or second one is then dropped (WIRE-5).
        arrived = self.wire(response)
        entry = conn.client.pending.pop(response.opaque, None)
        if entry is not None:
            entry[1].set_result(arrived)

    def _server_to_client(
        self,
        conn: _Connection,
        request: RemotingCommand,
        future: Future[RemotingCommand] | None,
        timeout_ms: int = 3000,
    ) -> None:
        if not conn.open:
            if future is not None:
                self.runtime.call_soon(lambda: future.set_exception(RemotingSendRequestError("channel closed")))
            return
        if future is not None:
            conn.server_pending[request.opaque] = future
            timer = self.runtime.call_later(timeout_ms, lambda: self._server_timeout(conn, request), daemon=True)
            future.add_done_callback(lambda _f: timer.cancel())

        def arrive() -> None:
            handler = conn.client.handler
            if not conn.open or handler is None:
                return
            response = handler.handle(self.wire(request), conn.client_side)
            if response is not None and not request.is_oneway:
                conn.client_side.send_response(response)

        self.runtime.call_later(self.latency_ms, arrive)

    def _server_timeout(self, conn: _Connection, request: RemotingCommand) -> None:
        future = conn.server_pending.pop(request.opaque, None)
        if future is not None:
            future.set_exception(RemotingTimeoutError("server request timed out"))


class RemotingClient:
    """A client's side of the network: requests to server addresses, a handler for requests servers send back."""

    def __init__(self, network: Network, endpoint: _Endpoint) -> None:
        self.network = network
        self._endpoint = endpoint

    @property
    def addr(self) -> str:
        return self._endpoint.addr

    @property
    def node(self) -> str:
        return self._endpoint.node

    def set_handler(self, handler: RequestHandler) -> None:
        self._endpoint.handler = handler

    def waiting(self, opaque: int) -> bool:
        """Whether a caller still waits for the response to the request sent under ``opaque`` (the response table)."""
        return opaque in self._endpoint.pending

    def invoke(self, addr: str, request: RemotingCommand, timeout_ms: int, *, daemon: bool = False
               ) -> Future[RemotingCommand]:
        """Send a request; the future gets the response or a ``RemotingError``.

        ``daemon`` marks waits that are housekeeping (long-polling pulls) so they don't keep a simulation busy.
        """
        if request.is_oneway:
            raise ValueError("use invoke_oneway for oneway requests")
        return self.network._send(self._endpoint, addr, request, timeout_ms, daemon)

    def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        if not request.is_oneway:
            request = attrs.evolve(request, flag=request.flag | RPC_ONEWAY_FLAG)
        self.network._send(self._endpoint, addr, request, None, False)

    def close(self) -> None:
        """Close every connection (a clean shutdown or a crash: servers see the channels close)."""
        self.network.disconnect_client(self._endpoint)


def dispatch(handlers: Mapping[int, Callable[[RemotingCommand, Any], RemotingCommand | None]],
             request: RemotingCommand, channel: Any, *, answer_unknown: bool = True) -> RemotingCommand | None:
    """Route a request to its handler, the way every server answers.

    Unknown codes get REQUEST_CODE_NOT_SUPPORTED (a broker's processor table), or no answer at all with
    ``answer_unknown`` false (a 4.9.8 name server: its DefaultRequestProcessor returns null for them); missing or
    malformed header fields SYSTEM_ERROR with RocketMQ's text,
    and an unexpected failure SYSTEM_ERROR naming it (a malformed request never takes a server down). Oneway requests
    get no response whatever happens.
    """
    handler = handlers.get(request.code)
    if handler is None and not answer_unknown:
        return None
    response: RemotingCommand | None
    if handler is None:
        response = request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                    remark=f" request type {request.code} not supported")
    else:
        try:
            response = handler(request, channel)
        except HeaderError as error:
            response = request.response(ResponseCode.SYSTEM_ERROR, remark=str(error))
        except Exception as error:
            response = request.response(ResponseCode.SYSTEM_ERROR, remark=f"{type(error).__name__}: {error}")
    return None if request.is_oneway else response
