"""What the saver (checkpoints/saver.py) remembers of each thread, so that a turn's history load reads nothing.

A `ThreadMemo` holds the message history at one checkpoint of a thread, and since then the checkpoints
the saver stored and every write it saw them get: the history at a later checkpoint is that value with
those writes folded in, when every step in between passed through this saver. `HistoryCache` keeps one
memo per thread, the least recently used dropped first beyond a total number of messages.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Messages kept in the cache across all threads; the least recently loaded threads go first.
CACHE_MESSAGES = 100_000


@dataclass
class ThreadMemo:
    """What this saver knows of one thread without reading it: the channels' values at `checkpoint_id`,
    and since then the checkpoints it stored (child → parent) and every write it saw them get."""

    checkpoint_id: str
    values: dict[str, Any]
    parent_of: dict[str, str | None] = field(default_factory=dict)
    #: Checkpoints all of whose writes passed through this saver (stored here, or loaded with none).
    observed: set[str] = field(default_factory=set)
    #: checkpoint id → (task id, idx) → (task path, channel, value), as the writes table keys them.
    writes: dict[str, dict[tuple[str, int], tuple[str, str, Any]]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(len(v) if isinstance(v, list) else 1 for v in self.values.values()) + len(self.parent_of)

    def path_to(self, target: str) -> list[str] | None:
        """The target's ancestors back to the known checkpoint (nearest first), if all are observed."""
        path: list[str] = []
        cid = self.parent_of.get(target)
        while cid is not None and cid in self.observed and len(path) <= len(self.parent_of):
            path.append(cid)
            if cid == self.checkpoint_id:
                return path
            cid = self.parent_of.get(cid)
        return None

    def forget(self, cids: Sequence[str]) -> None:
        for cid in cids:
            self.parent_of.pop(cid, None)
            self.observed.discard(cid)
            self.writes.pop(cid, None)


class HistoryCache:
    """One `ThreadMemo` per thread, the least recently used dropped first beyond `max_items` messages."""

    def __init__(self, max_items: int = CACHE_MESSAGES) -> None:
        self.max_items = max_items
        self._entries: OrderedDict[tuple[str, str], ThreadMemo] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}
        self.size = 0

    def get(self, key: tuple[str, str]) -> ThreadMemo | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def peek(self, key: tuple[str, str]) -> ThreadMemo | None:
        return self._entries.get(key)

    def put(self, key: tuple[str, str], memo: ThreadMemo) -> None:
        self.drop(key)
        size = memo.size
        if size > self.max_items:
            return
        self._entries[key] = memo
        self._sizes[key] = size
        self.size += size
        while self.size > self.max_items:
            self.drop(next(iter(self._entries)))

    def drop(self, key: tuple[str, str]) -> None:
        if key in self._entries:
            del self._entries[key]
            self.size -= self._sizes.pop(key)

    def drop_thread(self, thread_id: str) -> None:
        for key in [k for k in self._entries if k[0] == thread_id]:
            self.drop(key)

    def __len__(self) -> int:
        return len(self._entries)
