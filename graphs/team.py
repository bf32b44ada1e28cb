"""The team graph (A4): one subagent per member, all at once, then their answers gathered in member order.

    START ──Send per member (≤ 10)──▶ member ─▶ gather → END

Each member runs through the subagent path (nodes/subagent.py, on its own thread) with its role prompt
and the team's defaults; a run of the team has its own thread `<session>/team/<run id>`.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from nodes.context import ContextFactory, bind_context
from nodes.gather import MEMBER_NODE, fan_out, gather, member
from nodes.state import MemberInput, TeamState


def build_team_graph(
    *,
    context_factory: ContextFactory | None = None,
    checkpointer: Any = None,
    name: str = "team",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    g = StateGraph(TeamState)
    g.add_node(MEMBER_NODE, bind_context(member, context_factory), input_schema=MemberInput)
    g.add_node("gather", bind_context(gather, context_factory))
    g.add_conditional_edges(START, fan_out, [MEMBER_NODE])
    g.add_edge(MEMBER_NODE, "gather")
    g.add_edge("gather", END)
    return g.compile(name=name, checkpointer=checkpointer)
