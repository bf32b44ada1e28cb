"""Daily token quotas (Q1): per session and global, counted per day in `quota.timezone`.

Counters live in the app store's KV under `daily:<date>:<session>` and `daily:<date>:global`. They are kept
`KEEP_DAYS` days (the panel's usage page shows the last 30 from them: `daily`, `totals`); older ones are deleted
when a new day's first tokens are added. A turn is refused before it starts (`refusal`), and checked again
before every model call it makes, its subagents', team members' and clock runs' included (`call_refusal`):
the day's counters plus the in-flight tally, the tokens of every message still running, which each model
call adds to when it returns (`spent`). So a message that crosses the limit stops at its next model call,
and the overshoot is bounded by the calls already in flight. When the message ends, `close` moves exactly
what it put in the tally out again and adds its tokens to the day's counters once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from core.settings import QuotaSettings
from services.store import AppStore
from services.usage.limits import MessageLimits

PREFIX = "daily:"
#: Days of counters kept (today included): the usage history.
KEEP_DAYS = 31
#: A day's counters expire this long after their last write.
TTL_SEC = (KEEP_DAYS + 1) * 86400
#: Both counters in one statement (the KV's values are JSON; a number's JSON is its digits).
ADD_SQL = ("INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?), (?, ?, ?) ON CONFLICT (key) DO UPDATE "
           "SET value = CAST(CAST(kv.value AS BIGINT) + CAST(excluded.value AS BIGINT) AS TEXT), "
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
        #: The in-flight tally: tokens of messages still running, per session and in all.
        self._live: dict[str, int] = {}
        self._live_total = 0

    def day(self, at: float | None = None) -> str:
        return datetime.fromtimestamp(self._now() if at is None else at, self._zone).date().isoformat()

    def used(self, session: str) -> DayUsage:
        day = self.day()
        mine, total = _key(day, session), _key(day, "global")
        rows = self._store.query("SELECT key, value FROM kv WHERE key IN (?, ?)", [mine, total])
        found = {r["key"]: int(json.loads(r["value"])) for r in rows}
        return DayUsage(day, found.get(mine, 0), found.get(total, 0))

    def today(self) -> dict[str, int]:
        """Every counter of today: each session's tokens, and `global` for all of them."""
        day = self.day()
        rows = self._store.query(f"SELECT substr(key, 18) AS who, value FROM kv {RANGE}", _range(day, day))  # noqa: S608 - constant clause
        return {r["who"]: int(r["value"]) for r in rows}

    def open(self, session: str, user: str, *, tally: bool = True) -> MessageLimits:
        """The limits of a message from `user` (a clock run: its task's creator) in `session`."""
        exempt = self.settings.admins_exempt and bool(user) and self._is_admin(user)
        return MessageLimits(session, exempt=exempt, tally=tally)

    def call_refusal(self, limits: MessageLimits | None) -> str | None:
        """Before one model call of a running message: the refusal once the day's counters and what the
        running messages spent reach a quota (None: the call may run)."""
        s = self.settings
        if limits is None or limits.exempt or not (s.session_daily_tokens or s.global_daily_tokens):
            return None
        used = self.used(limits.session)
        mine = used.session + self._live.get(limits.session, 0)
        if s.session_daily_tokens and mine >= s.session_daily_tokens:
            return SESSION_OVER.format(used=mine, limit=s.session_daily_tokens, **self._reset())
        total = used.total + self._live_total
        if s.global_daily_tokens and total >= s.global_daily_tokens:
            return GLOBAL_OVER.format(used=total, limit=s.global_daily_tokens, **self._reset())
        return None

    def spent(self, limits: MessageLimits | None, tokens: int) -> None:
        """A model call of a running message returned: its tokens join the in-flight tally."""
        if limits is None or tokens <= 0 or not limits.tally:
            return
        if limits.closed:  # a straggler after the message was recorded: straight to the day's counters
            self.add(limits.session, tokens)
            return
        limits.live += tokens
        self._live[limits.session] = self._live.get(limits.session, 0) + tokens
        self._live_total += tokens

    def close(self, limits: MessageLimits | None, session: str, tokens: int) -> None:
        """A message ended: what it put in the tally comes out, and its tokens are added to the day's
        counters, once: `turn_usage` (which folds the same calls), or what the tally saw when more (a turn
        cut by /stop or its deadline before its subagents' tokens were folded)."""
        if limits is not None and not limits.closed:
            limits.closed = True
            tokens = max(tokens, limits.live)
            if limits.live:
                left = self._live.get(limits.session, 0) - limits.live
                if left > 0:
                    self._live[limits.session] = left
                else:
                    self._live.pop(limits.session, None)
                self._live_total -= limits.live
                limits.live = 0
        self.add(session, tokens)

    def in_flight(self, session: str | None = None) -> int:
        """Tokens of running messages not yet in the day's counters (of one session, or of all)."""
        return self._live_total if session is None else self._live.get(session, 0)

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
            first = (date.fromisoformat(day) - timedelta(days=KEEP_DAYS - 1)).isoformat()
            self.prune(first)

    def prune(self, first: str) -> int:
        """Delete the counters of days before `first` (ISO dates sort as text)."""
        return self._store.write("DELETE FROM kv WHERE key LIKE ? AND substr(key, 7, 10) < ?", [f"{PREFIX}%", first])

    def daily(self, first: str, last: str, who: str = "global") -> dict[str, int]:
        """One counter (a session's, or `global`) per day from `first` to `last` (ISO dates, both included)."""
        rows = self._store.query(f"SELECT substr(key, 7, 10) AS day, value FROM kv {RANGE} AND substr(key, 18) = ?",  # noqa: S608 - constant clause
                                 [*_range(first, last), who])
        return {r["day"]: int(r["value"]) for r in rows}

    def totals(self, first: str, last: str, limit: int) -> list[tuple[str, int]]:
        """The sessions that spent most from `first` to `last`, with their tokens, most first."""
        rows = self._store.query(
            f"SELECT substr(key, 18) AS who, SUM(CAST(value AS BIGINT)) AS tokens FROM kv {RANGE} "  # noqa: S608 - constant clause
            "AND substr(key, 18) != 'global' GROUP BY who ORDER BY tokens DESC, who LIMIT ?",
            [*_range(first, last), limit])
        return [(r["who"], int(r["tokens"])) for r in rows]

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


#: The counters of a range of days: one range of the KV's primary key (`daily:<first>:` up to `daily:<last>;`,
#: ';' sorting right after ':'); `substr(key, 18)` is the session (or `global`) after `daily:<date>:`.
RANGE = "WHERE key >= ? AND key < ?"


def _range(first: str, last: str) -> list[str]:
    return [f"{PREFIX}{first}:", f"{PREFIX}{last};"]
