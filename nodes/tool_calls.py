"""Routing the model's tool calls: one `Send` branch per call, valid or not.

A call whose arguments were not valid JSON still gets its own branch, so its id is answered with a
clear tool result (providers reject a history where a tool call has no result).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.types import Send

from core.registry import ToolCall, ToolOutcome, parse_raw_arguments
from nodes.safe_calls import MARK as UNUSABLE_MARK
from nodes.state import AgentState, GateState
from services.unicode_safe import scrub

TOOL_NODE = "tool_call"
#: The result of a call whose gates failed with an unexpected error (a bug, logged with its traceback).
CALL_FAILED = ('Error: the call to "{name}" failed inside the bot ({detail}); the error is in the log. '
               "It may or may not have run.")


def calls_of(message: AIMessage) -> list[ToolCall]:
    calls = [ToolCall(id=c["id"] or "", name=c["name"], args=dict(c.get("args") or {})) for c in message.tool_calls]
    for bad in message.invalid_tool_calls:  # the provider re-reads them in this same order
        error: str | None = bad.get("error") or ""
        if not str(error).startswith(UNUSABLE_MARK):  # not made invalid by nodes/safe_calls.py: the provider's JSON
            _, error = parse_raw_arguments(bad.get("args") or "")
        calls.append(ToolCall(id=bad.get("id") or "", name=bad.get("name") or "", args={},
                              args_error=error or "invalid arguments"))
    return calls


def in_loop(route: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
    """A routing function as a coroutine, for the graph builders: LangGraph runs a plain function on a
    worker thread in async graphs (a thread hop per route, at every step); a coroutine runs on the loop."""

    async def run(state: Any) -> Any:
        return route(state)

    run.__name__ = run.__qualname__ = getattr(route, "__name__", "route")
    return run


def pending_calls(state: AgentState) -> list[ToolCall]:
    """The calls the model just asked for (none when the turn ends here)."""
    last = state["messages"][-1] if state.get("messages") else None
    if isinstance(last, AIMessage) and state.get("status", "ok") == "ok":
        return calls_of(last)
    return []


def route_after_model(state: AgentState) -> list[Send] | str:
    """A branch per tool call; "compact" when the model step only started the turn (the history must be
    summarized before the model is asked); otherwise the turn is over."""
    calls = pending_calls(state)
    if calls:
        return [Send(TOOL_NODE, {"call": c.to_dict()}) for c in calls]
    last = state["messages"][-1] if state.get("messages") else None
    if isinstance(last, HumanMessage) and state.get("status", "ok") == "ok":
        return "compact"
    return END


def tool_message(state: GateState) -> ToolMessage:
    call = ToolCall.from_dict(state["call"])
    outcome = ToolOutcome(state["blocked"], "blocked") if state.get("blocked") else ToolOutcome(**state["result"])
    text = scrub(outcome.text)  # a tool's text (an MCP server's, a file name) may carry a lone surrogate
    notes = [n for n in state.get("notes", []) if n]
    if notes:
        text += "\n\n" + "\n".join(f"<hook_context>{scrub(n)}</hook_context>" for n in notes)
    return ToolMessage(
        content=text, tool_call_id=call.id, name=call.name,
        status="success" if outcome.status == "ok" else "error",
        response_metadata={"ania_status": outcome.status},
    )


def failed_message(call: dict[str, Any], error: Exception) -> ToolMessage:
    """The ToolMessage for a call whose gates raised: only this call fails, and its id is answered."""
    name = str(call.get("name") or "")
    return ToolMessage(content=CALL_FAILED.format(name=name, detail=type(error).__name__),
                       tool_call_id=str(call.get("id") or ""), name=name, status="error",
                       response_metadata={"ania_status": "error"})


def result_dict(outcome: ToolOutcome) -> dict[str, Any]:
    return {"text": outcome.text, "status": outcome.status}
