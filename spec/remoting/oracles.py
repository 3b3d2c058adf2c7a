"""Remoting: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping

import attrs

from rocketspec.spec.protocol import MAX_FRAME_BYTES, RPC_ONEWAY_FLAG, RPC_RESPONSE_FLAG, LanguageCode, SerializeType
from rocketspec.spec.remoting.clauses import CLAUSES

#: Requests one explored connection carries (the model's bound).
MAX_OPAQUES = 3

_LENGTH = struct.Struct(">i")
_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag (WIRE-3)


@attrs.frozen
class Frame:
    """A frame as a 4.9.8 peer reads it: the header's fields, the extFields as strings, the body."""

    serialize_type: SerializeType
    code: int
    language: int | None  # None: a JSON name LanguageCode does not know (fastjson reads null)
    version: int
    opaque: int
    flag: int
    remark: str | None
    ext_fields: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY_FLAG)


@attrs.frozen
class Refused:
    """Bytes a peer will not read as a frame (it closes the connection), and why."""

    reason: str


def _peer_text(value: object) -> str:
    """A JSON value as fastjson puts it into a ``HashMap<String, String>``: strings as they are, else its JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_header(raw: bytes) -> Mapping[str, object] | Refused:
    try:  # new String(bytes, UTF-8): a malformed sequence becomes U+FFFD, it is not an error
        header = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as error:
        return Refused(f"the JSON header does not parse: {type(error).__name__}")
    if not isinstance(header, dict):
        return Refused("the JSON header is not an object")
    language = header.get("language", LanguageCode.JAVA.name)
    if isinstance(language, str):  # an unknown name reads as null: the frame is still a command
        language = LanguageCode[language].value if language in LanguageCode.__members__ else None
    ext = header.get("extFields") or {}
    if not isinstance(ext, dict):
        return Refused("extFields is not an object")
    fields: dict[str, int] = {}
    for name in ("code", "version", "opaque", "flag"):
        value = header.get(name, 0)
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)  # fastjson reads a number written as text
        elif isinstance(value, float) and value == value and abs(value) != float("inf"):
            value = int(value)  # and casts a decimal, dropping the fraction
        if not isinstance(value, int) or isinstance(value, bool):
            return Refused(f"{name} must be an integer")
        fields[name] = value
    remark = header.get("remark")
    return {**fields, "language": language, "remark": None if remark is None else _peer_text(remark),
            # A null value is as good as absent: extFields.get(name) answers null either way.
            "ext_fields": tuple((k, _peer_text(v)) for k, v in ext.items() if v is not None)}


def _binary_header(raw: bytes) -> Mapping[str, object] | Refused:
    def take(at: int, n: int) -> bytes:
        if n < 0 or at + n > len(raw):
            raise IndexError
        return raw[at:at + n]

    try:
        code, language, version, opaque, flag = _FIXED.unpack(take(0, _FIXED.size))
        at = _FIXED.size
        (remark_len,) = _LENGTH.unpack(take(at, 4))
        remark = take(at + 4, remark_len).decode("utf-8", "replace") if remark_len > 0 else None
        at += 4 + max(remark_len, 0)
        (ext_len,) = _LENGTH.unpack(take(at, 4))
        at += 4
        end = at + ext_len
        entries = []
        while at < end:
            (key_len,) = struct.unpack(">h", take(at, 2))
            key = take(at + 2, key_len).decode("utf-8", "replace")
            at += 2 + key_len
            (value_len,) = _LENGTH.unpack(take(at, 4))
            entries.append((key, take(at + 4, value_len).decode("utf-8", "replace")))
            at += 4 + value_len
    except (IndexError, struct.error):
        return Refused("the binary header is truncated")
    return {"code": code, "language": language, "version": version, "opaque": opaque, "flag": flag,
            "remark": remark, "ext_fields": tuple(entries)}


@CLAUSES.oracle("WIRE-1", "WIRE-2", "WIRE-3", "WIRE-6")
def parse_frame(data: bytes) -> Frame | Refused:
    """What a 4.9.8 peer reads from ``data``, one frame with its length prefix (WIRE-1), or why it refuses it.

    The header is JSON (WIRE-2) or binary (WIRE-3) as the mark's high byte says; a frame over 16 MiB, a length
    that is not the frame's, or a header length past the frame is refused (WIRE-6). Checked on the 4.9.8 broker:
    a JSON header without code reads as code 0, an unknown language name as null, malformed UTF-8 (JSON or binary)
    as U+FFFD, a decimal code as its integer part; each is answered, not refused. A missing opaque reads as 0 here
    (4.9.8 takes a value of its own request counter).

    pre: len(data) <= 40
    post: isinstance(__return__, Refused) or len(data) - 4 == int.from_bytes(data[:4], "big", signed=True)
    post: int.from_bytes(data[:4], "big", signed=True) <= MAX_FRAME_BYTES or isinstance(__return__, Refused)
    post: isinstance(__return__, Refused) or __return__.serialize_type == data[4]
    post: isinstance(__return__, Refused) or __return__.body == data[8 + int.from_bytes(data[5:8], "big"):]
    post: isinstance(__return__, Refused) or data[4] != 0 or data[8:].strip().startswith(b"{")
    post: isinstance(__return__, Refused) or data[4] != 1 or __return__.code == int.from_bytes(data[8:10], "big", signed=True)
    post: isinstance(__return__, Refused) or data[4] != 1 or __return__.opaque == int.from_bytes(data[13:17], "big", signed=True)
    """  # noqa: E501
    if len(data) < 8:
        return Refused("shorter than a length and a mark")
    (length,) = _LENGTH.unpack_from(data, 0)
    if length > MAX_FRAME_BYTES:
        return Refused(f"frame length {length} over the 16 MiB limit")
    if length != len(data) - 4:
        return Refused(f"frame length {length}, but {len(data) - 4} bytes follow it")
    (mark,) = _LENGTH.unpack_from(data, 4)
    kind, header_len = (mark >> 24) & 0xFF, mark & 0xFFFFFF
    if header_len > length - 4:
        return Refused(f"header length {header_len} runs past the frame")
    if kind not in (SerializeType.JSON, SerializeType.ROCKETMQ):
        return Refused(f"unknown serialize type {kind}")
    raw = bytes(data[8:8 + header_len])
    parsed = _json_header(raw) if kind == SerializeType.JSON else _binary_header(raw)
    if isinstance(parsed, Refused):
        return parsed
    return Frame(serialize_type=SerializeType(kind), body=bytes(data[8 + header_len:]), **parsed)  # type: ignore[arg-type]


@CLAUSES.oracle("WIRE-4")
def answers(request: Frame, response: Frame) -> bool:
    """Whether ``response`` is a well-formed answer to ``request`` (WIRE-4): a response, to a request that is not
    oneway, under its opaque and in its serialize type.

    post: not __return__ or (response.is_response and not request.is_response and not request.is_oneway)
    post: not __return__ or response.opaque == request.opaque
    """
    return (response.is_response and not request.is_response and not request.is_oneway
            and response.opaque == request.opaque and response.serialize_type == request.serialize_type)
