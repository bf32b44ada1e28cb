"""The app store: namespaced KV and logs, with named, ordered migrations (services/store_schema.py), in
`data/ania.db` (SQLite, the default) or in a Postgres database (`cluster.postgres_url`, services/store_pg.py).

SQLite: one connection in autocommit mode, its writes under a lock (SQLite serializes them anyway). The KV
is for small records (`clock:`, `team:`, `daily:`, `session_tools:` ...); logs are append-only tables.
Callers with tables of their own run portable SQL (`?` placeholders) through `query`, `write`, `insert`,
and `transaction()` for writes that must land together; `dialect` has the few phrases that differ.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from services.files import file_lock
from services.store_base import STORE_ERRORS, WRITE_REFUSED, Args, Backend, StoreError, Tx
from services.store_schema import MIGRATIONS, MIGRATIONS_TABLE, SQLITE

__all__ = ["MAX_KNOWN_EMPTY", "STORE_ERRORS", "WRITE_REFUSED", "AppStore", "Args", "Backend", "SqliteBackend",
           "StoreError", "Tx", "open_store"]

#: Sessions remembered as having no started calls (beyond that the set starts over: a few more DELETEs).
MAX_KNOWN_EMPTY = 4096


class SqliteTx:
    """Statements on the store's SQLite connection (the caller holds the lock)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def query(self, sql: str, args: Args = ()) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def write(self, sql: str, args: Args = ()) -> int:
        cur = self.conn.execute(sql, args)
        return int(cur.lastrowid or 0) if sql.lstrip().upper().startswith("INSERT") else int(cur.rowcount)

    def insert(self, sql: str, args: Args = ()) -> int:
        return int(self.conn.execute(sql, args).lastrowid or 0)


