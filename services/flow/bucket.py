"""Per-member token buckets and once-per-window notices (F2), keyed by (chat, member).

The state is bounded: a bucket that has refilled is the same as a new one, and a notice whose window has
passed is the same as none, so both are pruned when the map grows (thousands of groups, each with its
members, must not become a leak). The clock is injectable: tests drive it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Above this many keys, the idle ones are pruned.
PRUNE_AT = 4096

Clock = Callable[[], float]


class Buckets:
    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._state: dict[tuple[str, str], tuple[float, float]] = {}  # key → (tokens, when)

    def take(self, key: tuple[str, str], rate_per_sec: float, burst: int) -> bool:
        """One token for `key` when it has one (refilled at `rate_per_sec` up to `burst`)."""
        now = self._clock()
        tokens, when = self._state.get(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - when) * rate_per_sec)
        ok = tokens >= 1.0
        self._state[key] = (tokens - 1.0 if ok else tokens, now)
        if len(self._state) > PRUNE_AT:
            self._state = {k: (t, w) for k, (t, w) in self._state.items()
                           if t + (now - w) * rate_per_sec < burst}
        return ok

    def __len__(self) -> int:
        return len(self._state)


class Notices:
    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}

    def due(self, key: tuple[str, str], window_sec: float) -> bool:
        """True at most once per `window_sec` for `key` (and then the window starts)."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < window_sec:
            return False
        self._last[key] = now
        if len(self._last) > PRUNE_AT:
            self._last = {k: t for k, t in self._last.items() if now - t < window_sec}
        return True

    def __len__(self) -> int:
        return len(self._last)
