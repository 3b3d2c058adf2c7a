"""The broker's message store: commit log, consume queues, flushing, deletion and recovery (RocketMQ 4.9.8).

Modelled on ``DefaultMessageStore``, ``CommitLog``, ``ConsumeQueue``, ``MappedFileQueue`` and
``ScheduleMessageService.computeDeliverTimestamp``, deterministic and driven by the injected runtime (time is
``runtime.now_ms()``, flushing is a daemon ``call_every``).

- The commit log is a sequence of segments ("mapped files") of ``segment_bytes``, named by their start offset. A
  message never spans segments: when it does not fit (with the 8-byte end-of-file blank, ``END_FILE_MIN_BLANK_LENGTH``)
  the segment is closed with a BLANK record and a new one starts at the next multiple of ``segment_bytes``. A message
  larger than a segment gets a segment of its own, rounded up to whole multiples.
- A consume queue per (topic, queue id) holds 20-byte entries (commit-log offset int64, size int32, tags code int64)
  in files of ``cq_segment_entries`` entries. Dispatch (``CommitLogDispatcherBuildConsumeQueue``) is synchronous here:
  a put is visible to ``get_message`` when it returns. Prepared and rollback transaction messages are written but not
  dispatched, and keep queue offset 0 (``DefaultAppendMessageCallback.doAppend``).
- Durability (``CommitLog.handleDiskFlush``): every put is handed to the ``Disk`` at once (``append``: a mapped
  file's page cache, which a crash of the process does not lose) and flushed (fsync) by the mode: in
  ``flush="sync"`` before the put returns, or, on a disk whose flushes are costly (``FileDisk``), by one group commit
  scheduled right after the requests at hand, whose answers wait for it (``GroupCommitService``; the commit log only);
  otherwise every ``flush_interval_ms`` (``FlushRealTimeService``). Consume queues and a checkpoint (the commit-log
  offset every consume queue is written up to, ``StoreCheckpoint``) are written by the periodic flush and on
  ``close``. ``crash`` stops without flushing; on a ``MemoryDisk`` it is a power loss (the unflushed tail is gone).
  An ``abort`` file marks an open store: found at start, the last run crashed (``recovered_abnormally``).
- Recovery (``recoverAbnormally`` + ``recoverTopicQueueTable``): commit-log segments are walked and checked (magic,
  sizes; CRC after the checkpoint); a torn tail is cut and later segments dropped; consume queues are loaded, cut back
  to the recovered commit log, and rebuilt by re-dispatching everything after the checkpoint; their minimum offsets are
  corrected against the commit log's first offset.
- Deletion (``CleanCommitLogService`` then ``CleanConsumeQueueService``): expired commit-log segments are deleted
  (never the last one), then consume-queue files whose last entry lies below the new commit-log minimum are deleted
  (never a queue's last file) and each queue's minimum becomes its first entry at or above that minimum
  (``ConsumeQueue.correctMinOffset``, which looks at the first remaining file only).
- Delays: a put with DELAY > 0 is parked in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``, its level clamped to the max
  level, and its tags code is the store time plus the level's delay. The table is ``delay_level_millis`` (the broker's
  ``messageDelayLevel``, RocketMQ's 18 levels by default); its length is the max level.
"""

from __future__ import annotations

import bisect
import json
import os
import struct
import urllib.parse
import zlib
from collections.abc import Callable, Iterator, Sequence

import attrs

from rocketspec.refimpl import message as codec
from rocketspec.refimpl.disk import Disk, FileDisk, MemoryDisk
from rocketspec.refimpl.runtime import Runtime, Timer
from rocketspec.spec import protocol
from rocketspec.spec.protocol import GetMessageStatus, Property, PutMessageStatus

COMMITLOG_DIR = "commitlog/"
CONSUME_QUEUE_DIR = "consumequeue/"
CHECKPOINT_PATH = "store/checkpoint.json"
ABORT_PATH = "store/abort"  # present while a store is open: found at start, the last run did not close cleanly

_CQ_ENTRY = struct.Struct(">qiq")  # commit-log offset, size, tags code (ConsumeQueue.CQ_STORE_UNIT_SIZE = 20)
_CQ_UNIT = protocol.CONSUME_QUEUE_ENTRY_BYTES
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
_BLANK_CQ_ENTRY = _CQ_ENTRY.pack(0, 0x7FFFFFFF, 0)  # ConsumeQueue.fillPreBlank


# ---------------------------------------------------------------------------------------------------------------
# Values


