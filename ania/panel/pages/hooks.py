"""Hooks (`/hooks`): `hooks.json` shown and saved, validated before it is saved by the parser the hook runner
uses (services/configure/files.py via the config editor: a file that does not validate is refused and the
old one kept); and a draft tried against a sample payload through the hook runner itself
(services/hooks/manager.py `HookManager.trial`: the same process, environment and verdicts as a real event).

The save is logged by the config editor (`config_file_set`) with the actor `panel`; a trial changes nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.editing import Refused, body, file_answer, refusals, save_file
from ania.panel.render import render
from core.errors import ConfigError
from services.hooks import EVENTS, HookEvent, HookManager
from services.hooks.types import HookEventName

FILE = "hooks_json"


class TrialBody(BaseModel):
    """A draft hooks.json and the event to try it on (the fields a hook reads on stdin)."""

    model_config = ConfigDict(extra="forbid")

    content: str
    event: HookEventName
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_result: str | None = None
    prompt: str | None = None
    session_id: str = Field("f:panel", description="The session the sample event claims to come from.")


async def page(request: Request) -> HTMLResponse:
    return render(request, "hooks.html", {"title_key": "hooks.title", "events": EVENTS})


@refusals
async def show(request: Request) -> Response:
    return file_answer(request, FILE, events=list(EVENTS))


@refusals
async def save(request: Request) -> Response:
    return await save_file(request, FILE)


@refusals
async def trial(request: Request) -> Response:
    args = await body(request, TrialBody)
    services = panel_context(request).engine.services
    # The engine's own runner; one built as ania/compose.py builds it when the engine was given another.
    runner = services.hooks if isinstance(services.hooks, HookManager) else HookManager(services.paths.config_dir)
    event = HookEvent(args.event, session_id=args.session_id, tool_name=args.tool_name, tool_input=args.tool_input,
                      tool_result=args.tool_result, prompt=args.prompt)
    try:
        matched, outcome = await runner.trial(args.content, event)
    except ConfigError as e:
        raise Refused(f"refused: {e}") from None
    return JSONResponse({"matched": matched, "blocked": outcome.blocked, "ask": outcome.ask,
                         "reason": outcome.reason, "context": list(outcome.context)})


def routes() -> list[BaseRoute]:
    return [
        Route("/hooks", page, methods=["GET"]),
        Route("/api/hooks", show, methods=["GET"]),
        Route("/api/hooks", save, methods=["PUT"]),
        Route("/api/hooks/try", trial, methods=["POST"]),
    ]
