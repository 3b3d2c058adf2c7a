"""Where a broker's store and config files persist: ``Disk``, ``MemoryDisk`` (in memory, with a power-loss
simulation) and ``FileDisk`` (real files).

Both keep a mapped file's two steps apart, as RocketMQ's ``MappedFile`` does: ``append`` hands bytes to the operating
system (the page cache, which a crash of the process does not lose) and ``flush`` forces them to the device
(``MappedByteBuffer.force``/``FileChannel.force``: fsync), which a power loss does not lose either.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

# A flusher job: files to fsync, directories to fsync (new files' entries), then a file to write atomically.
_FlushJob = tuple[list[str], list[str], tuple[str, bytes] | None]


class Disk(Protocol):
    """Where the store (and the broker's config files) persist. Paths are relative, ``/``-separated.

    ``append`` hands bytes to the operating system (the page cache): a crash of the process keeps them, a power loss
    may not, until ``flush(path)`` (fsync). ``write_file`` is durable (and atomic) when it returns. ``view`` returns
    the whole written content of a file for reading; callers must not modify it. ``flush_soon(paths, then_write)``
    flushes ``paths`` and then writes ``then_write`` (path, data), in that order, possibly off the caller's thread
    (``FileDisk``: a flusher thread, as ``FlushRealTimeService``); a later ``flush``, ``write_file`` or ``close``
    waits for it. ``lose_unflushed`` is a power loss
    where the disk can simulate one (``MemoryDisk``); ``batch_flushes`` says a flush is costly (a real fsync), so the
    store gathers sync-mode flushes into group commits (``GroupCommitService``) instead of one per put.
    """

    batch_flushes: bool

    def list_files(self, prefix: str) -> list[str]: ...

    def exists(self, path: str) -> bool: ...

    def size(self, path: str) -> int: ...

    def read_file(self, path: str) -> bytes | None: ...

    def view(self, path: str) -> bytes | bytearray: ...

    def write_file(self, path: str, data: bytes) -> None: ...

    def append(self, path: str, data: bytes) -> None: ...

    def truncate(self, path: str, size: int) -> None: ...

    def delete(self, path: str) -> None: ...

    def flush(self, path: str) -> None: ...

    def flush_soon(self, paths: Sequence[str], then_write: tuple[str, bytes] | None) -> None: ...

    def lose_unflushed(self) -> None: ...

    def close(self) -> None: ...


class MemoryDisk:
    """A disk in memory: path → bytearray. It outlives a store, so a broker restarted in the same process (or a
    store reopened after ``crash``) recovers from what it kept. It simulates a power loss: ``lose_unflushed`` (which
    the store's ``crash`` calls) cuts every file back to what was flushed, so an in-process crash loses the unflushed
    tail, as a machine crash does."""

    batch_flushes = False  # a flush costs nothing here

    def __init__(self) -> None:
        self.files: dict[str, bytearray] = {}
        # Files with appended bytes not yet flushed: their flushed length (-1: the file is new since).
        self._unflushed: dict[str, int] = {}

    def list_files(self, prefix: str) -> list[str]:
        return sorted(path for path in self.files if path.startswith(prefix))

    def exists(self, path: str) -> bool:
        return path in self.files

    def size(self, path: str) -> int:
        data = self.files.get(path)
        return -1 if data is None else len(data)

    def read_file(self, path: str) -> bytes | None:
        data = self.files.get(path)
        return None if data is None else bytes(data)

    def view(self, path: str) -> bytes | bytearray:
        data = self.files.get(path)
        return b"" if data is None else data  # no copy: the store reads sealed segments straight from here

    def write_file(self, path: str, data: bytes) -> None:
        self.files[path] = bytearray(data)
        self._unflushed.pop(path, None)

    def append(self, path: str, data: bytes) -> None:
        existing = self.files.get(path)
        if existing is None:
            self.files[path] = bytearray(data)
            self._unflushed.setdefault(path, -1)
        else:
            self._unflushed.setdefault(path, len(existing))
            existing += data

    def truncate(self, path: str, size: int) -> None:
        data = self.files.get(path)
        if data is not None:
            del data[size:]
            flushed = self._unflushed.get(path)
            if flushed is not None and flushed > size:
                self._unflushed[path] = size

    def delete(self, path: str) -> None:
        self.files.pop(path, None)
        self._unflushed.pop(path, None)

    def flush(self, path: str) -> None:
        self._unflushed.pop(path, None)

    def flush_soon(self, paths: Sequence[str], then_write: tuple[str, bytes] | None) -> None:
        for path in paths:
            self.flush(path)
        if then_write is not None:
            self.write_file(*then_write)

    def lose_unflushed(self) -> None:
        """A power loss: appended bytes never flushed are gone, and so are files created since."""
        for path, flushed in self._unflushed.items():
            if flushed < 0:
                self.files.pop(path, None)
            else:
                del self.files[path][flushed:]
        self._unflushed = {}

    def close(self) -> None:
        pass


class FileDisk:
    """Real files under ``root``. ``append`` writes to the file at once (``os.write``: the bytes are in the page
    cache, so a kill -9 of the process keeps them, as a broker's mapped files do); ``flush`` fsyncs (``fsync`` is
    injectable, for tests); ``write_file`` replaces atomically (temp file + rename, fsync'd)."""

    _TEMP_SUFFIX = ".rocketspec-tmp"
    _OPEN_FILES = 64  # descriptors kept open for appending (the active commit-log segment, consume-queue tails)
    batch_flushes = True  # an fsync costs milliseconds: sync-mode puts share one (group commit)

    def __init__(self, root: str | os.PathLike[str], *, fsync: Callable[[int], None] = os.fsync) -> None:
        self.root = os.path.abspath(os.fspath(root))
        os.makedirs(self.root, exist_ok=True)
        self._fsync = fsync
        self._fds: dict[str, int] = {}  # open for appending, least recently used first
        self._new_files: set[str] = set()  # created since their directory was last fsync'd
        self._jobs: queue.Queue[_FlushJob | None] = queue.Queue()
        self._flusher: threading.Thread | None = None
        self.flush_errors = 0  # fsyncs the flusher thread could not do (the next flush tries again)

    def _path(self, path: str) -> str:
        full = os.path.normpath(os.path.join(self.root, path))
        if full != self.root and not full.startswith(self.root + os.sep):
            raise ValueError(f"path escapes the data directory: {path!r}")
        return full

    def list_files(self, prefix: str) -> list[str]:
        directory = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self._path(directory) if directory else self.root
        found = []
        for folder, _, names in os.walk(start):
            for name in names:
                if name.endswith(self._TEMP_SUFFIX):
                    continue
                rel = os.path.relpath(os.path.join(folder, name), self.root).replace(os.sep, "/")
                if rel.startswith(prefix):
                    found.append(rel)
        return sorted(found)

    def exists(self, path: str) -> bool:
        return os.path.isfile(self._path(path))

    def size(self, path: str) -> int:
        try:
            return os.path.getsize(self._path(path))
        except OSError:
            return -1

    def read_file(self, path: str) -> bytes | None:
        try:
            with open(self._path(path), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def view(self, path: str) -> bytes | bytearray:
        return self.read_file(path) or b""

    def write_file(self, path: str, data: bytes) -> None:
        self.wait_flushed()
        self._write_atomic(self._path(path), data)

    def _write_atomic(self, full: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        temp = full + self._TEMP_SUFFIX
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            self._fsync(handle.fileno())
        os.replace(temp, full)
        self._fsync_dir(os.path.dirname(full))

    def _fd(self, path: str) -> int:
        fd = self._fds.pop(path, None)
        if fd is None:
            full = self._path(path)
            if not os.path.exists(full):
                os.makedirs(os.path.dirname(full), exist_ok=True)
                self._new_files.add(path)
            fd = os.open(full, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if len(self._fds) >= self._OPEN_FILES:
                oldest = next(iter(self._fds))
                os.close(self._fds.pop(oldest))
        self._fds[path] = fd  # most recently used last
        return fd

    def _forget(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)
        self._new_files.discard(path)

    def append(self, path: str, data: bytes) -> None:
        fd = self._fd(path)
        with memoryview(data) as view:
            while view:
                view = view[os.write(fd, view):]

    def truncate(self, path: str, size: int) -> None:
        full = self._path(path)
        if os.path.exists(full):
            os.truncate(full, size)

    def delete(self, path: str) -> None:
        self._forget(path)
        try:
            os.remove(self._path(path))
        except FileNotFoundError:
            pass

    def flush(self, path: str) -> None:
        self.wait_flushed()
        fd = self._fds.get(path)
        if fd is not None:
            self._fsync(fd)
        else:
            full = self._path(path)
            if not os.path.exists(full):
                return
            fd = os.open(full, os.O_RDONLY)
            try:
                self._fsync(fd)
            finally:
                os.close(fd)
        if path in self._new_files:
            # A new file is durable once its directory entry is too.
            self._new_files.discard(path)
            self._fsync_dir(os.path.dirname(self._path(path)))

    def flush_soon(self, paths: Sequence[str], then_write: tuple[str, bytes] | None) -> None:
        """Hand the fsyncs (then the write) to the flusher thread: the caller's loop never waits for the device.
        The thread opens files by name, so nothing it touches is shared with the loop."""
        dirs = sorted({os.path.dirname(self._path(path)) for path in paths if path in self._new_files})
        self._new_files.difference_update(paths)
        write = None if then_write is None else (self._path(then_write[0]), then_write[1])
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_jobs, name="rocketspec-flush", daemon=True)
            self._flusher.start()
        self._jobs.put(([self._path(path) for path in paths], dirs, write))

    def _flush_jobs(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                self._flush_job(*job)
            except Exception:  # the loop waits for this thread (wait_flushed): it must not die
                self.flush_errors += 1
            finally:
                self._jobs.task_done()

    def _flush_job(self, files: list[str], dirs: list[str], write: tuple[str, bytes] | None) -> None:
        for full in files:
            try:
                fd = os.open(full, os.O_RDONLY)
            except FileNotFoundError:
                continue  # deleted since: nothing to keep
            try:
                self._fsync(fd)
            finally:
                os.close(fd)
        for directory in dirs:
            self._fsync_dir(directory)
        if write is not None:
            self._write_atomic(*write)

    def wait_flushed(self) -> None:
        """Wait until the flusher thread has done everything handed to it."""
        if self._flusher is not None:
            self._jobs.join()

    def _fsync_dir(self, directory: str) -> None:
        try:
            fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            self._fsync(fd)
        except OSError:
            pass  # some platforms cannot fsync a directory
        finally:
            os.close(fd)

    def lose_unflushed(self) -> None:
        """Nothing: what was written is the operating system's; an in-process crash is a process crash here."""

    def close(self) -> None:
        """Finish the flusher's work and stop it, close the open files (the disk can be used again after)."""
        if self._flusher is not None:
            self._jobs.put(None)
            self._flusher.join()
            self._flusher = None
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}


__all__ = ["Disk", "FileDisk", "MemoryDisk"]
