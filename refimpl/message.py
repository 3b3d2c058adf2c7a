"""Messages, message ids and the byte layouts RocketMQ 4.x stores and sends (REFERENCE §A, §B).

- ``Message`` is the user's message (``org.apache.rocketmq.common.message.Message``): tags, keys and the delay level
  live in its properties, exactly as Java keeps them.
- ``MessageExt`` is a stored/received message (``MessageExt`` / ``MessageClientExt``) decoded from the commit-log
  layout of ``MessageDecoder``; ``encode_stored_message`` writes that layout (``CommitLog.MessageExtEncoder``).
- ``encode_batch`` / ``decode_batch`` are the SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessage[s]`` /
  ``decodeMessages``).
- Message ids: the offset id (``MessageDecoder.createMessageId``: store host + commit-log offset) and the client's
  unique id (``MessageClientIDSetter.createUniqID``).
"""

from __future__ import annotations

import calendar
import datetime
import functools
import ipaddress
import socket
import struct
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from rocketspec.spec import protocol
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import Property
from rocketspec.spec.queues import MessageQueue

_NV = protocol.NAME_VALUE_SEPARATOR
_SEP = protocol.PROPERTY_SEPARATOR
_MAGIC = protocol.MESSAGE_MAGIC_CODE
_HOST_V6_BITS = protocol.SYSFLAG_BORNHOST_V6 | protocol.SYSFLAG_STOREHOST_V6

# Fixed part of a stored message with IPv4 hosts: every field from totalSize up to and including bodyLen (88 bytes);
# then body, int8 topicLen + topic, int16 propertiesLen + properties (3 more fixed bytes: 91 in all).
_STORED_V4 = struct.Struct(">iIiiiqqiq4siq4siiqi")
# The same split around the hosts, for IPv6 hosts (16-byte addresses).
_STORED_PREFIX = struct.Struct(">iIiiiqqiq")  # up to bornTimestamp, 48 bytes
_STORED_SUFFIX = struct.Struct(">iqi")  # reconsumeTimes, preparedTransactionOffset, bodyLen
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_HOST_PORT = struct.Struct(">i")
_SYSFLAG_POS = 36  # byte position of sysFlag in a stored message
STORED_FIXED_BYTES = 91  # the fixed bytes of a stored message with IPv4 hosts
STORE_TIMESTAMP_POS = 56  # byte position of storeTimestamp when the born host is IPv4
_BATCH_HEAD = struct.Struct(">iiiii")  # totalSize, magic 0, bodyCRC 0, flag, bodyLen
_BATCH_FIXED_BYTES = 22  # 20 head bytes + int16 propertiesLen


# ---------------------------------------------------------------------------------------------------------------
# Hashes, properties, hosts


@functools.lru_cache(maxsize=8192)
def tags_code(tags: str | None) -> int:
    """The consume-queue tags code of a message (``MessageExtBrokerInner.tagsString2tagsCode``): 0 without tags."""
    if not tags:
        return 0
    return java_string_hash(tags)


def java_length(s: str) -> int:
    """``String.length()``: the number of UTF-16 code units."""
    if s.isascii():
        return len(s)
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def encode_properties(props: Mapping[str, str]) -> str:
    """``MessageDecoder.messageProperties2String``: ``name\\x01value`` pairs joined by ``\\x02``, None skipped."""
    return _SEP.join([f"{name}{_NV}{value}" for name, value in props.items() if value is not None])


