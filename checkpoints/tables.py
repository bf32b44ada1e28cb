"""Reading the checkpoint tables directly, on SQLite and on Postgres: one query text per dialect.

LangGraph's savers keep the same things in both (checkpoints with parent links and JSON metadata, writes
with task paths), under slightly different names: SQLite's `writes.value` is Postgres'
`checkpoint_writes.blob`, and where SQLite keeps a checkpoint whole, Postgres keeps its JSON and puts each
channel's stored value in `checkpoint_blobs` by version. Listing sessions and their history
(checkpoints/sessions.py, history.py, transcript.py) and forking or pruning them (maintenance.py) read
the tables with a `Query` of two texts; `dialect` says which applies, None for any other saver (those go
through the saver API or refuse).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres._ainternal import get_connection
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import AsyncConnection
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

Dialect = Literal["sqlite", "postgres"]


@dataclass(frozen=True)
class Query:
    """One query in both dialects (SQLite's `?` placeholders, Postgres' `%s`)."""

    sqlite: str
    postgres: str


def portable(sql: str) -> Query:
    """A query both read the same way (no `?` operator in it: only placeholders)."""
    return Query(sql, sql.replace("?", "%s"))


def dialect(saver: BaseCheckpointSaver[str] | None) -> Dialect | None:
    """Which tables the saver keeps: SQLite's, Postgres' (a connection or a pool, as the factory opens it), or
    neither."""
    if isinstance(saver, AsyncSqliteSaver):
        return "sqlite"
    if (isinstance(saver, AsyncPostgresSaver) and isinstance(saver.conn, (AsyncConnection, AsyncConnectionPool))
            and saver.pipe is None):
        return "postgres"
    return None


def _sqlite_args(args: Sequence[Any]) -> tuple[Any, ...]:
    """A list argument is a JSON array on SQLite (`IN (SELECT value FROM json_each(?))`), an array on Postgres."""
    return tuple(json.dumps(a) if isinstance(a, list) else a for a in args)


async def fetch(saver: BaseCheckpointSaver[str], query: Query, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of one query, as tuples, under the saver's lock (its connection serves one caller at a time)."""
    return (await run(saver, [(query, args)]))[0]


async def run(saver: BaseCheckpointSaver[str], steps: Sequence[tuple[Query, Sequence[Any]]], *,
              atomic: bool = False) -> list[list[tuple[Any, ...]]]:
    """Each query's rows, in order, under the saver's lock; `atomic`: in one transaction. A query whose text
    for this dialect is empty is skipped (nothing to do there)."""
    out: list[list[tuple[Any, ...]]] = []
    if isinstance(saver, AsyncSqliteSaver):
        await saver.setup()
        async with saver.lock:
            if atomic:
                await saver.conn.execute("BEGIN")
            try:
                for query, args in steps:
                    out.append([tuple(r) for r in await saver.conn.execute_fetchall(query.sqlite, _sqlite_args(args))]
                               if query.sqlite else [])
                if atomic:
                    await saver.conn.execute("COMMIT")
            except BaseException:
                if atomic:
                    await saver.conn.execute("ROLLBACK")
                raise
        return out
    if dialect(saver) != "postgres" or not isinstance(saver, AsyncPostgresSaver):
        raise TypeError(f"no tables to read in {type(saver).__name__}")
    async with saver.lock, AsyncExitStack() as stack:
        conn = await stack.enter_async_context(get_connection(saver.conn))
        if atomic:
            await stack.enter_async_context(conn.transaction())
        cur = await stack.enter_async_context(conn.cursor(row_factory=tuple_row))
        for query, args in steps:
            if query.postgres:
                await cur.execute(query.postgres, list(args))
            out.append(list(await cur.fetchall()) if query.postgres and cur.description is not None else [])
    return out


#: The message history's stored copy at a checkpoint: the checkpoint itself on SQLite (its channel values
#: hold the copy), the blob at the checkpoint's version of the channel on Postgres.
COPY_AT = Query(
    "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
    "SELECT b.type, b.blob FROM checkpoints c JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
    "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'messages' "
    "AND b.version = c.checkpoint -> 'channel_versions' ->> 'messages' AND b.type <> 'empty' "
    "WHERE c.thread_id = %s AND c.checkpoint_ns = '' AND c.checkpoint_id = %s")


async def copy_at(saver: BaseCheckpointSaver[str], thread: str, checkpoint_id: str) -> tuple[bool, Any]:
    """Whether the checkpoint stores a full copy of the message history, and the stored value."""
    rows = await fetch(saver, COPY_AT, (thread, checkpoint_id))
    if not rows:
        return False, None
    value = saver.serde.loads_typed((rows[0][0], bytes(rows[0][1])))
    if dialect(saver) == "postgres":
        return True, value
    values = value.get("channel_values") or {}
    return "messages" in values, values.get("messages")
