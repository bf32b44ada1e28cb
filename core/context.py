"""The run context as the bottom layer sees it: a protocol, so the tool base can be typed over it.

The run context itself (`services.context.RunContext`, layer 1) carries the services, so it cannot live here;
it satisfies this protocol structurally. A tool is generic over the context it needs (`Tool[Params, RunContext]`
for the built-ins); the registry only passes the context through, so it needs no more than this.
"""

from __future__ import annotations

import re
from typing import Protocol

#: A conversation's key: `g:<group id>` (a group) or `f:<user id>` (a private chat).
SESSION_KEY = re.compile(r"[fg]:\S+")


def is_session_key(text: str) -> bool:
    return SESSION_KEY.fullmatch(text) is not None


class ToolContext(Protocol):
    """What any run context offers: whose conversation, who asked, whether they are an admin, time left."""

    @property
    def session_key(self) -> str:
        """The conversation: `g:<group>` or `f:<user>`."""
        ...

    @property
    def requester(self) -> str:
        """The user whose message started the run; "" when nobody did (a clock run, a subagent)."""
        ...

    def is_admin(self, user_id: str | None = None) -> bool:
        """Whether the requester (or the given user) is an admin."""
        ...

    def remaining(self) -> float | None:
        """Seconds left of the run's time budget; None without a budget."""
        ...
