"""The last gate runs the call; `emit` turns a blocked branch's verdict into the ToolMessage."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodes.checked import ResolvedCall
from nodes.state import GateState
from nodes.tool_calls import result_dict, tool_message
from services.context import RunContext
from services.usage import UsageMeter


async def execute_call(state: GateState, ctx: RunContext, resolved: ResolvedCall) -> dict[str, Any]:
    """Run the call with the tool and arguments checked before the gates (nodes/checked.py)."""
    call, tool, args = resolved.call, resolved.tool, resolved.args
    # Recorded before it runs: if the turn dies now, recovery says "may have run", never "not run". A subagent's
    # or clock run's calls are not: they are not on the session's thread, and nothing settles or resumes theirs.
    if ctx.agent_kind == "main":
        ctx.services.store.call_started(ctx.session_key, call.id, call.name)
    # The call gets its own usage meter (tokens a subagent or team spends are folded in once, by this step),
    # and the admin who allowed it, if any (the tool logs who approved).
    meter = UsageMeter()
    ctx = replace(ctx, usage=meter, approved_by=state.get("approved_by", ""), call_id=call.id)
    result = result_dict(await ctx.executor.execute(tool, args, ctx))
    update: dict[str, Any] = {"result": result}
    if spent := meter.total():
        update.update(turn_usage=spent, total_usage=spent)
    if "post_tool_hooks" not in state.get("route", []):
        update["messages"] = [tool_message({**state, "result": result})]
    return update


async def emit(state: GateState, ctx: RunContext) -> dict[str, Any]:
    return {"messages": [tool_message(state)]}
