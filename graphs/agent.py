"""The agent loop (D1), one LangGraph thread per session:

    START → prepare ─▶ (compact?) ─▶ model ──tool calls──▶ Send(tool_call) per call ─▶ (compact?) ─▶ model
                                       └──no calls──▶ finish → END

`tool_call` runs the gate graph (graphs/gate.py) for one call; the branches of a round run
concurrently. A call that may wait for an approval runs the gate graph on the thread's checkpointer
with durability "exit" (stored only when it pauses); a call that cannot pause runs it without a
checkpointer, since there is nothing to resume. A branch that dies mid-way is settled by
ania/recovery.py.
"""

from __future__ import annotations

from typing import Any, Callable

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_DURABILITY
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from graphs.gate import build_gate_graph
from graphs.state import AgentState, GateInput
from nodes.compact import compact, needs_compaction
from nodes.context import ContextFactory, bind_context, resolve
from nodes.gates import may_pause
from nodes.model import call_model
from nodes.prepare import finish, prepare
from nodes.tool_calls import TOOL_NODE, route_after_model


def _compact_or_model(context_tokens: Callable[[], int]) -> Callable[[AgentState], str]:
    def route(state: AgentState) -> str:
        if state.get("status", "ok") != "ok":
            return "finish"
        return "compact" if needs_compaction(state, context_tokens()) else "model"

    return route


def _gate_node(context_factory: ContextFactory | None) -> Callable[..., Any]:
    pausable = build_gate_graph(context_factory)
    straight = build_gate_graph(context_factory, checkpointer=False)

    async def tool_call(state: GateInput, runtime: Runtime[Any], config: RunnableConfig) -> dict[str, Any]:
        ctx = await resolve(runtime, config, context_factory)
        if await may_pause(state["call"], ctx):
            return await pausable.ainvoke(state, config, durability="exit")
        # Without a checkpointer the inherited "sync" durability would wait for a write that never comes.
        inner = {k: v for k, v in config.get("configurable", {}).items() if k != CONFIG_KEY_DURABILITY}
        return await straight.ainvoke(state, {**config, "configurable": inner})

    return tool_call


def build_agent_graph(
    context_tokens: Callable[[], int],
    *,
    context_factory: ContextFactory | None = None,
    checkpointer: Any = None,
    name: str = "agent",
) -> CompiledStateGraph:
    """`context_tokens` gives the compaction threshold (read from settings when a run needs it)."""
    g = StateGraph(AgentState)
    g.add_node("prepare", bind_context(prepare, context_factory))
    g.add_node("compact", bind_context(compact, context_factory))
    g.add_node("model", bind_context(call_model, context_factory))
    g.add_node(TOOL_NODE, _gate_node(context_factory), input_schema=GateInput)
    g.add_node("finish", bind_context(finish, context_factory))
    route = _compact_or_model(context_tokens)
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route, ["compact", "model", "finish"])
    g.add_edge("compact", "model")
    g.add_conditional_edges("model", route_after_model, [TOOL_NODE, "finish"])
    g.add_conditional_edges(TOOL_NODE, route, ["compact", "model", "finish"])
    g.add_edge("finish", END)
    return g.compile(name=name, checkpointer=checkpointer)
