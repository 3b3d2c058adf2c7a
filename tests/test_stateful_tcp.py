"""Lockstep: the remoting spec (WIRE-*) drives the socket server (``rocketspec serve``) through real loopback sockets.

Each run draws its configuration (``tests/dimensions.py``): the serialize type every frame is written in, which flags
the raw requests may carry (plain; oneway too; the response bit too), the text of ext fields and message properties
(ASCII, non-ASCII, empty), and whether the broker is reached on its VIP channel (port - 2, ``vipChannelEnabled``).
Beside it, the run draws the server's limits (``tcp_lockstep.PROFILES``: the defaults, one-request queues, idle
connections closed, a frame deadline with a small byte budget, a client that reads slowly, few connections); the ci test
runs programs of every profile, then of each one alone (stratified). The system is a ``ServedCluster`` on 127.0.0.1
(topic ``T`` of two queues) and raw TCP connections of the test, whose frames the real codec writes (or, for odd peers,
the test by hand).

Rules are the connection machine's driven actions: ``RequestSent`` (a request to the broker or the name server, plain,
oneway or with the response bit, of one of several kinds, with a fault on the way, in one write or in pieces, pipelined
in a burst; a consumer's heartbeat and an admin's question about it, which the broker puts to the consumer with a
request of its own that the test's client answers, WIRE-7) and ``CallerTimesOut`` (the test's client stops waiting, at
once after sending or later; and for every call still waiting on a connection the server closed); and what the
environment does to the server: frames it must refuse (the connection closes, WIRE-6), new connections, idle time
(WIRE-16), a frame that never completes, a stalled server (WIRE-15), a client that does not read, a broker restart, an
operator's invalid fault rules and options. What the server does is observed: each copy of a request it processes
(``RequestArrives``: its nodes' ``handle`` and the frames it reads), each response it writes (``ServerAnswers``:
``handle``'s answers, and the answers the transport gives in the server's place), and each response frame that reaches
the client (``ResponseArrives``); each must be enabled where the spec is.

Every rule ends when the server has settled: every action the spec still enables and the network does not lose (a copy
delivered, a copy processed and not answered, a response written and not read) has happened, or a bounded wait ran out.
Then the projections are compared: the spec's state *settled* (those actions taken) against what the server did: which
callers still wait and which were given a response (WIRE-5, WIRE-8), every copy processed, answered and read (WIRE-4,
WIRE-7, WIRE-8, WIRE-12), the serialize type of every response (WIRE-4; the server's own commands, its requests and
flow-control answers, in its own type, WIRE-17), the answers an oracle decides (WIRE-12, WIRE-14, WIRE-15), which
connections are open (WIRE-6, WIRE-16) and the server's own counts. Every frame read is read by the spec's
``parse_frame`` and the codec alike, every response checked with ``answers`` (WIRE-1..4), and the messages pulls and
views return with ``parse_stored_messages``, ``parse_properties`` and ``offset_message_id`` (WIRE-9, WIRE-10, WIRE-13).
"""

from __future__ import annotations

import time
from types import ModuleType

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import run_machine, variant_caught, variant_needs
from stateful_support import stateful_settings
from tcp_checks import operator_mistake
from tcp_lockstep import PROFILES, REFUSED_FRAMES, SETTLE_S, wait_until
from tcp_machine import BROKER_WHATS, CUTS, FAULTS, NAMESRV_WHATS, UNKNOWN_CODE, TcpLockstep

from rocketspec.refimpl import connections as connections_module
from rocketspec.refimpl import frame as frame_module
from rocketspec.refimpl import served as served_module
from rocketspec.refimpl import tcp as tcp_module
from rocketspec.refimpl import workqueue as workqueue_module
from rocketspec.refimpl.frame import encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import remoting as wire
from rocketspec.spec.protocol import Executor


