"""Daily token quotas (Q1): per session and global, counted per day in `quota.timezone`.

Counters live in the app store's KV under `daily:<date>:<session>` and `daily:<date>:global`, each
expiring two days after it was last written; rows of past days are deleted when a new day's first
tokens are added. The check is loose, as the seed has it: a turn is checked before its first model
call and its tokens are added when it ends, so turns running at the same time may together go past
the limit by one turn each, and a turn that crosses the limit mid-way finishes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from services.config import QuotaSettings
from services.store import AppStore

PREFIX = "daily:"
#: A day's counters are kept this long after their last write (they are read only on their own day).
TTL_SEC = 2 * 86400
#: Both counters in one statement (the KV's values are JSON; a number's JSON is its digits).
ADD_SQL = ("INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?), (?, ?, ?) ON CONFLICT (key) DO UPDATE "
           "SET value = CAST(CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER) AS TEXT), "
           "expires_at = excluded.expires_at")
SESSION_OVER = ("This chat has used its daily token quota ({used:,} of {limit:,} tokens), so I will not answer "
                "until it resets at {reset} ({zone}, in {left}).")
GLOBAL_OVER = ("The bot has used its daily token quota for all chats ({used:,} of {limit:,} tokens), so I will "
               "not answer until it resets at {reset} ({zone}, in {left}).")


@dataclass(frozen=True)
class DayUsage:
    day: str
    session: int
    total: int


class Quota:
    def __init__(self, settings: QuotaSettings, store: AppStore, is_admin: Callable[[str], bool],
                 now: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._store = store
        self._is_admin = is_admin
        self._now = now
        self._zone = ZoneInfo(settings.timezone)
        self._pruned_day = ""

    def day(self, at: float | None = None) -> str:
        return datetime.fromtimestamp(self._now() if at is None else at, self._zone).date().isoformat()

    def used(self, session: str) -> DayUsage:
        day = self.day()
        mine, total = _key(day, session), _key(day, "global")
        rows = self._store.query("SELECT key, value FROM kv WHERE key IN (?, ?)", [mine, total])
        found = {r["key"]: int(json.loads(r["value"])) for r in rows}
        return DayUsage(day, found.get(mine, 0), found.get(total, 0))

    def refusal(self, session: str, user: str) -> str | None:
        """The reply that refuses a turn over its quota, or None when it may run (checked before any model call)."""
        s = self.settings
        if not (s.session_daily_tokens or s.global_daily_tokens):
            return None
        if s.admins_exempt and self._is_admin(user):
            return None
        used = self.used(session)
        if s.session_daily_tokens and used.session >= s.session_daily_tokens:
            return SESSION_OVER.format(used=used.session, limit=s.session_daily_tokens, **self._reset())
        if s.global_daily_tokens and used.total >= s.global_daily_tokens:
            return GLOBAL_OVER.format(used=used.total, limit=s.global_daily_tokens, **self._reset())
        return None

    def add(self, session: str, tokens: int) -> None:
        """Count a finished turn's tokens (its model calls, subagents, compaction), once."""
        if tokens <= 0:
            return
        day = self.day()
        expires = self._now() + TTL_SEC
        self._store.write(ADD_SQL, [_key(day, session), str(tokens), expires,
                                    _key(day, "global"), str(tokens), expires])
        if day != self._pruned_day:
            self._pruned_day = day
            self.prune(day)

    def prune(self, today: str) -> int:
        """Delete the counters of days before `today` (ISO dates sort as text)."""
        return self._store.write("DELETE FROM kv WHERE key LIKE ? AND substr(key, 7, 10) < ?", [f"{PREFIX}%", today])

    def _reset(self) -> dict[str, str]:
        now = datetime.fromtimestamp(self._now(), self._zone)
        midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), self._zone)
        minutes = max(1, int((midnight - now).total_seconds() // 60))
        left = f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
        return {"reset": midnight.strftime("%Y-%m-%d %H:%M"), "zone": self.settings.timezone, "left": left}

    def describe(self, session: str) -> str:
        """The `/usage` lines about today."""
        s, used = self.settings, self.used(session)

        def of(n: int, limit: int) -> str:
            return f"{n:,} of {limit:,} tokens" if limit else f"{n:,} tokens (no limit)"

        return (f"Today ({used.day}, {s.timezone}): this chat {of(used.session, s.session_daily_tokens)}; "
                f"all chats {of(used.total, s.global_daily_tokens)}.")


def _key(day: str, who: str) -> str:
    return f"{PREFIX}{day}:{who}"
