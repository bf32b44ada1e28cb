"""The middleware every request passes before any route (pure ASGI: server-sent events stream through it).

1. `Host` must be an address, localhost or panel.public_url's host: a web page that rebinds its own DNS
   name to 127.0.0.1 is refused (the check is ania/studio_http.py's `allowed_host`).
2. A state-changing request whose `Origin` is not the panel's own is refused (no CORS: no header ever
   grants another origin anything).
3. Credentials: `Authorization: Bearer <token>` (a wrong one is refused, never ignored), else the session
   cookie. Without either, a page redirects to /login and the API answers 401. /login and /static are open.
4. A state-changing request on a session needs its CSRF token: the `X-CSRF-Token` header, or a `csrf`
   field of a form. The bearer token is not sent by browsers on their own, so it needs none.
Every answer carries headers that keep it out of frames, caches and other pages' referrers.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ania.panel.auth import PanelAuth
from ania.panel.render import api_error
from ania.studio_http import allowed_host

SAFE_METHODS = ("GET", "HEAD")
PUBLIC_PREFIXES = ("/login", "/static/", "/favicon.ico")
COOKIE = "ania_panel"
#: A form or upload is read here for its csrf field, then handed on; larger ones are refused.
MAX_FORM_BODY = 64 * 1024 * 1024
SECURITY_HEADERS = {
    "content-security-policy": ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; "
                                "form-action 'self'; base-uri 'none'; object-src 'none'"),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


class PanelGuard:
    def __init__(self, app: ASGIApp, auth: PanelAuth, extra_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.auth = auth
        self.extra_origins = tuple(o.lower() for o in extra_origins if o)
        self.extra_hosts = tuple(urlsplit(o).netloc for o in self.extra_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        request = Request(scope)
        refusal, receive = await self._check(request, receive)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _check(self, request: Request, receive: Receive) -> tuple[ASGIApp | None, Receive]:
        host = request.headers.get("host", "")
        if host not in self.extra_hosts and not allowed_host(host):
            return api_error(403, f"Host {host[:80]!r} is not this panel's address; use 127.0.0.1 or localhost "
                                  "(or set panel.public_url)"), receive
        changing = request.method not in SAFE_METHODS
        origin = request.headers.get("origin")
        if changing and origin is not None and origin.lower() not in self._own_origins(request, host):
            return api_error(403, "this request comes from another web site (Origin); the panel refuses it"), receive
        state = request.scope.setdefault("state", {})
        bearer = request.headers.get("authorization")
        if bearer is not None:
            scheme, _, token = bearer.partition(" ")
            if scheme.lower() != "bearer" or not self.auth.token_ok(token.strip()):
                return api_error(401, "wrong token (Authorization: Bearer <the panel's token>)"), receive
            state["panel_auth"] = "bearer"
        else:
            session = self.auth.session(request.cookies.get(COOKIE, ""))
            if session is not None:
                state["panel_auth"], state["panel_session"] = "session", session
        path = request.url.path
        if path.startswith(PUBLIC_PREFIXES):
            return None, receive
        if "panel_auth" not in state:
            if changing or path.startswith("/api/"):
                return api_error(401, "log in first (the login link, the password or the bearer token)"), receive
            return RedirectResponse("/login", status_code=303), receive
        if changing and state["panel_auth"] == "session":
            sent, receive = await _csrf_sent(request, receive)
            if sent is None:
                return api_error(413, "the form is too large"), receive
            if not hmac.compare_digest(sent.encode(), state["panel_session"].csrf.encode()):
                return api_error(403, "missing or wrong CSRF token (reload the page)"), receive
        return None, receive

    def _own_origins(self, request: Request, host: str) -> tuple[str, ...]:
        return (f"{request.url.scheme}://{host}".lower(), *self.extra_origins)


async def _csrf_sent(request: Request, receive: Receive) -> tuple[str | None, Receive]:
    """The CSRF token from the header, else from the form's `csrf` field (the body is read, then replayed to
    the route). None: the form is larger than MAX_FORM_BODY."""
    header = request.headers.get("x-csrf-token")
    if header is not None:
        return header, receive
    kind = request.headers.get("content-type", "")
    if not kind.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        return "", receive
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BODY:
            return None, receive
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(request.scope, replay).form()
        field = form.get("csrf")
        await form.close()
    except Exception:  # noqa: BLE001 - a form the parser cannot read has no token: refused as such
        field = None
    return (field if isinstance(field, str) else ""), _replaying(body, receive)


def _replaying(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then the disconnect, when it comes

    return again


def _with_security_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS.items():
                if name not in headers:
                    headers[name] = value
        await send(message)

    return wrapped
