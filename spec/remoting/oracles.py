"""Remoting: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import decimal
import json
import struct
from collections.abc import Mapping

import attrs

from rocketspec.spec.java import INT_MAX, INT_MIN, big_decimal_int, big_decimal_text, parse_long
from rocketspec.spec.protocol import (
    MAX_FRAME_BYTES,
    OVERLOAD_REMARK,
    OWN_SERIALIZE_TYPE,
    RPC_ONEWAY_FLAG,
    RPC_RESPONSE_FLAG,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    TIMEOUT_CLEAN_QUEUE_REMARK,
    VIP_CHANNEL_UNSERVED_CODES,
    LanguageCode,
    RequestCode,  # noqa: F401  (a contract names it: CrossHair evaluates it here)
    ResponseCode,
    SerializeType,
)
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


def _json_text(value: object) -> str:
    """Compact JSON of a parsed value as fastjson writes it back: decimals as written (``BigDecimal``)."""
    if isinstance(value, decimal.Decimal):
        return big_decimal_text(value)
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_json_text(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def _peer_text(value: object) -> str:
    """A JSON value as fastjson puts it into a ``HashMap<String, String>``: strings as they are, a decimal as
    written, anything else its compact JSON text (checked on the 4.9.8 jar)."""
    return value if isinstance(value, str) else _json_text(value)


def _header_int(value: object) -> int | None:
    """A header field as fastjson casts it to a Java ``int`` (``TypeUtils.castToInt``, checked on the 4.9.8 jar), or
    None where it throws: null and ``""`` read as 0, a boolean as 1 or 0, an integer within range as it is, a
    decimal as its integer part wrapped to 32 bits (``BigDecimal.intValue``), a string as ``Integer.parseInt``."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if INT_MIN <= value <= INT_MAX else None
    if isinstance(value, decimal.Decimal):
        return big_decimal_int(value)
    if isinstance(value, str):
        return 0 if value == "" else parse_long(value, 32)
    return None


