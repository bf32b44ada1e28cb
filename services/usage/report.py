"""What has been spent (the panel's usage page, `GET /api/usage`): today against the quotas, and the last days.

Every figure is the quota's own counters (services/usage/quota.py, kept `KEEP_DAYS` days): the ones a
refusal is decided on, written once per message whatever the query log's setting, and read in one range
of the KV's key, so the page costs the same at 100 rows as at 100,000.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from services.usage.quota import Quota

#: Days the history covers, today included, and sessions the tables list.
DAYS = 30
TOP = 50
GLOBAL = "global"


def usage_report(quota: Quota, session: str | None = None, days: int = DAYS) -> dict[str, Any]:
    """Today's counters against the quotas (every session, or one), and the last `days` days."""
    s = quota.settings
    today = quota.day()
    first = (date.fromisoformat(today) - timedelta(days=days - 1)).isoformat()
    now = quota.today()
    chats = sorted(((k, v) for k, v in now.items() if k != GLOBAL), key=lambda kv: (-kv[1], kv[0]))
    if session:
        chats = [(session, now.get(session, 0))]
    counted = quota.daily(first, today, session or GLOBAL)
    per_day = [(date.fromisoformat(first) + timedelta(days=i)).isoformat() for i in range(days)]
    return {
        "day": today, "timezone": s.timezone, "session": session or None,
        "quotas": {"session_daily_tokens": s.session_daily_tokens, "global_daily_tokens": s.global_daily_tokens,
                   "admins_exempt": s.admins_exempt},
        "today": {"global": now.get(GLOBAL, 0), "in_flight": quota.in_flight(session),
                  "sessions": [{"session": k, "tokens": v} for k, v in chats[:TOP]], "session_count": len(chats)},
        "days": [{"day": d, "tokens": counted.get(d, 0)} for d in per_day],
        "top_sessions": [] if session else [{"session": k, "tokens": v} for k, v in quota.totals(first, today, TOP)],
    }
