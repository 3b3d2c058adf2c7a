"""The remoting area (WIRE-*): the frame a 4.9.8 peer reads, and the request/response pairing on a connection.

``parse_frame`` is checked on frames built here byte by byte from the layout (WIRE-1..3), on what it refuses
(WIRE-6), and against the reference implementation's codec: every command the codec writes, in either serialize type,
reads back as the same fields, and bytes the codec refuses the oracle refuses too. The connection machine explores
clean, and broken copies of its rules are caught.
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.refimpl.frame import FrameError, decode, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import remoting as wire
from rocketspec.spec.explorer import explore
from rocketspec.spec.protocol import MAX_FRAME_BYTES, LanguageCode, RequestCode, SerializeType

JSON, ROCKETMQ = SerializeType.JSON, SerializeType.ROCKETMQ


def framed(mark_type: int, header: bytes, body: bytes = b"") -> bytes:
    rest = struct.pack(">i", (mark_type << 24) | len(header)) + header + body
    return struct.pack(">i", len(rest)) + rest


def binary_header(code: int, language: int, version: int, opaque: int, flag: int, remark: bytes | None,
                  fields: list[tuple[bytes, bytes]]) -> bytes:
    out = struct.pack(">hbhii", code, language, version, opaque, flag)
    out += struct.pack(">i", 0) if remark is None else struct.pack(">i", len(remark)) + remark
    entries = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in fields)
    return out + struct.pack(">i", len(entries)) + entries


def test_parse_frame_reads_the_binary_layout() -> None:
    """WIRE-1, WIRE-3: length, mark (type 1, header length), fixed fields, remark, extFields, body."""
    header = binary_header(10, LanguageCode.GO, 373, 7, 2, "héllo".encode(), [(b"topic", b"T"), (b"queueId", b"3")])
    frame = wire.parse_frame(framed(1, header, b"\x00body"))
    assert frame == wire.Frame(ROCKETMQ, 10, LanguageCode.GO, 373, 7, 2, "héllo",
                               (("topic", "T"), ("queueId", "3")), b"\x00body")
    assert frame.is_oneway and not frame.is_response


def test_parse_frame_reads_the_json_layout() -> None:
    """WIRE-1, WIRE-2: a JSON header; the language by name; extFields values of other JSON types read as text."""
    header = json.dumps({"code": 0, "language": "JAVA", "version": 373, "opaque": 9, "flag": 1, "remark": None,
                         "extFields": {"offset": 12, "ok": True, "s": "x"}, "serializeTypeCurrentRPC": "JSON"})
    frame = wire.parse_frame(framed(0, header.encode()))
    assert frame == wire.Frame(JSON, 0, LanguageCode.JAVA, 373, 9, 1, None,
                               (("offset", "12"), ("ok", "true"), ("s", "x")), b"")
    assert frame.is_response
    numbers_as_text = framed(0, json.dumps({"code": "11", "opaque": "-4", "flag": 0}).encode())
    assert wire.parse_frame(numbers_as_text).code == 11
    # As the 4.9.8 broker reads them (it answers each "request type N not supported"): no code is code 0, a
    # decimal its integer part, an unknown language null, malformed UTF-8 U+FFFD.
    lenient = wire.parse_frame(framed(0, b'{"code": 1.5, "language": "COBOL", "remark": "\xff"}'))
    assert (lenient.code, lenient.language, lenient.remark) == (1, None, "\ufffd")
    assert wire.parse_frame(framed(0, b"{}")).code == 0


@pytest.mark.parametrize(("data", "reason"), [
    (b"\x00\x00\x00\x04", "shorter"),
    (struct.pack(">ii", MAX_FRAME_BYTES + 1, 0), "16 MiB"),
    (struct.pack(">ii", 9, 0), "bytes follow"),
    (struct.pack(">ii", 4, 100), "runs past"),
    (framed(2, b"{}"), "serialize type"),
    (framed(0, b"{not json"), "does not parse"),
    (framed(0, b"[1]"), "not an object"),
    (framed(0, b'{"code": [1]}'), "integer"),
    (framed(1, b"\x00\x01\x00"), "truncated"),
    (framed(1, binary_header(1, 0, 0, 0, 0, None, [])[:-4] + struct.pack(">i", 10)), "truncated"),
])
def test_parse_frame_refuses(data: bytes, reason: str) -> None:
    """WIRE-6 and malformed headers: refused, with the reason."""
    refused = wire.parse_frame(data)
    assert isinstance(refused, wire.Refused) and reason in refused.reason


def test_answers() -> None:
    """WIRE-4: a response answers a two-way request under its opaque and in its serialize type."""
    request = wire.Frame(ROCKETMQ, 10, 0, 1, 5, 0, None, (), b"")
    response = wire.Frame(ROCKETMQ, 0, 0, 1, 5, 1, None, (), b"")
    assert wire.answers(request, response)
    assert not wire.answers(request, attrs_evolve(response, opaque=6))
    assert not wire.answers(request, attrs_evolve(response, serialize_type=JSON))
    assert not wire.answers(request, attrs_evolve(response, flag=0))
    assert not wire.answers(attrs_evolve(request, flag=2), response)


def attrs_evolve(frame: wire.Frame, **changes: object) -> wire.Frame:
    import attrs

    return attrs.evolve(frame, **changes)


# ------------------------------------------------------------------------------------------------ the refimpl's codec

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=20)
commands = st.builds(
    RemotingCommand, code=INT16, ext_fields=st.dictionaries(TEXT, TEXT, max_size=5),
    body=st.one_of(st.none(), st.binary(min_size=1, max_size=64)), remark=st.one_of(st.none(), TEXT),
    opaque=INT32, flag=INT32, language=st.sampled_from(LanguageCode), version=INT16,
)


@given(commands, st.sampled_from([JSON, ROCKETMQ]))
def test_the_codec_writes_what_a_peer_reads(command: RemotingCommand, kind: SerializeType) -> None:
    """Every command the reference codec writes is read by the oracle as the same fields (WIRE-1..3)."""
    frame = wire.parse_frame(encode(command, kind))
    assert isinstance(frame, wire.Frame), frame
    remark = None if kind == ROCKETMQ and command.remark == "" else command.remark
    assert (frame.serialize_type, frame.code, frame.language, frame.version, frame.opaque, frame.flag,
            frame.remark, dict(frame.ext_fields), frame.body) == (
        kind, command.code, command.language, command.version, command.opaque, command.flag, remark,
        command.ext_fields, command.body or b"")


@given(st.binary(max_size=40), st.sampled_from([0, 1]))
def test_the_codec_refuses_what_a_peer_refuses(header: bytes, kind: int) -> None:
    """Arbitrary header bytes: the codec decodes them exactly when the oracle reads a frame, to the same fields."""
    data = framed(kind, header, b"b")
    spec = wire.parse_frame(data)
    try:
        command, _ = decode(data[4:])
    except FrameError:
        assert isinstance(spec, wire.Refused), spec
        return
    assert isinstance(spec, wire.Frame), (command, spec)
    assert (spec.code, spec.opaque, spec.flag, spec.remark, dict(spec.ext_fields)) == (
        command.code, command.opaque, command.flag, command.remark, command.ext_fields)
    # An unknown language name: 4.9.8 reads null, the reference implementation OTHER (it has no null language).
    assert spec.language in (None, command.language)


# ------------------------------------------------------------------------------------------------ the machine


def test_the_connection_machine_explores_clean() -> None:
    result = explore(wire.model())
    assert result.ok and result.complete, [v.describe() for v in result.violations]
    # The frame and message readers (WIRE-1..3, WIRE-6, WIRE-9..11, WIRE-13) and what only a socket server shows
    # (WIRE-14..17) are oracles CrossHair checks.
    assert set(result.clauses) == set(wire.CLAUSES.ids) - {"WIRE-1", "WIRE-2", "WIRE-3", "WIRE-6", "WIRE-9",
                                                           "WIRE-10", "WIRE-11", "WIRE-13", "WIRE-14", "WIRE-15",
                                                           "WIRE-16", "WIRE-17", "WIRE-19"}


def test_step_and_enabled_replay_a_timeout() -> None:
    """WIRE-5: a response after the caller timed out is not handed to it."""
    state = wire.ConnectionState()
    for action in (wire.RequestSent(0, oneway=False), wire.RequestArrives(0), wire.ServerAnswers(0),
                   wire.CallerTimesOut(0), wire.ResponseArrives(0)):
        assert wire.enabled(state, action)
        state = wire.step(state, action)
    call = wire.call_of(state, 0)
    assert call is not None and call.arrived == 1 and call.seen == 0
    assert not wire.enabled(state, wire.ServerAnswers(0)) and not wire.enabled(state, wire.ResponseArrives(0))
    state = wire.step(state, wire.RequestSent(1, oneway=True))
    state = wire.step(state, wire.RequestArrives(1))
    assert not wire.enabled(state, wire.ServerAnswers(1)) and not wire.enabled(state, wire.CallerTimesOut(1))


def test_a_duplicated_request_is_answered_twice_and_seen_once() -> None:
    """WIRE-8: each copy is answered; the caller gets the first response, the second is dropped."""
    state = wire.ConnectionState()
    for action in (wire.RequestSent(0, oneway=False), wire.RequestArrives(0), wire.RequestArrives(0),
                   wire.ServerAnswers(0), wire.ServerAnswers(0), wire.ResponseArrives(0), wire.ResponseArrives(0)):
        state = wire.step(state, action)
    assert wire.call_of(state, 0) == wire.Call(oneway=False, waiting=False, copies=2, answers=2, arrived=2, seen=1)
    assert not wire.enabled(state, wire.RequestArrives(0))


def test_a_request_marked_as_a_response_is_never_answered() -> None:
    """WIRE-7: the server takes it for the response to a request of its own."""
    state = wire.step(wire.ConnectionState(), wire.RequestSent(0, oneway=False, flagged=True))
    state = wire.step(state, wire.RequestArrives(0))
    assert not wire.enabled(state, wire.ServerAnswers(0)) and wire.enabled(state, wire.CallerTimesOut(0))
    assert not wire.enabled(wire.ConnectionState(), wire.RequestSent(0, oneway=True, flagged=True))


@pytest.mark.parametrize(("old", "new", "invariant"), [
    ("not (call.oneway or call.flagged or call.silent) and", "not (call.flagged or call.silent) and",
     "a oneway request, or one marked as a response, is never answered"),
    ("not (call.oneway or call.flagged or call.silent) and", "not (call.oneway or call.silent) and",
     "a oneway request, or one marked as a response, is never answered"),
    ("not (call.oneway or call.flagged or call.silent) and", "not (call.oneway or call.flagged) and",
     "a oneway request, or one marked as a response, is never answered"),
    ("        call = attrs.evolve(call, waiting=False, seen=1)\n",
     "        call = attrs.evolve(call, waiting=False, seen=call.seen + 1)\n    elif call.arrived > 1:\n"
     "        call = attrs.evolve(call, seen=call.seen + 1)\n", "a caller sees at most one response per request"),
    ("    if call.waiting and call.seen == 0:\n", "    if call.seen == 0:\n",
     "a response reaches only a waiting caller"),
    ("    return call is not None and call.arrived < call.answers\n", "    return call is not None\n",
     "a caller sees only a response the server wrote for a copy it received"),
])
def test_explorer_catches_broken_rule(old: str, new: str, invariant: str) -> None:
    broken = mutant(wire, old, new)
    failed = {v.invariant for v in explore(broken.model(), max_states=20_000).violations}  # BFS: found early
    assert invariant in failed, failed


# ------------------------------------------------------------------------------------------------ messages on the wire


def test_parse_properties_reads_as_string2message_properties_reads() -> None:
    """WIRE-10: short entries, empty names or values and entries without a separator are dropped; a later entry of
    a name wins; the value is everything after the first separator (worked on 4.9.8's MessageDecoder)."""
    text = "a\x01b\x02c\x01\x02\x01x\x02dd\x01e\x02a\x01z\x02k\x01\x01v\x02noseparator\x02"
    assert wire.parse_properties(text) == (("a", "z"), ("dd", "e"), ("k", "\x01v"))
    assert wire.parse_properties("") == ()


_NAMES = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1,
                 max_size=6)


