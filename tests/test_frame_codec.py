"""The remoting frame codec (``refimpl/frame.py``) against the byte layout of ``shared/REFERENCE.md`` §A.

Rules checked: a command survives ``encode`` then ``decode`` in both serialize types; one hand-built frame per type is
byte-for-byte what the codec writes and reads (a swapped field fails); decoding tolerates what real clients send
(extFields values as numbers, booleans, null or nested values; ``language`` as a name or a number; no remark or
extFields); ``FrameReader`` finds the same frames however the stream is cut; and bytes that are not a frame raise
``FrameError`` and nothing else — the 16 MiB limit judged from the length prefix alone.
"""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl import Cluster, Message
from rocketspec.refimpl.frame import WIRE_CODECS, FrameError, FrameReader, decode, encode, round_trip
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import MAX_FRAME_BYTES, LanguageCode, RequestCode, SerializeType

JSON, ROCKETMQ = SerializeType.JSON, SerializeType.ROCKETMQ

INT8 = st.integers(-(2**7), 2**7 - 1)
INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
# Text includes non-ASCII letters, CJK, emoji and control characters (hypothesis never draws lone surrogates).
TEXT = st.text(max_size=30)
FIELDS = st.dictionaries(TEXT, TEXT, max_size=6)
# An empty body is sent as no body at all (the frame has nothing after the header).
BODIES = st.one_of(st.none(), st.binary(min_size=1, max_size=300))

json_commands = st.builds(
    RemotingCommand,
    code=INT32, ext_fields=FIELDS, body=BODIES, remark=st.one_of(st.none(), TEXT), opaque=INT32, flag=INT32,
    language=st.sampled_from(LanguageCode), version=INT32,
)
# The binary header holds int16 code and version, int8 language; a zero remark length means no remark.
binary_commands = st.builds(
    RemotingCommand,
    code=INT16, ext_fields=FIELDS, body=BODIES, remark=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
    opaque=INT32, flag=INT32, language=INT8, version=INT16,
)
typed_commands = st.one_of(st.tuples(json_commands, st.just(JSON)), st.tuples(binary_commands, st.just(ROCKETMQ)))


def frame_of(header: bytes, body: bytes = b"", kind: int = JSON) -> bytes:
    """A whole frame built by hand: total, mark, header, body."""
    return struct.pack(">ii", 4 + len(header) + len(body), (kind << 24) | len(header)) + header + body


def decode_json(header: dict[str, object] | bytes, body: bytes = b"") -> RemotingCommand:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode("utf-8")
    command, kind = decode(frame_of(raw, body)[4:])
    assert kind == JSON
    return command


# --------------------------------------------------------------------------------------------------- round trips


@given(json_commands)
def test_json_round_trip(command: RemotingCommand) -> None:
    data = encode(command, JSON)
    assert struct.unpack_from(">i", data)[0] == len(data) - 4
    assert decode(data[4:]) == (command, JSON)


@given(binary_commands)
def test_rocketmq_round_trip(command: RemotingCommand) -> None:
    data = encode(command, ROCKETMQ)
    assert struct.unpack_from(">i", data)[0] == len(data) - 4
    assert decode(data[4:]) == (command, ROCKETMQ)


@pytest.mark.parametrize("kind", [JSON, ROCKETMQ])
def test_empty_body_reads_back_as_no_body(kind: SerializeType) -> None:
    command = RemotingCommand(10, {"k": "v"}, body=b"", opaque=3)
    decoded, _ = decode(encode(command, kind)[4:])
    assert decoded.body is None and decoded.ext_fields == {"k": "v"}


def test_rocketmq_empty_remark_reads_back_as_none() -> None:
    # remarkLen 0 means null in RocketMQSerializable: an empty remark cannot be told from none.
    decoded, _ = decode(encode(RemotingCommand(0, remark="", opaque=1), ROCKETMQ)[4:])
    assert decoded.remark is None


