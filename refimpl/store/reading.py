"""The read side of the message store: getMessage, lookups by commit-log offset, queue offset and time (RocketMQ 4.9.8).

Modelled on ``DefaultMessageStore.getMessage``, ``lookMessageByOffset``/``selectOneMessageByOffset``,
``getMinOffsetInQueue``/``getMaxOffsetInQueue``, ``getMessageStoreTimeStamp``, ``getEarliestMessageTime`` and
``ConsumeQueue.getOffsetInQueueByTime``. Nothing here changes the store: the answers come from the consume queues
(``consume_queue``) and the commit log's bytes (``commit_log``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rocketspec.refimpl import message as codec
from rocketspec.refimpl.store.commit_log import CommitLog
from rocketspec.refimpl.store.consume_queue import _CQ_ENTRY, _CQ_UNIT, ConsumeQueueTable
from rocketspec.refimpl.store.values import GetMessageResult, StoredRecord
from rocketspec.spec import protocol
from rocketspec.spec.protocol import GetMessageStatus


class StoreReads:
    """``MessageStore``'s queries. Mixed into ``MessageStore``, whose ``__init__`` sets the attributes below; it only
    reads ``commit_log`` and ``consume_queues``."""

    broker_name: str
    commit_log: CommitLog
    consume_queues: ConsumeQueueTable

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
        cq = self.consume_queues.get(topic, queue_id)
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
        read = self.commit_log.read
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
                next_phy_file_start = phy + self.commit_log.segment_bytes - phy % self.commit_log.segment_bytes
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

    def look_message_bytes(self, commit_log_offset: int) -> bytes | None:
        """``selectOneMessageByOffset``: the stored bytes of the message at this offset, or None."""
        return self.commit_log.look_bytes(commit_log_offset)

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

    def records(self) -> Iterator[StoredRecord]:
        """Every message in the commit log, oldest first (what ``ReputMessageService`` would dispatch from the
        commit log's first offset)."""
        yield from self.commit_log.records()

    def queue_entries(self, topic: str, queue_id: int, offset: int, n: int) -> list[tuple[int, int, int, int]]:
        """Consume-queue entries (queue_offset, commit_log_offset, size, tags_code) from ``offset`` (at least the
        queue's min offset), at most ``n``, skipping entries whose consume-queue file is gone."""
        cq = self.consume_queues.get(topic, queue_id)
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

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """``ConsumeQueue.getOffsetInQueueByTime`` (4.9.8): a binary search over the queue's entries by store time
        that answers an entry stored exactly at ``timestamp_ms`` if it meets one, else the entry nearest in time among
        the last one before and the first one after (the earlier on a tie); the first entry if all are later, the
        last entry (not the max offset) if all are earlier. 0 for an unknown or empty queue, and 0 when a message
        cannot be read. Entries whose message was deleted count as earlier, as in Java; when all of them were, the
        first file's first offset - 1 (0 at least), as Java's arithmetic on a byte offset of -1 gives.

        4.9.8 searches the one consume-queue file whose time covers ``timestamp_ms`` (300,000 entries per file); this
        queue is searched whole, which is the same answer while a queue holds one file's worth of entries.
        """
        cq = self.consume_queues.get(topic, queue_id)
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
            stored = self.commit_log.store_timestamp(entry[0], entry[1])
            if stored < 0:
                return 0
            if stored == timestamp_ms:
                return mid
            if stored > timestamp_ms:
                high, right, right_time = mid - 1, mid, stored
            else:
                low, left, left_time = mid + 1, mid, stored
        if left_time == -1:
            if right == -1:
                # Every entry's commit-log data is gone: Java answers (fileFromOffset + rightOffset) / 20 with
                # rightOffset still -1 (bytes), the file's first offset - 1, which its integer division makes 0 at
                # the start of the queue.
                return max(cq.first_file * cq.entries - 1, 0)
            return right
        if right_time == -1:
            return left
        return right if abs(timestamp_ms - left_time) > abs(timestamp_ms - right_time) else left

    def min_offset(self, topic: str, queue_id: int) -> int:
        """``getMinOffsetInQueue`` (0 for a queue that does not exist: Java creates it empty)."""
        cq = self.consume_queues.get(topic, queue_id)
        return 0 if cq is None else cq.min_logic

    def max_offset(self, topic: str, queue_id: int) -> int:
        """``getMaxOffsetInQueue``: one past the last entry (0 for a queue that does not exist)."""
        cq = self.consume_queues.get(topic, queue_id)
        return 0 if cq is None else cq.max_offset

    def message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """``getMessageStoreTimeStamp``: store time of the message at this queue offset, -1 when there is none."""
        cq = self.consume_queues.get(topic, queue_id)
        if cq is None or offset < cq.min_logic:
            return -1
        entry = cq.entry(offset)
        if entry is None or entry[1] == 0x7FFFFFFF:  # absent, or a blank entry padding a hole
            return -1
        return self.commit_log.store_timestamp(entry[0], entry[1])

    def earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """``getEarliestMessageTime``: store time of the queue's first message (of the commit log's first message
        without a topic); -1 when there is none."""
        if topic is not None:
            cq = self.consume_queues.get(topic, queue_id)
            return -1 if cq is None else self.message_store_timestamp(topic, queue_id, cq.min_logic)
        return self.commit_log.earliest_store_timestamp()

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(self.consume_queues.topics.get(topic, {}))

    def topics(self) -> list[str]:
        return sorted(self.consume_queues.topics)

    def commit_log_min_offset(self) -> int:
        """``CommitLog.getMinOffset``: start of the first segment (0 when empty)."""
        return self.commit_log.min_offset()

    def commit_log_max_offset(self) -> int:
        """``CommitLog.getMaxOffset``: end of the written data."""
        return self.commit_log.max_offset()
