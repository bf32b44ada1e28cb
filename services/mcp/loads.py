"""Which MCP tools each session loaded (M2): the KV record `mcp_loaded:<session_key>` and live handles.

The record keeps, per loaded name, the tool's definition as it was loaded, so that after a restart
the session's tool list is byte-identical (the provider cache stays warm) even if the server is slow
or down. Restoring binds each name to the server's current epoch: a server that is connected serves
the call, one that is down answers with a clear error (and is retried, see MCPConnection), one that
was removed from the config says so. The tool never silently vanishes from the session.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.lru import LRU
from services.mcp.convert import RemoteDef, arg_problems, make_validator
from services.store import AppStore

KEY = "mcp_loaded:"
REMOVED = -1  # epoch of a handle whose server is gone
#: Sessions whose loads are kept in memory; older ones are read from the store again when needed.
CACHED_SESSIONS = 512


@dataclass
class Handle:
    """A tool loaded into a session: its definition and the server epoch it was loaded at (M6)."""

    d: RemoteDef
    epoch: int
    _validator: Any = field(default=None, repr=False)
    _checked: bool = field(default=False, repr=False)

    def problems(self, args: Any) -> list[str]:
        if not self._checked:
            self._validator, self._checked = make_validator(self.d.input_schema), True
        return arg_problems(self._validator, args)


class SessionLoads:
    def __init__(self, store: AppStore, current: Callable[[RemoteDef], tuple[RemoteDef, int]]) -> None:
        """`current(snapshot)` returns the live definition (or the snapshot) and the server's epoch."""
        self._store = store
        self._current = current
        self._handles: LRU[str, dict[str, Handle]] = LRU(CACHED_SESSIONS)
        #: Loads into throwaway executors (subagents, clock runs): never persisted, gone with the executor.
        self._scratch: weakref.WeakKeyDictionary[Any, dict[str, Handle]] = weakref.WeakKeyDictionary()

    def cached(self) -> int:
        """Sessions whose loads are held in memory: at most CACHED_SESSIONS (the others are read again)."""
        return len(self._handles)

    def handles(self, session_key: str) -> dict[str, Handle]:
        """The session's loaded tools, read from the store the first time the session is seen."""
        got = self._handles.get(session_key)
        if got is None:
            got = {}
            record = self._store.kv_get(KEY + session_key) or {}
            for name in sorted(record.get("tools", {})):
                try:
                    snapshot = RemoteDef.from_json(name, record["tools"][name])
                except (KeyError, TypeError):
                    continue
                d, epoch = self._current(snapshot)
                got[name] = Handle(d, epoch)
            self._handles.put(session_key, got)
        return got

    def add(self, session_key: str, handles: list[Handle], scratch: Any = None) -> None:
        """Record loads of the session (persisted), or of the throwaway executor `scratch` (not persisted)."""
        if scratch is not None:
            self._scratch[scratch] = {**self._scratch.get(scratch, {}), **{h.d.name: h for h in handles}}
            return
        mine = dict(self.handles(session_key))
        for h in handles:
            mine[h.d.name] = h
        self._handles.put(session_key, mine)
        names = sorted(mine)
        self._store.kv_set(KEY + session_key, {"names": names, "tools": {n: mine[n].d.to_json() for n in names}})

    def get(self, session_key: str, name: str, scratch: Any = None) -> Handle | None:
        if scratch is not None:
            return self._scratch.get(scratch, {}).get(name)
        return self.handles(session_key).get(name)

    def record(self, session_key: str) -> dict[str, Any]:
        return self._store.kv_get(KEY + session_key) or {}
