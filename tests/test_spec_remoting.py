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
from mutation import mutant

from rocketspec.refimpl.frame import FrameError, decode, encode
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import remoting as wire
from rocketspec.spec.explorer import explore
from rocketspec.spec.protocol import MAX_FRAME_BYTES, LanguageCode, SerializeType

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
    assert set(result.clauses) == set(wire.CLAUSES.ids) - {"WIRE-1", "WIRE-2", "WIRE-3", "WIRE-6"}


def test_step_and_enabled_replay_a_timeout() -> None:
    """WIRE-5: a response after the caller timed out is not handed to it."""
    state = wire.ConnectionState()
    for action in (wire.RequestSent(0, oneway=False), wire.ServerAnswers(0), wire.CallerTimesOut(0)):
        assert wire.enabled(state, action)
        state = wire.step(state, action)
    assert not wire.enabled(state, wire.ResponseArrives(0))
    assert not wire.enabled(state, wire.ServerAnswers(0))
    state = wire.step(state, wire.RequestSent(1, oneway=True))
    assert not wire.enabled(state, wire.ServerAnswers(1)) and not wire.enabled(state, wire.CallerTimesOut(1))


@pytest.mark.parametrize(("old", "new", "invariant"), [
    ("        return not call.oneway and not call.answered\n", "        return not call.answered\n",
     "a oneway request is never answered"),
    ("        return call.answered and call.seen == 0 and call.waiting\n",
     "        return call.answered and call.seen <= 1\n", "a caller sees at most one response per request"),
    ("        return call.answered and call.seen == 0 and call.waiting\n",
     "        return call.answered and call.seen == 0\n", "a response reaches only a waiting caller"),
])
def test_explorer_catches_broken_rule(old: str, new: str, invariant: str) -> None:
    broken = mutant(wire, old, new)
    failed = {v.invariant for v in explore(broken.model()).violations}
    assert invariant in failed, failed
