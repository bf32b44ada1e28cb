"""Whether the embedded Chroma database changed since the stamps were read, without asking Chroma.

Every search checks its scopes' stamps against the keyword index (services/knowledge/index.py); reading
them from Chroma cost about 1 ms, a tenth of a warm search at 10,000 chunks. SQLite's `PRAGMA data_version`,
asked on a read-only connection of our own to Chroma's file, changes whenever any other connection commits
to it (Chroma's, in this process or in another one) and costs microseconds; while it has not changed, the
stamps read last still hold. It is exact, not a timer: another process's write is seen by the next search.
A file replaced under the same name (another inode) starts over. A Chroma server is asked every time.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path


class StampCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._inode = 0
        self._version: int | None = None
        self._stamps: dict[tuple[str, str], str | None] = {}

    def stamps(self, base: str, scopes: Sequence[str],
               read: Callable[[Sequence[str]], dict[str, str | None]]) -> dict[str, str | None]:
        """Each scope's stamp: from the last `read` while the file is unchanged, else `read` again."""
        version = self._data_version()  # before reading: a commit in between shows as a change next time
        if version is None or version != self._version:
            self._stamps.clear()
            self._version = version
        missing = [s for s in scopes if (base, s) not in self._stamps]
        got = read(missing) if missing else {}
        if version is None:
            return {s: got[s] for s in scopes}
        self._stamps.update({(base, s): got[s] for s in missing})
        return {s: self._stamps[(base, s)] for s in scopes}

    def clear(self) -> None:
        self._stamps.clear()
        self._version = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def _data_version(self) -> int | None:
        """The file's data version (None: no file, or it cannot be read, so nothing is cached)."""
        try:
            inode = os.stat(self.path).st_ino
            if self._db is None or inode != self._inode:
                self.clear()
                self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                           check_same_thread=False)
                self._inode = inode
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])
        except (OSError, sqlite3.Error):
            self.clear()
            return None
