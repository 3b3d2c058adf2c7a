"""The TCP transport: asyncio listeners that carry remoting frames between real clients and sans-IO servers.

Sockets live on an asyncio loop in its own thread (``WireLoop``); the name server and brokers live on the
reference implementation's runtime. A frame that arrives is decoded on the socket thread and handed to the runtime
loop, where the server's ``handle`` maps it to a response; writes go back through ``call_soon_threadsafe``, so
each component keeps its single-threaded state and the transport only moves commands.

One bad connection never disturbs another: a frame that cannot be decoded or is over 16 MiB closes its own connection
(as Netty's decoder does in RocketMQ); an unknown code or a malformed header gets an error response from the server's
``dispatch``; a failure inside the transport is logged and closes that connection only.

Faults (``remoting.Faults``) are consulted for every request by node, request code and client address, exactly as on
the in-process network: ``fail`` answers an error code, ``delay`` holds the request, ``drop`` loses it,
``drop_response`` processes it silently, ``duplicate`` processes it twice, ``disconnect`` closes the connection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from rocketspec.refimpl.frame import FrameError, FrameReader, decode, encode
from rocketspec.refimpl.remoting import (
    Faults,
    RemotingCommand,
    RemotingSendRequestError,
    RemotingTimeoutError,
    Server,
)
from rocketspec.refimpl.runtime import Future, Runtime
from rocketspec.spec.protocol import ResponseCode, SerializeType

log = logging.getLogger("rocketspec.tcp")

_connection_ids = itertools.count(1)
_MAX_UNANSWERED = 65_536
#: Answers a connection may leave unread in the server's buffer before it is closed (Netty's high water mark role).
MAX_UNSENT_BYTES = 64 * 1024 * 1024


@attrs.frozen
class WireFrame:
    """One command seen on a connection: ``from_client`` is the direction (client to server, or back)."""

    connection: int
    node: str
    client_addr: str
    server_addr: str
    from_client: bool
    command: RemotingCommand
    ts_ms: int


#: Bind addresses meaning "every interface": clients must be given this machine's address instead.
WILDCARD_HOSTS = ("", "0.0.0.0", "::")


def split_addr(addr: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) as (host, port); ``ValueError`` when it is not one."""
    host, sep, port = addr.rpartition(":") if isinstance(addr, str) else ("", "", "")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT, not {addr!r}")
    return host, int(port)


def this_machine_host() -> str:
    """The address other machines reach this one at, for listeners bound to a wildcard (loopback if unknown)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


class WireObserver(Protocol):
    """Shown every frame on the runtime loop; ``connection_closed`` (optional) hears of closed connections."""

    def __call__(self, frame: WireFrame) -> None: ...


class WireLoop:
    """An asyncio event loop running in a daemon thread, for the sockets."""

    def __init__(self, name: str = "rocketspec-wire") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def run(self, coro: Any, timeout: float | None = 10.0) -> Any:
        """Run a coroutine on the loop from another thread and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[[], Any]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)