class SqliteBackend:
    """`data/ania.db`: one connection, autocommit, WAL; the lock keeps threads' statements apart."""

    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        """Another process opening the same file at the same moment (a second bot, a worker, `ania sessions`)
        waits on a lock file meanwhile: switching a new file to WAL and creating its tables must happen once."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with file_lock(path.with_name(path.name + ".migrate.lock")):
            self.conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout=5000")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a crash of the bot without an fsync
            self._tx = SqliteTx(self.conn)
            with self._lock:
                self.conn.execute(MIGRATIONS_TABLE)
                done = {r["name"] for r in self._tx.query("SELECT name FROM _migrations")}
                for name, fn in MIGRATIONS:
                    if name not in done:
                        with self._transaction_unlocked() as tx:
                            for statement in fn(SQLITE):
                                tx.write(statement)
                            tx.write("INSERT INTO _migrations (name, ts) VALUES (?, ?)", [name, time.time()])

    def query(self, sql: str, args: Args = ()) -> list[dict[str, Any]]:
        with self._lock:
            return self._tx.query(sql, args)

    def first(self, sql: str, args: Args = ()) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self.conn.execute(sql, args).fetchone()
            return row

    def write(self, sql: str, args: Args = ()) -> int:
        with self._lock:
            cur = self.conn.execute(sql, args)
            return int(cur.lastrowid or 0) if sql.lstrip().upper().startswith("INSERT") else int(cur.rowcount)

    def insert(self, sql: str, args: Args = ()) -> int:
        with self._lock:
            return int(self.conn.execute(sql, args).lastrowid or 0)

    @contextmanager
    def transaction(self) -> Iterator[SqliteTx]:
        with self._lock, self._transaction_unlocked() as tx:
            yield tx

    @contextmanager
    def _transaction_unlocked(self) -> Iterator[SqliteTx]:
        """The connection is in autocommit mode: a group of writes is made atomic explicitly (IMMEDIATE: the
        write lock first, so no other process's write comes between a read and a write of the group)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._tx
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


class AppStore:
    """The store on either backend. `AppStore(path)` opens (and migrates) a SQLite file; `open_store` picks
    the backend the settings name."""

    def __init__(self, path: Path | None = None, *, backend: Backend | None = None) -> None:
        if backend is None:
            if path is None:
                raise TypeError("AppStore needs a path or a backend")
            backend = SqliteBackend(path)
        self._b = backend
        self.dialect = backend.dialect
        #: Sessions this process knows to have no started calls stored (so forgetting them writes nothing),
        #: changed with the rows under `_started` (a forget and a start of one session do not interleave).
        self._no_started: set[str] = set()
        self._started = threading.Lock()

    # --- statements of callers' own ----------------------------------------------------------
    def query(self, sql: str, args: Args = ()) -> list[dict[str, Any]]:
        """Rows of a read, as dicts."""
        return self._b.query(sql, args)

    def write(self, sql: str, args: Args = ()) -> int:
        """One write statement (committed when this returns): the new row's id for an INSERT into a table with
        an `id` (0 for another table), else the number of rows changed."""
        return self._b.write(sql, args)

    def insert(self, sql: str, args: Args = ()) -> int:
        """One INSERT into a table with an `id` column (committed); the new row's id."""
        return self._b.insert(sql, args)

    def transaction(self) -> Any:
        """A context manager yielding a `Tx`: its statements commit together when the block ends, or none do."""
        return self._b.transaction()

    # --- KV -------------------------------------------------------------------------------
    def kv_get(self, key: str, default: Any = None) -> Any:
        row = self._b.first("SELECT value, expires_at FROM kv WHERE key = ?", [key])
        if row is None or (row[1] is not None and row[1] < time.time()):
            return default
        return json.loads(row[0])

    def kv_set(self, key: str, value: Any, ttl_sec: float | None = None) -> None:
        expires = None if ttl_sec is None else time.time() + ttl_sec
        self._b.write("INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE "
                      "SET value = excluded.value, expires_at = excluded.expires_at",
                      [key, json.dumps(value, sort_keys=True), expires])

    def kv_delete(self, key: str) -> None:
        self._b.write("DELETE FROM kv WHERE key = ?", [key])

    # --- operation log ----------------------------------------------------------------------
    def log_op(self, kind: str, session: str, actor: str, detail: dict[str, Any]) -> None:
        self._b.write("INSERT INTO op_log (ts, kind, session, actor, detail) VALUES (?, ?, ?, ?, ?)",
                      [time.time(), kind, session, actor, json.dumps(detail, sort_keys=True, ensure_ascii=False)])

    def ops(self, kind: str | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE kind = ?", [kind]) if kind else ("", [])
        rows = self._b.query(f"SELECT id, ts, kind, session, actor, detail FROM op_log {where} ORDER BY id", args)  # noqa: S608 - a constant clause, values as ? placeholders
        return [dict(r, detail=json.loads(r["detail"])) for r in rows]

    # --- calls whose execution began (so a crash or /stop never reports them as "not run") -------
    def call_started(self, session: str, call_id: str, tool: str) -> None:
        """Committed before the call runs (autocommit, WAL): it survives a kill -9 right after."""
        with self._started:
            self._no_started.discard(session)
            self._b.write("INSERT INTO started_calls (session, call_id, tool, ts) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (session, call_id) DO UPDATE SET tool = excluded.tool, ts = excluded.ts",
                          [session, call_id, tool, time.time()])

    def started_calls(self, session: str) -> set[str]:
        return {r["call_id"] for r in self._b.query("SELECT call_id FROM started_calls WHERE session = ?", [session])}

    def forget_started_calls(self, session: str) -> None:
        with self._started:
            if session in self._no_started:
                return  # nothing recorded since the last time (rows from another process: not known, so deleted)
            self._b.write("DELETE FROM started_calls WHERE session = ?", [session])
            if len(self._no_started) > MAX_KNOWN_EMPTY:
                self._no_started.clear()
            self._no_started.add(session)

    def close(self) -> None:
        self._b.close()


def open_store(data_dir: Path, postgres_url: str = "") -> AppStore:
    """The store the settings name: Postgres when `cluster.postgres_url` is set, else `<data dir>/ania.db`.
    A Postgres URL that is malformed or unreachable is a ConfigError naming the setting (never its password)."""
    if postgres_url:
        from services.store_pg import PostgresBackend

        return AppStore(backend=PostgresBackend(postgres_url))
    return AppStore(data_dir / "ania.db")
