"""The app store `data/ania.db` (sqlite-utils): namespaced KV and logs, with named, ordered migrations.

Writes go through one connection in a worker thread per call; SQLite serializes them. The KV is for
small records (`clock:`, `team:`, `daily:`, `session_tools:` ...); logs are append-only tables.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from services.files import file_lock

Migration = Callable[[sqlite_utils.Database], None]


def _m001_kv(db: sqlite_utils.Database) -> None:
    db.table("kv").create({"key": str, "value": str, "expires_at": float}, pk="key", not_null={"value"})


def _m002_oplog(db: sqlite_utils.Database) -> None:
    db.table("op_log").create(
        {"id": int, "ts": float, "kind": str, "session": str, "actor": str, "detail": str}, pk="id"
    )
    db.table("op_log").create_index(["kind", "ts"])


def _m003_started_calls(db: sqlite_utils.Database) -> None:
    columns = {"session": str, "call_id": str, "tool": str, "ts": float}
    db.table("started_calls").create(columns, pk=("session", "call_id"))


def _m004_clock(db: sqlite_utils.Database) -> None:
    """Scheduled tasks and their run log (services/clock). AUTOINCREMENT: a deleted task's id is never reused,
    so its log rows never mix with a later task's."""
    db.execute("""CREATE TABLE clock_tasks (
        id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, name TEXT NOT NULL, schedule TEXT NOT NULL,
        prompt TEXT NOT NULL, timezone TEXT NOT NULL, run_once INTEGER NOT NULL DEFAULT 0,
        enabled INTEGER NOT NULL DEFAULT 1, timeout_sec INTEGER, created_by TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL, since REAL NOT NULL, last_fire REAL)""")
    db.execute("CREATE INDEX clock_tasks_session ON clock_tasks (session)")
    db.execute("""CREATE TABLE clock_runs (
        id TEXT PRIMARY KEY, task_id INTEGER NOT NULL, session TEXT NOT NULL, task_name TEXT NOT NULL,
        status TEXT NOT NULL, scheduled REAL NOT NULL, started REAL, ended REAL, tool_calls TEXT NOT NULL DEFAULT '[]',
        tool_call_count INTEGER NOT NULL DEFAULT 0, usage TEXT NOT NULL DEFAULT '{}', reply TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '', delivered INTEGER NOT NULL DEFAULT 0, thread TEXT NOT NULL DEFAULT '')""")
    db.execute("CREATE INDEX clock_runs_task ON clock_runs (task_id, scheduled)")
    db.execute("CREATE INDEX clock_runs_session ON clock_runs (session, scheduled)")
    db.execute("CREATE INDEX clock_runs_status ON clock_runs (status)")


def _m005_query_log(db: sqlite_utils.Database) -> None:
    columns = {"id": int, "started": float, "ended": float, "session": str, "sender": str, "trigger": str,
               "input": str, "status": str, "tokens": str, "total_tokens": int, "duration_ms": int,
               "calls": str, "call_count": int, "thread": str, "checkpoint": str, "reply": str, "pid": int}
    db.table("query_log").create(columns, pk="id")
    db.table("query_log").create_index(["session", "started"])
    db.table("query_log").create_index(["status"])


def _m007_recall(db: sqlite_utils.Database) -> None:
    """The passages recalled into a turn (F3): a JSON list, NULL when nothing was."""
    db.execute("ALTER TABLE query_log ADD COLUMN recalled TEXT")


#: Sessions remembered as having no started calls (beyond that the set starts over: a few more DELETEs).
MAX_KNOWN_EMPTY = 4096

#: Never reorder or rename: the names are recorded in `_migrations`.
MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_kv", _m001_kv),
    ("002_op_log", _m002_oplog),
    ("003_started_calls", _m003_started_calls),
    ("004_clock", _m004_clock),
    ("005_query_log", _m005_query_log),
    ("007_recall", _m007_recall),
]


