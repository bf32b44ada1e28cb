"""Where a text for a session goes: the platform adapters attached to the engine.

Several adapters can be attached at once (the terminal and OneBot, later a web panel); each says which
sessions it owns, and a text goes to the first attached adapter that owns its session. Approval prompts
to an admin's private chat and tool sends all go through here, so no adapter replaces another.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: Sends a text to a session's chat; False when it could not.
Send = Callable[[str, str], Awaitable[bool]]
Owns = Callable[[str], bool]


def every_session(session_key: str) -> bool:
    return True


@dataclass(frozen=True)
class Route:
    name: str
    send: Send
    owns: Owns


class Outboxes:
    def __init__(self) -> None:
        self._routes: list[Route] = []

    def attach(self, name: str, send: Send, owns: Owns = every_session) -> Callable[[], None]:
        """Attach an adapter; returns the function that detaches it."""
        route = Route(name, send, owns)
        self._routes.append(route)
        return lambda: self._routes.remove(route) if route in self._routes else None

    async def send(self, session_key: str, text: str) -> bool:
        for route in self._routes:
            if route.owns(session_key):
                return await route.send(session_key, text)
        log.info("no platform owns %s; not sent: %s", session_key, text[:200])
        return False
