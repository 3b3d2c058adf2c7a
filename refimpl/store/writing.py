"""The put path of the message store: checks, delay conversion, encoding, appending and dispatch (RocketMQ 4.9.8).

Modelled on ``DefaultMessageStore.putMessage``/``putMessages`` (``checkMessage``/``checkMessages``),
``CommitLog.asyncPutMessage``/``asyncPutMessages`` with ``MessageExtEncoder``/``MessageExtBatchEncoder`` and
``DefaultAppendMessageCallback.doAppend``, and the dispatchers of ``ReputMessageService`` (which here run before the
put returns, so a put is visible to ``get_message`` when it returns).

- Prepared and rollback transaction messages are written but not dispatched to a consume queue, and keep queue offset
  0 (``doAppend``); commit-log dispatchers (``add_dispatcher``) see them too.
- Delays: a put with DELAY > 0 is parked in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1``, its level clamped to the max
  level, and its tags code is the store time plus the level's delay. The table is ``delay_level_millis`` (the broker's
  ``messageDelayLevel``, RocketMQ's 18 levels by default); its length is the max level.
- A batch is one topic and queue, no transaction type and no delay conversion, written contiguously in one segment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rocketspec.refimpl import message as codec
from rocketspec.refimpl.runtime import Runtime
from rocketspec.refimpl.store.commit_log import CommitLog
from rocketspec.refimpl.store.consume_queue import ConsumeQueueTable
from rocketspec.refimpl.store.flush import FlushService
from rocketspec.refimpl.store.records import _I64, _NOT_DISPATCHED, _tags_code
from rocketspec.refimpl.store.values import MessageToStore, PutResult, StoredRecord
from rocketspec.spec import protocol
from rocketspec.spec.protocol import Property, PutMessageStatus


def _too_long(text: str, limit: int) -> bool:
    """Java ``String.length() > limit`` (UTF-16 units; at most two per character, so short strings need no count)."""
    return len(text) * 2 > limit and codec.java_length(text) > limit


def _fail(status: PutMessageStatus) -> PutResult:
    return PutResult(status)


class StoreWrites:
    """``MessageStore``'s puts and the listeners they notify. Mixed into ``MessageStore``, whose ``__init__`` sets the
    attributes below; it appends to ``commit_log`` and ``consume_queues`` and hands the bytes to ``flusher``."""

    runtime: Runtime
    delay_level_millis: tuple[int, ...]
    commit_log: CommitLog
    consume_queues: ConsumeQueueTable
    flusher: FlushService
    _store_host_bytes: bytes
    _closed: bool
    _listeners: list[Callable[[str, int, int, int], None]]
    _dispatchers: list[Callable[[StoredRecord], None]]

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
        queues = self.consume_queues
        cq = queues.get(topic, queue_id)
        queue_offset = (cq.max_offset if cq is not None else 0) if dispatch else 0
        segment = self.commit_log.segment_for(size)
        phy = segment.base + segment.length
        data = codec.pack_stored_message(
            topic_bytes, queue_id, body, msg.flag, props_bytes, sys_flag, msg.born_timestamp, born_bytes, now,
            self._store_host_bytes, msg.reconsume_times, msg.prepared_transaction_offset, queue_offset, phy,
            codec.body_crc(body),
        )
        segment.data += data
        self.commit_log.appended(segment, size, 1, now)
        tags = 0
        if dispatch:
            if cq is None:
                cq = queues.create(topic, queue_id)
            tags = _tags_code(topic, written, now, self.delay_level_millis)
            cq.append(phy, size, tags)
            queues.dirty.add(cq)
        self.flusher.after_put()
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
        queues = self.consume_queues
        cq = queues.get(topic, queue_id)
        first_queue_offset = cq.max_offset if cq is not None else 0
        segment = self.commit_log.segment_for(total)
        first_phy = segment.base + segment.length
        if cq is None:
            cq = queues.create(topic, queue_id)
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
            segment.data += data
            tags = _tags_code(topic, props, now, self.delay_level_millis)
            cq.append(phy, size, tags)
            queue_offsets.append(queue_offset)
            offset_ids.append((self._store_host_bytes + _I64.pack(phy)).hex().upper())
            arrivals.append((queue_offset, tags))
            for dispatcher in self._dispatchers:
                dispatcher(StoredRecord(topic, queue_id, phy, size, msg.sys_flag, now, props))
            phy += size
        self.commit_log.appended(segment, total, len(encoded), now)
        queues.dirty.add(cq)
        self.flusher.after_put()
        for queue_offset, tags in arrivals:
            for listener in self._listeners:
                listener(topic, queue_id, queue_offset, tags)
        return PutResult(PutMessageStatus.PUT_OK, first_phy, first_queue_offset, offset_ids[0], now, total,
                         tuple(queue_offsets), tuple(offset_ids))

    def add_arrival_listener(self, fn: Callable[[str, int, int, int], None]) -> None:
        """``MessageArrivingListener``: ``fn(topic, queue_id, queue_offset, tags_code)`` after each dispatched
        message (``queue_offset`` is the new message's offset; the queue's max offset is now one more)."""
        self._listeners.append(fn)

    def remove_arrival_listener(self, fn: Callable[[str, int, int, int], None]) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def add_dispatcher(self, fn: Callable[[StoredRecord], None]) -> None:
        """``CommitLogDispatcher``: ``fn(record)`` for every message written from now on, dispatched to a consume
        queue or not (prepared and rolled-back transaction messages too); ``records`` replays what is stored."""
        self._dispatchers.append(fn)