class AppStore:
    def __init__(self, path: Path) -> None:
        """Opens (and migrates) the store. Another process opening the same file at the same moment (a
        second bot, a worker, `ania sessions`) waits on a lock file meanwhile: switching a new file to WAL
        and creating its tables must happen once, not race."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        #: Sessions this process knows to have no started calls stored (so forgetting them writes nothing).
        self._no_started: set[str] = set()
        with file_lock(path.with_name(path.name + ".migrate.lock")):
            conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a crash of the bot without an fsync
            self.db = sqlite_utils.Database(conn)
            self._migrate()

    def _migrate(self) -> None:
        """Apply the missing migrations (under the lock file: see __init__)."""
        with self._lock:
            known = "_migrations" in self.db.table_names()
            done = {r["name"] for r in self.db.table("_migrations").rows} if known else set()
            for name, fn in MIGRATIONS:
                if name not in done:
                    with self.db.conn:
                        fn(self.db)
                        self.db.table("_migrations").insert({"name": name, "ts": time.time()}, pk="name")

    @contextmanager
    def locked(self) -> Iterator[sqlite_utils.Database]:
        """The database under the store's lock, for a package's own tables (services/clock)."""
        with self._lock:
            yield self.db

    # --- KV -------------------------------------------------------------------------------
    def kv_get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            row = self.db.execute("SELECT value, expires_at FROM kv WHERE key = ?", [key]).fetchone()
        if row is None or (row[1] is not None and row[1] < time.time()):
            return default
        return json.loads(row[0])

    def kv_set(self, key: str, value: Any, ttl_sec: float | None = None) -> None:
        expires = None if ttl_sec is None else time.time() + ttl_sec
        with self._lock:
            row = {"key": key, "value": json.dumps(value, sort_keys=True), "expires_at": expires}
            self.db.table("kv").upsert(row, pk="key")

    def kv_delete(self, key: str) -> None:
        with self._lock:
            self.db.execute("DELETE FROM kv WHERE key = ?", [key])

    # --- operation log ----------------------------------------------------------------------
    def log_op(self, kind: str, session: str, actor: str, detail: dict[str, Any]) -> None:
        with self._lock:
            self.db.table("op_log").insert(
                {"ts": time.time(), "kind": kind, "session": session, "actor": actor,
                 "detail": json.dumps(detail, sort_keys=True, ensure_ascii=False)}
            )

    def ops(self, kind: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            where, args = ("kind = ?", [kind]) if kind else (None, None)
            rows = self.db.table("op_log").rows_where(where, args, order_by="id")
            return [dict(r, detail=json.loads(r["detail"])) for r in rows]

    def query(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows of a read (used by the query log and `ania logs`), as dicts."""
        with self._lock:
            cur = self.db.execute(sql, list(args))
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def write(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> int:
        """One write statement (autocommit); returns the new row's id for an INSERT, else the rows changed."""
        with self._lock:
            cur = self.db.execute(sql, list(args))
            return int(cur.lastrowid or 0) if sql.lstrip().upper().startswith("INSERT") else int(cur.rowcount)

    # --- calls whose execution began (so a crash or /stop never reports them as "not run") -------
    def call_started(self, session: str, call_id: str, tool: str) -> None:
        """Committed before the call runs (autocommit, WAL): it survives a kill -9 right after. About 20 µs."""
        with self._lock:
            self._no_started.discard(session)
            self.db.execute("INSERT OR REPLACE INTO started_calls VALUES (?, ?, ?, ?)",
                            [session, call_id, tool, time.time()])

    def started_calls(self, session: str) -> set[str]:
        with self._lock:
            rows = self.db.execute("SELECT call_id FROM started_calls WHERE session = ?", [session]).fetchall()
        return {r[0] for r in rows}

    def forget_started_calls(self, session: str) -> None:
        with self._lock:
            if session in self._no_started:
                return  # nothing recorded since the last time (rows from another process: not known, so deleted)
            self.db.execute("DELETE FROM started_calls WHERE session = ?", [session])
            if len(self._no_started) > MAX_KNOWN_EMPTY:
                self._no_started.clear()
            self._no_started.add(session)

    def close(self) -> None:
        self.db.conn.close()
