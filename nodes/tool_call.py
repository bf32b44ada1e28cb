"""The tool-call step of the agent loop: one call through the gates, in its own concurrent branch.

The call is checked once (nodes/checked.py: the tool and its validated arguments), and its route is
listed once (nodes/gate_list.py `route_of`: the gates with work for it). Most calls cannot pause: no
approval, no PreToolUse hook that could answer "ask". Those walk the gates right here, as plain function
calls along the same routes the gate graph takes (`next_step`), with the same results and the same
ToolMessage: a compiled graph per call cost 1.1-1.4 ms against 10 µs for the walk. A call whose route
has a gate that may pause runs the gate graph (graphs/gate.py) on the thread's checkpointer with
durability "exit": it is stored only when it pauses, so an approval resumes at its gate without
re-running the gates before it. Either way each gate runs once per call.

    tool_call: check_call, route_of ─may pause─▶ gate graph (run context: the run's and the resolved call)
                         └─────────────────────▶ walk_gates (the same gates in process; an invalid call:
                                                 its error is the result, straight to emit)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from nodes.checked import CallContext, ResolvedCall, check_call
from nodes.context import ContextFactory, resolve
from nodes.execute import emit
from nodes.gate_list import EMIT, ORDER, STEPS, may_pause, next_step, route_of
from nodes.state import GateInput, GateState, add_usage
from nodes.tool_calls import failed_message
from services.context import RunContext

log = logging.getLogger(__name__)

#: The gate state's channels with reducers (the rest are plain values a later step overwrites).
USAGE_CHANNELS = ("turn_usage", "total_usage")
_REDUCED = frozenset({"messages", *USAGE_CHANNELS})


async def walk_gates(state: GateState, ctx: RunContext, resolved: ResolvedCall | None) -> dict[str, Any]:
    """The gate graph's walk for a call that cannot pause: `state` holds the call and its route (an invalid
    call, `resolved` None, holds its error as the result and goes straight to emit)."""
    current: dict[str, Any] = dict(state)
    node = ORDER[0] if resolved is not None else EMIT
    while node != END:
        update = await (emit(cast(GateState, current), ctx) if node == EMIT or resolved is None
                        else STEPS[node](cast(GateState, current), ctx, resolved))
        written = update.get("messages")
        current.update({k: v for k, v in update.items() if k not in _REDUCED})
        if written:
            current["messages"] = add_messages(current.get("messages", []), written)
        for key in USAGE_CHANNELS:  # what a subagent or team spent inside the call
            if key in update:
                current[key] = add_usage(current.get(key), update[key])
        node = next_step(node, cast(GateState, current))
    return {k: current[k] for k in ("messages", *USAGE_CHANNELS) if k in current}


async def checked(call: dict[str, Any], ctx: RunContext) -> tuple[GateState, ResolvedCall | None]:
    """The call checked once, and its route: the gate state it starts from, and the resolved call (None for
    an unknown tool or invalid arguments: then the error is its result, and no gate has work for it)."""
    resolved = check_call(call, ctx)
    if isinstance(resolved, str):
        return {"call": call, "route": [], "result": {"text": resolved, "status": "error"}}, None
    return {"call": call, "route": await route_of(resolved, ctx)}, resolved


def tool_call_node(pausable: CompiledStateGraph[Any, Any, Any, Any],
                   context_factory: ContextFactory | None) -> Callable[..., Any]:
    """The node for `Send(tool_call, {"call": ...})`; `pausable` is the gate graph (with the checkpointer)."""

    async def tool_call(state: GateInput, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        ctx = await resolve(runtime, config, context_factory)
        try:
            start, resolved = await checked(state["call"], ctx)
            if may_pause(start["route"]):
                return await pausable.ainvoke(start, config, context=CallContext(ctx, resolved), durability="exit")
            return await walk_gates(start, ctx, resolved)
        except GraphBubbleUp:  # an approval's pause (or a command for the parent graph): not a failure
            raise
        except Exception as e:  # a bug in a gate: this call's result says so; the round's other calls go on
            log.exception("tool call %s (%s) failed in %s", state["call"].get("name"), state["call"].get("id"),
                          ctx.session_key)
            return {"messages": [failed_message(state["call"], e)]}

    return tool_call
