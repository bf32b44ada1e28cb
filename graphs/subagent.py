"""The subagent graph (A1): a one-shot run of the agent loop, on its own thread `<session>/sub/<run id>`.

    START → model ──tool calls──▶ Send(tool_call) per call ─▶ (compact?) ─▶ model
              └──no calls / round limit / error──▶ finish (SubagentStop hooks) → END

The same nodes as the agent loop (graphs/agent.py) and the same gate graph per call, so every call of
a subagent passes plan mode, hooks and approvals. It has no `prepare`: there is no user message, no
SessionStart and no todo reminder in a one-shot run. The model step carries the run's round limit.
nodes/subagent.py runs it (budget, approvals, results); the run context says which tools it has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.gate import build_gate_graph
from nodes.compact import compact, compact_or_model
from nodes.context import ContextFactory, bind_context
from nodes.prepare import finish
from nodes.state import GateInput, SubagentState, state_schema
from nodes.subagent import subagent_model
from nodes.tool_call import tool_call_node
from nodes.tool_calls import TOOL_NODE, in_loop, route_after_model


def build_subagent_graph(
    context_tokens: Callable[[], int],
    *,
    context_factory: ContextFactory | None = None,
    checkpointer: Any = None,
    stock: bool = False,
    name: str = "subagent",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    g = StateGraph(state_schema(SubagentState, stock))
    g.add_node("compact", bind_context(compact, context_factory))
    g.add_node("model", bind_context(subagent_model, context_factory))
    g.add_node(TOOL_NODE, tool_call_node(build_gate_graph(context_factory), context_factory), input_schema=GateInput)
    g.add_node("finish", bind_context(finish, context_factory))
    g.add_edge(START, "model")
    g.add_edge("compact", "model")
    # The loop's routes; where the main loop ends a turn, a subagent always goes through `finish` (SubagentStop).
    g.add_conditional_edges("model", in_loop(route_after_model),
                            {TOOL_NODE: TOOL_NODE, "compact": "compact", END: "finish"})
    g.add_conditional_edges(TOOL_NODE, in_loop(compact_or_model(context_tokens)),
                            {"compact": "compact", "model": "model", "finish": "finish"})
    g.add_edge("finish", END)
    return g.compile(name=name, checkpointer=checkpointer)
