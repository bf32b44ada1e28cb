"""The Postgres checkpointer: LangGraph's `AsyncPostgresSaver` with the history loader of
checkpoints/loader.py, the same one the SQLite saver uses, and our serializer (checkpoints/serde.py).

What is stored is LangGraph's format, table for table (`checkpoints`, `checkpoint_blobs`,
`checkpoint_writes`): the stock saver reads it and this one reads the stock saver's. The message channel
is a delta channel (checkpoints/delta.py), so a step stores its new messages as writes and, now and then,
a full copy as one blob; the bytes per turn stay flat, as on SQLite. What this class changes is the
reading: a turn's history comes from memory or from one walk (`WALK_SQL`), not from LangGraph's two-stage
page walk, and the walk reads only the channel's writes and the one copy it stops at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from checkpoints.loader import FoldingLoader, Reducer, Step, WriteRow, thread_key
from checkpoints.memo import CACHE_MESSAGES

#: The walk of checkpoints/saver.py's WALK_SQL in Postgres' words: the ancestors of a checkpoint, nearest
#: first, while the metadata counts updates of the channel since its copy; it stops after the first
#: uncounted one (with the copy's blob, when one is stored at its version of the channel) or after the
#: checkpoint already known. The channel's writes on the walk come in the same answer (kind 1). Ids are
#: compared byte-wise (COLLATE "C"): a parent's is smaller, so a damaged link cannot make the walk loop.
WALK_SQL = """
WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id, counted, depth) AS (
    SELECT checkpoint_id, parent_checkpoint_id, TRUE, 0 FROM checkpoints
    WHERE thread_id = %(thread)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(start)s
  UNION ALL
    SELECT c.checkpoint_id, c.parent_checkpoint_id,
           COALESCE((c.metadata -> 'counters_since_delta_snapshot') ? %(channel)s, FALSE), a.depth + 1
    FROM chain a JOIN checkpoints c
      ON c.thread_id = %(thread)s AND c.checkpoint_ns = %(ns)s AND c.checkpoint_id = a.parent_checkpoint_id
    WHERE a.counted AND a.checkpoint_id IS DISTINCT FROM %(known)s::text
      AND c.checkpoint_id COLLATE "C" < a.checkpoint_id COLLATE "C")
SELECT 0 AS kind, a.depth, a.checkpoint_id, a.counted, NULL::text AS task_id, NULL::int AS idx,
       b.type, b.blob, NULL::text AS task_path
FROM chain a
LEFT JOIN checkpoints k
  ON NOT a.counted AND k.thread_id = %(thread)s AND k.checkpoint_ns = %(ns)s AND k.checkpoint_id = a.checkpoint_id
LEFT JOIN checkpoint_blobs b
  ON b.thread_id = %(thread)s AND b.checkpoint_ns = %(ns)s AND b.channel = %(channel)s
  AND b.version = k.checkpoint -> 'channel_versions' ->> %(channel)s AND b.type <> 'empty'
UNION ALL
SELECT 1, a.depth, w.checkpoint_id, NULL, w.task_id, w.idx, w.type, w.blob, w.task_path
FROM chain a JOIN checkpoint_writes w
  ON w.thread_id = %(thread)s AND w.checkpoint_ns = %(ns)s AND w.checkpoint_id = a.checkpoint_id
  AND w.channel = %(channel)s
WHERE a.depth > 0
"""


class AniaPostgresSaver(FoldingLoader, AsyncPostgresSaver):
    """`AsyncPostgresSaver` with the history loader of checkpoints/loader.py for the channels given a reducer."""

    def __init__(self, conn: AsyncConnection[Any] | AsyncConnectionPool[Any], *, reducers: Mapping[str, Reducer],
                 serde: SerializerProtocol | None = None, cache_messages: int = CACHE_MESSAGES) -> None:
        AsyncPostgresSaver.__init__(self, conn, serde=serde)
        self._init_loader(reducers, cache_messages)

    # --- puts: LangGraph's rows and statements, serialized here rather than in a worker thread ------------
    # (a thread hop per put cost more than the few messages a step serializes; one trip per put either way)
    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        thread_id, ns = thread_key(config)
        inline, stored = _split(checkpoint["channel_values"])
        blobs = self._dump_blobs(thread_id, ns, stored, {k: v for k, v in new_versions.items() if k in stored})
        meta = get_serializable_checkpoint_metadata(config, metadata)
        row = (thread_id, ns, checkpoint["id"], config["configurable"].get("checkpoint_id"),
               Jsonb({**checkpoint, "channel_values": inline}), Jsonb(meta))
        async with self._cursor(pipeline=True) as cur:
            if blobs:
                await cur.executemany(self.UPSERT_CHECKPOINT_BLOBS_SQL, blobs)
            await cur.execute(self.UPSERT_CHECKPOINTS_SQL, row)
        self._remember_put(config, checkpoint)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        thread_id, ns = thread_key(config)
        sql = self.UPSERT_CHECKPOINT_WRITES_SQL if all(w[0] in WRITES_IDX_MAP for w in writes) \
            else self.INSERT_CHECKPOINT_WRITES_SQL  # special writes replace, the others are kept if there
        cid = str(config["configurable"]["checkpoint_id"])
        rows = self._dump_writes(thread_id, ns, cid, task_id, task_path, writes)
        async with self._cursor(pipeline=True) as cur:
            await cur.executemany(sql, rows)
        self._remember_writes(config, writes, task_id, task_path)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = await super().aget_tuple(config)
        self._remember_loaded(config, found)
        return found

    async def _walk_rows(self, thread_id: str, ns: str, start: str, known: str | None,
                         channel: str) -> tuple[list[Step], list[WriteRow]]:
        args = {"thread": thread_id, "ns": ns, "start": start, "known": known, "channel": channel}
        async with self._cursor() as cur:
            await cur.execute(WALK_SQL, args)
            found = await cur.fetchall()
        walk = sorted((r for r in found if r["kind"] == 0), key=lambda r: int(r["depth"]))
        steps: list[Step] = [(r["checkpoint_id"], bool(r["counted"]), r["type"], _bytes(r["blob"]))
                             for r in walk][1:]  # not the start itself
        writes: list[WriteRow] = [(r["checkpoint_id"], r["task_id"], int(r["idx"]), r["type"], _bytes(r["blob"]) or b"",
                                   r["task_path"] or "") for r in found if r["kind"] == 1]
        return steps, writes

    def _seed(self, channel: str, type_: str, blob: bytes) -> tuple[bool, Any]:
        """A copy is the channel's blob at the checkpoint's version of it."""
        return True, self.serde.loads_typed((type_, blob))


def _split(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """LangGraph's Postgres layout: plain values (None, text, numbers, booleans) stay in the checkpoint's
    JSON, the others go to `checkpoint_blobs` by version; a delta channel's copy leaves `true` in the JSON."""
    inline: dict[str, Any] = {}
    stored: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, _DeltaSnapshot):
            stored[key], inline[key] = value, True
        elif value is None or isinstance(value, str | int | float | bool):
            inline[key] = value
        else:
            stored[key] = value
    return inline, stored


def _bytes(value: Any) -> bytes | None:
    return bytes(value) if value is not None else None
