"""The last gate runs the call; `emit` turns a blocked branch's verdict into the ToolMessage."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodes.state import GateState
from nodes.tool_calls import result_dict, tool_message
from services.context import RunContext
from services.errors import ToolError
from tools.registry import ToolCall


async def execute_call(state: GateState, ctx: RunContext) -> dict[str, Any]:
    call = ToolCall.from_dict(state["call"])
    try:
        tool, args = ctx.executor.resolve(call)
    except ToolError as e:  # the table changed since check_call (e.g. a server was removed)
        return {"result": {"text": str(e), "status": "error"}}
    # Recorded before it runs: if the turn dies now, recovery says "may have run", never "not run".
    ctx.services.store.call_started(ctx.session_key, call.id, call.name)
    if state.get("approved_by"):  # the tool logs who allowed it
        ctx = replace(ctx, approved_by=state["approved_by"])
    result = result_dict(await ctx.executor.execute(tool, args, ctx))
    if "post_tool_hooks" in state.get("route", []):
        return {"result": result}
    return {"result": result, "messages": [tool_message({**state, "result": result})]}


async def emit(state: GateState, ctx: RunContext) -> dict[str, Any]:
    return {"messages": [tool_message(state)]}
