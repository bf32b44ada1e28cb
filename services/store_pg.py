"""The app store on Postgres (`cluster.postgres_url`): psycopg 3, synchronous, a connection pool for the
threads that use the store at once.

Statements are the callers' portable SQL: `?` placeholders become psycopg's `%s` (once per distinct text),
Python bools become 0/1 (the columns are integers, as on SQLite), an `insert` gets `RETURNING id`. Single
statements run in autocommit; `transaction()` is a real transaction on one pooled connection. Several
processes share the database: the first to start migrates it under an advisory lock while the others wait,
so each migration runs once. psycopg's errors become StoreError, with the URL's password never in them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from core.errors import ConfigError
from core.pg_pool import IdleCheck
from core.settings.cluster import SETTING, redact_url, scrub
from services.store_base import Args, StoreError
from services.store_schema import ID_TABLES, MIGRATIONS, MIGRATIONS_TABLE, POSTGRES

#: The advisory lock the migrating process holds (one per database; any constant of our own).
MIGRATE_LOCK = 0x616E_6961_0001
#: Connections kept by one process: the event loop's thread and the worker threads the store is called from.
POOL_MAX = 10
CONNECT_TIMEOUT_SEC = 10
#: How long a call waits for a pooled connection (all busy, or the server gone) before it fails: the calls
#: run on the event loop's thread, as SQLite's do, whose busy timeout is the same 5 s.
POOL_WAIT_SEC = 5.0
_LITERAL = re.compile(r"('(?:[^']|'')*')")
_INSERT_INTO = re.compile(r"\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)


@lru_cache(maxsize=1024)
def to_pyformat(sql: str) -> str:
    """`?` placeholders as `%s`, and every literal `%` doubled (psycopg reads `%` everywhere)."""
    parts = _LITERAL.split(sql)
    for i, part in enumerate(parts):
        part = part.replace("%", "%%")
        parts[i] = part if i % 2 else part.replace("?", "%s")
    return "".join(parts)


def _args(args: Args) -> list[Any]:
    return [int(a) if a.__class__ is bool else a for a in args]


class PgTx:
    """Statements on one connection of the pool."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]], url: str) -> None:
        self.conn = conn
        self._url = url

    def query(self, sql: str, args: Args = ()) -> list[dict[str, Any]]:
        try:
            return self.conn.execute(to_pyformat(sql), _args(args)).fetchall()
        except psycopg.Error as e:
            raise StoreError(scrub(str(e), self._url)) from None

    def write(self, sql: str, args: Args = ()) -> int:
        """As on SQLite: an INSERT into a table with an `id` gives the new id (another INSERT 0)."""
        into = _INSERT_INTO.match(sql)
        if into is None:
            return self._run(sql, args)
        if into[1].lower() in ID_TABLES:
            return self.insert(sql, args)
        self._run(sql, args)
        return 0

    def _run(self, sql: str, args: Args) -> int:
        try:
            return int(self.conn.execute(to_pyformat(sql), _args(args)).rowcount)
        except psycopg.Error as e:
            raise StoreError(scrub(str(e), self._url)) from None

    def insert(self, sql: str, args: Args = ()) -> int:
        try:
            row = self.conn.execute(to_pyformat(sql + " RETURNING id"), _args(args)).fetchone()
        except psycopg.Error as e:
            raise StoreError(scrub(str(e), self._url)) from None
        return int(row["id"]) if row else 0


class PostgresBackend:
    dialect = POSTGRES

    def __init__(self, url: str, *, setting: str = SETTING, max_size: int = POOL_MAX) -> None:
        """Connects, migrates (once across processes), then opens the pool. A URL that does not parse or a
        server that does not answer is a ConfigError naming `setting`."""
        self.url = url
        self.shown = redact_url(url)
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SEC) as conn:
                migrate(conn)
        except psycopg.Error as e:
            raise ConfigError(f"{setting}: cannot use the Postgres database {self.shown}: "
                              f"{scrub(str(e), url).strip()}") from None
        idle = IdleCheck()  # a connection a restart of the server cut is replaced, not handed to a turn
        self.pool = ConnectionPool(url, min_size=1, max_size=max_size, open=True, timeout=POOL_WAIT_SEC,
                                   name="ania-store", check=idle.check, reset=idle.reset,
                                   kwargs={"autocommit": True, "row_factory": dict_row,
                                           "connect_timeout": CONNECT_TIMEOUT_SEC})

    @contextmanager
    def _conn(self) -> Iterator[PgTx]:
        try:
            with self.pool.connection() as conn:
                yield PgTx(conn, self.url)  # the pool's connections are made with dict_row
        except PoolTimeout as e:
            raise StoreError(f"no connection to the Postgres store {self.shown}: {scrub(str(e), self.url)}") from None
        except psycopg.Error as e:
            raise StoreError(scrub(str(e), self.url)) from None

    def query(self, sql: str, args: Args = ()) -> list[dict[str, Any]]:
        with self._conn() as tx:
            return tx.query(sql, args)

    def first(self, sql: str, args: Args = ()) -> tuple[Any, ...] | None:
        found = self.query(sql, args)
        return tuple(found[0].values()) if found else None

    def write(self, sql: str, args: Args = ()) -> int:
        with self._conn() as tx:
            return tx.write(sql, args)

    def insert(self, sql: str, args: Args = ()) -> int:
        with self._conn() as tx:
            return tx.insert(sql, args)

    @contextmanager
    def transaction(self) -> Iterator[PgTx]:
        with self._conn() as tx:
            try:
                with tx.conn.transaction():
                    yield tx
            except psycopg.Error as e:
                raise StoreError(scrub(str(e), self.url)) from None

    def close(self) -> None:
        self.pool.close()


def migrate(conn: psycopg.Connection[Any]) -> list[str]:
    """Apply the missing migrations, each in its own transaction, under the advisory lock (a second process
    starting at the same moment waits, then finds them applied). Returns the names applied here."""
    applied: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK])
    try:
        conn.execute(POSTGRES.ddl(MIGRATIONS_TABLE))
        done = {r[0] for r in conn.execute("SELECT name FROM _migrations").fetchall()}
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            with conn.transaction():
                for statement in fn(POSTGRES):
                    conn.execute(POSTGRES.ddl(statement))
                conn.execute("INSERT INTO _migrations (name, ts) VALUES (%s, extract(epoch FROM now()))", [name])
            applied.append(name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK])
    return applied
