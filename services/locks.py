"""Per-key asyncio locks that do not pile up: a key's lock is dropped when nobody holds or awaits it.

With thousands of groups, a dict of one lock per session that only grows is a leak; this map holds
only the keys in use right now.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class KeyedLocks:
    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[key]

    def busy(self, key: str) -> bool:
        return key in self._locks

    def __len__(self) -> int:
        return len(self._locks)
