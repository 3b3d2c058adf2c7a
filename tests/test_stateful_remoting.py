"""Lockstep: the remoting spec (WIRE-*) drives the reference implementation's network, frame codec and message codec.

Each run draws its configuration (``tests/dimensions.py``): the serialize type every frame is written in (JSON or
ROCKETMQ binary headers), which flags the raw requests may carry (plain requests only; oneway ones too; and frames
with the response bit), and what the text of ext fields and message properties is (ASCII, non-ASCII, empty values).
A simulated ``Cluster`` (one broker, topic ``T`` of two queues) and a raw client on its in-process network, whose
every frame crosses the codec.

Rules are the connection machine's ``RequestSent`` (driven): a raw request to the broker or the name server, plain,
oneway or marked as a response, of one of several kinds (a config query, a send with properties, a batch send, a
pull), with a fault on the way (the request lost, the response lost, the request duplicated, the response late); and
time passing. The implementation's actions are observed: each copy of a request the server processes
(``RequestArrives``), each response it writes (``ServerAnswers``), each response frame that reaches the client
(``ResponseArrives``), each caller that gives up (``CallerTimesOut``); each must be enabled where the spec is. After
every step the projections are compared: which callers still wait and which were given a response (WIRE-5, WIRE-8).

Every frame on the network (the broker's and the name server's own too) is also checked as it crosses: the bytes the
codec writes, read by the spec's ``parse_frame``, must be the command that was sent and what the codec's decoder
reads (WIRE-1, WIRE-2, WIRE-3); a send's properties string, a batch body and a pull response's stored messages, read
by ``parse_properties``, ``parse_batch_body`` and ``parse_stored_messages``, must be what refimpl's message codec
reads (WIRE-9, WIRE-10, WIRE-11).
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, ClassVar

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, variant_caught, variant_needs

from rocketspec.refimpl import Cluster
from rocketspec.refimpl import frame as frame_module
from rocketspec.refimpl import message as message_module
from rocketspec.refimpl import remoting as remoting_module
from rocketspec.refimpl.frame import FrameError, FrameReader, decode, encode
from rocketspec.refimpl.message import (
    Message,
    decode_batch,
    decode_offset_message_id,
    decode_properties,
    decode_stored_messages,
    encode_batch,
    encode_stored_message,
    java_message_id_offset,
)
from rocketspec.refimpl.remoting import RemotingCommand, RemotingSendRequestError, RemotingTimeoutError
from rocketspec.refimpl.runtime import Future
from rocketspec.spec import remoting as wire
from rocketspec.spec.protocol import (
    RPC_RESPONSE_FLAG,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_ZLIB,
    RequestCode,
    ResponseCode,
    SerializeType,
)

TOPIC = "T"
GROUP = "WG"
SLOTS = 8
TIMEOUT_MS = 100
#: The text of ext fields and properties, by the wire.extFields value the run drew.
TEXTS = {"ascii": ("hello", "v-1"), "non-ascii": ("héllo wörld", "値 🚀 ключ"), "empty": ("", "x")}
#: Which request kinds each wire.flags value allows: plain requests, oneway ones, requests with the response bit.
FLAG_KINDS = {"request": ("plain",), "oneway": ("plain", "oneway"), "response": ("plain", "oneway", "flagged")}
FAULTS = ("none", "none", "drop", "drop_response", "duplicate", "late", "fail", "disconnect")
#: How a fault rule names the request it applies to: by number, by name, by its number as text, or any request from
#: the raw client's node (refimpl.faults.parse_request_code).
NAMED_BY = st.sampled_from(("code", "name", "digits", "any"))
#: Time a send rule lets pass after it (hypothesis may leave the time rule out of a program: frames still flow).
THEN = st.sampled_from((0, 1, 2, 5))
REQUESTS = ("config", "send", "compressed", "batch", "pull", "view", "namesrv", "unknown", "unknown-namesrv",
            "heartbeat", "running-info", "direct", "direct-bad", "earliest", "malformed")
#: Message ids a peer may name in CONSUME_MESSAGE_DIRECTLY that a 4.9.8 broker cannot read (WIRE-19): empty, too
#: short, a port out of range, no digits at all, an offset with nothing stored there.
BAD_MSG_IDS = ("", "7F00", "7F000001FFFFFFFF0000000000000000", "zz" * 16, "7F0000010000277B", "x" * 56,
               "7F0000010000277B000000003B9ACA00")
#: A request code no server has a processor for (WIRE-12).
UNKNOWN_CODE = 9999
# The parts of the projection, each named with the clauses that decide it.
WAITING = "callers still waiting (WIRE-5, WIRE-7, WIRE-8)"
SEEN = "responses each caller was given (WIRE-4, WIRE-5, WIRE-8)"


def _inflated(message: wire.StoredMessage) -> bytes:
    """The body a consumer gets: a compressed one (sysFlag 0x1) inflated."""
    return zlib.decompress(message.body) if message.sys_flag & SYSFLAG_COMPRESSED else message.body


def _frame(kind: int, header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), (kind << 24) | len(header)) + header + body


_JSON_VALUES = st.one_of(st.integers(-3, 300), st.text(max_size=4), st.booleans(), st.none(),
                         st.floats(allow_nan=False, allow_infinity=False, width=32),
                         st.lists(st.integers(), max_size=2))
#: JSON headers as peers write them: fields missing, of other types, extFields values that are not strings.
JSON_FRAMES = st.builds(
    lambda header, body: _frame(0, json.dumps(header, ensure_ascii=False).encode(), body),
    st.fixed_dictionaries({}, optional={
        "code": _JSON_VALUES, "opaque": _JSON_VALUES, "flag": st.sampled_from([0, 1, 2, 3, "2"]),
        "version": _JSON_VALUES, "language": st.sampled_from(["JAVA", "CPP", "GO", "PYTHON", "RUST", 0, 9]),
        "remark": st.one_of(st.none(), st.text(max_size=5), st.integers()),
        "extFields": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), _JSON_VALUES, max_size=3))}),
    st.binary(max_size=4))
#: Binary headers: the fixed part, a remark and ext fields whose lengths may lie.
BINARY_FRAMES = st.builds(
    lambda fixed, remark, fields, cut, body: _frame(1, (fixed + remark + fields)[:cut] if cut else
                                                    fixed + remark + fields, body),
    st.builds(lambda c, lang, v, o, f: struct.pack(">hbhii", c, lang, v, o, f), st.integers(-5, 400),
              st.integers(0, 12), st.integers(0, 500), st.integers(-2, 2**31 - 1), st.integers(0, 3)),
    st.one_of(st.just(struct.pack(">i", 0)), st.builds(lambda t: struct.pack(">i", len(t)) + t,
                                                       st.text(max_size=4).map(lambda x: x.encode()))),
    st.builds(lambda pairs: struct.pack(">i", sum(6 + len(k) + len(v) for k, v in pairs))
              + b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in pairs),
              st.lists(st.tuples(st.binary(max_size=3), st.binary(max_size=3)), max_size=2)),
    st.integers(0, 30), st.binary(max_size=3))


def frame_disagreement(data: bytes) -> str | None:
    """How refimpl's frame reader and decoder read ``data`` differently from the spec's ``parse_frame`` (None when
    both read the same command, or both refuse it; WIRE-1, WIRE-2, WIRE-3, WIRE-6)."""
    read = wire.parse_frame(data)
    try:
        frames = FrameReader().feed(data)
        if len(frames) != 1:
            raise FrameError(f"{len(frames)} frames")
        decoded, kind = decode(frames[0])
    except FrameError as error:
        if isinstance(read, wire.Refused):
            return None
        return f"WIRE-1/WIRE-6: refimpl refuses a frame a 4.9.8 peer reads ({error}): {data!r}"
    if isinstance(read, wire.Refused):
        return f"WIRE-1/WIRE-6: refimpl reads a frame a 4.9.8 peer refuses ({read.reason}): {data!r}"
    spec_view = (int(read.serialize_type), read.code, read.opaque, read.flag, read.remark, dict(read.ext_fields),
                 read.body, read.version)
    codec_view = (int(kind), decoded.code, decoded.opaque, decoded.flag, decoded.remark, decoded.ext_fields,
                  decoded.body or b"", decoded.version)
    if spec_view != codec_view or (read.language is not None and read.language != decoded.language):
        return (f"WIRE-2/WIRE-3: a peer's frame read two ways differs: {data!r}\n  spec:  {spec_view} "
                f"{read.language}\n  codec: {codec_view} {decoded.language}")
    return None


#: Headers peers write, each read as the 4.9.8 jar reads it (see test_frame_codec.py): null and boolean numbers,
#: numeric text, decimals that wrap, numbers past an int, languages by name in any case or by ordinal, decimals and
#: nested values in ext fields, a truncated binary header, an oversized length.
PEER_FRAMES = tuple(
    [_frame(0, h.encode()) for h in (
        '{"code": null}', '{"code": true, "flag": false}', '{"code": "+12", "opaque": "-3"}',
        '{"code": "\u0661\u0662"}',
        '{"code": 3e9}', '{"code": -1.5}', '{"code": 3000000000}', '{"code": " 12"}', '{"code": ""}',
        '{"language": "pYtHoN"}', '{"language": 3}', '{"language": "3"}', '{"language": 99}', '{"language": true}',
        '{"extFields": {"a": 1.50, "b": 1e3, "c": -0.0, "d": {"x": [1, true, null]}, "e": null}}',
        '{"remark": [1, "a"], "version": 1.9}', '{"code": NaN}', '{"code": [1]}', '[1]', '{"extFields": [1]}')]
    + [_frame(1, struct.pack(">hbhii", 26, 0, 409, 7, 0) + struct.pack(">i", 2) + "é".encode() + struct.pack(">i", 0)),
       _frame(1, struct.pack(">hbhii", 26, 0, 409, 7, 0) + struct.pack(">i", 9)),
       _frame(1, struct.pack(">hbhii", 26, 0, 409, 7, 0) + struct.pack(">ii", 0, 9) + b"\x00\x01k"),
       _frame(2, b"{}"), struct.pack(">ii", 17 * 2**20, 0), struct.pack(">ii", 4, 12)])


@attrs.define(eq=False)
class Sent:
    """One request of the raw client: its slot in the spec, the command, its kind and the caller's future."""

    slot: int
    command: RemotingCommand
    kind: str
    what: str
    client: Any
    future: Future[RemotingCommand] | None
    deferred: int = 0  # copies the server took without answering at once (it answers through the channel later)


