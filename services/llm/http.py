"""The HTTP client every model call goes through: httpx's API (what the OpenAI SDK speaks) on aiohttp's
connection pool.

Why not httpx's own pool: at 50 concurrent model calls, httpcore scans every pooled connection (with a
socket syscall each) on every request and response, and keeps only 20 alive by default, so connections
churn. Measured with the real `ChatOpenAI` at concurrency 50 (`bench/bench_throughput.py`'s model): 4.1 ms
of CPU per request through httpcore against 2.2 ms through aiohttp. Keep-alive is sized for the sessions
a bot serves at once."""

from __future__ import annotations

import httpx
from httpx_aiohttp import HttpxAiohttpClient

KEEPALIVE = 256


def model_http_client(timeout_sec: float) -> httpx.AsyncClient:
    """One per model factory, closed with it (a pool is bound to the event loop that first uses it)."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=KEEPALIVE)
    return HttpxAiohttpClient(timeout=timeout_sec, limits=limits)
