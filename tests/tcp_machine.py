"""The lockstep machinery of the socket server's machine (``test_stateful_tcp.py``, whose docstring says what it
does): the served cluster and the raw connections of a run, the hooks that see what the server does (its nodes'
``handle``, the VIP channel's answer to what it does not serve, the frames it reads and writes), the requests the
rules send, settling (every action the spec still owes taken, or a bounded wait run out) and both projections."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import attrs
from hypothesis import strategies as st
from lockstep import LockstepMachine
from tcp_checks import check_messages, read_both, request_disagreement, sent_messages
from tcp_lockstep import (
    PROFILES,
    SETTLE_S,
    Call,
    Conn,
    Profile,
    RawConnection,
    ServerLog,
    first_answer,
    flow_control,
    odd_binary_request,
    odd_json_request,
    one_of,
    wait_readable,
    wait_until,
)

from rocketspec.conformance import requests
from rocketspec.refimpl.frame import encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster, fault_rule
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.spec import remoting as wire
from rocketspec.spec.protocol import (
    RPC_ONEWAY_FLAG,
    RPC_RESPONSE_FLAG,
    VIP_CHANNEL_PORT_OFFSET,
    Executor,
    Property,
    RequestCode,
    ResponseCode,
    SerializeType,
    split_addr,
)

TOPIC = "T"
GROUP = "WG"
SLOTS = 24
OPAQUE_BASE = 5000
UNKNOWN_CODE = 9999
DELAY_MS = 30
#: What the raw client answers a request of the server's own with.
CLIENT_ANSWER = b'{"properties":{"answeredBy":"raw"}}'
#: The text of ext fields and properties, by the wire.extFields value the run drew.
TEXTS = {"ascii": ("hello", "v-1"), "non-ascii": ("héllo wörld", "値 🚀 ключ"), "empty": ("", "x")}
#: Which request kinds each wire.flags value allows: plain requests, oneway ones, requests with the response bit.
FLAG_KINDS = {"request": ("plain",), "oneway": ("plain", "oneway"), "response": ("plain", "oneway", "flagged")}
FAULTS = ("none", "none", "drop", "drop_response", "duplicate", "delay", "fail")
BROKER_WHATS = ("config", "send", "batch", "pull", "view", "unknown", "odd")
NAMESRV_WHATS = ("route", "namesrv-unknown", "namesrv-odd")
CUTS = ((), (), (1,), (6,), (9, 21))
_WAITED = re.compile(r"period in queue: (\d+)ms, size of queue: (\d+)")
# The parts of the projection, each named with the clauses that decide it.
WAITING = "callers still waiting (WIRE-5, WIRE-7, WIRE-8)"
SEEN = "responses each caller was given (WIRE-4, WIRE-5, WIRE-8)"
WORK = "copies processed, responses written, responses read, per request (WIRE-4, WIRE-7, WIRE-8, WIRE-12)"
SERIALIZE = "serialize type of every response read (WIRE-4, WIRE-17)"
ANSWERS = "answers an oracle decides (WIRE-12, WIRE-14, WIRE-15)"
CONNECTIONS = "connections open (WIRE-6, WIRE-16; max_connections, a frame deadline, a broker restart)"
LOAD = "the server's counts: frames refused, requests refused and expired, connections (WIRE-6, WIRE-15, WIRE-16)"


class _Watcher:
    """The served cluster's observer: every frame it reads or writes, every connection it sees close."""

    def __init__(self, machine: TcpLockstep) -> None:
        self.machine = machine

    def __call__(self, frame: WireFrame) -> None:
        self.machine._observe(frame)

    def connection_closed(self, connection: int, ts_ms: int) -> None:
        self.machine.server_closed += 1


