"""Forking and pruning stored sessions (D5, retention), as plain SQL on the checkpoint tables (SQLite or
Postgres, checkpoints/tables.py).

`fork_thread` copies a checkpoint and its ancestors (with their writes, so the delta-stored history and
any pending approval come along; on Postgres the stored channel values too) to a new thread: the new
session continues from that point, and the original is never written. Checkpoint ids stay the same; they
are unique per thread.

`prune_threads` keeps what a session needs from a cut-off time on: a session whose newest checkpoint is
older is deleted; in a newer one, the checkpoints before the newest full copy of the history older than
the cut-off are deleted (a load walks back to a copy and stops there, so the history stays whole, also
for a turn running meanwhile). On Postgres the stored values no kept checkpoint refers to go too.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from checkpoints.loader import FoldingLoader
from checkpoints.sessions import checkpoint_time
from checkpoints.tables import Query, copy_at, dialect, fetch, portable, run

CHAIN_SQL = Query(
    "WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? "
    "UNION ALL SELECT c.checkpoint_id, c.parent_checkpoint_id FROM chain a CROSS JOIN checkpoints c "
    "ON c.checkpoint_id = a.parent_checkpoint_id WHERE c.thread_id = ? AND c.checkpoint_ns = '') "
    "SELECT checkpoint_id FROM chain",
    "WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
    "WHERE thread_id = %s AND checkpoint_ns = '' AND checkpoint_id = %s "
    "UNION ALL SELECT c.checkpoint_id, c.parent_checkpoint_id FROM chain a JOIN checkpoints c "
    "ON c.checkpoint_id = a.parent_checkpoint_id AND c.thread_id = %s AND c.checkpoint_ns = '' "
    'AND c.checkpoint_id COLLATE "C" < a.checkpoint_id COLLATE "C") '
    "SELECT checkpoint_id FROM chain")
CHECKPOINT_COLUMNS = "checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
WRITE_COLUMNS = "checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type"
#: `{where}` picks the rows: the checkpoints given (a JSON array on SQLite), or a gate's namespaces.
_IDS = {"sqlite": "checkpoint_ns = '' AND checkpoint_id IN (SELECT value FROM json_each(?))",
        "postgres": "checkpoint_ns = '' AND checkpoint_id = ANY(%s)"}
_GATES = {"sqlite": "checkpoint_ns LIKE ?", "postgres": "checkpoint_ns LIKE %s"}


def _copy(where: dict[str, str]) -> tuple[Query, Query, Query]:
    """Copy the checkpoints, writes and (Postgres) stored values chosen by `where` to another thread."""
    cp = {d: f"INSERT INTO checkpoints (thread_id, {CHECKPOINT_COLUMNS}) SELECT {m}, {CHECKPOINT_COLUMNS} "  # noqa: S608 - constant columns and clauses, values as placeholders
             f"FROM checkpoints WHERE thread_id = {m} AND {where[d]}" for d, m in (("sqlite", "?"), ("postgres", "%s"))}
    blobs = ("INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "  # noqa: S608 - constant clause, values as placeholders
             "SELECT DISTINCT %s, b.checkpoint_ns, b.channel, b.version, b.type, b.blob FROM checkpoints c "
             "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') v JOIN checkpoint_blobs b "
             "ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key "
             f"AND b.version = v.value WHERE c.thread_id = %s AND c.{where['postgres']} ON CONFLICT DO NOTHING")
    return (Query(cp["sqlite"], cp["postgres"]),
            Query(f"INSERT INTO writes (thread_id, {WRITE_COLUMNS}, value) SELECT ?, {WRITE_COLUMNS}, value "  # noqa: S608 - constant columns and clauses, values as placeholders
                  f"FROM writes WHERE thread_id = ? AND {where['sqlite']}",
                  f"INSERT INTO checkpoint_writes (thread_id, {WRITE_COLUMNS}, blob) SELECT %s, {WRITE_COLUMNS}, blob "  # noqa: S608 - constant columns and clauses, values as placeholders
                  f"FROM checkpoint_writes WHERE thread_id = %s AND {where['postgres']}"),
            Query("", blobs))


COPY_IDS, COPY_GATES = _copy(_IDS), _copy(_GATES)
COUNT_SQL = portable("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?")
TASKS_SQL = portable("SELECT DISTINCT task_id FROM {writes} WHERE thread_id = ? AND checkpoint_ns = '' "
                     "AND checkpoint_id = ?")
TASKS_SQL = Query(TASKS_SQL.sqlite.format(writes="writes"), TASKS_SQL.postgres.format(writes="checkpoint_writes"))


class ForkError(ValueError):
    """A fork that cannot be made (unknown session or checkpoint, target taken); the text says which."""


@dataclass(frozen=True)
class PruneReport:
    sessions_deleted: list[str]
    checkpoints: int
    writes: int


def _tables(saver: BaseCheckpointSaver[str]) -> BaseCheckpointSaver[str]:
    if not dialect(saver):
        raise ForkError("forking and pruning need the SQLite checkpointer (data/checkpoints.db) or Postgres")
    return saver


async def fork_thread(saver: BaseCheckpointSaver[str], source: str, checkpoint_id: str, target: str, *,
                      rerun: bool = False) -> int:
    """Copy `source` up to `checkpoint_id` to the new thread `target`; returns the checkpoints copied.
    With `rerun` the writes made from that checkpoint are left behind: its pending step runs again (replay)."""
    db = _tables(saver)
    counts = await run(db, [(COUNT_SQL, (source,)), (COUNT_SQL, (target,))])
    if not counts[0][0][0]:
        raise ForkError(f"no session {source!r} (`ania sessions list` shows the stored ones)")
    if counts[1][0][0]:
        raise ForkError(f"session {target!r} already exists; choose another --to")
    ids = [str(r[0]) for r in await fetch(db, CHAIN_SQL, (source, checkpoint_id, source))]
    if not ids:
        raise ForkError(f"session {source!r} has no checkpoint {checkpoint_id!r} "
                        f"(`ania sessions history {source}` lists them)")
    tasks = [] if rerun else [str(r[0]) for r in await fetch(db, TASKS_SQL, (source, checkpoint_id))]
    with_writes = [c for c in ids if c != checkpoint_id] if rerun else ids
    checkpoints, writes, blobs = COPY_IDS
    steps: list[tuple[Query, Any]] = [(checkpoints, (target, source, ids)), (writes, (target, source, with_writes)),
                                      (blobs, (target, source, ids))]
    for task in tasks:  # a paused tool call's gate graph (its own namespace, named after the task)
        steps += [(q, (target, source, f"%:{task}")) for q in COPY_GATES]
    await run(db, steps, atomic=True)
    return len(ids)


THREADS_SQL = portable("SELECT DISTINCT thread_id FROM checkpoints")
ROWS_SQL = Query(
    "SELECT checkpoint_id, json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot') "
    "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC",
    "SELECT checkpoint_id, metadata -> 'counters_since_delta_snapshot' "
    "FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id COLLATE \"C\" DESC")


def _prune_sql(whole: bool) -> tuple[list[Query], list[Query]]:
    """The counting and the deleting statements, for a whole thread or its checkpoints before a cut."""
    where = {"sqlite": "thread_id = ?" if whole else "thread_id = ? AND checkpoint_id < ?",
             "postgres": "thread_id = %s" if whole else 'thread_id = %s AND checkpoint_id COLLATE "C" < %s'}
    names = (("checkpoints", "checkpoints"), ("writes", "checkpoint_writes"))
    count = [Query(f"SELECT COUNT(*) FROM {s} WHERE {where['sqlite']}",  # noqa: S608 - constant names and clauses
                   f"SELECT COUNT(*) FROM {p} WHERE {where['postgres']}") for s, p in names]  # noqa: S608 - as above
    delete = [Query(f"DELETE FROM {s} WHERE {where['sqlite']}",  # noqa: S608 - constant names and clauses
                    f"DELETE FROM {p} WHERE {where['postgres']}") for s, p in reversed(names)]  # noqa: S608 - as above
    unreferenced = ("DELETE FROM checkpoint_blobs WHERE thread_id = %s AND (checkpoint_ns, channel, version) NOT IN "
                    "(SELECT c.checkpoint_ns, v.key, v.value FROM checkpoints c "
                    "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') v WHERE c.thread_id = %s)")
    return count, [*delete, Query("", unreferenced)]


async def prune_threads(saver: BaseCheckpointSaver[str], before: datetime, *, dry_run: bool = False,
                        running: Collection[str] = ()) -> PruneReport:
    """Delete what is older than `before` (see the module docstring); `dry_run` only counts. A session in
    `running` (a turn is under way) and its subagent threads are never deleted whole, only trimmed."""
    db = _tables(saver)
    deleted: list[str] = []
    n_checkpoints = n_writes = 0
    threads = [str(r[0]) for r in await fetch(db, THREADS_SQL)]
    for thread in sorted(threads):
        rows = [(str(r[0]), _counters(r[1])) for r in await fetch(db, ROWS_SQL, (thread,))]
        if not rows:
            continue
        newest = checkpoint_time(rows[0][0])
        busy = any(thread == key or thread.startswith(f"{key}/") for key in running)
        if newest is not None and newest < before and not busy:
            cut, whole = None, True
        else:
            cut, whole = await _newest_copy_before(db, thread, rows, before), False
            if cut is None:
                continue
        args = (thread,) if whole else (thread, cut)
        count, delete = _prune_sql(whole)
        c, w = await run(db, [(q, args) for q in count])
        if not dry_run:
            await run(db, [*((q, args) for q in delete[:-1]), (delete[-1], (thread, thread))], atomic=True)
        n_checkpoints += int(c[0][0] if c else 0)
        n_writes += int(w[0][0] if w else 0)
        if whole:
            deleted.append(thread)
        if not dry_run and isinstance(db, FoldingLoader):
            db.forget_thread(thread)  # what this process remembers of the thread may point at deleted rows
    return PruneReport(deleted, n_checkpoints, n_writes)


def _counters(value: Any) -> dict[str, Any]:
    """The metadata's update counters: JSON text on SQLite, already a dict on Postgres."""
    if isinstance(value, dict):
        return value
    return json.loads(value) if value else {}


async def _newest_copy_before(db: BaseCheckpointSaver[str], thread: str, rows: list[tuple[str, dict[str, Any]]],
                              before: datetime) -> str | None:
    """The newest checkpoint older than `before` that stores a full copy of the message history."""
    for cid, counters in rows:
        at = checkpoint_time(cid)
        if at is None or at >= before:
            continue
        if "messages" in counters:
            continue  # counted since a copy: the history is not stored here
        if (await copy_at(db, thread, cid))[0]:
            return cid
    return None


VACUUM_SQL = Query("VACUUM", "VACUUM checkpoints, checkpoint_blobs, checkpoint_writes")


async def vacuum(saver: BaseCheckpointSaver[str]) -> bool:
    """Give the freed pages back (SQLite: to the file system; Postgres: to its tables, for new rows); False
    when another process holds the file."""
    db = _tables(saver)
    try:
        await fetch(db, VACUUM_SQL)
    except Exception:  # noqa: BLE001 - VACUUM is best effort; a locked or busy file is the usual failure
        return False
    return True
