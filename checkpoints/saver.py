"""The SQLite checkpointer: LangGraph's, with the history loader of checkpoints/loader.py (shared with the
Postgres saver) and puts and loads in one statement each, one trip to aiosqlite's thread.

Results are exactly what LangGraph's loader returns; tests/test_checkpoint_replay.py checks every
checkpoint of long sessions, across copies, compactions and forks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes

from checkpoints.loader import FoldingLoader, Reducer, Step, WriteRow, thread_key
from checkpoints.memo import CACHE_MESSAGES

#: A channel's history, one trip: the ancestors of a checkpoint, nearest first, while the channel has an
#: update count in their metadata (LangGraph counts the updates since its last copy, so a counted step
#: holds no copy). The walk stops after the first uncounted one (where a copy can be: its blob comes with
#: it) or after the checkpoint whose value is already known (parameter 4); the channel's writes on the
#: walk (parameter 6) come in the same answer (kind 1). CROSS JOIN keeps each step on the primary key, as
#: LangGraph's own walk does. Ids grow with time, so a parent's is smaller: a damaged link cannot make
#: the walk loop. `{task_path}` is the writes' task_path column (older files lack it).
WALK_SQL = (
    "WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id, counted, depth) AS ("
    "SELECT checkpoint_id, parent_checkpoint_id, 1, 0 "
    "FROM checkpoints WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3 "
    "UNION ALL "
    "SELECT c.checkpoint_id, c.parent_checkpoint_id, "
    "json_extract(CAST(c.metadata AS TEXT), ?5) IS NOT NULL, a.depth + 1 "
    "FROM chain a CROSS JOIN checkpoints c ON c.checkpoint_id = a.parent_checkpoint_id "
    "WHERE a.counted AND a.checkpoint_id IS NOT ?4 AND c.thread_id = ?1 AND c.checkpoint_ns = ?2 "
    "AND c.checkpoint_id < a.checkpoint_id) "
    "SELECT 0, a.depth, a.checkpoint_id, a.counted, k.type, k.checkpoint, NULL, NULL FROM chain a "
    "LEFT JOIN checkpoints k "
    "ON NOT a.counted AND k.thread_id = ?1 AND k.checkpoint_ns = ?2 AND k.checkpoint_id = a.checkpoint_id "
    "UNION ALL "
    "SELECT 1, a.depth, w.checkpoint_id, w.task_id, w.idx, w.type, w.value, {task_path} FROM chain a "
    "CROSS JOIN writes w ON w.thread_id = ?1 AND w.checkpoint_ns = ?2 AND w.checkpoint_id = a.checkpoint_id "
    "AND w.channel = ?6 WHERE a.depth > 0"
)
PUT_SQL = ("INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
           "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)")


class AniaSqliteSaver(FoldingLoader, AsyncSqliteSaver):
    """`AsyncSqliteSaver` with the history loader of checkpoints/loader.py for the channels given a reducer."""

    def __init__(self, conn: aiosqlite.Connection, *, reducers: Mapping[str, Reducer],
                 serde: SerializerProtocol | None = None, cache_messages: int = CACHE_MESSAGES) -> None:
        AsyncSqliteSaver.__init__(self, conn, serde=serde)
        self._init_loader(reducers, cache_messages)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        if not self.autocommit:
            out = await super().aput(config, checkpoint, metadata, new_versions)
        else:
            await self.setup()
            thread_id, ns = thread_key(config)
            type_, blob = self.serde.dumps_typed(checkpoint)
            meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
            async with self.lock:  # one statement, committed by itself: one trip to the connection's thread
                await self.conn.execute(PUT_SQL, (thread_id, ns, checkpoint["id"],
                                                  config["configurable"].get("checkpoint_id"), type_, blob, meta))
            out = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}
        self._remember_put(config, checkpoint)
        return out

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        if not self.autocommit or not writes:
            await super().aput_writes(config, writes, task_id, task_path)
        else:
            await self.setup()
            thread_id, ns = thread_key(config)
            cid = str(config["configurable"]["checkpoint_id"])
            verb = "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"
            rows = [(thread_id, ns, cid, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel,
                     *self.serde.dumps_typed(value)) for idx, (channel, value) in enumerate(writes)]
            sql = (f"INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, "  # noqa: S608 - `verb` is REPLACE or IGNORE, values as ? placeholders
                   f"idx, channel, type, value) VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)))
            async with self.lock:  # all of a task's writes in one statement: atomic, one trip
                await self.conn.execute(sql, [v for row in rows for v in row])
        self._remember_writes(config, writes, task_id, task_path)

    async def _get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """LangGraph's `aget_tuple` (the checkpoint and its pending writes) in one query, one trip."""
        await self.setup()
        thread_id, ns = thread_key(config)
        checkpoint_id = get_checkpoint_id(config)
        which = "checkpoint_id = ?" if checkpoint_id else "1 ORDER BY checkpoint_id DESC LIMIT 1"
        task_path = "w.task_path" if self._has_task_path else "''"
        sql = (f"SELECT c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint, c.metadata, "  # noqa: S608 - `which` and `task_path` are constant fragments, values as ? placeholders
               f"w.task_id, w.channel, w.type, w.value, {task_path}, w.idx FROM "
               f"(SELECT * FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND {which}) c "
               f"LEFT JOIN writes w ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns "
               f"AND w.checkpoint_id = c.checkpoint_id")
        args = (thread_id, ns, checkpoint_id) if checkpoint_id else (thread_id, ns)
        async with self.lock:
            rows = list(await self.conn.execute_fetchall(sql, args))
        if not rows:
            return None
        cid, parent, type_, blob, meta = rows[0][:5]
        writes = [r[5:] for r in rows if r[5] is not None]
        here: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}
        up: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
        return CheckpointTuple(here, self.serde.loads_typed((type_, blob)),
                               cast(CheckpointMetadata, json.loads(meta) if meta is not None else {}),
                               up if parent else None, load_pending_writes(writes, self.serde))

    @property
    def autocommit(self) -> bool:
        """A connection in autocommit mode (`isolation_level=None`, as the factory opens it): a statement is
        its own transaction, so a put is one trip to aiosqlite's thread instead of three or four."""
        return self.conn.isolation_level is None

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await self._get_tuple(config) if self.autocommit else await super().aget_tuple(config)
        self._remember_loaded(config, found)
        return found

    # --- the walk ----------------------------------------------------------------------------------------
    async def _walk_rows(self, thread_id: str, ns: str, start: str, known: str | None,
                         channel: str) -> tuple[list[Step], list[WriteRow]]:
        await self.setup()
        sql = WALK_SQL.format(task_path="w.task_path" if self._has_task_path else "''")
        async with self.lock:
            found = await self.conn.execute_fetchall(
                sql, (thread_id, ns, start, known, f'$.counters_since_delta_snapshot."{channel}"', channel))
        walk = sorted((r for r in found if r[0] == 0), key=lambda r: r[1])  # nearest first
        steps: list[Step] = [(r[2], bool(r[3]), r[4], r[5]) for r in walk][1:]  # not the start itself
        return steps, [cast(WriteRow, tuple(r[2:])) for r in found if r[0] == 1]

    def _seed(self, channel: str, type_: str, blob: bytes) -> tuple[bool, Any]:
        """A copy is in the checkpoint itself: its channel values hold the channel when it is stored there."""
        values = self.serde.loads_typed((type_, blob)).get("channel_values") or {}
        return (channel in values), values.get(channel)
