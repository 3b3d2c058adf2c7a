"""The TCP transport: asyncio listeners that carry remoting frames between real clients and sans-IO servers.

Sockets live on an asyncio loop in its own thread (``wireloop.WireLoop``), and so do the name server and brokers: a
served cluster's runtime is a ``wireloop.WireRuntime`` on that loop. A frame that arrives is decoded, queued for its
executor (``workqueue``) and run by the server's ``handle`` in a later turn of the same loop, whose answer is written
to the socket at once: a request never changes threads. Each component keeps its single-threaded state and the
transport only moves commands.

A broker's VIP channel (its port - 2, ``bind_also``) serves every request as its main port does but a pull, which
only the main port has a processor for: the default processor answers it as an unknown code (WIRE-14).

One bad connection never disturbs another: a frame that cannot be decoded or is over 16 MiB closes its own connection
(as Netty's decoder does in RocketMQ); an unknown code or a malformed header gets an error response from the server's
``dispatch``; a failure inside the transport is logged and closes that connection only.

Faults (``refimpl.faults``) are consulted for every request by node, request code and client address, exactly as on
the in-process network: ``fail`` answers an error code, ``delay`` holds the request, ``drop`` loses it,
``drop_response`` processes it silently, ``duplicate`` processes it twice, ``disconnect`` closes the connection.

Work is bounded (``limits.ServerLimits``): a decoded request waits in its node's queue for its executor
(``workqueue``), and a full queue answers SYSTEM_BUSY at once, as it is read; a connection is not read while it has
``max_requests_in_flight`` requests unanswered or its unread answers are over the write high-water mark; the requests
of a closed connection are dropped unrun; ``connections.ConnectionGuard`` closes idle and slow connections and keeps
the bytes held for clients within the budget.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import socket
import time
from collections.abc import Callable
from typing import Protocol, cast

import attrs

from rocketspec.refimpl.connections import HELD, INFLIGHT, WRITE, ConnectionGuard
from rocketspec.refimpl.faults import Faults
from rocketspec.refimpl.frame import FrameError, FrameReader, decode, encode
from rocketspec.refimpl.limits import ServerLimits
from rocketspec.refimpl.remoting import (
    RemotingCommand,
    RemotingSendRequestError,
    RemotingTimeoutError,
    Server,
    dispatch,
)
from rocketspec.refimpl.runtime import Future, Runtime
from rocketspec.refimpl.wireloop import WireLoop
from rocketspec.refimpl.workqueue import REQUEST_OVERHEAD_BYTES, NodeQueues, Work, WorkQueues, executor_of
from rocketspec.spec.protocol import (
    OVERLOAD_REMARK,
    OWN_SERIALIZE_TYPE,
    TIMEOUT_CLEAN_QUEUE_REMARK,
    VIP_CHANNEL_UNSERVED_CODES,
    Executor,
    RequestCode,
    ResponseCode,
    SerializeType,
)

log = logging.getLogger("rocketspec.tcp")

_connection_ids = itertools.count(1)
_MAX_UNANSWERED = 65_536
#: Refused requests kept for observers (traces) until the loop shows them; beyond, they go unobserved.
_MAX_REFUSALS_OBSERVED = 4096
#: The most one read of a connection takes in (asyncio's own reads take up to 256 KiB).
READ_CHUNK_BYTES = 32 * 1024


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
    #: ``time.monotonic()`` when a client's frame was read off the socket (None for frames the server sent).
    #: Requests of different executors run out of arrival order, as in RocketMQ; this keeps the order they came in.
    received_at: float | None = None


#: Bind addresses meaning "every interface": clients must be given this machine's address instead.
WILDCARD_HOSTS = ("", "0.0.0.0", "::")


def this_machine_host() -> str:
    """The address other machines reach this one at, for listeners bound to a wildcard (loopback if unknown)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


class WireObserver(Protocol):
    """Shown every frame on the loop; ``connection_closed`` (optional) hears of closed connections."""

    def __call__(self, frame: WireFrame, /) -> None: ...


