"""Runtime management of MCP servers (M6, M7): add, remove, reconnect, list.

- add: connect first (a server that does not answer is not added), register, then persist to mcp.json;
  a failed write rolls the registration back.
- remove: unregister, persist, then close the connection (so a failed write can restore the live
  server without reconnecting). A server that never registered (failed at start, or only in the file)
  is still removed from the file.
- reconnect: reads the definition from mcp.json (so a server that failed at start, or was edited,
  comes up as written), opens a new connection with a new epoch: tools loaded before answer "load it
  again" (M6). Eager tools are re-registered.
Every operation goes to the operation log as `mcp_manage`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from services.mcp_config import (
    MCPError,
    ServerSpec,
    check_name,
    read_raw,
    spec_from_file,
    write_raw,
)

if TYPE_CHECKING:
    from services.mcp import MCPManager


def _not_saved(m: "MCPManager", e: OSError, what: str) -> str:
    return f"could not save {m.path.name} ({e.strerror or e}); the server was not {what}"


def _log(m: "MCPManager", action: str, name: str, session: str, actor: str, error: str = "", **extra: Any) -> None:
    detail = {"action": action, "server": name, "ok": not error, **extra}
    if error:
        detail["error"] = error
    m.store.log_op("mcp_manage", session, actor, detail)


async def add_server(m: "MCPManager", name: str, spec: ServerSpec | dict[str, Any], *, persist: bool = True,
                     session: str = "", actor: str = "") -> str:
    async with m.lock:
        try:
            check_name(name)
            spec = spec if isinstance(spec, ServerSpec) else ServerSpec.parse(name, spec)
            if name in m.servers:
                raise MCPError(f'an MCP server named "{name}" already exists; remove it first or reconnect it')
            raw = read_raw(m.path) if persist else None
            if raw is not None and name in raw["mcpServers"]:
                raise MCPError(f'"{name}" is already defined in mcp.json; use mcp_reconnect to (re)start it')
            server = m.new_server(spec)
            try:
                await m.connect(server)
            except MCPError:
                await server.conn.close()
                raise
            m.servers[name] = server
            m.invalid.pop(name, None)
            m.register_eager(server)
            if raw is not None:
                raw["mcpServers"][name] = spec.to_json()
                try:
                    write_raw(m.path, raw)
                except OSError as e:
                    m.unregister_eager(name)
                    del m.servers[name]
                    await server.conn.close()
                    raise MCPError(_not_saved(m, e, "added")) from None
        except MCPError as e:
            _log(m, "add", name, session, actor, str(e))
            raise
        _log(m, "add", name, session, actor, transport=spec.transport, tools=len(server.defs()))
        hint = " Their names are in the tool list." if not m.lazy else " Use mcp_discover to see its tools."
        return f'Added MCP server "{name}" ({spec.transport}, {len(server.defs())} tools).{hint}'


async def remove_server(m: "MCPManager", name: str, *, persist: bool = True, session: str = "",
                        actor: str = "") -> str:
    async with m.lock:
        try:
            raw = read_raw(m.path) if persist else None
            in_file = raw is not None and name in raw["mcpServers"]
            server = m.servers.get(name)
            if server is None and not in_file and name not in m.invalid:
                known = ", ".join(sorted({*m.servers, *m.invalid})) or "(none)"
                raise MCPError(f'no MCP server named "{name}". Servers: {known}')
            if server is not None:
                m.unregister_eager(name)
                del m.servers[name]
            if in_file:
                del raw["mcpServers"][name]  # type: ignore[index]
                try:
                    write_raw(m.path, raw)  # type: ignore[arg-type]
                except OSError as e:
                    if server is not None:
                        m.servers[name] = server
                        m.register_eager(server)
                    raise MCPError(_not_saved(m, e, "removed")) from None
            m.invalid.pop(name, None)
        except MCPError as e:
            _log(m, "remove", name, session, actor, str(e))
            raise
        if server is not None:
            await server.conn.close()
        _log(m, "remove", name, session, actor, registered=server is not None, in_file=in_file)
        return f'Removed MCP server "{name}".'


async def reconnect(m: "MCPManager", name: str, *, session: str = "", actor: str = "") -> str:
    async with m.lock:
        try:
            check_name(name)
            old = m.servers.get(name)
            try:
                spec = spec_from_file(m.path, name)
            except MCPError:
                if old is None:
                    raise
                spec = None  # the file is broken: keep the running definition
            spec = spec or (old.spec if old else None)
            if spec is None:
                known = ", ".join(sorted({*m.servers, *m.invalid})) or "(none)"
                raise MCPError(f'no MCP server named "{name}" (not in mcp.json either). Servers: {known}')
            if old is not None:
                m.unregister_eager(name)
                await old.conn.close()
            server = m.servers[name] = m.new_server(spec)
            m.invalid.pop(name, None)
            await m.connect(server)
            m.register_eager(server)
        except MCPError as e:
            _log(m, "reconnect", name, session, actor, str(e))
            raise
        _log(m, "reconnect", name, session, actor, tools=len(server.defs()))
        again = "" if not m.lazy else " Tools loaded from it before must be loaded again with mcp_load."
        return f'Reconnected MCP server "{name}" ({len(server.defs())} tools).{again}'


def list_servers(m: "MCPManager") -> str:
    try:
        in_file = read_raw(m.path)["mcpServers"]
    except MCPError:
        in_file = {}
    names = sorted({*m.servers, *m.invalid, *in_file})
    if not names:
        return "No MCP servers are configured."
    lines = [f"MCP servers ({len(names)}):"]
    for name in names:
        s = m.servers.get(name)
        saved = "" if name in in_file else ", not saved in mcp.json"
        if s is not None:
            tools = f"{len(s.defs())} tools, " if s.defs() else ""
            lines.append(f"- {name}: {s.state()}, {tools}{s.spec.transport}: {s.spec.target()}{saved}")
        elif name in m.invalid:
            lines.append(f"- {name}: invalid definition: {m.invalid[name]}")
        else:
            entry = in_file[name]
            off = isinstance(entry, dict) and entry.get("disabled")
            state = "disabled" if off else "not started (use mcp_reconnect)"
            lines.append(f"- {name}: {state}")
    return "\n".join(lines)
