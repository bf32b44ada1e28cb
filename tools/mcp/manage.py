"""AI self-management of MCP servers (M7, `mcp_tool.enable`): mcp_list, mcp_add, mcp_remove, mcp_reconnect.

Add and remove persist to mcp.json and take effect at once. Add, remove and reconnect change the
configuration (and start processes): like config_set they always need an admin other than the requester
(G3), whatever `approval.enable` says, and plan mode blocks them. Every operation goes to the operation
log. Env vars and headers are passed as KEY=VALUE lists; `${VAR}` references are refused in what the
model writes (the MCP adapters would expand them from the bot's environment).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tool import NoParams, Tool
from services.context import RunContext
from services.mcp.config import parse_kv_list
from services.mcp.control import ServerControl

LIST_DESCRIPTION = "List the configured MCP servers with their state, transport and tool count."
ADD_DESCRIPTION = (
    "Add an MCP server and save it in mcp.json. Give `command` (+ `args`, `env`) for a local stdio server, "
    "or `url` (+ `transport`, `headers`) for a remote one. The server must answer, or nothing is added."
)
REMOVE_DESCRIPTION = "Remove an MCP server: it is disconnected and deleted from mcp.json."
RECONNECT_DESCRIPTION = (
    "Reconnect an MCP server, reading its definition from mcp.json (also starts a server that failed at "
    "start). Tools loaded from it before must be loaded again."
)
NO_EXPANSION = (
    'refused: "{value}" contains a ${{...}} reference; variables are not expanded in servers added from the chat. '
    "Write the value itself, or ask an admin to put the server in mcp.json."
)
SERVER_NAME = "Server name: 1-32 letters, digits, _ or - (no double underscore)"


def _control(ctx: RunContext) -> ServerControl:
    return ctx.services.mcp.control


class MCPList(Tool[NoParams, RunContext]):
    name = "mcp_list"
    description = LIST_DESCRIPTION

    async def execute(self, args: NoParams, ctx: RunContext) -> str:
        return _control(ctx).list_servers()


class AddParams(BaseModel):
    name: str = Field(description=SERVER_NAME)
    command: str | None = Field(None, description="Executable of a stdio server, e.g. uvx or npx")
    args: list[str] = Field(default_factory=list, description="Arguments of the command")
    env: list[str] = Field(default_factory=list, description="Environment variables as KEY=VALUE")
    url: str | None = Field(None, description="URL of a remote server (http:// or https://)")
    transport: Literal["stdio", "streamable_http", "sse"] | None = Field(
        None, description="Defaults to stdio with a command, streamable_http with a url"
    )
    headers: list[str] = Field(default_factory=list, description="HTTP headers as KEY=VALUE")
    allow: list[str] = Field(default_factory=list, description="Only these tool names")
    prefixes: list[str] = Field(default_factory=list, description="Only tools whose names start with one of these")
    keywords: list[str] = Field(default_factory=list, description="Only tools whose name or description has one")

    def spec(self) -> dict[str, Any]:
        for value in [self.command or "", self.url or "", *self.args, *self.env, *self.headers]:
            if "${" in value:
                raise ToolError(NO_EXPANSION.format(value=value[:80]))
        raw: dict[str, Any] = {}
        if self.command:
            raw.update(command=self.command, args=self.args, env=parse_kv_list(self.env, "env") or None)
        if self.url:
            raw.update(url=self.url, headers=parse_kv_list(self.headers, "headers") or None)
        if self.transport:
            raw["transport"] = self.transport
        flt = {k: v for k in ("allow", "prefixes", "keywords") if (v := getattr(self, k))}
        if flt:
            raw["filter"] = flt
        return {k: v for k, v in raw.items() if v is not None}


class MCPAdd(Tool[AddParams, RunContext]):
    name = "mcp_add"
    description = ADD_DESCRIPTION
    params = AddParams
    side_effect = True
    changes_config = True

    async def execute(self, args: AddParams, ctx: RunContext) -> str:
        return await _control(ctx).add_server(args.name, args.spec(), session=ctx.session_key, actor=ctx.requester)


class NameParams(BaseModel):
    name: str = Field(description=SERVER_NAME)


class MCPRemove(Tool[NameParams, RunContext]):
    name = "mcp_remove"
    description = REMOVE_DESCRIPTION
    params = NameParams
    side_effect = True
    changes_config = True

    async def execute(self, args: NameParams, ctx: RunContext) -> str:
        return await _control(ctx).remove_server(args.name, session=ctx.session_key, actor=ctx.requester)


class MCPReconnect(Tool[NameParams, RunContext]):
    name = "mcp_reconnect"
    description = RECONNECT_DESCRIPTION
    params = NameParams
    side_effect = True
    changes_config = True

    async def execute(self, args: NameParams, ctx: RunContext) -> str:
        return await _control(ctx).reconnect(args.name, session=ctx.session_key, actor=ctx.requester)
