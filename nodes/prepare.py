"""The first step of a turn: prompt hooks, one-shot session context, per-turn reminders.

Whatever is added here goes at the tail of the user's message (never into the system prompt), so
the request prefix stays byte-stable.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, RemoveMessage

from nodes.hook_events import hook_event
from nodes.prompt import text_of, with_tail
from nodes.state import AgentState
from services.context import RunContext
from services.hooks import HookEventName

PROMPT_BLOCKED = "Your message was not processed: {reason}"


def context_block(texts: tuple[str, ...] | list[str]) -> list[str]:
    return [f"<hook_context>\n{t}\n</hook_context>" for t in texts if t]


async def prepare(state: AgentState, ctx: RunContext) -> dict[str, Any]:
    messages = state.get("messages", [])
    last = messages[-1] if messages else None
    if not isinstance(last, HumanMessage):
        return {}
    # A user message starts a turn: per-turn fields start fresh (Studio's input carries only messages).
    turn: dict[str, Any] = {"rounds": 0, "status": "ok", "reply": "", "turn_usage": None}
    hooks = ctx.services.hooks
    blocks: list[str] = []
    if ctx.services.sessions.first_turn(ctx.session_key):
        started = await hooks.run(hook_event(ctx, "SessionStart"))
        blocks += context_block(started.context)
    outcome = await hooks.run(hook_event(ctx, "UserPromptSubmit", prompt=text_of(last)))
    if outcome.blocked:
        # The blocked text never reaches the model, now or in later turns.
        return {**turn, "messages": [RemoveMessage(id=last.id or "")], "status": "blocked",
                "reply": PROMPT_BLOCKED.format(reason=outcome.reason or "blocked by a hook")}
    blocks += context_block(outcome.context)
    if ctx.agent_kind == "main":
        reminder = ctx.services.todos.reminder(ctx.session_key)
        blocks += [reminder] if reminder else []
    return {**turn, "messages": [with_tail(last, blocks)]} if blocks else turn


async def finish(state: AgentState, ctx: RunContext) -> dict[str, Any]:
    event: HookEventName = "Stop" if ctx.agent_kind == "main" else "SubagentStop"
    messages = state.get("messages", [])
    result = text_of(messages[-1]) if messages else None
    await ctx.services.hooks.run(hook_event(ctx, event, tool_result=result))
    return {}
