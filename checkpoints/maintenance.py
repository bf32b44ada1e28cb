"""Forking and pruning stored sessions (D5, retention), as plain SQL on the SQLite checkpointer.

`fork_thread` copies a checkpoint and its ancestors (with their writes, so the delta-stored history and
any pending approval come along) to a new thread: the new session continues from that point, and the
original is never written. Checkpoint ids stay the same; they are unique per thread.

`prune_threads` keeps what a session needs from a cut-off time on: a session whose newest checkpoint is
older is deleted; in a newer one, the checkpoints before the newest full copy of the history older than
the cut-off are deleted (a load walks back to a copy and stops there, so the history stays whole, also
for a turn running meanwhile).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from checkpoints.saver import AniaSqliteSaver
from checkpoints.sessions import checkpoint_time

CHAIN_SQL = (
    "WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ? "
    "UNION ALL SELECT c.checkpoint_id, c.parent_checkpoint_id FROM chain a CROSS JOIN checkpoints c "
    "ON c.checkpoint_id = a.parent_checkpoint_id WHERE c.thread_id = ? AND c.checkpoint_ns = '') "
    "SELECT checkpoint_id FROM chain"
)
CHECKPOINT_COLUMNS = "checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
WRITE_COLUMNS = "checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value"
CHUNK = 400


class ForkError(ValueError):
    """A fork that cannot be made (unknown session or checkpoint, target taken); the text says which."""


@dataclass(frozen=True)
class PruneReport:
    sessions_deleted: list[str]
    checkpoints: int
    writes: int


def _sqlite(saver: BaseCheckpointSaver[str]) -> AsyncSqliteSaver:
    if not isinstance(saver, AsyncSqliteSaver):
        raise ForkError("forking and pruning need the SQLite checkpointer (data/checkpoints.db)")
    return saver


async def fork_thread(saver: BaseCheckpointSaver[str], source: str, checkpoint_id: str, target: str, *,
                      rerun: bool = False) -> int:
    """Copy `source` up to `checkpoint_id` to the new thread `target`; returns the checkpoints copied.
    With `rerun` the writes made from that checkpoint are left behind: its pending step runs again (replay)."""
    db = _sqlite(saver)
    await db.setup()
    async with db.lock:
        cur = await db.conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (source,))
        if not (await cur.fetchone() or (0,))[0]:
            raise ForkError(f"no session {source!r} (`ania sessions list` shows the stored ones)")
        cur = await db.conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (target,))
        if (await cur.fetchone() or (0,))[0]:
            raise ForkError(f"session {target!r} already exists; choose another --to")
        ids = [r[0] for r in await db.conn.execute_fetchall(CHAIN_SQL, (source, checkpoint_id, source))]
        if not ids:
            raise ForkError(f"session {source!r} has no checkpoint {checkpoint_id!r} "
                            f"(`ania sessions history {source}` lists them)")
        tasks = [] if rerun else [r[0] for r in await db.conn.execute_fetchall(
            "SELECT DISTINCT task_id FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
            (source, checkpoint_id))]
        with_writes = [c for c in ids if c != checkpoint_id] if rerun else ids
        await db.conn.execute("BEGIN")
        try:
            for i in range(0, len(ids), CHUNK):
                part = ids[i:i + CHUNK]
                marks = ",".join("?" * len(part))
                await db.conn.execute(
                    f"INSERT INTO checkpoints (thread_id, {CHECKPOINT_COLUMNS}) SELECT ?, {CHECKPOINT_COLUMNS} "  # noqa: S608 - constant column lists, values and ids as ? placeholders
                    f"FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id IN ({marks})",
                    (target, source, *part))
                written = [c for c in part if c in with_writes]
                await db.conn.execute(
                    f"INSERT INTO writes (thread_id, task_path, {WRITE_COLUMNS}) SELECT ?, task_path, {WRITE_COLUMNS} "  # noqa: S608 - constant column lists, values and ids as ? placeholders
                    f"FROM writes WHERE thread_id = ? AND checkpoint_ns = '' "
                    f"AND checkpoint_id IN ({','.join('?' * len(written))})", (target, source, *written))
            for task in tasks:  # a paused tool call's gate graph (its own namespace, named after the task)
                like = (target, source, f"%:{task}")
                await db.conn.execute(
                    f"INSERT INTO checkpoints (thread_id, {CHECKPOINT_COLUMNS}) SELECT ?, {CHECKPOINT_COLUMNS} "  # noqa: S608 - constant column lists, values as ? placeholders
                    "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns LIKE ?", like)
                await db.conn.execute(
                    f"INSERT INTO writes (thread_id, task_path, {WRITE_COLUMNS}) SELECT ?, task_path, {WRITE_COLUMNS} "  # noqa: S608 - constant column lists, values as ? placeholders
                    "FROM writes WHERE thread_id = ? AND checkpoint_ns LIKE ?", like)
            await db.conn.execute("COMMIT")
        except BaseException:
            await db.conn.execute("ROLLBACK")
            raise
    return len(ids)


async def prune_threads(saver: BaseCheckpointSaver[str], before: datetime, *, dry_run: bool = False,
                        running: Collection[str] = ()) -> PruneReport:
    """Delete what is older than `before` (see the module docstring); `dry_run` only counts. A session in
    `running` (a turn is under way) and its subagent threads are never deleted whole, only trimmed."""
    db = _sqlite(saver)
    await db.setup()
    deleted: list[str] = []
    n_checkpoints = n_writes = 0
    async with db.lock:
        threads = [r[0] for r in await db.conn.execute_fetchall("SELECT DISTINCT thread_id FROM checkpoints")]
    for thread in sorted(threads):
        async with db.lock:
            rows = [(str(r[0]), r[1]) for r in await db.conn.execute_fetchall(
                "SELECT checkpoint_id, json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot') "
                "FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC", (thread,))]
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
        where = "thread_id = ?" if whole else "thread_id = ? AND checkpoint_id < ?"
        args = (thread,) if whole else (thread, cut)
        async with db.lock:
            c = (await (await db.conn.execute(f"SELECT COUNT(*) FROM checkpoints WHERE {where}", args)).fetchone())  # noqa: S608 - `where` is one of two constant clauses, values as ? placeholders
            w = (await (await db.conn.execute(f"SELECT COUNT(*) FROM writes WHERE {where}", args)).fetchone())  # noqa: S608 - `where` is one of two constant clauses, values as ? placeholders
            if not dry_run:
                await db.conn.execute("BEGIN")
                await db.conn.execute(f"DELETE FROM writes WHERE {where}", args)  # noqa: S608 - `where` is one of two constant clauses, values as ? placeholders
                await db.conn.execute(f"DELETE FROM checkpoints WHERE {where}", args)  # noqa: S608 - `where` is one of two constant clauses, values as ? placeholders
                await db.conn.execute("COMMIT")
        n_checkpoints += int(c[0] if c else 0)
        n_writes += int(w[0] if w else 0)
        if whole:
            deleted.append(thread)
        if not dry_run and isinstance(db, AniaSqliteSaver):
            db.forget_thread(thread)  # what this process remembers of the thread may point at deleted rows
    return PruneReport(deleted, n_checkpoints, n_writes)


async def _newest_copy_before(db: AsyncSqliteSaver, thread: str, rows: list[tuple[str, str | None]],
                              before: datetime) -> str | None:
    """The newest checkpoint older than `before` that stores a full copy of the message history."""
    for cid, counters in rows:
        at = checkpoint_time(cid)
        if at is None or at >= before:
            continue
        if "messages" in (json.loads(counters) if counters else {}):
            continue  # counted since a copy: the history is not stored here
        async with db.lock:
            cur = await db.conn.execute("SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND "
                                        "checkpoint_ns = '' AND checkpoint_id = ?", (thread, cid))
            row = await cur.fetchone()
        stored = db.serde.loads_typed((row[0], row[1])) if row else {}
        if "messages" in (stored.get("channel_values") or {}):
            return cid
    return None


async def vacuum(saver: BaseCheckpointSaver[str]) -> bool:
    """Give the freed pages back to the file system; False when another process holds the file."""
    db = _sqlite(saver)
    try:
        async with db.lock:
            await db.conn.execute("VACUUM")
    except Exception:  # noqa: BLE001 - VACUUM is best effort; a locked or busy file is the usual failure
        return False
    return True
