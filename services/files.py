"""Files other processes share: writing a config file so that a reader never sees half of it and a
failure leaves the old one, an exclusive lock across processes for a moment (`file_lock`), and one held
for as long as a process does a job that must be done once per data directory (`OwnerLock`).

The locks are `filelock`'s: flock where there is one, the Windows lock on Windows, and a lock file of its own
elsewhere, so no platform runs without a lock. The lock files stay in place after a release.

A temp file in the same directory (so the rename stays on one filesystem), fsync, then `os.replace`. The
temp file is created 0600, so a config file written here is readable by the bot's user only (config files
may hold keys).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout, has_fcntl


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def file_lock(path: Path, timeout: float = -1) -> Iterator[None]:
    """An exclusive lock across processes on `path`, released when the block ends or the process dies.
    Opening a data file for the first time (WAL switch, tables) must happen once, not race. Waits as long as
    it takes unless `timeout` (seconds) says otherwise; then `filelock.Timeout`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path, timeout=timeout):
        yield


class OwnerLock:
    """A lock on `path` held from `acquire` until `release` or the process ends (a crash frees it too):
    one process per data directory fires the scheduled tasks. The holder writes its pid into the file so
    that the one refused can say who holds it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Not per thread: a stop may run on another thread than the start. The soft lock of a platform
        # without flock writes the pid itself (first line) and takes no callback.
        native = has_fcntl or sys.platform == "win32"
        self._lock = FileLock(path, thread_local=False, blocking=False,
                              on_acquired=_write_pid if native else None)

    def acquire(self) -> str | None:
        """Take the lock: None when this process holds it now, else what the holder wrote (its pid)."""
        if self._lock.is_locked:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except Timeout:
            try:
                holder = self.path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0].strip()
            except OSError:  # Windows: the holder's lock covers the bytes
                holder = ""
            return holder[:32] or "unknown"
        return None

    def release(self) -> None:
        if self._lock.is_locked:
            try:
                os.truncate(self.path, 0)  # still ours: nobody reads a stale pid
            except OSError:
                pass
            self._lock.release(force=True)


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{os.getpid()}\n".encode())
