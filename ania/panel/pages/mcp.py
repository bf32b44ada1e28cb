"""MCP servers (`/mcp`): each server's state, tool count and last error; add, delete, reconnect.

The work is the MCP manager's control (services/mcp/control.py): an added server must answer before it is
saved to mcp.json, a removed one is disconnected and deleted from the file, a reconnect reads the file
again. The definition is checked by `ServerSpec.parse`, the reader of mcp.json. As from the chat, a
`${VAR}` reference is refused (it would be expanded from the bot's environment), and env and header
values are never shown. The control writes the operation-log row (`mcp_manage`) with the actor `panel`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.editing import Refused, body, paged_list, refusals
from ania.panel.oplog import ACTOR
from ania.panel.render import render
from services.configure.files import references
from services.mcp.control import ServerControl

NO_EXPANSION = ('"{value}" contains a ${{...}} reference; variables are not expanded in servers added from the '
                "panel. Write the value itself, or put the server in mcp.json by hand.")


class ServerBody(BaseModel):
    """A name and its mcp.json entry."""

    model_config = ConfigDict(extra="forbid")

    name: str
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    transport: Literal["stdio", "streamable_http", "sse"] | None = None
    headers: dict[str, str] | None = None
    filter: dict[str, Any] | None = None

    def entry(self) -> dict[str, Any]:
        entry = self.model_dump(exclude={"name"}, exclude_none=True)
        refs = references(entry)
        if refs:
            raise Refused(NO_EXPANSION.format(value=sorted(refs)[0][:80]))
        return entry


def _control(request: Request) -> ServerControl:
    return panel_context(request).engine.services.mcp.control


async def page(request: Request) -> HTMLResponse:
    return render(request, "mcp.html", {"title_key": "mcp.title"})


@refusals
async def list_servers(request: Request) -> Response:
    return paged_list(request, _control(request).status())


@refusals
async def add(request: Request) -> Response:
    args = await body(request, ServerBody)
    text = await _control(request).add_server(args.name, args.entry(), actor=ACTOR)
    return JSONResponse({"message": text}, status_code=201)


@refusals
async def remove(request: Request) -> Response:
    text = await _control(request).remove_server(request.path_params["name"], actor=ACTOR)
    return JSONResponse({"message": text})


@refusals
async def reconnect(request: Request) -> Response:
    text = await _control(request).reconnect(request.path_params["name"], actor=ACTOR)
    return JSONResponse({"message": text})


def routes() -> list[BaseRoute]:
    return [
        Route("/mcp", page, methods=["GET"]),
        Route("/api/mcp", list_servers, methods=["GET"]),
        Route("/api/mcp", add, methods=["POST"]),
        Route("/api/mcp/{name}", remove, methods=["DELETE"]),
        Route("/api/mcp/{name}/reconnect", reconnect, methods=["POST"]),
    ]
