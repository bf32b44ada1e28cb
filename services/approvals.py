"""Asking people to approve tool calls in the chat (G3, G4, G5).

The gate graph pauses a call with an interrupt; the runtime hands each interrupt to `ask`, which
prompts in the chat and waits for a reply or the timeout. Replies are taken at message entry
(`take_reply`) before anything else. A session's approvals are asked one at a time; the wait holds
no lock that other tools need to send text (G5): sibling branches have already run by then.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from services.config import Settings

ALLOW_WORDS = ("allow", "yes", "允许", "同意")
DENY_WORDS = ("deny", "no", "拒绝")
_WORD = re.compile(r"^\s*([a-z]+|[\u4e00-\u9fff]+)\s*[.!。！]?\s*$", re.IGNORECASE)

NOT_ALLOWED = "You cannot answer this approval: {why}"
TIMED_OUT = "timed out after {sec:g} s"

#: Sends a prompt to a session (the runtime's platform); returns False when it could not.
Notify = Callable[[str, str], Awaitable[bool]]


def parse_reply(text: str) -> str | None:
    """'allow' / 'deny' for an approval word, else None (the message is an ordinary one)."""
    m = _WORD.match(text)
    if not m:
        return None
    word = m.group(1).lower()
    if word in ALLOW_WORDS:
        return "allow"
    if word in DENY_WORDS:
        return "deny"
    return None


@dataclass
class Pending:
    request: dict[str, Any]
    future: asyncio.Future
    places: tuple[str, ...] = field(default_factory=tuple)


class Approvals:
    def __init__(self, settings: Settings, notify: Notify, *, timeout_sec: float | None = None) -> None:
        self._settings = settings
        self._notify = notify
        #: Overrides the clamped `approval.timeout_sec` (tests use a short one).
        self._timeout = timeout_sec
        self._pending: dict[str, Pending] = {}  # session key (or admin chat) → the open question
        self._locks: dict[str, asyncio.Lock] = {}

    def may_answer(self, request: dict[str, Any], user_id: str) -> str | None:
        """None when `user_id` may decide, else why not."""
        admin = self._settings.is_admin(user_id)
        if request["kind"] == "admin":
            if user_id == request.get("requester"):
                return "the requester cannot approve their own configuration change."
            return None if admin else "only an admin can approve a configuration change."
        if admin or (request.get("requester") and user_id == request["requester"]):
            return None
        return "only the person who asked or an admin can decide."

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """Prompt and wait; always returns a decision dict (timeout and cancellation deny)."""
        session = request["session"]
        lock = self._locks.setdefault(session, asyncio.Lock())
        async with lock:  # one question at a time per session
            places = [session]
            if request["kind"] == "admin":
                for admin in sorted(self._settings.bot.admins):
                    if admin != request.get("requester") and await self._notify(f"f:{admin}", request["prompt"]):
                        places.append(f"f:{admin}")
                        break
            if len(places) == 1 or request["kind"] != "admin":
                await self._notify(session, request["prompt"])
            future: asyncio.Future = asyncio.get_running_loop().create_future()
            pending = Pending(request, future, tuple(places))
            for p in places:
                self._pending[p] = pending
            timeout = self._timeout or self._settings.approval.effective_timeout
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except asyncio.TimeoutError:
                await self._notify(session, f'Approval for "{request["tool"]}" timed out; the call was not run.')
                return {"decision": "deny", "by": "", "reason": TIMED_OUT.format(sec=timeout)}
            finally:
                for p in places:
                    if self._pending.get(p) is pending:
                        del self._pending[p]

    def take_reply(self, place: str, user_id: str, text: str) -> str | None:
        """Called first thing for every message. Returns the answer to send back when the message was
        an approval reply (consumed), or None when it is an ordinary message."""
        pending = self._pending.get(place)
        word = parse_reply(text)
        if pending is None or word is None or pending.future.done():
            return None
        why_not = self.may_answer(pending.request, user_id)
        if why_not:
            return NOT_ALLOWED.format(why=why_not)
        pending.future.set_result({"decision": word, "by": user_id})
        verb = "Allowed" if word == "allow" else "Denied"
        return f'{verb}: "{pending.request["tool"]}".'

    def is_waiting(self, place: str) -> bool:
        return place in self._pending
