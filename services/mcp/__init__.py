"""MCP servers (M1-M7): one persistent connection per server, lazy or eager tools, runtime management.

How the modules fit, bottom up:
- `config`: the `mcpServers` file, server specs, tool filters (M5), names, atomic writes;
- `transport`: the HTTP client (no total timeout, M4) that reports broken streams at once;
- `conn`: one persistent session per server, owned by its own task, with deadlines and reconnects;
- `convert`: exposed names `mcp__<server>__<tool>`, OpenAI schemas (T2), caps, result text (M3);
- `loads`: `Handle` (a loaded tool and its server epoch) and each session's loads, kept in the store;
- `servers`: the `ServerTable` (servers, epochs, eager registration) both of the next two work on;
- `control`: add / remove / reconnect / list at runtime (M6, M7), persisted to mcp.json;
- `manager`: `MCPManager`, what the engine holds (`Services.mcp`): discovery, loading, calls.
The model-facing tools are in tools/mcp/; the composition root gives the manager their tool factory.
"""

from services.mcp.config import MCP_FILE, MCPError, ServerSpec
from services.mcp.loads import Handle
from services.mcp.manager import MCPManager
from services.mcp.servers import ToolFactory

__all__ = ["MCP_FILE", "Handle", "MCPError", "MCPManager", "ServerSpec", "ToolFactory"]