def _request_name(code: int) -> str:
    """A request code's RequestCode name, its number as text for a code RequestCode does not name."""
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


class _ConsumerHandler:
    """A raw client's answers to the broker's calls: its running info, and a message consumed directly, whose body
    must be the stored message the message id names (WIRE-9, WIRE-19)."""

    def __init__(self, machine: RemotingMachine) -> None:
        self.machine = machine

    def handle(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            offset = wire.message_id_offset(request.ext_fields.get("msgId", ""))
            stored = wire.parse_stored_messages(request.body or b"")
            if isinstance(offset, wire.Refused) or [m.commit_log_offset for m in stored] != [offset]:
                self.machine.fail_later(f"WIRE-19: the message id {request.ext_fields.get('msgId')!r} (offset "
                                        f"{offset}) forwarded {[m.commit_log_offset for m in stored]}")
            return request.response(ResponseCode.SUCCESS, body=b'{"order":false,"autoCommit":true}')
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            return request.response(ResponseCode.SUCCESS, body=b'{"properties":{}}')
        return None


class RemotingMachine(LockstepMachine):
    """A raw client's requests on one connection per server, stepped with the spec's connection machine, every
    frame and message on the network checked against the spec's readers (WIRE-1..11)."""

    TABLE = wire.TRANSITIONS
    DIMENSIONS = ("wire.serializeType", "wire.flags", "wire.extFields")
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {}
    DRIVEN = (wire.RequestSent,)
    OBSERVED = (wire.RequestArrives, wire.ServerAnswers, wire.ResponseArrives, wire.CallerTimesOut)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.sent: dict[int, Sent] = {}  # by opaque
        self.log: list[wire.Action] = []
        self.frames = 0
        self.msg_ids: list[str] = []  # offset message ids the broker answered sends with

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        self.serialize = SerializeType.JSON if config["wire.serializeType"] == "json" else SerializeType.ROCKETMQ
        self.kinds = FLAG_KINDS[config["wire.flags"]]
        self.texts = TEXTS[config["wire.extFields"]]
        self.cluster = Cluster(brokers=1, clock="simulated", seed=5, keep_events=False)
        network = self.cluster.network
        network.wire = self._wire
        self.cluster.create_topic(TOPIC, queues=2)
        self.broker = self.cluster.brokers["broker-a"]
        self.broker_addr = self.broker.config.addr
        for server in (self.broker, self.cluster.namesrv):
            original = server.handle
            server.handle = self._handler(original)  # type: ignore[method-assign]
        deliver = network._deliver_response

        def deliver_response(conn: Any, response: RemotingCommand, extra: int) -> None:
            # A response the server writes after its handler returned (a call to a consumer answered): ServerAnswers.
            sent = self.sent.get(response.opaque)
            if sent is not None and sent.deferred and conn.open:
                sent.deferred -= 1
                self.log.append(wire.ServerAnswers(sent.slot))
            deliver(conn, response, extra)

        network._deliver_response = deliver_response  # type: ignore[method-assign]
        # Two raw clients: born hosts of IPv4 and IPv6 (sysFlag 0x10, WIRE-9), each a consumer of GROUP that answers
        # the broker's calls (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY).
        self.clients = {"v4": network.client("raw-client"), "v6": network.client("raw-v6", host="[::1]")}
        for client in self.clients.values():
            client.set_handler(_ConsumerHandler(self))
            client.invoke(self.broker_addr, self._heartbeat(client), 1000)
        self.cluster.advance(5)
        assert network.node_of(self.broker_addr) == "broker-a"
        self.begin(wire.ConnectionState(wire.Config(self.serialize, slots=SLOTS)))

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    # ------------------------------------------------------------------------------------------------ observing
    def _wire(self, command: RemotingCommand) -> RemotingCommand:
        """Every frame crossing the network: written by the codec, read by the spec and by the codec's decoder; the
        three must agree (WIRE-1, WIRE-2, WIRE-3), and so must the messages it carries (WIRE-9, WIRE-10, WIRE-11)."""
        self.frames += 1
        data = encode(command, self.serialize)
        read = wire.parse_frame(data)
        if isinstance(read, wire.Refused):
            self.fail_later(f"WIRE-1/WIRE-6: the codec wrote a frame a 4.9.8 peer refuses ({read.reason}): {command!r}")
            return command
        reader = FrameReader()
        cut = len(data) // 2
        whole = reader.feed(data[:cut]) + reader.feed(data[cut:])
        if whole != [data[4:]] or reader.pending:
            self.fail_later(f"WIRE-1: a frame fed in two pieces came out as {len(whole)} frame(s), "
                            f"{reader.pending} bytes held")
        try:
            decoded, kind = decode(data[4:])
        except FrameError as error:
            self.fail_later(f"WIRE-1/WIRE-3: refimpl cannot read a frame it wrote ({error}): {command!r}")
            return command
        spec_view = (int(read.serialize_type), read.code, read.opaque, read.flag, read.remark,
                     dict(read.ext_fields), read.body)
        codec_view = (int(kind), decoded.code, decoded.opaque, decoded.flag, decoded.remark, decoded.ext_fields,
                      decoded.body or b"")
        sent_view = (int(self.serialize), command.code, command.opaque, command.flag, command.remark,
                     dict(command.ext_fields), command.body or b"")
        if not spec_view == codec_view == sent_view:
            self.fail_later("WIRE-1/WIRE-2/WIRE-3: a frame read three ways differs\n"
                      f"  sent:       {sent_view}\n  spec reads: {spec_view}\n  codec reads: {codec_view}")
        self._check_messages(decoded, command)
        sent = self.sent.get(command.opaque)
        if sent is not None:
            if self._outgoing(command, sent):
                if sent.kind == "flagged":
                    self.log.append(wire.RequestArrives(sent.slot))
            else:
                self.log.append(wire.ResponseArrives(sent.slot))
                if decoded.code == ResponseCode.SUCCESS and "msgId" in decoded.ext_fields:
                    self.msg_ids.append(decoded.ext_fields["msgId"].split(",")[0])
        return decoded

    @staticmethod
    def _outgoing(command: RemotingCommand, sent: Sent) -> bool:
        """Whether a frame under a sent request's opaque is that request (a oneway one is sent as the client marks
        it; nothing answers it) rather than a response to it."""
        return command is sent.command or sent.kind == "oneway"

    def _check_messages(self, command: RemotingCommand, original: RemotingCommand) -> None:
        """The message payloads a frame carries, read by the spec and by refimpl's message codec (``original``: the
        command as it was sent)."""
        sent = self.sent.get(command.opaque)
        if command.is_response and not (sent is not None and self._outgoing(original, sent)):
            if sent is not None and sent.what == "direct-bad" and command.code == ResponseCode.SYSTEM_ERROR:
                read = wire.message_id_offset(sent.command.ext_fields["msgId"])
                if isinstance(read, wire.Refused) and not (command.remark or "").startswith(read.reason):
                    self.fail_later(f"WIRE-19: the message id {sent.command.ext_fields['msgId']!r} answered "
                                    f"{command.remark!r}, spec {read.reason}")
            if sent is not None and sent.command.code == UNKNOWN_CODE and sent.what == "unknown":
                expected = wire.unknown_code_answer(True, UNKNOWN_CODE)
                if command.code != ResponseCode.SYSTEM_BUSY and (command.code, command.remark) != expected:
                    self.fail_later(f"WIRE-12: an unknown code answered {(command.code, command.remark)}, spec "
                                    f"{expected}")
            if sent is not None and sent.what in ("pull", "view") and command.code == ResponseCode.SUCCESS \
                    and command.body:
                spec_read = [(m.topic, m.queue_id, m.queue_offset, m.flag, m.sys_flag, _inflated(m), dict(m.properties),
                              m.reconsume_times, m.born_timestamp, m.store_timestamp, m.commit_log_offset)
                             for m in wire.parse_stored_messages(command.body)]
                stored = wire.parse_stored_messages(command.body)
                decoded = decode_stored_messages(command.body, "broker-a")
                codec_read = [(m.topic, m.queue_id, m.queue_offset, m.flag, m.sys_flag, m.body, m.properties,
                               m.reconsume_times, m.born_timestamp, m.store_timestamp, m.commit_log_offset)
                              for m in decoded]
                ids = [wire.offset_message_id(m.store_host, m.store_port, m.commit_log_offset) for m in stored]
                if ids != [m.offset_msg_id for m in decoded]:
                    self.fail_later(f"WIRE-13: offset message ids {[m.offset_msg_id for m in decoded]}, spec {ids}")
                if spec_read != codec_read:
                    self.fail_later("WIRE-9/WIRE-10: a pull response's messages read two ways differ\n"
                                    f"  spec:  {spec_read}\n  codec: {codec_read}")
                self._check_stored(stored, decoded)
            return
        if command.code == RequestCode.SEND_BATCH_MESSAGE and command.body:
            batch = wire.parse_batch_body(command.body)
            if isinstance(batch, wire.Refused):
                self.fail_later(f"WIRE-11: the batch body refimpl wrote is refused: {batch.reason}")
                return
            spec_read = [(m.flag, m.body, dict(m.properties)) for m in batch]
            codec_read = [(e.flag, e.body, e.properties) for e in decode_batch(command.body)]
            if spec_read != codec_read:
                self.fail_later(f"WIRE-11/WIRE-10: a batch body read two ways differs\n  spec:  {spec_read}\n  codec: "
                          f"{codec_read}")
        properties = command.ext_fields.get("i") if command.code == RequestCode.SEND_MESSAGE_V2 else \
            command.ext_fields.get("properties") if command.code == RequestCode.SEND_MESSAGE else None
        if properties is not None:
            spec_props = dict(wire.parse_properties(properties))
            if spec_props != decode_properties(properties):
                self.fail_later(f"WIRE-10: a properties string read two ways differs: {properties!r}\n"
                                f"  spec:  {spec_props}\n  codec: {decode_properties(properties)}")

    def _check_stored(self, stored: tuple[wire.StoredMessage, ...], decoded: list[Any]) -> None:
        """Each message of a pull response once more: its offset id read back (WIRE-13, WIRE-19), written again by
        refimpl's store encoder and read by the spec (WIRE-9), its properties as refimpl's accessors give them."""
        for read, message in zip(stored, decoded, strict=False):
            host, port, offset = decode_offset_message_id(message.offset_msg_id)
            offsets = (offset, java_message_id_offset(message.offset_msg_id),
                       wire.message_id_offset(message.offset_msg_id))
            if offsets != (read.commit_log_offset,) * 3 or \
                    message_module.offset_message_id(host, port, offset) != message.offset_msg_id:
                self.fail_later(f"WIRE-13/WIRE-19: the offset id {message.offset_msg_id} reads back as {offsets}, "
                                f"spec {read.commit_log_offset}")
            again = encode_stored_message(
                topic=message.topic, queue_id=message.queue_id, body=bytearray(read.body), flag=message.flag,
                properties=wire.properties_text(read.properties), sys_flag=read.sys_flag,
                born_timestamp=message.born_timestamp, born_host=message.born_host,
                store_timestamp=message.store_timestamp, store_host=message.store_host,
                reconsume_times=message.reconsume_times,
                prepared_transaction_offset=message.prepared_transaction_offset,
                queue_offset=message.queue_offset, commit_log_offset=message.commit_log_offset)
            if wire.parse_stored_messages(again) != (read,):
                self.fail_later(f"WIRE-9: a stored message written again reads {wire.parse_stored_messages(again)}, "
                                f"was {read}")
            props = dict(read.properties)
            accessors = (message.unique_key, message.get_property("TAGS"), message.delay_level,
                         message.transaction_type)
            expected = (props.get("UNIQ_KEY"), props.get("TAGS"), int(props.get("DELAY", 0)), read.sys_flag & 0xC)
            if accessors != expected:
                self.fail_later(f"WIRE-9/WIRE-10: a stored message's accessors give {accessors}, spec {expected}")

    def _heartbeat(self, client: Any) -> RemotingCommand:
        """A HEART_BEAT making ``client`` a consumer of GROUP (the broker's calls to consumers then reach it)."""
        subscription = {"topic": TOPIC, "subString": "*", "tagsSet": [], "codeSet": [], "subVersion": 0,
                        "expressionType": "TAG", "classFilterMode": False}
        body = {"clientID": f"raw@{client.node}", "producerDataSet": [], "consumerDataSet": [{
            "groupName": GROUP, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": [subscription],
            "unitMode": False}]}
        return RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(body).encode())

    def _handler(self, original: Any) -> Any:
        """The server's processing of each request copy that reaches it, and the response it writes."""

        def handle(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            response = original(request, channel)
            sent = self.sent.get(request.opaque)
            if sent is not None and response is None and not request.is_oneway and sent.kind == "plain":
                sent.deferred += 1
            if sent is not None:
                if sent.kind != "flagged":
                    self.log.append(wire.RequestArrives(sent.slot))
                # A frame with the response bit processed as a request is the implementation's ServerAnswers,
                # whatever it returns: the spec never enables it (WIRE-7).
                if sent.kind == "flagged" or (response is not None and not request.is_oneway):
                    self.log.append(wire.ServerAnswers(sent.slot))
            return response

        return handle

    def _timed_out(self, sent: Sent) -> Any:
        def done(future: Future[RemotingCommand]) -> None:
            # A timeout, or the connection closing under a waiting caller (failFast, WIRE-18).
            if isinstance(future.exception(), (RemotingTimeoutError, RemotingSendRequestError)):
                self.log.append(wire.CallerTimesOut(sent.slot))
        return done

    def _replay(self) -> None:
        """The implementation's actions since the last rule, in the order they happened."""
        self.raise_deferred()
        while self.log:
            action = self.log.pop(0)
            self.observe(action, self.TABLE.label(action))

    # ------------------------------------------------------------------------------------------------ rules
    def _free_slot(self) -> int | None:
        if self.spec is None:
            return None
        return next((i for i, c in enumerate(self.state.calls) if c is None), None)

    def _request(self, kind: str, target: str, note: str, client: Any) -> RemotingCommand:
        fields: dict[str, object] = {"note": note}
        variant = len(self.sent)
        code: int = RequestCode.GET_BROKER_CONFIG
        body: bytes | None = None
        if kind.startswith("unknown"):
            code = UNKNOWN_CODE
        elif target == "namesrv":
            code = RequestCode.GET_NAMESRV_CONFIG
        elif kind == "heartbeat":
            return self._heartbeat(client)
        elif kind == "running-info":
            code = RequestCode.GET_CONSUMER_RUNNING_INFO
            fields |= {"consumerGroup": GROUP, "clientId": f"raw@{client.node}", "jstackEnable": False}
        elif kind in ("direct", "direct-bad"):
            code = RequestCode.CONSUME_MESSAGE_DIRECTLY
            msg_id = self.msg_ids[-1] if kind == "direct" and self.msg_ids else BAD_MSG_IDS[variant % len(BAD_MSG_IDS)]
            fields |= {"consumerGroup": GROUP, "clientId": f"raw@{client.node}", "msgId": msg_id}
        elif kind == "earliest":
            code = RequestCode.GET_EARLIEST_MSG_STORETIME
            fields |= {"topic": TOPIC, "queueId": ("0", "x", "99999999999")[variant % 3]}
        elif kind == "malformed":
            code = RequestCode.GET_MAX_OFFSET
            fields |= ({"queueId": 0}, {"topic": TOPIC}, {"topic": TOPIC, "queueId": "x"})[variant % 3]
        elif kind in ("send", "compressed"):
            message = Message(TOPIC, bytearray(note.encode() or b"-"), tags="TagA",
                              keys=["k1", self.texts[1]] if variant % 2 else f"k1 {self.texts[1]}")
            message.properties["user"] = note
            message.wait_store_msg_ok = bool(variant % 2)
            message.put_property("scratch", "x")
            message.remove_property("scratch")
            code = RequestCode.SEND_MESSAGE_V2
            body = bytes(message.body)
            sys_flag = 0
            if kind == "compressed":
                body, sys_flag = zlib.compress(body * 50), SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZLIB
            fields |= {"a": "PG", "b": TOPIC, "c": "TBW102", "d": 4, "e": 0, "f": sys_flag, "g": 0, "h": 0,
                       "i": message_module.encode_properties(message.properties), "j": 0, "k": False, "m": False}
        elif kind == "batch":
            first = Message(TOPIC, b"b1", tags="TagB")
            second = Message(TOPIC, note.encode() or b"b2", keys=[self.texts[1]])
            second.properties["user"] = note
            code = RequestCode.SEND_BATCH_MESSAGE
            fields |= {"a": "PG", "b": TOPIC, "c": "TBW102", "d": 4, "e": 1, "f": 0, "g": 0, "h": 0, "i": "",
                       "j": 0, "k": False, "m": True}
            body = encode_batch([first, second])
        elif kind == "view" and self.msg_ids:
            code = RequestCode.VIEW_MESSAGE_BY_ID
            fields |= {"offset": message_module.decode_offset_message_id(self.msg_ids[-1])[2]}
        elif kind == "pull":
            code = RequestCode.PULL_MESSAGE
            fields |= {"consumerGroup": GROUP, "topic": TOPIC, "queueId": 0, "queueOffset": 0, "maxMsgNums": 8,
                       "sysFlag": 0, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*",
                       "subVersion": 0, "expressionType": "TAG"}
        return RemotingCommand.request(code, fields, body)

    @precondition(lambda self: self._free_slot() is not None)
    @rule(what=st.sampled_from(REQUESTS), fault=st.sampled_from(FAULTS), text=st.integers(0, 1), then=THEN,
          v6=st.booleans(), named_by=NAMED_BY)
    def send_request(self, what: str, fault: str, text: int, then: int, v6: bool, named_by: str) -> None:
        """``RequestSent``: a raw request on the connection (WIRE-4, WIRE-5), with a fault on the way."""
        self._send("plain", what, fault, text, then, v6, named_by)

    @precondition(lambda self: self._free_slot() is not None and "oneway" in self.kinds)
    @rule(what=st.sampled_from(REQUESTS), fault=st.sampled_from(FAULTS), text=st.integers(0, 1), then=THEN,
          v6=st.booleans(), named_by=NAMED_BY)
    def send_oneway(self, what: str, fault: str, text: int, then: int, v6: bool, named_by: str) -> None:
        """``RequestSent`` with the oneway bit: processed, never answered (WIRE-4, WIRE-5)."""
        self._send("oneway", what, fault, text, then, v6, named_by)

    @precondition(lambda self: self._free_slot() is not None and "flagged" in self.kinds)
    @rule(what=st.sampled_from(REQUESTS), fault=st.sampled_from(FAULTS), text=st.integers(0, 1), then=THEN,
          v6=st.booleans(), named_by=NAMED_BY)
    def send_marked_as_response(self, what: str, fault: str, text: int, then: int, v6: bool, named_by: str) -> None:
        """``RequestSent`` with the response bit: the server takes it for a response, never answers it (WIRE-7)."""
        self._send("flagged", what, fault, text, then, v6, named_by)

    def _send(self, kind: str, what: str, fault: str, text: int, then: int, v6: bool, named_by: str) -> None:
        """Send, then let ``then`` ms pass (0: the request is still on its way when the next rule runs)."""
        if what == "view" and not self.msg_ids:
            what = "config"
        slot = self._free_slot()
        assert slot is not None and self.cluster is not None
        target = "namesrv" if what in ("namesrv", "unknown-namesrv") else "broker"
        client = self.clients["v6" if v6 else "v4"]
        command = self._request(what, target, self.texts[text], client)
        if kind == "oneway" and text:
            command = attrs.evolve(command, flag=command.flag | 2)  # else invoke_oneway marks it
        elif kind == "flagged":
            command = attrs.evolve(command, flag=command.flag | RPC_RESPONSE_FLAG)
        node = "namesrv" if target == "namesrv" else "broker-a"
        addr = self.cluster.namesrv_addr if target == "namesrv" else self.broker_addr
        faults = self.cluster.faults
        request: int | str | None = {"code": command.code, "digits": str(command.code), "any": "*",
                                     "name": _request_name(command.code)}[named_by]
        by = {"client": client.node} if named_by == "any" else {}
        # A fault whose firing the machine observes (not assumes) may fire only by chance (the seeded generator).
        chance = {"probability": 0.5} if text and fault != "fail" else {}
        rule = None
        if fault == "drop":
            rule = faults.drop(node, request, times=1, **by, **chance)
        elif fault == "drop_response":
            rule = faults.drop(node, request, times=1, response=True, **by, **chance)
        elif fault == "duplicate":
            rule = faults.duplicate(node, request, times=1, **by, **chance)
        elif fault == "late":
            rule = faults.delay(node, request, ms=2 * TIMEOUT_MS, times=1, **by, **chance)
        elif fault == "disconnect":
            rule = faults.disconnect(node, request, times=1, **by, **chance)
        elif fault == "fail":
            busy = ("SYSTEM_BUSY", int(ResponseCode.SYSTEM_BUSY), str(int(ResponseCode.SYSTEM_BUSY)))[slot % 3]
            rule = faults.fail(node, request, code=busy, remark=self.texts[1], times=1, **by)
        silent = what == "unknown-namesrv" and kind == "plain" and fault != "fail"
        self.drive(wire.RequestSent(slot, oneway=kind == "oneway", flagged=kind == "flagged", silent=silent),
                   f"{kind} {what} ({command.code_name()}) with fault {fault} named by {named_by} from {client.addr}")
        sent = Sent(slot, command, kind, what, client, None)
        self.sent[command.opaque] = sent
        if kind == "oneway":
            client.invoke_oneway(addr, command)
        else:
            sent.future = client.invoke(addr, command, TIMEOUT_MS)
            sent.future.add_done_callback(self._timed_out(sent))
        if fault == "fail" and kind != "flagged":
            # The fault answers in the server's place, at once: the request counts as processed and answered (not a
            # frame with the response bit, which no server answers, WIRE-7).
            self.log.append(wire.RequestArrives(slot))
            if kind != "oneway":
                self.log.append(wire.ServerAnswers(slot))
        if rule is not None and slot % 2:
            faults.remove(rule)
        faults.clear()
        if then:
            self.cluster.advance(then)
        self._replay()

    @precondition(lambda self: self.cluster is not None)
    @rule(data=st.sampled_from(PEER_FRAMES))
    def peer_writes_a_frame(self, data: bytes) -> None:
        """A peer's odd frame, read by the spec and by refimpl's reader and decoder alike (WIRE-1..WIRE-3, WIRE-6)."""
        problem = frame_disagreement(data)
        if problem is not None:
            self.fail(problem)

    @precondition(lambda self: self.cluster is not None)
    @rule(v6=st.booleans())
    def client_closes(self, v6: bool) -> None:
        """A raw client closes its connections: its waiting callers fail at once (WIRE-18); the next request opens a
        new connection (and a heartbeat makes the client a consumer again)."""
        self.clients["v6" if v6 else "v4"].close()
        self._replay()

    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from((1, 2, 5, 50, TIMEOUT_MS, 3 * TIMEOUT_MS)))
    def time_passes(self, ms: int) -> None:
        """Time passes: frames arrive, servers answer, callers give up."""
        assert self.cluster is not None
        self.cluster.advance(ms)
        self._replay()

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        calls = {k: c for k, c in enumerate(self.state.calls) if c is not None and not c.oneway}
        return {WAITING: {k: c.waiting for k, c in calls.items()}, SEEN: {k: c.seen for k, c in calls.items()}}

    def project_system(self) -> dict[str, Any]:
        sent = {s.slot: s for s in self.sent.values() if s.future is not None}
        return {
            WAITING: {k: s.client.waiting(s.command.opaque) for k, s in sent.items()},
            SEEN: {k: int(s.future is not None and s.future.done() and s.future.exception() is None)
                   for k, s in sent.items()},
        }


