"""The layout of a stored message as the store reads it back (RocketMQ 4.9.8).

The struct formats and magic codes of commit-log records, and the helpers that read one record without decoding all
of it: ``_verify_record`` is ``CommitLog.checkMessageAndReturnSize`` with CRC (recovery trusts nothing after the
checkpoint without it), ``_dispatch_fields`` the fields of a ``DispatchRequest``, and ``_tags_code`` the consume-queue
tags code of ``checkMessageAndReturnSize``, which for a parked delayed message is the delivery time of
``ScheduleMessageService.computeDeliverTimestamp``. Encoding a record is ``message.pack_stored_message``; this module
only reads, so both the put path and recovery can share it without depending on each other.
"""

from __future__ import annotations

import struct
import zlib

from rocketspec.refimpl import message as codec
from rocketspec.spec import protocol
from rocketspec.spec.protocol import Property

_SIZE_MAGIC = struct.Struct(">iI")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
# The fixed part of a stored message with IPv4 hosts (see message.py), for the recovery walk.
_STORED_V4 = struct.Struct(">iIiiiqqiq4siq4siiqi")
_HOST_V6_BITS = protocol.SYSFLAG_BORNHOST_V6 | protocol.SYSFLAG_STOREHOST_V6
_BLANK_MIN = protocol.COMMITLOG_END_FILE_MIN_BLANK_LENGTH
_MAGIC = protocol.MESSAGE_MAGIC_CODE
_BLANK_MAGIC = protocol.BLANK_MAGIC_CODE
_NOT_DISPATCHED = (protocol.TRANSACTION_PREPARED_TYPE, protocol.TRANSACTION_ROLLBACK_TYPE)


def _tags_code(topic: str, properties: dict[str, str], store_timestamp: int, delays: tuple[int, ...]) -> int:
    """Consume-queue tags code (``CommitLog.checkMessageAndReturnSize``): ``String.hashCode`` of TAGS, or for a
    SCHEDULE_TOPIC_XXXX message with DELAY the delivery time ``ScheduleMessageService.computeDeliverTimestamp``
    (store time + the delay of the level, clamped to ``len(delays)``, the max level)."""
    if topic == protocol.SCHEDULE_TOPIC:
        text = properties.get(Property.DELAY_TIME_LEVEL)
        if text is not None:
            try:
                level = min(int(text), len(delays))
            except ValueError:
                level = 0
            if level > 0:
                return store_timestamp + delays[level - 1]
    return codec.tags_code(properties.get(Property.TAGS))


def _verify_record(data: bytes | bytearray, pos: int, size: int) -> bool:
    """``checkMessageAndReturnSize`` with CRC: the fields add up to ``size``, the body CRC matches, the topic and
    properties are text."""
    sys_flag = _I32.unpack_from(data, pos + 36)[0]
    if sys_flag & _HOST_V6_BITS:
        try:
            message, _ = codec.decode_stored_message(data, pos, decompress=False)
        except ValueError:
            return False
        return message.store_size == size and codec.body_crc(message.body) == message.body_crc
    fields = _STORED_V4.unpack_from(data, pos)
    crc, body_len = fields[2], fields[16]
    cursor = pos + _STORED_V4.size
    if body_len < 0 or cursor + body_len + 3 > pos + size:
        return False
    with memoryview(data) as view:
        if zlib.crc32(view[cursor:cursor + body_len]) & 0x7FFFFFFF != crc:
            return False
        cursor += body_len
        topic_len = view[cursor]
        cursor += 1 + topic_len
        if cursor + 2 > pos + size:
            return False
        props_len = _I16.unpack_from(view, cursor)[0]
        if props_len < 0 or cursor + 2 + props_len != pos + size:
            return False
        try:
            bytes(view[cursor - topic_len:cursor]).decode("utf-8")
            bytes(view[cursor + 2:cursor + 2 + props_len]).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _dispatch_fields(data: bytes | bytearray, pos: int, size: int) -> tuple[str, int, int, int, int, dict[str, str]]:
    """Topic, queue id, queue offset, sysFlag, store timestamp and properties of a stored message (a checked one)."""
    sys_flag = _I32.unpack_from(data, pos + 36)[0]
    if sys_flag & _HOST_V6_BITS:
        message, _ = codec.decode_stored_message(data, pos, decompress=False)
        return (message.topic, message.queue_id, message.queue_offset, message.sys_flag, message.store_timestamp,
                message.properties)
    fields = _STORED_V4.unpack_from(data, pos)
    queue_id, queue_offset, store_ts, body_len = fields[3], fields[5], fields[11], fields[16]
    cursor = pos + _STORED_V4.size + body_len
    topic_len = data[cursor]
    topic = bytes(data[cursor + 1:cursor + 1 + topic_len]).decode("utf-8")
    cursor += 1 + topic_len
    props_len = _I16.unpack_from(data, cursor)[0]
    props = codec.decode_properties(bytes(data[cursor + 2:cursor + 2 + props_len]).decode("utf-8"))
    return topic, queue_id, queue_offset, sys_flag, store_ts, props
