"""What has been spent (the panel's usage page, `GET /api/usage`): today against the quotas, and the last days.

Today's figures are the quota's own counters (services/usage/quota.py), the ones a refusal is decided on.
Those expire after two days, so the days before come from the query log: each row's tokens, on the
day (in `quota.timezone`) its turn started. Both are summed in SQL, one pass over the rows each.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from services.store import AppStore
from services.usage.quota import Quota

#: Days the history covers, today included, and sessions the tables list.
DAYS = 30
TOP = 50


def day_starts(zone: ZoneInfo, today: date, days: int) -> list[tuple[str, float]]:
    """(ISO date, its midnight as a timestamp) for the `days` days up to today, oldest first, and the next
    midnight last (the end of today)."""
    first = today - timedelta(days=days - 1)
    return [((first + timedelta(days=i)).isoformat(),
             datetime.combine(first + timedelta(days=i), time.min, zone).timestamp()) for i in range(days + 1)]


def daily_tokens(store: AppStore, starts: list[tuple[str, float]], session: str | None = None) -> list[dict[str, Any]]:
    """Tokens and turns of the query log per day (every day listed, a quiet one with zeros)."""
    bucket = " ".join("WHEN started < ? THEN ?" for _ in starts[1:])
    args: list[Any] = [v for (_, hi), (day, _) in zip(starts[1:], starts, strict=False) for v in (hi, day)]
    where = "started >= ? AND started < ?" + (" AND session = ?" if session else "")
    args += [starts[0][1], starts[-1][1], *([session] if session else [])]
    sql = (f"SELECT CASE {bucket} END AS day, COALESCE(SUM(total_tokens), 0) AS tokens, COUNT(*) AS turns "  # noqa: S608 - constant clauses, values as ? placeholders
           f"FROM query_log WHERE {where} GROUP BY day")
    found = {r["day"]: r for r in store.query(sql, args)}
    return [{"day": day, "tokens": int(found[day]["tokens"]) if day in found else 0,
             "turns": int(found[day]["turns"]) if day in found else 0} for day, _ in starts[:-1]]


def top_sessions(store: AppStore, since: float, limit: int = TOP) -> list[dict[str, Any]]:
    """The sessions that spent most since `since`, by the query log."""
    sql = ("SELECT session, COALESCE(SUM(total_tokens), 0) AS tokens, COUNT(*) AS turns FROM query_log "
           "WHERE started >= ? GROUP BY session ORDER BY tokens DESC, session LIMIT ?")
    return [{"session": r["session"], "tokens": int(r["tokens"]), "turns": int(r["turns"])}
            for r in store.query(sql, [since, limit])]


def usage_report(quota: Quota, store: AppStore, session: str | None = None, days: int = DAYS) -> dict[str, Any]:
    """Today's counters against the quotas (every session, or one), and the last `days` days."""
    s = quota.settings
    today = quota.today()
    zone = ZoneInfo(s.timezone)
    starts = day_starts(zone, date.fromisoformat(quota.day()), days)
    chats = sorted(((k, v) for k, v in today.items() if k != "global"), key=lambda kv: (-kv[1], kv[0]))
    if session:
        chats = [(session, today.get(session, 0))]
    return {
        "day": quota.day(), "timezone": s.timezone, "session": session or None,
        "quotas": {"session_daily_tokens": s.session_daily_tokens, "global_daily_tokens": s.global_daily_tokens,
                   "admins_exempt": s.admins_exempt},
        "today": {"global": today.get("global", 0), "in_flight": quota.in_flight(session),
                  "sessions": [{"session": k, "tokens": v} for k, v in chats[:TOP]], "session_count": len(chats)},
        "days": daily_tokens(store, starts, session),
        "top_sessions": [] if session else top_sessions(store, starts[0][1]),
    }
