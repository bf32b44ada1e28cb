"""Copying stored sessions from one checkpointer to another (SQLite to Postgres: `ania migrate`).

Every thread, every namespace, every checkpoint with its parent link and metadata, and every write with its
task path (the order of a step's parallel writes, which the saver API's pending writes do not carry), so
that the copy folds to the same history at every checkpoint, and forks, replays and pending approvals
work there as they did here. The source is read from its tables (SQLite), the target written through its
own `aput`/`aput_writes`, so it stores in its own format (Postgres: the copies of the history as blobs).
Checkpoint ids are kept; writing a thread twice changes nothing (the puts are upserts).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import groupby
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointMetadata
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

#: Called after each thread: its id, and the checkpoints copied so far.
Progress = Callable[[str, int], None]


async def copy_threads(src: BaseCheckpointSaver[str], dst: BaseCheckpointSaver[str],
                       progress: Progress | None = None) -> int:
    """Copy every thread of `src` into `dst`; returns the number of checkpoints copied."""
    if not isinstance(src, AsyncSqliteSaver):
        raise TypeError("copy_threads reads a SQLite checkpointer (data/checkpoints.db)")
    await src.setup()
    async with src.lock:
        threads = [str(r[0]) for r in await src.conn.execute_fetchall(
            "SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]
        columns = {str(r[1]) for r in await src.conn.execute_fetchall("PRAGMA table_info(writes)")}
    task_path = "task_path" if "task_path" in columns else "''"
    copied = 0
    for thread in threads:
        async with src.lock:
            checkpoints = list(await src.conn.execute_fetchall(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
                "FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id", (thread,)))
            writes = list(await src.conn.execute_fetchall(
                f"SELECT checkpoint_ns, checkpoint_id, task_id, {task_path}, idx, channel, type, value "  # noqa: S608 - a constant column or '', values as ? placeholders
                "FROM writes WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id, task_id, idx", (thread,)))
        for ns, _cid, parent, type_, blob, meta in checkpoints:
            checkpoint = src.serde.loads_typed((type_, blob))
            config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ns,
                                                       "checkpoint_id": parent}}
            if parent is None:
                del config["configurable"]["checkpoint_id"]
            metadata = cast(CheckpointMetadata, json.loads(meta) if meta is not None else {})
            await dst.aput(config, checkpoint, metadata, dict(checkpoint.get("channel_versions") or {}))
            copied += 1
        for (ns, cid, task_id, path), rows in groupby(writes, key=lambda r: (r[0], r[1], r[2], r[3])):
            values: list[tuple[str, Any]] = [(str(r[5]), src.serde.loads_typed((r[6], r[7]))) for r in rows]
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
            await dst.aput_writes(config, values, str(task_id), str(path or ""))
        if progress is not None:
            progress(thread, copied)
    return copied
