"""The clock-run graph (C3, C5, C7): one run of a scheduled task, on its own thread `clock:<task id>:<run id>`.

    START → model ──tool calls──▶ Send(tool_call) per call ─▶ (compact?) ─▶ model
              └──no calls──▶ drain ──subagent results──▶ model (a synthesis round, at most 5)
                               └──nothing to wait for──▶ deliver → finish → END

A fresh one-shot agent: its only user message is the task (nodes/clock.py `task_message`), every call
goes through the same gate graph as a chat's, and its run context has no requester (only admins approve
its calls), the agent kind "clock", a bridge that drops intermediate text, and the task's deadline.
`drain` waits for the run's async subagents and feeds their results back; `deliver` sends only the
final reply to the target chat. ania/clock/runner.py runs it; the clock service logs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.gate import build_gate_graph
from nodes.clock import clock_model, deliver, drain, route_after_drain, route_after_model
from nodes.compact import compact, compact_or_model
from nodes.context import ContextFactory, bind_context
from nodes.prepare import finish
from nodes.state import ClockState, GateInput, state_schema
from nodes.tool_call import tool_call_node
from nodes.tool_calls import TOOL_NODE, in_loop


def build_clock_graph(
    context_tokens: Callable[[], int],
    *,
    context_factory: ContextFactory | None = None,
    checkpointer: Any = None,
    stock: bool = False,
    name: str = "clock",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    g = StateGraph(state_schema(ClockState, stock))
    g.add_node("compact", bind_context(compact, context_factory))
    g.add_node("model", bind_context(clock_model, context_factory))
    g.add_node(TOOL_NODE, tool_call_node(build_gate_graph(context_factory), context_factory), input_schema=GateInput)
    g.add_node("drain", bind_context(drain, context_factory))
    g.add_node("deliver", bind_context(deliver, context_factory))
    g.add_node("finish", bind_context(finish, context_factory))
    g.add_edge(START, "model")
    g.add_edge("compact", "model")
    g.add_conditional_edges("model", in_loop(route_after_model), [TOOL_NODE, "drain"])
    # After the tools: compact or model as in the loop; an ended run ("finish" there) drains and delivers.
    g.add_conditional_edges(TOOL_NODE, in_loop(compact_or_model(context_tokens)),
                            {"compact": "compact", "model": "model", "finish": "drain"})
    g.add_conditional_edges("drain", in_loop(route_after_drain), ["model", "deliver"])
    g.add_edge("deliver", "finish")
    g.add_edge("finish", END)
    return g.compile(name=name, checkpointer=checkpointer)
