"""The history loader both of our savers share (SQLite: checkpoints/saver.py, Postgres: saver_pg.py).

LangGraph rebuilds a delta channel (the message history, nodes/state.py) at every `ainvoke` (each turn,
each approval resume, each recovery check): the stock loader walks back to the last full copy,
deserializing every checkpoint on the way to look for it, then replays the writes since. At turn 200
that took 51 ms, five times the stock full-snapshot saver's 10 ms. This loader:

- reads the walk from the checkpoints' metadata (LangGraph counts, per channel, the updates since its
  last copy; a checkpoint without a count is the only place a copy can be), so only a possible copy is
  deserialized, never the steps in between;
- folds the writes itself with the channel's reducer, skipping every write older than the newest
  `RemoveMessage(REMOVE_ALL)` (a compaction), whose effect the fold would throw away anyway;
- remembers the value it rebuilt for the last checkpoint it loaded of each thread (a bounded cache), and
  next time walks back only to that checkpoint: a turn then reads its own few new writes, not the
  history. Checkpoints never change once written, so a value keyed by checkpoint id stays true, also
  when other processes write to the same store (threads, forks and replays at any checkpoint included).

A backend gives the walk in one trip (`_walk_rows`) and says where a copy is (`_seed`); the rest is here.
Results are exactly what LangGraph's loader returns (tests/test_checkpoint_replay.py, test_saver_pg.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)

from checkpoints.fold import REMOVE_ALL_MESSAGES
from checkpoints.memo import CACHE_MESSAGES, HistoryCache, ThreadMemo

Reducer = Callable[[Any, Sequence[Any]], Any]
#: One step of a walk, nearest first: (checkpoint id, counted since a copy, the copy's type and bytes or None).
Step = tuple[str, bool, str | None, bytes | None]
#: One write on a walk: (checkpoint id, task id, idx, type, bytes, task path).
WriteRow = tuple[str, str, int, str, bytes, str]
_REMOVE_ALL_BYTES = REMOVE_ALL_MESSAGES.encode()
#: Checkpoints a thread's memo follows before a load; more (a run that never reloads) and it is dropped.
MAX_LINKS = 512
#: Threads whose newest checkpoint id is remembered.
MAX_NEWEST = 4096


class FoldingLoader(BaseCheckpointSaver[str]):
    """The loader above, mixed in before a LangGraph saver class (`class X(FoldingLoader, AsyncSqliteSaver)`)."""

    reducers: dict[str, Reducer]
    cache: HistoryCache
    #: Loads answered from memory, and from the store (for tests and the benchmark).
    loads: dict[str, int]
    #: The newest checkpoint this saver wrote per thread (the query log's "where the turn started" without
    #: a read); bounded, oldest thread first out.
    newest: dict[str, str]

    def _init_loader(self, reducers: Mapping[str, Reducer], cache_messages: int = CACHE_MESSAGES) -> None:
        self.reducers = dict(reducers)
        self.cache = HistoryCache(cache_messages)
        self.loads = {"memory": 0, "file": 0}
        self.newest = {}

    # --- what the backend gives -------------------------------------------------------------------------
    async def _walk_rows(self, thread_id: str, ns: str, start: str, known: str | None,
                         channel: str) -> tuple[list[Step], list[WriteRow]]:
        """The ancestors of `start` (nearest first, not `start` itself) while counted, through the first
        uncounted one (with its possible copy) or `known`; and the channel's writes on them. One trip."""
        raise NotImplementedError

    def _seed(self, channel: str, type_: str, blob: bytes) -> tuple[bool, Any]:
        """Whether the copy a walk found holds the channel's value, and the value."""
        raise NotImplementedError

    # --- what passes through: checkpoints and writes of threads whose history is known ------------------
    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)
        self.forget_thread(str(thread_id))

    def forget_thread(self, thread_id: str) -> None:
        """Drop what this saver remembers of a thread (deleted or pruned, maybe by another process)."""
        self.cache.drop_thread(thread_id)
        self.newest.pop(thread_id, None)

    def _remember_put(self, config: RunnableConfig, checkpoint: Checkpoint) -> None:
        thread, ns = thread_key(config)
        if not ns:
            self.newest.pop(thread, None)  # re-inserted last: the dict's order is the recency
            self.newest[thread] = str(checkpoint["id"])
            if len(self.newest) > MAX_NEWEST:
                del self.newest[next(iter(self.newest))]
        memo = self.cache.peek(thread_key(config))
        if memo is not None:
            cid = str(checkpoint["id"])
            memo.parent_of[cid] = config["configurable"].get("checkpoint_id")
            memo.observed.add(cid)
            if len(memo.parent_of) > MAX_LINKS:
                self.cache.drop(thread_key(config))

    def _remember_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                         task_path: str) -> None:
        memo = self.cache.peek(thread_key(config))
        if memo is None:
            return
        seen = memo.writes.setdefault(str(config["configurable"]["checkpoint_id"]), {})
        for idx, (channel, value) in enumerate(writes):
            if channel in self.reducers:
                seen.setdefault((task_id, idx), (task_path, channel, value))  # insert-or-ignore, as stored

    def _remember_loaded(self, config: RunnableConfig, found: CheckpointTuple | None) -> None:
        memo = self.cache.peek(thread_key(config)) if found is not None else None
        if found is None or memo is None:
            return
        cid = str(found.config["configurable"]["checkpoint_id"])
        stored = [w for w in found.pending_writes or () if w[1] in self.reducers]
        if len(stored) == len(memo.writes.get(cid, {})):
            memo.observed.add(cid)  # every write it has, this saver saw (none, when it was not stored here)
            parent = found.parent_config["configurable"]["checkpoint_id"] if found.parent_config else None
            memo.parent_of.setdefault(cid, parent)
        else:
            memo.observed.discard(cid)  # written by someone else: read it from the store

    # --- the history -------------------------------------------------------------------------------------
    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        channels = list(channels)
        if not channels or any(ch not in self.reducers for ch in channels):
            return await super().aget_delta_channel_history(config=config, channels=channels)
        thread_id, ns = thread_key(config)
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
        for ch in channels:
            chain: list[str] = []
            rows: list[WriteRow] = []
            seen = {target}
            start = target
            while True:  # one trip, unless an uncounted checkpoint holds no copy (the thread's first steps)
                steps, found = await self._walk_rows(thread_id, ns, start, known if known != start else None, ch)
                cut = next((i for i, r in enumerate(steps) if r[0] in seen), None)
                if cut is not None:  # a loop in the parent links: stop before it
                    steps = steps[:cut]
                on_walk = {r[0] for r in steps}
                chain += [r[0] for r in steps]
                seen.update(on_walk)
                rows += [r for r in found if r[0] in on_walk]
                if cut is not None or not steps:
                    break
                cid, counted, type_, blob = steps[-1]
                if cached is not None and cid == known and ch in cached[1]:
                    seeds[ch] = cached[1][ch]
                    break
                if counted:
                    break  # the first checkpoint of the thread
                has, value = self._seed(ch, type_, blob) if type_ is not None and blob is not None else (False, None)
                if has:
                    seeds[ch] = value
                    break
                start = cid  # no copy here after all: walk on from its parent
            writes[ch] = self._decode_writes(ch, chain, rows)
            walked += chain
        return writes, seeds, walked

    def _decode_writes(self, channel: str, chain: list[str], rows: list[WriteRow]) -> list[PendingWrite]:
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


def thread_key(config: RunnableConfig) -> tuple[str, str]:
    return str(config["configurable"]["thread_id"]), str(config["configurable"].get("checkpoint_ns", ""))


def _removes_all(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES for m in items)