class TcpMachine(TcpLockstep):
    """A raw client's requests over real sockets to a served name server and broker, stepped with the spec's
    connection machine; every frame, answer and message checked against the spec's readers and oracles."""

    # ------------------------------------------------------------------------------------------------ rules
    def _ready(self, slots: int = 1) -> bool:
        return self.served is not None and len(self._free_slots()) >= slots

    @precondition(lambda self: self._ready())
    @rule(what=st.sampled_from(BROKER_WHATS + NAMESRV_WHATS), kind=st.integers(0, 2), fault=st.sampled_from(FAULTS),
          text=st.integers(0, 1), cuts=st.sampled_from(CUTS), give_up=st.sampled_from((False, False, True)),
          pick=st.integers(0, 3))
    def send_request(self, what: str, kind: int, fault: str, text: int, cuts: tuple[int, ...], give_up: bool,
                     pick: int) -> None:
        """``RequestSent``: one request, plain, oneway or with the response bit (WIRE-4, WIRE-5, WIRE-7, WIRE-12),
        with a fault on the way, in one write or in pieces; the caller may give up at once (``CallerTimesOut``)."""
        conn = self._conn("namesrv" if what in NAMESRV_WHATS else "broker", pick)
        call, data = self._request(conn, what, self.kinds[kind % len(self.kinds)], fault, self.texts[text])
        self._write(conn, data, cuts)
        if give_up and call.waiting:
            self._give_up(call, "the caller gives up before any answer is read")
        self._settle()

    @precondition(lambda self: self._ready(2))
    @rule(n=st.integers(2, 5), what=st.sampled_from(("unknown", "config")), pick=st.integers(0, 3))
    def send_burst(self, n: int, what: str, pick: int) -> None:
        """``RequestSent`` for several requests in one write, pipelined: where the server's queues have room for
        the first only, the others may be answered SYSTEM_BUSY (WIRE-15); all are answered (WIRE-8)."""
        conn = self._conn("broker", pick)
        frames = []
        for i in range(min(n, len(self._free_slots()))):
            call, data = self._request(conn, what, "plain", "none", self.texts[0])
            if i and self.profile.name in ("queues", "slow"):
                call.allowed = (wire.overload_answer(False, False),)
            frames.append(data)
        self._write(conn, b"".join(frames))
        self._settle()

    @precondition(lambda self: self._ready(2))
    @rule(first=st.integers(0, 3), second=st.integers(0, 3))
    def admin_asks_a_consumer(self, first: int, second: int) -> None:
        """``RequestSent`` twice: a consumer's heartbeat on one broker connection, then an admin's request about it
        on another (GET_CONSUMER_RUNNING_INFO): the broker asks the consumer over its connection, a request of its
        own (WIRE-17), which the client answers with the response bit (WIRE-7), and forwards the answer (WIRE-8).
        A consumer joining makes the broker notify the group's other consumers (oneway)."""
        consumer = self._conn("broker", first)
        client_id = f"raw@{consumer.index}"
        _call, data = self._request(consumer, f"heartbeat {client_id}", "plain", "none", self.texts[0])
        self._write(consumer, data)
        self._settle()
        if not self._ready() or consumer.closed_by:
            return
        admin = self._conn("broker", second)
        _call, data = self._request(admin, f"running-info {client_id}", "plain", "none", self.texts[0])
        self._write(admin, data)
        self._settle()

    @precondition(lambda self: any(c.waiting for c in self.calls.values()))
    @rule(pick=st.integers(0, 15))
    def caller_gives_up(self, pick: int) -> None:
        """``CallerTimesOut``: the caller stops waiting for a request (WIRE-5)."""
        waiting = [c for c in self.calls.values() if c.waiting]
        self._give_up(waiting[pick % len(waiting)], "the caller gives up")
        self._settle()

    @precondition(lambda self: self.served is not None)
    @rule(name=st.sampled_from(sorted(REFUSED_FRAMES)), node=st.sampled_from(("broker", "namesrv")),
          pick=st.integers(0, 3), cuts=st.sampled_from(((), (1,), (3,))))
    def peer_writes_a_refused_frame(self, name: str, node: str, pick: int, cuts: tuple[int, ...]) -> None:
        """Bytes a 4.9.8 peer does not read as a frame: the server closes the connection (WIRE-1, WIRE-6)."""
        conn = self._conn(node, pick)
        data = REFUSED_FRAMES[name]
        self._write(conn, data, cuts)
        refused = wire.parse_frame(data)
        assert isinstance(refused, wire.Refused)
        if not conn.closed_by:
            conn.refused_frame = True
        self._close(conn, refused.reason)
        self._settle()

    @precondition(lambda self: self.served is not None and len(self.conns) < 10)
    @rule(node=st.sampled_from(("broker", "namesrv")))
    def client_connects(self, node: str) -> None:
        """A client opens another connection (past ``max_connections`` the server closes it as it accepts it)."""
        self._connect(node)
        self._settle()

    @precondition(lambda self: self.served is not None and self.profile.name in ("idle", "slow", "queues", "unread")
                  and bool(self._open()))
    @rule(n=st.integers(1, 3), big=st.booleans(), node=st.sampled_from(("broker", "namesrv")),
          pick=st.integers(0, 3))
    def the_limits_act(self, n: int, big: bool, node: str, pick: int) -> None:
        """What the run's limits are there for: idle connections closed (WIRE-16), a frame that never completes
        closed, a stalled server's queues full and its requests waiting too long (WIRE-15), a client that leaves
        its answers unread until the server stops producing them."""
        if self.profile.name == "idle":
            self._connections_go_idle()
        elif self.profile.name == "slow":
            self._frame_never_completes(big, node, pick)
        elif self.profile.name == "queues":
            self._server_stalls(n, pick)
        else:
            self._answers_unread(n, pick)

    def _answers_unread(self, n: int, pick: int) -> None:
        """``RequestSent`` for requests whose answers are larger than what the client's socket takes before it reads:
        the server parks the rest until the client reads (backpressure), then answers every one (WIRE-8)."""
        if len(self._free_slots()) < 4:
            return
        conn = self._conn("broker", pick)
        made = [self._request(conn, "config", "plain", "none", self.texts[0])
                for _ in range(min(2 + 2 * n, len(self._free_slots())))]
        self._write(conn, b"".join(data for _, data in made))
        assert self.served is not None
        endpoint = self.served.endpoint("broker-a")
        # The client reads nothing until the server has stopped producing answers for it (or a moment passed).
        wait_until(lambda: conn.raw.eof or any(c.paused for c in endpoint.connections), 0.2)
        self._settle()

    def _connections_go_idle(self) -> None:
        """Time passes with no traffic either way: the server closes every connection idle past its limit
        (serverChannelMaxIdleTimeSeconds, WIRE-16) as its sweep finds them."""
        assert self.served is not None
        limit_s = self.profile.limits.idle_close_s
        time.sleep(max(0.0, self.quiet_since + limit_s + 0.03 - time.monotonic()))
        # The server's last traffic on any connection came before the last rule settled: at least this idle.
        idle_ms = int((time.monotonic() - self.quiet_since) * 1000)
        self.served.submit(self.served.guard.sweep)
        for conn in self._open():
            if wire.idle_closes(idle_ms, int(limit_s * 1000)):
                self._close(conn, "idle")
                self.counts["closed_idle"] += 1
        self._settle()

    def _frame_never_completes(self, big: bool, node: str, pick: int) -> None:
        """A frame whose last byte never comes: the server closes its connection past the frame deadline
        (``ServerLimits.frame_deadline_s``); while partial frames hold more than their share of the byte budget
        the connection is not read."""
        assert self.served is not None
        guard = self.served.guard
        conn = self._conn(node, pick)
        data = encode(RemotingCommand.request(UNKNOWN_CODE, {"note": "x" * (6000 if big else 10)}), self.serialize)
        conn.raw.write(data[:-1])
        wait_until(lambda: guard.partial_bytes > 0 or conn.raw.eof, 1.0)
        time.sleep(self.profile.limits.frame_deadline_s + 0.03)
        self.served.submit(guard.sweep)
        if not conn.closed_by:
            self._close(conn, "frame deadline")
            self.counts["closed_slow"] += 1
        self._settle()

    def _server_stalls(self, n: int, pick: int) -> None:
        """Every executor busy (the queues held): past the send queue's room a send is answered SYSTEM_BUSY at once,
        and the one queued, taken after its executor's limit, is answered SYSTEM_BUSY unprocessed (WIRE-15)."""
        assert self.served is not None and self.served.queues is not None
        if not self._ready(1):
            return
        queues = self.served.queues
        conn = self._conn("broker", pick)
        limit_ms = self.profile.limits.max_wait_ms[Executor.SEND]
        queues.hold()
        try:
            made = [self._request(conn, "send", "plain", "none", self.texts[i % 2])
                    for i in range(min(n, len(self._free_slots())))]
            for call, _ in made[1:]:
                call.expected = wire.overload_answer(False, False)
            self._write(conn, b"".join(data for _, data in made))
            if wait_until(lambda: queues.queued >= 1 or conn.raw.eof, SETTLE_S):
                made[0][0].stalled_ms = limit_ms + 20
                made[0][0].may_expire = True
                time.sleep((limit_ms + 20) / 1000)
        finally:
            queues.release()
        self._settle()

    @precondition(lambda self: self.served is not None and not self.restarted)
    @rule()
    def broker_restarts(self) -> None:
        """The broker stops and starts again: the server closes its connections (their callers stop waiting) and
        serves new ones."""
        assert self.served is not None
        self.restarted = True
        self.served.restart_broker("broker-a")
        self._hook()
        for conn in self._open():
            if conn.target != "namesrv":
                self._close(conn, "broker restart")
        self._settle()

    @precondition(lambda self: self.served is not None)
    @rule(kind=st.sampled_from(("rule", "file", "server")), index=st.integers(0, 12))
    def operator_makes_a_mistake(self, kind: str, index: int) -> None:
        """An operator's fault rule, fault file or served cluster that is not valid (``rocketspec serve --faults``,
        its options): refused with its reason, the served cluster going on as before."""
        assert self.served is not None
        port = int(self.served.namesrv_addr.rsplit(":", 1)[1])
        problem = operator_mistake(kind, index, port, self.tmp)
        if problem:
            self.fail(problem)
        self._settle()


