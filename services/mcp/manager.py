"""The MCP manager the engine holds (`Services.mcp`): discovery, loading and calls (M2, M3, M6).

Modes (`mcp.lazy_load`, `mcp.lazy_mode`): eager registers every tool in the shared executor. Lazy
native loads tools into the calling session's executor (they join its tool list). Lazy proxy keeps the
tools array fixed: loading returns the schemas as text and calls go through `mcp_call`. Adding, removing
and reconnecting servers is `self.control` (services/mcp/control.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from services.config import Settings
from services.mcp.config import MCPError
from services.mcp.control import ServerControl
from services.mcp.convert import (
    RemoteDef,
    one_line,
    result_images,
    result_text,
    split_name,
)
from services.mcp.loads import REMOVED, Handle, SessionLoads
from services.mcp.servers import Server, ServerTable, ToolFactory
from services.sessions import SessionRegistry
from services.store import AppStore
from tools.base import Tool
from tools.registry import SessionExecutor, SharedExecutor

log = logging.getLogger(__name__)

MAX_LOAD = 32
#: mcp_discover's answer stays this short however many tools the servers have.
MAX_LISTING_CHARS = 8000
MORE_TOOLS = "… {hidden} more lines not shown: narrow the list with server=\"<name>\" or keyword=\"<text>\"."
REMOVED_TEXT = ('the MCP server "{server}" of tool "{name}" is not configured any more; call mcp_discover to see '
                'what is available')
STALE_TEXT = ('the MCP server "{server}" was reconnected after tool "{name}" was loaded, so this handle is no longer '
              'valid. Load it again with mcp_load(names=["{name}"])')


def capped_listing(lines: list[str], footer: str) -> str:
    """The lines that fit in MAX_LISTING_CHARS (with the footer), then how many were left out."""
    kept: list[str] = []
    size = len(footer)
    for i, line in enumerate(lines):
        if size + len(line) + 1 > MAX_LISTING_CHARS - 120:
            kept.append(MORE_TOOLS.format(hidden=len(lines) - i))
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join([*kept, footer])


class MCPManager:
    def __init__(self, config_dir: Path, settings: Settings, store: AppStore, shared: SharedExecutor,
                 sessions: SessionRegistry, tool_factory: ToolFactory) -> None:
        self.table = ServerTable(config_dir, settings, store, shared, tool_factory)
        self.control = ServerControl(self.table)
        self.settings = settings
        self.loads = SessionLoads(store, self._current)
        self.report: dict[str, str] = {}
        sessions.add_restorer(self._restore)

    # The table's state, read by tools and tests.
    @property
    def servers(self) -> dict[str, Server]:
        return self.table.servers

    @property
    def invalid(self) -> dict[str, str]:
        return self.table.invalid

    @property
    def path(self) -> Path:
        return self.table.path

    @property
    def lazy(self) -> bool:
        return self.table.lazy

    @property
    def proxy(self) -> bool:
        return self.table.proxy

    async def start(self) -> dict[str, str]:
        """Connect every server; never raises. The report (server → "ok (N tools)" or why not) is kept."""
        self.report = await self.table.start()
        return self.report

    async def close(self) -> None:
        await self.table.close()

    def eager_tools(self) -> list[Tool[Any]]:
        return self.table.eager_tools()

    # --- discovery and loading (M2) -------------------------------------------------------------
    async def discover(self, server: str | None = None, keyword: str | None = None) -> str:
        names = sorted({*self.servers, *self.invalid})
        if server is not None:
            if server not in names:
                raise MCPError(f'no MCP server named "{server}". Servers: {", ".join(names) or "(none)"}')
            names = [server]
        if not names:
            return "No MCP servers are configured."
        await self._retry_failed(names)
        kw = (keyword or "").strip().lower()
        lines = [f"MCP servers ({len(names)}):"]
        for name in names:
            s = self.servers.get(name)
            if s is None:
                lines.append(f"## {name}: unavailable (invalid definition: {self.invalid[name]})")
                continue
            defs = s.defs()
            if not defs and not s.conn.alive():
                lines.append(f"## {name}: {s.state()}")
                continue
            shown = [d for n, d in sorted(defs.items()) if not kw or kw in f"{n}\n{d.description}".lower()]
            count = f"{len(shown)} of {len(defs)} tools match \"{keyword}\"" if kw else f"{len(defs)} tools"
            state = "" if s.conn.alive() else f", {s.state()}"
            lines.append(f"## {name} ({count}{state})")
            lines += [f"- {d.name}: {one_line(d.description)}" for d in shown]
        how = ("then call them with mcp_call(name, arguments)" if self.proxy
               else "they stay in your tool list for the rest of this conversation")
        return capped_listing(lines, f"Load tools with mcp_load(names=[...]); {how}.")

    async def _retry_failed(self, names: list[str]) -> None:
        """A server that failed to connect gets another try (within its backoff) when it is looked at."""
        todo = [s for n in names if (s := self.servers.get(n)) and s.conn.status in ("failed", "new")]
        if todo:
            await asyncio.gather(*(self.table.connect(s) for s in todo), return_exceptions=True)
            for s in todo:
                self.table.register_eager(s)

    async def load(self, session_key: str, names: list[str], executor: SessionExecutor | None, *,
                   persist: bool = True) -> str:
        """Load tools into a session (`persist`: its own executor, kept in the store) or, with `persist`
        False, into a throwaway executor only (a subagent or clock run: nothing is recorded)."""
        wanted = sorted(set(names))
        if len(wanted) > MAX_LOAD:
            raise MCPError(f"load at most {MAX_LOAD} tools at once")
        await self._retry_failed(sorted({p[0] for n in wanted if (p := split_name(n))}))
        found: list[Handle] = []
        missing: list[str] = []
        for name in wanted:
            parts = split_name(name)
            s = self.servers.get(parts[0]) if parts else None
            d = s.defs().get(name) if s else None
            if s is not None and d is not None:
                found.append(Handle(d, s.epoch))
            elif s is not None and not s.defs():
                missing.append(f"{name} (server {s.spec.name} is {s.state()})")
            elif s is not None or (parts and parts[0] in self.invalid):
                missing.append(f"{name} (no such tool on server {parts[0] if parts else name})")
            else:
                missing.append(f"{name} (unknown name; MCP tools are named mcp__<server>__<tool>)")
        if not found:
            raise MCPError("nothing loaded: " + "; ".join(missing) + ". Call mcp_discover to see the tool names.")
        self.loads.add(session_key, found, scratch=None if persist else executor)
        if not self.proxy and executor is not None:
            executor.load([self.table.tool(h) for h in found])
        note = f"\nNot loaded: {'; '.join(missing)}." if missing else ""
        n = len(found)
        tools, them = ("tool", "It is") if n == 1 else ("tools", "They are")
        if not self.proxy:
            return (f"Loaded {n} {tools}: {', '.join(h.d.name for h in found)}. {them} in your tool "
                    f"list from now on in this conversation.{note}")
        parts_text = [f"### {h.d.name}\n{h.d.description}\nParameters: "
                      f"{json.dumps(h.d.parameters, ensure_ascii=False, separators=(',', ':'))}" for h in found]
        it = "it" if n == 1 else "them"
        return (f"Loaded {n} {tools}. Call {it} with mcp_call(name, arguments); the arguments must match "
                f"the parameters below.{note}\n\n" + "\n\n".join(parts_text))

    def _current(self, snapshot: RemoteDef) -> tuple[RemoteDef, int]:
        s = self.servers.get(snapshot.server)
        if s is None:
            return snapshot, REMOVED
        return s.defs().get(snapshot.name, snapshot), s.epoch

    def _restore(self, session_key: str, executor: SessionExecutor) -> None:
        """Registered with the SessionRegistry: a session's loaded tools come back after a restart."""
        handles = self.loads.handles(session_key)
        if handles and not self.proxy:
            executor.load([self.table.tool(h) for _, h in sorted(handles.items())])

    # --- calls ----------------------------------------------------------------------------------
    async def call(self, handle: Handle, args: dict[str, Any], images: list[str] | None = None) -> str:
        """The result as text; with `images` given, the result's images (base64) are appended to it."""
        d = handle.d
        s = self.servers.get(d.server)
        if s is None or handle.epoch == REMOVED:
            raise MCPError(REMOVED_TEXT.format(server=d.server, name=d.name))
        if handle.epoch != s.epoch:
            raise MCPError(STALE_TEXT.format(server=d.server, name=d.name))
        result = await s.conn.call(d.tool, args, retry_safe=d.read_only)
        text = result_text(result)
        if result.isError:
            raise MCPError(f'MCP tool "{d.name}" failed: {text}')
        if images is not None:
            images.extend(result_images(result))
        return text

    async def call_loaded(self, session_key: str, name: str, arguments: dict[str, Any], *,
                          scratch: SessionExecutor | None = None, images: list[str] | None = None) -> str:
        """Proxy mode (`mcp_call`): only tools loaded in this session (or this throwaway executor),
        arguments checked locally first."""
        handle = self.loads.get(session_key, name, scratch)
        if handle is None:
            raise MCPError(f'tool "{name}" is not loaded in this conversation. Load it first with '
                           f'mcp_load(names=["{name}"]); mcp_discover lists the tools')
        problems = handle.problems(arguments)
        if problems:
            schema = json.dumps(handle.d.parameters, ensure_ascii=False, separators=(",", ":"))
            raise MCPError(f'invalid arguments for "{name}": {"; ".join(problems)}. Its parameters: {schema}')
        return await self.call(handle, arguments, images)
