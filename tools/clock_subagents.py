"""Async subagents inside a clock run (C7): subagent_run starts one in the background, subagent_list and
subagent_cancel manage them.

A clock run's executor gets these instead of the blocking subagent_run (nodes/clock.py `clock_executor`
builds them for each run, bound to its `BackgroundSubagents`). The budget is decided as for a blocking
subagent, against the run's own deadline less `subagent.parent_reserve_sec` (the time the drain keeps for
the synthesis) and a small margin, so that it times out on its own before the drain stops waiting.
Results never come back through these tools: the drain hands them to the agent when it stops calling
tools (nodes/clock.py).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from services.clock import BackgroundSubagents
from services.clock.background import OWN_TIMEOUT_MARGIN_SEC
from services.errors import ToolError
from services.subagents import SubagentRequest, admit, budget, clamp_note
from tools.base import NoParams, Tool
from tools.subagent import SubagentRunParams, checked_task

if TYPE_CHECKING:
    from services.context import RunContext

ASYNC_RUN_DESCRIPTION = (
    "Start a one-shot subagent in the background and get its id at once; start several to work in parallel. "
    "It starts with none of this task, has your tools except the subagent and team tools, and works alone. "
    "You get every subagent's final answer (with status, seconds, model calls and tokens) when you stop "
    "calling tools; then write the final message from them."
)
LIST_DESCRIPTION = ("List this run's background subagents: id, status (running, ok, timed out, cancelled …), "
                    "seconds, task.")
CANCEL_DESCRIPTION = "Cancel a running background subagent of this run by its id."
STARTED = ("Started subagent {id} in the background (budget {budget:g} s). Its answer comes back when you stop "
           "calling tools.")
NONE_STARTED = "No subagents started in this run."
CANCELLED = "Cancelled subagent {id}."
NESTED = "a subagent cannot start subagents"


class CancelParams(BaseModel):
    id: str = Field(description="The subagent's id, as subagent_run returned it (e.g. s1).")


class AsyncSubagentRunTool(Tool[SubagentRunParams]):
    name = "subagent_run"
    description = ASYNC_RUN_DESCRIPTION
    params = SubagentRunParams
    side_effect = True

    def __init__(self, background: BackgroundSubagents) -> None:
        self._background = background

    async def execute(self, args: SubagentRunParams, ctx: RunContext) -> str:
        if ctx.agent_kind in ("subagent", "team_member"):
            raise ToolError(NESTED)
        admit(ctx)
        task = checked_task(args.task)
        settings = ctx.services.settings.subagent
        remaining = ctx.remaining()
        left = None if remaining is None else remaining - OWN_TIMEOUT_MARGIN_SEC
        seconds = budget(args.timeout_sec, settings, left)
        job = self._background.start(ctx, SubagentRequest(task=task, budget_sec=seconds))
        return clamp_note(args.timeout_sec, settings) + STARTED.format(id=job.id, budget=round(seconds, 1))


class SubagentListTool(Tool[NoParams]):
    name = "subagent_list"
    description = LIST_DESCRIPTION

    def __init__(self, background: BackgroundSubagents) -> None:
        self._background = background

    async def execute(self, args: NoParams, ctx: RunContext) -> str:
        jobs = self._background.jobs()
        if not jobs:
            return NONE_STARTED
        now = time.monotonic()
        return "\n".join(j.line(now) for j in jobs)


class SubagentCancelTool(Tool[CancelParams]):
    name = "subagent_cancel"
    description = CANCEL_DESCRIPTION
    params = CancelParams

    def __init__(self, background: BackgroundSubagents) -> None:
        self._background = background

    async def execute(self, args: CancelParams, ctx: RunContext) -> str:
        job = await self._background.cancel(args.id)
        return CANCELLED.format(id=job.id)


def async_subagent_tools(background: BackgroundSubagents) -> list[Tool[Any]]:
    return [SubagentCancelTool(background), SubagentListTool(background), AsyncSubagentRunTool(background)]