@given(st.lists(st.tuples(_NAMES, _NAMES), max_size=5))
def test_properties_text_reads_back(pairs: list[tuple[str, str]]) -> None:
    """WIRE-10: what properties_text writes, parse_properties reads back, the last value of a name winning."""
    expected = dict(pairs)
    assert dict(wire.parse_properties(wire.properties_text(tuple(pairs)))) == expected


def _stored(topic: bytes, body: bytes, props: bytes, sys_flag: int = 0, host: bytes = b"\x7f\x00\x00\x01") -> bytes:
    born = host if not sys_flag & 0x10 else b"\x00" * 15 + b"\x01"
    store = host if not sys_flag & 0x20 else b"\x00" * 15 + b"\x01"
    rest = (struct.pack(">iiiqqiq", 0x12, 1, 7, 3, 4096, sys_flag, 1000) + born + struct.pack(">iq", 5, 2000) + store
            + struct.pack(">iiqi", 10911, 2, 0, len(body)) + body + struct.pack(">b", len(topic)) + topic
            + struct.pack(">h", len(props)) + props)
    size = 8 + len(rest)
    return struct.pack(">iI", size, 0xDAA320A7) + rest


def test_parse_stored_messages_reads_fields_and_stops_at_a_broken_one() -> None:
    """WIRE-9: each message read field by field (IPv6 hosts with sysFlag 0x10 / 0x20); reading stops at the first
    message that is cut short, the ones before it kept."""
    first = _stored(b"T", b"hello", b"KEYS\x01k\x02TAGS\x01A")
    second = _stored(b"T2", b"", b"", sys_flag=0x30)
    messages = wire.parse_stored_messages(first + second + first[:30])
    assert [(m.topic, m.body, m.properties, len(m.born_host), m.queue_offset) for m in messages] == [
        ("T", b"hello", (("KEYS", "k"), ("TAGS", "A")), 4, 3), ("T2", b"", (), 16, 3)]
    assert messages[0].store_port == 10911 and messages[0].reconsume_times == 2 and messages[0].store_size == len(first)


