"""The HTTP client every model call goes through: httpx's API (what the OpenAI SDK speaks) on aiohttp's
connection pool.

Why not httpx's own pool: at 50 concurrent model calls, httpcore scans every pooled connection (with a
socket syscall each) on every request and response, and keeps only 20 alive by default, so connections
churn. Measured with the real `ChatOpenAI` at concurrency 50 (`bench/bench_throughput.py`'s model): 4.1 ms
of CPU per request through httpcore against 2.2 ms through aiohttp. The pool is sized for the sessions a
bot serves at once.

httpx-aiohttp maps every aiohttp connection error to `httpx.ConnectTimeout`, so a refused or dropped
connection would reach the user as "the request timed out". `_Transport` gives each its own httpx error
again (what httpcore raised): only a real timeout stays a timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport, HttpxAiohttpClient

POOL = 256


def model_http_client(timeout_sec: float) -> httpx.AsyncClient:
    """One per model factory, closed with it (a pool is bound to the event loop that first uses it)."""
    limits = httpx.Limits(max_connections=POOL, max_keepalive_connections=POOL)
    return HttpxAiohttpClient(timeout=timeout_sec, limits=limits, transport=_Transport(limits=limits))


def _remapped(error: httpx.TransportError) -> httpx.TransportError:
    """The httpx error httpcore would have raised for the aiohttp error behind `error`."""
    cause = error.__cause__
    if not isinstance(error, httpx.TimeoutException) or isinstance(cause, TimeoutError) or cause is None:
        return error
    if isinstance(cause, aiohttp.ClientConnectorError):
        better: httpx.TransportError = httpx.ConnectError(str(error))
    elif isinstance(cause, aiohttp.ServerDisconnectedError):
        better = httpx.RemoteProtocolError(str(error))
    else:
        better = httpx.ReadError(str(error))
    better.__cause__ = cause
    return better


class _Stream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.TransportError as e:
            raise _remapped(e) from e.__cause__

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Transport(AiohttpTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await super().handle_async_request(request)
        except httpx.TransportError as e:
            raise _remapped(e) from e.__cause__
        if isinstance(response.stream, httpx.AsyncByteStream):
            response.stream = _Stream(response.stream)
        return response