def test_json_remark_none_is_left_out_and_text_kept() -> None:
    data = encode(RemotingCommand(0, opaque=1), JSON)
    assert "remark" not in json.loads(data[8:])
    assert decode(encode(RemotingCommand(0, remark="ошибка: 失败 ✓", opaque=1), JSON)[4:])[0].remark == \
        "ошибка: 失败 ✓"


# ----------------------------------------------------------------------------------------------- exact byte layout

# One command with distinct values in every slot, so that swapping any two fields changes the bytes.
LAYOUT_COMMAND = RemotingCommand(
    code=RequestCode.SEND_MESSAGE, ext_fields={"topic": "Tö", "queueId": "3"}, body=b"\x00body\xff", remark="hé",
    opaque=0x01020304, flag=2, language=LanguageCode.CPP, version=63,
)


def test_rocketmq_frame_is_the_reference_layout() -> None:
    remark = "hé".encode()
    fields = (struct.pack(">h", 5) + b"topic" + struct.pack(">i", 3) + "Tö".encode()
              + struct.pack(">h", 7) + b"queueId" + struct.pack(">i", 1) + b"3")
    header = (struct.pack(">h", 10) + struct.pack(">b", 1) + struct.pack(">h", 63) + struct.pack(">i", 0x01020304)
              + struct.pack(">i", 2) + struct.pack(">i", len(remark)) + remark
              + struct.pack(">i", len(fields)) + fields)
    body = b"\x00body\xff"
    prefix = struct.pack(">i", 4 + len(header) + len(body)) + struct.pack(">i", (1 << 24) | len(header))
    by_hand = prefix + header + body
    assert encode(LAYOUT_COMMAND, ROCKETMQ) == by_hand
    assert decode(by_hand[4:]) == (LAYOUT_COMMAND, ROCKETMQ)


def test_json_frame_is_the_reference_layout() -> None:
    header = ('{"code":10,"language":"CPP","version":63,"opaque":16909060,"flag":2,"remark":"hé",'
              '"extFields":{"topic":"Tö","queueId":"3"},"serializeTypeCurrentRPC":"JSON"}').encode()
    body = b"\x00body\xff"
    by_hand = struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    assert decode(by_hand[4:]) == (LAYOUT_COMMAND, JSON)
    # What the codec writes: same prefix arithmetic, a JSON object with the reference's field names, then the body.
    data = encode(LAYOUT_COMMAND, JSON)
    total, mark = struct.unpack_from(">ii", data)
    header_len = mark & 0xFFFFFF
    assert total == len(data) - 4 and mark >> 24 == 0
    assert data[8 + header_len:] == body
    written = json.loads(data[8:8 + header_len].decode("utf-8"))
    assert {k: written[k] for k in ("code", "language", "version", "opaque", "flag", "remark", "extFields")} == {
        "code": 10, "language": "CPP", "version": 63, "opaque": 16909060, "flag": 2, "remark": "hé",
        "extFields": {"topic": "Tö", "queueId": "3"},
    }


def test_json_language_is_written_as_its_name() -> None:
    data = encode(RemotingCommand(0, language=LanguageCode.GO), JSON)
    assert json.loads(data[8:])["language"] == "GO"
    unknown = encode(RemotingCommand(0, language=99), JSON)
    assert json.loads(unknown[8:])["language"] == "OTHER"


# ------------------------------------------------------------------------------------------------ decoding tolerance


def test_ext_field_values_of_any_json_type_become_text() -> None:
    """fastjson's text of each value (checked on the 4.9.8 jar): decimals as written (2.0 stays 2.0), JSON else."""
    command = decode_json({"code": 10, "extFields": {
        "queueId": 3, "sysFlag": 0, "big": 12345678901234, "neg": -1, "ratio": 1.5, "whole": 2.0,
        "unitMode": False, "batch": True, "nothing": None, "nested": {"a": [1, "x"]}, "list": [1, 2], "text": "t",
    }})
    assert command.ext_fields == {
        "queueId": "3", "sysFlag": "0", "big": "12345678901234", "neg": "-1", "ratio": "1.5", "whole": "2.0",
        "unitMode": "false", "batch": "true", "nested": '{"a":[1,"x"]}', "list": "[1,2]", "text": "t",
    }


