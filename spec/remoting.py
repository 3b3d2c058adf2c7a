"""The remoting layer every request rides on: the frame on the wire and the request/response pairing.

Follows RocketMQ 4.9.8 ``RemotingCommand`` (``encode``, ``decode``, ``markResponseType``, ``markOnewayRPC``),
``RocketMQSerializable`` (the binary header), ``RemotingSerializable`` (the JSON header, fastjson), ``NettyDecoder``
(the 16 MiB frame limit) and ``NettyRemotingAbstract`` (``processRequestCommand`` answers in the request's opaque and
serialize type; ``processResponseCommand`` matches a response to the waiting request by opaque, once).

Two parts. :func:`parse_frame` reads a frame the way a 4.9.8 peer does and is the oracle a codec is held to: the
fields it yields are what the peer acts on. The machine is one connection: a client sends requests (oneway or not)
under opaques, the server answers, the client may give up waiting (timeout); its invariants say which responses a
caller may ever see. Abstractions: one connection, at most :data:`MAX_OPAQUES` requests, payloads left out (the
frame oracle covers them).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.protocol import (
    MAX_FRAME_BYTES,
    RPC_ONEWAY_FLAG,
    RPC_RESPONSE_FLAG,
    LanguageCode,
    SerializeType,
)

CLAUSES = ClauseTable(
    area="remoting",
    prefix="WIRE",
    clauses=(
        Clause(
            "WIRE-1",
            "A frame is an int32 length (of what follows it), an int32 mark whose high byte is the serialize type "
            "(0 JSON, 1 ROCKETMQ) and low 24 bits the header length, the header, then the body (the rest).",
            "RemotingCommand.encode/decode; RemotingCommand.markProtocolType",
        ),
        Clause(
            "WIRE-2",
            "A JSON header is one object: code, language (the LanguageCode name), version, opaque, flag, remark "
            "(absent when null) and extFields, a map whose values a peer reads as strings.",
            "RemotingSerializable.encode/decode (fastjson); RemotingCommand.headerDecode",
        ),
        Clause(
            "WIRE-3",
            "A ROCKETMQ header is int16 code, int8 language, int16 version, int32 opaque, int32 flag, int32 remark "
            "length and UTF-8 remark (length 0: null), int32 extFields length and entries of int16 key length, key, "
            "int32 value length, value.",
            "RocketMQSerializable.rocketMQProtocolEncode/rocketMQProtocolDecode",
        ),
        Clause(
            "WIRE-4",
            "Flag bit 0 marks a response and bit 1 a oneway request; a response carries its request's opaque and "
            "is written in its request's serialize type.",
            "RemotingCommand.markResponseType/markOnewayRPC; NettyRemotingAbstract.processRequestCommand",
        ),
        Clause(
            "WIRE-5",
            "A oneway request is never answered; another request gets at most one response, and a caller sees it "
            "only while it still waits (a response after the timeout is dropped).",
            "NettyRemotingAbstract.processResponseCommand (responseTable); invokeSyncImpl; scanResponseTable",
        ),
        Clause(
            "WIRE-6",
            "A frame whose length is over 16 MiB, or whose header length runs past it, is refused and the "
            "connection closed.",
            "NettyDecoder (FRAME_MAX_LENGTH 16777216); RemotingCommand.decode",
        ),
    ),
)

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


# ---------------------------------------------------------------------------------------------------------------
# The connection machine (WIRE-4, WIRE-5)
# ---------------------------------------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class Call:
    """One request of the connection: ``oneway``; ``waiting``: the caller still waits; ``answered``: the server
    sent a response; ``seen``: how many responses the caller was given."""

    oneway: bool
    waiting: bool = True
    answered: bool = False
    seen: int = 0


@attrs.frozen(cache_hash=True)
class ConnectionState:
    """The calls by opaque (0..MAX_OPAQUES-1, ``None``: not sent yet)."""

    calls: tuple[Call | None, ...] = (None,) * MAX_OPAQUES


@attrs.frozen
class RequestSent:
    opaque: int
    oneway: bool


@attrs.frozen
class ServerAnswers:
    """The server processes a request and writes a response (never for a oneway, WIRE-4/5)."""

    opaque: int


@attrs.frozen
class ResponseArrives:
    """The response frame reaches the client, which hands it to the caller if it still waits (WIRE-5)."""

    opaque: int


@attrs.frozen
class CallerTimesOut:
    """The caller stops waiting; the request's entry is removed (``scanResponseTable``)."""

    opaque: int


