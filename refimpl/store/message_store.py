"""``MessageStore``, the broker's message store as its users see it (RocketMQ 4.9.8 ``DefaultMessageStore``).

The one class the broker, the index and the tests call. It builds its parts and owns their lifecycle: a
``CommitLog`` (``commit_log``), a ``ConsumeQueueTable`` (``consume_queues``), both filled from the disk by
``recovery.recover``, and a ``FlushService`` (``flusher``) that decides when their bytes reach the disk. Its API comes
in three mixins, each working only on those parts: ``StoreWrites`` (puts and the listeners they notify),
``StoreReads`` (getMessage and the lookups) and ``StoreHousekeeping`` (deleting old data). The rules are summed up in
the package docstring (``rocketspec.refimpl.store``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from rocketspec.refimpl import message as codec
from rocketspec.refimpl.disk import Disk, FileDisk, MemoryDisk
from rocketspec.refimpl.runtime import Runtime
from rocketspec.refimpl.store.checkpoint import ABORT_PATH
from rocketspec.refimpl.store.commit_log import CommitLog
from rocketspec.refimpl.store.consume_queue import ConsumeQueueTable
from rocketspec.refimpl.store.flush import FlushService
from rocketspec.refimpl.store.housekeeping import StoreHousekeeping
from rocketspec.refimpl.store.reading import StoreReads
from rocketspec.refimpl.store.recovery import recover
from rocketspec.refimpl.store.values import StoredRecord
from rocketspec.refimpl.store.writing import StoreWrites
from rocketspec.spec import protocol

#: Entries per consume-queue file unless told otherwise (4.9.8's 300,000 would be a 6 MB file per queue here).
DEFAULT_CQ_SEGMENT_ENTRIES = 30_000


class MessageStore(StoreWrites, StoreReads, StoreHousekeeping):
    """``DefaultMessageStore`` for one broker (see the package docstring for the rules).

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
        cq_segment_entries: int = DEFAULT_CQ_SEGMENT_ENTRIES,
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
        self.file_reserved_ms = file_reserved_ms
        self.flush_interval_ms = flush_interval_ms
        # ScheduleMessageService.delayLevelTable: level i's delay at index i - 1; its length is the max level.
        self.delay_level_millis = tuple(delay_level_millis)

        self.commit_log = CommitLog(disk, segment_bytes)
        self.consume_queues = ConsumeQueueTable(disk, cq_segment_entries)
        self._listeners: list[Callable[[str, int, int, int], None]] = []
        self._delete_listeners: list[Callable[[str, int, int], None]] = []
        self._dispatchers: list[Callable[[StoredRecord], None]] = []
        self._closed = False

        # DefaultMessageStore.load: an abort file left behind means the last run did not shut down (a crash).
        # Recovery is the same either way (the abnormal one: the commit log is checked and dispatched again from
        # the checkpoint, which covers what was written of the consume queues); this only says which it was.
        self.recovered_abnormally = disk.exists(ABORT_PATH)
        checkpoint = recover(self.commit_log, self.consume_queues, self.delay_level_millis)
        # Recovery corrected every queue's min offset against this: housekeeping cleans again once it moves.
        self._last_cleaned_min = self.commit_log.min_offset()
        disk.write_file(ABORT_PATH, b"")
        self.flusher = FlushService(runtime, disk, self.commit_log, self.consume_queues, mode=flush,
                                    interval_ms=flush_interval_ms, checkpoint=checkpoint)

    # ---- flushing, closing --------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write everything to the disk: commit log, consume queues, then the checkpoint."""
        self.flusher.flush()

    @property
    def awaiting_flush(self) -> bool:
        """A sync-mode put is written but not flushed yet: its answer waits for the group commit (``when_durable``)."""
        return self.flusher.awaiting

    def when_durable(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once what was put so far is flushed (``GroupCommitRequest`` completed): at once unless a group
        commit is pending. A crash drops the waiters (their sends are never answered)."""
        self.flusher.when_durable(fn)

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
        self.flusher.drop_waiters()
        self._stop()
        self.disk.lose_unflushed()

    def _stop(self) -> None:
        self._closed = True
        self.flusher.stop()
        self.disk.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> dict[str, int]:
        return {
            "messages": self.commit_log.messages,
            "bytes": self.commit_log.total_bytes(),
            "segments": len(self.commit_log.segments),
            "queues": len(self.consume_queues),
            "commit_log_min_offset": self.commit_log_min_offset(),
            "commit_log_max_offset": self.commit_log_max_offset(),
        }
