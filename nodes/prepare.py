"""How a turn starts and ends: prompt hooks, one-shot session context, per-turn reminders; the Stop hook.

`prepare` runs inside the model step (nodes/model.py), so it stores no step of its own; `finish` is a
step only when a Stop hook is configured. Whatever `prepare` adds (hook context, the recalled knowledge and
memory of nodes/recall.py, the todo reminder) goes at the tail of the user's message (never into the
system prompt), so the request prefix stays byte-stable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import HumanMessage, RemoveMessage

from nodes.hook_events import hook_event
from nodes.prompt import text_of, with_tail
from nodes.recall import marked, recall
from nodes.state import AgentState
from services.context import RunContext
from services.hooks import HookEventName

PROMPT_BLOCKED = "Your message was not processed: {reason}"
#: What the model step sends `finish` when telling the Stop runner failed there (nodes/model.py `_ended`).
STOP_FAILED = "stop_failed"


def context_block(texts: tuple[str, ...] | list[str]) -> list[str]:
    return [f"<hook_context>\n{t}\n</hook_context>" for t in texts if t]


def starts_turn(state: AgentState) -> bool:
    """A user message whose turn has not started yet is the last one (a new message, from chat or Studio)."""
    messages = state.get("messages", [])
    last = messages[-1] if messages else None
    return isinstance(last, HumanMessage) and state.get("turn") != last.id


async def prepare(state: AgentState, ctx: RunContext) -> dict[str, Any]:
    messages = state.get("messages", [])
    last = messages[-1] if messages else None
    if not isinstance(last, HumanMessage):
        return {}
    # A user message starts a turn: per-turn fields start fresh (Studio's input carries only messages).
    fresh = {"rounds": 0, "status": "ok", "reply": ""}
    # Only what changes is written (each write is a new channel version in every later checkpoint).
    turn: dict[str, Any] = {k: v for k, v in fresh.items() if state.get(k, v) != v}
    turn.update(turn_usage=None, turn=last.id or "")
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
    recalled = await recall(ctx, last)
    blocks += [recalled.block] if recalled else []
    if ctx.agent_kind == "main":
        reminder = ctx.services.todos.reminder(ctx.session_key)
        blocks += [reminder] if reminder else []
    return {**turn, "messages": [marked(with_tail(last, blocks), recalled)]} if blocks else turn


def stop_event(ctx: RunContext) -> HookEventName:
    return "Stop" if ctx.agent_kind == "main" else "SubagentStop"


async def finish(state: AgentState | Mapping[str, Any], ctx: RunContext) -> dict[str, Any]:
    """The Stop hook, in a step of its own (the model step goes here only when one is configured), or the
    failure of the Stop runner the model step told (`STOP_FAILED`): the turn fails, and it is not run again."""
    event = stop_event(ctx)
    if failed := state.get(STOP_FAILED):
        raise RuntimeError(f"the {event} hooks failed: {failed}")
    messages = state.get("messages", [])
    result = text_of(messages[-1]) if messages else None
    await ctx.services.hooks.run(hook_event(ctx, event, tool_result=result))
    return {}
