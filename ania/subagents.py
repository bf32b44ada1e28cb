"""The runner behind `services.subagents` (A1-A4): the subagent and team graphs, bound by the composition root.

A subagent's steps are checkpointed in memory while it runs (an approval pause resumes from there, and a
timed-out run's progress is read from there): a one-shot run is never resumed after a restart, and the
SQLite round trips were a sixth of a subagent's cost. When it ends, however it ends, its final state is
copied to the engine's checkpointer on the same thread `<session>/sub/<run id>`, off the caller's path, so
Studio and `ania sessions show` open it afterwards; `aclose` waits for the copies still running.

A team run is the team graph on the engine's checkpointer, thread `<session>/team/<run id>`; its member
steps come back here, one subagent run each, with a `SubagentBridge` over the parent's bridge.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from ania.platforms.bridge import SubagentBridge
from checkpoints.factory import thread_config
from graphs.subagent import build_subagent_graph
from graphs.team import build_team_graph
from nodes.subagent import detached, new_run_id, run_subagent, stored_values, thread_of
from services.context import RunContext
from services.subagents import SubagentRequest, SubagentResult, TeamRunRequest

log = logging.getLogger(__name__)


class SubagentRunner:
    def __init__(self, checkpointer: Any, context_tokens: Callable[[], int], *, stock: bool = False) -> None:
        self._live = InMemorySaver()
        self.graph = build_subagent_graph(context_tokens, checkpointer=self._live, stock=stock)
        self._kept = build_subagent_graph(context_tokens, checkpointer=checkpointer, stock=stock)
        self.team_graph = build_team_graph(checkpointer=checkpointer)
        self._copies: set[asyncio.Task[None]] = set()

    async def run(self, parent: RunContext, request: SubagentRequest) -> SubagentResult:
        request = replace(request, run_id=request.run_id or new_run_id())
        try:
            return await run_subagent(self.graph, parent, request, SubagentBridge(parent.bridge, request.label))
        finally:  # also when /stop cancels it: what it did is kept
            copy = asyncio.create_task(self._keep(thread_of(parent.session_key, request.run_id)))
            self._copies.add(copy)
            copy.add_done_callback(self._copies.discard)

    async def _keep(self, thread: str) -> None:
        try:
            values = await stored_values(self.graph, thread)
            if values.get("messages"):
                await self._kept.aupdate_state(thread_config(thread), values, as_node="finish")
        except Exception:
            log.exception("could not keep the subagent run %s", thread)
        finally:
            await self._live.adelete_thread(thread)

    async def run_team(self, parent: RunContext, request: TeamRunRequest) -> str:
        run_id = request.run_id or new_run_id()
        inp = {"team": request.team.to_dict(), "task": request.task, "budget_sec": request.budget_sec,
               "run_id": run_id}
        config = thread_config(f"{parent.session_key}/team/{run_id}")
        out = await detached(self.team_graph.ainvoke(inp, config, context=parent, durability="exit"))
        return str(out.get("summary", ""))

    async def flush(self) -> None:
        """Wait until every finished run is kept on the engine's checkpointer."""
        while self._copies:
            await asyncio.gather(*list(self._copies), return_exceptions=True)

    async def aclose(self) -> None:
        await self.flush()