@attrs.define
class MessageToStore:
    """What the broker asks the store to write (``MessageExtBrokerInner``); the tags code is derived from TAGS."""

    topic: str
    queue_id: int
    body: bytes
    flag: int = 0
    properties: dict[str, str] = attrs.field(factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "127.0.0.1:0"
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # The stored properties text where it is not ``properties`` encoded: a batch message's own text with the
    # batch's appended (CommitLog.MessageExtBatchEncoder), keys repeated as they come; a single message's
    # ``propertiesString`` where 4.9.8 writes something else than the map it decides with (WAIT left out on send, a
    # delivered delayed message written as it was parked). A delay conversion re-encodes the map.
    properties_text: str | None = None


@attrs.frozen
class PutResult:
    """``PutMessageResult`` + ``AppendMessageResult``. For a batch, ``commit_log_offset``/``queue_offset``/
    ``offset_msg_id`` describe the first message and ``queue_offsets``/``offset_msg_ids`` every message."""

    status: PutMessageStatus
    commit_log_offset: int = -1
    queue_offset: int = -1
    offset_msg_id: str = ""
    store_timestamp: int = 0
    size: int = 0
    queue_offsets: tuple[int, ...] = ()
    offset_msg_ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK


@attrs.frozen
class StoredRecord:
    """What a commit-log dispatcher sees of one written message (``DispatchRequest``): where it is, its topic as
    stored (SCHEDULE_TOPIC_XXXX for a parked delayed message), sysFlag, store time and properties."""

    topic: str
    queue_id: int
    commit_log_offset: int
    size: int
    sys_flag: int
    store_timestamp: int
    properties: dict[str, str]


@attrs.frozen
class GetMessageResult:
    """``GetMessageResult``: status, offsets and the stored bytes of the messages found (with their queue offsets)."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[bytes, ...] = ()
    queue_offsets: tuple[int, ...] = ()

    @property
    def message_count(self) -> int:
        return len(self.messages)

    @property
    def buffer_total_size(self) -> int:
        return sum(len(data) for data in self.messages)


# ---------------------------------------------------------------------------------------------------------------
# Internal structures


def _segment_path(base: int) -> str:
    return f"{COMMITLOG_DIR}{base:020d}"


def _topic_dir(topic: str) -> str:
    # Topic names become directory names: escape everything that is not a plain name character (and dots, so that
    # "." and ".." stay harmless).
    return urllib.parse.quote(topic, safe="").replace(".", "%2E")


class _Segment:
    """One commit-log file. ``data`` is a bytearray while it can grow or has unflushed bytes; once sealed and flushed
    it is the disk's view of the file (no second copy)."""

    __slots__ = ("base", "capacity", "count", "data", "flushed", "last_ts", "length", "path", "sealed", "written")

    def __init__(self, base: int, capacity: int) -> None:
        self.base = base
        self.capacity = capacity
        self.path = _segment_path(base)
        self.data: bytes | bytearray = bytearray()
        self.length = 0
        self.written = 0  # handed to the disk (the page cache)
        self.flushed = 0  # flushed by the disk (fsync)
        self.sealed = False
        self.last_ts = -1
        self.count = 0


class _ConsumeQueue:
    """``ConsumeQueue``: 20-byte entries in files of ``entries`` entries; file k holds queue offsets
    [k*entries, (k+1)*entries). ``min_logic`` is ``minLogicOffset`` as a queue offset."""

    __slots__ = ("dir", "entries", "file_bytes", "files", "first_file", "flushed", "max_offset", "min_logic",
                 "queue_id", "topic")

    def __init__(self, topic: str, queue_id: int, entries: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.entries = entries
        self.file_bytes = entries * _CQ_UNIT
        self.dir = f"{CONSUME_QUEUE_DIR}{_topic_dir(topic)}/{queue_id}/"
        self.files: list[bytes | bytearray] = []
        self.flushed: list[int] = []
        self.first_file = 0
        self.max_offset = 0
        self.min_logic = 0

    def file_path(self, number: int) -> str:
        return f"{self.dir}{number * self.file_bytes:020d}"

    def append(self, commit_log_offset: int, size: int, tags_code: int) -> None:
        files = self.files
        if not files or len(files[-1]) >= self.file_bytes:
            if not files:
                self.first_file = self.max_offset // self.entries
            files.append(bytearray())
            self.flushed.append(0)
        last = files[-1]
        last += _CQ_ENTRY.pack(commit_log_offset, size, tags_code)  # type: ignore[operator]
        self.max_offset += 1

    def pad_to(self, queue_offset: int) -> None:
        """Start an empty queue at ``queue_offset`` (blank entries before it in its file, as ``fillPreBlank``)."""
        self.first_file = queue_offset // self.entries
        blanks = queue_offset - self.first_file * self.entries
        self.files = [bytearray(_BLANK_CQ_ENTRY * blanks)]
        self.flushed = [0]
        self.max_offset = queue_offset
        self.min_logic = queue_offset

    def entry(self, queue_offset: int) -> tuple[int, int, int] | None:
        index = queue_offset // self.entries - self.first_file
        if index < 0 or index >= len(self.files) or queue_offset >= self.max_offset:
            return None
        return _CQ_ENTRY.unpack_from(self.files[index], (queue_offset % self.entries) * _CQ_UNIT)

    def first_at_or_above(self, file_index: int, commit_log_offset: int) -> int | None:
        """Index (within the file) of the first entry whose commit-log offset is ≥ the given one (entries are in
        commit-log order), or None."""
        data = self.files[file_index]
        lo, hi = 0, len(data) // _CQ_UNIT
        while lo < hi:
            mid = (lo + hi) // 2
            if _I64.unpack_from(data, mid * _CQ_UNIT)[0] < commit_log_offset:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(data) // _CQ_UNIT else None


def _too_long(text: str, limit: int) -> bool:
    """Java ``String.length() > limit`` (UTF-16 units; at most two per character, so short strings need no count)."""
    return len(text) * 2 > limit and codec.java_length(text) > limit


def _fail(status: PutMessageStatus) -> PutResult:
    return PutResult(status)


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


# ---------------------------------------------------------------------------------------------------------------
# The store


class MessageStore:
    """``DefaultMessageStore`` for one broker (see the module docstring for the rules).

    ``disk`` is where it persists (a ``MemoryDisk`` by default; ``data_dir`` is a shortcut for ``FileDisk``).
    """

    def __init__(
        self,
        runtime: Runtime,
        broker_name: str,
        store_addr: str,
        *,
        disk: Disk | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        flush: str = "async",
        segment_bytes: int = 1 << 20,
        cq_segment_entries: int = 30_000,
        file_reserved_ms: int = protocol.FILE_RESERVED_TIME_HOURS * 3600 * 1000,
        flush_interval_ms: int = protocol.FLUSH_INTERVAL_COMMITLOG_MS,
        delay_level_millis: tuple[int, ...] = protocol.DELAY_LEVEL_MILLIS,
    ) -> None:
        if flush not in ("sync", "async"):
            raise ValueError("flush must be 'sync' or 'async'")
        if segment_bytes < 4096:
            raise ValueError("segment_bytes must be at least 4096")
        if cq_segment_entries < 1:
            raise ValueError("cq_segment_entries must be positive")
        if not delay_level_millis or not all(isinstance(d, int) and d > 0 for d in delay_level_millis):
            raise ValueError("delay_level_millis must be a non-empty tuple of positive delays in ms")
        self.runtime = runtime
        self.broker_name = broker_name
        self.store_addr = store_addr
        self._store_host_bytes = codec.socket_address_bytes(store_addr)
        if disk is None:
            disk = FileDisk(data_dir) if data_dir is not None else MemoryDisk()
        self.disk: Disk = disk
        self.flush_mode = flush
        self.segment_bytes = segment_bytes
        self.cq_segment_entries = cq_segment_entries
        self.file_reserved_ms = file_reserved_ms
        self.flush_interval_ms = flush_interval_ms
        # ScheduleMessageService.delayLevelTable: level i's delay at index i - 1; its length is the max level.
        self.delay_level_millis = tuple(delay_level_millis)

        self._segments: list[_Segment] = []
        self._bases: list[int] = []
        self._unflushed: list[_Segment] = []
        self._cqs: dict[tuple[str, int], _ConsumeQueue] = {}
        self._topics: dict[str, dict[int, _ConsumeQueue]] = {}
        self._dirty_cqs: set[_ConsumeQueue] = set()
        self._listeners: list[Callable[[str, int, int, int], None]] = []
        self._delete_listeners: list[Callable[[str, int, int], None]] = []
        self._dispatchers: list[Callable[[StoredRecord], None]] = []
        self._checkpoint = -1  # commit-log offset the durable consume queues cover
        self._messages = 0
        self._closed = False
        self._last_cleaned_min = 0
        # Sync flush on a disk whose flushes are costly: GroupCommitService. Puts are written at once and fsync'd
        # together by one group commit on the loop, right after the requests at hand; their answers wait for it.
        self._group_commit = flush == "sync" and disk.batch_flushes
        self._commit_timer: Timer | None = None
        self._durable_waiters: list[Callable[[], None]] = []

        # DefaultMessageStore.load: an abort file left behind means the last run did not shut down (a crash).
        # Recovery is the same either way (the abnormal one: the commit log is checked and dispatched again from
        # the checkpoint, which covers what was written of the consume queues); this only says which it was.
        self.recovered_abnormally = disk.exists(ABORT_PATH)
        self._recover()
        disk.write_file(ABORT_PATH, b"")
        self._flush_interval_ms = flush_interval_ms
        self._flush_anchor = runtime.now_ms()
        self._timer: Timer | None = None
        self._arm_flush()

    # ---- writing ------------------------------------------------------------------------------------------------

    def put_message(self, msg: MessageToStore) -> PutResult:
        """``DefaultMessageStore.putMessage`` → ``CommitLog.putMessage``: delay conversion, encode, append, dispatch."""
        if self._closed:
            return _fail(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        topic = msg.topic
        props = msg.properties
        # MessageExtBrokerInner.propertiesString: what is written, where it differs from the map the store decides
        # with (SendMessageProcessor leaves WAIT out of it, messageTimeup encodes it before clearing DELAY); a delay
        # conversion re-encodes the map.
        props_text = codec.encode_properties(props) if msg.properties_text is None else msg.properties_text
        written = props if msg.properties_text is None else codec.decode_properties(props_text)
        # DefaultMessageStore.checkMessage: topic and properties lengths in Java chars.
        if not topic or _too_long(topic, protocol.TOPIC_MAX_LENGTH):
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        if _too_long(props_text, protocol.MAX_PROPERTIES_LENGTH):
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        queue_id = msg.queue_id
        sys_flag = msg.sys_flag
        tran_type = sys_flag & protocol.SYSFLAG_TRANSACTION_MASK
        if tran_type == protocol.TRANSACTION_NOT_TYPE or tran_type == protocol.TRANSACTION_COMMIT_TYPE:
            delay_text = props.get(Property.DELAY_TIME_LEVEL)
            if delay_text is not None:
                try:
                    level = int(delay_text)
                except ValueError:  # Message.getDelayTimeLevel's parseInt throws: the put fails
                    return _fail(PutMessageStatus.UNKNOWN_ERROR)
                if level > 0:
                    # CommitLog.asyncPutMessage: park the message in SCHEDULE_TOPIC_XXXX, queue level - 1.
                    level = min(level, len(self.delay_level_millis))
                    props = dict(props)
                    props[Property.DELAY_TIME_LEVEL] = str(level)
                    props[Property.REAL_TOPIC] = topic
                    props[Property.REAL_QUEUE_ID] = str(queue_id)
                    written = props
                    props_text = codec.encode_properties(props)
                    topic = protocol.SCHEDULE_TOPIC
                    queue_id = level - 1
        # CommitLog.MessageExtEncoder.encode checks.
        props_bytes = props_text.encode("utf-8")
        if len(props_bytes) > protocol.MAX_PROPERTIES_LENGTH:
            return _fail(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        body = msg.body
        if not isinstance(body, bytes):
            if not isinstance(body, (bytearray, memoryview)):
                return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
            body = bytes(body)
        if len(body) > protocol.MAX_MESSAGE_SIZE:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        topic_bytes = topic.encode("utf-8")
        if len(topic_bytes) > protocol.TOPIC_MAX_LENGTH:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        try:
            born_bytes = codec.socket_address_bytes(msg.born_host)
        except ValueError:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        size = codec.stored_size(len(body), len(topic_bytes), len(props_bytes),
                                 (0 if len(born_bytes) == 8 else protocol.SYSFLAG_BORNHOST_V6)
                                 | (0 if len(self._store_host_bytes) == 8 else protocol.SYSFLAG_STOREHOST_V6))

        now = self.runtime.now_ms()
        dispatch = tran_type not in _NOT_DISPATCHED
        key = (topic, queue_id)
        cq = self._cqs.get(key)
        queue_offset = (cq.max_offset if cq is not None else 0) if dispatch else 0
        segment = self._segment_for(size)
        phy = segment.base + segment.length
        data = codec.pack_stored_message(
            topic_bytes, queue_id, body, msg.flag, props_bytes, sys_flag, msg.born_timestamp, born_bytes, now,
            self._store_host_bytes, msg.reconsume_times, msg.prepared_transaction_offset, queue_offset, phy,
            codec.body_crc(body),
        )
        segment.data += data  # type: ignore[operator]
        segment.length += size
        segment.last_ts = now
        segment.count += 1
        self._messages += 1
        tags = 0
        if dispatch:
            if cq is None:
                cq = self._new_cq(topic, queue_id)
            tags = _tags_code(topic, written, now, self.delay_level_millis)
            cq.append(phy, size, tags)
            self._dirty_cqs.add(cq)
        self._write_commit_log()
        offset_id = (self._store_host_bytes + _I64.pack(phy)).hex().upper()
        for dispatcher in self._dispatchers:
            dispatcher(StoredRecord(topic, queue_id, phy, size, sys_flag, now, written))
        if dispatch:
            for listener in self._listeners:
                listener(topic, queue_id, queue_offset, tags)
        return PutResult(PutMessageStatus.PUT_OK, phy, queue_offset, offset_id, now, size, (queue_offset,),
                         (offset_id,))

    def put_messages(self, msgs: Sequence[MessageToStore]) -> PutResult:
        """``DefaultMessageStore.putMessages`` (a batch): one topic and queue, no transaction type, no delay
        conversion; written contiguously in one segment with consecutive queue offsets."""
        if self._closed:
            return _fail(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        if not msgs:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        first = msgs[0]
        topic = first.topic
        queue_id = first.queue_id
        if not topic or codec.java_length(topic) > protocol.TOPIC_MAX_LENGTH:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        topic_bytes = topic.encode("utf-8")
        if len(topic_bytes) > protocol.TOPIC_MAX_LENGTH:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
        encoded: list[tuple[MessageToStore, bytes, bytes, bytes, dict[str, str]]] = []
        batch_body_len = 0
        total = 0
        store_v6 = 0 if len(self._store_host_bytes) == 8 else protocol.SYSFLAG_STOREHOST_V6
        for msg in msgs:
            if msg.topic != topic or msg.queue_id != queue_id:
                return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
            if msg.sys_flag & protocol.SYSFLAG_TRANSACTION_MASK != protocol.TRANSACTION_NOT_TYPE:
                return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
            body = msg.body
            if not isinstance(body, bytes):
                if not isinstance(body, (bytearray, memoryview)):
                    return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
                body = bytes(body)
            text = msg.properties_text
            props_bytes = (codec.encode_properties(msg.properties) if text is None else text).encode("utf-8")
            if len(props_bytes) > protocol.MAX_PROPERTIES_LENGTH:
                return _fail(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
            try:
                born_bytes = codec.socket_address_bytes(msg.born_host)
            except ValueError:
                return _fail(PutMessageStatus.MESSAGE_ILLEGAL)
            batch_body_len += 22 + len(body) + len(props_bytes)
            total += codec.stored_size(len(body), len(topic_bytes), len(props_bytes),
                                       (0 if len(born_bytes) == 8 else protocol.SYSFLAG_BORNHOST_V6) | store_v6)
            encoded.append((msg, body, props_bytes, born_bytes, msg.properties))
        # DefaultMessageStore.checkMessages: the batch body as a whole against maxMessageSize.
        if batch_body_len > protocol.MAX_MESSAGE_SIZE:
            return _fail(PutMessageStatus.MESSAGE_ILLEGAL)

        now = self.runtime.now_ms()
        cq = self._cqs.get((topic, queue_id))
        first_queue_offset = cq.max_offset if cq is not None else 0
        segment = self._segment_for(total)
        first_phy = segment.base + segment.length
        if cq is None:
            cq = self._new_cq(topic, queue_id)
        phy = first_phy
        queue_offsets: list[int] = []
        offset_ids: list[str] = []
        arrivals: list[tuple[int, int]] = []
        for index, (msg, body, props_bytes, born_bytes, props) in enumerate(encoded):
            queue_offset = first_queue_offset + index
            data = codec.pack_stored_message(
                topic_bytes, queue_id, body, msg.flag, props_bytes, msg.sys_flag, msg.born_timestamp, born_bytes,
                now, self._store_host_bytes, msg.reconsume_times, 0, queue_offset, phy, codec.body_crc(body),
            )
            size = len(data)
            segment.data += data  # type: ignore[operator]
            tags = _tags_code(topic, props, now, self.delay_level_millis)
            cq.append(phy, size, tags)
            queue_offsets.append(queue_offset)
            offset_ids.append((self._store_host_bytes + _I64.pack(phy)).hex().upper())
            arrivals.append((queue_offset, tags))
            for dispatcher in self._dispatchers:
                dispatcher(StoredRecord(topic, queue_id, phy, size, msg.sys_flag, now, props))
            phy += size
        segment.length += total
        segment.last_ts = now
        segment.count += len(encoded)
        self._messages += len(encoded)
        self._dirty_cqs.add(cq)
        self._write_commit_log()
        for queue_offset, tags in arrivals:
            for listener in self._listeners:
                listener(topic, queue_id, queue_offset, tags)
        return PutResult(PutMessageStatus.PUT_OK, first_phy, first_queue_offset, offset_ids[0], now, total,
                         tuple(queue_offsets), tuple(offset_ids))

    def add_arrival_listener(self, fn: Callable[[str, int, int, int], None]) -> None:
        """``MessageArrivingListener``: ``fn(topic, queue_id, queue_offset, tags_code)`` after each dispatched
        message (``queue_offset`` is the new message's offset; the queue's max offset is now one more)."""
        self._listeners.append(fn)

    def add_delete_listener(self, fn: Callable[[str, int, int], None]) -> None:
        """``fn(topic, queue_id, min_offset)`` whenever deleting old data moves a consume queue's min offset up (not
        on recovery, which only restores what an earlier deletion already reported)."""
        self._delete_listeners.append(fn)

    def add_dispatcher(self, fn: Callable[[StoredRecord], None]) -> None:
        """``CommitLogDispatcher``: ``fn(record)`` for every message written from now on, dispatched to a consume
        queue or not (prepared and rolled-back transaction messages too); ``records`` replays what is stored."""
        self._dispatchers.append(fn)

    def records(self) -> Iterator[StoredRecord]:
        """Every message in the commit log, oldest first (what ``ReputMessageService`` would dispatch from the
        commit log's first offset)."""
        for segment in list(self._segments):
            data = segment.data
            pos = 0
            end = segment.length - (_BLANK_MIN if segment.sealed else 0)
            while pos < end:
                size = _I32.unpack_from(data, pos)[0]
                topic, queue_id, _, sys_flag, store_ts, props = _dispatch_fields(data, pos, size)
                yield StoredRecord(topic, queue_id, segment.base + pos, size, sys_flag, store_ts, props)
                pos += size

    def remove_arrival_listener(self, fn: Callable[[str, int, int, int], None]) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def _segment_for(self, size: int) -> _Segment:
        """The segment the next ``size`` bytes go to (``MappedFileQueue.getLastMappedFile`` + END_OF_FILE roll)."""
        segments = self._segments
        if segments:
            last = segments[-1]
            if not last.sealed and last.length + size + _BLANK_MIN <= last.capacity:
                return last
            if not last.sealed:
                # DefaultAppendMessageCallback: maxBlank total size + BLANK_MAGIC_CODE, the rest of the file unused.
                last.data += _SIZE_MAGIC.pack(last.capacity - last.length, _BLANK_MAGIC)  # type: ignore[operator]
                last.length += _BLANK_MIN
                last.sealed = True
                if last not in self._unflushed:
                    self._unflushed.append(last)
            base = last.base + last.capacity
        else:
            base = 0
        capacity = self.segment_bytes
        if size + _BLANK_MIN > capacity:
            capacity = -(-(size + _BLANK_MIN) // self.segment_bytes) * self.segment_bytes
        segment = _Segment(base, capacity)
        segments.append(segment)
        self._bases.append(base)
        self._unflushed.append(segment)
        return segment

    def _new_cq(self, topic: str, queue_id: int) -> _ConsumeQueue:
        cq = _ConsumeQueue(topic, queue_id, self.cq_segment_entries)
        self._cqs[(topic, queue_id)] = cq
        self._topics.setdefault(topic, {})[queue_id] = cq
        return cq

    # ---- reading ------------------------------------------------------------------------------------------------

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msgs: int,
        tags_filter: Callable[[int], bool] | None = None,
        commit_log_filter: Callable[[bytes], bool] | None = None,
    ) -> GetMessageResult:
        """``DefaultMessageStore.getMessage`` of 4.9.8 on a master (REFERENCE §C).

        ``tags_filter(tags_code)`` is the consume-queue match of the subscription (``isMatchedByConsumeQueue``),
        ``commit_log_filter(stored message)`` the match on the message read (``isMatchedByCommitLog``: SQL92).
        Messages are read from memory, so the in-memory batch limits apply (256 KiB, 32 messages) besides
        ``max_msgs``; at most max(16000, max_msgs*20) bytes of consume queue (entries × 20) are scanned, never past
        the end of the consume-queue file holding ``offset``.

        A queue that never got a message is an empty queue, whether or not its topic has others: Java's
        ``findConsumeQueue`` creates it on demand, so 4.9.8 never answers NO_MATCHED_LOGIC_QUEUE (PULL-1, PULL-2).
        """
        cq = self._cqs.get((topic, queue_id))
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        min_offset = cq.min_logic
        max_offset = cq.max_offset
        if max_offset == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
        if offset < min_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
        if offset == max_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, min_offset, max_offset)
        if offset > max_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset, min_offset, max_offset)
        entries = cq.entries
        file_index = offset // entries - cq.first_file
        if file_index < 0 or file_index >= len(cq.files):
            # ConsumeQueue.getIndexBuffer found no file: skip to the next file (rollNextFile).
            return GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL, offset + entries - offset % entries,
                                    min_offset, max_offset)
        cq_file = cq.files[file_index]
        start = (offset % entries) * _CQ_UNIT
        available = (len(cq_file) - start) // _CQ_UNIT
        # for (i = 0; i < bufferSize && i < maxFilterMessageCount; i += CQ_STORE_UNIT_SIZE)
        limit = min(available, -(-max(protocol.MAX_FILTER_SCAN_BYTES, max_msgs * _CQ_UNIT) // _CQ_UNIT))

        status = GetMessageStatus.NO_MATCHED_MESSAGE
        messages: list[bytes] = []
        queue_offsets: list[int] = []
        total = 0
        next_phy_file_start = -1
        max_bytes = protocol.MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY
        max_count = protocol.MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY
        unpack = _CQ_ENTRY.unpack_from
        read = self._read
        i = 0
        while i < limit:
            phy, size, tags = unpack(cq_file, start + i * _CQ_UNIT)
            if next_phy_file_start != -1 and phy < next_phy_file_start:
                i += 1
                continue
            count = len(messages)
            if total and count and (max_msgs <= count or total + size > max_bytes or count > max_count - 1):
                break  # isTheBatchFull
            if tags_filter is not None and not tags_filter(tags):
                if total == 0:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                i += 1
                continue
            data = read(phy, size)
            if data is None:
                if total == 0:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                # CommitLog.rollNextFile: skip the rest of the missing commit-log file.
                next_phy_file_start = phy + self.segment_bytes - phy % self.segment_bytes
                i += 1
                continue
            if commit_log_filter is not None and not commit_log_filter(data):
                if total == 0:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                i += 1
                continue
            messages.append(data)
            queue_offsets.append(offset + i)
            total += size
            status = GetMessageStatus.FOUND
            next_phy_file_start = -1
            i += 1
        return GetMessageResult(status, offset + i, min_offset, max_offset, tuple(messages), tuple(queue_offsets))

    def _segment_at(self, phy: int) -> _Segment | None:
        index = bisect.bisect_right(self._bases, phy) - 1
        if index < 0:
            return None
        segment = self._segments[index]
        return segment if phy < segment.base + segment.length else None

    def _read(self, phy: int, size: int) -> bytes | None:
        """``CommitLog.getMessage(offset, size)``: None when the bytes are not (or no longer) in the commit log."""
        segment = self._segment_at(phy)
        if segment is None or size <= 0:
            return None
        pos = phy - segment.base
        if pos + size > segment.length:
            return None
        data = segment.data
        if isinstance(data, bytes):
            return data[pos:pos + size]
        return bytes(memoryview(data)[pos:pos + size])

    def look_message_bytes(self, commit_log_offset: int) -> bytes | None:
        """``selectOneMessageByOffset``: the stored bytes of the message at this offset, or None."""
        segment = self._segment_at(commit_log_offset)
        if segment is None:
            return None
        pos = commit_log_offset - segment.base
        if pos + 8 > segment.length:
            return None
        size, magic = _SIZE_MAGIC.unpack_from(segment.data, pos)
        if magic != _MAGIC or size < codec.STORED_FIXED_BYTES:
            return None
        return self._read(commit_log_offset, size)

    def look_message(self, commit_log_offset: int) -> codec.MessageExt | None:
        """``lookMessageByOffset``: the message decoded with this broker's name, body as stored (not inflated)."""
        data = self.look_message_bytes(commit_log_offset)
        if data is None:
            return None
        try:
            message, _ = codec.decode_stored_message(data, 0, broker_name=self.broker_name, decompress=False)
        except ValueError:
            return None
        return message

    def queue_entries(self, topic: str, queue_id: int, offset: int, n: int) -> list[tuple[int, int, int, int]]:
        """Consume-queue entries (queue_offset, commit_log_offset, size, tags_code) from ``offset`` (at least the
        queue's min offset), at most ``n``, skipping entries whose consume-queue file is gone."""
        cq = self._cqs.get((topic, queue_id))
        if cq is None or n <= 0:
            return []
        result = []
        queue_offset = max(offset, cq.min_logic, cq.first_file * cq.entries)
        end = min(cq.max_offset, queue_offset + n)
        while queue_offset < end:
            entry = cq.entry(queue_offset)
            if entry is not None:
                result.append((queue_offset, entry[0], entry[1], entry[2]))
            queue_offset += 1
        return result

    def _store_timestamp(self, phy: int, size: int) -> int:
        """``CommitLog.pickupStoreTimestamp``: -1 when the message is gone, or not whole within the written data
        (``getMessage(offset, size)`` selects nothing past the read position)."""
        segment = self._segment_at(phy)
        if segment is None:
            return -1
        pos = phy - segment.base
        if pos + size > segment.length or size < codec.STORED_FIXED_BYTES:
            return -1
        sys_flag = _I32.unpack_from(segment.data, pos + 36)[0]
        ts_pos = codec.STORE_TIMESTAMP_POS + (12 if sys_flag & protocol.SYSFLAG_BORNHOST_V6 else 0)
        return _I64.unpack_from(segment.data, pos + ts_pos)[0]

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """``ConsumeQueue.getOffsetInQueueByTime`` (4.9.8): a binary search over the queue's entries by store time
        that answers an entry stored exactly at ``timestamp_ms`` if it meets one, else the entry nearest in time among
        the last one before and the first one after (the earlier on a tie); the first entry if all are later, the
        last entry (not the max offset) if all are earlier. 0 for an unknown or empty queue, and 0 when a message
        cannot be read. Entries whose message was deleted count as earlier, as in Java.

        4.9.8 searches the one consume-queue file whose time covers ``timestamp_ms`` (300,000 entries per file); this
        queue is searched whole, which is the same answer while a queue holds one file's worth of entries.
        """
        cq = self._cqs.get((topic, queue_id))
        if cq is None:
            return 0
        low = max(cq.min_logic, cq.first_file * cq.entries)
        high = cq.max_offset - 1
        if high < low:
            return 0
        left = right = -1
        left_time = right_time = -1
        min_phy = self.commit_log_min_offset()
        while high >= low:
            mid = (low + high) // 2
            entry = cq.entry(mid)
            if entry is None or entry[0] < min_phy:
                low, left = mid + 1, mid
                continue
            stored = self._store_timestamp(entry[0], entry[1])
            if stored < 0:
                return 0
            if stored == timestamp_ms:
                return mid
            if stored > timestamp_ms:
                high, right, right_time = mid - 1, mid, stored
            else:
                low, left, left_time = mid + 1, mid, stored
        if left_time == -1:
            return right
        if right_time == -1:
            return left
        return right if abs(timestamp_ms - left_time) > abs(timestamp_ms - right_time) else left

    def min_offset(self, topic: str, queue_id: int) -> int:
        """``getMinOffsetInQueue`` (0 for a queue that does not exist: Java creates it empty)."""
        cq = self._cqs.get((topic, queue_id))
        return 0 if cq is None else cq.min_logic

    def max_offset(self, topic: str, queue_id: int) -> int:
        """``getMaxOffsetInQueue``: one past the last entry (0 for a queue that does not exist)."""
        cq = self._cqs.get((topic, queue_id))
        return 0 if cq is None else cq.max_offset

    def message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """``getMessageStoreTimeStamp``: store time of the message at this queue offset, -1 when there is none."""
        cq = self._cqs.get((topic, queue_id))
        if cq is None or offset < cq.min_logic:
            return -1
        entry = cq.entry(offset)
        if entry is None or entry[1] == 0x7FFFFFFF:  # absent, or a blank entry padding a hole
            return -1
        return self._store_timestamp(entry[0], entry[1])

    def earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """``getEarliestMessageTime``: store time of the queue's first message (of the commit log's first message
        without a topic); -1 when there is none."""
        if topic is not None:
            cq = self._cqs.get((topic, queue_id))
            return -1 if cq is None else self.message_store_timestamp(topic, queue_id, cq.min_logic)
        if not self._segments or self._segments[0].length < codec.STORED_FIXED_BYTES:
            return -1
        first = self._segments[0]
        return self._store_timestamp(first.base, _I32.unpack_from(first.data, 0)[0])

    def clean_unused_topics(self, keep: set[str]) -> list[str]:
        """``cleanUnusedTopic``: drop the consume queues (and their files) of every topic not in ``keep`` except
        SCHEDULE_TOPIC_XXXX and the transaction op topic; the commit log keeps the messages, and a topic created
        again starts at queue offset 0. Returns the topics dropped."""
        dropped = []
        for topic in list(self._topics):
            if topic in keep or topic in (protocol.SCHEDULE_TOPIC, protocol.TRANS_OP_HALF_TOPIC):
                continue
            for queue_id, cq in self._topics.pop(topic).items():
                self._cqs.pop((topic, queue_id), None)
                self._dirty_cqs.discard(cq)
                for path in self.disk.list_files(cq.dir):
                    self.disk.delete(path)
            dropped.append(topic)
        return dropped

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """``cleanExpiredConsumerQueue`` (mqadmin cleanExpiredCQ): destroy, files and all, every consume queue except
        SCHEDULE_TOPIC_XXXX's whose last entry ends below the commit log's min offset (its messages are all gone);
        its next queue offset goes with it (``removeQueueFromTopicQueueTable``), so the queue starts again at 0. A
        queue without entries stays; a topic left without queues goes. Returns the (topic, queue id) destroyed."""
        phy_min = self.commit_log_min_offset()
        destroyed = []
        for topic in list(self._topics):
            if topic == protocol.SCHEDULE_TOPIC:
                continue
            queues = self._topics[topic]
            for queue_id, cq in list(queues.items()):
                # ConsumeQueue.getLastOffset: the last written entry's offset + size, -1 when there is none.
                last = cq.entry(cq.max_offset - 1) if cq.max_offset > 0 else None
                if last is None or last[0] < 0 or last[1] <= 0 or last[0] + last[1] >= phy_min:
                    continue
                del queues[queue_id]
                self._cqs.pop((topic, queue_id), None)
                self._dirty_cqs.discard(cq)
                for path in self.disk.list_files(cq.dir):
                    self.disk.delete(path)
                destroyed.append((topic, queue_id))
            if not queues:
                del self._topics[topic]
        return destroyed

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(self._topics.get(topic, {}))

    def topics(self) -> list[str]:
        return sorted(self._topics)

    def commit_log_min_offset(self) -> int:
        """``CommitLog.getMinOffset``: start of the first segment (0 when empty)."""
        return self._segments[0].base if self._segments else 0

    def commit_log_max_offset(self) -> int:
        """``CommitLog.getMaxOffset``: end of the written data."""
        if not self._segments:
            return 0
        last = self._segments[-1]
        return last.base + (last.capacity if last.sealed else last.length)

    def stats(self) -> dict[str, int]:
        return {
            "messages": self._messages,
            "bytes": sum(segment.length for segment in self._segments),
            "segments": len(self._segments),
            "queues": len(self._cqs),
            "commit_log_min_offset": self.commit_log_min_offset(),
            "commit_log_max_offset": self.commit_log_max_offset(),
        }

    # ---- deletion -----------------------------------------------------------------------------------------------

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """``CleanCommitLogService.deleteExpiredFiles``: delete leading segments whose last message is older than
        ``file_reserved_ms`` (stopping at the first one that is not; never the last segment); then clean the
        consume queues. Returns the number of segments deleted."""
        now = self.runtime.now_ms() if now_ms is None else now_ms
        deleted = 0
        while len(self._segments) > 1 and now >= self._segments[0].last_ts + self.file_reserved_ms:
            if not deleted:
                # The segments that stay must be on the disk before older ones go, and so must the consume-queue
                # entries (and checkpoint) of the ones that go: recovery can no longer rebuild those from the commit
                # log, and a queue whose max offset fell back would hand its offsets out again.
                self.flush()
            self._drop_first_segment()
            deleted += 1
        if deleted:
            self._clean_consume_queues()
        return deleted

    def delete_oldest_segments(self, count: int) -> int:
        """Delete up to ``count`` leading segments regardless of age (never the last one), then clean the consume
        queues (an operator deleting old data; ``cleanImmediately``)."""
        deleted = 0
        while deleted < count and len(self._segments) > 1:
            if not deleted:
                # The segments that stay must be on the disk before older ones go, and so must the consume-queue
                # entries (and checkpoint) of the ones that go: recovery can no longer rebuild those from the commit
                # log, and a queue whose max offset fell back would hand its offsets out again.
                self.flush()
            self._drop_first_segment()
            deleted += 1
        if deleted:
            self._clean_consume_queues()
        return deleted

    delete_old_segments = delete_oldest_segments  # the name docs/refimpl.md uses

    def _drop_first_segment(self) -> None:
        segment = self._segments.pop(0)
        self._bases.pop(0)
        if segment in self._unflushed:
            self._unflushed.remove(segment)
        self._messages -= segment.count
        self.disk.delete(segment.path)

    def _clean_consume_queues(self) -> None:
        """``CleanConsumeQueueService.deleteExpiredFiles``: ``ConsumeQueue.deleteExpiredFile`` for every queue."""
        phy_min = self.commit_log_min_offset()
        if phy_min <= self._last_cleaned_min:
            return
        self._last_cleaned_min = phy_min
        for cq in self._cqs.values():
            before = cq.min_logic
            self._clean_consume_queue(cq, phy_min)
            if cq.min_logic > before:
                for listener in self._delete_listeners:
                    listener(cq.topic, cq.queue_id, cq.min_logic)

    def _clean_consume_queue(self, cq: _ConsumeQueue, phy_min: int) -> None:
        # MappedFileQueue.deleteExpiredFileByOffset: full files (never the last) whose last entry is below phy_min.
        while len(cq.files) > 1:
            data = cq.files[0]
            if len(data) < cq.file_bytes:
                break
            last_phy = _I64.unpack_from(data, cq.file_bytes - _CQ_UNIT)[0]
            if last_phy >= phy_min:
                break
            self.disk.delete(cq.file_path(cq.first_file))
            cq.files.pop(0)
            cq.flushed.pop(0)
            cq.first_file += 1
        # ConsumeQueue.correctMinOffset: the first entry of the first file at or above phy_min, if there is one.
        if cq.files:
            index = cq.first_at_or_above(0, phy_min)
            if index is not None:
                cq.min_logic = cq.first_file * cq.entries + index

    # ---- flushing, closing --------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write everything to the disk: commit log, consume queues, then the checkpoint."""
        if self._closed:
            return
        self._flush_commit_log()
        self._flush_consume_queues()

    def _periodic_flush(self) -> None:
        """``FlushRealTimeService`` + ``FlushConsumeQueueService``. In async mode the loop only writes what is due
        and the disk fsyncs it off the loop (``flush_soon``), then writes the checkpoint: the loop never waits for the
        device. Sync mode flushes here too (one batch for the consume queues; the commit log is flushed already)."""
        if self._closed:
            return
        if self.flush_mode != "async":
            self.flush()
            return
        paths: list[str] = []
        self._flush_commit_log(paths)
        self._flush_consume_queues(paths)

    def _arm_flush(self) -> None:
        """The periodic flush's next run, on its grid (every ``flush_interval_ms`` from the store's start). A run
        with nothing to flush changes nothing, so none is scheduled until a put makes one due: an idle broker costs
        a simulation no steps, however long it waits."""
        if self._timer is None and not self._closed:
            elapsed = self.runtime.now_ms() - self._flush_anchor
            delay = self._flush_interval_ms - elapsed % self._flush_interval_ms
            self._timer = self.runtime.call_later(delay, self._flush_tick, daemon=True)

    def _flush_tick(self) -> None:
        self._timer = None
        self._periodic_flush()
        if self._flush_due():
            self._arm_flush()

    def _flush_due(self) -> bool:
        """Whether the periodic flush would do anything now."""
        return bool(self._dirty_cqs or self._durable_waiters or self._checkpoint != self.commit_log_max_offset()
                    or any(segment.flushed < segment.length for segment in self._unflushed))

    def _write_commit_log(self) -> None:
        """After a put: hand the new bytes to the disk at once (a mapped file's page cache, which outlives the
        process), then flush as the mode says (``CommitLog.handleDiskFlush``): sync flushes now, or by a group
        commit scheduled right after the requests at hand; async leaves it to the periodic flush
        (``FlushRealTimeService``), armed here."""
        if self._timer is None:
            self._arm_flush()
        disk = self.disk
        for segment in self._unflushed:
            if segment.written < segment.length:
                disk.append(segment.path, bytes(memoryview(segment.data)[segment.written:segment.length]))
                segment.written = segment.length
        if self.flush_mode != "sync":
            return
        if not self._group_commit:
            self._flush_commit_log()
        elif self._commit_timer is None:
            self._commit_timer = self.runtime.call_soon(self._run_group_commit)

    @property
    def awaiting_flush(self) -> bool:
        """A sync-mode put is written but not flushed yet: its answer waits for the group commit (``when_durable``)."""
        return self._commit_timer is not None

    def when_durable(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once what was put so far is flushed (``GroupCommitRequest`` completed): at once unless a group
        commit is pending. A crash drops the waiters (their sends are never answered)."""
        if self._commit_timer is None:
            fn()
        else:
            self._durable_waiters.append(fn)

    def _run_group_commit(self) -> None:
        self._commit_timer = None
        if not self._closed:
            self._flush_commit_log()

    def _flush_commit_log(self, later: list[str] | None = None) -> None:
        """Flush the commit log now, or (``later``) collect the files to flush off the loop."""
        unflushed = self._unflushed
        disk = self.disk
        for segment in unflushed:
            if segment.written < segment.length:
                disk.append(segment.path, bytes(memoryview(segment.data)[segment.written:segment.length]))
                segment.written = segment.length
            if segment.flushed < segment.written:
                if later is None:
                    disk.flush(segment.path)
                else:
                    later.append(segment.path)
                segment.flushed = segment.written
            if segment.sealed:
                segment.data = disk.view(segment.path)  # read the sealed file from the disk: no second copy
        if unflushed:
            last = self._segments[-1] if self._segments else None
            self._unflushed = [last] if last is not None and not last.sealed else []
        if self._commit_timer is not None:
            self._commit_timer.cancel()
            self._commit_timer = None
        waiters, self._durable_waiters = self._durable_waiters, []
        for fn in waiters:
            fn()

    def _flush_consume_queues(self, later: list[str] | None = None) -> None:
        """Write and flush the consume queues, then the checkpoint; with ``later``, the disk flushes ``later`` and
        these off the loop, then writes the checkpoint (never before what it covers is flushed)."""
        if self._dirty_cqs:
            disk = self.disk
            for cq in self._dirty_cqs:
                files = cq.files
                for index, data in enumerate(files):
                    done = cq.flushed[index]
                    if done < len(data):
                        path = cq.file_path(cq.first_file + index)
                        disk.append(path, bytes(memoryview(data)[done:]))
                        if later is None:
                            disk.flush(path)
                        else:
                            later.append(path)
                        cq.flushed[index] = len(data)
                    if index < len(files) - 1 and isinstance(data, bytearray):
                        files[index] = disk.view(cq.file_path(cq.first_file + index))
            self._dirty_cqs = set()
        dispatched = self.commit_log_max_offset()
        checkpoint = None
        if dispatched != self._checkpoint:
            checkpoint = (CHECKPOINT_PATH, json.dumps({"dispatched": dispatched}).encode())
            self._checkpoint = dispatched
        if later is not None:
            if later or checkpoint is not None:
                self.disk.flush_soon(later, checkpoint)
        elif checkpoint is not None:
            self.disk.write_file(*checkpoint)

    def close(self) -> None:
        """Flush everything and stop (``shutdown``); later puts answer SERVICE_NOT_AVAILABLE."""
        if self._closed:
            return
        self.flush()
        self.disk.delete(ABORT_PATH)
        self._stop()

    def crash(self) -> None:
        """Stop without flushing. On a ``MemoryDisk`` this is a power loss (``lose_unflushed``: whatever was not
        flushed is lost); on a ``FileDisk`` a process crash (kill -9: what was written stays with the OS). Reopen a
        store on the same disk to recover."""
        self._durable_waiters = []
        self._stop()
        self.disk.lose_unflushed()

    def _stop(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._commit_timer is not None:
            self._commit_timer.cancel()
            self._commit_timer = None
        self.disk.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- recovery -----------------------------------------------------------------------------------------------

    def _recover(self) -> None:
        checkpoint = self._read_checkpoint()
        self._load_consume_queues()
        if not self._cqs:
            checkpoint = -1  # nothing to trust: rebuild every queue from the commit log
        self._recover_commit_log(max(checkpoint, 0))
        phy_max = self.commit_log_max_offset()
        for cq in self._cqs.values():
            self._truncate_dirty_entries(cq, phy_max)
        self._redispatch(max(checkpoint, 0))
        # recoverTopicQueueTable: correct every queue's min offset against the commit log's first offset.
        phy_min = self.commit_log_min_offset()
        for cq in self._cqs.values():
            self._clean_consume_queue(cq, phy_min)
        self._last_cleaned_min = phy_min
        self._checkpoint = checkpoint if checkpoint <= phy_max else -1

    def _read_checkpoint(self) -> int:
        raw = self.disk.read_file(CHECKPOINT_PATH)
        if raw is None:
            return -1
        try:
            value = json.loads(raw.decode("utf-8"))["dispatched"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return -1
        return value if isinstance(value, int) and value >= 0 else -1

    def _load_consume_queues(self) -> None:
        disk = self.disk
        file_bytes = self.cq_segment_entries * _CQ_UNIT
        grouped: dict[tuple[str, int], list[tuple[int, str]]] = {}
        layout_ok = True
        for path in disk.list_files(CONSUME_QUEUE_DIR):
            parts = path[len(CONSUME_QUEUE_DIR):].split("/")
            try:
                if len(parts) != 3:
                    raise ValueError(path)
                topic = urllib.parse.unquote(parts[0])
                queue_id = int(parts[1])
                start = int(parts[2])
            except ValueError:
                continue
            if start % file_bytes:
                layout_ok = False  # written with another file size: rebuild from the commit log
            grouped.setdefault((topic, queue_id), []).append((start, path))
        if not layout_ok:
            for files in grouped.values():
                for _, path in files:
                    disk.delete(path)
            return
        for (topic, queue_id), files in grouped.items():
            files.sort()
            cq = self._new_cq(topic, queue_id)
            cq.first_file = files[0][0] // file_bytes
            keep = True
            for position, (start, path) in enumerate(files):
                number = start // file_bytes
                if not keep or number != cq.first_file + len(cq.files):
                    keep = False  # a gap or a torn file before: later files are not trusted
                    disk.delete(path)
                    continue
                data = disk.view(path)
                usable = min(len(data), file_bytes) // _CQ_UNIT * _CQ_UNIT
                if usable != len(data):
                    disk.truncate(path, usable)
                    data = disk.view(path)
                is_last = position == len(files) - 1
                if usable < file_bytes and not is_last:
                    keep = False
                if usable < file_bytes or is_last:
                    data = bytearray(data)  # the file that grows: our own copy
                cq.files.append(data)
                cq.flushed.append(len(data))
            if cq.files and len(cq.files[-1]) == 0 and len(cq.files) > 1:
                cq.files.pop()
                cq.flushed.pop()
            cq.max_offset = (cq.first_file + len(cq.files) - 1) * cq.entries + len(cq.files[-1]) // _CQ_UNIT

    def _truncate_dirty_entries(self, cq: _ConsumeQueue, phy_max: int) -> None:
        """``ConsumeQueue.truncateDirtyLogicFiles``: drop entries pointing at or past the commit log's end."""
        while cq.files:
            data = cq.files[-1]
            count = len(data) // _CQ_UNIT
            keep = count
            while keep > 0 and _I64.unpack_from(data, (keep - 1) * _CQ_UNIT)[0] >= phy_max:
                keep -= 1
            if keep == count:
                break
            path = cq.file_path(cq.first_file + len(cq.files) - 1)
            if keep == 0 and len(cq.files) > 1:
                self.disk.delete(path)
                cq.files.pop()
                cq.flushed.pop()
                continue
            if not isinstance(data, bytearray):
                data = bytearray(data)
                cq.files[-1] = data
            del data[keep * _CQ_UNIT:]
            self.disk.truncate(path, keep * _CQ_UNIT)
            cq.flushed[-1] = min(cq.flushed[-1], len(data))
            break
        last = len(cq.files[-1]) // _CQ_UNIT if cq.files else 0
        cq.max_offset = (cq.first_file + len(cq.files) - 1) * cq.entries + last if cq.files else 0

    def _recover_commit_log(self, verify_from: int) -> None:
        """Walk every segment: sizes and magic everywhere, full checks (CRC, field sizes) from ``verify_from``.
        Cut the first bad record and drop every later segment (``truncateDirtyFiles``)."""
        disk = self.disk
        bases = []
        for path in disk.list_files(COMMITLOG_DIR):
            name = path[len(COMMITLOG_DIR):]
            if name.isdigit():
                bases.append(int(name))
        bases.sort()
        broken = False
        for index, base in enumerate(bases):
            path = _segment_path(base)
            if broken or (self._segments and base != self._segments[-1].base + self._segments[-1].capacity):
                broken = True  # after a cut, or not where the previous segment ends: not trusted
                disk.delete(path)
                continue
            data = disk.view(path)
            segment = _Segment(base, 0)
            pos = 0
            last_pos = -1
            end = len(data)
            while pos + 8 <= end:
                size, magic = _SIZE_MAGIC.unpack_from(data, pos)
                if magic == _BLANK_MAGIC:
                    if size >= _BLANK_MIN:
                        segment.sealed = True
                        segment.capacity = pos + size
                        pos += _BLANK_MIN
                    break
                if magic != _MAGIC or size < codec.STORED_FIXED_BYTES or pos + size > end:
                    break
                if base + pos >= verify_from and not _verify_record(data, pos, size):
                    break
                last_pos = pos
                segment.count += 1
                pos += size
            segment.length = pos
            segment.written = pos
            segment.flushed = pos
            if last_pos >= 0:
                segment.last_ts = _I64.unpack_from(
                    data, last_pos + codec.STORE_TIMESTAMP_POS
                    + (12 if _I32.unpack_from(data, last_pos + 36)[0] & protocol.SYSFLAG_BORNHOST_V6 else 0))[0]
            is_last = index == len(bases) - 1
            if not segment.sealed:
                if pos != end:
                    disk.truncate(path, pos)  # a torn or corrupt tail
                if not is_last:
                    broken = True
                segment.capacity = max(self.segment_bytes, -(-(pos + _BLANK_MIN) // self.segment_bytes)
                                       * self.segment_bytes)
                segment.data = bytearray(disk.view(path))  # the active segment grows: our own copy
            else:
                if pos != end:
                    disk.truncate(path, pos)
                segment.data = disk.view(path)
            if segment.length == 0 and not segment.sealed:
                disk.delete(path)  # an empty file: the next put creates it again
                continue
            self._segments.append(segment)
            self._bases.append(base)
            self._messages += segment.count
        if self._segments and not self._segments[-1].sealed:
            self._unflushed = [self._segments[-1]]

    def _redispatch(self, start: int) -> None:
        """``ReputMessageService`` from the checkpoint: dispatch every message at or after ``start`` whose queue
        offset the consume queue does not have yet."""
        start = max(start, self.commit_log_min_offset())
        index = bisect.bisect_right(self._bases, start) - 1
        if index < 0:
            index = 0
        for segment in self._segments[index:]:
            data = segment.data
            pos = max(0, start - segment.base)
            end = segment.length - (_BLANK_MIN if segment.sealed else 0)
            while pos < end:
                size = _I32.unpack_from(data, pos)[0]
                topic, queue_id, queue_offset, sys_flag, store_ts, props = _dispatch_fields(data, pos, size)
                if sys_flag & protocol.SYSFLAG_TRANSACTION_MASK not in _NOT_DISPATCHED:
                    cq = self._cqs.get((topic, queue_id))
                    if cq is None:
                        cq = self._new_cq(topic, queue_id)
                    if queue_offset >= cq.max_offset:
                        if queue_offset > cq.max_offset:
                            if cq.max_offset == 0 and not cq.files:
                                cq.pad_to(queue_offset)
                            else:
                                while cq.max_offset < queue_offset:  # a hole: blank entries keep offsets aligned
                                    cq.append(0, 0x7FFFFFFF, 0)
                        cq.append(segment.base + pos, size, _tags_code(topic, props, store_ts, self.delay_level_millis))
                        self._dirty_cqs.add(cq)
                pos += size


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


__all__ = [
    "ABORT_PATH",
    "CHECKPOINT_PATH",
    "Disk",
    "FileDisk",
    "GetMessageResult",
    "MemoryDisk",
    "MessageStore",
    "MessageToStore",
    "PutResult",
    "StoredRecord",
]
