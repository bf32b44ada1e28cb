"""Files other processes share: writing a config file so that a reader never sees half of it and a
failure leaves the old one, an exclusive lock across processes for a moment (`file_lock`), and one held
for as long as a process does a job that must be done once per data directory (`OwnerLock`).

A temp file in the same directory (so the rename stays on one filesystem), fsync, then `os.replace`. The
temp file is created 0600, so a config file written here is readable by the bot's user only (config files
may hold keys).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


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
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock across processes (flock on `path`), released when the block ends or the process
    dies. Opening a data file for the first time (WAL switch, tables) must happen once, not race."""
    try:
        import fcntl
    except ImportError:  # no flock on this platform: one process per data directory, as the README says
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class OwnerLock:
    """An flock on `path` held from `acquire` until `release` or the process ends (a crash frees it too):
    one process per data directory fires the scheduled tasks. The holder writes its pid into the file so
    that the one refused can say who holds it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self) -> str | None:
        """Take the lock: None when this process holds it now, else what the holder wrote (its pid)."""
        try:
            import fcntl
        except ImportError:  # no flock on this platform: one process per data directory, as the README says
            return None
        if self._handle is not None:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip()[:32] or "unknown"
            handle.close()
            return holder
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle
        return None

    def release(self) -> None:
        if self._handle is not None:
            self._handle.truncate(0)
            self._handle.close()  # closing the file frees the flock
            self._handle = None
