"""The tool-call step of the agent loop: one call through the gate pipeline, in its own concurrent branch.

Most calls cannot pause: no approval, no PreToolUse hook that could answer "ask". Those walk the gates
right here, as plain function calls along the same routes the gate graph takes (`GATE_STEPS`,
`route_after`), with the same results and the same ToolMessage: a compiled graph per call cost 1.1-1.4 ms
against 10 µs for the walk. A call whose route has a gate that may pause (`PAUSING`) runs the gate graph
(graphs/gate.py) on the thread's checkpointer with durability "exit": it is stored only when it pauses,
so an approval resumes at its gate without re-running the gates before it.

`plan_mode` decides which: it checks the call and lists the gates with work for it (`route`). It runs
again inside the gate graph for a pausing call; it has no side effects, so that costs only its time.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from nodes.context import ContextFactory, resolve
from nodes.execute import emit, execute_call
from nodes.gates import admin_approval, human_approval, plan_mode, post_tool_hooks, pre_tool_hooks, route_after
from nodes.state import GateInput, GateState, add_usage
from nodes.tool_calls import failed_message
from services.context import RunContext

log = logging.getLogger(__name__)

Gate = Callable[[GateState, RunContext], Awaitable[dict[str, Any]]]

#: The gates in their fixed order (cheapest first; the human is asked last); graphs/gate.py builds from it.
GATE_STEPS: list[tuple[str, Gate]] = [
    ("plan_mode", plan_mode),
    ("pre_tool_hooks", pre_tool_hooks),
    ("admin_approval", admin_approval),
    ("human_approval", human_approval),
    ("execute", execute_call),
]
#: The gates that may pause for an approval (a hook's "ask" included): a call routed through one of them
#: runs in the gate graph, which can store the pause and resume there.
PAUSING = frozenset({"pre_tool_hooks", "admin_approval", "human_approval"})
_STEP = {**dict(GATE_STEPS), "post_tool_hooks": post_tool_hooks, "emit": emit}
#: The gate state's channels with reducers (the rest are plain values a later step overwrites).
USAGE_CHANNELS = ("turn_usage", "total_usage")
_REDUCED = frozenset({"messages", *USAGE_CHANNELS})
_NEXT: dict[str, Callable[[GateState], str]] = {name: route_after(name) for name, _ in GATE_STEPS}


def may_pause(update: dict[str, Any]) -> bool:
    """Whether plan_mode's verdict routes the call through a gate that may pause."""
    return bool(PAUSING.intersection(update.get("route", ())))


async def walk_gates(state: GateState, first: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """The gate graph's walk for a call that cannot pause, from plan_mode's update `first` on."""
    current: dict[str, Any] = dict(state)
    node, update = "plan_mode", first
    while True:
        written = update.get("messages")
        current.update({k: v for k, v in update.items() if k not in _REDUCED})
        if written:
            current["messages"] = add_messages(current.get("messages", []), written)
        for key in USAGE_CHANNELS:  # what a subagent or team spent inside the call
            if key in update:
                current[key] = add_usage(current.get(key), update[key])
        step = _NEXT.get(node)
        node = step(cast(GateState, current)) if step is not None else END
        if node == END:
            return {k: current[k] for k in ("messages", *USAGE_CHANNELS) if k in current}
        update = await _STEP[node](cast(GateState, current), ctx)


def tool_call_node(pausable: CompiledStateGraph[Any, Any, Any, Any],
                   context_factory: ContextFactory | None) -> Callable[..., Any]:
    """The node for `Send(tool_call, {"call": ...})`; `pausable` is the gate graph (with the checkpointer)."""

    async def tool_call(state: GateInput, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        ctx = await resolve(runtime, config, context_factory)
        try:
            first = await plan_mode({"call": state["call"]}, ctx)
            if may_pause(first):
                return await pausable.ainvoke(state, config, durability="exit")
            return await walk_gates({"call": state["call"]}, first, ctx)
        except GraphBubbleUp:  # an approval's pause (or a command for the parent graph): not a failure
            raise
        except Exception as e:  # a bug in a gate: this call's result says so; the round's other calls go on
            log.exception("tool call %s (%s) failed in %s", state["call"].get("name"), state["call"].get("id"),
                          ctx.session_key)
            return {"messages": [failed_message(state["call"], e)]}

    return tool_call
