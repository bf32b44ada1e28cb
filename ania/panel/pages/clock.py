"""Scheduled tasks (`/clock`): every chat's tasks and their run log; create, pause, resume, run now, delete.

Everything goes through the clock service (services/clock/service.py) with `session=None`, the operator's
reach over every chat (as `/clock` gives an admin): the schedule forms, the limits and the prompt checks
are the book's. Each change is an operation-log row with the actor `panel`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.editing import Refused, body, int_param, paged_list, refusals
from ania.panel.oplog import ACTOR, record_panel_op
from ania.panel.render import render
from services.clock import ClockRun, TaskView, show
from services.clock.service import ClockService

RUNS_SHOWN = 50
ACTIONS = ("pause", "resume", "run")


class NewTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session: str = Field(description="The chat it belongs to and reports to: g:<group id> or f:<user id>.")
    schedule: str
    prompt: str
    name: str | None = None
    run_once: bool = False
    timeout_sec: int | None = None


def task_dict(view: TaskView) -> dict[str, Any]:
    task = view.task
    row: dict[str, Any] = {"id": view.id, "session": view.session, "broken": view.broken, "running": view.running,
                           "line": view.line(with_session=True).removeprefix("- ")}
    if task is None or view.schedule is None:
        return row
    nxt = show(view.next_fire, view.schedule.tz) if view.next_fire is not None else ""
    row.update(name=task.name, schedule=view.schedule.text, prompt=task.prompt, timezone=task.timezone,
               run_once=task.run_once, enabled=task.enabled, timeout_sec=task.timeout_sec,
               created_by=task.created_by, created_at=task.created_at, next_fire=nxt)
    return row


def run_dict(run: ClockRun, clock: ClockService) -> dict[str, Any]:
    return {"id": run.id, "task_id": run.task_id, "session": run.session, "task_name": run.task_name,
            "status": run.status, "scheduled": show(datetime.fromtimestamp(run.scheduled, clock.tz), clock.tz),
            "took_sec": None if run.started is None or run.ended is None else round(run.ended - run.started, 1),
            "tool_calls": [c.name for c in run.tool_calls], "tool_call_count": run.tool_call_count,
            "tokens": int(run.usage.get("total_tokens", 0)), "reply": run.reply, "delivered": run.delivered,
            "detail": run.detail}


def _clock(request: Request) -> ClockService:
    return panel_context(request).engine.services.clock


async def page(request: Request) -> HTMLResponse:
    return render(request, "clock.html", {"title_key": "clock.title", "running": _clock(request).running})


@refusals
async def list_tasks(request: Request) -> Response:
    clock = _clock(request)
    session = request.query_params.get("session") or None
    views = [task_dict(v) for v in clock.views(session)]
    task = request.query_params.get("task")
    runs = clock.log(session, int_param(task, "task") if task else None, RUNS_SHOWN)
    return paged_list(request, views, runs=[run_dict(r, clock) for r in runs], running=clock.running)


@refusals
async def create(request: Request) -> Response:
    args = await body(request, NewTask)
    ctx = panel_context(request)
    view = ctx.engine.services.clock.create(args.session.strip(), ACTOR, args.schedule, args.prompt, args.name,
                                            args.run_once, args.timeout_sec)
    record_panel_op(ctx, "clock_create", {"task": view.id, "session": view.session, "schedule": args.schedule})
    return JSONResponse(task_dict(view), status_code=201)


@refusals
async def act(request: Request) -> Response:
    """pause, resume or run one task now."""
    ctx = panel_context(request)
    clock = ctx.engine.services.clock
    task_id = int_param(request.path_params["id"], "the task id")
    action = request.path_params["action"]
    if action not in ACTIONS:
        raise Refused(f"no such action {action[:20]!r}: use pause, resume or run", 404)
    if action == "run":
        run_id = await clock.run_now(None, task_id, ACTOR)
        record_panel_op(ctx, "clock_run", {"task": task_id, "run": run_id})
        return JSONResponse({"id": task_id, "run": run_id}, status_code=202)
    view = clock.update(None, task_id, enabled=action == "resume")
    record_panel_op(ctx, f"clock_{action}", {"task": task_id, "session": view.session})
    return JSONResponse(task_dict(view))


@refusals
async def delete(request: Request) -> Response:
    ctx = panel_context(request)
    task_id = int_param(request.path_params["id"], "the task id")
    view = ctx.engine.services.clock.delete(None, task_id)
    record_panel_op(ctx, "clock_delete", {"task": task_id, "session": view.session})
    return JSONResponse({"deleted": task_id})


def routes() -> list[BaseRoute]:
    return [
        Route("/clock", page, methods=["GET"]),
        Route("/api/clock", list_tasks, methods=["GET"]),
        Route("/api/clock", create, methods=["POST"]),
        Route("/api/clock/{id}/{action:str}", act, methods=["POST"]),
        Route("/api/clock/{id}", delete, methods=["DELETE"]),
    ]
