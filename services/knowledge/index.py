"""The keyword index: BM25 over search terms, one SQLite FTS5 table per scope, in a file of the data directory.

It is a cache of the Chroma store, never the record. Why a file, and why FTS5 (measured in
`bench/bench_knowledge.py`, figures in the README's Performance section): rebuilding the index from Chroma
after every start took 7-16 s at 10,000 chunks, so the first turn after a restart waited that long; kept on
disk, the first search opens the file and checks one stamp. FTS5 on disk keeps the ranking the in-memory
index had (the same BM25 over the same terms), updates in place per document, is shared safely by every
process on the same data directory (the bot, `ania kb`) through SQLite's own locking, and holds nothing in
the process but SQLite's page cache (the in-memory index held every chunk's text). `bm25s` was the other
candidate: its matrix must be rebuilt to add or delete one document, which a knowledge base that grows one
document at a time cannot afford at 100,000 chunks.

Every scope's row in `scopes` carries the Chroma stamp it matches. A search compares it with the stamp in
Chroma and rebuilds the scope from Chroma when they differ: another process, or another bot on the same
Chroma server, wrote to it; or this process crashed between a Chroma write and the index's. A write first
marks the scope as being written (`begin`, a stamp no Chroma stamp equals) and applies itself only if the
mark is still there (`add`, `remove`), so a crash or a concurrent writer between the two leaves a scope
that is rebuilt, never one that lies. A file that is not a database, is damaged, or was written for
another analyzer is replaced and rebuilt, with a log line naming it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from services.knowledge.bm25 import SCORE, any_of, bound, narrowed, rare_and_frequent, row_count, weighed
from services.knowledge.text import Analyzer

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Bumped when the file's layout changes: an older file is rebuilt.
FORMAT = "3"
#: Terms arrive space-separated and already folded; FTS5 only splits them at the spaces.
TOKENIZE = "unicode61 remove_diacritics 0"
#: A scope's table: `terms` is what is searched, `every` holds "1" in every row (services/knowledge/bm25.py).
_TABLE = f"CREATE VIRTUAL TABLE f{{n}} USING fts5(terms, every, content='', tokenize='{TOKENIZE}')"
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS scopes (n INTEGER PRIMARY KEY, scope TEXT NOT NULL UNIQUE, stamp TEXT);
CREATE TABLE IF NOT EXISTS chunks (row INTEGER PRIMARY KEY, n INTEGER NOT NULL, id TEXT NOT NULL,
    doc TEXT NOT NULL, title TEXT NOT NULL, pos INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (n, doc);
CREATE INDEX IF NOT EXISTS chunks_id ON chunks (n, id);
"""


@dataclass(frozen=True)
class Chunk:
    """One stored piece of a document (or one memory): what a search hit shows."""

    id: str
    doc_id: str
    title: str
    pos: int
    scope: str
    text: str


class IndexReset(Exception):
    """The index file was damaged and has been replaced by an empty one; the caller rebuilds and retries."""


