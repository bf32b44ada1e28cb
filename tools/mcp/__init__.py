"""The model-facing MCP tools (M2, M7) and which of them a bot offers.

- `lazy`: `mcp_discover`, `mcp_load` and, in proxy mode, `mcp_call`;
- `manage`: `mcp_list`, `mcp_add`, `mcp_remove`, `mcp_reconnect` (behind `mcp_tool.enable`);
- `remote`: `RemoteTool`, one loaded MCP tool (the manager's tool factory).
Each tool translates a call into an `MCPManager` call (services/mcp/) and returns its text.
"""

from __future__ import annotations

from typing import Any

from services.mcp import MCPManager
from tools.base import Tool
from tools.mcp.lazy import MCPCall, MCPDiscover, MCPLoad, MCPLoadProxy
from tools.mcp.manage import MCPAdd, MCPList, MCPReconnect, MCPRemove
from tools.mcp.remote import RemoteTool

__all__ = ["RemoteTool", "engine_tools"]


def engine_tools(mcp: MCPManager) -> list[Tool[Any]]:
    """Lazy native: discover + load. Lazy proxy: discover + load + call. Eager: every server's tools.
    Plus list / add / remove / reconnect when `mcp_tool.enable`."""
    if not (mcp.servers or mcp.invalid or mcp.settings.mcp_tool.enable):
        return []  # no MCP servers and no way to add one: no MCP tools in every request
    if mcp.proxy:
        tools: list[Tool[Any]] = [MCPDiscover(), MCPLoadProxy(), MCPCall()]
    elif mcp.lazy:
        tools = [MCPDiscover(), MCPLoad()]
    else:
        tools = list(mcp.eager_tools())
    if mcp.settings.mcp_tool.enable:
        tools += [MCPList(), MCPAdd(), MCPRemove(), MCPReconnect()]
    return sorted(tools, key=lambda t: t.name)
