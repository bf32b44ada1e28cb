"""The model step: the chat model bound to the session's tools (sorted by name), errors as replies.

It is also where a turn starts, so that takes no checkpointed step of its own (a turn with one tool call
stores 5 checkpoints, as `create_agent` does, instead of 7): a new user message is prepared first (prompt
hooks, session context, reminders: nodes/prepare.py); when the history then needs compacting, the step
stops there and the graph goes to `compact` and back. When the turn ends and a Stop hook is configured,
the step goes on to `finish`, which runs it in a step of its own (a failing hook then leaves the reply
stored, as before); with no Stop hook there is nothing to run, and no step. The Stop runner is told once
per turn: should telling it here fail, `finish` only reports that, in its own step, after the reply is stored.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain_core.messages import AIMessage
from langgraph.graph.message import add_messages
from langgraph.types import Command, Overwrite, Send

from checkpoints.fold import fold_messages
from core.errors import ConfigError
from nodes.compact import needs_compaction
from nodes.images import present_images
from nodes.metered import QuotaReached, metered
from nodes.prepare import STOP_FAILED, finish, prepare, starts_turn, stop_event
from nodes.prompt import request_messages, text_of
from nodes.safe_calls import safe_reply
from nodes.state import AgentState, add_usage, usage_of
from nodes.tool_calls import pending_calls
from services.context import RunContext

log = logging.getLogger(__name__)

MAX_ROUNDS = (
    "I stopped here: this request needed more than {n} rounds of tool calls (agent.max_rounds). "
    "The tool results so far are above; ask me to continue if you want me to go on."
)
MODEL_FAILED = "Sorry, the model endpoint failed ({detail}). Please try again in a moment."
NOT_CONFIGURED = "The bot is not configured: {detail}"
EMPTY_REPLY = "Sorry, the model gave an empty answer. Please ask again, perhaps in other words."
#: A subagent's or team member's answer when the quota stops it (its parent reads this as the result).
QUOTA_REACHED = "Daily token quota reached: it stopped before its next model call. {refusal}"


FINISH = "finish"
Update = dict[str, Any] | Command[str]


def model_step(context_tokens: Callable[[], int], *,
               stock: bool = False) -> Callable[[AgentState, RunContext], Awaitable[Update]]:
    """The graph's `model` node; `context_tokens` gives the compaction threshold (read per run); `stock`
    (engine.stock) folds the prepared turn into the step's view with LangGraph's `add_messages`."""

    async def model(state: AgentState, ctx: RunContext) -> Update:
        started: dict[str, Any] = {}
        if starts_turn(state):
            started = await prepare(state, ctx)
            state = applied(state, started, stock=stock)
            if state.get("status") == "blocked":
                return await _ended(started, state, ctx)
            if needs_compaction(state, context_tokens()):
                return started  # the route goes to compact, which comes back here
        reply = await call_model(state, ctx)
        update, after = merged(started, reply), appended(state, reply)
        return update if pending_calls(after) else await _ended(update, after, ctx)

    return model


async def _ended(update: dict[str, Any], after: AgentState, ctx: RunContext) -> Update:
    """The turn's last model step (`after`: the state once `update` is applied): on to `finish` when a
    Stop hook wants to run. Otherwise the runner is told here (it has nothing to run); should it fail
    anyway, `finish` fails the turn in its own step without telling it again, so the reply is stored
    before the turn fails, as when `finish` always was a step, and the runner is told once."""
    if await ctx.services.hooks.wants(stop_event(ctx)):
        return Command(update=update, goto=FINISH)
    try:
        await finish(after, ctx)
    except Exception as e:
        log.exception("the %s hook failed for %s; the turn fails after its reply is stored", stop_event(ctx),
                      ctx.session_key)
        return Command(update=update, goto=Send(FINISH, {STOP_FAILED: f"{type(e).__name__}: {e}"}))
    return update


def applied(state: AgentState, update: dict[str, Any], *, stock: bool = False) -> AgentState:
    """The state as the next part of the step sees it (messages folded, per-turn fields replaced): what
    LangGraph will store at the step's end, computed here so the model is called in the same step. The
    fold is `fold_messages`, or with `stock` LangGraph's own `add_messages`."""
    out: dict[str, Any] = {**state, **{k: v for k, v in update.items() if k not in ("messages", "turn_usage")}}
    if update.get("messages"):
        old = state.get("messages", [])
        out["messages"] = (add_messages(cast(list[Any], old), update["messages"]) if stock
                           else fold_messages(old, [update["messages"]]))
    return cast(AgentState, out)