class TcpChannel:
    """A connection as the server sees it (``remoting.Channel``), used on the wire loop only (which is also the
    served nodes' runtime loop); a call from another thread is posted there.

    What stops reading it: ``waiting`` (requests read and not yet run), ``held`` (requests whose answer the server
    gives later: held pulls), ``paused`` (why reading stops); ``last_activity``, ``partial`` and ``frame_started``
    (the incomplete frame held) are for the guard. ``_serialize_of`` (the requests still to be answered),
    ``_held_opaques``, ``_parked`` (requests waiting for the client to read its answers) and the futures are the
    server side's.
    """

    def __init__(self, endpoint: TcpEndpoint, transport: asyncio.Transport, *, vip: bool = False) -> None:
        self.endpoint = endpoint
        # Accepted on the broker's VIP channel (port - 2): the codes only its main port serves are unknown there.
        self.vip = vip
        self.id = next(_connection_ids)
        self.transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        sock = transport.get_extra_info("sockname") or ("?", 0)
        self.remote_addr = f"{peer[0]}:{peer[1]}"
        self.local_addr = f"{sock[0]}:{sock[1]}"
        # A response takes its own request's type; the type the client spoke last is for an answer whose request's
        # is not known. What the server creates itself (its requests, its flow-control answers) is in its own type,
        # OWN_SERIALIZE_TYPE, whatever the client speaks (RemotingCommand.serializeTypeConfigInThisServer).
        self.serialize = SerializeType.JSON
        self._serialize_of: dict[int, SerializeType] = {}
        self._lost_answers: set[int] = set()
        self._open = True
        # Set the moment the connection is gone (``_open`` follows in a later turn, after ``closed``). What
        # it still has queued runs all the same, as RocketMQ's executors run the tasks of a closed channel: a oneway
        # send or offset commit a client wrote just before it closed is kept; only the answers go nowhere.
        self.lost = False
        # Set when the node stops with the connection open: its queued requests die with the node (and never reach
        # the broker that starts next in its place).
        self.abandoned = False
        self._pending: dict[int, Future[RemotingCommand]] = {}
        self.server: Server | None = None
        self.waiting = 0
        self.held = 0
        self._held_opaques: set[int] = set()
        self._parked: collections.deque[Work] = collections.deque()
        # Answer bytes handed on and written: the difference is what is on its way from another thread (posted),
        # before the transport's buffer shows it.
        self._bytes_queued = 0
        self._bytes_written = 0
        self._out: list[bytes] = []
        self.paused: set[str] = set()
        self.last_activity = 0.0
        self.frame_started = 0.0
        self.partial = 0
        self.unsent = 0
        # Set by the first frame handed on: until then the nodes have never seen the connection.
        self.dispatched = False

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
        self._bytes_queued += len(data)
        # On the loop (the served nodes' runtime is the socket loop) the answer joins the connection's outgoing
        # bytes now; from another thread (a test's direct call) that is posted, in order.
        self.endpoint.wire.now_or_later(lambda: self._queue_bytes(data))

    def _queue_bytes(self, data: bytes) -> None:
        """Write ``data`` now when no other request of this connection waits to run; else keep it for one write
        after them: a client with many requests in flight (16 threads sharing one connection, as the Java client's
        do) gets the answers of one batch in one system call, not one each."""
        self._out.append(data)
        if self.waiting <= 1:  # the request being answered is the last one read (or none: a held pull's answer)
            self._send_bytes()
        elif len(self._out) == 1:
            self.endpoint.wire.loop.call_soon(self._send_bytes)

    def _send_bytes(self) -> None:
        """Write what this turn answered, unless the client stopped reading (its unsent answers would grow without
        bound)."""
        if not self._out:
            return
        data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        self._out.clear()
        transport = self.transport
        self._bytes_written += len(data)
        if transport.is_closing():
            return
        transport.write(data)
        guard = self.endpoint.guard
        guard.active(self)
        if transport.get_write_buffer_size() > self.endpoint.limits.max_unsent_bytes:
            self.drop(f"more than {self.endpoint.limits.max_unsent_bytes} bytes of answers it does not read")
            return
        guard.wrote(self)
        if self._parked and WRITE not in self.paused:  # parked while these bytes were on their way
            self.endpoint.runtime.call_soon(self.unpark)

    def drop(self, why: str) -> None:
        """Close at once, answers unsent (an idle, slow or non-reading client)."""
        log.info("%s: closing %s: %s", self.endpoint.node, self.remote_addr, why)
        self.lost = True
        self.transport.abort()

    # what stops reading ---------------------------------------------------------------------------------------------
    def _ran(self) -> None:
        self.waiting -= 1
        if self.waiting < self.endpoint.limits.max_requests_in_flight:
            self.endpoint.guard.resume(self, INFLIGHT)

    def _held_by(self, change: int) -> None:
        self.held += change
        if self.held >= self.endpoint.limits.max_held_requests:
            self.endpoint.guard.pause(self, HELD)
        else:
            self.endpoint.guard.resume(self, HELD)

    # the server side ------------------------------------------------------------------------------------------------
    def ran(self) -> None:
        """A request of this connection ran (or was answered busy): one fewer waiting."""
        self.endpoint.wire.now_or_later(self._ran)

    def hold(self, opaque: int) -> None:
        """The server answers this request later (a held pull): it counts against ``max_held_requests``."""
        if opaque not in self._held_opaques:
            self._held_opaques.add(opaque)
            self.endpoint.wire.now_or_later(lambda: self._held_by(1))

    @property
    def unread(self) -> bool:
        """The client leaves answers unread past the high-water mark (counting those still on their way): its next
        requests wait (``park``)."""
        return WRITE in self.paused or \
            self._bytes_queued - self._bytes_written > self.endpoint.limits.write_high_water

    def must_wait(self) -> bool:
        """A request must be parked: the client leaves answers unread, or earlier requests are parked (in order)."""
        if not self._open:  # closed: nothing will be read any more, nor written
            return False
        return self.unread or bool(self._parked)

    def park(self, work: Work) -> None:
        """Keep a request until the client reads its answers; producing more answers would only pile them up."""
        self._parked.append(work)

    def unpark(self) -> None:
        """The client reads again: run what was kept for it, until it falls behind again."""
        while self._parked and self._open and not self.lost and not self.unread:
            self._parked.popleft().run()

    def send_response(self, response: RemotingCommand, *, own: bool = False) -> None:
        """Write the answer to a request, in the request's serialize type; ``own``: an answer the server gives in
        place of the processor's (flow control), in the server's own type (WIRE-17)."""
        requested = self._serialize_of.pop(response.opaque, None)
        serialize = OWN_SERIALIZE_TYPE if own else requested if requested is not None else self.serialize
        if response.opaque in self._held_opaques:
            self._held_opaques.discard(response.opaque)
            self.endpoint.wire.now_or_later(lambda: self._held_by(-1))
        if response.opaque in self._lost_answers:  # a drop_response fault, also for an answer given later (long poll)
            self._lost_answers.discard(response.opaque)
            return
        self._write(response, serialize)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self._write(request, OWN_SERIALIZE_TYPE)

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
        future: Future[RemotingCommand] = Future()
        if not self._open:
            future.set_exception(RemotingSendRequestError(f"channel to {self.remote_addr} closed"))
            return future
        self._pending[request.opaque] = future
        timer = self.endpoint.runtime.call_later(timeout_ms, lambda: self._expire(request.opaque, timeout_ms),
                                                 daemon=True)
        future.add_done_callback(lambda _f: timer.cancel())
        self._write(request, OWN_SERIALIZE_TYPE)
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
        self.endpoint.wire.now_or_later(self._close_after_answers)

    def _close_after_answers(self) -> None:
        """Close behind the answers this turn gave (the transport still writes what it holds, then closes)."""
        self._send_bytes()
        self.transport.close()

    def closed(self) -> None:
        """The socket is gone: fail waits, tell the server the client left."""
        if not self._open:
            return
        self._open = False
        self.endpoint.observe_closed(self)
        for future in list(self._pending.values()):
            future.set_exception(RemotingSendRequestError(f"channel to {self.remote_addr} closed"))
        self._pending.clear()
        self._serialize_of.clear()
        self._lost_answers.clear()
        self._held_opaques.clear()
        parked, self._parked = self._parked, collections.deque()
        if self.server is not None:
            self.server.channel_closed(self)
        for work in parked:  # kept until the client read; it never will, but what it asked for still happens
            if not work.dead():
                work.run()

    def runs(self, command: RemotingCommand) -> bool:
        """Whether a request read from this connection is still to be processed.

        Yes while it is open, and after the client closed it too (RocketMQ runs what it had read). Not once the node
        stopped with it open, and not a HEARTBEAT of a closed connection: registering a connection that is gone would
        leave a consumer in its group, and rebalancing on it, until the 120 s scan (RocketMQ would, in that race)."""
        if self.abandoned:
            return False
        return not self.lost or command.code != RequestCode.HEART_BEAT

    def __repr__(self) -> str:
        return f"<tcp channel {self.remote_addr} -> {self.endpoint.node}@{self.local_addr}>"


