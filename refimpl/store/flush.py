"""When the store's bytes reach the disk: flush modes, group commit, the periodic flush and the checkpoint (RocketMQ
4.9.8).

Modelled on ``CommitLog.handleDiskFlush`` with its ``GroupCommitService`` and ``FlushRealTimeService``, and on
``DefaultMessageStore.FlushConsumeQueueService`` with ``StoreCheckpoint``. Every put is handed to the ``Disk`` at once
(``append``: a mapped file's page cache, which a crash of the process does not lose) and flushed (fsync) by the mode:
in ``flush="sync"`` before the put returns, or, on a disk whose flushes are costly (``FileDisk``), by one group commit
scheduled right after the requests at hand, whose answers wait for it (the commit log only); otherwise every
``flush_interval_ms``. Consume queues and the checkpoint are written by the periodic flush and on ``flush()``.

``FlushService`` owns the timers, the answers waiting for a group commit and the checkpoint's last written value; it
drives ``CommitLog`` and ``ConsumeQueueTable``, which do the writing, and never calls back into the store.
"""

from __future__ import annotations

from collections.abc import Callable

from rocketspec.refimpl.disk import Disk
from rocketspec.refimpl.runtime import Runtime, Timer
from rocketspec.refimpl.store.checkpoint import checkpoint_file
from rocketspec.refimpl.store.commit_log import CommitLog
from rocketspec.refimpl.store.consume_queue import ConsumeQueueTable


class FlushService:
    """Flushes ``commit_log`` and ``consume_queues`` to ``disk`` by ``mode`` ("sync" or "async"), the periodic flush
    on a grid of ``interval_ms`` from its creation. ``checkpoint`` is the commit-log offset the durable consume queues
    cover (-1: none yet). Created armed; ``stop`` ends it for good."""

    def __init__(self, runtime: Runtime, disk: Disk, commit_log: CommitLog, consume_queues: ConsumeQueueTable, *,
                 mode: str, interval_ms: int, checkpoint: int) -> None:
        self.runtime = runtime
        self.disk = disk
        self.commit_log = commit_log
        self.consume_queues = consume_queues
        self.mode = mode
        self.checkpoint = checkpoint
        self.stopped = False
        # Sync flush on a disk whose flushes are costly: GroupCommitService. Puts are written at once and fsync'd
        # together by one group commit on the loop, right after the requests at hand; their answers wait for it.
        self._group_commit = mode == "sync" and disk.batch_flushes
        self._commit_timer: Timer | None = None
        self._durable_waiters: list[Callable[[], None]] = []
        self._interval_ms = interval_ms
        self._anchor = runtime.now_ms()
        self._timer: Timer | None = None
        self.arm()

    def flush(self) -> None:
        """Write everything to the disk: commit log, consume queues, then the checkpoint."""
        if self.stopped:
            return
        self._flush_commit_log()
        self._flush_consume_queues()

    def after_put(self) -> None:
        """After a put: hand the new bytes to the disk at once (a mapped file's page cache, which outlives the
        process), then flush as the mode says (``CommitLog.handleDiskFlush``): sync flushes now, or by a group
        commit scheduled right after the requests at hand; async leaves it to the periodic flush
        (``FlushRealTimeService``), armed here."""
        if self._timer is None:
            self.arm()
        self.commit_log.write()
        if self.mode != "sync":
            return
        if not self._group_commit:
            self._flush_commit_log()
        elif self._commit_timer is None:
            self._commit_timer = self.runtime.call_soon(self._run_group_commit)

    @property
    def awaiting(self) -> bool:
        """A sync-mode put is written but not flushed yet: its answer waits for the group commit (``when_durable``)."""
        return self._commit_timer is not None

    def when_durable(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once what was put so far is flushed (``GroupCommitRequest`` completed): at once unless a group
        commit is pending."""
        if self._commit_timer is None:
            fn()
        else:
            self._durable_waiters.append(fn)

    def drop_waiters(self) -> None:
        """Forget the answers waiting for a group commit (a crash: their sends are never answered)."""
        self._durable_waiters = []

    def stop(self) -> None:
        """Cancel the timers; nothing is flushed from now on."""
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._commit_timer is not None:
            self._commit_timer.cancel()
            self._commit_timer = None

    def arm(self) -> None:
        """The periodic flush's next run, on its grid (every ``interval_ms`` from the store's start). A run with
        nothing to flush changes nothing, so none is scheduled until a put makes one due: an idle broker costs a
        simulation no steps, however long it waits."""
        if self._timer is None and not self.stopped:
            elapsed = self.runtime.now_ms() - self._anchor
            delay = self._interval_ms - elapsed % self._interval_ms
            self._timer = self.runtime.call_later(delay, self._tick, daemon=True)

    def _tick(self) -> None:
        self._timer = None
        self._periodic_flush()
        if self._due():
            self.arm()

    def _periodic_flush(self) -> None:
        """``FlushRealTimeService`` + ``FlushConsumeQueueService``. In async mode the loop only writes what is due
        and the disk fsyncs it off the loop (``flush_soon``), then writes the checkpoint: the loop never waits for the
        device. Sync mode flushes here too (one batch for the consume queues; the commit log is flushed already)."""
        if self.stopped:
            return
        if self.mode != "async":
            self.flush()
            return
        paths: list[str] = []
        self._flush_commit_log(paths)
        self._flush_consume_queues(paths)

    def _due(self) -> bool:
        """Whether the periodic flush would do anything now."""
        return bool(self.consume_queues.dirty or self._durable_waiters
                    or self.checkpoint != self.commit_log.max_offset() or self.commit_log.has_unflushed())

    def _run_group_commit(self) -> None:
        self._commit_timer = None
        if not self.stopped:
            self._flush_commit_log()

    def _flush_commit_log(self, later: list[str] | None = None) -> None:
        """Flush the commit log now, or (``later``) collect the files to flush off the loop; then answer the puts
        waiting for a group commit."""
        self.commit_log.flush(later)
        if self._commit_timer is not None:
            self._commit_timer.cancel()
            self._commit_timer = None
        waiters, self._durable_waiters = self._durable_waiters, []
        for fn in waiters:
            fn()

    def _flush_consume_queues(self, later: list[str] | None = None) -> None:
        """Write and flush the consume queues, then the checkpoint; with ``later``, the disk flushes ``later`` and
        these off the loop, then writes the checkpoint (never before what it covers is flushed)."""
        self.consume_queues.flush(later)
        dispatched = self.commit_log.max_offset()
        checkpoint = None
        if dispatched != self.checkpoint:
            checkpoint = checkpoint_file(dispatched)
            self.checkpoint = dispatched
        if later is not None:
            if later or checkpoint is not None:
                self.disk.flush_soon(later, checkpoint)
        elif checkpoint is not None:
            self.disk.write_file(*checkpoint)
