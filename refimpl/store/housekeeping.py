"""Deleting old data: expired commit-log segments, the consume-queue files they leave behind, unused topics and
expired queues (RocketMQ 4.9.8).

Modelled on ``DefaultMessageStore.CleanCommitLogService`` then ``CleanConsumeQueueService``: expired commit-log
segments are deleted (never the last one), then consume-queue files whose last entry lies below the new commit-log
minimum are deleted (never a queue's last file) and each queue's minimum becomes its first entry at or above that
minimum (``ConsumeQueue.deleteExpiredFile`` + ``correctMinOffset``, which looks at the first remaining file only;
recovery corrects every queue the same way). Also ``cleanUnusedTopic`` and ``cleanExpiredConsumerQueue``, which drop
whole consume queues.
"""

from __future__ import annotations

from collections.abc import Callable

from rocketspec.refimpl.disk import Disk
from rocketspec.refimpl.runtime import Runtime
from rocketspec.refimpl.store.commit_log import CommitLog
from rocketspec.refimpl.store.consume_queue import _CQ_UNIT, ConsumeQueueTable, _ConsumeQueue
from rocketspec.refimpl.store.flush import FlushService
from rocketspec.refimpl.store.records import _I64
from rocketspec.spec import protocol


def clean_consume_queue(disk: Disk, cq: _ConsumeQueue, phy_min: int) -> None:
    """``ConsumeQueue.deleteExpiredFile`` + ``correctMinOffset`` against the commit log's min offset ``phy_min``."""
    # MappedFileQueue.deleteExpiredFileByOffset: full files (never the last) whose last entry is below phy_min.
    while len(cq.files) > 1:
        data = cq.files[0]
        if len(data) < cq.file_bytes:
            break
        last_phy = _I64.unpack_from(data, cq.file_bytes - _CQ_UNIT)[0]
        if last_phy >= phy_min:
            break
        disk.delete(cq.file_path(cq.first_file))
        cq.files.pop(0)
        cq.flushed.pop(0)
        cq.first_file += 1
    # ConsumeQueue.correctMinOffset: the first entry of the first file at or above phy_min, if there is one.
    if cq.files:
        index = cq.first_at_or_above(0, phy_min)
        if index is not None:
            cq.min_logic = cq.first_file * cq.entries + index


class StoreHousekeeping:
    """``MessageStore``'s deletions. Mixed into ``MessageStore``, whose ``__init__`` sets the attributes below
    (``_last_cleaned_min``: the commit-log min offset the consume queues were last cleaned against); it flushes
    through ``flusher`` before the first segment goes."""

    runtime: Runtime
    disk: Disk
    file_reserved_ms: int
    commit_log: CommitLog
    consume_queues: ConsumeQueueTable
    flusher: FlushService
    _delete_listeners: list[Callable[[str, int, int], None]]
    _last_cleaned_min: int

    def add_delete_listener(self, fn: Callable[[str, int, int], None]) -> None:
        """``fn(topic, queue_id, min_offset)`` whenever deleting old data moves a consume queue's min offset up (not
        on recovery, which only restores what an earlier deletion already reported)."""
        self._delete_listeners.append(fn)

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        """``CleanCommitLogService.deleteExpiredFiles``: delete leading segments whose last message is older than
        ``file_reserved_ms`` (stopping at the first one that is not; never the last segment); then clean the
        consume queues. Returns the number of segments deleted."""
        now = self.runtime.now_ms() if now_ms is None else now_ms
        log = self.commit_log
        return self._drop_leading_segments(lambda _deleted: now >= log.segments[0].last_ts + self.file_reserved_ms)

    def delete_oldest_segments(self, count: int) -> int:
        """Delete up to ``count`` leading segments regardless of age (never the last one), then clean the consume
        queues (an operator deleting old data; ``cleanImmediately``)."""
        return self._drop_leading_segments(lambda deleted: deleted < count)

    def _drop_leading_segments(self, another: Callable[[int], bool]) -> int:
        """Drop leading segments (never the last one) while ``another(deleted so far)`` says so; then clean the
        consume queues. The number dropped."""
        commit_log = self.commit_log
        deleted = 0
        while len(commit_log.segments) > 1 and another(deleted):
            if not deleted:
                # The segments that stay must be on the disk before older ones go, and so must the consume-queue
                # entries (and checkpoint) of the ones that go: recovery can no longer rebuild those from the commit
                # log, and a queue whose max offset fell back would hand its offsets out again.
                self.flusher.flush()
            commit_log.drop_first()
            deleted += 1
        if deleted:
            self._clean_consume_queues()
        return deleted

    delete_old_segments = delete_oldest_segments  # the name docs/refimpl.md uses

    def _clean_consume_queues(self) -> None:
        """``CleanConsumeQueueService.deleteExpiredFiles``: ``ConsumeQueue.deleteExpiredFile`` for every queue."""
        phy_min = self.commit_log.min_offset()
        if phy_min <= self._last_cleaned_min:
            return
        self._last_cleaned_min = phy_min
        for cq in self.consume_queues.queues.values():
            before = cq.min_logic
            clean_consume_queue(self.disk, cq, phy_min)
            if cq.min_logic > before:
                for listener in self._delete_listeners:
                    listener(cq.topic, cq.queue_id, cq.min_logic)

    def clean_unused_topics(self, keep: set[str]) -> list[str]:
        """``cleanUnusedTopic``: drop the consume queues (and their files) of every topic not in ``keep`` except
        SCHEDULE_TOPIC_XXXX and the transaction op topic; the commit log keeps the messages, and a topic created
        again starts at queue offset 0. Returns the topics dropped."""
        queues = self.consume_queues
        dropped = []
        for topic in list(queues.topics):
            if topic in keep or topic in (protocol.SCHEDULE_TOPIC, protocol.TRANS_OP_HALF_TOPIC):
                continue
            for cq in list(queues.topics[topic].values()):
                queues.destroy(cq)
            dropped.append(topic)
        return dropped

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """``cleanExpiredConsumerQueue`` (mqadmin cleanExpiredCQ): destroy, files and all, every consume queue except
        SCHEDULE_TOPIC_XXXX's whose last entry ends below the commit log's min offset (its messages are all gone);
        its next queue offset goes with it (``removeQueueFromTopicQueueTable``), so the queue starts again at 0. A
        queue without entries stays; a topic left without queues goes. Returns the (topic, queue id) destroyed."""
        phy_min = self.commit_log.min_offset()
        queues = self.consume_queues
        destroyed = []
        for topic in list(queues.topics):
            if topic == protocol.SCHEDULE_TOPIC:
                continue
            for queue_id, cq in list(queues.topics[topic].items()):
                # ConsumeQueue.getLastOffset: the last written entry's offset + size, -1 when there is none.
                last = cq.entry(cq.max_offset - 1) if cq.max_offset > 0 else None
                if last is None or last[0] < 0 or last[1] <= 0 or last[0] + last[1] >= phy_min:
                    continue
                queues.destroy(cq)
                destroyed.append((topic, queue_id))
        return destroyed
