"""Times as people type them, for `ania logs`, `ania sessions prune` and the panel's filters: a duration
(`90s`, `30m`, `2h`, `7d`, `2w`) or a local date/time (`2026-11-30`, `2026-11-30T14:00`). A bad one is a
ValueError whose text says what is accepted."""

from __future__ import annotations

import re
import time
from datetime import datetime

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
UNIT_SEC = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """`90s`, `30m`, `2h`, `7d`, `2w` → seconds."""
    found = DURATION.match(text)
    if not found:
        raise ValueError(f"{text!r} is not a duration: use a number and a unit s, m, h, d or w, e.g. 30m, 2h or 30d")
    return float(found.group(1)) * UNIT_SEC[found.group(2)]


def parse_when(text: str, now: float | None = None) -> float:
    """A duration back from now (`2h`) or a local date/time → a timestamp."""
    try:
        return (time.time() if now is None else now) - parse_duration(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"{text!r} is neither a duration (2h, 30m, 7d) nor a date or time "
                         "(2026-11-30, 2026-11-30T14:00)") from None