#: The machine with the limits of one profile only, for each profile but the defaults: the ci run draws each one's
#: limits however the draws of the whole machine fall.
BY_PROFILE: dict[str, type[TcpMachine]] = {
    p.name: type(f"TcpMachine_{p.name}", (TcpMachine,), {"LIMITS": (p,)}) for p in PROFILES[1:]}


@pytest.mark.machine
def test_tcp_machine() -> None:
    """The machine (``TcpMachine``) in the ci profile: programs with every profile of limits, then programs with
    each profile of limits but the defaults (stratified: each profile's rules are run)."""
    for machine, examples in ((TcpMachine, 24), *((m, 8) for m in BY_PROFILE.values())):
        run_machine(machine, stateful_settings(examples, 14))




# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension, a broken copy of the socket server (or the codec it writes with) that only a non-default value
# reveals: the machine catches it, and the machine with that dimension pinned to its default does not.
VARIANTS = {
    # Every answer written in JSON, whatever its request's serialize type (WIRE-4).
    "wire.serializeType": (tcp_module, "            channel._serialize_of[command.opaque] = serialize\n",
                           "            channel._serialize_of[command.opaque] = SerializeType(0)\n", ("WIRE-4",)),
    # A frame with the response bit that matches no request of the server's processed as a request (WIRE-7); the
    # client's answers to the broker's own requests still match theirs.
    "wire.flags": (tcp_module, "        if command.is_response:\n            self.observe(channel, command,",
                   "        if command.is_response and command.opaque in channel._pending:\n"
                   "            self.observe(channel, command,", ("WIRE-7",)),
    # A binary header's ext field value measured in characters, not bytes (WIRE-3): only non-ASCII text shows it.
    "wire.extFields": (frame_module, "_INT.pack(len(v)) + v\n", "_INT.pack(len(value)) + v\n",
                       ("WIRE-1", "WIRE-3")),
    # The VIP channel serves pulls as the main port does (WIRE-14).
    "client.vipChannelEnabled": (tcp_module, "self._bind(host, port, vip=True)", "self._bind(host, port, vip=False)",
                                 ("WIRE-14",)),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(TcpMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(TcpMachine, dimension, module, old, new, clauses, examples=60, steps=14)


# ------------------------------------------------------------------------------------------------------ mutants
# Broken copies of the socket server, each caught by the machine (with the limits that make it show).
MUTANTS: dict[str, tuple[str, ModuleType, str, str, tuple[str, ...]]] = {
    "a duplicated request processed once": (
        "default", tcp_module, '            copies = 2 if "duplicate" in actions else 1\n',
        "            copies = 1\n", ("WIRE-8",)),
    "a full queue's busy answer in the request's serialize type": (
        "queues", tcp_module, "            data = encode(busy, OWN_SERIALIZE_TYPE)\n",
        "            data = encode(busy, serialize)\n", ("WIRE-17",)),
    "the broker's own requests in the client's serialize type": (
        "default", tcp_module,
        "timer.cancel())\n        self._write(request, OWN_SERIALIZE_TYPE)\n",
        "timer.cancel())\n        self._write(request, self.serialize)\n",
        ("WIRE-17",)),
    "a client's answer to the broker's request dropped": (
        "default", tcp_module, "            channel.response_arrived(command)\n", "            pass\n",
        ("WIRE-7", "WIRE-8")),
    "a queue with room for one more than its capacity": (
        "queues", workqueue_module, "            if len(lane) >= self.limits.capacity(work.executor) or \\\n",
        "            if len(lane) > self.limits.capacity(work.executor) or \\\n", ("WIRE-15",)),
    "a request that waited too long processed all the same": (
        "queues", workqueue_module, "and waited_ms >= limit:", "and waited_ms >= 100 * limit:", ("WIRE-15",)),
    "an idle connection kept twice its limit": (
        "idle", connections_module, "now - connection.last_activity >= limits.idle_close_s:",
        "now - connection.last_activity >= 2 * limits.idle_close_s:", ("WIRE-16",)),
    "a refused frame not counted": (
        "default", tcp_module, "            self.endpoint.frame_errors += 1\n", "            pass\n", ("WIRE-6",)),
    "the VIP channel one port off": (
        "default", served_module, "endpoint.bind_also(self.host, port - VIP_CHANNEL_PORT_OFFSET)",
        "endpoint.bind_also(self.host, port - 1)", ("WIRE-14",)),
    "one connection more than the maximum": (
        "connections", connections_module, "        if len(self.connections) >= self.limits.max_connections:\n",
        "        if len(self.connections) > self.limits.max_connections:\n", ("max_connections", "connections open")),
    "a partial frame never held": (
        "slow", tcp_module, "        guard.held(channel, self.reader.pending)\n", "        guard.held(channel, 0)\n",
        ("connections open",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    profile, module, old, new, clauses = MUTANTS[name]
    machine = TcpMachine if profile == "default" else BY_PROFILE[profile]
    variant_caught(machine, module, old, new, clauses, examples=60, steps=14)