Action = RequestSent | ServerAnswers | ResponseArrives | CallerTimesOut


@CLAUSES.oracle("WIRE-4", "WIRE-5")
def enabled(state: ConnectionState, action: Action) -> bool:
    """Whether ``action`` can happen: an opaque is used once; the server answers a request that is not oneway, once
    (WIRE-4, WIRE-5); a response arrives once it was written; a caller times out while it waits."""
    if not 0 <= action.opaque < MAX_OPAQUES:
        return False
    call = state.calls[action.opaque]
    if isinstance(action, RequestSent):
        return call is None
    if call is None:
        return False
    if isinstance(action, ServerAnswers):
        return not call.oneway and not call.answered
    if isinstance(action, ResponseArrives):
        return call.answered and call.seen == 0 and call.waiting
    if isinstance(action, CallerTimesOut):
        return call.waiting and not call.oneway
    raise TypeError(f"not a remoting action: {action!r}")


@CLAUSES.oracle("WIRE-5")
def step(state: ConnectionState, action: Action) -> ConnectionState:
    """The connection after ``action``: a response the caller still waits for is seen once and ends the wait; a
    late one is dropped (WIRE-5)."""
    require_enabled(enabled, state, action, Action)
    call = state.calls[action.opaque]
    if isinstance(action, RequestSent):
        new = Call(oneway=action.oneway, waiting=not action.oneway)
    elif isinstance(action, ServerAnswers):
        assert call is not None
        new = attrs.evolve(call, answered=True)
    elif isinstance(action, ResponseArrives):
        assert call is not None
        new = attrs.evolve(call, waiting=False, seen=call.seen + 1)
    else:
        assert call is not None
        new = attrs.evolve(call, waiting=False)
    calls = list(state.calls)
    calls[action.opaque] = new
    return ConnectionState(tuple(calls))


def _oneway_unanswered(state: ConnectionState) -> bool:
    return all(c is None or not (c.oneway and (c.answered or c.seen)) for c in state.calls)


def _seen_at_most_once(state: ConnectionState) -> bool:
    return all(c is None or c.seen <= 1 for c in state.calls)


def _seen_only_when_answered(state: ConnectionState) -> bool:
    return all(c is None or c.seen == 0 or c.answered for c in state.calls)


def _no_response_after_timeout(before: ConnectionState, action: Action, after: ConnectionState) -> bool:
    if not isinstance(action, ResponseArrives):
        return True
    was = before.calls[action.opaque]
    return was is not None and was.waiting


INVARIANTS: tuple[Invariant[ConnectionState], ...] = (
    Invariant("a oneway request is never answered", ("WIRE-4", "WIRE-5"), _oneway_unanswered),
    Invariant("a caller sees at most one response per request", ("WIRE-5",), _seen_at_most_once),
    Invariant("a caller sees only a response the server wrote", ("WIRE-4",), _seen_only_when_answered),
)

STEP_INVARIANTS: tuple[StepInvariant[ConnectionState, Action], ...] = (
    StepInvariant("a response reaches only a waiting caller", ("WIRE-5",), _no_response_after_timeout),
)


def candidate_actions(state: ConnectionState) -> Iterator[Action]:
    """Every action on every opaque (``enabled`` decides)."""
    for opaque in range(MAX_OPAQUES):
        yield RequestSent(opaque, oneway=False)
        yield RequestSent(opaque, oneway=True)
        yield ServerAnswers(opaque)
        yield ResponseArrives(opaque)
        yield CallerTimesOut(opaque)


def model() -> Model[ConnectionState, Action]:
    """One connection with up to :data:`MAX_OPAQUES` requests, oneway or not, answered, late or lost."""
    return Model(
        area="remoting",
        bounds=f"one connection, {MAX_OPAQUES} requests",
        initial=(ConnectionState(),),
        actions=candidate_actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
