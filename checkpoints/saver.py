"""The SQLite checkpointer, with a history loader that does not grow with every load.

LangGraph rebuilds a delta channel (the message history, nodes/state.py) at every `ainvoke` (each turn,
each approval resume, each recovery check): the stock loader walks back to the last full copy,
deserializing every checkpoint on the way to look for it, then replays the writes since. At turn 200
that took 51 ms, five times the stock full-snapshot saver's 10 ms. This saver:

- reads the walk from the checkpoints' metadata (LangGraph counts, per channel, the updates since its
  last copy; a checkpoint without a count is the only place a copy can be), so only a possible copy is
  deserialized, never the steps in between;
- folds the writes itself with the channel's reducer, skipping every write older than the newest
  `RemoveMessage(REMOVE_ALL)` (a compaction), whose effect the fold would throw away anyway;
- remembers the value it rebuilt for the last checkpoint it loaded of each thread (a bounded cache), and
  next time walks back only to that checkpoint: a turn then reads its own few new writes, not the
  history. Checkpoints never change once written, so a value keyed by checkpoint id stays true, also
  when other processes write to the same file (threads, forks and replays at any checkpoint included).

Results are exactly what LangGraph's loader returns; tests/test_checkpoint_replay.py checks every
checkpoint of long sessions, across copies, compactions and forks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import aiosqlite
from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes

from checkpoints.fold import REMOVE_ALL_MESSAGES
from checkpoints.memo import CACHE_MESSAGES, HistoryCache, ThreadMemo

Reducer = Callable[[Any, Sequence[Any]], Any]

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
_REMOVE_ALL_BYTES = REMOVE_ALL_MESSAGES.encode()
#: Checkpoints a thread's memo follows before a load; more (a run that never reloads) and it is dropped.
MAX_LINKS = 512
#: Threads whose newest checkpoint id is remembered.
MAX_NEWEST = 4096


class AniaSqliteSaver(AsyncSqliteSaver):
    """`AsyncSqliteSaver` with the history loader above for the channels whose reducer it is given."""

    def __init__(self, conn: aiosqlite.Connection, *, reducers: Mapping[str, Reducer],
                 serde: SerializerProtocol | None = None, cache_messages: int = CACHE_MESSAGES) -> None:
        super().__init__(conn, serde=serde)
        self.reducers = dict(reducers)
        self.cache = HistoryCache(cache_messages)
        #: Loads answered from memory, and from the file (for tests and the benchmark).
        self.loads = {"memory": 0, "file": 0}
        #: The newest checkpoint this saver wrote per thread (the query log's "where the turn started"
        #: without a read); bounded, oldest thread first out.
        self.newest: dict[str, str] = {}

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)
        self.forget_thread(str(thread_id))

    def forget_thread(self, thread_id: str) -> None:
        """Drop what this saver remembers of a thread (deleted or pruned, maybe by another process)."""
        self.cache.drop_thread(thread_id)
        self.newest.pop(thread_id, None)

    # --- what passes through: checkpoints and writes of threads whose history is known ------------------
    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        if not self.autocommit:
            out = await super().aput(config, checkpoint, metadata, new_versions)
        else:
            await self.setup()
            thread_id, ns = _key(config)
            type_, blob = self.serde.dumps_typed(checkpoint)
            meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
            async with self.lock:  # one statement, committed by itself: one trip to the connection's thread
                await self.conn.execute(PUT_SQL, (thread_id, ns, checkpoint["id"],
                                                  config["configurable"].get("checkpoint_id"), type_, blob, meta))
            out = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}
        thread, ns = _key(config)
        if not ns:
            self.newest.pop(thread, None)  # re-inserted last: the dict's order is the recency
            self.newest[thread] = str(checkpoint["id"])
            if len(self.newest) > MAX_NEWEST:
                del self.newest[next(iter(self.newest))]
        memo = self.cache.peek(_key(config))
        if memo is not None:
            cid = str(checkpoint["id"])
            memo.parent_of[cid] = config["configurable"].get("checkpoint_id")
            memo.observed.add(cid)
            if len(memo.parent_of) > MAX_LINKS:
                self.cache.drop(_key(config))
        return out

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        if not self.autocommit or not writes:
            await super().aput_writes(config, writes, task_id, task_path)
        else:
            await self.setup()
            thread_id, ns = _key(config)
            cid = str(config["configurable"]["checkpoint_id"])
            verb = "REPLACE" if all(w[0] in WRITES_IDX_MAP for w in writes) else "IGNORE"
            rows = [(thread_id, ns, cid, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel,
                     *self.serde.dumps_typed(value)) for idx, (channel, value) in enumerate(writes)]
            sql = (f"INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, "  # noqa: S608 - `verb` is REPLACE or IGNORE, values as ? placeholders
                   f"idx, channel, type, value) VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(rows)))
            async with self.lock:  # all of a task's writes in one statement: atomic, one trip
                await self.conn.execute(sql, [v for row in rows for v in row])
        memo = self.cache.peek(_key(config))
        if memo is None:
            return
        seen = memo.writes.setdefault(str(config["configurable"]["checkpoint_id"]), {})
        for idx, (channel, value) in enumerate(writes):
            if channel in self.reducers:
                seen.setdefault((task_id, idx), (task_path, channel, value))  # INSERT OR IGNORE, as stored

    async def _get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """LangGraph's `aget_tuple` (the checkpoint and its pending writes) in one query, one trip."""
        await self.setup()
        thread_id, ns = _key(config)
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
        memo = self.cache.peek(_key(config)) if found is not None else None
        if found is not None and memo is not None:
            cid = str(found.config["configurable"]["checkpoint_id"])
            stored = [w for w in found.pending_writes or () if w[1] in self.reducers]
            if len(stored) == len(memo.writes.get(cid, {})):
                memo.observed.add(cid)  # every write it has, this saver saw (none, when it was not stored here)
                parent = found.parent_config["configurable"]["checkpoint_id"] if found.parent_config else None
                memo.parent_of.setdefault(cid, parent)
            else:
                memo.observed.discard(cid)  # written by someone else: read it from the file
        return found

    # --- the history -------------------------------------------------------------------------------------
    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        channels = list(channels)
        if not channels or any(ch not in self.reducers for ch in channels):
            return await super().aget_delta_channel_history(config=config, channels=channels)
        await self.setup()
        thread_id, ns = _key(config)
        target = get_checkpoint_id(config)
        if not target:
            found = await self.aget_tuple(config)
            if found is None:
                return {ch: {"writes": []} for ch in channels}
            target = str(found.config["configurable"]["checkpoint_id"])
        memo = self.cache.get((thread_id, ns))
        if memo is not None and not all(ch in memo.values for ch in channels):
            memo = None
        values = self._from_memory(memo, target, channels) if memo is not None else None
        if values is None:
            self.loads["file"] += 1
            cached = (memo.checkpoint_id, memo.values) if memo is not None else None
            writes, seeds, walked = await self._walk(thread_id, ns, target, channels, cached)
            values = {ch: self._fold(ch, seeds.get(ch), writes[ch]) for ch in channels}
            if memo is not None:
                memo.forget(walked)
        else:
            self.loads["memory"] += 1
        new = memo if memo is not None else ThreadMemo(target, values)
        new.checkpoint_id, new.values = target, values
        self.cache.put((thread_id, ns), new)
        return {ch: {"seed": list(v) if isinstance(v, list) else v, "writes": []} for ch, v in values.items()}

    def _from_memory(self, memo: ThreadMemo, target: str, channels: list[str]) -> dict[str, Any] | None:
        """The values at `target` from the memo alone, when every step since its checkpoint passed through here."""
        if memo.checkpoint_id == target:
            return dict(memo.values)
        path = memo.path_to(target)
        if path is None:
            return None
        ordered: list[tuple[str, str, Any]] = []
        for cid in reversed(path):  # oldest first; within a checkpoint in the stored order
            rows = memo.writes.get(cid, {})
            for (task_id, _idx), (_path, channel, value) in sorted(
                    rows.items(), key=lambda r: writes_sort_key(r[1][0], r[0][0], r[0][1])):
                ordered.append((task_id, channel, value))
        values = {ch: self._fold(ch, memo.values[ch], [w for w in ordered if w[1] == ch]) for ch in channels}
        memo.forget(path)
        return values

    async def _walk(self, thread_id: str, ns: str, target: str, channels: list[str],
                    cached: tuple[str, dict[str, Any]] | None
                    ) -> tuple[dict[str, list[PendingWrite]], dict[str, Any], list[str]]:
        """Each channel's writes from its seed to the target's parent (oldest first), the seeds, and the
        checkpoints walked."""
        writes: dict[str, list[PendingWrite]] = {}
        walked: list[str] = []
        seeds: dict[str, Any] = {}
        known = cached[0] if cached is not None else None
        sql = WALK_SQL.format(task_path="w.task_path" if self._has_task_path else "''")
        for ch in channels:
            chain: list[str] = []
            rows: list[tuple[Any, ...]] = []  # (checkpoint id, task id, idx, type, value, task path)
            seen = {target}
            start = target
            while True:  # one trip, unless an uncounted checkpoint holds no copy (the thread's first steps)
                async with self.lock:
                    found = await self.conn.execute_fetchall(
                        sql, (thread_id, ns, start, known if known != start else None,
                              f'$.counters_since_delta_snapshot."{ch}"', ch))
                walk = sorted((r for r in found if r[0] == 0), key=lambda r: r[1])  # nearest first
                steps = [r[2:6] for r in walk][1:]  # the start's own writes and values are not history
                cut = next((i for i, r in enumerate(steps) if r[0] in seen), None)
                if cut is not None:  # a loop in the parent links: stop before it
                    steps = steps[:cut]
                on_walk = {r[0] for r in steps}
                chain += [r[0] for r in steps]
                seen.update(on_walk)
                rows += [r[2:] for r in found if r[0] == 1 and r[2] in on_walk]
                if cut is not None or not steps:
                    break
                cid, counted, type_, blob = steps[-1]
                if cached is not None and cid == known and ch in cached[1]:
                    seeds[ch] = cached[1][ch]
                    break
                if counted:
                    break  # the first checkpoint of the thread
                stored = self.serde.loads_typed((type_, blob)) if blob is not None else {}
                values = stored.get("channel_values") or {}
                if ch in values:
                    seeds[ch] = values[ch]
                    break
                start = cid  # no copy here after all: walk on from its parent
            writes[ch] = self._decode_writes(ch, chain, rows)
            walked += chain
        return writes, seeds, walked

    def _decode_writes(self, channel: str, chain: list[str], rows: list[tuple[Any, ...]]) -> list[PendingWrite]:
        """The channel's writes along `chain` (nearest first), oldest first, from the newest REMOVE_ALL on."""
        order = {cid: i for i, cid in enumerate(reversed(chain))}  # oldest first
        rows.sort(key=lambda r: (order[r[0]], writes_sort_key(r[5], r[1], r[2])))
        start = 0
        for i in range(len(rows) - 1, -1, -1):
            typ, blob = rows[i][3], rows[i][4]
            maybe = isinstance(blob, bytes) and _REMOVE_ALL_BYTES in blob
            if maybe and _removes_all(self.serde.loads_typed((typ, blob))):
                start = i
                break
        return [(r[1], channel, self.serde.loads_typed((r[3], r[4]))) for r in rows[start:]]

    def _fold(self, channel: str, seed: Any, writes: list[PendingWrite]) -> Any:
        """The channel's value: the seed, then the writes, exactly as LangGraph's DeltaChannel replays them."""
        ch: DeltaChannel[Any] = DeltaChannel(self.reducers[channel])
        ch.key = channel
        if writes and _removes_all(writes[0][2]):
            seed = None  # the first write drops whatever came before it
        ch = ch.from_checkpoint(seed)  # None: start empty
        ch.replay_writes(writes)
        return ch.value


def _key(config: RunnableConfig) -> tuple[str, str]:
    return str(config["configurable"]["thread_id"]), str(config["configurable"].get("checkpoint_ns", ""))


def _removes_all(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES for m in items)