class TcpLockstep(LockstepMachine):
    """The socket server's lockstep machinery (the rules are ``test_stateful_tcp.TcpMachine``'s): the served
    cluster and the raw connections, the hooks that see what the server does, settling, and the projections."""

    TABLE = wire.TRANSITIONS
    #: The server limits the runs draw from (a subclass narrows them: one run of the ci test per profile).
    LIMITS: ClassVar[tuple[Profile, ...]] = PROFILES
    DIMENSIONS = ("wire.serializeType", "wire.flags", "wire.extFields", "client.vipChannelEnabled")
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {}
    DRIVEN = (wire.RequestSent, wire.CallerTimesOut)
    OBSERVED = (wire.RequestArrives, wire.ServerAnswers, wire.ResponseArrives)

    def __init__(self) -> None:
        super().__init__()
        self.served: ServedCluster | None = None
        self.conns: list[Conn] = []
        self.calls: dict[int, Call] = {}
        self.by_key: dict[tuple[str, int], Call] = {}
        self.log = ServerLog()
        self.answered: dict[int, RemotingCommand] = {}  # id -> the answers handle returned (kept alive)
        self.commit_offsets: list[int] = []
        self.quiet_since = time.monotonic()
        self.counts = {"closed_idle": 0, "closed_slow": 0, "refused_connections": 0}
        self.restarted = False
        self.tmp = Path(tempfile.mkdtemp(prefix="rocketspec-tcp-"))
        #: Connections the server told its observers it saw close.
        self.server_closed = 0

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        self.serialize = SerializeType.JSON if config["wire.serializeType"] == "json" else SerializeType.ROCKETMQ
        self.kinds = FLAG_KINDS[config["wire.flags"]]
        self.texts = TEXTS[config["wire.extFields"]]
        self.vip = bool(config["client.vipChannelEnabled"])
        self.profile: Profile = data.draw(st.sampled_from(self.LIMITS), label="limits")
        # A standing rule that never fires (no such client), from a fault file or as a list of rules.
        standing = [{"action": "fail", "target": "*", "request": "SEND_MESSAGE", "code": "SYSTEM_BUSY",
                     "client": "0.0.0.0:1", "times": 1}]
        faults: Any = standing
        if data.draw(st.booleans(), label="fault file"):
            faults = self.tmp / "faults.json"
            faults.write_text(json.dumps({"faults": standing}), encoding="utf-8")
        self.served = ServedCluster(limits=self.profile.limits, faults=faults)
        self.served.add_observer(_Watcher(self))
        described = self.served.describe().splitlines()
        if described != [f"namesrv {self.served.namesrv_addr}", f"broker-a {self.served.broker_addrs['broker-a']}"]:
            self.fail(f"the served cluster describes itself as {described}")
        self.served.create_topic(TOPIC, queues=2)
        if self.profile.manual_sweep:
            self.served.submit(self.served.guard.stop)
        self._hook()
        self.broker_addr = self.served.broker_addrs["broker-a"]
        for target in ("broker", "namesrv"):
            self._connect(target)
        self.begin(wire.ConnectionState(wire.Config(self.serialize, slots=SLOTS)))
        self._settle()

    def teardown(self) -> None:
        for conn in self.conns:
            conn.raw.close()
        if self.served is not None:
            self.served.close()
            self.served.close()  # closing twice does nothing
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _hook(self) -> None:
        """Wrap where the served nodes process a copy of a request: their ``handle``, and the VIP channel's answer
        to a code it has no processor for (WIRE-14); each copy processed, and the answer given, is logged."""
        assert self.served is not None and self.served.cluster is not None
        for server in (self.served.cluster.namesrv, self.served.cluster.brokers["broker-a"]):
            if not getattr(server.handle, "hooked", False):
                server.handle = self._wrapped(server.handle)  # type: ignore[method-assign]
        endpoint = self.served.endpoint("broker-a")
        if not getattr(endpoint.answer_unserved, "hooked", False):
            unserved = endpoint.answer_unserved

            def answer_unserved(server: Any, channel: Any, request: RemotingCommand) -> RemotingCommand | None:
                return self._processed(channel, request, unserved(server, channel, request))

            answer_unserved.hooked = True  # type: ignore[attr-defined]
            endpoint.answer_unserved = answer_unserved  # type: ignore[method-assign]

    def _wrapped(self, original: Any) -> Any:
        def handle(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            return self._processed(channel, request, original(request, channel))

        handle.hooked = True  # type: ignore[attr-defined]
        return handle

    def _processed(self, channel: Any, request: RemotingCommand, response: RemotingCommand | None
                   ) -> RemotingCommand | None:
        call = self.by_key.get((channel.remote_addr, request.opaque))
        if call is not None:
            if call.kind == "flagged":
                # A frame with the response bit processed as a request: the spec never enables it (WIRE-7).
                self.log.add(wire.ServerAnswers(call.slot))
            else:
                self.log.add(wire.RequestArrives(call.slot))
                if response is not None and not request.is_oneway:
                    self.answered[id(response)] = response
                    self.log.add(wire.ServerAnswers(call.slot))
                elif not request.is_oneway:
                    call.held += 1  # a broker answers it later (a call it makes to a client first)
        return response

    def _observe(self, frame: WireFrame) -> None:
        """Every frame the server reads or writes: a frame with the response bit reaching it is a copy that arrived
        (WIRE-7); an answer it writes that its node's ``handle`` did not give is the transport's, in the server's
        place (a fault's, a full queue's, a request that waited too long: WIRE-15)."""
        call = self.by_key.get((frame.client_addr, frame.command.opaque))
        if call is None:
            return
        if frame.from_client:
            if frame.command.is_response:
                self.log.add(wire.RequestArrives(call.slot))
        elif frame.command.is_response and self.answered.get(id(frame.command)) is not frame.command:
            if call.held:
                call.held -= 1
                self.log.add(wire.ServerAnswers(call.slot))
            else:
                self.log.add(wire.RequestArrives(call.slot), wire.ServerAnswers(call.slot))

    # ------------------------------------------------------------------------------------------------ connections
    def _addr(self, target: str) -> str:
        assert self.served is not None
        if target == "namesrv":
            return self.served.namesrv_addr
        host, port = split_addr(self.broker_addr)
        return f"{host}:{port - VIP_CHANNEL_PORT_OFFSET}" if target == "vip" else self.broker_addr

    def _open(self) -> list[Conn]:
        return [c for c in self.conns if not c.closed_by]

    def _connect(self, target: str) -> Conn:
        """A new connection (the broker's on its VIP channel when the run says so); past ``max_connections`` the
        server closes it as it accepts it."""
        assert self.served is not None
        if target == "broker" and self.vip:
            target = "vip"
        # The server forgets a closed connection a moment after the client sees it close.
        wait_until(lambda: self.served is not None and self.served.connections() == len(self._open()), SETTLE_S)
        refused = len(self._open()) >= self.profile.limits.max_connections
        try:
            raw = RawConnection(self._addr(target), self.profile.rcvbuf)
        except OSError as error:
            channel = "the broker's VIP channel (WIRE-14)" if target == "vip" else target
            self.fail(f"cannot connect to {channel} at {self._addr(target)}: {error}")
        conn = Conn(len(self.conns), target, raw)
        if refused:
            conn.closed_by = "max_connections"
            self.counts["refused_connections"] += 1
        self.conns.append(conn)
        return conn

    def _conn(self, target: str, pick: int) -> Conn:
        open_ = [c for c in self._open() if (c.target == "namesrv") == (target == "namesrv")]
        return open_[pick % len(open_)] if open_ else self._connect(target)

    def _close(self, conn: Conn, why: str) -> None:
        if not conn.closed_by:
            conn.closed_by = why

    # ------------------------------------------------------------------------------------------------ requests
    def _free_slots(self) -> list[int]:
        if self.spec is None:
            return []
        return [i for i, c in enumerate(self.state.calls) if c is None]

    def _command(self, what: str, slot: int, text: str) -> RemotingCommand | bytes:
        """The request of kind ``what`` (bytes: an odd peer's frame, written by hand)."""
        other = self.texts[1]
        if what == "send":
            body = f"m{slot}-{text}".encode()
            props = requests.message_properties(tags="TagA", keys=other, extra={"user": text})
            return requests.send_v2("PG", TOPIC, body, queue_id=0, properties=props)
        if what == "batch":
            return requests.send_batch("PG", TOPIC, [(f"b{slot}-1".encode(), {"user": text}),
                                                     (f"b{slot}-2".encode(), {Property.KEYS: other})])
        if what == "pull":
            return requests.pull(GROUP, TOPIC, 0, 0)
        if what == "view" and self.commit_offsets:
            return requests.view_message(self.commit_offsets[-1])
        if what == "route":
            return requests.route(TOPIC)
        if what in ("unknown", "namesrv-unknown"):
            return RemotingCommand.request(UNKNOWN_CODE, {"note": text})
        if what.startswith("heartbeat "):
            return requests.heartbeat(what.split()[1], consumer_groups={
                GROUP: [{"topic": TOPIC, "subString": "*", "classFilterMode": False, "tagsSet": [], "codeSet": [],
                         "subVersion": 0, "expressionType": "TAG"}]})
        if what.startswith("running-info "):
            return RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {
                "consumerGroup": GROUP, "clientId": what.split()[1], "jstackEnable": False})
        return requests.broker_config()

    def _frame(self, what: str, slot: int, kind: str, text: str) -> tuple[bytes, RemotingCommand | None]:
        opaque = OPAQUE_BASE + slot
        flag = RPC_ONEWAY_FLAG if kind == "oneway" else RPC_RESPONSE_FLAG if kind == "flagged" else 0
        if what.endswith("odd"):
            write = odd_binary_request if self.serialize == SerializeType.ROCKETMQ else odd_json_request
            return write(UNKNOWN_CODE, opaque, flag, text), None
        made = self._command(what, slot, text)
        assert isinstance(made, RemotingCommand)
        command = attrs.evolve(made, opaque=opaque, flag=made.flag | flag,
                               ext_fields={**made.ext_fields, "note": text})
        return encode(command, self.serialize), command

    def _expected(self, call: Call, code: int, fault: str) -> tuple[int, str | None] | None:
        """The answer an oracle (or the injected fault) decides for the call (None: none decides it, or it gets
        none)."""
        if fault == "fail":
            assert call.rule is not None
            return call.rule.response_code, call.rule.remark
        if call.conn.target == "namesrv":
            return wire.unknown_code_answer(False, code) if code == UNKNOWN_CODE else None
        if code == UNKNOWN_CODE:
            return wire.unknown_code_answer(True, code)
        return wire.vip_channel_answer(code) if call.conn.target == "vip" else None

    def _request(self, conn: Conn, what: str, kind: str, fault: str, text: str) -> tuple[Call, bytes]:
        """Make the call (not sent yet): its frame, its fault rule, what the network and the oracles say of it, and
        ``RequestSent`` driven in the spec."""
        assert self.served is not None
        slot = self._free_slots()[0]
        if what == "view" and not self.commit_offsets:
            what = "config"
        data, command = self._frame(what, slot, kind, text)
        request = wire.parse_frame(data)
        if isinstance(request, wire.Refused):
            self.fail(f"WIRE-1/WIRE-3: the codec wrote a request a 4.9.8 peer refuses ({request.reason}): "
                      f"{data[:80]!r}")
        if command is not None:
            problem = request_disagreement(request, command, self.serialize)
            if problem:
                self.fail(problem)
        if kind == "flagged" or not self.profile.faults:
            fault = "none"
        node = "namesrv" if conn.target == "namesrv" else "broker-a"
        rule = None
        if fault != "none":
            spec: dict[str, Any] = {"action": fault, "target": node, "request": request.code, "times": 1,
                                    "client": conn.raw.local}
            if fault == "fail":
                spec |= {"code": "SYSTEM_ERROR", "remark": f"injected {text}"}
            elif fault == "delay":
                spec["ms"] = DELAY_MS
            rule = self.served.faults.add(fault_rule(spec))
        oneway = kind == "oneway"
        # A oneway request a fault answers is lost (no answer goes back), as one a fault drops.
        delivered = 0 if conn.closed_by or fault == "drop" or (oneway and fault == "fail") else \
            2 if fault == "duplicate" else 1
        call = Call(slot, conn, what, kind, request, rule, delivered, lost=int(fault == "drop_response"))
        conn.spoke = conn.spoke or not conn.closed_by
        call.expected = self._expected(call, request.code, fault)
        call.may_expire = self.profile.name == "queues" and what in ("send", "batch")
        if command is not None and command.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            call.sent = sent_messages(command)
        silent = call.expected is None and conn.target == "namesrv" and request.code == UNKNOWN_CODE \
            and kind == "plain"
        self.drive(wire.RequestSent(slot, oneway=oneway, flagged=kind == "flagged", silent=silent),
                   f"{kind} {what} on connection {conn.index} ({conn.target}) with fault {fault}")
        call.waiting = not oneway
        self.calls[slot] = call
        self.by_key[(conn.raw.local, request.opaque)] = call
        return call, data

    def _write(self, conn: Conn, data: bytes, cuts: tuple[int, ...] = ()) -> None:
        """Write ``data`` on ``conn``, in pieces at ``cuts``: after each piece the server has read it (a partial
        frame held), or a bounded wait ran out."""
        assert self.served is not None
        guard = self.served.guard

        def held() -> None:
            if not conn.closed_by:
                wait_until(lambda: guard.partial_bytes > 0 or conn.raw.eof, 0.5)

        conn.raw.write(data, cuts, held)

    def _give_up(self, call: Call, why: str) -> None:
        """``CallerTimesOut``: the test's client stops waiting (WIRE-5)."""
        self.drive(wire.CallerTimesOut(call.slot), why)
        call.waiting = False

    # ------------------------------------------------------------------------------------------------ settling
    def _settled(self, state: wire.ConnectionState) -> wire.ConnectionState:
        """``state`` with every action taken that the spec enables and the network does not prevent: the copies the
        network delivers arrive, every copy the spec lets the server answer is answered, every answer not lost
        reaches the client (unless its connection closed)."""
        table = self.TABLE
        for slot, call in self.calls.items():
            for action, more in ((wire.RequestArrives(slot), lambda c, call=call: c.copies < call.delivered),
                                 (wire.ServerAnswers(slot), lambda c: True),
                                 (wire.ResponseArrives(slot), lambda c, call=call: not call.conn.raw.eof
                                  and c.arrived < c.answers - call.lost)):
                while table.enabled(state, action) and more(wire.call_of(state, slot)):
                    state = table.step(state, action)
        return state

    def _pump(self) -> None:
        """Read what arrived, let the server's loop finish what it began, then replay: first what the server did,
        then what the client read (a response is read only after it was written)."""
        assert self.served is not None
        read = [(conn, raw) for conn in self.conns if not conn.seen_closed for raw in conn.raw.read()]
        self.served.submit(lambda: None)
        for action in self.log.take():
            call = self.calls[action.opaque]
            if isinstance(action, wire.RequestArrives):
                call.copies += 1
            elif isinstance(action, wire.ServerAnswers):
                call.answers += 1
            self.observe(action, self.TABLE.label(action))
        for conn, raw in read:
            self._response(conn, raw)
        for conn in self.conns:
            if conn.raw.garbage:
                self.fail(f"WIRE-1: connection {conn.index}: {conn.raw.garbage}")
            if conn.raw.eof and not conn.seen_closed:
                conn.seen_closed = True
                for call in self.calls.values():
                    if call.conn is conn and call.waiting:
                        self._give_up(call, f"connection {conn.index} closed")

    def _response(self, conn: Conn, raw: bytes) -> None:
        """A frame the client read: read by the spec and the codec alike (WIRE-1..3), an answer to one of its
        requests in that request's serialize type (WIRE-4), handed to the caller while it waits (WIRE-5)."""
        frame, command, problem = read_both(raw)
        if problem:
            self.fail(problem)
        assert frame is not None and command is not None
        if not frame.is_response:
            self._server_request(conn, frame)
            return
        call = self.by_key.get((conn.raw.local, frame.opaque))
        if call is None:
            self.fail(f"WIRE-4/WIRE-7: connection {conn.index} read a response under opaque {frame.opaque}, no "
                      "request's (the server answered a frame with the response bit?)")
        # A flow-control answer is the server's own command: written in its own serialize type (WIRE-17).
        if not wire.answers(call.request, attrs.evolve(frame, serialize_type=call.request.serialize_type)):
            self.fail(f"WIRE-4: {frame!r} is no answer to {call.request!r}")
        self.observe(wire.ResponseArrives(call.slot), self.TABLE.label(wire.ResponseArrives(call.slot)))
        call.responses.append(frame)
        call.commands.append(command)
        if call.what.startswith("running-info") and frame.code == ResponseCode.SUCCESS and frame.body != CLIENT_ANSWER:
            self.fail(f"WIRE-7: the broker forwarded {frame.body!r}, not what the consumer answered its request with")
        if call.waiting:
            call.waiting = False
            call.handed += 1
        problem = check_messages(call, command, self.calls.values(), self.commit_offsets)
        if problem:
            self.fail(problem)

    def _server_request(self, conn: Conn, frame: wire.Frame) -> None:
        """A request the server sends on its own (a broker's NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO):
        in the server's own serialize type (WIRE-17); the client answers it, unless oneway, with the response bit
        under its opaque, which the server takes for the answer to its request (WIRE-7)."""
        own = wire.serialize_type_written(None)
        if frame.serialize_type != own:
            self.fail(f"WIRE-17: the server wrote its own request in {frame.serialize_type.name}, not {own.name}: "
                      f"{frame!r}")
        conn.server_requests.append(frame.code)
        if not frame.is_oneway:
            answer = RemotingCommand(code=ResponseCode.SUCCESS, opaque=frame.opaque, flag=RPC_RESPONSE_FLAG,
                                     body=CLIENT_ANSWER)
            conn.raw.write(encode(answer, self.serialize))

    def _quiet(self) -> bool:
        assert self.served is not None
        return self._settled(self.state) == self.state and all(
            c.rule is None or c.rule.fired or c.conn.closed_by for c in self.calls.values()) and all(
            c.raw.eof for c in self.conns if c.closed_by) and self.served.connections() == len(self._open())

    def _settle(self) -> None:
        """Until the server has settled (see the module's docstring), or a bounded wait ran out."""
        assert self.served is not None
        deadline = time.monotonic() + SETTLE_S
        while True:
            self._pump()
            if self._quiet() or time.monotonic() >= deadline:
                break
            wait_readable([c.raw for c in self.conns if not c.seen_closed], 0.005)
        self.served.faults.clear()
        self.served.submit(lambda: None)  # what the loop does once a connection is gone (its observers told) is done
        self.quiet_since = time.monotonic()

    # ------------------------------------------------------------------------------------------------ projections
    def _spec_answer(self, call: Call) -> Any:
        actual = first_answer(call.responses)
        if call.stalled_ms is not None:
            found = _WAITED.search(actual[1] or "") if actual else None
            waited, size = (int(found[1]), int(found[2])) if found and int(found[1]) >= call.stalled_ms else \
                (call.stalled_ms, 0)
            return wire.fast_failure_answer(waited, self.profile.limits.max_wait_ms[Executor.SEND], size)
        return one_of(actual, (call.expected, *call.allowed))

    def _spec_types(self, call: Call, arrived: int) -> tuple[str, ...]:
        """The serialize type of each response the spec says the client reads: a processor's answer in its
        request's (WIRE-4), a flow-control answer in the server's own (WIRE-15, WIRE-17)."""
        kinds = [flow_control(r) for r in call.responses[:arrived]]
        kinds += [False] * (arrived - len(kinds))
        return tuple(wire.serialize_type_written(None if own else call.request.serialize_type).name for own in kinds)

    def _decided(self, call: Call) -> bool:
        return call.expected is not None or call.stalled_ms is not None

    def project_spec(self) -> dict[str, Any]:
        settled = self._settled(self.state)
        calls = {slot: wire.call_of(settled, slot) for slot in self.calls}
        answers = {slot: self._spec_answer(call) for slot, call in self.calls.items()
                   if calls[slot].arrived and self._decided(call)}
        # Where the spec lets the server refuse a request or not (the queue's room depends on timing), the refusals
        # counted are those it chose among the allowed (WIRE-15).
        overload = wire.overload_answer(False, False)
        chosen = [first_answer(c.responses) for c in self.calls.values()]
        refused = sum(a == overload and (c.expected == overload or overload in c.allowed)
                      for a, c in zip(chosen, self.calls.values(), strict=True))
        expired = sum(a is not None and (a[1] or "").startswith("[TIMEOUT_CLEAN_QUEUE]") and c.may_expire
                      for a, c in zip(chosen, self.calls.values(), strict=True))
        return {
            WAITING: {k: c.waiting for k, c in calls.items() if not c.oneway},
            SEEN: {k: c.seen for k, c in calls.items() if not c.oneway},
            WORK: {k: (c.copies, c.answers, c.arrived) for k, c in calls.items()},
            SERIALIZE: {k: self._spec_types(self.calls[k], c.arrived) for k, c in calls.items()},
            ANSWERS: answers,
            CONNECTIONS: {c.index: "closed" if c.closed_by else "open" for c in self.conns},
            LOAD: {
                "frame errors": sum(c.refused_frame for c in self.conns),
                "refused requests": refused,
                "expired requests": expired,
                "queued": (0, 0),
                "connections": len(self._open()),
                "refused connections": self.counts["refused_connections"],
                "closed idle": self.counts["closed_idle"],
                "closed slow": self.counts["closed_slow"],
                "closed unread": 0,
                "closes observers heard of": sum(c.spoke and bool(c.closed_by) for c in self.conns),
            },
        }

    def project_system(self) -> dict[str, Any]:
        assert self.served is not None
        load = self.served.load()
        answers = {slot: first_answer(call.responses) for slot, call in self.calls.items()
                   if call.responses and self._decided(call)}
        return {
            WAITING: {k: c.waiting for k, c in self.calls.items() if c.kind != "oneway"},
            SEEN: {k: c.handed for k, c in self.calls.items() if c.kind != "oneway"},
            WORK: {k: (c.copies, c.answers, len(c.responses)) for k, c in self.calls.items()},
            SERIALIZE: {k: tuple(SerializeType(r.serialize_type).name for r in c.responses)
                        for k, c in self.calls.items()},
            ANSWERS: answers,
            CONNECTIONS: {c.index: "closed" if c.raw.eof else "open" for c in self.conns},
            LOAD: {
                "frame errors": self.served.frame_errors(),
                "refused requests": load["refused_requests"],
                "expired requests": load["expired_requests"],
                "queued": (load["queued_requests"], load["queued_bytes"]),
                "connections": load["connections"],
                "refused connections": load["refused_connections"],
                "closed idle": load["closed_idle"],
                "closed slow": load["closed_slow"],
                "closed unread": load["closed_unread"],
                "closes observers heard of": self.server_closed,
            },
        }


