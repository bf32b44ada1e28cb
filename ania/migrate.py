"""`ania migrate --to URL`: a single-process data directory's state copied into Postgres.

The state comes in kinds (`KINDS`), each two functions: `occupied` (what the target already holds of it:
the copy refuses a target that is not empty, so a half-done run cannot mix with a later one) and `copy`.
Every kind is checked before any is copied; each kind's copy is one transaction, so a failure leaves that
kind's tables empty and the command can run again. The data directory's bot lock is held throughout: no
bot starts on the directory meanwhile, and none may be running when it begins (its rows would be
changing under the copy). The kinds: the app store's tables (data/ania.db), then the conversations
(data/checkpoints.db, through checkpoints/copy.py: every thread, checkpoint and write, so the sessions fold
to the same history there). The conversations are copied thread by thread, not in one transaction: a failed
copy leaves what it copied, and the next run is refused until the target's checkpoint tables are emptied.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import sqlite_utils
from psycopg import sql

from checkpoints.copy import copy_threads
from checkpoints.factory import CHECKPOINT_FILE, open_checkpointer
from core.errors import RunError
from core.settings.cluster import redact_url, scrub
from services.store import AppStore
from services.store_pg import PostgresBackend
from services.store_schema import ID_TABLES

Say = Callable[[str], None]
#: Rows read from SQLite at a time, and how often a big table reports its progress.
BATCH = 2000
REPORT_EVERY = 20_000
SETTING = "--to"


@dataclass(frozen=True)
class Kind:
    name: str
    #: What the target holds of this kind already ("table (N rows)" each; empty: nothing).
    occupied: Callable[[Path, str], list[str]]
    #: Copy it; returns the rows (or items) copied.
    copy: Callable[[Path, str, Say], int]


def _tables(src: sqlite3.Connection) -> dict[str, list[str]]:
    """The store's tables in the SQLite file with their columns, in their creation order (the bookkeeping
    ones left out)."""
    db = sqlite_utils.Database(src)
    return {t: [c.name for c in db.table(t).columns] for t in db.table_names()
            if t != "_migrations" and not t.startswith("sqlite_")}


def _target_tables(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, list[str]]:
    rows = conn.execute("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = "
                        "current_schema() ORDER BY ordinal_position").fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(str(table), []).append(str(column))
    return out


def _open_target(url: str) -> None:
    """Migrate the target (ConfigError naming --to when it cannot be reached)."""
    PostgresBackend(url, setting=SETTING, max_size=1).close()


def app_store_occupied(data_dir: Path, url: str) -> list[str]:
    _open_target(url)
    with psycopg.connect(url) as conn:
        found = []
        for table in sorted(_target_tables(conn)):
            if table == "_migrations":
                continue
            n = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
            if n and n[0]:
                found.append(f"{table} ({n[0]} rows)")
        return found


def copy_app_store(data_dir: Path, url: str, say: Say) -> int:
    """Every table of data/ania.db (migrated to this version first), in rowid order, into the same tables on
    Postgres, then each id sequence moved past the copied ids (and past ids SQLite handed out and deleted)."""
    AppStore(data_dir / "ania.db").close()  # an older file gets this version's migrations first
    src = sqlite3.connect(f"file:{data_dir / 'ania.db'}?mode=ro", uri=True)
    total = 0
    try:
        used = dict(src.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        with psycopg.connect(url) as conn, conn.transaction():
            target = _target_tables(conn)
            for table, columns in _tables(src).items():
                if table not in target:
                    say(f"  {table}: not a table of this version's store, left out")
                    continue
                total += _copy_table(src, conn, table, [c for c in columns if c in target[table]], say)
                if table in ID_TABLES:
                    conn.execute(sql.SQL("SELECT setval(pg_get_serial_sequence({t}, 'id'), greatest(max(id), {u}), "
                                         "true) FROM {i} HAVING greatest(max(id), {u}) > 0").format(
                        t=sql.Literal(table), i=sql.Identifier(table), u=sql.Literal(int(used.get(table, 0)))))
    finally:
        src.close()
    return total


def _copy_table(src: sqlite3.Connection, conn: psycopg.Connection[tuple[object, ...]], table: str,
                columns: list[str], say: Say) -> int:
    count = int(src.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608 - a table of the file's own schema
    names = ", ".join(columns)
    stmt = sql.SQL("COPY {t} ({c}) FROM STDIN").format(
        t=sql.Identifier(table), c=sql.SQL(", ").join(sql.Identifier(c) for c in columns))
    done, last = 0, None
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        while True:
            where = "" if last is None else "WHERE rowid > ?"
            rows = src.execute(f"SELECT rowid, {names} FROM {table} {where} ORDER BY rowid LIMIT {BATCH}",  # noqa: S608 - the file's own table and column names
                               [] if last is None else [last]).fetchall()
            if not rows:
                break
            for row in rows:
                copy.write_row(row[1:])
            last = rows[-1][0]
            before, done = done, done + len(rows)
            if done // REPORT_EVERY > before // REPORT_EVERY:
                say(f"  {table}: {done:,} of {count:,} rows")
    say(f"  {table}: {done:,} rows")
    return done


def checkpoints_occupied(data_dir: Path, url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('checkpoints') IS NOT NULL").fetchone()
        if not (row and row[0]):
            return []
        n = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        return [f"checkpoints ({n[0]} rows)"] if n and n[0] else []


#: How often (in threads) the conversations' copy reports its progress.
THREADS_EVERY = 50


def copy_checkpoints(data_dir: Path, url: str, say: Say) -> int:
    """Every stored session of data/checkpoints.db into the checkpoint tables on Postgres; the checkpoints
    copied."""
    if not (data_dir / CHECKPOINT_FILE).exists():
        say(f"  no {CHECKPOINT_FILE}: no conversations to copy")
        return 0
    threads = 0

    def progress(thread: str, copied: int) -> None:
        nonlocal threads
        threads += 1
        if threads % THREADS_EVERY == 0:
            say(f"  {threads:,} sessions, {copied:,} checkpoints so far")

    async def run() -> int:
        async with open_checkpointer(data_dir) as src, open_checkpointer(data_dir, url) as dst:
            return await copy_threads(src, dst, progress)

    copied = asyncio.run(run())
    say(f"  {threads:,} sessions, {copied:,} checkpoints")
    return copied


KINDS: list[Kind] = [Kind("the app store's tables (data/ania.db)", app_store_occupied, copy_app_store),
                     Kind(f"the conversations (data/{CHECKPOINT_FILE})", checkpoints_occupied, copy_checkpoints)]


def migrate(data_dir: Path, url: str, say: Say, kinds: list[Kind] = KINDS) -> int:
    """Check every kind's target is empty, then copy each; the rows copied. RunError (one line, the URL's
    password hidden) when the target holds data or a copy fails."""
    shown = redact_url(url)
    try:
        for kind in kinds:
            if found := kind.occupied(data_dir, url):
                raise RunError(f"the database {shown} already holds {kind.name}: {', '.join(found)}; nothing was "
                               "copied (give an empty database, or drop these tables' rows first)")
        total = 0
        for kind in kinds:
            say(f"copying {kind.name} into {shown}")
            total += kind.copy(data_dir, url, say)
    except psycopg.Error as e:
        raise RunError(f"copying into {shown} failed, nothing of that part was kept: "
                       f"{scrub(str(e), url).strip()}") from None
    return total
