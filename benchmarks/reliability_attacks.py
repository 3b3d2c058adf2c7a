"""The processes of benchmarks/reliability.py: the good client and the attackers (raw sockets, frames from
``rocketspec.refimpl.frame.encode``), each run in a process of its own so the GIL of one does not skew another.

Every loop here is bounded by a deadline (and the reconnects by a count); the harness stops them all anyway.
"""

from __future__ import annotations

import os
import random
import select
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.wire import ConnectionClosed, WireClient
from rocketspec.refimpl.frame import FrameError, encode
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import MAX_FRAME_BYTES, RequestCode, ResponseCode, SerializeType

GOOD_TOPIC, ATTACK_TOPIC, GROUP = "RelGood", "RelAttack", "RelGoodGroup"
# A request code that neither a broker nor a name server serves: any unused number will do (not a protocol fact).
UNKNOWN_CODE = 31_999
ROUTE_EVERY_S, ROUTE_LIMIT_S = 0.25, 1.0
SEND_TIMEOUT_S = 3.0


def split(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


# ------------------------------------------------------------------------------------------------ the good client


def _child() -> None:
    """Attackers and the good client leave Ctrl-C to the harness, which stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def good_client(namesrv: str, broker: str, stop_at: float, stop: Any, out: Any) -> None:
    """Sync sends (each acknowledged one timed) and, on a thread, a route lookup every 250 ms (its latency, None when
    unanswered within the limit); everything goes back through ``out`` once ``stop`` is set (or at ``stop_at``)."""
    _child()

    def running() -> bool:
        return time.monotonic() < stop_at and not stop.is_set()

    acks: list[float] = []
    bodies: list[str] = []
    routes: list[tuple[float, float | None]] = []
    errors: dict[str, int] = {}

    def lookups() -> None:
        client: WireClient | None = None
        while running():
            started = time.monotonic()
            try:
                client = client or WireClient(namesrv, timeout=ROUTE_LIMIT_S)
                answer = client.request(requests.route(GOOD_TOPIC), timeout=ROUTE_LIMIT_S)
                routes.append((started, time.monotonic() - started if answer.code == ResponseCode.SUCCESS else None))
            except (OSError, TimeoutError, ConnectionClosed, FrameError):
                routes.append((started, None))
                client = client.close() if client else None  # a late answer must not pass for the next one's
            time.sleep(max(0.0, started + ROUTE_EVERY_S - time.monotonic()))
        if client:
            client.close()

    looker = threading.Thread(target=lookups, daemon=True)
    looker.start()
    client: WireClient | None = None
    seq = 0
    while running():
        body = f"good-{os.getpid()}-{seq}"
        seq += 1
        try:
            client = client or WireClient(broker, timeout=SEND_TIMEOUT_S)
            answer = client.request(requests.send_v2(GROUP, GOOD_TOPIC, body.encode()), timeout=SEND_TIMEOUT_S)
        except (OSError, TimeoutError, ConnectionClosed, FrameError) as error:
            errors[type(error).__name__] = errors.get(type(error).__name__, 0) + 1
            client = client.close() if client else None
            time.sleep(0.05)
            continue
        if answer.code == ResponseCode.SUCCESS:
            acks.append(time.monotonic())
            bodies.append(body)
        else:
            errors[f"code {answer.code}"] = errors.get(f"code {answer.code}", 0) + 1
    looker.join(timeout=ROUTE_LIMIT_S * 3)
    out.put({"acks": acks, "bodies": bodies, "routes": routes, "errors": errors})

def pull_back(broker: str, deadline_s: float) -> set[str] | None:
    """Every body of the good topic, or None when the broker does not answer in time."""
    seen: set[str] = set()
    offset = 0
    deadline = time.monotonic() + deadline_s
    try:
        with WireClient(broker, timeout=10) as client:
            while time.monotonic() < deadline:
                answer = client.request(requests.pull("RelCheck", GOOD_TOPIC, 0, offset, max_msgs=32))
                if answer.code != ResponseCode.SUCCESS:
                    return seen
                for message in decode_stored_messages(answer.body or b"", "broker-a"):
                    seen.add(message.body.decode("utf-8", "replace"))
                offset = int(answer.field("nextBeginOffset") or offset)
    except (OSError, TimeoutError, ConnectionClosed, FrameError, ValueError):
        return None
    return None


# -------------------------------------------------------------------------------------------------------- attackers


def _connect(addr: str) -> socket.socket | None:
    try:
        sock = socket.create_connection(split(addr), timeout=2)
    except OSError:
        return None
    sock.setblocking(False)
    return sock


def writer(addrs: list[str], payload: bytes, deadline: float) -> None:
    """Write ``payload`` over and over on each connection, never reading, until ``deadline``; a connection the
    server closes is opened again (at most 100 times)."""
    _child()
    socks = [_connect(addr) for addr in addrs]
    at = [0] * len(addrs)  # where each connection is in the payload: partial writes must not cut a frame short
    reopened = 0
    while time.monotonic() < deadline:
        live = [s for s in socks if s is not None]
        if not live:
            if reopened >= 100:
                return
            time.sleep(0.1)
        else:
            _, ready, _ = select.select([], live, [], 0.2)
            for sock in ready:
                i = socks.index(sock)
                try:
                    at[i] = (at[i] + sock.send(payload[at[i]:])) % len(payload)
                except BlockingIOError:
                    pass
                except OSError:
                    socks[i] = None
                    sock.close()
        for i, sock in enumerate(socks):
            if sock is None and reopened < 100:
                socks[i] = _connect(addrs[i])
                at[i] = 0
                reopened += 1
    for sock in socks:
        if sock is not None:
            sock.close()


def trickler(addrs: list[str], deadline: float) -> None:
    """Slowloris: each connection announces a frame of nearly the frame limit, then sends one byte every 0.5 s."""
    _child()
    socks = [s for s in (_connect(addr) for addr in addrs) if s is not None]
    header = struct.pack(">ii", MAX_FRAME_BYTES - 64, 512)
    for sock in socks:
        try:
            sock.send(header)
        except OSError:
            pass
    while time.monotonic() < deadline:
        for sock in socks:
            try:
                sock.send(b"{")
            except OSError:
                pass
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    for sock in socks:
        sock.close()


def fuzz_frames(rng: random.Random, count: int) -> Iterator[bytes]:
    """Malformed frames for one connection: ``count`` that are frames on the outside (garbage, bad JSON, bad header
    lengths, unknown serialize types, mutated valid requests, random codes and fields), then maybe one that breaks
    the framing itself (random bytes, truncated, huge or negative length)."""
    codes = [int(code) for code in RequestCode]
    for _ in range(count):
        kind = rng.randrange(7)
        token = f"fz{rng.randrange(10_000)}"
        if kind == 0:
            header = rng.randbytes(rng.randrange(1, 200))
            yield struct.pack(">ii", 4 + len(header), len(header)) + header
        elif kind == 1:
            text = rng.choice(['{"code":', '[1,2,3]', '{"code":"x","extFields":[1]}', '{"flag":{}}', '"str"',
                               '{"code":10,"extFields":{"topic":null}}', "{" * 300, '{"code":1e999}'])
            raw = text.encode()
            yield struct.pack(">ii", 4 + len(raw), len(raw)) + raw
        elif kind == 2:
            good = encode(RemotingCommand.request(UNKNOWN_CODE, {"a": token}))
            yield good[:4] + struct.pack(">i", rng.choice([0, 0x00FFFFFF, len(good) + 100])) + good[8:]
        elif kind == 3:
            good = encode(RemotingCommand.request(UNKNOWN_CODE, {"a": token}))
            yield good[:4] + bytes([rng.choice([2, 7, 255])]) + good[5:]
        elif kind == 4:  # a valid request, then a few bytes flipped (the length prefix left alone)
            good = bytearray(encode(_valid_request(rng, token), rng.choice(list(SerializeType))))
            for _ in range(rng.randrange(1, 5)):
                good[rng.randrange(4, len(good))] = rng.randrange(256)
            yield bytes(good)
        else:  # a valid frame of any code with random fields: registrations under random names among them
            yield encode(_valid_request(rng, token) if kind == 5 else RemotingCommand.request(
                rng.choice(codes), {rng.choice(["topic", "brokerName", "group", "x"]): token}, rng.randbytes(8)))
    hard = rng.randrange(5)
    if hard == 0:
        yield rng.randbytes(rng.randrange(1, 64))
    elif hard == 1:
        frame = encode(_valid_request(rng, "fzt"))
        yield frame[:rng.randrange(1, len(frame))]
    elif hard == 2:
        yield struct.pack(">i", rng.choice([0x7FFFFFFF, MAX_FRAME_BYTES + 1, -5, 0, 3])) + rng.randbytes(16)


def _valid_request(rng: random.Random, token: str) -> RemotingCommand:
    pick = rng.randrange(4)
    if pick == 0:
        return requests.register_broker(f"c{token}", f"b{token}", f"127.0.0.{rng.randrange(1, 4)}:{rng.randrange(9)}",
                                        rng.randrange(2), topics={f"t{token}": {}})
    if pick == 1:
        return requests.route(f"t{token}")
    if pick == 2:
        return requests.pull(f"g{token}", ATTACK_TOPIC, 0, rng.randrange(100))
    return requests.send_v2(f"g{token}", ATTACK_TOPIC, token.encode())


def fuzzer(addrs: list[str], frames: int, seconds: float, deadline: float, seed: int, out: Any) -> None:
    """Send ``frames`` fuzz frames spread evenly over ``seconds`` (stopping at ``deadline`` if that is not possible)
    over connections of 20..200 frames each."""
    _child()
    rng = random.Random(seed)
    sent = conns = 0
    start = time.monotonic()
    while sent < frames and time.monotonic() < deadline:
        sock = _connect(rng.choice(addrs))
        if sock is None:
            time.sleep(0.05)
            continue
        conns += 1
        sock.setblocking(True)
        sock.settimeout(1.0)
        try:
            for frame in fuzz_frames(rng, min(rng.randrange(20, 200), frames - sent)):
                sock.sendall(frame)
                sent += 1
                ahead = start + sent * seconds / max(frames, 1) - time.monotonic()
                if ahead > 0.005:
                    time.sleep(ahead)
                if time.monotonic() >= deadline:
                    break
        except OSError:
            pass  # the server closed the connection: on to the next one
        sock.close()
    out.put({"sent": sent, "connections": conns})
