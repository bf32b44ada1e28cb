"""Asking people to approve tool calls in the chat (G3, G4, G5).

The gate graph pauses a call with an interrupt; the runtime hands each interrupt to `ask`, which
prompts in the chat and waits for a reply or the timeout. Replies are taken at message entry
(`take_reply`) before anything else. A session's approvals are asked one at a time; the wait holds
no lock that other tools need to send text (G5): sibling branches have already run by then.

Every request gets a short id, shown in its prompt (`allow 3f2a` / `deny 3f2a`): one admin's private
chat can hold prompts from several sessions at once, and an answer must never decide a request other
than the one it was meant for. A bare `allow` is taken only when exactly one request is pending for
that person in that chat; otherwise the answer lists the pending ids.

Who may answer (the README's rights table):
- configuration changes: an admin other than the requester;
- other calls: an admin; the requester too only when `approval.self_approve_in_private` (in a private
  chat) or `approval.self_approve_in_groups` (in a group) is on; runs with no requester (subagents,
  clock) only admins.

Where the prompt goes: a configuration change to an admin's private chat first. So does any call in a
private chat whose one member may not decide it (anyone who can message the bot would otherwise approve
their own bash); that chat is told an admin was asked, and with no admin to ask the call is denied at once.

Across processes (the Postgres store, a gateway and workers): the questions are also rows that every
process's `take_reply` reads and answers, with the same rules and texts (services/gates/approvals_shared.py).
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from core.settings import Settings
from services.gates.admins import Admins
from services.gates.approval_types import ALLOW_WORDS, DENY_WORDS, ApprovalRequest, Decision, Verdict
from services.gates.approvals_shared import Question, SharedQuestions
from services.locks import KeyedLocks

_REPLY = re.compile(r"^\s*([a-z]+|[\u4e00-\u9fff]+)(?:\s+#?([0-9a-f]{4}))?\s*[.!。！]?\s*$", re.IGNORECASE)

NOT_ALLOWED = "You cannot answer this approval: {why}"
TIMED_OUT = "timed out after {sec:g} s"
HOW_TO_ANSWER = 'Reply "allow {id}" or "deny {id}" (允许/同意/yes, 拒绝/no).'
UNKNOWN_ID = "No approval {id} is waiting here. {listing}"
SEVERAL = "Several approvals are waiting here; answer one by its id. {listing}"

ADMIN_ASKED = 'An admin must approve "{tool}" here; I asked one (request {id}) and wait for the answer.'
NO_ADMIN = "only an admin can approve it in a private chat, and no admin could be asked"

#: Sends a prompt to a session (the runtime's platform); returns False when it could not.
Notify = Callable[[str, str], Awaitable[bool]]


def parse_reply(text: str) -> tuple[Verdict, str | None] | None:
    """('allow' | 'deny', request id or None) for an approval answer, else None (an ordinary message)."""
    m = _REPLY.match(text)
    if not m:
        return None
    word = m.group(1).lower()
    rid = m.group(2).lower() if m.group(2) else None
    if word in ALLOW_WORDS:
        return "allow", rid
    if word in DENY_WORDS:
        return "deny", rid
    return None


@dataclass
class Pending(Question):
    """A question this process asked and waits for."""

    future: asyncio.Future[Decision]


class Approvals:
    def __init__(self, settings: Settings, admins: Admins, notify: Notify, *, timeout_sec: float | None = None,
                 shared: SharedQuestions | None = None) -> None:
        """`shared`: the questions of every process sharing the Postgres store (None: this process's only)."""
        self._settings = settings
        self._admins = admins
        self._notify = notify
        #: Overrides the clamped `approval.timeout_sec` (tests use a short one).
        self._timeout = timeout_sec
        self._pending: dict[str, Pending] = {}  # request id → the open question
        self._locks = KeyedLocks()
        self._shared = shared

    def held(self) -> int:
        """Open questions and per-session locks kept: 0 when nobody waits (the bounded-state tests check it)."""
        return len(self._pending) + len(self._locks) + (self._shared.held() if self._shared else 0)

    def may_answer(self, request: ApprovalRequest, user_id: str) -> str | None:
        """None when `user_id` may decide, else why not."""
        admin = self._admins.is_admin(user_id)
        requester = request.get("requester") or ""
        if request["kind"] == "admin":
            if user_id == requester:
                return "the requester cannot approve their own configuration change."
            return None if admin else "only an admin can approve a configuration change."
        if admin:
            return None
        if requester and user_id == requester:
            if _private(request):
                if self._settings.approval.self_approve_in_private:
                    return None
                return "in a private chat only an admin can approve (approval.self_approve_in_private is off)."
            if self._settings.approval.self_approve_in_groups:
                return None
            return "in a group only an admin can approve (approval.self_approve_in_groups is off)."
        return "only the person who asked or an admin can decide."

    def _to_admin(self, request: ApprovalRequest) -> bool:
        """Whether the prompt goes to an admin's private chat: configuration changes, and calls in a
        private chat whose one member (`f:<id>`) may not decide them."""
        if request["kind"] == "admin":
            return True
        return _private(request) and self.may_answer(request, _owner(request)) is not None

    def _new_id(self) -> str:
        while True:
            rid = secrets.token_hex(2)
            if rid not in self._pending:
                return rid

    async def ask(self, request: ApprovalRequest, here: Callable[[str], Awaitable[bool]] | None = None
                  ) -> Decision:
        """Prompt and wait; always returns a decision dict (timeout and cancellation deny). `here` shows
        the prompt in the requesting chat (the run's bridge: it can quote the message); default: notify."""
        session = request["session"]
        async with self._locks.hold(session):  # one question at a time per session
            # Waiting before any prompt goes out, each place before its prompt: an answer sent the moment the
            # prompt arrives (while its send is still being confirmed) finds the question, not an ordinary message.
            pending = Pending(self._new_id(), request, (session,), asyncio.get_running_loop().create_future())
            while self._shared is not None and not self._shared.open(pending, pending.future):
                pending.id = self._new_id()  # another process's question has this id
            rid = pending.id
            prompt = f"{request['prompt']}\n{HOW_TO_ANSWER.format(id=rid)}"
            self._pending[rid] = pending
            try:
                to_admin = self._to_admin(request)
                if to_admin:
                    for admin in self._admins.ids():
                        if admin == request.get("requester"):
                            continue
                        self._place(pending, (session, f"f:{admin}"))
                        if await self._notify(f"f:{admin}", prompt):
                            break
                        self._place(pending, (session,))
                show = here if here is not None else partial(self._notify, session)
                if to_admin and request["kind"] != "admin":  # nobody in this chat may decide
                    if len(pending.places) == 1:
                        return {"decision": "deny", "by": "", "reason": NO_ADMIN}
                    await show(ADMIN_ASKED.format(tool=request["tool"], id=rid))
                elif len(pending.places) == 1:
                    await show(prompt)
                timeout = self._timeout or self._settings.approval.effective_timeout
                try:
                    return await asyncio.wait_for(asyncio.shield(pending.future), timeout)
                except TimeoutError:
                    if self._shared is not None and (late := self._shared.expire(rid)) is not None:
                        return late  # answered at another process as the time ran out: that answer counts
                    await self._notify(session, f'Approval {rid} for "{request["tool"]}" timed out; '
                                                "the call was not run.")
                    return {"decision": "deny", "by": "", "reason": TIMED_OUT.format(sec=timeout)}
            finally:
                del self._pending[rid]
                if self._shared is not None:
                    self._shared.close(rid)

    def _place(self, pending: Pending, places: tuple[str, ...]) -> None:
        pending.places = places
        if self._shared is not None:
            self._shared.moved(pending)

    def _here(self, place: str) -> list[Question]:
        if self._shared is not None:
            return self._shared.here(place)
        return [p for p in self._pending.values() if place in p.places and not p.future.done()]

    def take_reply(self, place: str, user_id: str, text: str) -> str | None:
        """Called first thing for every message. Returns the answer to send back when the message was
        an approval reply (consumed), or None when it is an ordinary message."""
        parsed = self._parse_if_waiting(place, text)
        if parsed is None:
            return None
        word, rid, here = parsed
        listing = "Waiting: " + ", ".join(p.line() for p in here) + "."
        if rid is not None:
            chosen = [p for p in here if p.id == rid]
            if not chosen:
                return UNKNOWN_ID.format(id=rid, listing=listing)
        else:
            chosen = [p for p in here if self.may_answer(p.request, user_id) is None]
            if len(chosen) > 1:
                return SEVERAL.format(listing=listing)
            if not chosen:
                chosen = here[:1]  # tell them why they cannot answer
        pending = chosen[0]
        why_not = self.may_answer(pending.request, user_id)
        if why_not:
            return NOT_ALLOWED.format(why=why_not)
        if not self._decide(pending, word, user_id):  # decided or timed out at another process meanwhile
            return UNKNOWN_ID.format(id=pending.id, listing=listing)
        verb = "Allowed" if word == "allow" else "Denied"
        return f'{verb}: "{pending.request["tool"]}" ({pending.id}).'

    def _decide(self, question: Question, verdict: Verdict, by: str) -> bool:
        if self._shared is not None:
            return self._shared.decide(question.id, verdict, by)
        if not isinstance(question, Pending) or question.future.done():
            return False
        question.future.set_result({"decision": verdict, "by": by})
        return True

    def _parse_if_waiting(self, place: str, text: str) -> tuple[Verdict, str | None, list[Question]] | None:
        """The reply's words when questions wait in `place`. Across processes the message is parsed first: an
        ordinary message costs no read of the store."""
        if self._shared is None and not self._pending:
            return None
        parsed = parse_reply(text)
        here = self._here(place) if parsed is not None else []
        return (*parsed, here) if parsed is not None and here else None

    def open_questions(self) -> list[Question]:
        """Every question still waiting (across processes: every live process's), oldest first (the web panel
        lists them)."""
        if self._shared is not None:
            return self._shared.everywhere()
        return [p for p in self._pending.values() if not p.future.done()]

    def answer_as_operator(self, rid: str, verdict: Verdict, by: str) -> Question | None:
        """Decide question `rid` as the bot's operator (the web panel, like the `ania` command line, is not a
        chat member: who-may-answer does not apply). None when no such question waits (any more)."""
        found = [q for q in self.open_questions() if q.id == rid]
        if not found or not self._decide(found[0], verdict, by):
            return None
        return found[0]

    def is_waiting(self, place: str) -> bool:
        """Whether this process waits for an answer in `place`: its own turns' questions only, so the terminal
        may poll it while a turn works without reading the store. `pending_ids` reads every process's."""
        return any(place in p.places and not p.future.done() for p in self._pending.values())

    def pending_ids(self, place: str) -> list[str]:
        """The ids of the questions waiting in `place`, wherever they were asked."""
        return [p.id for p in self._here(place)]


def _private(request: ApprovalRequest) -> bool:
    return str(request.get("session", "")).startswith("f:")


def _owner(request: ApprovalRequest) -> str:
    """The one member of a private chat `f:<id>` (a subagent's or clock run's calls carry the chat's key)."""
    return str(request.get("session", ""))[2:]
