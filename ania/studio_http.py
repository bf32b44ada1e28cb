"""The HTTP app langgraph.json mounts into `langgraph dev` (`http.app`): who may call Studio's server, and
what it does when it starts.

The server runs every request as the local admin "studio" (ania/studio.py), and `langgraph dev` answers any
origin (`Access-Control-Allow-Origin: *`, private-network preflights granted), so any web page the operator
opened could start a run. CORS headers only tell a browser what a page may *read*: a "simple" request
(a `text/plain` POST) is sent and runs anyway. So `OriginGuard` refuses (403) every request whose `Origin`
is not Studio's web app or a page on this machine, before langgraph-api sees it (the custom app's
middleware wraps all of langgraph-api's, the private-network one included, so a refused preflight gets no
grant either). Requests without an Origin (curl, the SDK, `ania sessions studio`) are not from a web page
and pass. A `Host` that is a DNS name other than localhost is refused too: a page that rebinds its own
name to 127.0.0.1 makes same-origin GETs, which carry no Origin.

On start (the app's lifespan, inside langgraph-api's) the server records its URL in the data directory
(`ania sessions studio` finds it there) and lists the bot's recent sessions as threads (ania/studio_threads.py).
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

#: Studio's web app: `langgraph dev` opens https://smith.langchain.com/studio/ (its default `--studio-url`);
#: LangSmith's EU instance serves the same app.
STUDIO_ORIGINS = ("https://smith.langchain.com", "https://eu.smith.langchain.com")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
PNA_REQUEST = "access-control-request-private-network"
#: The host of langgraph's in-process client (`get_client()` in a graph, webhooks), through an ASGI transport.
IN_PROCESS = "api"


def allowed_origin(origin: str, extra: tuple[str, ...] = ()) -> bool:
    """Studio's web app (or an origin langgraph.json's http.cors.allow_origins adds, e.g. a self-hosted
    LangSmith), or a page served from this machine (any port)."""
    if origin in STUDIO_ORIGINS or origin in extra:
        return True
    try:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.hostname in LOCAL_HOSTS and parts.path == ""
    except ValueError:
        return False


def allowed_host(host: str, in_process: bool = False) -> bool:
    """An address, or localhost: never a DNS name a web page controls (DNS rebinding). The in-process client's
    name is taken only from it (`in_process`: its ASGI scope's server is that name, a socket's is an address):
    over the network `api` is a name like any other, e.g. api.<the LAN's search domain>."""
    try:
        name = urlsplit(f"//{host}").hostname or ""
    except ValueError:
        return False
    if name == "localhost" or name.endswith(".localhost") or (in_process and name == IN_PROCESS):
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class OriginGuard:
    """Refuses foreign web pages before any route, CORS or private-network middleware runs."""

    def __init__(self, app: ASGIApp) -> None:
        from langgraph_api import config  # the server's parsed langgraph.json (only imported in the server)

        self.app = app
        cors = config.CORS_CONFIG or {}
        self.extra = tuple(o for o in cors.get("allow_origins", ()) if o != "*")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            origin, host = headers.get("origin"), headers.get("host", "")
            refusal = ""
            if origin is not None and not allowed_origin(origin, self.extra):
                refusal = (f"Origin {origin!r} may not call this Ania Studio server (it runs as the local admin); "
                           f"allowed: {', '.join(STUDIO_ORIGINS)} and pages on localhost")
            elif host and not allowed_host(host, in_process=(scope.get("server") or ("",))[0] == IN_PROCESS):
                refusal = f"Host {host!r} is not this machine's address; use 127.0.0.1 or localhost"
            if refusal:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await JSONResponse({"detail": refusal}, status_code=403)(scope, receive, send)
                return
            if origin is not None and PNA_REQUEST in headers:
                # langgraph-api's CORS settings cannot allow private-network preflights (Starlette then answers
                # 400) and its own middleware grants every OPTIONS: left to it for the origins allowed here.
                scope = {**scope, "headers": [(k, v) for k, v in scope["headers"]
                                              if k.decode("latin-1").lower() != PNA_REQUEST]}
        await self.app(scope, receive, send)


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    from ania import studio_threads

    async with studio_threads.running():
        yield


async def sync_route(request: Request) -> JSONResponse:
    """POST /ania/threads/sync (public: the tests mount this route alone).
    Sets a copied session's thread values from its checkpoint, for GET /threads/{id} (ania sessions studio)."""
    from ania import studio_threads

    try:
        body = json.loads(await request.body() or b"{}")
        thread = str(uuid.UUID(str(body["thread_id"])))
    except (ValueError, TypeError, KeyError):  # not JSON, not an object, no thread_id, not a UUID
        # Studio's threads are UUIDs: a session key (`g:123`) is never read here, nor is the graph built for it
        return JSONResponse({"detail": "thread_id (a Studio thread's UUID) is required"}, status_code=422)
    return JSONResponse({"thread_id": thread, "synced": await studio_threads.sync_values(thread)})


app = Starlette(routes=[Route("/ania/threads/sync", sync_route, methods=["POST"])], lifespan=_lifespan)
app.add_middleware(OriginGuard)