@pytest.mark.parametrize(("language", "expected"), [
    ("JAVA", LanguageCode.JAVA), ("CPP", LanguageCode.CPP), ("cpp", LanguageCode.CPP), ("RUST", LanguageCode.RUST),
    (1, LanguageCode.CPP), (9, LanguageCode.GO), ("3", LanguageCode.OTHER), ("COBOL", LanguageCode.OTHER),
    ("pYtHoN", LanguageCode.PYTHON), ("", LanguageCode.OTHER), (None, LanguageCode.OTHER),
])
def test_language_as_name_or_number(language: object, expected: int) -> None:
    """fastjson reads the enum by name in any case or by ordinal; a number as text is no name: null (OTHER here)."""
    assert decode_json({"code": 0, "language": language}).language == expected


@pytest.mark.parametrize(("header", "code"), [
    ({"code": True}, 1), ({"code": False}, 0), ({"code": None}, 0), ({"code": ""}, 0), ({"code": "+12"}, 12),
    ({"code": "١٢"}, 12), ({"code": -1.5}, -1), ({"code": 3e9}, -1294967296), ({"code": 2147483647.9}, 2147483647),
])
def test_numbers_are_cast_as_fastjson_casts_them(header: dict[str, object], code: int) -> None:
    """``TypeUtils.castToInt`` (checked on the 4.9.8 jar): booleans, null, numeric text, decimals wrapped."""
    assert decode_json(header).code == code


def test_missing_optional_header_fields_take_defaults() -> None:
    command = decode_json({"code": 34})
    assert command == RemotingCommand(34, {}, None, None, 0, 0, LanguageCode.JAVA, 0)
    assert decode_json({"code": 34, "extFields": None, "remark": None}).ext_fields == {}


def test_numbers_as_text_are_read() -> None:
    command = decode_json({"code": "105", "opaque": "7", "flag": 1.0, "version": "401"})
    assert (command.code, command.opaque, command.flag, command.version) == (105, 7, 1, 401)


# ------------------------------------------------------------------------------------------------------ FrameReader


@given(st.lists(typed_commands, min_size=1, max_size=5), st.data())
def test_frame_reader_gives_the_same_frames_however_the_stream_is_cut(
    commands: list[tuple[RemotingCommand, SerializeType]], data: st.DataObject
) -> None:
    encoded = [encode(command, kind) for command, kind in commands]
    stream = b"".join(encoded)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts"))
    reader = FrameReader()
    frames: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        frames += reader.feed(stream[start:end])
    assert frames == [e[4:] for e in encoded]
    assert reader.pending == 0
    assert [decode(f) for f in frames] == commands


def test_frame_reader_split_at_every_byte_boundary() -> None:
    commands = [(LAYOUT_COMMAND, JSON), (LAYOUT_COMMAND, ROCKETMQ), (RemotingCommand(105, {"topic": "T"}), JSON)]
    stream = b"".join(encode(c, k) for c, k in commands)
    expected = [encode(c, k)[4:] for c, k in commands]
    for cut in range(len(stream) + 1):
        reader = FrameReader()
        frames = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        assert frames == expected, f"cut at byte {cut}"
        assert reader.pending == 0
    reader = FrameReader()
    one_by_one = [frame for i in range(len(stream)) for frame in reader.feed(stream[i:i + 1])]
    assert one_by_one == expected


def test_frame_reader_holds_back_an_incomplete_frame() -> None:
    data = encode(LAYOUT_COMMAND, JSON)
    reader = FrameReader()
    assert reader.feed(data[:-1]) == []
    assert reader.pending == len(data) - 1
    assert reader.feed(data[-1:]) == [data[4:]]


