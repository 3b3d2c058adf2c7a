"""The wire tap: a recording proxy between RocketMQ clients and another implementation's servers.

``rocketspec tap --listen PORT --upstream HOST:PORT --trace OUT``: clients use the tap as their name server; it
forwards every frame to the upstream name server and back. Routes point clients straight at brokers, so the tap
rewrites the broker addresses of GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO answers to listeners of its own,
one per upstream broker address (opened when first seen, on the listen host), and broker traffic passes through it
too. Frames are forwarded byte for byte except those rewritten, whose header is kept and whose JSON body is written
again in the style it came in (standard JSON, or fastjson's bare numeric ``brokerAddrs`` keys; ``refimpl.route``).

Every command either way goes to :class:`~rocketspec.traces.wiretap.WireEvents` (everything from the wire: broker
side included) and from there through an ``EventLog`` to a ``TraceRecorder``: ``OUT`` holds trace ``tap-<ms>`` (or
the id given), ended ``CUT`` when the tap closes. What such a trace holds and leaves out is in ``traces.wiretap``.

One bad connection never disturbs another: a frame that cannot be decoded, from either side, closes that proxied pair
(client connection and its upstream connection) only; an upstream that cannot be reached when a client connects
closes that client's connection, with a log line, and the tap keeps serving.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rocketspec.refimpl import tcp
from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.frame import FrameError, decode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import dumps_java, loads_lenient
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.refimpl.wireloop import WireLoop
from rocketspec.spec.protocol import MAX_FRAME_BYTES, RequestCode, ResponseCode
from rocketspec.spec.protocol import split_addr as protocol_split_addr
from rocketspec.traces.recording import FORMATS, TraceRecorder, TraceWriteError
from rocketspec.traces.wiretap import WireEvents

log = logging.getLogger("rocketspec.tap")

#: The node name of the name server's connections in the trace's wire frames.
NAMESRV_NODE = "namesrv"
#: Seconds to reach the upstream when a client connects.
CONNECT_TIMEOUT_S = 3.0
_INT = struct.Struct(">i")
_REWRITTEN = frozenset({RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO})


class TapError(ValueError):
    """The tap cannot start as asked (bad upstream address, listen address in use, trace not writable)."""


def split_addr(addr: str, what: str = "upstream") -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) → (host, port); :class:`TapError` when it is not one."""
    try:
        return protocol_split_addr(addr)
    except ValueError:
        raise TapError(f"{what} must be HOST:PORT, not {addr!r}") from None


def _public_host(host: str) -> str:
    """The host clients dial for a listener bound to ``host`` (this machine's address for a wildcard)."""
    return tcp.this_machine_host() if host in tcp.WILDCARD_HOSTS else host


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ------------------------------------------------------------------------------------------------- body rewriting


def parse_body(body: bytes) -> tuple[Any, bool]:
    """A JSON body and whether it is standard JSON: ASCII (non-ASCII escaped) with quoted keys, as 4.9.4+ name
    servers write for clients that ask; otherwise fastjson's style with bare numeric map keys (``refimpl.route``).
    ValueError (UnicodeDecodeError included) when it is not JSON in either style."""
    text = body.decode("utf-8")
    try:
        return json.loads(text), body.isascii()
    except ValueError:
        return loads_lenient(text), False


def _broker_addrs(data: Any) -> dict[Any, Any] | None:
    addrs = data.get("brokerAddrs") if isinstance(data, dict) else None
    return addrs if isinstance(addrs, dict) else None


