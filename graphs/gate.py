"""The gate pipeline as a graph, each gate its own node (docs/ARCHITECTURE.md, G1).

    plan_mode → pre_tool_hooks → admin_approval → human_approval → execute → post_tool_hooks → END
        └──────── a gate blocks (or the call is invalid) ──────────────────▶ emit → END

plan_mode first checks the call itself (unknown tool, invalid arguments) and lists the later gates
that have work for it (`route`): a gate with nothing to do (no matching hooks, no approval needed) is
skipped, so a plain call is two steps. The last node that runs writes the ToolMessage.

Because each gate is a node, an approval that pauses (a LangGraph interrupt) resumes at that gate
without re-running the ones before it. Only a call that may pause runs this graph; the others walk the
same gates and routes without it (nodes/tool_call.py, where the gate order `GATE_STEPS` is defined).
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from nodes.context import ContextFactory, bind_context
from nodes.execute import emit
from nodes.gates import LATER, post_tool_hooks, route_after
from nodes.state import GateOutput, GateState
from nodes.tool_call import GATE_STEPS
from nodes.tool_calls import in_loop

GATES = GATE_STEPS


def build_gate_graph(context_factory: ContextFactory | None = None,
                     checkpointer: BaseCheckpointSaver[str] | bool | None = None,
                     ) -> CompiledStateGraph[Any, Any, Any, Any]:
    g = StateGraph(GateState, output_schema=GateOutput)
    for name, fn in GATES:
        g.add_node(name, bind_context(fn, context_factory))
    g.add_node("post_tool_hooks", bind_context(post_tool_hooks, context_factory))
    g.add_node("emit", bind_context(emit, context_factory))
    g.add_edge(START, GATES[0][0])
    for name, _ in GATES[:-1]:  # before execute: the next gate with work, execute, or emit
        later = LATER[LATER.index(name) + 1:] if name in LATER else LATER
        g.add_conditional_edges(name, in_loop(route_after(name)), [*later[: later.index("execute") + 1], "emit"])
    g.add_conditional_edges("execute", in_loop(route_after("execute")), ["post_tool_hooks", END])
    g.add_edge("post_tool_hooks", END)
    g.add_edge("emit", END)
    return g.compile(name="gate", checkpointer=checkpointer)
