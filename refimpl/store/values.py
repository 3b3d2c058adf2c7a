"""The values the message store takes and answers with (RocketMQ 4.9.8).

``MessageToStore`` is ``MessageExtBrokerInner`` (what the broker asks to write), ``PutResult`` is ``PutMessageResult``
with its ``AppendMessageResult``, ``StoredRecord`` is the ``DispatchRequest`` a ``CommitLogDispatcher`` sees and
``GetMessageResult`` is ``GetMessageResult``. They hold no behaviour beyond derived properties: the rules that fill
them are in ``writing`` (puts), ``reading`` (getMessage) and ``commit_log`` (records).
"""

from __future__ import annotations

import attrs

from rocketspec.spec.protocol import GetMessageStatus, PutMessageStatus


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
