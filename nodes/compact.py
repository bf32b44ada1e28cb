"""Compaction: above `agent.context_tokens`, older turns are summarized by the model into one message.

The system prompt is not in the history (it is prepended per request), so it is always kept. The cut
is placed before a user message when possible, else before an assistant message: a tool result is
never separated from the call that asked for it. The new history is `[summary, *recent]`; from then on
it is append-only again, so requests after a compaction are prefix-stable among themselves.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from nodes.hook_events import hook_event
from nodes.metered import QuotaReached, metered
from nodes.prompt import SUMMARY_TAG, text_of
from nodes.state import AgentState, usage_of
from services.context import RunContext
from services.unicode_safe import scrub

log = logging.getLogger(__name__)

SUMMARIZE_PROMPT = (
    "You compress chat histories. Summarize the conversation below so that an assistant can continue "
    "it: keep names, decisions, facts, numbers, open questions and what tools returned that still "
    "matters. Write plain prose, at most 300 words. Do not add anything that is not in it."
)


def estimate_tokens(messages: Sequence[AnyMessage]) -> int:
    """A deterministic estimate (about 4 characters per token, plus per-message overhead)."""
    total = 0
    for m in messages:
        total += 4 + len(text_of(m)) // 4
        if isinstance(m, AIMessage) and m.tool_calls:
            total += len(json.dumps([c["args"] for c in m.tool_calls], ensure_ascii=False)) // 4
    return total


def needs_compaction(state: AgentState, limit: int) -> bool:
    return estimate_tokens(state.get("messages", [])) > limit


def compact_or_model(context_tokens: Callable[[], int]) -> Callable[[AgentState], str]:
    """The route before a model call: compact first when the history is over the threshold (read per run),
    or finish when the turn already ended (a blocked prompt, an error)."""

    def route(state: AgentState) -> str:
        if state.get("status", "ok") != "ok":
            return "finish"
        return "compact" if needs_compaction(state, context_tokens()) else "model"

    return route


def cut_index(messages: Sequence[AnyMessage], keep_tokens: int) -> int:
    """Where the kept tail starts; 0 means there is nothing worth summarizing.

    A cut is valid before a user or assistant message, never before a tool result. Preferred: the
    earliest user message whose tail fits `keep_tokens`; else the latest user message; else (one huge
    turn) the earliest assistant message whose tail fits, or the latest one.
    """
    valid = [i for i in range(1, len(messages)) if not isinstance(messages[i], ToolMessage)]
    if not valid:
        return 0
    tail, tails = 0, {}
    for i in range(len(messages) - 1, 0, -1):
        tail += estimate_tokens([messages[i]])
        tails[i] = tail
    humans = [i for i in valid if isinstance(messages[i], HumanMessage)]
    fitting = [i for i in valid if tails[i] <= keep_tokens]
    fitting_humans = [i for i in fitting if i in humans]
    if fitting_humans:
        return min(fitting_humans)
    if humans:
        return max(humans)
    return min(fitting) if fitting else max(valid)


def transcript(messages: Sequence[AnyMessage]) -> str:
    lines = []
    for m in messages:
        role = {"human": "user", "ai": "assistant", "tool": f"tool {getattr(m, 'name', '')}"}.get(m.type, m.type)
        text = text_of(m)
        if isinstance(m, AIMessage) and m.tool_calls:
            calls = (f"[calls {c['name']}({json.dumps(c['args'], ensure_ascii=False)})]" for c in m.tool_calls)
            text += " " + " ".join(calls)
        lines.append(f"{role}: {text}")
    return "\n".join(lines)


async def compact(state: AgentState, ctx: RunContext) -> dict[str, Any]:
    messages = state.get("messages", [])
    cut = cut_index(messages, ctx.services.settings.agent.keep_recent_tokens)
    if cut <= 0:
        return {}
    await ctx.services.hooks.run(hook_event(ctx, "PreCompact"))
    request = [SystemMessage(SUMMARIZE_PROMPT), HumanMessage(transcript(messages[:cut]))]
    try:
        reply = await metered(ctx, lambda: ctx.services.llm.model().ainvoke(request), lambda r: r)
    except QuotaReached:
        return {}  # over the quota: the model step that follows says so, without a call
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - a failed compaction leaves the history as it is; the turn goes on
        log.warning("compaction of %s failed: %s", ctx.session_key, e)
        return {}
    summary = HumanMessage(
        content=f"<{SUMMARY_TAG}>\n{scrub(text_of(reply)).strip()}\n</{SUMMARY_TAG}>",
        id=f"summary-{messages[cut].id}",
    )
    counted = usage_of(reply)
    return {
        "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *messages[cut:]],
        "turn_usage": counted, "total_usage": counted,
    }
