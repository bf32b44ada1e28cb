"""`webSearch` and `webExplore` (T5) over Jina's search and reader APIs.

The endpoints are settings (`web.search_url`, `web.reader_url`), so a self-hosted reader works and the
tests point them at 127.0.0.1. `web.jina_api_key` is optional. Results are cut at 8000 runes; a failure
(an HTTP error, a timeout, a bad URL) is a clear tool result, never an exception the user sees.
The endpoints are the operator's (they may be on the LAN); the page's URL goes to the reader as text. A
redirect to another host, and a page fetched directly (`web.reader_url = ""`), go through the address
guard (services/netfetch.py) unless `web.allow_private_hosts` is on.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field

from services.context import RunContext
from services.errors import ToolError
from services.mcp.convert import truncate
from services.netfetch import FetchError, Guard, TimedOut, fetch, host_of
from tools.base import Tool

MAX_RUNES = 8000
MAX_BYTES = 4 * 1024 * 1024  # an answer is cut at 8000 runes anyway


def _headers(ctx: RunContext, *, to_endpoint: bool) -> dict[str, str]:
    """The key goes only to the operator's endpoint, never to a page fetched directly."""
    headers = {"Accept": "text/plain", "X-Retain-Images": "none"}
    key = ctx.services.settings.web.jina_api_key
    if key and to_endpoint:
        headers["Authorization"] = f"Bearer {key}"
    return headers


async def _get(ctx: RunContext, what: str, url: str, *, trusted: bool) -> str:
    """GET `url`; `trusted` when its host is the operator's endpoint (a redirect elsewhere is still checked)."""
    web = ctx.services.settings.web
    guard = Guard(MAX_BYTES, web.timeout_sec, web.allow_private_hosts, "web.allow_private_hosts")
    try:
        response = await fetch(url, guard, trusted=trusted, headers=_headers(ctx, to_endpoint=trusted),
                               ok_statuses=range(200, 600))
    except TimedOut:
        raise ToolError(f"{what} timed out after {web.timeout_sec:g} s (web.timeout_sec); try again or another "
                        "source") from None
    except FetchError as e:
        raise ToolError(f"{what} failed: {e}") from None
    if response.status == 401 and not web.jina_api_key:
        raise ToolError(f"{what} was refused (HTTP 401): set web.jina_api_key")
    if response.status >= 400:
        raise ToolError(f"{what} failed: HTTP {response.status} from {host_of(url)}")
    text = response.text.strip()
    return truncate(text, MAX_RUNES) if text else f"({what} returned no text)"


class SearchParams(BaseModel):
    query: str = Field(description="What to search the web for")


class WebSearchTool(Tool[SearchParams]):
    name = "webSearch"
    description = "Search the web; returns the top results with titles, URLs and text."
    params = SearchParams

    async def execute(self, args: SearchParams, ctx: RunContext) -> str:
        query = args.query.strip()
        if not query:
            raise ToolError("the query is empty")
        base = ctx.services.settings.web.search_url
        sep = "&" if "?" in base else "?"
        return await _get(ctx, "the web search", f"{base}{sep}q={quote(query)}", trusted=True)


class ExploreParams(BaseModel):
    url: str = Field(description="The http(s) URL of the page to read")


class WebExploreTool(Tool[ExploreParams]):
    name = "webExplore"
    description = "Read a web page (as text) by its URL."
    params = ExploreParams

    async def execute(self, args: ExploreParams, ctx: RunContext) -> str:
        url = args.url.strip()
        if not url.lower().startswith(("http://", "https://")):
            raise ToolError(f"not an http(s) URL: {url[:200]!r}")
        reader = ctx.services.settings.web.reader_url  # empty: the page is fetched directly, through the guard
        return await _get(ctx, f"reading {url[:200]}", reader + url, trusted=bool(reader))


def web_tools() -> list[Tool[Any]]:
    return [WebExploreTool(), WebSearchTool()]
