"""Per-session live state that outlives one turn but is not graph state: the session's tool executor, and
whether SessionStart has fired and whether its last turn ended cleanly in this process.

Bounded: only the `max_sessions` most recently used sessions are kept. An evicted session is rebuilt on
demand (its executor from the shared tools plus the restorers, e.g. MCP tools it loaded, kept in the
store); for it SessionStart fires again (the session is "re-created", as the seed puts it) and its next
turn checks the checkpoint for a dangling step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.registry import SessionExecutor, SharedExecutor
from services.lru import LRU

Restorer = Callable[[str, SessionExecutor], None]
MAX_SESSIONS = 1024


@dataclass
class SessionState:
    executor: SessionExecutor
    started: bool = False  # SessionStart fired for it in this process
    clean: bool = False  # its last turn ended cleanly: nothing dangling to settle


class SessionRegistry:
    def __init__(self, shared: SharedExecutor, max_sessions: int = MAX_SESSIONS) -> None:
        self.shared = shared
        self._states: LRU[str, SessionState] = LRU(max_sessions)
        self._restorers: list[Restorer] = []

    def add_restorer(self, fn: Restorer) -> None:
        self._restorers.append(fn)

    def state(self, session_key: str) -> SessionState:
        st = self._states.get(session_key)
        if st is None:
            ex = SessionExecutor(self.shared, owner=session_key)
            for fn in self._restorers:
                fn(session_key, ex)
            st = self._states.put(session_key, SessionState(ex))
        return st

    def executor(self, session_key: str) -> SessionExecutor:
        return self.state(session_key).executor

    def first_turn(self, session_key: str) -> bool:
        """True once per session while it stays in memory: SessionStart hooks fire when a session is (re)created."""
        st = self.state(session_key)
        first, st.started = not st.started, True
        return first

    def fresh(self) -> SessionExecutor:
        """A throwaway executor (subagents, clock runs): shared tools only, nothing persisted."""
        return SessionExecutor(self.shared)

    def __len__(self) -> int:
        return len(self._states)
