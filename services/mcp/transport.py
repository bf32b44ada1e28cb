"""HTTP, stdio and failure plumbing of an MCP connection: the httpx client the transports use, the stdio
session whose server stderr goes to the log, and one-line reasons.

The client has no total or read timeout (M4: a timeout on reads would cut the long-lived SSE and
Streamable HTTP streams); connecting and writing have one. Its transport is wrapped so that a connect
error, or a response stream that breaks, is reported to the connection at once: the SDK would
otherwise leave a Streamable HTTP call waiting until its deadline when the server dies mid-call.

A stdio server's stderr is its own log (banners, warnings, tracebacks). The SDK passes it to the
terminal by default, where it lands in the middle of the chat; `stdio_session` sends it, line by line,
to this module's logger instead (INFO, so `ania -v` shows it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TextIO

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from services.mcp.config import ServerSpec

log = logging.getLogger(__name__)

OnError = Callable[[Exception, str], None]  # (error, HTTP method)
#: `${VAR}` in an env value of mcp.json is taken from the bot's environment; an unknown one stays as written.
_VAR = re.compile(r"\$\{([^}]+)\}")
MAX_STDERR_LINE = 2000


@asynccontextmanager
async def stdio_session(spec: ServerSpec) -> AsyncIterator[ClientSession]:
    """The stdio transport and SDK session of `spec`, as the adapters open it, with stderr to the log."""
    env = {k: _VAR.sub(lambda m: os.environ.get(m.group(1), m.group(0)), v) for k, v in spec.env}
    params = StdioServerParameters(command=spec.command, args=list(spec.args), env=env or None,
                                   cwd=spec.cwd or None)
    with _stderr_to_log(spec.name) as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            yield session


@contextmanager
def _stderr_to_log(server: str) -> Iterator[TextIO]:
    """A pipe the server process writes its stderr to; a daemon thread logs each line until the pipe
    closes (the server and any child of it that kept the descriptor have exited)."""
    read_fd, write_fd = os.pipe()

    def pump() -> None:
        with open(read_fd, "rb") as lines:
            for raw in lines:
                text = raw.decode("utf-8", errors="replace").rstrip()
                if text:
                    log.info("MCP server %s (stderr): %s", server, text[:MAX_STDERR_LINE])

    threading.Thread(target=pump, name=f"mcp-stderr:{server}", daemon=True).start()
    with open(write_fd, "w", encoding="utf-8") as errlog:  # closed here; the child keeps its own copy
        yield errlog


def http_client_factory(connect_timeout: float, on_error: OnError) -> Callable[..., httpx.AsyncClient]:
    """A factory in the adapters' `McpHttpClientFactory` shape; the timeout it is given is ignored."""

    def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> httpx.AsyncClient:
        t = connect_timeout
        return httpx.AsyncClient(
            headers=headers, auth=auth,
            timeout=httpx.Timeout(connect=t, read=None, write=t, pool=t),
            transport=_WatchedTransport(httpx.AsyncHTTPTransport(), on_error),
        )

    return factory


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    return [e]


def connect_error(e: BaseException) -> bool:
    return any(isinstance(x, (httpx.ConnectError, httpx.ConnectTimeout)) for x in _leaves(e))


def describe(e: BaseException, spec: ServerSpec) -> str:
    """One stable line for a connection failure (no addresses of objects, no timestamps)."""
    leaves = [x for x in _leaves(e) if not isinstance(x, asyncio.CancelledError)] or _leaves(e)
    x = leaves[0]
    if isinstance(x, FileNotFoundError):
        return f'cannot start "{spec.command}": command not found'
    if isinstance(x, OSError) and spec.transport == "stdio":
        return f'cannot start "{spec.command}": {x.strerror or x}'
    if isinstance(x, (httpx.ConnectError, httpx.ConnectTimeout)):
        return f"cannot connect to {spec.url}"
    if isinstance(x, httpx.HTTPStatusError):
        return f"HTTP {x.response.status_code} from {spec.url}"
    if isinstance(x, McpError):
        if x.error.code == types.CONNECTION_CLOSED and spec.transport == "stdio":
            return "the server process closed the connection (it exited or is not an MCP server)"
        return f"protocol error: {x.error.message}"
    if isinstance(x, asyncio.CancelledError):
        return "cancelled"
    return f"{type(x).__name__}: {x}" if str(x) else type(x).__name__


class _WatchedTransport(httpx.AsyncBaseTransport):
    """Reports connect errors and broken response streams, so calls fail at once instead of at the deadline."""

    def __init__(self, inner: httpx.AsyncBaseTransport, on_error: Callable[[Exception, str], None]) -> None:
        self._inner, self._on_error = inner, on_error

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError as e:
            self._on_error(e, request.method)
            raise
        return httpx.Response(
            status_code=response.status_code, headers=response.headers, extensions=response.extensions,
            stream=_WatchedStream(response.stream, lambda e: self._on_error(e, request.method)),
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WatchedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, on_error: Callable[[Exception], None]) -> None:
        self._inner, self._on_error = inner, on_error

    async def __aiter__(self) -> Any:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.TransportError as e:
            self._on_error(e)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()