def _header_language(value: object) -> int | Refused | None:
    """The language field as fastjson reads the ``LanguageCode`` enum: a name in any case, or an ordinal; null, ``""``
    or an unknown name read as null; an ordinal out of range or another type is refused."""
    if value is None or isinstance(value, str):
        names = {name.upper(): code for name, code in LanguageCode.__members__.items()}
        return None if value is None else names.get(value.upper())
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(LanguageCode):
        return int(LanguageCode(value))
    return Refused(f"language {value!r} is no LanguageCode")


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _json_header(raw: bytes) -> Mapping[str, object] | Refused:
    try:  # new String(bytes, UTF-8): a malformed sequence becomes U+FFFD, it is not an error
        header = json.loads(raw.decode("utf-8", "replace"), parse_float=decimal.Decimal,
                            parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        return Refused(f"the JSON header does not parse: {type(error).__name__}")
    if not isinstance(header, dict):
        return Refused("the JSON header is not an object")
    language = _header_language(header.get("language", LanguageCode.JAVA.name))
    if isinstance(language, Refused):
        return language
    ext = header.get("extFields") or {}
    if not isinstance(ext, dict):
        return Refused("extFields is not an object")
    fields: dict[str, int] = {}
    for name in ("code", "version", "opaque", "flag"):
        value = _header_int(header.get(name))
        if value is None:
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
    that is not the frame's, or a header length past the frame is refused (WIRE-6). Checked on the 4.9.8 broker
    and jar: a JSON header without code (or with null) reads as code 0, numbers as fastjson casts them (booleans,
    numeric text, decimals wrapped to 32 bits; an integer out of range refused), an unknown language name as null
    (names in any case), malformed UTF-8 (JSON or binary) as U+FFFD, decimals in ext fields as written; each is
    answered, not refused. A missing opaque reads as 0 here (4.9.8 takes a value of its own request counter).

    pre: len(data) <= 40
    post: isinstance(__return__, Refused) or len(data) - 4 == int.from_bytes(data[:4], "big", signed=True)
    post: int.from_bytes(data[:4], "big", signed=True) + 4 <= MAX_FRAME_BYTES or isinstance(__return__, Refused)
    post: isinstance(__return__, Refused) or __return__.serialize_type == data[4]
    post: isinstance(__return__, Refused) or __return__.body == data[8 + int.from_bytes(data[5:8], "big"):]
    post: isinstance(__return__, Refused) or data[4] != 0 or data[8:].strip().startswith(b"{")
    post: isinstance(__return__, Refused) or data[4] != 1 or __return__.code == int.from_bytes(data[8:10], "big", signed=True)
    post: isinstance(__return__, Refused) or data[4] != 1 or __return__.opaque == int.from_bytes(data[13:17], "big", signed=True)
    """  # noqa: E501
    if len(data) < 8:
        return Refused("shorter than a length and a mark")
    (length,) = _LENGTH.unpack_from(data, 0)
    if length + 4 > MAX_FRAME_BYTES:
        # NettyDecoder (LengthFieldBasedFrameDecoder) measures the frame with its length field: 16 MiB in all.
        return Refused(f"frame length {length} (with its 4-byte length field) over the 16 MiB limit")
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
# Messages on the wire: the properties string, a stored message, a batch body (WIRE-9, WIRE-10, WIRE-11)
# ---------------------------------------------------------------------------------------------------------------

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
# totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp (WIRE-9).
_STORED_FIXED = struct.Struct(">iiiiiqqiq")


def _java_units(text: str) -> int:
    """``String.length()``: UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@CLAUSES.oracle("WIRE-10")
def parse_properties(text: str) -> tuple[tuple[str, str], ...]:
    """The properties a 4.9.8 peer reads from a properties string (``MessageDecoder.string2messageProperties``,
    WIRE-10): entries split on ``\\x02``, each a name and a value split on its first ``\\x01``; an entry shorter
    than three characters, or with an empty name or an empty value, is dropped; a later entry of the same name
    replaces an earlier one (a HashMap). In order of first appearance.

    pre: len(text) <= 8
    post: all(name and value for name, value in __return__)
    post: all(NAME_VALUE_SEPARATOR not in name and PROPERTY_SEPARATOR not in name for name, _ in __return__)
    post: all(PROPERTY_SEPARATOR not in value for _, value in __return__)
    post: len({name for name, _ in __return__}) == len(__return__)
    post: PROPERTY_SEPARATOR in text or NAME_VALUE_SEPARATOR in text or __return__ == ()
    """
    found: dict[str, str] = {}
    for entry in text.split(PROPERTY_SEPARATOR):
        # Java measures the entry in UTF-16 units (newIndex - index >= 3), and the separator must sit strictly
        # inside it with at least one unit on either side.
        name, sep, value = entry.partition(NAME_VALUE_SEPARATOR)
        if _java_units(entry) >= 3 and sep and name and value:
            found[name] = value
    return tuple(found.items())


@CLAUSES.oracle("WIRE-10")
def properties_text(properties: tuple[tuple[str, str], ...]) -> str:
    """The properties string a 4.9.8 peer writes (``MessageDecoder.messageProperties2String``, WIRE-10): each
    name, ``\\x01``, its value, the entries joined by ``\\x02``.

    pre: len(properties) <= 3
    pre: all(len(n) <= 3 and len(v) <= 3 for n, v in properties)
    post: __return__.count(NAME_VALUE_SEPARATOR) >= len(properties)
    post: len(properties) == 0 or __return__.count(PROPERTY_SEPARATOR) >= len(properties) - 1
    post: not _well_formed(properties) or parse_properties(__return__) == _last_wins(properties)
    """
    return PROPERTY_SEPARATOR.join(f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in properties)


def _well_formed(properties: tuple[tuple[str, str], ...]) -> bool:
    """Names and values a properties string carries whole: neither empty nor holding a separator."""
    return all(n and v and not ({NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR} & (set(n) | set(v)))
               for n, v in properties)


def _last_wins(properties: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for name, value in properties:
        found[name] = value
    return tuple(found.items())


@attrs.frozen
class StoredMessage:
    """A message as a 4.9.8 consumer decodes it from a pull response or a commit log (``MessageDecoder.decode``)."""

    store_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    born_port: int
    store_timestamp: int
    store_host: bytes
    store_port: int
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: tuple[tuple[str, str], ...]


@CLAUSES.oracle("WIRE-9", "WIRE-10")
def parse_stored_messages(data: bytes) -> tuple[StoredMessage, ...]:
    """The messages a 4.9.8 consumer reads from a pull response's body (``MessageDecoder.decodes``, WIRE-9): stored
    messages back to back, each read field by field: ``totalSize`` (not used to move on), magic, body CRC, queue id,
    flag, queue offset, commit-log offset, sysFlag, born timestamp, born host (4 bytes, 16 with sysFlag 0x10) and
    port, store timestamp, store host (16 bytes with 0x20) and port, reconsume times, prepared transaction offset,
    body length and body (none when the length is not positive), a signed one-byte topic length and topic, a signed
    two-byte properties length and properties (none when not positive; WIRE-10). The body is left as stored (the
    client inflates a compressed one, sysFlag 0x1, afterwards). Reading stops at the first message that cannot be
    read whole: the messages before it are what the consumer gets.

    pre: len(data) <= 120
    post: all(len(m.born_host) in (4, 16) and len(m.store_host) in (4, 16) for m in __return__)
    post: all(len(m.topic.encode("utf-8", "replace")) <= 3 * 127 for m in __return__)
    post: len(__return__) <= len(data) // 91
    """
    messages: list[StoredMessage] = []
    at = 0
    while at < len(data):
        parsed = _stored_message(data, at)
        if parsed is None:
            break
        message, at = parsed
        messages.append(message)
    return tuple(messages)


def _stored_message(data: bytes, at: int) -> tuple[StoredMessage, int] | None:
    def take(n: int) -> bytes:
        nonlocal at
        if n < 0 or at + n > len(data):
            raise IndexError
        chunk = data[at:at + n]
        at += n
        return chunk

    try:
        (size, magic, crc, queue_id, flag, queue_offset, physical, sys_flag, born_ts) = _STORED_FIXED.unpack(
            take(_STORED_FIXED.size))
        born_host = take(16 if sys_flag & SYSFLAG_BORNHOST_V6 else 4)
        (born_port,) = _LENGTH.unpack(take(4))
        (store_ts,) = struct.unpack(">q", take(8))
        store_host = take(16 if sys_flag & SYSFLAG_STOREHOST_V6 else 4)
        (store_port, reconsume) = struct.unpack(">ii", take(8))
        (prepared, body_len) = struct.unpack(">qi", take(12))
        body = take(body_len) if body_len > 0 else b""
        (topic_len,) = struct.unpack(">b", take(1))
        topic = take(topic_len).decode("utf-8", "replace")
        (props_len,) = struct.unpack(">h", take(2))
        props = parse_properties(take(props_len).decode("utf-8", "replace")) if props_len > 0 else ()
    except (IndexError, struct.error):
        return None
    message = StoredMessage(size, magic & 0xFFFFFFFF, crc, queue_id, flag, queue_offset, physical, sys_flag,
                            born_ts, born_host, born_port, store_ts, store_host, store_port, reconsume, prepared,
                            body, topic, props)
    return message, at


@attrs.frozen
class BatchedMessage:
    """One message of a SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessage``): its flag, body and properties."""

    flag: int
    body: bytes
    properties: tuple[tuple[str, str], ...]


@CLAUSES.oracle("WIRE-10", "WIRE-11")
def parse_batch_body(data: bytes) -> tuple[BatchedMessage, ...] | Refused:
    """The messages a 4.9.8 broker reads from a SEND_BATCH_MESSAGE body (``MessageDecoder.decodeMessages``,
    WIRE-11): back to back, each ``totalSize``, magic (0), body CRC (0), flag, body length and body, a two-byte
    properties length and properties (WIRE-10). Bytes that do not hold whole messages are refused.

    pre: len(data) <= 60
    post: isinstance(__return__, Refused) or sum(22 + len(m.body) for m in __return__) <= len(data)
    post: len(data) == 0 or isinstance(__return__, Refused) or len(__return__) >= 1
    post: isinstance(__return__, Refused) or len(__return__) <= len(data) // 22
    """
    messages: list[BatchedMessage] = []
    at = 0
    while at < len(data):
        try:
            (_size, _magic, _crc, flag, body_len) = struct.unpack_from(">iiiii", data, at)
            if body_len < 0 or at + 20 + body_len + 2 > len(data):
                return Refused(f"the batched message at byte {at} is cut short")
            body = data[at + 20:at + 20 + body_len]
            (props_len,) = struct.unpack_from(">h", data, at + 20 + body_len)
            end = at + 22 + body_len + max(props_len, 0)
            if props_len < 0 or end > len(data):
                return Refused(f"the batched message at byte {at} is cut short")
            props = parse_properties(data[at + 22 + body_len:end].decode("utf-8", "replace"))
        except struct.error:
            return Refused(f"the batched message at byte {at} is cut short")
        messages.append(BatchedMessage(flag, bytes(body), props))
        at = end
    return tuple(messages)


@CLAUSES.oracle("WIRE-12")
def unknown_code_answer(server_is_broker: bool, code: int) -> tuple[int, str] | None:
    """The answer to a request whose code the server has no processor for (WIRE-12): a broker's default processor
    answers REQUEST_CODE_NOT_SUPPORTED with `` request type <code> not supported``; a name server answers nothing.

    post: (__return__ is None) == (not server_is_broker)
    post: __return__ is None or __return__[1].endswith(" not supported") and str(code) in __return__[1]
    """
    if not server_is_broker:
        return None
    return int(ResponseCode.REQUEST_CODE_NOT_SUPPORTED), f" request type {code} not supported"


@CLAUSES.oracle("WIRE-13")
def offset_message_id(store_host: bytes, store_port: int, commit_log_offset: int) -> str:
    """A stored message's offset message id (``MessageDecoder.createMessageId``, WIRE-13): the uppercase hex of the
    store host's address bytes (4 or 16), the port as an int32 and the commit-log offset as an int64.

    pre: len(store_host) in (4, 16)
    pre: 0 <= store_port < 65536 and 0 <= commit_log_offset < 2 ** 63
    post: len(__return__) == 2 * (len(store_host) + 12)
    post: __return__ == __return__.upper()
    post: int(__return__[-16:], 16) == commit_log_offset
    """
    return (store_host + struct.pack(">iq", store_port, commit_log_offset)).hex().upper()


_HEX_DIGITS = "0123456789ABCDEF"


@CLAUSES.oracle("WIRE-13", "WIRE-19")
def message_id_offset(msg_id: str) -> int | Refused:
    """The commit-log offset a 4.9.8 broker reads from a message id (``MessageDecoder.decodeMessageId``, WIRE-19):
    the id upper-cased, read as pairs of hex digits (``UtilAll.string2bytes``: a character that is not a digit is
    -1, so the pair is ``(byte) (hi << 4 | lo)``; an odd last character is left out), then an address of 4 bytes
    when the id has 32 characters (16 otherwise), an int32 port (``InetSocketAddress`` wants 0..65535) and the
    int64 offset. Refused, naming what 4.9.8 throws: an empty id (``string2bytes`` gives null), too few bytes, a
    port out of range. The inverse of ``offset_message_id`` (WIRE-13).

    pre: len(msg_id) <= 60
    post: not isinstance(__return__, int) or len(msg_id) >= 32
    post: not isinstance(__return__, Refused) or __return__.reason.startswith("java.")
    post: msg_id != "" or isinstance(__return__, Refused)
    """
    if not msg_id:
        return Refused("java.lang.NullPointerException")
    upper = msg_id.upper()
    raw = bytes(((_HEX_DIGITS.find(upper[2 * i]) << 4) | _HEX_DIGITS.find(upper[2 * i + 1])) & 0xFF
                for i in range(len(upper) // 2))
    ip_len = 4 if _java_units(msg_id) == 32 else 16
    if len(raw) < ip_len + 4:
        return Refused("java.nio.BufferUnderflowException")
    (port,) = _LENGTH.unpack_from(raw, ip_len)
    if not 0 <= port <= 0xFFFF:
        return Refused(f"java.lang.IllegalArgumentException: port out of range:{port}")
    if len(raw) < ip_len + 12:
        return Refused("java.nio.BufferUnderflowException")
    return int(struct.unpack_from(">q", raw, ip_len + 4)[0])



# ---------------------------------------------------------------------------------------------------------------
# What only a socket server shows: the VIP channel, flow control, idle connections (WIRE-14, WIRE-15, WIRE-16)
# ---------------------------------------------------------------------------------------------------------------


@CLAUSES.oracle("WIRE-12", "WIRE-14")
def vip_channel_answer(code: int) -> tuple[int, str] | None:
    """What a broker's VIP channel (its port - 2, the fast remoting server) answers in place of its main port to a
    request of ``code`` (WIRE-14): a pull, whose processor only the main port has, is answered by the default
    processor as an unknown code (WIRE-12); None: the request is served as on the main port.

    post: (__return__ is None) == (code != RequestCode.PULL_MESSAGE)
    post: __return__ is None or __return__ == unknown_code_answer(True, code)
    post: __return__ is None or __return__[0] == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    """
    if code not in VIP_CHANNEL_UNSERVED_CODES:
        return None
    return unknown_code_answer(True, code)


@CLAUSES.oracle("WIRE-15")
def overload_answer(room: bool, oneway: bool) -> tuple[int, str] | None:
    """The answer flow control gives a request as it arrives (WIRE-15): with ``room`` in its executor's queue none
    (it is queued, to be processed); without, SYSTEM_BUSY ``[OVERLOAD]...`` at once, or nothing for a oneway
    request (it is lost).

    post: room or oneway or __return__ == (ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
    post: __return__ is None or (not room and not oneway)
    """
    if room or oneway:
        return None
    return int(ResponseCode.SYSTEM_BUSY), OVERLOAD_REMARK


@CLAUSES.oracle("WIRE-15")
def fast_failure_answer(waited_ms: int, max_wait_ms: int, queue_size: int) -> tuple[int, str] | None:
    """The answer a request taken from its executor's queue after ``waited_ms`` gets in place of being processed
    (WIRE-15, ``BrokerFastFailure``): none within its executor's ``max_wait_ms``, else SYSTEM_BUSY
    ``[TIMEOUT_CLEAN_QUEUE]...`` naming the time it waited and the ``queue_size`` left.

    pre: 0 <= waited_ms <= 10 ** 6 and 0 < max_wait_ms <= 10 ** 6 and 0 <= queue_size <= 10 ** 6
    post: (__return__ is None) == (waited_ms < max_wait_ms)
    post: __return__ is None or __return__[0] == ResponseCode.SYSTEM_BUSY
    post: __return__ is None or f"period in queue: {waited_ms}ms" in __return__[1]
    post: __return__ is None or __return__[1].startswith("[TIMEOUT_CLEAN_QUEUE]")
    """
    if waited_ms < max_wait_ms:
        return None
    return int(ResponseCode.SYSTEM_BUSY), TIMEOUT_CLEAN_QUEUE_REMARK.format(waited=waited_ms, size=queue_size)


@CLAUSES.oracle("WIRE-16")
def idle_closes(idle_ms: int, max_idle_ms: int) -> bool:
    """Whether a server closes a connection that has had no traffic either way for ``idle_ms`` (WIRE-16): once
    ``serverChannelMaxIdleTimeSeconds`` (``max_idle_ms`` here) has passed; 0 turns it off (Netty's IdleStateHandler).

    pre: idle_ms >= 0 and max_idle_ms >= 0
    post: not __return__ or max_idle_ms > 0
    post: not __return__ or idle_ms >= max_idle_ms
    post: __return__ or max_idle_ms == 0 or idle_ms < max_idle_ms
    """
    return max_idle_ms > 0 and idle_ms >= max_idle_ms


@CLAUSES.oracle("WIRE-4", "WIRE-17")
def serialize_type_written(answering: SerializeType | None, own: SerializeType = OWN_SERIALIZE_TYPE
                           ) -> SerializeType:
    """The serialize type a peer writes a command in (WIRE-17): a processor's answer in that of the request it
    answers (``answering``, WIRE-4); a command the peer creates itself, a request it sends or a flow-control answer
    (``answering`` None, WIRE-15), in its ``own`` (``serializeTypeConfigInThisServer``, JSON unless configured).

    post: answering is None or __return__ == answering
    post: answering is not None or __return__ == own
    """
    return own if answering is None else answering