class TcpChannel:
    """A connection as the server sees it (``remoting.Channel``); every method may be called from the runtime loop."""

    def __init__(self, endpoint: TcpEndpoint, transport: asyncio.Transport) -> None:
        self.endpoint = endpoint
        self.id = next(_connection_ids)
        self._transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        sock = transport.get_extra_info("sockname") or ("?", 0)
        self.remote_addr = f"{peer[0]}:{peer[1]}"
        self.local_addr = f"{sock[0]}:{sock[1]}"
        # Requests the broker starts use the type the client spoke last; a response, its own request's type.
        self.serialize = SerializeType.JSON
        self._serialize_of: dict[int, SerializeType] = {}
        self._lost_answers: set[int] = set()
        self._open = True
        # Set on the socket thread the moment the connection is gone, so that the runtime loop drops the requests it
        # still has queued from it instead of answering nobody (``_open`` follows on the loop, in order).
        self.lost = False
        self._pending: dict[int, Future[RemotingCommand]] = {}
        self.server: Server | None = None

    @property
    def active(self) -> bool:
        return self._open

    @property
    def client_node(self) -> str:
        return self.remote_addr

    def _write(self, command: RemotingCommand, serialize: SerializeType) -> None:
        if not self._open:
            return
        self.endpoint.observe(self, command, from_client=False)
        try:
            data = encode(command, serialize)
        except Exception as error:  # too large, or a value the header cannot hold: this answer is lost, not the loop
            log.warning("%s: cannot encode %s: %s", self.endpoint.node, command.code_name(), error)
            return
        self.endpoint.wire.call(lambda: self._send_bytes(data))

    def _send_bytes(self, data: bytes) -> None:
        """Socket thread: write, unless the client stopped reading (its unsent answers would grow without bound)."""
        transport = self._transport
        if transport.is_closing():
            return
        transport.write(data)
        if transport.get_write_buffer_size() > self.endpoint.max_unsent_bytes:
            log.warning("%s: closing %s: more than %d bytes of answers it does not read", self.endpoint.node,
                        self.remote_addr, self.endpoint.max_unsent_bytes)
            self.lost = True
            transport.abort()

    def send_response(self, response: RemotingCommand) -> None:
        serialize = self._serialize_of.pop(response.opaque, self.serialize)
        if response.opaque in self._lost_answers:  # a drop_response fault, also for an answer given later (long poll)
            self._lost_answers.discard(response.opaque)
            return
        self._write(response, serialize)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self._write(request, self.serialize)

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
        future: Future[RemotingCommand] = Future()
        if not self._open:
            future.set_exception(RemotingSendRequestError(f"channel to {self.remote_addr} closed"))
            return future
        self._pending[request.opaque] = future
        timer = self.endpoint.runtime.call_later(timeout_ms, lambda: self._expire(request.opaque, timeout_ms),
                                                 daemon=True)
        future.add_done_callback(lambda _f: timer.cancel())
        self._write(request, self.serialize)
        return future

    def _expire(self, opaque: int, timeout_ms: int) -> None:
        future = self._pending.pop(opaque, None)
        if future is not None:
            future.set_exception(RemotingTimeoutError(f"wait response on {self.remote_addr} timeout {timeout_ms} ms"))

    def response_arrived(self, response: RemotingCommand) -> None:
        future = self._pending.pop(response.opaque, None)
        if future is not None:
            future.set_result(response)

    def close(self) -> None:
        transport = self._transport
        self.endpoint.wire.call(transport.close)

    def closed(self) -> None:
        """The socket is gone (runtime loop): fail waits, tell the server the client left."""
        if not self._open:
            return
        self._open = False
        self.endpoint.observe_closed(self)
        for future in list(self._pending.values()):
            future.set_exception(RemotingSendRequestError(f"channel to {self.remote_addr} closed"))
        self._pending.clear()
        if self.server is not None:
            self.server.channel_closed(self)

    def __repr__(self) -> str:
        return f"<tcp channel {self.remote_addr} -> {self.endpoint.node}@{self.local_addr}>"


class _Protocol(asyncio.Protocol):
    def __init__(self, endpoint: TcpEndpoint) -> None:
        self.endpoint = endpoint
        self.reader = FrameReader()
        self.channel: TcpChannel | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.channel = TcpChannel(self.endpoint, transport)
        self.endpoint.connections.add(self.channel)

    def data_received(self, data: bytes) -> None:
        channel = self.channel
        if channel is None:
            return
        error: Exception | None = None
        try:
            frames = self.reader.feed(data)
        except FrameError as failure:
            frames, error = [], failure
        dispatched = False
        for frame in frames:
            try:
                command, serialize = decode(frame)
            except FrameError as failure:
                error = failure
                break
            except Exception as failure:  # a decoder bug is still this connection's problem only
                log.exception("%s: decoding a frame from %s failed", self.endpoint.node, channel.remote_addr)
                error = failure
                break
            self.endpoint.runtime.call_soon(lambda c=command, s=serialize: self.endpoint.arrived(channel, c, s))
            dispatched = True
        error = error or self.reader.broken
        if error is not None:
            # Framing is lost: nothing after this can be trusted on this connection, and only on this one.
            log.info("%s: closing %s: %s", self.endpoint.node, channel.remote_addr, error)
            self.endpoint.frame_errors += 1
            channel._transport.pause_reading()
            if dispatched:
                # Close behind the answers to the whole frames that came first (the loop runs them in order).
                self.endpoint.runtime.call_soon(channel.close)
            else:
                channel._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        channel = self.channel
        if channel is None:
            return
        channel.lost = True
        self.endpoint.connections.discard(channel)
        self.endpoint.runtime.call_soon(channel.closed)