class _Protocol(asyncio.BufferedProtocol):
    """One connection's bytes into frames. Reads are at most ``READ_CHUNK_BYTES`` so that one connection full of
    small requests cannot hold the loop for long nor read far past its in-flight limit in one go."""

    def __init__(self, endpoint: TcpEndpoint, vip: bool = False) -> None:
        self.endpoint = endpoint
        self.vip = vip
        self.reader = FrameReader()
        self.channel: TcpChannel | None = None

    def get_buffer(self, sizehint: int) -> memoryview:
        # One buffer for all connections: the loop reads into it and copies out before the next read.
        return self.endpoint.read_view

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self.endpoint.read_buffer[:nbytes])

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's TCPTransport is one without subclassing it
        channel = TcpChannel(self.endpoint, transport, vip=self.vip)
        limits = self.endpoint.limits
        transport.set_write_buffer_limits(high=limits.write_high_water, low=limits.write_low_water)
        if not self.endpoint.guard.admit(channel):
            transport.abort()
            return
        self.channel = channel
        self.endpoint.connections.add(channel)

    def pause_writing(self) -> None:
        if self.channel is not None:
            self.endpoint.guard.pause(self.channel, WRITE)

    def resume_writing(self) -> None:
        channel = self.channel
        if channel is not None:
            self.endpoint.guard.resume(channel, WRITE)
            self.endpoint.runtime.call_soon(channel.unpark)

    def data_received(self, data: bytes | bytearray) -> None:
        channel = self.channel
        if channel is None or channel.lost:
            return
        guard = self.endpoint.guard
        guard.active(channel)
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
            self.endpoint.received(channel, command, serialize, len(frame))
            dispatched = True
        error = error or self.reader.broken
        if error is not None:
            # Framing is lost: nothing after this can be trusted on this connection, and only on this one.
            log.info("%s: closing %s: %s", self.endpoint.node, channel.remote_addr, error)
            self.endpoint.frame_errors += 1
            guard.held(channel, 0)
            if dispatched:
                # Close behind the answers to the whole frames that came first (the loop runs them in order).
                channel.transport.pause_reading()
                self.endpoint.runtime.call_soon(channel.close)
            else:
                channel.transport.abort()  # nothing to answer: no need to wait for a write
            return
        guard.held(channel, self.reader.pending)

    def connection_lost(self, exc: Exception | None) -> None:
        channel = self.channel
        if channel is None:
            return
        channel.lost = True
        self.endpoint.guard.left(channel)
        self.endpoint.connections.discard(channel)
        if not channel.dispatched:
            # Nothing of it ever reached a node (garbage, or a connection that never spoke): there is
            # nobody to tell, and a connection churning attacker costs the loop nothing.
            channel._open = False
            return
        self.endpoint.runtime.call_soon(channel.closed)


