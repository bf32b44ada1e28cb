"""Plan mode per session (G2), kept in the app store so it survives a restart."""

from __future__ import annotations

from services.store import AppStore


class PlanMode:
    def __init__(self, store: AppStore) -> None:
        self._store = store

    def is_on(self, session_key: str) -> bool:
        return bool(self._store.kv_get(f"plan:{session_key}", False))

    def set(self, session_key: str, on: bool) -> None:
        if on:
            self._store.kv_set(f"plan:{session_key}", True)
        else:
            self._store.kv_delete(f"plan:{session_key}")
