"""The MCP manager (M1-M7): servers from `mcp.json`, one persistent connection each, lazy or eager tools.

How the MCP modules fit:
- `mcp_config`: the `mcpServers` file, server specs, tool filters (M5), names, atomic writes;
- `mcp_conn`: one persistent session per server, owned by its own task, deadlines and reconnects;
- `mcp_transport`: the HTTP client (no total timeout, M4) that reports broken streams at once;
- `mcp_convert`: exposed names `mcp__<server>__<tool>`, OpenAI schemas (T2), result text (M3);
- `mcp_remote`: the `Tool` handle of one MCP tool; `mcp_loads`: per-session loads, kept in the store;
- `mcp_manage`: add / remove / reconnect / list at runtime (M6, M7), persisted to mcp.json;
- this module: the manager the engine holds (`Services.mcp`) and the model-facing operations.

Modes (`mcp.lazy_load`, `mcp.lazy_mode`): eager registers every tool in the shared executor. Lazy
native loads tools into the calling session's executor (they join its tool list). Lazy proxy keeps the
tools array fixed: loading returns the schemas as text and calls go through `mcp_call`.

Epochs (M6): every registration of a server gets a new epoch; `reconnect()` makes a new one, so handles
loaded before answer "load it again". Automatic reconnects after a transport failure keep the epoch.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services import mcp_manage
from services.config import Settings
from services.mcp_config import MCP_FILE, MCPError, ServerSpec, load_specs
from services.mcp_conn import MCPConnection
from services.mcp_convert import (
    RemoteDef,
    one_line,
    result_text,
    split_name,
    unique_names,
)
from services.mcp_loads import REMOVED, SessionLoads
from services.mcp_remote import Handle, RemoteTool
from services.sessions import SessionRegistry
from services.store import AppStore
from tools.executor import SessionExecutor, SharedExecutor

if TYPE_CHECKING:
    from tools.base import Tool

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


class MCPManager:
    def __init__(self, config_dir: Path, settings: Settings, store: AppStore, shared: SharedExecutor,
                 sessions: SessionRegistry) -> None:
        self.path = Path(config_dir) / MCP_FILE
        self.settings = settings
        self.store = store
        self.shared = shared
        self.servers: dict[str, Server] = {}
        #: Servers whose definition in mcp.json could not be read (shown as unavailable).
        self.invalid: dict[str, str] = {}
        self._epochs = itertools.count(1)
        self._eager: dict[str, list[str]] = {}
        self.lock = asyncio.Lock()  # one add / remove / reconnect at a time
        self.loads = SessionLoads(store, self._current)
        sessions.add_restorer(self._restore)

    @property
    def lazy(self) -> bool:
        return self.settings.mcp.lazy_load

    @property
    def proxy(self) -> bool:
        return self.lazy and self.settings.mcp.lazy_mode == "proxy"

    # --- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> dict[str, str]:
        """Connect every server concurrently. Never raises: returns server → "ok (N tools)" or the error."""
        specs, self.invalid = load_specs(self.path)
        for name, err in self.invalid.items():
            log.warning("MCP server %s not loaded: %s", name, err)
        for name, spec in specs.items():
            self.servers[name] = self.new_server(spec)
        results = await asyncio.gather(*(self.connect(s) for s in self.servers.values()), return_exceptions=True)
        report: dict[str, str] = {}
        for (name, server), res in zip(list(self.servers.items()), results):
            if isinstance(res, BaseException):
                report[name] = str(res) if isinstance(res, MCPError) else f"{type(res).__name__}: {res}"
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

    # --- the tools of the engine --------------------------------------------------------------
    def engine_tools(self) -> list["Tool"]:
        """What to register in the shared executor (call after start())."""
        from tools.mcp_tools import (
            engine_tools,  # the model-facing tools live in the tools layer
        )

        return engine_tools(self)

    def eager_tools(self) -> list["Tool"]:
        if self.lazy:
            return []
        names = {n for ns in self._eager.values() for n in ns}
        return [t for n in sorted(names) if (t := self.shared.get(n)) is not None]

    def register_eager(self, server: Server) -> None:
        if self.lazy or not server.conn.alive():
            return
        tools = [RemoteTool(self, Handle(d, server.epoch)) for d in server.defs().values()]
        self.shared.add(tools)
        self._eager[server.spec.name] = sorted(t.name for t in tools)

    def unregister_eager(self, name: str) -> None:
        self.shared.remove(self._eager.pop(name, []))

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
            await asyncio.gather(*(self.connect(s) for s in todo), return_exceptions=True)
            for s in todo:
                self.register_eager(s)

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
            if d is not None:
                found.append(Handle(d, s.epoch))  # type: ignore[union-attr]
            elif s is not None and not s.defs():
                missing.append(f"{name} (server {parts[0]} is {s.state()})")  # type: ignore[index]
            elif s is not None or (parts and parts[0] in self.invalid):
                missing.append(f"{name} (no such tool on server {parts[0]})")  # type: ignore[index]
            else:
                missing.append(f"{name} (unknown name; MCP tools are named mcp__<server>__<tool>)")
        if not found:
            raise MCPError("nothing loaded: " + "; ".join(missing) + ". Call mcp_discover to see the tool names.")
        self.loads.add(session_key, found, scratch=None if persist else executor)
        if not self.proxy and executor is not None:
            executor.load([RemoteTool(self, h) for h in found])
        note = f"\nNot loaded: {'; '.join(missing)}." if missing else ""
        if not self.proxy:
            return (f"Loaded {len(found)} tools: {', '.join(h.d.name for h in found)}. They are in your tool "
                    f"list from now on in this conversation.{note}")
        parts_text = [f"### {h.d.name}\n{h.d.description}\nParameters: "
                      f"{json.dumps(h.d.parameters, ensure_ascii=False, separators=(',', ':'))}" for h in found]
        return (f"Loaded {len(found)} tools. Call them with mcp_call(name, arguments); the arguments must match "
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
            executor.load([RemoteTool(self, h) for _, h in sorted(handles.items())])

    # --- calls ----------------------------------------------------------------------------------
    async def call(self, handle: Handle, args: dict[str, Any]) -> str:
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
        return text

    async def call_loaded(self, session_key: str, name: str, arguments: dict[str, Any], *,
                          scratch: SessionExecutor | None = None) -> str:
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
        return await self.call(handle, arguments)

    # --- runtime management (M6, M7): services/mcp_manage.py -------------------------------------
    async def add_server(self, name: str, spec: ServerSpec | dict[str, Any], **kw: Any) -> str:
        return await mcp_manage.add_server(self, name, spec, **kw)

    async def remove_server(self, name: str, **kw: Any) -> str:
        return await mcp_manage.remove_server(self, name, **kw)

    async def reconnect(self, name: str, **kw: Any) -> str:
        return await mcp_manage.reconnect(self, name, **kw)

    def list_servers(self) -> str:
        return mcp_manage.list_servers(self)
