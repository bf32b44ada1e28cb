"""`mcp.json` (the `mcpServers` format MCP clients share): server specs, tool filters (M5), names, file I/O.

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"url": "http://127.0.0.1:8000/mcp", "transport": "streamable_http",
                 "headers": {"Authorization": "Bearer ..."},
                 "filter": {"prefixes": ["search_"], "allow": ["fetch"], "keywords": ["doc"], "match": "any"}}}}

A spec with `command` is stdio; one with `url` is Streamable HTTP unless `transport` (or `type`, as some
clients write it) says `sse`. `"disabled": true` skips a server. A bad entry is reported under its name
and the other servers still load. Writes are atomic (temp file + rename) and keep unknown keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ToolError
from services.files import atomic_write_text

MCP_FILE = "mcp.json"
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
TRANSPORTS = {"stdio": "stdio", "sse": "sse", "streamable_http": "streamable_http",
              "streamable-http": "streamable_http", "http": "streamable_http"}
FILTER_KEYS = ("prefixes", "allow", "keywords", "deny", "match")


class MCPError(ToolError):
    """An MCP failure the model (or the admin) reads: bad spec, unknown server, connection problem."""


def check_name(name: str) -> str:
    """Server names are tool-name parts: `mcp__<server>__<tool>` must stay a valid function name."""
    if not isinstance(name, str) or not NAME_RE.match(name) or "__" in name:
        raise MCPError(
            f'invalid MCP server name "{name}": use 1-32 letters, digits, "_" or "-", without "__"'
        )
    return name


@dataclass(frozen=True)
class ToolFilter:
    """Which of a server's tools to expose. Each given criterion is a test; `match` says whether a tool
    must pass all of them (default) or any. `deny` always removes. An empty filter keeps every tool."""

    prefixes: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    match: str = "all"

    @classmethod
    def parse(cls, raw: Any) -> ToolFilter:
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise MCPError("filter must be an object with prefixes / allow / keywords / deny / match")
        unknown = sorted(set(raw) - set(FILTER_KEYS))
        if unknown:
            raise MCPError(f"unknown filter keys: {', '.join(unknown)} (known: {', '.join(FILTER_KEYS)})")
        lists = {}
        for key in ("prefixes", "allow", "keywords", "deny"):
            value = raw.get(key, [])
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
                raise MCPError(f"filter.{key} must be a list of non-empty strings")
            lists[key] = tuple(value)
        match = raw.get("match", "all")
        if match not in ("all", "any"):
            raise MCPError('filter.match must be "all" or "any"')
        return cls(match=match, **lists)

    def keeps(self, name: str, description: str = "") -> bool:
        if name in self.deny:
            return False
        tests = []
        if self.prefixes:
            tests.append(any(name.startswith(p) for p in self.prefixes))
        if self.allow:
            tests.append(name in self.allow)
        if self.keywords:
            text = f"{name}\n{description}".lower()
            tests.append(any(k.lower() in text for k in self.keywords))
        if not tests:
            return True
        return all(tests) if self.match == "all" else any(tests)

    def to_json(self) -> dict[str, Any] | None:
        keys = ("prefixes", "allow", "keywords", "deny")
        out: dict[str, Any] = {k: list(getattr(self, k)) for k in keys if getattr(self, k)}
        if out and self.match != "all":
            out["match"] = self.match
        return out or None


@dataclass(frozen=True)
class ServerSpec:
    name: str
    transport: str  # stdio | streamable_http | sse
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    filter: ToolFilter = field(default_factory=ToolFilter)

    @classmethod
    def parse(cls, name: str, raw: Any) -> ServerSpec:
        check_name(name)
        if not isinstance(raw, dict):
            raise MCPError(f'MCP server "{name}": the definition must be an object')
        flt = ToolFilter.parse(raw.get("filter"))
        kind = raw.get("transport") or raw.get("type")
        if kind is not None and kind not in TRANSPORTS:
            raise MCPError(f'MCP server "{name}": unknown transport "{kind}" (use stdio, streamable_http or sse)')
        if raw.get("command"):
            if kind not in (None, "stdio"):
                raise MCPError(f'MCP server "{name}": "command" needs the stdio transport, not "{kind}"')
            args = raw.get("args", [])
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise MCPError(f'MCP server "{name}": "args" must be a list of strings')
            return cls(name, "stdio", command=str(raw["command"]), args=tuple(args),
                       env=_pairs(name, "env", raw.get("env")), cwd=str(raw.get("cwd") or ""), filter=flt)
        if raw.get("url"):
            url = str(raw["url"])
            if not url.startswith(("http://", "https://")):
                raise MCPError(f'MCP server "{name}": "url" must start with http:// or https://')
            transport = TRANSPORTS[kind] if kind else "streamable_http"
            if transport == "stdio":
                raise MCPError(f'MCP server "{name}": a url needs the streamable_http or sse transport')
            return cls(name, transport, url=url, headers=_pairs(name, "headers", raw.get("headers")), filter=flt)
        raise MCPError(f'MCP server "{name}": give "command" (stdio) or "url" (streamable_http / sse)')

    def connection(self, http_client_factory: Any) -> dict[str, Any]:
        """The langchain-mcp-adapters `Connection` for this server."""
        if self.transport == "stdio":
            conn: dict[str, Any] = {"transport": "stdio", "command": self.command, "args": list(self.args),
                                    "env": dict(self.env) or None}
            if self.cwd:
                conn["cwd"] = self.cwd
            return conn
        return {"transport": self.transport, "url": self.url, "headers": dict(self.headers) or None,
                "httpx_client_factory": http_client_factory}

    def to_json(self) -> dict[str, Any]:
        """The `mcpServers` entry, as written back to mcp.json."""
        if self.transport == "stdio":
            out: dict[str, Any] = {"command": self.command, "args": list(self.args)}
            if self.env:
                out["env"] = dict(self.env)
            if self.cwd:
                out["cwd"] = self.cwd
        else:
            out = {"url": self.url, "transport": self.transport}
            if self.headers:
                out["headers"] = dict(self.headers)
        flt = self.filter.to_json()
        if flt:
            out["filter"] = flt
        return out

    def target(self) -> str:
        """What it runs or reaches, without secrets (env values and headers are not shown)."""
        if self.transport == "stdio":
            line = " ".join([self.command, *self.args])
            keys = ", ".join(k for k, _ in self.env)
            return line + (f" (env: {keys})" if keys else "")
        keys = ", ".join(k for k, _ in self.headers)
        return self.url + (f" (headers: {keys})" if keys else "")


def _pairs(name: str, key: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise MCPError(f'MCP server "{name}": "{key}" must be an object of strings')
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def parse_kv_list(items: list[str], what: str) -> dict[str, str]:
    """`["KEY=VALUE", ...]` (how the model passes env vars and headers) to a dict."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise MCPError(f'{what} entries must look like KEY=VALUE, got "{item}"')
        out[key] = value
    return out


