"""Seeding the panel's data pages: turns through the real engine, a compacted session, documents, memories."""

from __future__ import annotations

from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from tests.conftest import Chat
from tests.panel_helpers import PanelHarness

COMPACTING = {"agent": {"context_tokens": 500, "keep_recent_tokens": 100}}


async def say(p: PanelHarness, llm: ScriptedOpenAI, session: str, user: str, text: str, *script: Any) -> None:
    """One message through the panel's own engine (its query-log row, checkpoints and day counters)."""
    llm.script(list(script) or [Reply(f"answer to {text}")])
    chat = Chat(p.ctx.engine, {})
    try:
        await chat.say(session, user, text)
    finally:
        chat.detach()


async def compacted(p: PanelHarness, llm: ScriptedOpenAI, session: str, turns: int = 4) -> None:
    """A session whose history was compacted (every turn after the first), with a tool call per turn."""
    for i in range(turns):
        script: list[Any] = [Calls([("time", {})]), Reply(f"answer {i} " + "x" * 2400)]
        if i:
            script.insert(0, Reply(f"SUMMARY {i}: the talk so far"))
        await say(p, llm, session, "u1", f"question {i}", *script)
