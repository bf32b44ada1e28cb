"""Helpers for the MCP tests and the benchmark: server subprocesses on loopback, a manager on temp dirs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ania.compose import build_services
from core.registry import SessionExecutor, SharedExecutor, ToolCall, ToolOutcome
from core.settings import Paths, Settings
from services.container import Services
from services.context import RunContext
from services.hooks import NoHooks
from services.mcp import MCPManager
from services.sessions import SessionRegistry
from services.store import AppStore

DEMO = str(Path(__file__).with_name("demo_server.py"))
PATHS = {"streamable-http": "/mcp", "sse": "/sse"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stdio_spec(*extra: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [DEMO, "stdio", *extra]}


def time_spec() -> dict[str, Any]:
    """The published `mcp-server-time` from PyPI, over stdio."""
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def hang_spec() -> dict[str, Any]:
    """A process that never speaks MCP: connecting must hit the connect deadline."""
    return {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}


class HTTPServer:
    """The demo server over Streamable HTTP or SSE, as a subprocess on 127.0.0.1."""

    def __init__(self, transport: str, port: int | None = None, extra: tuple[str, ...] = ()) -> None:
        self.transport = transport
        self.port = port or free_port()
        self.extra = extra  # more demo_server.py arguments, e.g. ("--many", "20")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATHS[self.transport]}"

    def spec(self, **extra: Any) -> dict[str, Any]:
        return {"url": self.url, "transport": self.transport.replace("-", "_"), **extra}

    def start(self, timeout: float = 15.0) -> HTTPServer:
        return self.spawn().wait(timeout)

    def spawn(self) -> HTTPServer:
        self.proc = subprocess.Popen([sys.executable, DEMO, self.transport, str(self.port), *self.extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def wait(self, timeout: float = 15.0) -> HTTPServer:
        """Until the port accepts connections (the subprocess exiting or the timeout raise)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"demo server exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("demo server did not start listening")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.proc = None


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class NullBridge:
    async def send_text(self, text: str) -> str:
        return "ok"


@dataclass
class Env:
    """Services from the composition root, plus helpers to call tools as a session would."""

    services: Services
    stack: AsyncExitStack

    @property
    def manager(self) -> MCPManager:
        return self.services.mcp

    @property
    def store(self) -> AppStore:
        return self.services.store

    @property
    def shared(self) -> SharedExecutor:
        return self.services.shared_tools

    @property
    def sessions(self) -> SessionRegistry:
        return self.services.sessions

    @property
    def report(self) -> dict[str, str]:
        return self.services.mcp.report

    def executor(self, session_key: str) -> SessionExecutor:
        return self.sessions.executor(session_key)

    def ctx(self, session_key: str = "g:1", requester: str = "u1") -> RunContext:
        return RunContext(session_key, requester, NullBridge(), self.executor(session_key), self.services)  # type: ignore[arg-type]

    async def call(self, name: str, args: dict[str, Any] | None = None, session_key: str = "g:1") -> ToolOutcome:
        ctx = self.ctx(session_key)
        return await ctx.executor.invoke(ToolCall(f"c-{name}", name, args or {}), ctx)

    def names(self, session_key: str = "g:1") -> list[str]:
        """The session's MCP tools (the built-ins every bot has are left out)."""
        return [t.name for t in self.executor(session_key).tools() if t.name.startswith("mcp")]

    async def close(self) -> None:
        await self.stack.aclose()


def write_config(config_dir: Path, servers: dict[str, Any]) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))


async def make_env(root: Path, servers: dict[str, Any] | None = None, **mcp: Any) -> Env:
    """Write mcp.json (unless None) and build the services as the engine does (ania/compose.py)."""
    config_dir, data_dir = root / "config", root / "data"
    if servers is not None:
        write_config(config_dir, servers)
    config_dir.mkdir(parents=True, exist_ok=True)
    tool = {"enable": mcp.pop("manage", False)}
    settings = Settings(mcp={"connect_timeout_sec": 5, "call_timeout_sec": 10, **mcp}, mcp_tool=tool)
    stack = AsyncExitStack()
    try:
        services = await build_services(Paths(config_dir, data_dir), settings, stack, hooks=NoHooks())
    except BaseException:
        await stack.aclose()
        raise
    return Env(services, stack)
