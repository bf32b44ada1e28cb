"""Runtime management of MCP servers (M6, M7): add, remove, reconnect, list.

- add: connect first (a server that does not answer is not added), attach, then persist to mcp.json;
  a failed write detaches it again.
- remove: detach, persist, then close the connection (so a failed write can re-attach the live server
  without reconnecting). A server that never registered (failed at start, or only in the file) is still
  removed from the file.
- reconnect: reads the definition from mcp.json (so a server that failed at start, or was edited, comes
  up as written), opens a new connection with a new epoch: tools loaded before answer "load it again"
  (M6). Eager tools are re-registered.
Every operation goes to the operation log as `mcp_manage`.
"""

from __future__ import annotations

from typing import Any

from services.mcp.config import MCPError, ServerSpec, check_name, read_raw, spec_from_file, write_raw
from services.mcp.servers import ServerTable


class ServerControl:
    """Changes to the servers of a `ServerTable`, one at a time (the table's lock), each persisted and logged."""

    def __init__(self, table: ServerTable) -> None:
        self.t = table

    def _not_saved(self, e: OSError, what: str) -> str:
        return f"could not save {self.t.path.name} ({e.strerror or e}); the server was not {what}"

    def _log(self, action: str, name: str, session: str, actor: str, error: str = "", **extra: Any) -> None:
        detail = {"action": action, "server": name, "ok": not error, **extra}
        if error:
            detail["error"] = error
        self.t.store.log_op("mcp_manage", session, actor, detail)

    async def add_server(self, name: str, spec: ServerSpec | dict[str, Any], *, persist: bool = True,
                         session: str = "", actor: str = "") -> str:
        t = self.t
        async with t.lock:
            try:
                check_name(name)
                spec = spec if isinstance(spec, ServerSpec) else ServerSpec.parse(name, spec)
                if name in t.servers:
                    raise MCPError(f'an MCP server named "{name}" already exists; remove it first or reconnect it')
                raw = read_raw(t.path) if persist else None
                if raw is not None and name in raw["mcpServers"]:
                    raise MCPError(f'"{name}" is already defined in mcp.json; use mcp_reconnect to (re)start it')
                server = t.new_server(spec)
                try:
                    await t.connect(server)
                except MCPError:
                    await server.conn.close()
                    raise
                t.attach(server)
                if raw is not None:
                    raw["mcpServers"][name] = spec.to_json()
                    try:
                        write_raw(t.path, raw)
                    except OSError as e:
                        t.detach(name)
                        await server.conn.close()
                        raise MCPError(self._not_saved(e, "added")) from None
            except MCPError as e:
                self._log("add", name, session, actor, str(e))
                raise
        self._log("add", name, session, actor, transport=spec.transport, tools=len(server.defs()))
        hint = " Their names are in the tool list." if not t.lazy else " Use mcp_discover to see its tools."
        return f'Added MCP server "{name}" ({spec.transport}, {len(server.defs())} tools).{hint}'

    async def remove_server(self, name: str, *, persist: bool = True, session: str = "", actor: str = "") -> str:
        t = self.t
        async with t.lock:
            try:
                raw = read_raw(t.path) if persist else None
                in_file = raw is not None and name in raw["mcpServers"]
                if name not in t.servers and not in_file and name not in t.invalid:
                    raise MCPError(f'no MCP server named "{name}". Servers: {t.known()}')
                server = t.detach(name)
                if raw is not None and in_file:
                    del raw["mcpServers"][name]
                    try:
                        write_raw(t.path, raw)
                    except OSError as e:
                        if server is not None:
                            t.attach(server)
                        raise MCPError(self._not_saved(e, "removed")) from None
                t.invalid.pop(name, None)
            except MCPError as e:
                self._log("remove", name, session, actor, str(e))
                raise
        if server is not None:
            await server.conn.close()
        self._log("remove", name, session, actor, registered=server is not None, in_file=in_file)
        return f'Removed MCP server "{name}".'

    async def reconnect(self, name: str, *, session: str = "", actor: str = "") -> str:
        t = self.t
        async with t.lock:
            try:
                check_name(name)
                old = t.servers.get(name)
                try:
                    spec = spec_from_file(t.path, name)
                except MCPError:
                    if old is None:
                        raise
                    spec = None  # the file is broken: keep the running definition
                spec = spec or (old.spec if old else None)
                if spec is None:
                    raise MCPError(f'no MCP server named "{name}" (not in mcp.json either). Servers: {t.known()}')
                if old is not None:
                    t.detach(name)
                    await old.conn.close()
                server = t.new_server(spec)
                t.servers[name] = server  # listed (as unavailable) even if connecting fails
                t.invalid.pop(name, None)
                await t.connect(server)
                t.attach(server)
            except MCPError as e:
                self._log("reconnect", name, session, actor, str(e))
                raise
        self._log("reconnect", name, session, actor, tools=len(server.defs()))
        again = "" if not t.lazy else " Tools loaded from it before must be loaded again with mcp_load."
        return f'Reconnected MCP server "{name}" ({len(server.defs())} tools).{again}'

    def status(self) -> list[dict[str, Any]]:
        """Every server the table or mcp.json knows, by name: its state, tool count, what it runs (no secrets),
        last error, whether mcp.json holds it. mcp_list and the panel show this."""
        t = self.t
        try:
            in_file = read_raw(t.path)["mcpServers"]
        except MCPError:
            in_file = {}
        out: list[dict[str, Any]] = []
        for name in sorted({*t.servers, *t.invalid, *in_file}):
            row: dict[str, Any] = {"name": name, "saved": name in in_file, "tools": 0, "transport": "",
                                   "target": "", "error": ""}
            s = t.servers.get(name)
            if s is not None:
                row.update(state=s.state(), connected=s.conn.alive(), tools=len(s.defs()),
                           transport=s.spec.transport, target=s.spec.target(), error=s.conn.error)
            elif name in t.invalid:
                row.update(state=f"invalid definition: {t.invalid[name]}", connected=False, error=t.invalid[name])
            else:
                entry = in_file[name]
                off = isinstance(entry, dict) and entry.get("disabled")
                row.update(state="disabled" if off else "not started (use mcp_reconnect)", connected=False)
            out.append(row)
        return out

    def list_servers(self) -> str:
        rows = self.status()
        if not rows:
            return "No MCP servers are configured."
        lines = [f"MCP servers ({len(rows)}):"]
        for r in rows:
            saved = "" if r["saved"] else ", not saved in mcp.json"
            if r["transport"]:
                tools = f"{r['tools']} tools, " if r["tools"] else ""
                lines.append(f"- {r['name']}: {r['state']}, {tools}{r['transport']}: {r['target']}{saved}")
            else:
                lines.append(f"- {r['name']}: {r['state']}")
        return "\n".join(lines)
