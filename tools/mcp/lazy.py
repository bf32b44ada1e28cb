"""The model-facing MCP tools (M2, M7): discovery, loading, the proxy call, and self-management.

Each tool translates a call into an `MCPManager` call (`ctx.services.mcp`) and returns its text.
Which tools the engine registers depends on the mode, see `engine_tools()`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, field_validator

from core.tool import Tool
from services.context import RunContext
from services.mcp import MCPManager
from tools.mcp.remote import with_images

DISCOVER_DESCRIPTION = (
    "List the MCP servers and their tools (name and one line each). MCP tools are not in your tool list "
    "until you load them with mcp_load. Optionally narrow to one server or to tools whose name or "
    "description contains a keyword."
)
LOAD_DESCRIPTION_NATIVE = (
    "Load MCP tools by name (as listed by mcp_discover, e.g. mcp__time__get_current_time). Loaded tools join "
    "your tool list and stay available for the rest of this conversation."
)
LOAD_DESCRIPTION_PROXY = (
    "Load MCP tools by name (as listed by mcp_discover, e.g. mcp__time__get_current_time). The result gives "
    "each tool's description and parameters; then call it with mcp_call. Loaded tools stay available for "
    "the rest of this conversation."
)
CALL_DESCRIPTION = (
    "Call an MCP tool loaded with mcp_load. `arguments` is a JSON object matching the parameters that "
    "mcp_load returned for that tool."
)


def manager(ctx: RunContext) -> MCPManager:
    return ctx.services.mcp


class DiscoverParams(BaseModel):
    server: str | None = Field(None, description="Only this server")
    keyword: str | None = Field(None, description="Only tools whose name or description contains this text")


class MCPDiscover(Tool[DiscoverParams, RunContext]):
    name = "mcp_discover"
    description = DISCOVER_DESCRIPTION
    params = DiscoverParams

    async def execute(self, args: DiscoverParams, ctx: RunContext) -> str:
        return await manager(ctx).discover(args.server, args.keyword)


class LoadParams(BaseModel):
    names: list[str] = Field(description="Full MCP tool names to load, e.g. mcp__server__tool", min_length=1)


class MCPLoad(Tool[LoadParams, RunContext]):
    name = "mcp_load"
    description = LOAD_DESCRIPTION_NATIVE
    params = LoadParams

    async def execute(self, args: LoadParams, ctx: RunContext) -> str:
        return await manager(ctx).load(ctx.session_key, args.names, ctx.executor, persist=ctx.owns_executor)


class MCPLoadProxy(MCPLoad):
    description = LOAD_DESCRIPTION_PROXY


class CallParams(BaseModel):
    name: str = Field(description="The loaded MCP tool's full name, e.g. mcp__server__tool")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments as a JSON object")

    @field_validator("arguments", mode="before")
    @classmethod
    def _json_text(cls, v: Any) -> Any:
        """Models sometimes send the arguments object as a JSON string."""
        if isinstance(v, str):
            try:
                return json.loads(v or "{}")
            except json.JSONDecodeError as e:
                raise ValueError(f"arguments is not a JSON object ({e.msg})") from None
        return {} if v is None else v


class MCPCall(Tool[CallParams, RunContext]):
    name = "mcp_call"
    description = CALL_DESCRIPTION
    params = CallParams
    #: The target tool may write; plan mode asks the loaded target (read-only ones pass, as in native mode).
    side_effect = True

    def has_side_effect(self, args: CallParams, ctx: RunContext) -> bool:
        scratch = None if ctx.owns_executor else ctx.executor
        handle = manager(ctx).loads.get(ctx.session_key, args.name, scratch)
        return handle is None or not handle.d.read_only

    async def execute(self, args: CallParams, ctx: RunContext) -> str:
        scratch = None if ctx.owns_executor else ctx.executor
        images: list[str] = []
        text = await manager(ctx).call_loaded(ctx.session_key, args.name, args.arguments, scratch=scratch,
                                              images=images)
        return with_images(text, images, ctx)