def broker_datas(data: Any, code: int) -> list[dict[str, Any]]:
    """The broker data objects (``{brokerName, brokerAddrs}``) of a route or cluster-info body."""
    if not isinstance(data, dict):
        return []
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
        items = data.get("brokerDatas")
        return [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []
    table = data.get("brokerAddrTable")
    return [d for d in table.values() if isinstance(d, dict)] if isinstance(table, dict) else []


# ----------------------------------------------------------------------------------------------------- proxy pairs


class _Pair:
    """One client connection and its upstream connection."""

    def __init__(self, pair_id: int, node: str, client_addr: str, upstream: str, writer: asyncio.StreamWriter
                 ) -> None:
        self.id = pair_id
        self.node = node
        self.client_addr = client_addr
        self.upstream = upstream
        self.client_writer = writer
        self.upstream_writer: asyncio.StreamWriter | None = None
        self.asked: dict[int, int] = {}  # opaque -> request code, for the answers the tap rewrites

    def close(self) -> None:
        for writer in (self.client_writer, self.upstream_writer):
            if writer is not None and not writer.is_closing():
                writer.close()


class Tap:
    """The recording proxy (see the module docs); a context manager: ``with Tap(...) as tap: tap.addr``.

    ``trace_dir`` None records nothing (the proxy only). ``send_mode`` declares the CommunicationMode producers use
    (``WireEvents``). Raises :class:`TapError` for a bad upstream address, a listen address that cannot be bound, a
    bad format or a trace that cannot be written there.
    """

    def __init__(self, listen_host: str, listen_port: int, upstream: str, trace_dir: str | Path | None, *,
                 fmt: str = "parquet", trace_id: str | None = None, send_mode: str | None = None,
                 delay_levels_ms: Sequence[int] | None = None,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        split_addr(upstream)
        if not isinstance(listen_port, int) or not 0 <= listen_port < 65536:
            raise TapError(f"listen port must be within 0..65535, not {listen_port!r}")
        if fmt not in FORMATS:
            raise TapError(f"trace format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        self.upstream = upstream
        self.listen_host = listen_host
        self.public_host = _public_host(listen_host)
        self.connect_timeout_s = connect_timeout_s
        self.trace_id = trace_id or f"tap-{int(time.time() * 1000)}"
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.events = EventLog(lambda: int(time.time() * 1000), keep=False)
        try:
            self.wire_events = WireEvents(self.events, server_events=False, send_mode=send_mode)
        except ValueError as error:
            raise TapError(str(error)) from None
        self.recorder: TraceRecorder | None = None
        self.frame_errors = 0
        self.upstream_failures = 0
        self._closed = False
        self._closing = False
        self._pair_ids = itertools.count(1)
        self._pairs: set[_Pair] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._servers: list[asyncio.base_events.Server] = []
        self._proxies: dict[str, asyncio.Task[str]] = {}  # upstream broker address -> the tap's address for it
        self._wire = WireLoop("rocketspec-tap")
        # Bind first (nothing is written when the address is taken), record, then accept clients.
        try:
            port = self._wire.run(self._listen(NAMESRV_NODE, upstream, listen_host, listen_port, serve=False))
        except OSError as error:
            self._wire.stop()
            raise TapError(f"cannot listen on {_join(listen_host, listen_port)}: {error.strerror or error}") from None
        try:
            if self.trace_dir is not None:
                # The brokers' messageDelayLevel is not on the wire: the operator names it when it is not the default.
                self.recorder = TraceRecorder(self.events, self.trace_dir, self.trace_id, fmt=fmt, keep_events=False,
                                              delay_levels_ms=delay_levels_ms)
            self._wire.run(self._servers[0].start_serving())
        except BaseException as error:
            self._closed = True
            self._wire.run(self._close())
            self._wire.stop()
            if isinstance(error, TraceWriteError):
                raise TapError(str(error)) from None
            if isinstance(error, OSError):
                raise TapError(f"cannot write the trace in {self.trace_dir}: {error.strerror or error}") from None
            raise
        self.addr = _join(self.public_host, port)

    # ------------------------------------------------------------------------------------------------- access
    @property
    def rows(self) -> int:
        """Trace rows recorded so far."""
        return self.recorder.rows if self.recorder is not None else 0

    @property
    def broker_proxies(self) -> dict[str, str]:
        """Upstream broker address -> the tap's listening address for it (those opened so far)."""
        return {upstream: task.result() for upstream, task in list(self._proxies.items())
                if task.done() and not task.cancelled() and task.exception() is None}

    def connections(self) -> int:
        """Proxied pairs open now."""
        return len(self._pairs)

    # ---------------------------------------------------------------------------------------------- listening
    async def _listen(self, node: str, upstream: str, host: str, port: int, *, serve: bool = True) -> int:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                self._tasks.add(task)
            try:
                await self._serve_pair(node, upstream, reader, writer)
            except asyncio.CancelledError:
                # The tap is closing. Ending normally: asyncio (3.11) logs a connection handler that ends cancelled.
                pass
            finally:
                self._tasks.discard(task)

        server = await asyncio.start_server(accept, host, port, reuse_address=True, start_serving=serve)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _open_proxy(self, upstream: str, name: str) -> str:
        port = await self._listen(name, upstream, self.listen_host, 0)
        addr = _join(self.public_host, port)
        log.info("tap: broker %s at %s proxied on %s", name, upstream, addr)
        return addr

    async def _proxy_for(self, upstream: str, name: str) -> str:
        """The tap's address for broker ``upstream`` (opening its listener the first time); ``upstream`` itself when
        no listener can be opened (that traffic then bypasses the tap)."""
        task = self._proxies.get(upstream)
        if task is None:
            task = self._proxies[upstream] = asyncio.ensure_future(self._open_proxy(upstream, name))
        try:
            return await asyncio.shield(task)
        except OSError as error:
            self._proxies.pop(upstream, None)
            log.warning("tap: cannot open a listener for broker %s at %s: %s; its clients go direct", name, upstream,
                        error.strerror or error)
            return upstream

    # ------------------------------------------------------------------------------------------------ a pair
    async def _serve_pair(self, node: str, upstream: str, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        pair = _Pair(next(self._pair_ids), node, _join(str(peer[0]), int(peer[1])), upstream, writer)
        if self._closing:
            writer.close()
            return
        self._pairs.add(pair)
        try:
            host, port = split_addr(upstream)
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                              self.connect_timeout_s)
            except (OSError, asyncio.TimeoutError) as error:
                self.upstream_failures += 1
                reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
                log.warning("tap: cannot reach %s at %s for client %s (%s); closing the client's connection",
                            node, upstream, pair.client_addr, reason)
                return
            pair.upstream_writer = up_writer
            pumps = [asyncio.ensure_future(self._pump(pair, reader, up_writer, from_client=True)),
                     asyncio.ensure_future(self._pump(pair, up_reader, writer, from_client=False))]
            self._tasks.update(pumps)
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
                self._tasks.difference_update(pumps)
        finally:
            pair.close()
            if not self._closing:
                # A closed connection is an event of the run; the tap's own shutdown is not.
                self._observe(lambda: self.wire_events.connection_closed(pair.id, self._now()))
            self._pairs.discard(pair)

    async def _pump(self, pair: _Pair, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                    from_client: bool) -> None:
        """Move frames one way until EOF or a bad frame (which closes the pair)."""
        side = "client" if from_client else "upstream"
        try:
            while True:
                head = await reader.readexactly(4)
                (total,) = _INT.unpack(head)
                if total < 4 or total + 4 > MAX_FRAME_BYTES:
                    raise FrameError(f"frame length {total} outside 4..{MAX_FRAME_BYTES - 4}")
                frame = await reader.readexactly(total)
                command, _ = decode(frame)
                data = head + frame
                if command.is_response and not from_client:
                    asked = pair.asked.pop(command.opaque, None)
                    if asked is not None and command.code == ResponseCode.SUCCESS and command.body:
                        data = await self._rewritten(head, frame, command, asked)
                elif from_client and not command.is_response and command.code in _REWRITTEN:
                    pair.asked[command.opaque] = command.code
                # (mypy cannot infer a lambda whose default binds the loop's command)
                self._observe(lambda c=command: self.wire_events(WireFrame(  # type: ignore[misc]
                    pair.id, pair.node, pair.client_addr, pair.upstream, from_client, c, self._now())))
                writer.write(data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        except FrameError as error:
            self.frame_errors += 1
            log.info("tap: closing %s <-> %s (%s): bad frame from the %s: %s", pair.client_addr, pair.upstream,
                     pair.node, side, error)
        except Exception:  # a bug of the tap: this pair closes, the others go on
            log.exception("tap: closing %s <-> %s (%s) after an error", pair.client_addr, pair.upstream, pair.node)

    async def _rewritten(self, head: bytes, frame: bytes, command: RemotingCommand, code: int) -> bytes:
        """The frame with the broker addresses of its route or cluster-info body pointing at the tap's listeners
        (the header bytes kept as they came); the frame unchanged when the body cannot be read."""
        try:
            data, standard = parse_body(command.body or b"")
        except ValueError:
            return head + frame
        for broker in broker_datas(data, code):
            addrs = _broker_addrs(broker)
            if addrs is None:
                continue
            name = str(broker.get("brokerName", ""))
            new: dict[Any, Any] = {}
            for key, addr in addrs.items():
                mapped = await self._proxy_for(addr, name) if isinstance(addr, str) and addr else addr
                # The bare style writes numeric map keys unquoted: they must stay numbers for dumps_java.
                new_key = int(key) if not standard and isinstance(key, str) and key.lstrip("-").isdigit() else key
                new[new_key] = mapped
            broker["brokerAddrs"] = new
        new_body = dumps_java(data, standard=standard)
        header_len = _INT.unpack_from(frame, 0)[0] & 0xFFFFFF
        kept = frame[:4 + header_len]
        return _INT.pack(len(kept) + len(new_body)) + kept + new_body

    # ---------------------------------------------------------------------------------------------- recording
    @staticmethod
    def _now() -> int:
        return int(time.time() * 1000)

    def _observe(self, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception:  # a bug in reading the wire must not stop the proxy
            log.exception("tap: wire events failed")

    # ------------------------------------------------------------------------------------------------ closing
    async def _close(self) -> None:
        self._closing = True
        for server in self._servers:
            server.close()
        for pair in list(self._pairs):
            pair.close()
        for task in list(self._proxies.values()):
            task.cancel()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 1.0)
            except asyncio.TimeoutError:
                pass

    def close(self) -> dict[str, Any] | None:
        """Stop listening, close every connection, end the trace (``CUT``) and write its manifest; returns the
        recorder's manifest (None without a trace). Idempotent."""
        if self._closed:
            return self.recorder.part_manifest() if self.recorder is not None else None
        self._closed = True
        try:
            self._wire.run(self._close())
        finally:
            self._wire.stop()
        return self.recorder.close() if self.recorder is not None else None

    def __enter__(self) -> Tap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_tap(listen_host: str, listen_port: int, upstream: str, trace_dir: str | Path | None, *,
            fmt: str = "parquet", trace_id: str | None = None, send_mode: str | None = None,
            delay_levels_ms: Sequence[int] | None = None,
            stop: threading.Event | None = None) -> dict[str, Any] | None:
    """Serve a tap until ``stop`` is set (without one: until SIGINT or SIGTERM), then write the trace.

    Prints ``tap HOST:PORT -> UPSTREAM`` on stdout once listening and a summary line on stderr at the end. Returns
    the trace manifest (None without ``trace_dir``). Raises :class:`TapError` when it cannot start (bad upstream
    address, listen address in use, trace not writable there).
    """
    with Tap(listen_host, listen_port, upstream, trace_dir, fmt=fmt, trace_id=trace_id, send_mode=send_mode,
             delay_levels_ms=delay_levels_ms) as tap:
        previous: dict[signal.Signals, Any] = {}
        if stop is None:
            stop = threading.Event()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGINT, signal.SIGTERM):
                    previous[sig] = signal.signal(sig, lambda _s, _f: stop.set())
        try:
            print(f"tap {tap.addr} -> {upstream}", flush=True)
            while not stop.wait(0.5):
                pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        manifest = tap.close()
    if trace_dir is not None:
        print(f"trace {tap.trace_id}: {tap.rows} rows in {trace_dir}", file=sys.stderr)
    return manifest


__all__ = ["CONNECT_TIMEOUT_S", "Tap", "TapError", "run_tap", "split_addr"]