class TcpEndpoint:
    """One listening address serving one node (the name server or a broker) over TCP.

    ``resolve`` returns the node's current server (a restarted broker is a new object), or ``None`` while it is
    stopped: connections are then closed as they speak, as a client of a dead broker sees it.
    """

    def __init__(
        self,
        node: str,
        resolve: Callable[[], Server | None],
        wire: WireLoop,
        *,
        observer: WireObserver | None = None,
    ) -> None:
        self.node = node
        self.resolve = resolve
        self.wire = wire
        self._runtime: Runtime | None = None
        self.faults: Faults | None = None
        self.observer = observer
        self.connections: set[TcpChannel] = set()
        self.frame_errors = 0
        self.max_unsent_bytes = MAX_UNSENT_BYTES
        self.port = 0
        # The main listener, then any extra one on the same node (a broker's VIP channel at port - 2).
        self._servers: list[asyncio.base_events.Server] = []

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError(f"{self.node} is not serving")
        return self._runtime

    async def _bind(self, host: str, port: int) -> int:
        server = await self.wire.loop.create_server(lambda: _Protocol(self), host, port, reuse_address=True,
                                                    start_serving=False)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    def bind(self, host: str, port: int) -> int:
        """Bind the listening socket (not serving yet); returns the port (an ephemeral one for 0)."""
        self.port = self.wire.run(self._bind(host, port))
        return self.port

    def bind_also(self, host: str, port: int) -> int:
        """Bind one more listening socket for the same node (a broker's VIP channel); returns its port."""
        return self.wire.run(self._bind(host, port))

    def unbind(self) -> None:
        """Close every listening socket bound so far (before serving: a port pair that did not fit)."""
        self.wire.run(self._close())
        self._servers.clear()
        self.port = 0

    def serve(self, runtime: Runtime, faults: Faults | None = None) -> None:
        """Start accepting connections: requests are handled on ``runtime``'s loop, ``faults`` consulted first."""
        assert self._servers, "bind first"
        self._runtime = runtime
        self.faults = faults
        for server in self._servers:
            self.wire.run(server.start_serving())

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for channel in list(self.connections):
            channel._transport.close()

    def close(self) -> None:
        """Stop listening and close every connection."""
        self.wire.run(self._close())

    def drop_connections(self) -> None:
        """Close every open connection (the node stopped); the listener stays."""
        for channel in list(self.connections):
            channel.close()

    # runtime loop ---------------------------------------------------------------------------------------------------
    def observe(self, channel: TcpChannel, command: RemotingCommand, *, from_client: bool) -> None:
        if self.observer is None:
            return
        try:
            self.observer(WireFrame(channel.id, self.node, channel.remote_addr, channel.local_addr, from_client,
                                    command, self.runtime.now_ms()))
        except Exception:  # an observer's bug must not take the server down
            log.exception("wire observer failed")

    def observe_closed(self, channel: TcpChannel) -> None:
        closed = getattr(self.observer, "connection_closed", None)
        if closed is None:
            return
        try:
            closed(channel.id, self.runtime.now_ms())
        except Exception:
            log.exception("wire observer failed")

    def arrived(self, channel: TcpChannel, command: RemotingCommand, serialize: SerializeType) -> None:
        if not channel.active or channel.lost:
            return
        self.observe(channel, command, from_client=True)
        if command.is_response:
            channel.response_arrived(command)
            return
        channel.serialize = serialize
        if not command.is_oneway:
            channel._serialize_of[command.opaque] = serialize
            if len(channel._serialize_of) > _MAX_UNANSWERED:  # requests a fault dropped are never answered
                channel._serialize_of.pop(next(iter(channel._serialize_of)))
        server = self.resolve()
        if server is None:
            channel.close()
            return
        channel.server = server
        rules = self.faults.decide(self.node, command.code, channel.remote_addr) if self.faults and \
            self.faults.rules else []
        if not rules:
            self._process(server, channel, command, respond=True)
            return
        actions = {rule.action for rule in rules}
        if "disconnect" in actions:
            channel.close()
            return
        delay = sum(rule.delay_ms for rule in rules if rule.action == "delay")
        fail = next((rule for rule in rules if rule.action == "fail"), None)

        def proceed() -> None:
            if not channel.active:
                return
            if fail is not None:
                if not command.is_oneway:
                    channel.send_response(command.response(fail.response_code, remark=fail.remark))
                return
            if "drop" in actions:
                return
            copies = 2 if "duplicate" in actions else 1
            for _ in range(copies):
                self._process(server, channel, command, respond="drop_response" not in actions)

        if delay:
            self.runtime.call_later(delay, proceed)
        else:
            proceed()

    def _process(self, server: Server, channel: TcpChannel, command: RemotingCommand, *, respond: bool) -> None:
        if not respond and not command.is_oneway:
            channel._lost_answers.add(command.opaque)
        try:
            response = server.handle(command, channel)
        except Exception:  # dispatch already answers handler errors; this is a bug in the server itself
            log.exception("%s: %s failed", self.node, command.code_name())
            response = command.response(ResponseCode.SYSTEM_ERROR, remark="internal server error")
        if response is not None and not command.is_oneway:
            channel.send_response(response)
