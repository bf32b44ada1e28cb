"""The main session's todo list (G7) in the app store KV, and the `<todo_reminder>` that shows it.

Keys: `todo:<session_key>` holds the list; `todo_hash:<session_key>` the content hash of the list as it
was when it was last shown in a reminder. A reminder is produced only when the list has unfinished
items and changed since the last one, so an unchanged list costs no tokens turn after turn. The
reminder text has no timestamps: the same list always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, Field

from services.store import AppStore
from services.unicode_safe import scrub

TodoStatus = Literal["pending", "in_progress", "completed"]
UNFINISHED: tuple[str, ...] = ("pending", "in_progress")

REMINDER_HEAD = "Your todo list (keep it current with todo_write; mark items completed as soon as they are done):"


class TodoItem(BaseModel):
    content: str = Field(description="What to do, as a short imperative sentence, e.g. `Run the tests`.")
    status: TodoStatus = Field(
        description="pending (not started), in_progress (being worked on now; at most one item) "
        "or completed (done)."
    )


def content_hash(items: list[TodoItem]) -> str:
    """sha256 of a canonical JSON form of the list (order matters)."""
    canonical = json.dumps(
        [item.model_dump() for item in items], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def render(items: list[TodoItem]) -> str:
    lines = [f"{n}. [{item.status}] {item.content}" for n, item in enumerate(items, 1)]
    return "<todo_reminder>\n" + REMINDER_HEAD + "\n" + "\n".join(lines) + "\n</todo_reminder>"


class TodoStore:
    def __init__(self, store: AppStore) -> None:
        self.store = store

    @staticmethod
    def _key(session: str) -> str:
        return f"todo:{session}"

    @staticmethod
    def _hash_key(session: str) -> str:
        return f"todo_hash:{session}"

    def get(self, session: str) -> list[TodoItem]:
        # scrub: a list stored before lone surrogates were refused must not break the session's reminders
        return [TodoItem.model_validate(scrub(d)) for d in self.store.kv_get(self._key(session), [])]

    def replace(self, session: str, items: list[TodoItem]) -> None:
        """The whole list is replaced; an empty list deletes it."""
        if items:
            self.store.kv_set(self._key(session), [scrub(item.model_dump()) for item in items])
        else:
            self.store.kv_delete(self._key(session))

    def reminder(self, session: str) -> str | None:
        """The reminder text when the list has unfinished items and changed since the last reminder."""
        items = self.get(session)
        if not any(item.status in UNFINISHED for item in items):
            self.store.kv_delete(self._hash_key(session))
            return None
        digest = content_hash(items)
        if self.store.kv_get(self._hash_key(session)) == digest:
            return None
        self.store.kv_set(self._hash_key(session), digest)
        return render(items)
