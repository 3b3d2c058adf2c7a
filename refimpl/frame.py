"""The remoting frame codec: ``RemotingCommand`` to bytes and back (``RemotingCommand.encode``/``decode``; WIRE-1..6).

A frame is ``int32 total`` (4 + header length + body length, not counting itself), ``int32 mark`` (high byte the
serialize type, low 24 bits the header length), the header, then the body. The header is JSON or RocketMQ's binary
form; a response is written in the serialize type of its request, as Java servers do.

Decoding is tolerant of what real clients send: extFields values as JSON numbers, booleans or nested values (kept as
text, the way fastjson reads them into ``HashMap<String, String>``), ``language`` as a name or a number, a missing
``remark`` or ``extFields``. What cannot be a command — a short or oversized frame, a header length past the frame,
bad JSON, a header that is not an object, a truncated binary header — raises ``FrameError``; a server closes that one
connection.
"""

from __future__ import annotations

import decimal
import json
import struct
from typing import Any

from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.java import INT_MAX, INT_MIN, big_decimal_int, big_decimal_text, parse_long
from rocketspec.spec.protocol import MAX_FRAME_BYTES, LanguageCode, SerializeType

_INT = struct.Struct(">i")
_HEADER_MARK = struct.Struct(">ii")
_BINARY_FIXED = struct.Struct(">hbhii")


class FrameError(ValueError):
    """Bytes that are not a remoting frame (the connection that sent them cannot be trusted further)."""


# ------------------------------------------------------------------------------------------------------------- encode


def _json_header(command: RemotingCommand) -> bytes:
    header: dict[str, Any] = {
        "code": command.code,
        "extFields": command.ext_fields,
        "flag": command.flag,
        "language": _language_name(command.language),
        "opaque": command.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": command.version,
    }
    if command.remark is not None:
        header["remark"] = command.remark
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")


def _binary_header(command: RemotingCommand) -> bytes:
    parts = [_BINARY_FIXED.pack(command.code, command.language, command.version, command.opaque, command.flag)]
    if command.remark is None:
        parts.append(_INT.pack(0))
    else:
        remark = command.remark.encode("utf-8", "replace")
        parts.append(_INT.pack(len(remark)) + remark)
    fields = bytearray()
    for key, value in command.ext_fields.items():
        # Text decoded from a JSON escape may hold a lone surrogate; like Java, write '?' for it.
        k, v = key.encode("utf-8", "replace"), value.encode("utf-8", "replace")
        fields += struct.pack(">h", len(k)) + k + _INT.pack(len(v)) + v
    parts.append(_INT.pack(len(fields)) + bytes(fields))
    return b"".join(parts)


def encode(command: RemotingCommand, serialize: int = SerializeType.JSON) -> bytes:
    """The whole frame for ``command``, length prefix included."""
    try:
        header = _binary_header(command) if serialize == SerializeType.ROCKETMQ else _json_header(command)
    except struct.error as error:  # a code, version or flag outside the binary header's integer widths
        raise FrameError(f"command does not fit the RocketMQ binary header: {error}") from None
    body = command.body or b""
    total = 4 + len(header) + len(body)
    if total + 4 > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {total + 4} bytes is over the {MAX_FRAME_BYTES}-byte limit")
    return _HEADER_MARK.pack(total, (int(serialize) << 24) | len(header)) + header + body


# ------------------------------------------------------------------------------------------------------------- decode


