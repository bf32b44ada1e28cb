"""The team tools (A4): team_save, team_list, team_delete, team_run.

Teams are stored by services/teams.py, per session or global. Global teams are run by every session,
but only an admin saves or deletes one (checked here, against the requester: a group member cannot
make a team that every other chat will run). In a group, a chat's own team is deleted or replaced by an
admin only (`RunContext.admin_in_group`); any member may save a new one. team_run resolves the team and
the budget, then the team graph (graphs/team.py) runs one subagent per member concurrently and gathers their answers.
Subagents and team members never get these tools (services/subagents.py NOT_FOR_SUBAGENTS).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tool import AnyTool, NoParams, Tool
from services.context import RunContext
from services.subagents import TeamRunRequest, admit, budget, clamp_note
from services.teams import GLOBAL, MAX_MEMBERS, MAX_NAME, Team, check_members, check_name, make_team
from tools.subagent import checked_task

ScopeArg = Literal["session", "global"]

TEAM_SAVE_DESCRIPTION = (
    f"Save a team: a named group of up to {MAX_MEMBERS} members, each a one-shot subagent with its own role "
    "prompt, that team_run runs in parallel on one task. Saving under an existing name replaces that team. "
    "Scope \"session\" keeps it in this chat; \"global\" lets every chat run it (admins only)."
)
TEAM_LIST_DESCRIPTION = "List the teams this chat can run: its own, then the global ones, sorted by name."
TEAM_DELETE_DESCRIPTION = "Delete a saved team of this chat (scope \"session\") or a global one (admins only)."
TEAM_RUN_DESCRIPTION = (
    "Run a saved team on one task: every member works on it at the same time as a one-shot subagent with "
    "its role prompt, and you get back each member's final answer in member order, with a line per "
    "member saying ok, failed or timed out. Members start with none of this conversation: put every fact "
    "they need into the task."
)

ADMIN_ONLY = "only an admin can {verb} a global team"
UNKNOWN_TEAM = 'no team named "{name}" here. {listing}'
NO_SUCH_TEAM = 'no team named "{name}" in {scope}'
NO_TEAMS = "No teams yet; save one with team_save."
NESTED = "subagents and team members have no team tools"


def _name_field(what: str) -> str:
    return f"The {what}'s name: 1 to {MAX_NAME} CJK characters, letters, digits, \"_\" or \"-\"."


class MemberParams(BaseModel):
    name: str = Field(description=_name_field("member"))
    role: str = Field(description="Its role prompt: who it is, what it looks at and what it answers with.")


class TeamSaveParams(BaseModel):
    name: str = Field(description=_name_field("team"))
    purpose: str = Field(description="One line: what the team is for.")
    members: list[MemberParams] = Field(description=f"1 to {MAX_MEMBERS} members, in the order results are shown.")
    scope: ScopeArg = Field("session", description="session: this chat only; global: every chat (admins only).")
    timeout_sec: int | None = Field(None, description="Default time budget of each member, in seconds.")
    max_rounds: int | None = Field(None, description="Default tool rounds of each member (1-50).")


class TeamDeleteParams(BaseModel):
    name: str = Field(description="The team's name.")
    scope: ScopeArg = Field("session", description="session or global (admins only).")


class TeamRunParams(BaseModel):
    name: str = Field(description="The team's name (team_list shows them).")
    task: str = Field(description="The complete task every member works on.")
    timeout_sec: int | None = Field(
        None, description="Time budget of each member in seconds (default: the team's, else "
        "subagent.default_timeout_sec; clamped to 1..subagent.max_timeout_sec; shrinks to the time left)."
    )


def _refuse_nested(ctx: RunContext) -> None:
    if ctx.agent_kind in ("subagent", "team_member"):
        raise ToolError(NESTED)


def _scope_key(scope: ScopeArg, ctx: RunContext, verb: str) -> str:
    if scope == "global":
        if not ctx.is_admin():
            raise ToolError(ADMIN_ONLY.format(verb=verb))
        return GLOBAL
    return ctx.session_key


def _where(team: Team) -> str:
    return "global" if team.is_global else "this chat"


def describe(team: Team) -> str:
    members = ", ".join(m.name for m in team.members)
    extra = "".join([f"; timeout {team.timeout_sec} s" if team.timeout_sec else "",
                     f"; max {team.max_rounds} rounds" if team.max_rounds else ""])
    return f"- {team.name} ({_where(team)}): {team.purpose} Members: {members}{extra}."


class TeamSaveTool(Tool[TeamSaveParams, RunContext]):
    name = "team_save"
    description = TEAM_SAVE_DESCRIPTION
    params = TeamSaveParams
    side_effect = True

    async def execute(self, args: TeamSaveParams, ctx: RunContext) -> str:
        _refuse_nested(ctx)
        scope = _scope_key(args.scope, ctx, "save")
        team = make_team(args.name, args.purpose, [(m.name, m.role) for m in args.members], scope, args.timeout_sec,
                         args.max_rounds, ctx.services.settings.subagent.max_timeout_sec)
        if any(t.name == team.name for t in await asyncio.to_thread(ctx.services.teams.in_scope, scope)):
            ctx.admin_in_group(f'replace the team "{team.name}"')
        replaced = await asyncio.to_thread(ctx.services.teams.save, team)
        ctx.services.store.log_op("team_save", ctx.session_key, ctx.requester, {"team": team.name, "scope": scope})
        verb = "Replaced" if replaced else "Saved"
        n = len(team.members)
        return f'{verb} team "{team.name}" ({_where(team)}, {n} member{"" if n == 1 else "s"}). Run it with team_run.'


class TeamListTool(Tool[NoParams, RunContext]):
    name = "team_list"
    description = TEAM_LIST_DESCRIPTION

    async def execute(self, args: NoParams, ctx: RunContext) -> str:
        _refuse_nested(ctx)
        teams = await asyncio.to_thread(ctx.services.teams.visible, ctx.session_key)
        if not teams:
            return NO_TEAMS
        return f"Teams ({len(teams)}):\n" + "\n".join(describe(t) for t in teams)


class TeamDeleteTool(Tool[TeamDeleteParams, RunContext]):
    name = "team_delete"
    description = TEAM_DELETE_DESCRIPTION
    params = TeamDeleteParams
    side_effect = True

    async def execute(self, args: TeamDeleteParams, ctx: RunContext) -> str:
        _refuse_nested(ctx)
        scope = _scope_key(args.scope, ctx, "delete")
        name = check_name(args.name)
        where = "the global teams" if scope == GLOBAL else "this chat"
        missing = ToolError(NO_SUCH_TEAM.format(name=name, scope=where))
        if not any(t.name == name for t in await asyncio.to_thread(ctx.services.teams.in_scope, scope)):
            raise missing
        ctx.admin_in_group(f'delete the team "{name}"')
        if not await asyncio.to_thread(ctx.services.teams.delete, scope, name):
            raise missing
        ctx.services.store.log_op("team_delete", ctx.session_key, ctx.requester, {"team": name, "scope": scope})
        return f'Deleted team "{name}".'


class TeamRunTool(Tool[TeamRunParams, RunContext]):
    name = "team_run"
    description = TEAM_RUN_DESCRIPTION
    params = TeamRunParams
    side_effect = True

    async def execute(self, args: TeamRunParams, ctx: RunContext) -> str:
        _refuse_nested(ctx)
        admit(ctx)
        name = check_name(args.name)
        task = checked_task(args.task)
        team = await asyncio.to_thread(ctx.services.teams.find, ctx.session_key, name)
        if team is None:
            visible = await asyncio.to_thread(ctx.services.teams.visible, ctx.session_key)
            listing = f"Teams here: {', '.join(t.name for t in visible)}." if visible else NO_TEAMS
            raise ToolError(UNKNOWN_TEAM.format(name=name, listing=listing))
        check_members(team)
        settings = ctx.services.settings.subagent
        asked = args.timeout_sec if args.timeout_sec is not None else team.timeout_sec
        seconds = budget(asked, settings, ctx.remaining())
        text = await ctx.services.subagents.run_team(ctx, TeamRunRequest(team, task, seconds))
        return clamp_note(args.timeout_sec, settings) + text


def team_tools() -> list[AnyTool]:
    return [TeamDeleteTool(), TeamListTool(), TeamRunTool(), TeamSaveTool()]
