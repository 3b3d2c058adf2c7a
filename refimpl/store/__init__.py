"""The broker's message store: commit log, consume queues, flushing, deletion and recovery (RocketMQ 4.9.8).

Modelled on ``DefaultMessageStore``, ``CommitLog``, ``ConsumeQueue``, ``MappedFileQueue`` and
``ScheduleMessageService.computeDeliverTimestamp``, deterministic and driven by the injected runtime (time is
``runtime.now_ms()``, flushing is a daemon timer).

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

Modules, each importing only those above it:

- ``values``: ``MessageToStore``, ``PutResult``, ``StoredRecord``, ``GetMessageResult``.
- ``records``: the stored-record layout as read back (checks, dispatch fields, tags codes).
- ``commit_log``: ``CommitLog`` and its segments (appending, reading, handing bytes to the disk).
- ``consume_queue``: ``ConsumeQueue`` entries and files, ``ConsumeQueueTable``.
- ``checkpoint``: the checkpoint and abort files.
- ``flush``: ``FlushService`` (flush modes, group commit, the periodic flush, writing the checkpoint).
- ``writing``, ``reading``, ``housekeeping``: the ``MessageStore`` API for puts, queries and deletions.
- ``recovery``: opening a store from its disk.
- ``message_store``: ``MessageStore``, the facade that builds the parts and mixes the API in.
"""

from __future__ import annotations

# Besides the API (``__all__``), the names ``rocketspec.refimpl.store`` had when it was one module, for code that still
# imports them from here (``name as name``: re-exported). Patching one of them here changes nothing: patch the module
# that defines (and reads) it.
from rocketspec.refimpl.disk import Disk, FileDisk, MemoryDisk
from rocketspec.refimpl.store.checkpoint import ABORT_PATH, CHECKPOINT_PATH
from rocketspec.refimpl.store.commit_log import COMMITLOG_DIR as COMMITLOG_DIR
from rocketspec.refimpl.store.commit_log import _Segment as _Segment
from rocketspec.refimpl.store.commit_log import _segment_path as _segment_path
from rocketspec.refimpl.store.consume_queue import _BLANK_CQ_ENTRY as _BLANK_CQ_ENTRY
from rocketspec.refimpl.store.consume_queue import _CQ_ENTRY as _CQ_ENTRY
from rocketspec.refimpl.store.consume_queue import _CQ_UNIT as _CQ_UNIT
from rocketspec.refimpl.store.consume_queue import CONSUME_QUEUE_DIR as CONSUME_QUEUE_DIR
from rocketspec.refimpl.store.consume_queue import _ConsumeQueue as _ConsumeQueue
from rocketspec.refimpl.store.consume_queue import _topic_dir as _topic_dir
from rocketspec.refimpl.store.message_store import MessageStore
from rocketspec.refimpl.store.records import _BLANK_MAGIC as _BLANK_MAGIC
from rocketspec.refimpl.store.records import _BLANK_MIN as _BLANK_MIN
from rocketspec.refimpl.store.records import _HOST_V6_BITS as _HOST_V6_BITS
from rocketspec.refimpl.store.records import _I16 as _I16
from rocketspec.refimpl.store.records import _I32 as _I32
from rocketspec.refimpl.store.records import _I64 as _I64
from rocketspec.refimpl.store.records import _MAGIC as _MAGIC
from rocketspec.refimpl.store.records import _NOT_DISPATCHED as _NOT_DISPATCHED
from rocketspec.refimpl.store.records import _SIZE_MAGIC as _SIZE_MAGIC
from rocketspec.refimpl.store.records import _STORED_V4 as _STORED_V4
from rocketspec.refimpl.store.records import _dispatch_fields as _dispatch_fields
from rocketspec.refimpl.store.records import _tags_code as _tags_code
from rocketspec.refimpl.store.records import _verify_record as _verify_record
from rocketspec.refimpl.store.values import GetMessageResult, MessageToStore, PutResult, StoredRecord
from rocketspec.refimpl.store.writing import _fail as _fail
from rocketspec.refimpl.store.writing import _too_long as _too_long

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