def _language_name(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return LanguageCode.OTHER.name


def _language_code(value: object) -> int:
    """fastjson's reading of the ``LanguageCode`` enum: a name in any case or an ordinal; null, ``""`` or an unknown
    name leave it null (OTHER here); an ordinal out of range, or a value of another type, fails the frame."""
    if value is None or isinstance(value, str):
        try:
            return int(LanguageCode[value.upper()]) if value else int(LanguageCode.OTHER)
        except KeyError:
            return int(LanguageCode.OTHER)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(LanguageCode):
        return value
    raise FrameError(f"language {value!r} is no LanguageCode")


def _json_text(value: object) -> str:
    """fastjson's text of a parsed JSON value: a decimal as written (``BigDecimal.toString``), compact otherwise."""
    if isinstance(value, decimal.Decimal):
        return big_decimal_text(value)
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _json_text(v) for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def _field_text(value: object) -> str:
    return value if isinstance(value, str) else _json_text(value)


def _int(header: dict[str, Any], name: str) -> int:
    """``TypeUtils.castToInt`` of a header field: null and ``""`` are 0, booleans 1 and 0, integers within an int,
    decimals by ``BigDecimal.intValue`` (truncated, wrapped), text by ``Integer.parseInt``; anything else fails."""
    value = header.get(name)
    number: int | None
    if value is None or value == "":
        number = 0
    elif isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value if INT_MIN <= value <= INT_MAX else None
    elif isinstance(value, decimal.Decimal):
        number = big_decimal_int(value)
    elif isinstance(value, str):
        number = parse_long(value, 32)
    else:
        number = None
    if number is None:
        raise FrameError(f"header field {name!r} is not an int: {value!r}")
    return number


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _decode_json_header(data: bytes) -> dict[str, Any]:
    try:  # Java reads the bytes as UTF-8 with U+FFFD for a malformed sequence (checked on 4.9.8)
        header = json.loads(data.decode("utf-8", "replace"), parse_float=decimal.Decimal, parse_constant=_no_constants)
    except (ValueError, RecursionError) as error:
        raise FrameError(f"header is not JSON: {type(error).__name__}: {error}") from None
    if not isinstance(header, dict):
        raise FrameError("header is not a JSON object")
    fields = header.get("extFields") or {}
    if not isinstance(fields, dict):
        raise FrameError("extFields is not a JSON object")
    remark = header.get("remark")
    return {
        "code": _int(header, "code"),
        "language": _language_code(header.get("language", LanguageCode.JAVA)),
        "version": _int(header, "version"),
        "opaque": _int(header, "opaque"),
        "flag": _int(header, "flag"),
        "remark": None if remark is None else _field_text(remark),
        "ext_fields": {str(k): _field_text(v) for k, v in fields.items() if v is not None},
    }


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise FrameError("binary header is truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: struct.Struct) -> tuple[Any, ...]:
        return fmt.unpack(self.take(fmt.size))

    def text(self, n: int) -> str:
        return self.take(n).decode("utf-8", "replace")  # new String(bytes, UTF-8), as 4.9.8 reads it


def _decode_binary_header(data: bytes) -> dict[str, Any]:
    cursor = _Cursor(data)
    code, language, version, opaque, flag = cursor.unpack(_BINARY_FIXED)
    (remark_len,) = cursor.unpack(_INT)
    remark = cursor.text(remark_len) if remark_len > 0 else None
    (fields_len,) = cursor.unpack(_INT)
    fields_cursor = _Cursor(cursor.take(fields_len))
    fields: dict[str, str] = {}
    while fields_cursor.pos < fields_len:
        (key_len,) = fields_cursor.unpack(struct.Struct(">h"))
        key = fields_cursor.text(key_len)
        (value_len,) = fields_cursor.unpack(_INT)
        fields[key] = fields_cursor.text(value_len)
    return {"code": code, "language": language, "version": version, "opaque": opaque, "flag": flag,
            "remark": remark, "ext_fields": fields}


def decode(frame: bytes) -> tuple[RemotingCommand, SerializeType]:
    """A command from one frame without its length prefix (``mark · header · body``), and its serialize type."""
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes has no header mark")
    (mark,) = _INT.unpack_from(frame, 0)
    kind, header_len = (mark >> 24) & 0xFF, mark & 0xFFFFFF
    if header_len > len(frame) - 4:
        raise FrameError(f"header length {header_len} is past the end of a {len(frame) + 4}-byte frame")
    header_bytes = frame[4:4 + header_len]
    if kind == SerializeType.JSON:
        header = _decode_json_header(header_bytes)
    elif kind == SerializeType.ROCKETMQ:
        header = _decode_binary_header(header_bytes)
    else:
        raise FrameError(f"unknown serialize type {kind}")
    body = frame[4 + header_len:] or None
    return RemotingCommand(body=body, **header), SerializeType(kind)


#: ``Cluster(wire_codec=...)``: the header serializations a simulated network can round-trip every command through.
WIRE_CODECS: dict[str, SerializeType] = {"json": SerializeType.JSON, "rocketmq": SerializeType.ROCKETMQ}


def round_trip(serialize: SerializeType, command: RemotingCommand) -> RemotingCommand:
    """``command`` as the far end of a socket reads it: encoded to a frame and decoded again (header fields become
    strings, an empty body none, what the header cannot carry is gone)."""
    return decode(encode(command, serialize)[4:])[0]


class FrameReader:
    """Splits a byte stream into frames (each without its length prefix), enforcing the 16 MiB limit."""

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_frame_bytes
        self.broken: FrameError | None = None

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        """The frames ``data`` completes. A bad length raises ``FrameError``, unless whole frames came before it in
        this call: those are returned (a server still answers them, as Netty does) and ``broken`` holds the error,
        raised by the next call."""
        if self.broken is not None:
            raise self.broken
        self._buffer += data
        frames: list[bytes] = []
        while len(self._buffer) >= 4:
            (total,) = _INT.unpack_from(self._buffer, 0)
            error = None
            if total < 4:
                error = FrameError(f"frame length {total} is below the 4-byte minimum")
            elif total + 4 > self._max:
                error = FrameError(f"frame of {total + 4} bytes is over the {self._max}-byte limit")
            if error is not None:
                self.broken = error
                self._buffer.clear()
                if frames:
                    return frames
                raise error
            if len(self._buffer) < 4 + total:
                break
            frames.append(bytes(self._buffer[4:4 + total]))
            del self._buffer[:4 + total]
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buffer)
