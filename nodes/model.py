"""The model step: the chat model bound to the session's tools (sorted by name), errors as replies."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from langchain_core.messages import AIMessage

from nodes.images import present_images
from nodes.prompt import request_messages, text_of
from nodes.state import AgentState, add_usage, usage_of
from services.context import RunContext
from services.errors import ConfigError

log = logging.getLogger(__name__)

MAX_ROUNDS = (
    "I stopped here: this request needed more than {n} rounds of tool calls (agent.max_rounds). "
    "The tool results so far are above; ask me to continue if you want me to go on."
)
MODEL_FAILED = "Sorry, the model endpoint failed ({detail}). Please try again in a moment."
NOT_CONFIGURED = "The bot is not configured: {detail}"
EMPTY_REPLY = "Sorry, the model gave an empty answer. Please ask again, perhaps in other words."


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
    try:
        reply = await runnable.ainvoke(request_messages(settings, [*state.get("messages", []), *shown]))
    except asyncio.CancelledError:
        raise
    except Exception as e:
        log.warning("model call failed for %s: %s", ctx.session_key, e)
        return {"messages": [*shown, AIMessage(MODEL_FAILED.format(detail=_describe(e)))], "status": "error",
                **({"turn_usage": seen_usage, "total_usage": seen_usage} if seen_usage else {})}
    # Provider ids are not unique across restarts (and a fake server repeats them); ours must be,
    # since add_messages replaces a message with the same id.
    update_fields: dict[str, Any] = {"id": f"ai-{uuid.uuid4().hex}"}
    if not (reply.tool_calls or reply.invalid_tool_calls or text_of(reply).strip()):
        # Silence is never an answer: the user gets a short fallback, and the log says why.
        log.warning("model returned an empty answer for %s; sent a fallback reply", ctx.session_key)
        update_fields["content"] = EMPTY_REPLY
    reply = reply.model_copy(update=update_fields)
    usage = add_usage(usage_of(reply), seen_usage) if seen_usage else usage_of(reply)
    update: dict[str, Any] = {"messages": [*shown, reply], "turn_usage": usage, "total_usage": usage}
    if reply.tool_calls or reply.invalid_tool_calls:
        update["rounds"] = state.get("rounds", 0) + 1
        if reply.content:  # intermediate text goes out now (dropped by subagent and clock bridges)
            await ctx.bridge.send_text(text_of(reply))
    return update


def _describe(e: Exception) -> str:
    name = type(e).__name__
    status = getattr(e, "status_code", None)
    if "Timeout" in name:
        return "the request timed out"
    if status:
        return f"HTTP {status}"
    return name