def appended(state: AgentState, reply: dict[str, Any]) -> AgentState:
    """`applied` for the model's reply, a new message: appended without folding the whole history."""
    out: dict[str, Any] = {**state, **{k: v for k, v in reply.items() if k not in ("messages", "turn_usage")}}
    out["messages"] = [*state.get("messages", []), *reply.get("messages", [])]
    return cast(AgentState, out)


def merged(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two parts of one step as one update: messages in order; a turn-usage reset, then the new usage."""
    out = {**first, **second}
    if first.get("messages") or second.get("messages"):
        out["messages"] = [*first.get("messages", []), *second.get("messages", [])]
    if "turn_usage" in first and first["turn_usage"] is None and second.get("turn_usage") is not None:
        out["turn_usage"] = Overwrite(second["turn_usage"])
    return out


async def call_model(state: AgentState, ctx: RunContext) -> dict[str, Any]:
    settings = ctx.services.settings
    if state.get("rounds", 0) >= settings.agent.max_rounds:
        return {"messages": [AIMessage(MAX_ROUNDS.format(n=settings.agent.max_rounds))], "status": "max_rounds"}
    try:
        model = ctx.services.llm.model()
    except ConfigError as e:
        return {"messages": [AIMessage(NOT_CONFIGURED.format(detail=e))], "status": "error"}
    schemas = ctx.executor.schemas()
    runnable = model.bind_tools(schemas) if schemas else model
    shown, seen_usage = await present_images(ctx)
    seen = {"turn_usage": seen_usage, "total_usage": seen_usage} if seen_usage else {}
    request = request_messages(ctx.services, [*state.get("messages", []), *shown])
    try:
        reply = await metered(ctx, lambda: runnable.ainvoke(request), lambda r: r)
    except QuotaReached as e:
        return {"messages": [*shown, AIMessage(quota_reply(ctx, e.refusal))], "status": "quota", **seen}
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - any provider failure becomes a reply that says so
        log.warning("model call failed for %s: %s", ctx.session_key, e)
        return {"messages": [*shown, AIMessage(MODEL_FAILED.format(detail=_describe(e)))], "status": "error", **seen}
    # Provider ids are not unique across restarts (and a fake server repeats them); ours must be,
    # since add_messages replaces a message with the same id.
    update_fields: dict[str, Any] = {"id": f"ai-{uuid.uuid4().hex}"}
    if not (reply.tool_calls or reply.invalid_tool_calls or text_of(reply).strip()):
        # Silence is never an answer: the user gets a short fallback, and the log says why.
        log.warning("model returned an empty answer for %s; sent a fallback reply", ctx.session_key)
        update_fields["content"] = EMPTY_REPLY
    reply = safe_reply(reply.model_copy(update=update_fields))  # no value of the model's may break the turn
    mine = usage_of(reply)
    usage = add_usage(mine, seen_usage) if seen_usage else mine
    update: dict[str, Any] = {"messages": [*shown, reply], "turn_usage": usage, "total_usage": usage}
    if reply.tool_calls or reply.invalid_tool_calls:
        update["rounds"] = state.get("rounds", 0) + 1
        if ctx.limits is not None and reply.tool_calls and ctx.agent_kind in ("main", "clock"):
            sub = settings.subagent  # which subagent and team calls run: decided here, in the reply's order
            ctx.limits.plan_round(reply.tool_calls, sub.max_calls_per_round, sub.max_calls_per_message)
        if reply.content:  # intermediate text goes out now (dropped by subagent and clock bridges)
            await ctx.bridge.send_text(text_of(reply))
    return update


def quota_reply(ctx: RunContext, refusal: str) -> str:
    """What a message stopped by the quota says: the chat's refusal; a subagent's answer to its parent."""
    return QUOTA_REACHED.format(refusal=refusal) if ctx.agent_kind in ("subagent", "team_member") else refusal


def _describe(e: Exception) -> str:
    name = type(e).__name__
    status = getattr(e, "status_code", None)
    if "Timeout" in name:
        return "the request timed out"
    if status:
        return f"HTTP {status}"
    return name
