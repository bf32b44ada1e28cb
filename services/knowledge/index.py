"""The keyword index: BM25 over search terms, one SQLite FTS5 table per scope, in memory.

It is a cache of the Chroma store, never the record: a scope is loaded from Chroma the first time it is
searched, and again whenever the scope's stamp in Chroma differs from the one it was loaded at (another
process, or another bot on the same Chroma server, wrote to it). Writes of this process update it in
place. One table per scope keeps a scope's scores independent of what else happens to be loaded.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.knowledge.text import Analyzer

#: Terms arrive space-separated and already folded; FTS5 only splits them at the spaces.
TOKENIZE = "unicode61 remove_diacritics 0"


@dataclass(frozen=True)
class Chunk:
    """One stored piece of a document (or one memory): what a search hit shows."""

    id: str
    doc_id: str
    title: str
    pos: int
    scope: str
    text: str


@dataclass
class _Scope:
    table: str
    stamp: str | None
    rows: dict[int, Chunk] = field(default_factory=dict)
    by_doc: dict[str, list[int]] = field(default_factory=dict)
    by_id: dict[str, int] = field(default_factory=dict)
    next_row: int = 1


class KeywordIndex:
    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._scopes: dict[str, _Scope] = {}
        self._tables = 0

    def stamp(self, scope: str) -> str | None:
        """The stamp the scope was loaded at; None when it is not loaded."""
        s = self._scopes.get(scope)
        return s.stamp if s else None

    def is_loaded(self, scope: str, stamp: str | None) -> bool:
        s = self._scopes.get(scope)
        return s is not None and s.stamp == stamp

    def load(self, scope: str, stamp: str | None, chunks: Iterable[Chunk]) -> None:
        """Replace the scope's contents with `chunks`, as of `stamp`."""
        prepared = self._prepare(chunks)
        with self._lock:
            self._drop(scope)
            self._tables += 1
            s = _Scope(table=f"s{self._tables}", stamp=stamp)
            self._db.execute(f"CREATE VIRTUAL TABLE {s.table} USING fts5(terms, tokenize='{TOKENIZE}')")
            self._scopes[scope] = s
            self._insert(s, prepared)

    def add(self, scope: str, chunks: Sequence[Chunk], old_stamp: str | None, new_stamp: str) -> None:
        """Our own write: applied in place when the index was current, else the scope reloads later."""
        prepared = self._prepare(chunks)
        with self._lock:
            s = self._scopes.get(scope)
            if s is None:
                return
            if s.stamp != old_stamp:
                self._drop(scope)
                return
            self._insert(s, prepared)
            s.stamp = new_stamp

    def remove(self, scope: str, doc_id: str, old_stamp: str | None, new_stamp: str) -> None:
        with self._lock:
            s = self._scopes.get(scope)
            if s is None:
                return
            if s.stamp != old_stamp:
                self._drop(scope)
                return
            rows = s.by_doc.pop(doc_id, [])
            self._db.executemany(f"DELETE FROM {s.table} WHERE rowid = ?", [(r,) for r in rows])  # noqa: S608 - the table name is our own s<n>, values as ? placeholders
            for r in rows:
                gone = s.rows.pop(r, None)
                if gone is not None:
                    s.by_id.pop(gone.id, None)
            s.stamp = new_stamp

    def forget(self) -> None:
        """Drop everything (the store under it was replaced)."""
        with self._lock:
            for scope in list(self._scopes):
                self._drop(scope)

    def search(self, scopes: Sequence[str], terms: Sequence[str], limit: int) -> list[tuple[Chunk, float]]:
        """The best `limit` chunks of the scopes by BM25 (higher is better), ties by document and position."""
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        found: list[tuple[Chunk, float]] = []
        with self._lock:
            for scope in scopes:
                s = self._scopes.get(scope)
                if s is None or not s.rows:
                    continue
                rows = self._db.execute(
                    f"SELECT rowid, rank FROM {s.table} WHERE {s.table} MATCH ? ORDER BY rank LIMIT ?", (match, limit)  # noqa: S608 - the table name is our own s<n>, values as ? placeholders
                ).fetchall()
                found.extend((s.rows[r], -rank) for r, rank in rows)
        found.sort(key=lambda h: (-h[1], h[0].doc_id, h[0].pos))
        return found[:limit]

    def chunk(self, scope: str, chunk_id: str) -> Chunk | None:
        s = self._scopes.get(scope)
        if s is None:
            return None
        row = s.by_id.get(chunk_id)
        return None if row is None else s.rows.get(row)

    def size(self, scope: str) -> int:
        s = self._scopes.get(scope)
        return len(s.rows) if s else 0

    def close(self) -> None:
        self._db.close()

    def _prepare(self, chunks: Iterable[Chunk]) -> list[tuple[Chunk, str]]:
        """Chunks with their terms (the title counts for every chunk of its document); outside the lock."""
        return [(c, " ".join(self.analyzer.terms(f"{c.title}\n{c.text}"))) for c in chunks]

    # --- inside the lock ------------------------------------------------------------------------
    def _insert(self, s: _Scope, prepared: list[tuple[Chunk, str]]) -> None:
        batch = []
        for c, terms in prepared:
            row = s.next_row
            s.next_row += 1
            s.rows[row] = c
            s.by_doc.setdefault(c.doc_id, []).append(row)
            s.by_id[c.id] = row
            batch.append((row, terms))
        self._db.executemany(f"INSERT INTO {s.table}(rowid, terms) VALUES (?, ?)", batch)  # noqa: S608 - the table name is our own s<n>, values as ? placeholders

    def _drop(self, scope: str) -> None:
        s = self._scopes.pop(scope, None)
        if s is not None:
            self._db.execute(f"DROP TABLE {s.table}")
