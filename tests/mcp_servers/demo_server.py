"""A FastMCP test server, run as a subprocess by the MCP tests and the benchmark.

    python demo_server.py stdio
    python demo_server.py streamable-http PORT
    python demo_server.py sse PORT
    python demo_server.py stdio --many 20 --prefix s1   # 20 generated tools (benchmark)
    python demo_server.py stdio --hostile               # oversized texts and a task-only tool

Its tools cover what the client must handle: plain text, an enum parameter, a 50,000-character
result, a slow call, an error result, its environment, a crash in the middle of a call, and the process id (so a
test can kill the server between calls).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Literal

from mcp import types
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations


class HostileMCP(FastMCP):
    """Lists `needs_task` as requiring MCP task augmentation (FastMCP has no option for it)."""

    async def list_tools(self) -> list[types.Tool]:
        tools = await super().list_tools()
        return [t.model_copy(update={"execution": types.ToolExecution(taskSupport="required")})
                if t.name == "needs_task" else t for t in tools]


def build(port: int, many: int, prefix: str, hostile: bool = False) -> FastMCP:
    server = (HostileMCP if hostile else FastMCP)("demo", host="127.0.0.1", port=port, log_level="WARNING")
    if hostile:
        _add_hostile(server)
        return server
    if many:
        _add_generated(server, many, prefix)
        return server

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str) -> str:
        """Echo the text back unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers.

        Returns the sum as text."""
        return str(a + b)

    @server.tool()
    def paint(color: Literal["red", "green", "blue"], shade: int = 50) -> str:
        """Paint with one of the allowed colors."""
        return f"painted {color} at {shade}"

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def big(n: int = 50000) -> str:
        """Return a text of n characters (default 50,000)."""
        return ("0123456789" * (n // 10 + 1))[:n]

    @server.tool()
    async def slow(seconds: float, started_file: str = "") -> str:
        """Sleep for the given seconds, then answer."""
        if started_file:  # tells a test the call is in flight on the server
            Path(started_file).touch()
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def fail(reason: str = "broken") -> str:
        """Always fail with the given reason."""
        raise ValueError(reason)

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def env_var(name: str) -> str:
        """The value of an environment variable of the server process."""
        return os.environ.get(name, "(unset)")

    @server.tool()
    def pid() -> str:
        """The server's process id."""
        return str(os.getpid())

    return server


def _add_hostile(server: FastMCP) -> None:
    """What a careless or hostile server lists: a 1 MB description, a huge schema, a task-only tool."""
    server.add_tool(lambda: "ok", name="wordy", description="Say ok. " + "blah " * 200_000)
    server.add_tool(lambda: "ok", name="needs_task", description="Only callable as an MCP task.")

    fields = ", ".join(f"p{i}: str = ''" for i in range(2000))
    namespace: dict = {}
    exec(f"def huge_schema({fields}) -> str:\n    return 'ok'", namespace)  # 2,000 parameters
    server.add_tool(namespace["huge_schema"], name="huge_schema", description="Takes 2,000 parameters.")
    server.add_tool(lambda: "ok", name="plain", description="A normal tool.")


_VERBS = ("get", "list", "create", "update", "delete", "search", "export", "import", "sync", "count")


def _add_generated(server: FastMCP, many: int, prefix: str) -> None:
    """Tools with realistic names, descriptions and parameters (for the benchmark's byte counts)."""
    for i in range(many):
        verb = _VERBS[i % len(_VERBS)]
        noun = f"{prefix}_item{i // len(_VERBS)}"

        server.add_tool(
            _generated(f"{verb}_{noun}"),
            name=f"{verb}_{noun}",
            description=(
                f"{verb.capitalize()} {noun} records of the {prefix} service. Use the query to select "
                f"records by name, tag or owner; results are paginated and sorted by last change."
            ),
        )


def _generated(name: str):
    def fn(query: str, limit: int = 10, include_archived: bool = False) -> str:
        return f"{name}: {query} (limit {limit}, archived {include_archived})"

    return fn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("transport", choices=["stdio", "streamable-http", "sse"])
    ap.add_argument("port", nargs="?", type=int, default=0)
    ap.add_argument("--many", type=int, default=0)
    ap.add_argument("--prefix", default="svc")
    ap.add_argument("--hostile", action="store_true")
    a = ap.parse_args()
    build(a.port, a.many, a.prefix, a.hostile).run(a.transport)


if __name__ == "__main__":
    main()