def decode_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``.

    Pairs with an empty name or an empty value are dropped, as Java drops them; a trailing separator (some clients
    write one) is harmless. The value is everything after the first ``\\x01``.
    """
    result: dict[str, str] = {}
    if not text:
        return result
    for piece in text.split(_SEP):
        cut = piece.find(_NV)
        if 0 < cut < len(piece) - 1:
            result[piece[:cut]] = piece[cut + 1:]
    return result


def split_host_port(addr: str) -> tuple[str, int]:
    """``"ip:port"`` (or ``"[v6]:port"``) → (ip, port); ValueError when malformed."""
    if not isinstance(addr, str):
        raise ValueError(f"bad address {addr!r}")
    host, sep, port_text = addr.rpartition(":")
    if not sep or not host:
        raise ValueError(f"bad address {addr!r}: expected ip:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bad port in address {addr!r}") from None
    if not 0 <= port <= 0x7FFFFFFF:
        raise ValueError(f"bad port in address {addr!r}")
    return host, port


@functools.lru_cache(maxsize=4096)
def _ip_packed(host: str) -> bytes:
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        raise ValueError(f"not an IP address: {host!r}") from None


@functools.lru_cache(maxsize=4096)
def socket_address_bytes(addr: str) -> bytes:
    """``"ip:port"`` → the stored host bytes: IPv4 4 bytes (IPv6 16 bytes) + int32 port."""
    host, port = split_host_port(addr)
    return _ip_packed(host) + _HOST_PORT.pack(port)


def _host_text(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{socket.inet_ntoa(ip)}:{port}"
    return f"[{socket.inet_ntop(socket.AF_INET6, ip)}]:{port}"


def _to_int16(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x80000000 else value


# ---------------------------------------------------------------------------------------------------------------
# Message ids


def offset_message_id(host: str, port: int, commit_log_offset: int) -> str:
    """``MessageDecoder.createMessageId``: uppercase hex of store IP + int32 port + int64 commit-log offset.

    32 characters for an IPv4 store host (56 for IPv6).
    """
    return (_ip_packed(host) + struct.pack(">iq", port, commit_log_offset)).hex().upper()


def _offset_id_from_host_bytes(host_bytes: bytes, commit_log_offset: int) -> str:
    return (host_bytes + _I64.pack(commit_log_offset)).hex().upper()


def decode_offset_message_id(msg_id: str) -> tuple[str, int, int]:
    """``MessageDecoder.decodeMessageId``: (store ip, port, commit-log offset); ValueError if not an offset id."""
    if not isinstance(msg_id, str) or len(msg_id) not in (32, 56):
        raise ValueError(f"not an offset message id: {msg_id!r}")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ValueError(f"not an offset message id: {msg_id!r}") from None
    ip_len = 4 if len(raw) == 16 else 16
    ip = raw[:ip_len]
    port, offset = struct.unpack_from(">iq", raw, ip_len)
    host = socket.inet_ntoa(ip) if ip_len == 4 else socket.inet_ntop(socket.AF_INET6, ip)
    return host, port, offset


class MessageIdDecodeError(ValueError):
    """What 4.9.8's ``MessageDecoder.decodeMessageId`` throws, as ``RemotingHelper.exceptionSimpleDesc`` shows it."""


