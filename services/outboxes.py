"""Where a text for a session goes: the platform adapters attached to the engine.

Several adapters can be attached at once (the terminal and OneBot, later a web panel); each says which
sessions it owns, and a text goes to the first attached adapter that owns its session. Approval prompts
to an admin's private chat and tool sends all go through here, so no adapter replaces another. An adapter
that can send images and files (OneBot) also gives `media`: what a run with no incoming message (a
scheduled task's) uses to send them as images and files instead of saving them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

#: Sends a text to a session's chat; False when it could not.
Send = Callable[[str, str], Awaitable[bool]]
Owns = Callable[[str], bool]


class Media(Protocol):
    """Sends images and files to one chat (the part of a callback bridge a platform gives for them)."""

    async def send_image(self, b64: str) -> str: ...

    async def send_file(self, name: str, b64: str) -> str: ...


#: The media sender of a session's chat.
MediaFor = Callable[[str], Media]


def every_session(session_key: str) -> bool:
    return True


@dataclass(frozen=True)
class Route:
    name: str
    send: Send
    owns: Owns
    media: MediaFor | None = None


class Outboxes:
    def __init__(self) -> None:
        self._routes: list[Route] = []

    def attach(self, name: str, send: Send, owns: Owns = every_session, media: MediaFor | None = None
               ) -> Callable[[], None]:
        """Attach an adapter; returns the function that detaches it."""
        route = Route(name, send, owns, media)
        self._routes.append(route)
        return lambda: self._routes.remove(route) if route in self._routes else None

    async def send(self, session_key: str, text: str) -> bool:
        for route in self._routes:
            if route.owns(session_key):
                return await route.send(session_key, text)
        log.info("no platform owns %s; not sent: %s", session_key, text[:200])
        return False

    def media(self, session_key: str) -> Media | None:
        """The images-and-files sender of the adapter that owns the session, if it has one."""
        for route in self._routes:
            if route.owns(session_key):
                return route.media(session_key) if route.media is not None else None
        return None
