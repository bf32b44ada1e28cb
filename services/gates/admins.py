"""Who is an admin: the ids in `bot.admins`, plus local users the runtime vouches for.

The terminal's own user and Studio act as admins without being written into the settings: they are
given to the constructor by the composition root, and the settings stay as loaded (frozen).
"""

from __future__ import annotations

from collections.abc import Iterable

from core.settings import Settings


class Admins:
    def __init__(self, settings: Settings, local: Iterable[str] = ()) -> None:
        self._configured = tuple(settings.bot.admins)
        self._ids = frozenset(self._configured) | frozenset(local)

    def is_admin(self, user_id: str | None) -> bool:
        return bool(user_id) and user_id in self._ids

    def ids(self) -> list[str]:
        """Every admin, sorted (approval prompts go to the first one other than the requester)."""
        return sorted(self._ids)
