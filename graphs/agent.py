"""The agent loop (D1), one LangGraph thread per session:

    START → prepare ─▶ (compact?) ─▶ model ──tool calls──▶ Send(tool_call) per call ─▶ (compact?) ─▶ model
                                       └──no calls──▶ finish → END

`tool_call` (nodes/tool_call.py) runs the gate graph (graphs/gate.py) for one call; the branches of a
round run concurrently. A branch that dies mid-way is settled by ania/recovery.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.gate import build_gate_graph
from nodes.compact import compact, compact_or_model
from nodes.context import ContextFactory, bind_context
from nodes.model import call_model
from nodes.prepare import finish, prepare
from nodes.state import AgentState, GateInput
from nodes.tool_call import tool_call_node
from nodes.tool_calls import TOOL_NODE, route_after_model


def build_agent_graph(
    context_tokens: Callable[[], int],
    *,
    context_factory: ContextFactory | None = None,
    checkpointer: Any = None,
    name: str = "agent",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """`context_tokens` gives the compaction threshold (read from settings when a run needs it)."""
    g = StateGraph(AgentState)
    g.add_node("prepare", bind_context(prepare, context_factory))
    g.add_node("compact", bind_context(compact, context_factory))
    g.add_node("model", bind_context(call_model, context_factory))
    gates = (build_gate_graph(context_factory), build_gate_graph(context_factory, checkpointer=False))
    g.add_node(TOOL_NODE, tool_call_node(*gates, context_factory), input_schema=GateInput)
    g.add_node("finish", bind_context(finish, context_factory))
    route = compact_or_model(context_tokens)
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route, ["compact", "model", "finish"])
    g.add_edge("compact", "model")
    g.add_conditional_edges("model", route_after_model, [TOOL_NODE, "finish"])
    g.add_conditional_edges(TOOL_NODE, route, ["compact", "model", "finish"])
    g.add_edge("finish", END)
    return g.compile(name=name, checkpointer=checkpointer)