def test_parse_batch_body_reads_messages_and_refuses_a_short_one() -> None:
    """WIRE-11: totalSize, magic, CRC, flag, body and properties per message; a cut-short body is refused."""
    one = struct.pack(">iiiii", 22 + 2 + 3, 0, 0, 5, 2) + b"hi" + struct.pack(">h", 3) + b"a\x01b"
    assert wire.parse_batch_body(one + one) == (wire.BatchedMessage(5, b"hi", (("a", "b"),)),) * 2
    assert isinstance(wire.parse_batch_body(one[:-1]), wire.Refused)


def test_unknown_code_answer_and_offset_message_id() -> None:
    """WIRE-12: a broker answers an unknown code REQUEST_CODE_NOT_SUPPORTED, a name server nothing; WIRE-13: the
    offset message id of 127.0.0.1:10911 at commit-log offset 4096."""
    assert wire.unknown_code_answer(True, 9999) == (3, " request type 9999 not supported")
    assert wire.unknown_code_answer(False, 9999) is None
    assert wire.offset_message_id(b"\x7f\x00\x00\x01", 10911, 4096) == "7F00000100002A9F0000000000001000"


# ------------------------------------------------------------------ what only a socket server shows (WIRE-14..17)
def test_the_vip_channel_answers_a_pull_as_an_unknown_code() -> None:
    """WIRE-14: BrokerController registers every processor on the fast remoting server but PULL_MESSAGE's, so a
    pull on port - 2 meets AdminBrokerProcessor's getUnknownCmdResponse; anything else is served as on the port."""
    assert wire.vip_channel_answer(RequestCode.PULL_MESSAGE) == (3, " request type 11 not supported")
    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.HEART_BEAT, RequestCode.QUERY_CONSUMER_OFFSET,
                 RequestCode.GET_BROKER_CONFIG, RequestCode.END_TRANSACTION, 9999):
        assert wire.vip_channel_answer(code) is None


