"""subagent_run (A1-A3): hand one task to a one-shot subagent and read back only its final answer.

The tool decides the budget (services/subagents.py `budget`: clamp, then shrink to the parent's time
less a reserve, or refuse) and renders the result: one line of run metadata, then the answer cut to
`subagent.max_result_len` runes. The run itself is graphs/subagent.py, reached through
`ctx.services.subagents`. A side-effect tool: plan mode blocks it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tool import Tool
from services.context import RunContext
from services.subagents import SubagentRequest, admit, budget, clamp_note

MAX_TASK = 20000

SUBAGENT_RUN_DESCRIPTION = (
    "Hand a long or noisy sub-task to a one-shot subagent and get back only its final answer. The subagent "
    "starts with none of this conversation, has your tools except the subagent and team tools, works alone "
    "(it cannot ask questions), and none of its intermediate text reaches the chat. Its answer comes back "
    "after one line of run metadata (status, seconds, model calls, tokens), cut to subagent.max_result_len "
    "characters. Several subagent_run calls in one round run at the same time."
)
EMPTY_TASK = "the task is empty; describe what the subagent should do and what its answer should contain"
LONG_TASK = "the task is {n} characters long; at most {max} are accepted"
NESTED = "a subagent or team member cannot start subagents"


class SubagentRunParams(BaseModel):
    task: str = Field(
        description="The complete task. The subagent sees nothing of this chat: include every fact it needs "
        "and say what its final answer should contain."
    )
    timeout_sec: int | None = Field(
        None, description="Its time budget in seconds (default subagent.default_timeout_sec, clamped to "
        "1..subagent.max_timeout_sec); it shrinks to fit the time left for this message."
    )


def checked_task(task: str) -> str:
    task = task.strip()
    if not task:
        raise ToolError(EMPTY_TASK)
    if len(task) > MAX_TASK:
        raise ToolError(LONG_TASK.format(n=len(task), max=MAX_TASK))
    return task


class SubagentRunTool(Tool[SubagentRunParams, RunContext]):
    name = "subagent_run"
    description = SUBAGENT_RUN_DESCRIPTION
    params = SubagentRunParams
    side_effect = True

    async def execute(self, args: SubagentRunParams, ctx: RunContext) -> str:
        if ctx.agent_kind in ("subagent", "team_member"):
            raise ToolError(NESTED)
        admit(ctx)
        task = checked_task(args.task)
        settings = ctx.services.settings.subagent
        seconds = budget(args.timeout_sec, settings, ctx.remaining())
        result = await ctx.services.subagents.run(ctx, SubagentRequest(task=task, budget_sec=seconds))
        return clamp_note(args.timeout_sec, settings) + result.render("subagent", settings.max_result_len)
