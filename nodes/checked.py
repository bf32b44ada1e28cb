"""A tool call checked once, before its gates: the tool and its validated arguments travel with it.

The gates all need the tool (is it a configuration change? what does its approval prompt show?) and
most need the parsed arguments (plan mode asks a proxy tool about its target, bash's approval reason
reads its command, the call runs with them). They are resolved here once per call (`check_call`) and
handed to every gate as a `ResolvedCall`, never re-validated per gate.

These are live objects (a Tool, a pydantic model), so they never go into the checkpointed gate state:
the gate graph receives them in its run context (`CallContext`). A call paused for an approval is checked
again when its branch resumes (perhaps in another process, after the tool table changed), which is the
one time its arguments are validated a second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import ToolError
from core.registry import ToolCall
from core.tool import AnyTool
from nodes.safe_calls import unusable_error
from services.context import RunContext


@dataclass(frozen=True)
class ResolvedCall:
    """The call as the model made it, the tool it names and its validated arguments."""

    call: ToolCall
    tool: AnyTool
    args: Any


@dataclass(frozen=True)
class CallContext:
    """The gate graph's run context when a tool-call branch runs it: the run's context and the checked call
    (None when the call is invalid: its error is the result in the state, and every gate passes it on)."""

    run: RunContext
    resolved: ResolvedCall | None


def check_call(call: dict[str, Any], ctx: RunContext) -> ResolvedCall | str:
    """The resolved call, or the error text the model reads (unusable or invalid arguments, unknown tool)."""
    if unusable := unusable_error(call["name"], call.get("args_error")):
        return unusable
    parsed = ToolCall.from_dict(call)
    try:
        tool, args = ctx.executor.resolve(parsed)
    except ToolError as e:
        return str(e)
    return ResolvedCall(parsed, tool, args)
