"""Whether the embedded Chroma database changed since the stamps were read, without asking Chroma.

Every search checks its scopes' stamps against the keyword index (services/knowledge/index.py); reading
them from Chroma cost about 1 ms, a tenth of a warm search at 10,000 chunks. SQLite's `PRAGMA data_version`,
asked on a read-only connection of our own to Chroma's file, changes whenever any other connection commits
to it (Chroma's, in this process or in another one) and costs microseconds; while it has not changed, the
stamps read last still hold. It is exact, not a timer: another process's write is seen by the next search.
The version is taken before the read it guards, so a commit in between shows as a change the next time.
A file replaced under the same name (another inode) starts over. A Chroma server is asked every time.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path


class StampCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._inode = 0
        self._version: int | None = None
        self._stamps: dict[tuple[str, str], str | None] = {}

    def version(self) -> int | None:
        """The file's data version now (None: no file, or it cannot be read; nothing is kept then)."""
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

    def get(self, version: int | None, base: str, scopes: Sequence[str]) -> dict[str, str | None] | None:
        """The scopes' stamps kept at `version`; None unless every one is."""
        if version is None or version != self._version or any((base, s) not in self._stamps for s in scopes):
            return None
        return {s: self._stamps[(base, s)] for s in scopes}

    def put(self, version: int | None, base: str, stamps: Mapping[str, str | None]) -> None:
        """Keep stamps read after `version` was taken."""
        if version is None:
            return
        if version != self._version:
            self._stamps.clear()
            self._version = version
        self._stamps.update({(base, s): v for s, v in stamps.items()})

    def clear(self) -> None:
        self._stamps.clear()
        self._version = None
        if self._db is not None:
            self._db.close()
            self._db = None
