"""The MCP servers the bot runs: their specs, one persistent connection each, and eager registration.

Both the manager (discovery, loading, calls) and the control (add, remove, reconnect) work on this table,
so neither reaches into the other's fields.

Epochs (M6): every registration of a server gets a new epoch; a reconnect makes a new one, so handles
loaded before answer "load it again". Automatic reconnects after a transport failure keep the epoch.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.config import Settings
from services.errors import ToolError
from services.mcp.config import MCP_FILE, ServerSpec, load_specs
from services.mcp.conn import MCPConnection
from services.mcp.convert import RemoteDef, unique_names
from services.mcp.loads import Handle
from services.store import AppStore
from tools.base import Tool
from tools.registry import SharedExecutor

log = logging.getLogger(__name__)

#: Turns a handle into the tool the model calls (tools/mcp/remote.py's RemoteTool, given by the
#: composition root so that this service never imports the tools layer).
ToolFactory = Callable[[Handle], Tool[Any]]


@dataclass
class Server:
    spec: ServerSpec
    conn: MCPConnection
    epoch: int
    _defs: dict[str, RemoteDef] = field(default_factory=dict)
    _defs_at: int = -1

    def defs(self) -> dict[str, RemoteDef]:
        """Exposed name → definition, from the tools listed at the last connect (after the filter)."""
        if self._defs_at != self.conn.connects:
            self._defs = {n: RemoteDef.from_mcp(self.spec.name, t, n)
                          for n, t in unique_names(self.spec.name, self.conn.tools).items()}
            self._defs_at = self.conn.connects
        return self._defs

    def state(self) -> str:
        if self.conn.alive():
            return "connected"
        if self.conn.connects and self.conn.status == "down":
            return f"reconnecting at the next call ({self.conn.error})"
        return f"unavailable ({self.conn.error or self.conn.status})"


class ServerTable:
    def __init__(self, config_dir: Path, settings: Settings, store: AppStore, shared: SharedExecutor,
                 tool_factory: ToolFactory) -> None:
        self.path = Path(config_dir) / MCP_FILE
        self.settings = settings
        self.store = store
        self.shared = shared
        self.tool = tool_factory
        self.servers: dict[str, Server] = {}
        #: Servers whose definition in mcp.json could not be read (shown as unavailable).
        self.invalid: dict[str, str] = {}
        self._epochs = itertools.count(1)
        self._eager: dict[str, list[str]] = {}
        self.lock = asyncio.Lock()  # one add / remove / reconnect at a time

    @property
    def lazy(self) -> bool:
        return self.settings.mcp.lazy_load

    @property
    def proxy(self) -> bool:
        return self.lazy and self.settings.mcp.lazy_mode == "proxy"

    async def start(self) -> dict[str, str]:
        """Connect every server concurrently. Never raises: returns server → "ok (N tools)" or the error."""
        specs, self.invalid = load_specs(self.path)
        for name, err in self.invalid.items():
            log.warning("MCP server %s not loaded: %s", name, err)
        for name, spec in specs.items():
            self.servers[name] = self.new_server(spec)
        results = await asyncio.gather(*(self.connect(s) for s in self.servers.values()), return_exceptions=True)
        report: dict[str, str] = {}
        for (name, server), res in zip(list(self.servers.items()), results, strict=True):
            if isinstance(res, BaseException):
                report[name] = str(res) if isinstance(res, ToolError) else f"{type(res).__name__}: {res}"
                log.warning("MCP server %s failed to start: %s", name, report[name])
            else:
                report[name] = f"ok ({len(server.defs())} tools)"
                self.register_eager(server)
        return {**report, **self.invalid}

    async def close(self) -> None:
        """Shut every session (and stdio subprocess) down."""
        servers, self.servers = list(self.servers.values()), {}
        await asyncio.gather(*(s.conn.close() for s in servers), return_exceptions=True)

    def new_server(self, spec: ServerSpec) -> Server:
        mcp = self.settings.mcp
        return Server(spec, MCPConnection(spec, mcp.connect_timeout_sec, mcp.call_timeout_sec), next(self._epochs))

    async def connect(self, server: Server, *, force: bool = False) -> None:
        await server.conn.connect(force=force)

    def attach(self, server: Server) -> None:
        """Make a connected server live: listed, and its tools registered in eager mode."""
        self.servers[server.spec.name] = server
        self.invalid.pop(server.spec.name, None)
        self.register_eager(server)

    def detach(self, name: str) -> Server | None:
        """Take a server out (its eager tools too); the caller closes its connection."""
        self.unregister_eager(name)
        return self.servers.pop(name, None)

    def known(self) -> str:
        return ", ".join(sorted({*self.servers, *self.invalid})) or "(none)"

    # --- eager mode -------------------------------------------------------------------------------
    def eager_tools(self) -> list[Tool[Any]]:
        if self.lazy:
            return []
        names = {n for ns in self._eager.values() for n in ns}
        return [t for n in sorted(names) if (t := self.shared.get(n)) is not None]

    def register_eager(self, server: Server) -> None:
        if self.lazy or not server.conn.alive():
            return
        tools = [self.tool(Handle(d, server.epoch)) for d in server.defs().values()]
        self.shared.add(tools)
        self._eager[server.spec.name] = sorted(t.name for t in tools)

    def unregister_eager(self, name: str) -> None:
        self.shared.remove(self._eager.pop(name, []))