test_remoting_machine = machine_test(RemotingMachine, 60, 30)


@settings(max_examples=300)
@given(data=st.one_of(JSON_FRAMES, BINARY_FRAMES, st.binary(max_size=40)))
def test_a_peers_frame_is_read_as_the_spec_reads_it(data: bytes) -> None:
    """A peer's bytes, however odd, read by the spec (``parse_frame``) and by refimpl's reader and decoder: both
    read the same command, or both refuse the frame (WIRE-1, WIRE-2, WIRE-3, WIRE-6)."""
    problem = frame_disagreement(data)
    assert problem is None, problem


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension, a broken copy of the implementation that only a non-default value reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not.
VARIANTS = {
    # The binary header drops the oneway bit (the JSON header keeps it).
    "wire.serializeType": (
        frame_module, "command.version, command.opaque, command.flag)]",
        "command.version, command.opaque, command.flag & 1)]", ("WIRE-1", "WIRE-3")),
    "wire.flags": (remoting_module, "        if arrived.is_response:\n", "        if False:\n", ("WIRE-7",)),
    "wire.extFields": (message_module, "        if 0 < cut < len(piece) - 1:\n", "        if 0 < cut:\n",
                       ("WIRE-10",)),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(RemotingMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(RemotingMachine, dimension, module, old, new, clauses, examples=60, steps=30)


# ------------------------------------------------------------------------------------------------------ mutants
MUTANTS = {
    "late response handed to the caller": (
        remoting_module,
        "        entry = conn.client.pending.pop(response.opaque, None)\n        if entry is not None:\n"
        "            entry[1].set_result(arrived)\n",
        "        entry = conn.client.pending.get(response.opaque)\n        if entry is not None:\n"
        "            entry[1].set_result(arrived)\n", ("WIRE-5", "WIRE-8")),
    "timed-out caller left in the response table": (
        remoting_module, "        entry = endpoint.pending.pop(request.opaque, None)\n",
        "        entry = endpoint.pending.get(request.opaque)\n", ("WIRE-5",)),
    "binary ext field length in characters": (
        frame_module, "        fields += struct.pack(\">h\", len(k)) + k + _INT.pack(len(v)) + v\n",
        "        fields += struct.pack(\">h\", len(k)) + k + _INT.pack(len(value)) + v\n", ("WIRE-1", "WIRE-3")),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(RemotingMachine, module, old, new, clauses, examples=60, steps=30)
