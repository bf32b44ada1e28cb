"""The gates as a graph, a node per gate (docs/ARCHITECTURE.md, G1), built from nodes/gate_list.py `GATES`:

    START → plan_mode ─▶ pre_tool_hooks ─▶ admin_approval ─▶ human_approval ─▶ execute ─▶ post_tool_hooks → END
                └─────────────┴─────────────────┴──────────────────┴── blocked ──▶ emit → END
    (each gate goes to the next gate on the call's route: one with nothing to do is skipped, so a plain
    call is plan_mode → execute → END; execute goes to END unless PostToolUse hooks want the result)

Because each gate is a node, an approval that pauses (a LangGraph interrupt) resumes at that gate
without re-running the ones before it. A tool-call branch (nodes/tool_call.py) runs this graph only for
a call that may pause, after checking it and listing its route: the graph's input is the call and its
route, and its run context a `CallContext` (the run's context and the resolved call, live objects that
are never checkpointed), so no gate checks the call again. Run on its own (Studio's "gate" graph, the
benchmark) with only `{"call": ...}` and a run context, each node checks the call itself and the first
one lists the route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from nodes.checked import CallContext, check_call
from nodes.context import ContextFactory, resolve
from nodes.execute import emit
from nodes.gate_list import EMIT, GATES, ORDER, STEPS, Gate, destinations, next_step, route_of
from nodes.state import GateOutput, GateState
from nodes.tool_calls import in_loop


def emit_node(factory: ContextFactory | None) -> Callable[..., Awaitable[dict[str, Any]]]:
    """`emit` as a node: the verdict is in the state already."""

    async def node(state: GateState, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        given = runtime.context
        ctx = given.run if isinstance(given, CallContext) else await resolve(runtime, config, factory)
        return await emit(state, ctx)

    node.__name__ = node.__qualname__ = EMIT
    return node


def gate_node(name: str, step: Gate, factory: ContextFactory | None) -> Callable[..., Awaitable[dict[str, Any]]]:
    """A gate as a LangGraph node: the resolved call comes with the run context (see the module doc)."""

    async def node(state: GateState, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        given = runtime.context
        if isinstance(given, CallContext):  # resolved None: an invalid call, its error is the result; on to emit
            return {} if given.resolved is None else await step(state, given.run, given.resolved)
        ctx = await resolve(runtime, config, factory)  # the graph on its own: the call is checked here
        resolved = check_call(state["call"], ctx)
        if isinstance(resolved, str):
            return {"result": {"text": resolved, "status": "error"}}
        if "route" in state:
            return await step(state, ctx, resolved)
        first: GateState = {**state, "route": await route_of(resolved, ctx)}
        return {"route": first["route"], **await step(first, ctx, resolved)}

    node.__name__ = node.__qualname__ = name
    node.__doc__ = step.__doc__
    return node


def _after(name: str) -> Callable[[GateState], str]:
    def route(state: GateState) -> str:
        return next_step(name, state)

    route.__name__ = f"after_{name}"
    return route


def build_gate_graph(context_factory: ContextFactory | None = None,
                     checkpointer: BaseCheckpointSaver[str] | bool | None = None,
                     ) -> CompiledStateGraph[Any, Any, Any, Any]:
    g = StateGraph(GateState, output_schema=GateOutput)
    for name in ORDER:
        g.add_node(name, gate_node(name, STEPS[name], context_factory))
    g.add_node(EMIT, emit_node(context_factory))
    g.add_edge(START, ORDER[0])
    for gate in GATES[:-1]:
        g.add_conditional_edges(gate.name, in_loop(_after(gate.name)), destinations(gate.name))
    g.add_edge(ORDER[-1], END)
    g.add_edge(EMIT, END)
    return g.compile(name="gate", checkpointer=checkpointer)
