"""Pages and JSON answers, the same way on every page.

- `render(request, "x.html", {...})`: a template that extends base.html and fills `{% block content %}`
  (page scripts go in `{% block scripts %}` as `<script src=...>`: the CSP allows no inline script; data
  for a script goes in a `<script type="application/json">` block or data- attributes).
- `api_error(status, message)`: `{"error": message}`; raise `BadInput(message)` anywhere in a handler for a 400.
- Paging: `page_args(request)` → (page ≥ 1, size 1..MAX_SIZE) from `?page=&size=`; `paged(...)` the JSON shape
  `{"items": [...], "total": n, "page": p, "size": s}`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from ania.panel.i18n import language, translate
from ania.panel.nav import NAV, active

DEFAULT_SIZE = 50
MAX_SIZE = 200
MAX_JSON_BODY = 1024 * 1024


class BadInput(Exception):
    """A request the panel refuses with 400 and this message (app.py maps it); nothing was changed."""


def api_error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _int_arg(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadInput(f"{name} must be a whole number, not {raw[:40]!r}") from None
    if not low <= value <= high:
        raise BadInput(f"{name} must be between {low} and {high}")
    return value


def page_args(request: Request) -> tuple[int, int]:
    return (_int_arg(request, "page", 1, 1, 1_000_000), _int_arg(request, "size", DEFAULT_SIZE, 1, MAX_SIZE))


def paged(items: Sequence[Any], total: int, page: int, size: int) -> dict[str, Any]:
    return {"items": list(items), "total": total, "page": page, "size": size}


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object, or BadInput saying what is wrong with it."""
    raw = await request.body()
    if len(raw) > MAX_JSON_BODY:
        raise BadInput(f"the request body is larger than {MAX_JSON_BODY // 1024} KiB")
    try:
        data = json.loads(raw or b"null")
    except ValueError as e:
        raise BadInput(f"the body is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise BadInput("the body must be a JSON object")
    return data


def label(request: Request, key: str, **values: Any) -> str:
    """A label in the request's language, for a handler's own messages."""
    return translate(request.app.state.catalogs, language(request), key, **values)


def render(request: Request, template_name: str, context: dict[str, Any]) -> HTMLResponse:
    state = request.app.state
    session = request.scope.get("state", {}).get("panel_session")
    path = request.url.path
    nav = [{"path": i.path, "label": i.label, "active": active(i, path)} for i in NAV if i.concern in state.pages]
    full = {"request": request, "lang": language(request), "catalogs": state.catalogs, "nav": nav, "path": path,
            "csrf": session.csrf if session is not None else "", **context}
    return HTMLResponse(state.templates.get_template(template_name).render(full))
