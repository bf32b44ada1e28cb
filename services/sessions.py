"""Per-session live objects that must outlive one turn but are not graph state: the session executor.

Restorers (e.g. the MCP manager re-loading a session's lazily loaded tools after a restart) are
called once when a session's executor is first created in this process.
"""

from __future__ import annotations

from typing import Callable

from tools.executor import SessionExecutor, SharedExecutor

Restorer = Callable[[str, SessionExecutor], None]


class SessionRegistry:
    def __init__(self, shared: SharedExecutor) -> None:
        self.shared = shared
        self._executors: dict[str, SessionExecutor] = {}
        self._restorers: list[Restorer] = []
        self._started: set[str] = set()

    def add_restorer(self, fn: Restorer) -> None:
        self._restorers.append(fn)

    def executor(self, session_key: str) -> SessionExecutor:
        ex = self._executors.get(session_key)
        if ex is None:
            ex = self._executors[session_key] = SessionExecutor(self.shared)
            for fn in self._restorers:
                fn(session_key, ex)
        return ex

    def first_turn(self, session_key: str) -> bool:
        """True once per session and process: SessionStart hooks fire when a session is (re)created."""
        if session_key in self._started:
            return False
        self._started.add(session_key)
        return True

    def fresh(self) -> SessionExecutor:
        """A throwaway executor (subagents, clock runs): shared tools only, nothing persisted."""
        return SessionExecutor(self.shared)

    def owns(self, session_key: str, executor: SessionExecutor) -> bool:
        """Whether `executor` is the session's own (persisted loads) rather than a throwaway one."""
        return self._executors.get(session_key) is executor