def _java_hex_bytes(text: str) -> bytes:
    """``UtilAll.string2bytes``: pairs of upper-cased characters, each the index in "0123456789ABCDEF" (-1 when not
    there), combined as ``(byte) (hi << 4 | lo)``; a trailing odd character is dropped."""
    digits = "0123456789ABCDEF"
    upper = text.upper()
    return bytes(((digits.find(upper[2 * i]) << 4) | digits.find(upper[2 * i + 1])) & 0xFF
                 for i in range(len(upper) // 2))


def java_message_id_offset(msg_id: str | None) -> int:
    """The commit-log offset ``MessageDecoder.decodeMessageId`` reads from any text, failing as 4.9.8 does: an ip of
    4 bytes for 32 characters (16 otherwise), a port that must be 0..65535, then the offset; too few bytes are a
    ``BufferUnderflowException``. Raises ``MessageIdDecodeError`` with the remark 4.9.8 answers."""
    if not msg_id:  # string2bytes gives null, ByteBuffer.wrap(null)
        raise MessageIdDecodeError('java.lang.NullPointerException: Cannot read the array length because "array" is '
                                   "null, java.base/java.nio.ByteBuffer.wrap(ByteBuffer.java:437)")
    raw = _java_hex_bytes(msg_id)
    ip_len = 4 if len(msg_id) == 32 else 16
    if len(raw) < ip_len:
        raise MessageIdDecodeError(
            "java.nio.BufferUnderflowException, java.base/java.nio.HeapByteBuffer.get(HeapByteBuffer.java:183)")
    if len(raw) < ip_len + 4:
        raise MessageIdDecodeError(
            "java.nio.BufferUnderflowException, java.base/java.nio.Buffer.nextGetIndex(Buffer.java:707)")
    (port,) = struct.unpack_from(">i", raw, ip_len)
    if not 0 <= port <= 0xFFFF:
        raise MessageIdDecodeError(f"java.lang.IllegalArgumentException: port out of range:{port}, "
                                   "java.base/java.net.InetSocketAddress.checkPort(InetSocketAddress.java:152)")
    if len(raw) < ip_len + 12:
        raise MessageIdDecodeError(
            "java.nio.BufferUnderflowException, java.base/java.nio.Buffer.nextGetIndex(Buffer.java:707)")
    return int(struct.unpack_from(">q", raw, ip_len + 4)[0])


def _month_bounds_ms(now_ms: int) -> tuple[int, int]:
    """Start of the month containing ``now_ms`` and of the next one, in UTC (Java uses the default time zone)."""
    day = datetime.datetime.fromtimestamp(now_ms / 1000, tz=datetime.timezone.utc)
    start = calendar.timegm((day.year, day.month, 1, 0, 0, 0)) * 1000
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return start, calendar.timegm((year, month, 1, 0, 0, 0)) * 1000


class UniqueIdGenerator:
    """``MessageClientIDSetter.createUniqID``: the UNIQ_KEY a producer puts on every message.

    Uppercase hex of: IP (4 bytes) + int16 pid + int32 class-loader hash (``seed_hash``) + int32 milliseconds since the
    start of the current month (UTC here; Java uses the JVM's zone) + int16 counter (wrapping). The month start is
    taken when the generator is made and moved forward when the clock passes the next month, as Java does. The result
    depends only on the constructor's inputs and the clock's readings.
    """

    def __init__(self, ip: str, pid: int, seed_hash: int, clock: Callable[[], int]) -> None:
        fixed = _ip_packed(ip) + struct.pack(">hi", _to_int16(pid), _to_int32(seed_hash))
        self._prefix = fixed.hex().upper()
        self._clock = clock
        self._counter = 0
        self._start_ms, self._next_start_ms = _month_bounds_ms(clock())

    def next_id(self) -> str:
        now = self._clock()
        if now >= self._next_start_ms:
            self._start_ms, self._next_start_ms = _month_bounds_ms(now)
        diff = _to_int32(now - self._start_ms)
        if -1_000_000 < diff < 0:  # a clock step back (NTP): Java clamps small negative spans to 0
            diff = 0
        counter = self._counter & 0xFFFF
        self._counter = (self._counter + 1) & 0xFFFFFFFF
        return f"{self._prefix}{diff & 0xFFFFFFFF:08X}{counter:04X}"


# ---------------------------------------------------------------------------------------------------------------
# Messages


def _as_bytes(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    raise TypeError(f"message body must be bytes, not {type(body).__name__}")


def _join_keys(keys: str | Iterable[str]) -> str:
    if isinstance(keys, str):
        return keys
    joined = []
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"message keys must be strings, not {type(key).__name__}")
        joined.append(key)
    # Message.setKeys(Collection): each key followed by a space, then trimmed.
    return protocol.KEY_SEPARATOR.join(joined).strip()


@attrs.define(init=False)
class Message:
    """A user message (``org.apache.rocketmq.common.message.Message``), mutable like Java's.

    ``tags``, ``keys`` and ``delay_level`` are views over ``properties`` (TAGS, KEYS space-joined, DELAY), so the
    properties are the single source of truth and go on the wire unchanged. ``Message("T", b"x", tags="A",
    keys=["k1", "k2"], delay_level=3)`` gives properties ``{"TAGS": "A", "KEYS": "k1 k2", "DELAY": "3"}``.
    """

    topic: str
    body: bytes
    properties: dict[str, str]
    flag: int

    def __init__(
        self,
        topic: str,
        body: bytes,
        tags: str | None = None,
        keys: str | Sequence[str] | None = None,
        properties: Mapping[str, str] | None = None,
        delay_level: int = 0,
        flag: int = 0,
    ) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError("message topic must be a non-empty string")
        if not isinstance(flag, int) or isinstance(flag, bool):
            raise TypeError("message flag must be an int")
        if not isinstance(delay_level, int) or isinstance(delay_level, bool) or delay_level < 0:
            raise ValueError("delay_level must be an int >= 0")
        props: dict[str, str] = {}
        for name, value in (properties or {}).items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise TypeError("message properties map strings to strings")
            props[name] = value
        self.__attrs_init__(topic, _as_bytes(body), props, flag)
        if tags:
            self.tags = tags
        if keys:
            self.keys = keys
        if delay_level > 0:
            self.delay_level = delay_level

    # Properties kept in ``properties`` (Java's Message accessors).
    @property
    def tags(self) -> str | None:
        return self.properties.get(Property.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        if value is None:
            self.properties.pop(Property.TAGS, None)
        elif not isinstance(value, str):
            raise TypeError("tags must be a string")
        else:
            self.properties[Property.TAGS] = value

    @property
    def keys(self) -> str | None:
        """The KEYS property (keys separated by spaces), as Java's ``getKeys``."""
        return self.properties.get(Property.KEYS)

    @keys.setter
    def keys(self, value: str | Sequence[str] | None) -> None:
        if value is None:
            self.properties.pop(Property.KEYS, None)
        else:
            self.properties[Property.KEYS] = _join_keys(value)

    @property
    def key_list(self) -> list[str]:
        return [key for key in (self.keys or "").split(protocol.KEY_SEPARATOR) if key]

    @property
    def delay_level(self) -> int:
        text = self.properties.get(Property.DELAY_TIME_LEVEL)
        return int(text) if text is not None else 0

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        if not isinstance(level, int) or isinstance(level, bool) or level < 0:
            raise ValueError("delay_level must be an int >= 0")
        self.properties[Property.DELAY_TIME_LEVEL] = str(level)

    @property
    def wait_store_msg_ok(self) -> bool:
        """WAIT property; absent means true (``Message.isWaitStoreMsgOK``)."""
        text = self.properties.get(Property.WAIT_STORE_MSG_OK)
        return text is None or text.lower() == "true"

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, value: bool) -> None:
        self.properties[Property.WAIT_STORE_MSG_OK] = "true" if value else "false"

    @property
    def unique_key(self) -> str | None:
        """The client's unique id (UNIQ_KEY), the msgId consumers see."""
        return self.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def put_property(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("message properties map strings to strings")
        self.properties[name] = value

    def remove_property(self, name: str) -> None:
        """``MessageAccessor.clearProperty``."""
        self.properties.pop(name, None)


@attrs.frozen
class MessageExt:
    """A stored or received message (``MessageExt``; ``msg_id`` as ``MessageClientExt.getMsgId``).

    ``msg_id`` is the UNIQ_KEY when present, else the offset id; ``offset_msg_id`` is always the offset id.
    ``born_host``/``store_host`` are ``"ip:port"``; ``keys`` is KEYS split on spaces.
    """

    topic: str
    body: bytes
    tags: str | None
    keys: tuple[str, ...]
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reconsume_times: int
    properties: dict[str, str] = attrs.field(hash=False)
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    sys_flag: int
    flag: int
    prepared_transaction_offset: int
    store_size: int
    broker_name: str
    body_crc: int

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    @property
    def unique_key(self) -> str | None:
        return self.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def delay_level(self) -> int:
        text = self.properties.get(Property.DELAY_TIME_LEVEL)
        return int(text) if text is not None else 0

    @property
    def transaction_type(self) -> int:
        """``MessageSysFlag.getTransactionValue``: 0 none, 4 prepared, 8 commit, 12 rollback."""
        return self.sys_flag & protocol.SYSFLAG_TRANSACTION_MASK


# ---------------------------------------------------------------------------------------------------------------
# Stored message layout (MessageDecoder / CommitLog.MessageExtEncoder)


def body_crc(body: bytes) -> int:
    """``UtilAll.crc32``: CRC32 of the body masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


def stored_size(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0) -> int:
    """``CommitLog.calMsgLength``: the stored size of a message (byte lengths of body, topic, properties)."""
    extra = (12 if sys_flag & protocol.SYSFLAG_BORNHOST_V6 else 0) + (12 if sys_flag & protocol.SYSFLAG_STOREHOST_V6
                                                                       else 0)
    return STORED_FIXED_BYTES + extra + body_len + topic_len + props_len


def pack_stored_message(
    topic_bytes: bytes,
    queue_id: int,
    body: bytes,
    flag: int,
    props_bytes: bytes,
    sys_flag: int,
    born_timestamp: int,
    born_host_bytes: bytes,
    store_timestamp: int,
    store_host_bytes: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    queue_offset: int,
    commit_log_offset: int,
    crc: int,
) -> bytes:
    """The stored layout from already-encoded parts (the store's hot path; no validation).

    Host bytes are ``socket_address_bytes`` results; the host-v6 sysFlag bits are set from their lengths.
    """
    sys_flag &= ~_HOST_V6_BITS
    if len(born_host_bytes) != 8:
        sys_flag |= protocol.SYSFLAG_BORNHOST_V6
    if len(store_host_bytes) != 8:
        sys_flag |= protocol.SYSFLAG_STOREHOST_V6
    body_len = len(body)
    topic_len = len(topic_bytes)
    props_len = len(props_bytes)
    total = stored_size(body_len, topic_len, props_len, sys_flag)
    if not sys_flag & _HOST_V6_BITS:
        head = _STORED_V4.pack(
            total, _MAGIC, crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag, born_timestamp,
            born_host_bytes[:4], _HOST_PORT.unpack_from(born_host_bytes, 4)[0], store_timestamp,
            store_host_bytes[:4], _HOST_PORT.unpack_from(store_host_bytes, 4)[0], reconsume_times,
            prepared_transaction_offset, body_len,
        )
    else:
        head = b"".join((
            _STORED_PREFIX.pack(total, _MAGIC, crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag,
                                born_timestamp),
            born_host_bytes, _I64.pack(store_timestamp), store_host_bytes,
            _STORED_SUFFIX.pack(reconsume_times, prepared_transaction_offset, body_len),
        ))
    return b"".join((head, body, bytes((topic_len,)), topic_bytes, _I16.pack(props_len), props_bytes))


def encode_stored_message(
    *,
    topic: str,
    queue_id: int,
    body: bytes,
    flag: int,
    properties: Mapping[str, str] | str,
    sys_flag: int,
    born_timestamp: int,
    born_host: str,
    store_timestamp: int,
    store_host: str,
    reconsume_times: int,
    prepared_transaction_offset: int,
    queue_offset: int,
    commit_log_offset: int,
) -> bytes:
    """A message in the commit-log layout of REFERENCE §B (``CommitLog.MessageExtEncoder``), bodyCRC computed here.

    The body is stored as given (a compressed body carries sysFlag 0x1; compressing is the producer's business).
    ValueError if the topic is longer than 127 bytes or the properties longer than 32767 bytes.
    """
    topic_bytes = topic.encode("utf-8")
    if not topic_bytes or len(topic_bytes) > protocol.TOPIC_MAX_LENGTH:
        raise ValueError(f"topic must be 1..{protocol.TOPIC_MAX_LENGTH} bytes")
    props_text = properties if isinstance(properties, str) else encode_properties(properties)
    props_bytes = props_text.encode("utf-8")
    if len(props_bytes) > protocol.MAX_PROPERTIES_LENGTH:
        raise ValueError(f"properties longer than {protocol.MAX_PROPERTIES_LENGTH} bytes")
    body = _as_bytes(body)
    return pack_stored_message(
        topic_bytes, queue_id, body, flag, props_bytes, sys_flag, born_timestamp, socket_address_bytes(born_host),
        store_timestamp, socket_address_bytes(store_host), reconsume_times, prepared_transaction_offset,
        queue_offset, commit_log_offset, body_crc(body),
    )


def decode_stored_message(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, broker_name: str = "", decompress: bool = True
) -> tuple[MessageExt, int]:
    """``MessageDecoder.decode`` of the message at ``pos``: (message, its stored size).

    ``decompress`` inflates a body whose sysFlag has 0x1 (what a consumer sees; the broker's ``lookMessageByOffset``
    does not). ValueError on a bad magic code, an inconsistent size, a truncated buffer or undecodable text.
    """
    end = len(buf)
    if pos < 0 or pos + STORED_FIXED_BYTES > end:
        raise ValueError("truncated stored message")
    total, magic = struct.unpack_from(">iI", buf, pos)
    if magic != _MAGIC:
        raise ValueError(f"bad magic code 0x{magic:08X} at {pos}")
    if total < STORED_FIXED_BYTES or pos + total > end:
        raise ValueError(f"bad stored message size {total} at {pos}")
    sys_flag = _I32.unpack_from(buf, pos + _SYSFLAG_POS)[0]
    if not sys_flag & _HOST_V6_BITS:
        (_, _, crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag, born_ts, born_ip, born_port, store_ts,
         store_ip, store_port, reconsume_times, prepared_offset, body_len) = _STORED_V4.unpack_from(buf, pos)
        cursor = pos + _STORED_V4.size
        store_host_bytes = bytes(buf[pos + 64:pos + 72])
    else:
        (_, _, crc, queue_id, flag, queue_offset, commit_log_offset, sys_flag,
         born_ts) = _STORED_PREFIX.unpack_from(buf, pos)
        cursor = pos + _STORED_PREFIX.size
        ip_len = 16 if sys_flag & protocol.SYSFLAG_BORNHOST_V6 else 4
        born_ip = bytes(buf[cursor:cursor + ip_len])
        born_port = _HOST_PORT.unpack_from(buf, cursor + ip_len)[0]
        cursor += ip_len + 4
        store_ts = _I64.unpack_from(buf, cursor)[0]
        cursor += 8
        ip_len = 16 if sys_flag & protocol.SYSFLAG_STOREHOST_V6 else 4
        store_host_bytes = bytes(buf[cursor:cursor + ip_len + 4])
        store_ip = store_host_bytes[:ip_len]
        store_port = _HOST_PORT.unpack_from(store_host_bytes, ip_len)[0]
        cursor += ip_len + 4
        reconsume_times, prepared_offset, body_len = _STORED_SUFFIX.unpack_from(buf, cursor)
        cursor += _STORED_SUFFIX.size
    limit = pos + total
    if body_len < 0 or cursor + body_len + 3 > limit:
        raise ValueError(f"bad body length {body_len} at {pos}")
    body = bytes(buf[cursor:cursor + body_len])
    cursor += body_len
    topic_len = buf[cursor]
    cursor += 1
    topic = bytes(buf[cursor:cursor + topic_len]).decode("utf-8")
    cursor += topic_len
    if cursor + 2 > limit:
        raise ValueError(f"bad topic length at {pos}")
    props_len = _I16.unpack_from(buf, cursor)[0]
    cursor += 2
    if props_len < 0 or cursor + props_len != limit:
        raise ValueError(f"stored size {total} does not match the message's fields at {pos}")
    properties = decode_properties(bytes(buf[cursor:cursor + props_len]).decode("utf-8"))
    if decompress and sys_flag & protocol.SYSFLAG_COMPRESSED:
        try:
            body = zlib.decompress(body)
        except zlib.error as error:
            raise ValueError(f"compressed body does not inflate: {error}") from None
    offset_id = _offset_id_from_host_bytes(store_host_bytes, commit_log_offset)
    keys_text = properties.get(Property.KEYS)
    message = MessageExt(
        topic=topic,
        body=body,
        tags=properties.get(Property.TAGS),
        keys=tuple(key for key in keys_text.split(protocol.KEY_SEPARATOR) if key) if keys_text else (),
        msg_id=properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or offset_id,
        offset_msg_id=offset_id,
        queue=MessageQueue(topic, broker_name, queue_id),
        queue_id=queue_id,
        queue_offset=queue_offset,
        commit_log_offset=commit_log_offset,
        reconsume_times=reconsume_times,
        properties=properties,
        born_timestamp=born_ts,
        store_timestamp=store_ts,
        born_host=_host_text(born_ip, born_port),
        store_host=_host_text(store_ip, store_port),
        sys_flag=sys_flag,
        flag=flag,
        prepared_transaction_offset=prepared_offset,
        store_size=total,
        broker_name=broker_name,
        body_crc=crc,
    )
    return message, total


def decode_stored_messages(body: bytes | bytearray | memoryview, broker_name: str) -> list[MessageExt]:
    """``MessageDecoder.decodes``: every message of a PULL_MESSAGE body, in order (ValueError if malformed)."""
    messages = []
    pos = 0
    end = len(body)
    while pos < end:
        message, size = decode_stored_message(body, pos, broker_name=broker_name)
        messages.append(message)
        pos += size
    return messages


# ---------------------------------------------------------------------------------------------------------------
# Batch body (SEND_BATCH_MESSAGE)


@attrs.frozen
class BatchEntry:
    """One message of a batch body: what ``MessageDecoder.decodeMessage`` reads (flag, body, properties)."""

    flag: int
    body: bytes
    properties: dict[str, str] = attrs.field(hash=False)


def encode_batch(messages: Sequence[Message] | Sequence[BatchEntry]) -> bytes:
    """``MessageDecoder.encodeMessages``: per message int32 totalSize, int32 magic 0, int32 bodyCRC 0, int32 flag,
    int32 bodyLen + body, int16 propertiesLen + properties. ValueError if a message's properties exceed 32767 bytes.
    """
    parts: list[bytes] = []
    for message in messages:
        body = _as_bytes(message.body)
        props = encode_properties(message.properties).encode("utf-8")
        if len(props) > protocol.MAX_PROPERTIES_LENGTH:
            raise ValueError(f"properties of a batch message exceed {protocol.MAX_PROPERTIES_LENGTH} bytes")
        parts.append(_BATCH_HEAD.pack(_BATCH_FIXED_BYTES + len(body) + len(props), 0, 0, message.flag, len(body)))
        parts.append(body)
        parts.append(_I16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


def decode_batch(body: bytes | bytearray | memoryview) -> list[BatchEntry]:
    """``MessageDecoder.decodeMessages`` of a batch body; ValueError when a length is inconsistent or truncated."""
    entries: list[BatchEntry] = []
    pos = 0
    end = len(body)
    while pos < end:
        if pos + _BATCH_FIXED_BYTES > end:
            raise ValueError(f"truncated batch message at {pos}")
        total, _, _, flag, body_len = _BATCH_HEAD.unpack_from(body, pos)
        cursor = pos + _BATCH_HEAD.size
        if body_len < 0 or cursor + body_len + 2 > end:
            raise ValueError(f"bad body length {body_len} in batch message at {pos}")
        payload = bytes(body[cursor:cursor + body_len])
        cursor += body_len
        props_len = _I16.unpack_from(body, cursor)[0]
        cursor += 2
        if props_len < 0 or cursor + props_len > end:
            raise ValueError(f"bad properties length {props_len} in batch message at {pos}")
        if total != _BATCH_FIXED_BYTES + body_len + props_len:
            raise ValueError(f"batch message size {total} does not match its fields at {pos}")
        try:
            props = decode_properties(bytes(body[cursor:cursor + props_len]).decode("utf-8"))
        except UnicodeDecodeError:
            raise ValueError(f"properties of batch message at {pos} are not UTF-8") from None
        entries.append(BatchEntry(flag, payload, props))
        pos = cursor + props_len
    return entries
