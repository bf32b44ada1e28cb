"""One persistent MCP session per server, owned by its own task (M1, M4).

The adapters' `create_session()` opens the transport (stdio subprocess, Streamable HTTP, SSE) and the
SDK's `ClientSession`; an owner task enters that context once and holds it until told to stop, so
every call reuses the session instead of spawning a process per call.

Failures and what a call does about them:
- the transport was already closed when the request was written (process died between calls, SSE
  stream gone), or the server answers "Session terminated" (HTTP 404: restart or idle expiry): the
  server never ran the call, so the connection is re-opened and the call retried once;
- the connection drops while the call is in flight (process died mid-call, HTTP stream cut): the call
  may have run, so it is retried only for read-only tools; otherwise a clear error, and the next call
  re-opens the connection;
- every call has a deadline (`mcp.call_timeout_sec`): a Streamable HTTP call whose stream dies never
  gets an answer from the SDK. After a missed deadline a ping checks the session in the background.
The connect deadline (`mcp.connect_timeout_sec`) covers the whole handshake (spawn or connect,
initialize, list tools). HTTP clients have no total or read timeout (services/mcp_transport.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, cast

import anyio
import httpx
from langchain_mcp_adapters.sessions import Connection, create_session
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError

from services.mcp.config import MCPError, ServerSpec
from services.mcp.convert import offerable
from services.mcp.transport import connect_error, describe, http_client_factory, stdio_session
from services.retry import MCP_CALL, RetryPolicy

log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0  # stdio shutdown: stdin closed, 2 s grace, then SIGTERM/SIGKILL (the SDK's sequence)
PING_TIMEOUT = 5.0
_NOT_SENT = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class _ConnectFailed(Exception):
    """Opening the session failed; the message is the reason, one stable line."""


class _NotSent(Exception):
    """The request never reached the server: retrying on a fresh connection is safe."""


class _Lost(Exception):
    """The connection dropped while the request was in flight: it may have run."""


@dataclass
class _Live:
    gen: int
    session: ClientSession
    owner: asyncio.Task[None]
    stop: asyncio.Event
    down: asyncio.Event
    reason: str = ""
    sent: bool = True  # whether requests in flight when it went down may have reached the server
    tools: list[types.Tool] = field(default_factory=list)


#: never connected yet | live | dropped (re-opened at the next call) | could not connect (backoff) | removed
ConnStatus = Literal["new", "connected", "down", "failed", "closed"]


class MCPConnection:
    #: After a failed connect, calls do not try again before this many seconds (reconnect() always does).
    retry_backoff_sec: float = 30.0
    #: How often a call is tried (services/retry.py); what is tried again is decided in `call`.
    retry: RetryPolicy = MCP_CALL

    def __init__(self, spec: ServerSpec, connect_timeout: float, call_timeout: float) -> None:
        self.spec = spec
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.status: ConnStatus = "new"
        self.error = ""
        self.tools: list[types.Tool] = []  # after the server's filter
        self.connects = 0
        self._live: _Live | None = None
        self._gen = 0
        self._lock = asyncio.Lock()
        self._retry_at = 0.0
        self._checks: set[asyncio.Task[Any]] = set()  # pings after a missed deadline: cancelled at close
        self._endings: set[asyncio.Task[Any]] = set()  # owners shutting down: awaited at close, never cancelled

    @property
    def name(self) -> str:
        return self.spec.name

    def alive(self) -> bool:
        return self._live is not None and not self._live.down.is_set()

    # --- connecting ---------------------------------------------------------------------------
    async def connect(self, *, force: bool = False) -> None:
        """Open the session if it is not open (always a new one with `force`). Raises MCPError."""
        async with self._lock:
            if not force and self.alive():
                return
            if not force and self.status == "failed" and time.monotonic() < self._retry_at:
                raise MCPError(f'MCP server "{self.name}" is unavailable: {self.error}')
            if self.status == "closed":
                raise MCPError(f'MCP server "{self.name}" was removed')
            await self._teardown()
            try:
                self._live = await self._open()
            except _ConnectFailed as e:
                self.status, self.error = "failed", str(e)
                self._retry_at = time.monotonic() + self.retry_backoff_sec
                raise MCPError(f'MCP server "{self.name}" is unavailable: {e}') from None
            self.tools = _offered(self.name, [t for t in self._live.tools
                                             if self.spec.filter.keeps(t.name, t.description or "")])
            self.status, self.error = "connected", ""
            self.connects += 1

    async def _open(self) -> _Live:
        self._gen += 1
        gen = self._gen
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[tuple[ClientSession, list[types.Tool]]] = loop.create_future()
        stop, down = asyncio.Event(), asyncio.Event()
        owner = asyncio.create_task(self._own(gen, ready, stop, down), name=f"mcp:{self.name}")
        try:
            session, tools = await asyncio.wait_for(ready, self.connect_timeout)
        except TimeoutError:
            owner.cancel()  # the SDK still ends a stdio process gracefully (2 s), in the background
            self._spawn(self._endings, _finish(owner, stop))
            raise _ConnectFailed(f"it did not finish connecting within {self.connect_timeout:g} s") from None
        except BaseException:
            owner.cancel()
            self._spawn(self._endings, _finish(owner, stop))
            raise
        return _Live(gen, session, owner, stop, down, tools=tools)

    async def _own(self, gen: int, ready: asyncio.Future[Any], stop: asyncio.Event, down: asyncio.Event) -> None:
        """The owner task: enters the transport + session contexts and holds them until `stop`."""
        try:
            if self.spec.transport == "stdio":  # its stderr goes to the log, not the terminal
                opened = stdio_session(self.spec)
            else:
                opened = create_session(cast(Connection, self.spec.connection(self._http_factory(gen))))
            async with opened as session:
                await session.initialize()
                tools = await _list_all(session)
                if not ready.done():
                    ready.set_result((session, tools))
                await stop.wait()
        except BaseException as e:  # noqa: BLE001 - the owner task ends here whatever ended it; its waiter is told
            reason = describe(e, self.spec)
            if not ready.done():
                ready.set_exception(_ConnectFailed(reason))
            elif not stop.is_set():
                log.warning("MCP server %s: connection ended: %s", self.name, reason)
                live = self._live
                if live is not None and live.gen == gen and not live.down.is_set():
                    live.reason = reason
                    live.sent = not connect_error(e)
        finally:
            down.set()
            if self._live is not None and self._live.gen == gen and self.status == "connected":
                self.status, self.error = "down", self._live.reason or "connection ended"

    def _http_factory(self, gen: int) -> Callable[..., httpx.AsyncClient]:
        return http_client_factory(self.connect_timeout, lambda e, m: self._transport_error(gen, e, m))

    def _transport_error(self, gen: int, exc: Exception, method: str) -> None:
        live = self._live
        if live is None or live.gen != gen or live.down.is_set():
            return
        if connect_error(exc):
            self._mark_down(live, f"cannot reach {self.spec.url}: {exc or type(exc).__name__}", sent=False)
        elif method == "POST":
            self._mark_down(live, f"the HTTP stream broke: {exc or type(exc).__name__}", sent=True)

    # --- calling --------------------------------------------------------------------------------
    async def call(self, tool: str, args: dict[str, Any], *, retry_safe: bool = False) -> types.CallToolResult:
        """Call a tool on the persistent session, within the call deadline. Raises MCPError. A call that never
        reached the server is tried again on a fresh connection (`self.retry`); one whose connection dropped
        in flight only when `retry_safe` (it may have run)."""

        def again(e: BaseException) -> bool:
            return isinstance(e, _NotSent) or (retry_safe and isinstance(e, _Lost))

        try:
            return await self.retry.call(lambda: self._attempt(tool, args), again)
        except _NotSent as e:
            raise MCPError(f'MCP server "{self.name}" is unavailable: {e}') from None
        except _Lost as e:
            raise MCPError(
                f'the connection to MCP server "{self.name}" was lost during the call of "{tool}" ({e}); '
                "the call may or may not have run. The connection is re-opened at the next call."
            ) from None

    async def _attempt(self, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        live = await self._ensure()
        try:
            return await self._call_once(live, tool, args)
        except _NotSent as e:
            self._mark_down(live, str(e), sent=False)
            raise
        except _Lost as e:
            self._mark_down(live, str(e), sent=True)
            raise

    async def _ensure(self) -> _Live:
        if not self.alive():
            await self.connect()
        assert self._live is not None  # noqa: S101 - narrows for mypy: connect() sets it or raises
        return self._live

    async def _call_once(self, live: _Live, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        deadline = self.call_timeout
        call = asyncio.ensure_future(
            live.session.call_tool(tool, args, read_timeout_seconds=timedelta(seconds=deadline))
        )
        watch = asyncio.ensure_future(live.down.wait())
        try:
            done, _ = await asyncio.wait({call, watch}, timeout=deadline + 1.0, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not call.done():
                call.cancel()
                call.add_done_callback(_consume)
        if call in done:
            try:
                return call.result()
            except _NOT_SENT:
                raise _NotSent("the connection was closed before the call was sent") from None
            except McpError as e:
                if e.error.code == types.CONNECTION_CLOSED:
                    raise _Lost(live.reason or "connection closed") from None
                if e.error.code == httpx.codes.REQUEST_TIMEOUT:
                    return self._timed_out(live, tool)
                if "session terminated" in e.error.message.lower():
                    raise _NotSent("the server ended the session") from None
                raise MCPError(f'MCP server "{self.name}" rejected the call of "{tool}": {e.error.message}') from None
        if watch in done or live.down.is_set():
            raise (_Lost if live.sent else _NotSent)(live.reason or "connection ended")
        return self._timed_out(live, tool)

    def _timed_out(self, live: _Live, tool: str) -> types.CallToolResult:
        self._spawn(self._checks, self._check(live))
        raise MCPError(
            f'MCP tool "{tool}" of server "{self.name}" did not answer within {self.call_timeout:g} s '
            "(mcp.call_timeout_sec); it may still be running on the server"
        )

    async def _check(self, live: _Live) -> None:
        """After a missed deadline: a session that does not answer a ping is re-opened at the next call."""
        try:
            await asyncio.wait_for(live.session.send_ping(), PING_TIMEOUT)
        except asyncio.CancelledError:
            raise
        except BaseException:  # noqa: BLE001 - the SDK raises exception groups; any failed ping is a dead session
            self._mark_down(live, "the session stopped answering", sent=True)

    def _mark_down(self, live: _Live, reason: str, *, sent: bool) -> None:
        if live is not self._live or live.down.is_set():
            return
        log.warning("MCP server %s: connection down: %s", self.name, reason)
        live.reason, live.sent = reason, sent
        live.down.set()
        self.status, self.error = "down", reason
        self._spawn(self._endings, _finish(live.owner, live.stop))

    @staticmethod
    def _spawn(tasks: set[asyncio.Task[Any]], coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    # --- closing --------------------------------------------------------------------------------
    async def _teardown(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.down.set()
            await _finish(live.owner, live.stop)

    async def close(self) -> None:
        async with self._lock:
            self.status = "closed"
            await self._teardown()
        for task in list(self._checks):
            task.cancel()
        await asyncio.gather(*self._checks, *self._endings, return_exceptions=True)


async def _finish(owner: asyncio.Task[None], stop: asyncio.Event) -> None:
    """Let the owner leave its contexts (clean stdio shutdown); cancel it if that takes too long."""
    stop.set()
    try:
        await asyncio.wait_for(asyncio.shield(owner), CLOSE_TIMEOUT)
    except TimeoutError:
        owner.cancel()
        await asyncio.gather(owner, return_exceptions=True)
    except asyncio.CancelledError:
        owner.cancel()
        raise


async def _list_all(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(100):
        page = await session.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            break
    return tools


def _offered(server: str, tools: list[types.Tool]) -> list[types.Tool]:
    """The tools the model may see; the others are logged once per connect with the reason."""
    kept = []
    for t in tools:
        why = offerable(t)
        if why is None:
            kept.append(t)
        else:
            log.warning("MCP server %s: tool %s is not offered: %s", server, t.name, why)
    return kept


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