@given(st.booleans(), st.booleans())
def test_flow_control_refuses_only_without_room(room: bool, oneway: bool) -> None:
    """WIRE-15: without room a request is answered SYSTEM_BUSY [OVERLOAD] (a oneway one is lost); with room it is
    queued."""
    answer = wire.overload_answer(room, oneway)
    assert (answer is not None) == (not room and not oneway)
    assert answer is None or answer == (2, "[OVERLOAD]system busy, start flow control for a while")


def test_fast_failure_answers_a_request_that_waited_its_limit() -> None:
    """WIRE-15: BrokerFastFailure answers a request taken as late as its executor's limit (behind >= max), with the
    time it waited and the size of the queue left."""
    assert wire.fast_failure_answer(199, 200, 3) is None
    assert wire.fast_failure_answer(200, 200, 3) == (
        2, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 3")


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_an_idle_connection_closes_past_its_limit_unless_off(idle_ms: int, max_idle_ms: int) -> None:
    """WIRE-16: IdleStateHandler(0, 0, serverChannelMaxIdleTimeSeconds) fires once the time has passed; 0 is off."""
    assert wire.idle_closes(idle_ms, max_idle_ms) == (max_idle_ms > 0 and idle_ms >= max_idle_ms)
    assert not wire.idle_closes(10**9, 0)


def test_own_commands_are_written_in_the_own_serialize_type() -> None:
    """WIRE-17: a processor's answer takes its request's serialize type; a request a server sends, or a flow-control
    answer, the server's own (JSON unless configured)."""
    assert wire.serialize_type_written(ROCKETMQ) is ROCKETMQ
    assert wire.serialize_type_written(JSON) is JSON
    assert wire.serialize_type_written(None) is JSON
    assert wire.serialize_type_written(None, own=ROCKETMQ) is ROCKETMQ


@pytest.mark.slow
@pytest.mark.parametrize(("old", "new", "function"), [
    ("    if code not in VIP_CHANNEL_UNSERVED_CODES:\n", "    if code in VIP_CHANNEL_UNSERVED_CODES:\n",
     "vip_channel_answer"),
    ("    if waited_ms < max_wait_ms:\n", "    if waited_ms <= max_wait_ms:\n", "fast_failure_answer"),
    ("    return own if answering is None else answering\n", "    return own\n", "serialize_type_written"),
])
def test_crosshair_catches_a_broken_socket_server_oracle(old: str, new: str, function: str) -> None:
    mod = mutant(wire, old, new)
    run = crosshair_mutant(mod, function, per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


def test_a_message_id_is_read_as_4_9_8_reads_it() -> None:
    """WIRE-19: decodeMessageId's reading of a message id, the inverse of createMessageId (WIRE-13), and its
    failures as 4.9.8 throws them."""
    msg_id = wire.offset_message_id(bytes([127, 0, 0, 1]), 10911, 4242)
    assert wire.message_id_offset(msg_id) == 4242
    assert wire.message_id_offset(msg_id.lower()) == 4242
    v6 = wire.offset_message_id(bytes(15) + b"\x01", 10911, 7)
    assert wire.message_id_offset(v6) == 7
    assert wire.message_id_offset("") == wire.Refused("java.lang.NullPointerException")
    assert wire.message_id_offset("7F00") == wire.Refused("java.nio.BufferUnderflowException")
    assert wire.message_id_offset("7F0000010000277B") == wire.Refused("java.nio.BufferUnderflowException")
    assert wire.message_id_offset("7F000001FFFFFFFF0000000000000000") == wire.Refused(
        "java.lang.IllegalArgumentException: port out of range:-1")
    # Characters that are not hex digits are -1: "zz" is the byte 0xFF.
    assert wire.message_id_offset("zz" * 16) == wire.Refused("java.lang.IllegalArgumentException: port out of range:-1")
