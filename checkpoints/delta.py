"""The message channel's storage: deltas, with full snapshots spaced in proportion to the history.

LangGraph's `DeltaChannel` stores each step's new messages and, every `snapshot_frequency` updates, a
full copy of the history. A fixed cadence makes the file grow with the square of the conversation: the
copies get longer while they come just as often (1.4 MB at 50 turns, 37 MB at 500). `GrowingDeltaChannel`
waits for about half as many updates as the history has messages before the next copy, so the copies
double in length at most as often as the history doubles: all copies together stay under twice the
history, and the file grows linearly. Reading a thread cold costs the last copy plus the deltas since,
about one history's worth of messages, as with a full snapshot. (LangGraph also forces a copy after 5,000
steps without one, whatever the cadence.) Warm reads come from the saver's cache (checkpoints/saver.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

from langgraph.channels.delta import DeltaChannel

#: Updates between copies while the history is short, and history messages per update of spacing.
MIN_UPDATES = 50
MESSAGES_PER_UPDATE = 2


class GrowingDeltaChannel(DeltaChannel[Any]):
    """A `DeltaChannel` whose snapshot spacing grows with its value (see the module docstring)."""

    __slots__ = ("_min_updates",)

    def __init__(self, reducer: Callable[[Any, Sequence[Any]], Any], typ: type[Any] | None = None, *,
                 snapshot_frequency: int = MIN_UPDATES) -> None:
        self._min_updates = snapshot_frequency
        super().__init__(reducer, typ, snapshot_frequency=snapshot_frequency)

    @property
    def snapshot_frequency(self) -> int:
        value = getattr(self, "value", None)
        size = len(value) if isinstance(value, list) else 0
        return max(self._min_updates, size // MESSAGES_PER_UPDATE)

    @snapshot_frequency.setter
    def snapshot_frequency(self, value: int) -> None:
        pass  # the spacing is computed; the minimum is set once, in __init__

    def copy(self) -> Self:
        new = super().copy()
        new._min_updates = self._min_updates
        return new

    def from_checkpoint(self, checkpoint: Any) -> Self:
        new = super().from_checkpoint(checkpoint)
        new._min_updates = self._min_updates
        return new
