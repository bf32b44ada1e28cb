"""Commands and persona (`/commands`): `commands.json` (custom slash commands) and `prompt.json` (persona
and system prompt), shown and saved whole.

Saving goes through the config editor (services/configure/edit.py), as config_file_set does: each file is
validated by the code that reads it (services/commands.py `parse_commands`, services/persona.py
`parse_prompt`), a file that does not validate is refused and the old one kept, the write is atomic, and
the editor writes the operation-log row (`config_file_set`) with the actor `panel`. Commands take effect
within 5 s; the prompt at the next /reboot (it is read once: the system prompt stays byte-stable).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.editing import Endpoint, file_answer, refusals, save_file
from ania.panel.render import render
from services.configure.files import TAKES_EFFECT


async def page(request: Request) -> HTMLResponse:
    return render(request, "commands.html", {"title_key": "commands.title"})


def _endpoints(name: str) -> tuple[Endpoint, Endpoint]:
    @refusals
    async def show(request: Request) -> Response:
        services = panel_context(request).services
        extra: dict[str, Any]
        if name == "commands_json":
            extra = {"commands": [c.line() for c in (await services.commands.commands()).values()],
                     "problem": services.commands.problem}
        else:
            extra = {"running_source": services.persona.source, "problem": services.persona.problem}
        return file_answer(request, name, takes_effect=TAKES_EFFECT[name], **extra)

    @refusals
    async def save(request: Request) -> Response:
        return await save_file(request, name)

    return show, save


def routes() -> list[BaseRoute]:
    show_commands, save_commands = _endpoints("commands_json")
    show_prompt, save_prompt = _endpoints("prompt_json")
    return [
        Route("/commands", page, methods=["GET"]),
        Route("/api/commands", show_commands, methods=["GET"]),
        Route("/api/commands", save_commands, methods=["PUT"]),
        Route("/api/prompt", show_prompt, methods=["GET"]),
        Route("/api/prompt", save_prompt, methods=["PUT"]),
    ]