# ------------------------------------------------------------------------------------------------------ frame errors


@pytest.mark.parametrize("total", [0, 3, -1, -(2**31)])
def test_total_below_four_is_an_error(total: int) -> None:
    with pytest.raises(FrameError, match="below"):
        FrameReader().feed(struct.pack(">i", total))


def test_frame_over_16_mib_is_refused_from_the_length_prefix_alone() -> None:
    # total + 4 is the frame with its prefix (Netty's LengthFieldBasedFrameDecoder counts the length field too).
    reader = FrameReader()
    with pytest.raises(FrameError, match="over"):
        reader.feed(struct.pack(">i", MAX_FRAME_BYTES - 3))  # only the 4-byte prefix arrived: nothing buffered yet
    at_limit = FrameReader()
    assert at_limit.feed(struct.pack(">i", MAX_FRAME_BYTES - 4) + b"\x00" * 100) == []
    assert at_limit.pending == 104
    with pytest.raises(FrameError):
        FrameReader().feed(struct.pack(">i", 2**31 - 1))


def test_frame_reader_limit_is_configurable() -> None:
    with pytest.raises(FrameError, match="over"):
        FrameReader(max_frame_bytes=64).feed(struct.pack(">i", 61))
    assert FrameReader(max_frame_bytes=64).feed(struct.pack(">i", 60)) == []


def test_encoding_an_oversized_or_unrepresentable_command_is_an_error() -> None:
    with pytest.raises(FrameError, match="over"):
        encode(RemotingCommand(10, body=b"\x00" * MAX_FRAME_BYTES), JSON)
    with pytest.raises(FrameError, match="binary header"):
        encode(RemotingCommand(40_000), ROCKETMQ)  # code is an int16 in the binary header
    with pytest.raises(FrameError, match="binary header"):
        encode(RemotingCommand(0, language=300), ROCKETMQ)


def _binary_header(*, remark: bytes = b"", fields: bytes = b"", remark_len: int | None = None,
                   fields_len: int | None = None) -> bytes:
    return (struct.pack(">hbhii", 10, 0, 409, 1, 0)
            + struct.pack(">i", len(remark) if remark_len is None else remark_len) + remark
            + struct.pack(">i", len(fields) if fields_len is None else fields_len) + fields)


BAD_FRAMES = {
    "no mark": b"\x00\x00",
    "header past the end": struct.pack(">i", 100) + b"{}",
    "binary header past the end": struct.pack(">i", (1 << 24) | 50) + b"\x00" * 10,
    "unknown serialize type": struct.pack(">i", (2 << 24) | 2) + b"{}",
    "empty JSON header": struct.pack(">i", 0),
    "bad JSON": frame_of(b'{"code": 10,')[4:],
    "JSON list": frame_of(b"[10]")[4:],
    "JSON number": frame_of(b"10")[4:],
    "JSON string": frame_of(b'"code"')[4:],
    "code not a number": frame_of(b'{"code": "ten"}')[4:],
    "code a list": frame_of(b'{"code": [10]}')[4:],
    "code past an int": frame_of(b'{"code": 3000000000}')[4:],
    "code with a space": frame_of(b'{"code": " 12"}')[4:],
    "language out of range": frame_of(b'{"code": 10, "language": 99}')[4:],
    "language a boolean": frame_of(b'{"code": 10, "language": true}')[4:],
    "code NaN": frame_of(b'{"code": NaN}')[4:],
    "opaque an object": frame_of(b'{"code": 10, "opaque": {}}')[4:],
    "extFields a list": frame_of(b'{"code": 10, "extFields": ["a"]}')[4:],
    "binary header truncated in the fixed part": frame_of(b"\x00\x0a\x00\x01", kind=ROCKETMQ)[4:],
    "binary remark past the header": frame_of(_binary_header(remark=b"abc", remark_len=40), kind=ROCKETMQ)[4:],
    "binary extFields length past the header": frame_of(_binary_header(fields_len=99), kind=ROCKETMQ)[4:],
    "binary extFields negative length": frame_of(_binary_header(fields_len=-1), kind=ROCKETMQ)[4:],
    "binary key past its field block": frame_of(_binary_header(fields=struct.pack(">h", 30) + b"k"),
                                                kind=ROCKETMQ)[4:],
    "binary negative key length": frame_of(_binary_header(fields=struct.pack(">h", -2) + b"kk"), kind=ROCKETMQ)[4:],
    "binary value past its field block": frame_of(
        _binary_header(fields=struct.pack(">h", 1) + b"k" + struct.pack(">i", 9) + b"v"), kind=ROCKETMQ)[4:],
    "binary field cut inside its length": frame_of(_binary_header(fields=b"\x00"), kind=ROCKETMQ)[4:],
}


