"""The agent loop (D1), one LangGraph thread per session:

    START → model ──tool calls──▶ Send(tool_call) per call ─▶ (compact?) ─▶ model
              ├──history too long──▶ compact ─▶ model
              └──no calls──▶ (finish, when a Stop hook is configured) → END

`model` (nodes/model.py) is one checkpointed step doing what would otherwise be three, so a turn stores
one checkpoint per model call and per tool round, as `create_agent` does (a turn with one tool round: 5,
not 7):

    model: new user message? ─▶ prepare (SessionStart, UserPromptSubmit, todo reminder; nodes/prepare.py)
               │                  ├─ prompt blocked ─▶ the turn ends (the Stop runner told, below)
               │                  └─ history too long ─▶ the step ends here: compact, then model again
               └─▶ call the model ─▶ tool calls ─▶ Send(tool_call) per call
                                   └─ turn over ─▶ a Stop hook wants to run ─▶ finish (its own step)
                                                   └─ none ─▶ the runner is told inline (should that fail,
                                                      `finish` fails the turn after the reply is stored,
                                                      without telling it again: once per turn)

`tool_call` (nodes/tool_call.py) checks its call once and takes it through the gates listed in
nodes/gate_list.py, in process or through the gate graph (graphs/gate.py) when it may pause; the
branches of a round run concurrently. A branch that dies mid-way is settled by ania/recovery.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.gate import build_gate_graph
from nodes.compact import compact, compact_or_model
from nodes.context import ContextFactory, bind_context
from nodes.model import FINISH, model_step
from nodes.prepare import finish
from nodes.state import AgentState, GateInput, state_schema
from nodes.tool_call import tool_call_node
from nodes.tool_calls import TOOL_NODE, in_loop, route_after_model


def build_agent_graph(
    context_tokens: Callable[[], int],
    *,
    context_factory: ContextFactory | None = None,
    checkpointer: Any = None,
    stock: bool = False,
    name: str = "agent",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """`context_tokens` gives the compaction threshold (read from settings when a run needs it); `stock`
    (engine.stock) runs on LangGraph's own message channel and reducer (nodes/state.py `state_schema`)."""
    g = StateGraph(state_schema(AgentState, stock))
    g.add_node("model", bind_context(model_step(context_tokens, stock=stock), context_factory), destinations=(FINISH,))
    g.add_node("compact", bind_context(compact, context_factory))
    g.add_node(TOOL_NODE, tool_call_node(build_gate_graph(context_factory), context_factory), input_schema=GateInput)
    g.add_node(FINISH, bind_context(finish, context_factory))
    g.add_edge(START, "model")
    g.add_edge(FINISH, END)
    # A router's annotated state joins the graph's schema: the stock schema's `messages` channel differs
    # from AgentState's, so there the router goes in unannotated (as the other graphs' routers do).
    g.add_conditional_edges("model", in_loop(route_after_model) if stock else route_after_model,
                            [TOOL_NODE, "compact", END])
    g.add_edge("compact", "model")
    # After a round of results: compact first when the history grew too long; "finish" (a stopped turn) ends it.
    g.add_conditional_edges(TOOL_NODE, in_loop(compact_or_model(context_tokens)),
                            {"compact": "compact", "model": "model", "finish": END})
    return g.compile(name=name, checkpointer=checkpointer)