class TcpEndpoint:
    """One listening address serving one node (the name server or a broker) over TCP.

    ``resolve`` returns the node's current server (a restarted broker is a new object), or ``None`` while it is
    stopped: connections are then closed as they speak, as a client of a dead broker sees it. ``namesrv`` says the
    node is a name server: its requests share one executor, and a request it leaves unanswered is forgotten (a 4.9.8
    name server never answers an unknown code; a broker's unanswered request is answered later, a held pull).
    """

    #: ``HOST:PORT`` clients reach the node at: set by the owner once the endpoint is bound (``served``).
    addr: str

    def __init__(
        self,
        node: str,
        resolve: Callable[[], Server | None],
        wire: WireLoop,
        *,
        guard: ConnectionGuard,
        namesrv: bool = False,
        observer: WireObserver | None = None,
    ) -> None:
        self.node = node
        self.resolve = resolve
        self.wire = wire
        self.guard = guard
        self.limits: ServerLimits = guard.limits
        self.namesrv = namesrv
        self._runtime: Runtime | None = None
        self._queues: NodeQueues | None = None
        self.faults: Faults | None = None
        self.observer = observer
        self.connections: set[TcpChannel] = set()
        self.frame_errors = 0
        self.busy_answers = 0
        self.read_buffer = bytearray(READ_CHUNK_BYTES)
        self.read_view = memoryview(self.read_buffer)
        self.port = 0
        # Refused requests and their answers, for observers to see in a later turn (a batch for many refusals).
        self._refusals: collections.deque[tuple[TcpChannel, RemotingCommand, RemotingCommand]] = collections.deque(
            maxlen=_MAX_REFUSALS_OBSERVED)
        self._refusals_scheduled = False
        # The main listener, then any extra one on the same node (a broker's VIP channel at port - 2).
        self._servers: list[asyncio.base_events.Server] = []

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError(f"{self.node} is not serving")
        return self._runtime

    async def _bind(self, host: str, port: int, vip: bool = False) -> int:
        server = await self.wire.loop.create_server(lambda: _Protocol(self, vip), host, port, reuse_address=True,
                                                    start_serving=False)
        if self.limits.socket_send_buffer:
            # The kernel would otherwise absorb megabytes of answers for a client that does not read, and the
            # server would go on working for it that long before its backpressure begins. Accepted sockets take
            # the listener's buffer size (Linux), which spares a system call per connection.
            for sock in server.sockets:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.socket_send_buffer)
                except OSError:
                    pass
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    def bind(self, host: str, port: int) -> int:
        """Bind the listening socket (not serving yet); returns the port (an ephemeral one for 0)."""
        self.port = self.wire.run(self._bind(host, port))
        return self.port

    def bind_also(self, host: str, port: int) -> int:
        """Bind one more listening socket for the same node, a broker's VIP channel (its fast remoting server):
        every request served as on the main port but those only the main port has a processor for (WIRE-14);
        returns its port."""
        return self.wire.run(self._bind(host, port, vip=True))

    def unbind(self) -> None:
        """Close every listening socket bound so far (before serving: a port pair that did not fit)."""
        self.wire.run(self._close())
        self._servers.clear()
        self.port = 0

    def serve(self, runtime: Runtime, queues: WorkQueues, faults: Faults | None = None) -> None:
        """Start accepting connections: requests wait in ``queues`` and run on ``runtime``, ``faults`` first."""
        assert self._servers, "bind first"
        self._runtime = runtime
        self._queues = queues.node(self.node)
        self.faults = faults
        for server in self._servers:
            self.wire.run(server.start_serving())

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for channel in list(self.connections):
            channel.abandoned = True
            channel.transport.close()

    def close(self) -> None:
        """Stop listening and close every connection."""
        self.wire.run(self._close())

    def drop_connections(self) -> None:
        """Close every open connection (the node stopped); the listener stays."""
        for channel in list(self.connections):
            channel.abandoned = True
            channel.close()

    @property
    def refused(self) -> int:
        """Requests answered SYSTEM_BUSY because their queue or the byte budget was full."""
        return self._queues.refused if self._queues is not None else 0

    @property
    def expired(self) -> int:
        """Requests answered SYSTEM_BUSY because they waited too long (BrokerFastFailure)."""
        return self._queues.expired if self._queues is not None else 0

    # as frames are read ---------------------------------------------------------------------------------------------
    def received(self, channel: TcpChannel, command: RemotingCommand, serialize: SerializeType, size: int) -> None:
        """A decoded frame: queue it for its executor, or answer SYSTEM_BUSY when the queue is full."""
        assert self._queues is not None
        channel.dispatched = True
        counted = not command.is_response
        received_at = time.monotonic()

        def run() -> None:
            self.arrived(channel, command, serialize, received_at)
            if counted:
                channel.ran()

        def expire(waited_ms: int, queue_size: int) -> None:
            self._expired(channel, command, serialize, waited_ms, queue_size)
            if counted:
                channel.ran()

        work = Work(run=run, expire=expire, cost=size + REQUEST_OVERHEAD_BYTES,
                    executor=self._executor(channel, command), dead=lambda: not channel.runs(command),
                    blocked=channel.must_wait, park=channel.park, source=channel.id)
        if self._queues.offer(work):
            if counted:
                channel.waiting += 1
                if channel.waiting >= self.limits.max_requests_in_flight:
                    self.guard.pause(channel, INFLIGHT)
            return
        if command.is_response or command.is_oneway:
            return  # nobody waits for an answer: the request is lost, as a rejected oneway request is in RocketMQ
        busy = command.response(ResponseCode.SYSTEM_BUSY, remark=OVERLOAD_REMARK)
        try:  # created by the server, not a processor's answer: in the server's own type (WIRE-17)
            data = encode(busy, OWN_SERIALIZE_TYPE)
        except Exception:  # the header of the request cannot be echoed back: the client times out instead
            return
        self.busy_answers += 1
        channel.transport.write(data)
        self._refusals.append((channel, command, busy))
        if not self._refusals_scheduled:
            self._refusals_scheduled = True
            self.runtime.call_soon(self._observe_refusals)

    def _executor(self, channel: TcpChannel, command: RemotingCommand) -> Executor:
        """The executor a request waits for: on the VIP channel a code it has no processor for is the default
        processor's, the admin executor (BrokerController.registerProcessor)."""
        if channel.vip and command.code in VIP_CHANNEL_UNSERVED_CODES:
            return Executor.ADMIN
        return executor_of(command.code, namesrv=self.namesrv)

    # as requests run ------------------------------------------------------------------------------------------------
    def _observe_refusals(self) -> None:
        self._refusals_scheduled = False
        while self._refusals:
            try:
                channel, command, busy = self._refusals.popleft()
            except IndexError:
                break
            self.observe(channel, command, from_client=True)
            self.observe(channel, busy, from_client=False)

    def observe(self, channel: TcpChannel, command: RemotingCommand, *, from_client: bool,
                received_at: float | None = None) -> None:
        if self.observer is None:
            return
        try:
            self.observer(WireFrame(channel.id, self.node, channel.remote_addr, channel.local_addr, from_client,
                                    command, self.runtime.now_ms(), received_at))
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

    def _accepted(self, channel: TcpChannel, command: RemotingCommand, serialize: SerializeType,
                  received_at: float | None) -> None:
        """Bookkeeping of a request taken from its queue: observed, and its answer's serialize type kept."""
        self.observe(channel, command, from_client=True, received_at=received_at)
        channel.serialize = serialize
        if not command.is_oneway:
            channel._serialize_of[command.opaque] = serialize
            if len(channel._serialize_of) > _MAX_UNANSWERED:  # requests a fault dropped are never answered
                channel._serialize_of.pop(next(iter(channel._serialize_of)))

    def _expired(self, channel: TcpChannel, command: RemotingCommand, serialize: SerializeType, waited_ms: int,
                 size: int) -> None:
        """BrokerFastFailure: the request waited too long in its queue; it is answered SYSTEM_BUSY, not run."""
        if not channel.active or command.is_response:
            return
        self._accepted(channel, command, serialize, None)
        if not command.is_oneway:
            channel.send_response(command.response(
                ResponseCode.SYSTEM_BUSY, remark=TIMEOUT_CLEAN_QUEUE_REMARK.format(waited=waited_ms, size=size)),
                own=True)

    @staticmethod
    def _unanswered(channel: TcpChannel, command: RemotingCommand) -> None:
        """No answer will come for the request (a dropped one, a name server's silence): forget it."""
        channel._serialize_of.pop(command.opaque, None)
        channel._lost_answers.discard(command.opaque)

    def arrived(self, channel: TcpChannel, command: RemotingCommand, serialize: SerializeType,
                received_at: float | None = None) -> None:
        if not channel.runs(command):
            return
        if command.is_response:
            self.observe(channel, command, from_client=True, received_at=received_at)
            channel.response_arrived(command)
            return
        self._accepted(channel, command, serialize, received_at)
        server = self.resolve()
        if server is None:
            channel.close()
            return
        channel.server = server
        rules = self.faults.decide(self.node, command.code, channel.remote_addr) if self.faults and \
            self.faults.armed else []
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
                self._unanswered(channel, command)
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
            if channel.vip and command.code in VIP_CHANNEL_UNSERVED_CODES:
                response = self.answer_unserved(server, channel, command)
            else:
                response = server.handle(command, channel)
        except Exception:  # dispatch already answers handler errors; this is a bug in the server itself
            log.exception("%s: %s failed", self.node, command.code_name())
            response = command.response(ResponseCode.SYSTEM_ERROR, remark="internal server error")
        if command.is_oneway:
            return
        if response is not None:
            channel.send_response(response)
        elif self.namesrv:  # a 4.9.8 name server leaves an unknown code unanswered
            self._unanswered(channel, command)
        else:  # a broker answers it later (a held pull) or when the connection closes
            channel.hold(command.opaque)

    @staticmethod
    def answer_unserved(server: Server, channel: TcpChannel, command: RemotingCommand) -> RemotingCommand | None:
        """Process a request the VIP channel has no processor for (a pull, WIRE-14): its default processor,
        AdminBrokerProcessor, answers it as an unknown code (getUnknownCmdResponse), after the ACL hook that runs
        before every processor (NettyRemotingAbstract.processRequestCommand, doBeforeRpcHooks)."""
        acl = getattr(server, "acl", None)
        refused = acl.refusal(command, channel.remote_addr) if acl is not None else None
        if refused is not None:
            return None if command.is_oneway else cast(RemotingCommand, refused)
        return dispatch({}, command, channel)