# Frames 4.9.8's broker reads and answers (sent to it: "request type N not supported"), not refused.
LENIENT_FRAMES = {
    "no code: code 0": (frame_of(b'{"opaque": 1}')[4:], {"code": 0, "opaque": 1}),
    "decimal code: its integer part": (frame_of(b'{"code": 1.5}')[4:], {"code": 1}),
    "JSON remark not UTF-8": (frame_of(b'{"code": 10, "remark": "\xff\xfe"}')[4:], {"remark": "\ufffd\ufffd"}),
    "binary remark not UTF-8": (frame_of(_binary_header(remark=b"\xc3\x28"), kind=ROCKETMQ)[4:],
                                {"remark": "\ufffd("}),
    "binary key not UTF-8": (frame_of(_binary_header(fields=struct.pack(">h", 1) + b"\xff" + struct.pack(">i", 1)
                                                     + b"v"), kind=ROCKETMQ)[4:], {"ext_fields": {"\ufffd": "v"}}),
    "binary value not UTF-8": (frame_of(_binary_header(fields=struct.pack(">h", 1) + b"k" + struct.pack(">i", 1)
                                                       + b"\x80"), kind=ROCKETMQ)[4:], {"ext_fields": {"k": "\ufffd"}}),
}


@pytest.mark.parametrize(("frame", "fields"), list(LENIENT_FRAMES.values()), ids=list(LENIENT_FRAMES))
def test_frames_4_9_8_reads_leniently(frame: bytes, fields: dict[str, object]) -> None:
    """Malformed UTF-8 reads as U+FFFD and a missing code as 0, as on the 4.9.8 broker (WIRE-2, WIRE-3)."""
    command, _ = decode(frame)
    assert {name: getattr(command, name) for name in fields} == fields


@pytest.mark.parametrize("frame", list(BAD_FRAMES.values()), ids=list(BAD_FRAMES))
def test_bad_frames_raise_frame_error(frame: bytes) -> None:
    with pytest.raises(FrameError):
        decode(frame)


# Found while fuzzing the codec: these escape as OverflowError, RecursionError and ValueError instead of FrameError.
ESCAPING_FRAMES = {
    "code Infinity": frame_of(b'{"code": Infinity}')[4:],
    "code 1e400": frame_of(b'{"code": 1e400}')[4:],
    "opaque -Infinity": frame_of(b'{"code": 10, "opaque": -Infinity}')[4:],
    "deeply nested JSON header": frame_of(b"[" * 100_000)[4:],
    "deeply nested extFields value": frame_of(b'{"code": 10, "extFields": {"a": ' + b"[" * 100_000 + b"]" * 100_000
                                              + b"}}")[4:],
    "language a digit int() refuses": frame_of('{"code": 10, "language": "²"}'.encode())[4:],
}