class KeywordIndex:
    def __init__(self, analyzer: Analyzer, path: Path) -> None:
        self.analyzer = analyzer
        self.path = path
        #: Scopes rebuilt from the store's chunks by this process (a test's window on "did it rebuild").
        self.rebuilds = 0
        #: Seconds this process spent in `add` (terms and writes): what ingest pays for the index (a benchmark's).
        self.add_seconds = 0.0
        self._lock = threading.Lock()
        self._db = self._open()

    # --- the file -------------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))  # private before SQLite makes -wal next to it
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # a crash loses at most the last writes: the stamps catch that
            db.execute("PRAGMA wal_autocheckpoint=8192")  # 32 MB: FTS5's merges rewrite pages, copied back once
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            want = {"format": FORMAT, "analyzer": self.analyzer.mode}
            have = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not have or have == want:
                db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            db.close()
            if e.sqlite_errorcode not in _DAMAGED:
                raise
            self._discard(f"it is damaged ({e})")
            return self._open()
        if have and have != want:  # another layout or analyzer: a new file, not old tables under new rows
            db.close()
            self._discard(f"it was written for {have}, not {want}")
            return self._open()
        if not have:
            with db:
                db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", want.items())
        return db

    def _discard(self, why: str) -> None:
        log.warning("keyword index file %s: %s; replacing it, its scopes are rebuilt from the knowledge store",
                    self.path, why)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _guard(self, fn: Callable[[], T]) -> T:
        """Run `fn` under the lock; a damaged file is replaced and IndexReset raised."""
        with self._lock:
            try:
                return fn()
            except sqlite3.DatabaseError as e:
                if e.sqlite_errorcode not in _DAMAGED:
                    raise
                self._db.close()
                self._discard(f"it is damaged ({e})")
                self._db = self._open()
                raise IndexReset(str(self.path)) from None

    def _write(self, fn: Callable[[], T]) -> T | None:
        """A write of ours: on a damaged file (replaced, empty) None, as if the scope were not in the index,
        which its next search rebuilds; the store's write goes on either way."""
        try:
            return self._guard(fn)
        except IndexReset:
            return None

    # --- scopes ---------------------------------------------------------------------------------
    def stamp(self, scope: str) -> str | None:
        """The stamp the scope was built at; None when it is not in the index."""
        return self._guard(lambda: self._stamp(scope))

    def is_current(self, scope: str, stamp: str | None) -> bool:
        """Whether the scope is in the index as of `stamp` (the store's)."""
        found = self._guard(lambda: self._db.execute("SELECT stamp FROM scopes WHERE scope = ?", (scope,)).fetchone())
        return found is not None and found[0] == stamp

    def load(self, scope: str, stamp: str | None, chunks: Iterable[Chunk]) -> None:
        """Replace the scope's contents with `chunks`, as of `stamp` (a rebuild from the store)."""
        prepared = self._prepare(chunks)

        def write() -> None:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._drop(scope)
                cur = self._db.execute("INSERT INTO scopes (scope, stamp) VALUES (?, ?)", (scope, stamp))
                n = int(cur.lastrowid or 0)
                self._db.execute(_TABLE.format(n=n))
                self._db.execute(f"CREATE VIRTUAL TABLE v{n} USING fts5vocab(f{n}, 'col')")
                self._insert(n, prepared)

        self._guard(write)
        if prepared:  # a scope new to the index (nothing stored yet) is not a rebuild, and not worth a line
            self.rebuilds += 1
            log.info("keyword index %s: scope %s rebuilt from the store (%d chunks)", self.path, scope, len(prepared))

    def begin(self, scope: str) -> str | None:
        """Mark the scope as being written before the store is; the mark is what `add`/`remove` take."""
        mark = f"writing {uuid.uuid4().hex}"

        def write() -> str | None:
            with self._db:
                cur = self._db.execute("UPDATE scopes SET stamp = ? WHERE scope = ?", (mark, scope))
            return mark if cur.rowcount else None

        return self._write(write)

    def add(self, scope: str, chunks: Sequence[Chunk], mark: str | None, new_stamp: str) -> None:
        """Our own write, applied when the scope still carries our mark; else the scope is rebuilt later."""
        start = time.perf_counter()
        prepared = self._prepare(chunks)

        def write() -> None:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                n = self._marked(scope, mark, new_stamp)
                if n is not None:
                    self._insert(n, prepared)

        self._write(write)
        self.add_seconds += time.perf_counter() - start

    def remove(self, scope: str, doc_id: str, mark: str | None, new_stamp: str) -> None:
        def write() -> None:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                n = self._marked(scope, mark, new_stamp)
                if n is None:
                    return
                found = self._db.execute("SELECT row, title, text FROM chunks WHERE n = ? AND doc = ?", (n, doc_id))
                # a contentless table forgets a row given the terms it was added with: the same analysis again
                rows = [(row, self._terms(title, text)) for row, title, text in found.fetchall()]
                self._db.executemany(f"INSERT INTO f{n} (f{n}, rowid, terms, every) VALUES ('delete', ?, ?, '1')", rows)  # noqa: S608 - f<n> is our own table, values as ? placeholders
                self._db.execute("DELETE FROM chunks WHERE n = ? AND doc = ?", (n, doc_id))

        self._write(write)

    # --- reading --------------------------------------------------------------------------------
    def search(self, scopes: Sequence[str], terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        """The best `limit` chunks of the scopes by BM25 (higher is better), ties by document and position."""
        if not terms:
            return []

        def read() -> list[tuple[Chunk, float]]:
            found: list[tuple[Chunk, float]] = []
            for scope in scopes:
                n = self._number(scope)
                if n is not None:
                    found.extend((Chunk(i, d, t, p, scope, x), s) for i, d, t, p, x, s in self._best(n, terms, limit))
            return found

        found = self._guard(read)
        found.sort(key=lambda h: (-h[1], h[0].doc_id, h[0].pos))
        return found[:limit]

    def _best(self, n: int, terms: Sequence[str], limit: int) -> list[tuple[str, str, str, int, str, float]]:
        """(id, doc, title, pos, text, score) of the table's best `limit` rows (services/knowledge/bm25.py):
        asked on the terms that weigh when that finds `limit` rows, narrowed when that is exact, else every
        row holding a term scored."""
        marks = ",".join("?" * len(terms))
        df = dict(self._db.execute(f"SELECT term, doc FROM v{n} WHERE col = 'terms' AND term IN ({marks})", terms))  # noqa: S608 - v<n> is our own table, values as ? placeholders
        averages = self._db.execute(f"SELECT block FROM f{n}_data WHERE id = 1").fetchone()  # noqa: S608 - f<n> is our own table
        rows = row_count(averages[0] if averages else None)
        weighty = weighed(rows, terms, df)
        if len(weighty) < len(terms):
            best = self._top(n, weighty, df, rows, limit)
            if len(best) == limit:
                return best
        return self._top(n, terms, df, rows, limit)

    def _top(self, n: int, terms: Sequence[str], df: dict[str, int], rows: int,
             limit: int) -> list[tuple[str, str, str, int, str, float]]:
        rare, frequent = rare_and_frequent(rows, terms, df)
        if rare and frequent:
            best = self._scored(n, narrowed(rare, frequent), limit)
            if len(best) == limit and min(b[5] for b in best) > bound(rows, frequent, df):
                return best
        return self._scored(n, any_of(terms), limit)

    def _scored(self, n: int, match: str, limit: int) -> list[tuple[str, str, str, int, str, float]]:
        score = SCORE.format(table=f"f{n}")
        found: list[tuple[str, str, str, int, str, float]] = self._db.execute(
            f"SELECT c.id, c.doc, c.title, c.pos, c.text, -m.score FROM (SELECT rowid, {score} AS score FROM f{n} "  # noqa: S608 - f<n> is our own table, values as ? placeholders
            f"WHERE f{n} MATCH ? ORDER BY score LIMIT ?) m JOIN chunks c ON c.row = m.rowid", (match, limit),
        ).fetchall()
        return found

    def chunk(self, scope: str, chunk_id: str) -> Chunk | None:
        def read() -> Chunk | None:
            row = self._db.execute("SELECT c.doc, c.title, c.pos, c.text FROM chunks c JOIN scopes s ON s.n = c.n "
                                   "WHERE s.scope = ? AND c.id = ?", (scope, chunk_id)).fetchone()
            return None if row is None else Chunk(chunk_id, row[0], row[1], row[2], scope, row[3])

        return self._guard(read)

    def size(self, scope: str) -> int:
        def read() -> int:
            n = self._number(scope)
            found = None if n is None else self._db.execute("SELECT count(*) FROM chunks WHERE n = ?", (n,)).fetchone()
            return 0 if found is None else int(found[0])

        return self._guard(read)

    def documents(self, scope: str) -> int:
        """How many documents the scope holds (its index on (n, doc) answers alone)."""
        def read() -> int:
            n = self._number(scope)
            found = None if n is None else self._db.execute(
                "SELECT count(DISTINCT doc) FROM chunks WHERE n = ?", (n,)).fetchone()
            return 0 if found is None else int(found[0])

        return self._guard(read)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _prepare(self, chunks: Iterable[Chunk]) -> list[tuple[Chunk, str]]:
        """Chunks with their terms (the title counts for every chunk of its document); outside the lock."""
        return [(c, self._terms(c.title, c.text)) for c in chunks]

    def _terms(self, title: str, text: str) -> str:
        return " ".join(self.analyzer.terms(f"{title}\n{text}"))

    # --- inside the lock ------------------------------------------------------------------------
    def _stamp(self, scope: str) -> str | None:
        row = self._db.execute("SELECT stamp FROM scopes WHERE scope = ?", (scope,)).fetchone()
        return None if row is None else row[0]

    def _number(self, scope: str) -> int | None:
        row = self._db.execute("SELECT n FROM scopes WHERE scope = ?", (scope,)).fetchone()
        return None if row is None else int(row[0])

    def _marked(self, scope: str, mark: str | None, new_stamp: str) -> int | None:
        """The scope's table number when it still carries `mark` (now `new_stamp`); else the scope is dropped."""
        row = self._db.execute("SELECT n, stamp FROM scopes WHERE scope = ?", (scope,)).fetchone()
        if row is None:
            return None
        if mark is None or row[1] != mark:
            self._drop(scope)
            return None
        self._db.execute("UPDATE scopes SET stamp = ? WHERE n = ?", (new_stamp, row[0]))
        return int(row[0])

    def _insert(self, n: int, prepared: list[tuple[Chunk, str]]) -> None:
        for c, terms in prepared:
            values = (n, c.id, c.doc_id, c.title, c.pos, c.text)
            row = self._db.execute("INSERT INTO chunks (n, id, doc, title, pos, text) VALUES (?, ?, ?, ?, ?, ?)",
                                   values).lastrowid
            self._db.execute(f"INSERT INTO f{n} (rowid, terms, every) VALUES (?, ?, '1')", (row, terms))  # noqa: S608 - f<n> is our own table, values as ? placeholders

    def _drop(self, scope: str) -> None:
        n = self._number(scope)
        if n is not None:
            self._db.execute(f"DROP TABLE IF EXISTS v{n}")
            self._db.execute(f"DROP TABLE IF EXISTS f{n}")
            self._db.execute("DELETE FROM chunks WHERE n = ?", (n,))
            self._db.execute("DELETE FROM scopes WHERE n = ?", (n,))
