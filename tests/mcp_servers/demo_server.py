"""A FastMCP test server, run as a subprocess by the MCP tests and the benchmark.

    python demo_server.py stdio
    python demo_server.py streamable-http PORT
    python demo_server.py sse PORT
    python demo_server.py stdio --many 20 --prefix s1   # 20 generated tools (benchmark)

Its tools cover what the client must handle: plain text, an enum parameter, a 50,000-character
result, a slow call, an error result, its environment, a crash in the middle of a call, and the process id (so a
test can kill the server between calls).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Literal

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations


def build(port: int, many: int, prefix: str) -> FastMCP:
    server = FastMCP("demo", host="127.0.0.1", port=port, log_level="WARNING")
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
    async def slow(seconds: float) -> str:
        """Sleep for the given seconds, then answer."""
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
    a = ap.parse_args()
    build(a.port, a.many, a.prefix).run(a.transport)


if __name__ == "__main__":
    main()
