"""The runner behind `services.subagents` (A1-A4): the subagent and team graphs on the engine's checkpointer.

Built by the composition root once the checkpointer is open (`bind_subagents`). A subagent runs with a
`SubagentBridge` over its parent's bridge; a team run is the team graph on its own thread
`<session>/team/<run id>`, whose member steps come back here for each member's subagent run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ania.platforms.bridge import SubagentBridge
from checkpoints.factory import thread_config
from graphs.subagent import build_subagent_graph
from graphs.team import build_team_graph
from nodes.subagent import detached, run_subagent
from services.context import RunContext
from services.subagents import SubagentRequest, SubagentResult, TeamRunRequest


class SubagentRunner:
    def __init__(self, checkpointer: Any, context_tokens: Callable[[], int]) -> None:
        self.graph = build_subagent_graph(context_tokens, checkpointer=checkpointer)
        self.team_graph = build_team_graph(checkpointer=checkpointer)

    async def run(self, parent: RunContext, request: SubagentRequest) -> SubagentResult:
        return await run_subagent(self.graph, parent, request, SubagentBridge(parent.bridge, request.label))

    async def run_team(self, parent: RunContext, request: TeamRunRequest) -> str:
        run_id = request.run_id or uuid.uuid4().hex[:12]
        inp = {"team": request.team.to_dict(), "task": request.task, "budget_sec": request.budget_sec,
               "run_id": run_id}
        config = thread_config(f"{parent.session_key}/team/{run_id}")
        out = await detached(self.team_graph.ainvoke(inp, config, context=parent, durability="sync"))
        return str(out.get("summary", ""))
