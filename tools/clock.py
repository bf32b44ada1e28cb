"""The clock tools (C6): clock_create, clock_list, clock_update, clock_delete, clock_log.

A chat's tools manage that chat's tasks only, whoever asks: the model is not trusted, so a prompt
injected in an admin's chat cannot reach another chat's tasks through them (an admin does that with
`/clock`, a human command). An admin may list every chat's tasks. Create, update and delete are side
effects: plan mode blocks them. The checks and texts are the service's (services/clock/service.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from services.clock import FORMS, run_line
from services.clock.texts import TaskView
from services.errors import ToolError
from tools.base import Tool

if TYPE_CHECKING:
    from services.context import RunContext

CLOCK_CREATE_DESCRIPTION = (
    "Schedule a task for this chat, e.g. a reminder or \"every weekday at 9, summarize the news\". At each fire "
    "time a fresh one-shot assistant with your tools, but with none of this conversation, carries out the "
    "prompt, and only its final reply is sent to this chat. The result shows the task's id and its next run."
)
CLOCK_LIST_DESCRIPTION = "List this chat's scheduled tasks with their schedules and next runs, by id."
CLOCK_UPDATE_DESCRIPTION = (
    "Change one of this chat's scheduled tasks: its schedule, prompt or timeout, or pause (enabled=false) and "
    "resume (enabled=true) it. Only the fields you give change."
)
CLOCK_DELETE_DESCRIPTION = "Delete one of this chat's scheduled tasks."
CLOCK_LOG_DESCRIPTION = (
    "Show the task log of this chat's scheduled tasks, newest first: each run's status (success, timeout, "
    "error, interrupted, missed), times, tool calls, tokens and reply."
)
ADMINS_ONLY = "only an admin can list every chat's tasks"
CLAMPED = "[timeout_sec {asked} is outside 1..{max}; {used} was used]\n"
NONE_HERE = "No scheduled tasks in this chat; create one with clock_create."
NONE_AT_ALL = "No scheduled tasks in any chat."
NO_RUNS = "No runs logged yet."
SCHEDULE_HELP = "When it runs. " + FORMS[0].upper() + FORMS[1:] + "."
PROMPT_HELP = ("What to do at each run, as a complete instruction: the assistant that runs it sees nothing of this "
               "chat, so include every fact it needs (for a reminder, the text to remind of).")
TIMEOUT_HELP = "Time budget of one run in seconds (default clock.default_timeout_sec, 120)."


class ClockCreateParams(BaseModel):
    schedule: str = Field(description=SCHEDULE_HELP)
    prompt: str = Field(description=PROMPT_HELP)
    name: str | None = Field(None, description="A short name (default: the start of the prompt).")
    run_once: bool = Field(False, description="Delete the task after its first run (one-time schedules always do).")
    timeout_sec: int | None = Field(None, description=TIMEOUT_HELP)


class ClockListParams(BaseModel):
    all_sessions: bool = Field(False, description="Every chat's tasks instead of this chat's (admins only).")


class ClockUpdateParams(BaseModel):
    task_id: int = Field(description="The task's id (clock_list shows it).")
    schedule: str | None = Field(None, description="A new schedule, in the forms clock_create accepts.")
    prompt: str | None = Field(None, description="A new prompt.")
    enabled: bool | None = Field(None, description="false pauses the task, true resumes it.")
    timeout_sec: int | None = Field(None, description=TIMEOUT_HELP)


class ClockDeleteParams(BaseModel):
    task_id: int = Field(description="The task's id (clock_list shows it).")


class ClockLogParams(BaseModel):
    task_id: int | None = Field(None, description="One task's runs; default: every task of this chat.")
    limit: int = Field(10, description="How many rows, newest first (1-50).")


def _clamp_note(ctx: RunContext, asked: int | None) -> str:
    used = ctx.services.clock.clamp_timeout(asked)
    if asked is None or used == asked:
        return ""
    return CLAMPED.format(asked=asked, max=ctx.services.settings.clock.max_timeout_sec, used=used)


def _next(view: TaskView) -> str:
    return view.line().removeprefix("- ")


class ClockCreateTool(Tool[ClockCreateParams]):
    name = "clock_create"
    description = CLOCK_CREATE_DESCRIPTION
    params = ClockCreateParams
    side_effect = True

    def __init__(self, timezone: str = "") -> None:
        if timezone:  # fixed for the process: the description stays byte-stable
            self.description = f"{CLOCK_CREATE_DESCRIPTION} Times without an offset are in {timezone}."

    async def execute(self, args: ClockCreateParams, ctx: RunContext) -> str:
        view = ctx.services.clock.create(ctx.session_key, ctx.requester, args.schedule, args.prompt, args.name,
                                         args.run_once, args.timeout_sec)
        return (_clamp_note(ctx, args.timeout_sec) + f"Created task {_next(view)}\n"
                "Each run's final reply is sent to this chat.")


class ClockListTool(Tool[ClockListParams]):
    name = "clock_list"
    description = CLOCK_LIST_DESCRIPTION
    params = ClockListParams

    async def execute(self, args: ClockListParams, ctx: RunContext) -> str:
        if args.all_sessions and not ctx.is_admin():
            raise ToolError(ADMINS_ONLY)
        views = ctx.services.clock.views(None if args.all_sessions else ctx.session_key)
        if not views:
            return NONE_AT_ALL if args.all_sessions else NONE_HERE
        head = f"Every chat's tasks ({len(views)}):" if args.all_sessions else f"This chat's tasks ({len(views)}):"
        return "\n".join([head, *(v.line(with_session=args.all_sessions) for v in views)])


class ClockUpdateTool(Tool[ClockUpdateParams]):
    name = "clock_update"
    description = CLOCK_UPDATE_DESCRIPTION
    params = ClockUpdateParams
    side_effect = True

    async def execute(self, args: ClockUpdateParams, ctx: RunContext) -> str:
        view = ctx.services.clock.update(ctx.session_key, args.task_id, schedule=args.schedule, prompt=args.prompt,
                                         enabled=args.enabled, timeout_sec=args.timeout_sec)
        return _clamp_note(ctx, args.timeout_sec) + f"Updated task {_next(view)}"


class ClockDeleteTool(Tool[ClockDeleteParams]):
    name = "clock_delete"
    description = CLOCK_DELETE_DESCRIPTION
    params = ClockDeleteParams
    side_effect = True

    async def execute(self, args: ClockDeleteParams, ctx: RunContext) -> str:
        view = ctx.services.clock.delete(ctx.session_key, args.task_id)
        name = f' "{view.task.name}"' if view.task is not None else ""
        return f"Deleted task {view.id}{name}."


class ClockLogTool(Tool[ClockLogParams]):
    name = "clock_log"
    description = CLOCK_LOG_DESCRIPTION
    params = ClockLogParams

    async def execute(self, args: ClockLogParams, ctx: RunContext) -> str:
        clock = ctx.services.clock
        runs = clock.log(ctx.session_key, args.task_id, min(max(args.limit, 1), 50))
        if not runs:
            return NO_RUNS
        return "\n".join(["Task log, newest first:", *(run_line(r, clock.tz) for r in runs)])


def clock_tools(timezone: str = "") -> list[Tool[Any]]:
    """The five tools; `timezone` (the clock's) is named in clock_create's description."""
    return [ClockCreateTool(timezone), ClockDeleteTool(), ClockListTool(), ClockLogTool(), ClockUpdateTool()]
