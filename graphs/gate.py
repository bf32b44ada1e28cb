"""The gate pipeline: one run per tool call, each gate its own node (DESIGN.md, G1).

    plan_mode → pre_tool_hooks → admin_approval → human_approval → execute → post_tool_hooks → END
        └──────── a gate blocks (or the call is invalid) ──────────────────▶ emit → END

plan_mode first checks the call itself (unknown tool, invalid arguments); post_tool_hooks and emit
write the ToolMessage.

Because each gate is a node, an approval that pauses (a LangGraph interrupt) resumes at that gate
without re-running the ones before it.
"""

from __future__ import annotations

from typing import Callable

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.state import GateOutput, GateState
from nodes.context import ContextFactory, bind_context
from nodes.execute import emit, execute_call
from nodes.gates import admin_approval, human_approval, plan_mode, post_tool_hooks, pre_tool_hooks

#: Gates in their fixed order (cheapest first; the human is asked last).
GATES = [
    ("plan_mode", plan_mode),
    ("pre_tool_hooks", pre_tool_hooks),
    ("admin_approval", admin_approval),
    ("human_approval", human_approval),
    ("execute", execute_call),
]


def _next_or_emit(next_node: str) -> Callable[[GateState], str]:
    def route(state: GateState) -> str:
        return "emit" if state.get("blocked") or state.get("result") else next_node

    route.__name__ = f"to_{next_node}"
    return route


def build_gate_graph(context_factory: ContextFactory | None = None, checkpointer: object = None) -> CompiledStateGraph:
    g = StateGraph(GateState, output_schema=GateOutput)
    for name, fn in GATES:
        g.add_node(name, bind_context(fn, context_factory))
    g.add_node("post_tool_hooks", bind_context(post_tool_hooks, context_factory))
    g.add_node("emit", bind_context(emit, context_factory))
    g.add_edge(START, GATES[0][0])
    for (name, _), (nxt, _) in zip(GATES, GATES[1:]):
        g.add_conditional_edges(name, _next_or_emit(nxt), [nxt, "emit"])
    g.add_edge("execute", "post_tool_hooks")
    g.add_edge("post_tool_hooks", END)
    g.add_edge("emit", END)
    return g.compile(name="gate", checkpointer=checkpointer)