@pytest.mark.parametrize("frame", list(ESCAPING_FRAMES.values()), ids=list(ESCAPING_FRAMES))
def test_header_values_that_escaped_as_other_exceptions(frame: bytes) -> None:
    try:
        decode(frame)
    except FrameError:
        pass  # refused cleanly; decoding it (as for a digit language) would be fine too


# ---------------------------------------------------------------------------------------------------------- fuzzing


def read_all(chunks: list[bytes]) -> list[tuple[RemotingCommand, SerializeType]]:
    """Feed ``chunks`` to a FrameReader and decode every frame; stop at the first FrameError. Any other exception
    escapes (and fails the calling test)."""
    reader = FrameReader()
    out = []
    try:
        for chunk in chunks:
            for frame in reader.feed(chunk):
                out.append(decode(frame))
    except FrameError:
        pass
    return out


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(TEXT, children, max_size=3)),
    max_leaves=8,
)
# Values at the edges of what a header field can hold: non-finite and huge numbers, numeric-looking text.
ODD_VALUES = st.sampled_from([float("inf"), float("-inf"), float("nan"), 1e300, 10**30, -(2**63), "", "²", "١",
                              "1e3", " 7 ", "-1", "0x10", "JAVA", "cpp"])
HEADER_VALUES = st.one_of(ODD_VALUES, JSON_VALUES)
HEADER_KEYS = st.sampled_from(["code", "language", "version", "opaque", "flag", "remark", "extFields",
                               "serializeTypeCurrentRPC"])
json_headers = st.one_of(
    st.dictionaries(HEADER_KEYS, HEADER_VALUES, max_size=8).map(lambda h: json.dumps(h).encode()),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
)


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    command, kind = draw(typed_commands)
    data = bytearray(encode(command, kind))
    for _ in range(draw(st.integers(1, 4))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


streams = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda header, body, kind: frame_of(header, body, kind), json_headers, st.binary(max_size=20),
              st.just(JSON)),
    st.builds(lambda header, body, kind: frame_of(header, body, kind), st.binary(max_size=80),
              st.binary(max_size=20), st.integers(0, 3)),
    st.builds(lambda mark, rest: struct.pack(">ii", 4 + len(rest), mark) + rest, INT32, st.binary(max_size=60)),
    mutated_frames(),
)


@given(st.lists(streams, min_size=1, max_size=4), st.integers(1, 64))
def test_arbitrary_bytes_raise_only_frame_error(parts: list[bytes], chunk: int) -> None:
    stream = b"".join(parts)
    read_all([stream[i:i + chunk] for i in range(0, len(stream), chunk)])


# ------------------------------------------------------------------------------------ the simulated network's codec


@pytest.mark.parametrize("codec", ["json", "rocketmq"])
def test_a_cluster_with_the_wire_codec_hands_servers_what_a_socket_carries(codec: str) -> None:
    """``Cluster(wire_codec=...)``: the broker sees header fields as text, as it would read them off a socket, and the
    run behaves as without the codec (the stateful machines run this way)."""
    seen: list[RemotingCommand] = []
    with Cluster(brokers=1, seed=3, wire_codec=codec) as cluster:
        cluster.create_topic("T", queues=1)
        broker = cluster.broker("broker-a")
        handle = broker.handle

        def spy(request: RemotingCommand, channel: object) -> RemotingCommand | None:
            seen.append(request)
            return handle(request, channel)

        broker.handle = spy  # type: ignore[method-assign]
        result = cluster.producer("PG").send(Message("T", b"x", tags="A"))
    assert result.status.name == "SEND_OK"
    sends = [r for r in seen if r.code == RequestCode.SEND_MESSAGE_V2]
    assert sends and all(isinstance(v, str) for r in sends for v in r.ext_fields.values())
    command = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "e": 3}, body=b"")
    assert round_trip(WIRE_CODECS[codec], command).ext_fields == {"a": "PG", "e": "3"}
    with pytest.raises(ValueError, match="wire_codec must be one of json, rocketmq"):
        Cluster(brokers=1, wire_codec="xml")
