"""Files other processes share: writing a config file so that a reader never sees half of it and a
failure leaves the old one, and an exclusive lock across processes.

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
