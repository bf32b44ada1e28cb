"""Logging in and out, and the language switch: /login?token=… (the link printed at first start), the
password form, /logout, /lang. A successful login sets an HttpOnly, SameSite=Strict session cookie (Secure
when the panel is reached over https) and sends the browser on without the token in its address bar."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.guard import COOKIE
from ania.panel.i18n import LANGS
from ania.panel.render import render


def _client(request: Request) -> str:
    return request.client.host if request.client is not None else "?"


def _logged_in(request: Request) -> Response:
    ctx = panel_context(request)
    session = ctx.auth.open_session()
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(COOKIE, session.sid, max_age=int(ctx.auth.session_sec), httponly=True, samesite="strict",
                        secure=request.url.scheme == "https" or any(o.startswith("https:") for o in ctx.extra_origins),
                        path="/")
    ctx.auth.limiter.succeeded(_client(request))
    return response


def _refused(request: Request, key: str, status: int) -> Response:
    response = render(request, "login.html", {"error": key, "password": panel_context(request).auth.has_password})
    response.status_code = status
    return response


async def login_page(request: Request) -> Response:
    ctx = panel_context(request)
    token = request.query_params.get("token")
    if token is None:
        return render(request, "login.html", {"password": ctx.auth.has_password})
    client = _client(request)
    if not ctx.auth.limiter.allowed(client):
        return _refused(request, "login.too_many", 429)
    if ctx.auth.has_password or not ctx.auth.token_ok(token):
        ctx.auth.limiter.failed(client)
        return _refused(request, "login.link_off" if ctx.auth.has_password else "login.bad_link", 401)
    return _logged_in(request)


async def login_password(request: Request) -> Response:
    ctx = panel_context(request)
    client = _client(request)
    if not ctx.auth.limiter.allowed(client):
        return _refused(request, "login.too_many", 429)
    form = await request.form()
    password = form.get("password")
    if not ctx.auth.has_password or not isinstance(password, str) or not ctx.auth.password_ok(password):
        ctx.auth.limiter.failed(client)
        return _refused(request, "login.bad_password", 401)
    return _logged_in(request)


async def logout(request: Request) -> Response:
    ctx = panel_context(request)
    ctx.auth.close_session(request.cookies.get(COOKIE, ""))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


async def set_language(request: Request) -> Response:
    """GET /lang?set=zh&next=/config: the cookie that overrides the browser's language."""
    lang = request.query_params.get("set", "")
    target = request.query_params.get("next", "/")
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        target = "/"
    response = RedirectResponse(target, status_code=303)
    if lang in LANGS:
        response.set_cookie("lang", lang, max_age=365 * 86400, samesite="strict", path="/")
    return response


def routes() -> list[BaseRoute]:
    return [
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login_password, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/lang", set_language, methods=["GET"]),
    ]
