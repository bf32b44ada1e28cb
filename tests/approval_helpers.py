"""Driving configuration changes through the real loop: the model asks, another admin answers."""

from __future__ import annotations

import asyncio
from typing import Any

from ania.fakes.openai_server import Calls, Reply
from tests.test_gates import wait_for

ADMINS = {"bot": {"admins": ["admin", "admin2"]}}


def turn_results(llm: Any) -> list[str]:
    """The tool results the model read in the last request, after the last user message."""
    messages = llm.requests[-1].messages
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return [m["content"] for m in messages[last_user:] if m["role"] == "tool"]


async def run_approved(chat: Any, llm: Any, calls: list[tuple[str, dict]], *, session: str = "f:admin",
                       user: str = "admin", approver: str = "admin2", answer: str = "allow",
                       text: str = "please do it") -> list[str]:
    """One message whose model makes `calls` (one round), then replies "done"; every approval that
    comes up is answered `answer` by `approver` in their private chat. Returns the tool results."""
    llm.script([Calls(calls), Reply("done")])
    task = await chat.entry.submit(session, user, text)
    approvals = chat.engine.services.approvals
    while True:
        await wait_for(lambda: task.done() or approvals.is_waiting(f"f:{approver}"))
        if task.done():
            break
        await chat.say(f"f:{approver}", approver, answer)
        await asyncio.sleep(0)
    await task
    return turn_results(llm)