# --- the file -----------------------------------------------------------------------------------

def read_raw(path: Path) -> dict[str, Any]:
    """The whole file as JSON (missing file = no servers). Raises MCPError for unreadable JSON."""
    if not path.exists():
        return {"mcpServers": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MCPError(f"{path.name} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise MCPError(f'{path.name} must be an object with an "mcpServers" object')
    data.setdefault("mcpServers", {})
    return data


def load_specs(path: Path) -> tuple[dict[str, ServerSpec], dict[str, str]]:
    """Every enabled server of the file, and the per-server errors of the ones that could not be read."""
    specs: dict[str, ServerSpec] = {}
    errors: dict[str, str] = {}
    try:
        raw = read_raw(path)["mcpServers"]
    except MCPError as e:
        return {}, {"(file)": str(e)}
    for name in sorted(raw):
        entry = raw[name]
        if isinstance(entry, dict) and entry.get("disabled") is True:
            continue
        try:
            specs[name] = ServerSpec.parse(name, entry)
        except MCPError as e:
            errors[name] = str(e)
    return specs, errors


def spec_from_file(path: Path, name: str) -> ServerSpec | None:
    raw = read_raw(path)["mcpServers"]
    return ServerSpec.parse(name, raw[name]) if name in raw else None


def write_raw(path: Path, data: dict[str, Any]) -> None:
    """Atomic and 0600 (services/files.py): mcp.json may hold keys."""
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
