"""A thread-safe token-usage accumulator (Q2).

Team members run concurrently and each adds its usage when it ends; the tool call that started them
reads the sum once, after all of them are done. Counters are the same keys as the graph's usage
channels (`nodes/state.py`: input, output, total tokens and model requests).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping


class UsageMeter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, int] = {}

    def add(self, usage: Mapping[str, int] | None) -> None:
        if not usage:
            return
        with self._lock:
            for key, value in usage.items():
                self._totals[key] = self._totals.get(key, 0) + int(value)

    def total(self) -> dict[str, int]:
        """A copy of the sums so far ({} when nothing was spent)."""
        with self._lock:
            return {k: v for k, v in self._totals.items() if v}
