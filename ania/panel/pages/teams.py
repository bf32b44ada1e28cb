"""Saved teams (`/teams`): every scope's teams (global and per chat); create, edit, delete.

The checks are the team store's (services/teams.py `make_team`: names, member count, texts, the clamped
run defaults), the same team_save meets. The panel acts as the operator: it may save global teams and
replace a chat's team without the admin rules the chat tools apply to people. Each change is an
operation-log row with the actor `panel`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.editing import Refused, body, paged_list, refusals
from ania.panel.oplog import record_panel_op
from ania.panel.render import render
from services.teams import GLOBAL, MAX_MEMBERS, Team, check_name, check_scope, make_team


class MemberBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    role: str


class TeamBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    purpose: str
    members: list[MemberBody]
    #: "global", or the chat's session key.
    scope: str = GLOBAL
    timeout_sec: int | None = None
    max_rounds: int | None = None


def _build(ctx: PanelContext, args: TeamBody, name: str) -> Team:
    services = ctx.engine.services
    return make_team(name, args.purpose, [(m.name, m.role) for m in args.members], check_scope(args.scope),
                     args.timeout_sec, args.max_rounds, services.settings.subagent.max_timeout_sec)


async def _exists(ctx: PanelContext, scope: str, name: str) -> bool:
    teams = await asyncio.to_thread(ctx.engine.services.teams.in_scope, scope)
    return any(t.name == name for t in teams)


async def page(request: Request) -> HTMLResponse:
    return render(request, "teams.html", {"title_key": "teams.title", "max_members": MAX_MEMBERS})


@refusals
async def list_teams(request: Request) -> Response:
    teams = await asyncio.to_thread(panel_context(request).engine.services.teams.everywhere)
    scope = request.query_params.get("scope")
    rows: list[dict[str, Any]] = [t.to_dict() for t in teams if scope is None or t.scope == scope]
    return paged_list(request, rows)


@refusals
async def create(request: Request) -> Response:
    ctx = panel_context(request)
    args = await body(request, TeamBody)
    if args.name is None:
        raise Refused("name: a team needs a name")
    team = _build(ctx, args, args.name)
    if await _exists(ctx, team.scope, team.name):
        raise Refused(f'a team named "{team.name}" already exists in {team.scope}; edit it instead', 409)
    await asyncio.to_thread(ctx.engine.services.teams.save, team)
    record_panel_op(ctx, "team_save", {"team": team.name, "scope": team.scope, "members": len(team.members)})
    return JSONResponse(team.to_dict(), status_code=201)


@refusals
async def replace(request: Request) -> Response:
    ctx = panel_context(request)
    name = check_name(request.path_params["name"])
    args = await body(request, TeamBody)
    if args.name is not None and args.name.strip() != name:
        raise Refused("name: a team is renamed by creating the new one and deleting the old one")
    team = _build(ctx, args, name)
    if not await _exists(ctx, team.scope, name):
        raise Refused(f'no team named "{name}" in {team.scope}', 404)
    await asyncio.to_thread(ctx.engine.services.teams.save, team)
    record_panel_op(ctx, "team_save", {"team": name, "scope": team.scope, "members": len(team.members),
                                       "replaced": True})
    return JSONResponse(team.to_dict())


@refusals
async def delete(request: Request) -> Response:
    ctx = panel_context(request)
    name = check_name(request.path_params["name"])
    scope = check_scope(request.query_params.get("scope", GLOBAL))
    if not await asyncio.to_thread(ctx.engine.services.teams.delete, scope, name):
        raise Refused(f'no team named "{name}" in {scope}', 404)
    record_panel_op(ctx, "team_delete", {"team": name, "scope": scope})
    return JSONResponse({"deleted": name, "scope": scope})


def routes() -> list[BaseRoute]:
    return [
        Route("/teams", page, methods=["GET"]),
        Route("/api/teams", list_teams, methods=["GET"]),
        Route("/api/teams", create, methods=["POST"]),
        Route("/api/teams/{name}", replace, methods=["PUT"]),
        Route("/api/teams/{name}", delete, methods=["DELETE"]),
    ]
