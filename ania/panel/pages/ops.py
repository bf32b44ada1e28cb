"""Operation log (`/ops`, `GET /api/ops`): who changed what (approvals, settings, skills, MCP servers, teams,
reboots), the panel's own changes included (actor `panel`). Paged on the server, newest first; filters:
kind, actor, chat (session), since / until (Unix seconds or an ISO date). The page refreshes its first page."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import panel_context
from ania.panel.render import BadInput, page_args, paged, render
from services.usage import count_ops, op_kinds, read_ops

FILTERS = ("kind", "actor", "session")
DATE_ONLY = len("2026-12-02")


def _time_arg(request: Request, name: str) -> float | None:
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise BadInput(f"{name} must be Unix seconds or an ISO date (2026-12-02 or 2026-12-02T18:00)") from None
    whole_day = name == "until" and len(raw) == DATE_ONLY  # "until 2026-12-02" includes that day
    return moment.timestamp() + (86400 if whole_day else 0)


def ops_page(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The page of rows for the request's filters, and the filters as given."""
    store = panel_context(request).services.store
    page, size = page_args(request)
    kind, actor, session = (request.query_params.get(name, "").strip() or None for name in FILTERS)
    since, until = _time_arg(request, "since"), _time_arg(request, "until")
    rows = read_ops(store, kind=kind, actor=actor, session=session, since=since, until=until, limit=size,
                    offset=(page - 1) * size)
    total = count_ops(store, kind=kind, actor=actor, session=session, since=since, until=until)
    shown = {"kind": kind, "actor": actor, "session": session, "since": request.query_params.get("since", ""),
             "until": request.query_params.get("until", "")}
    return paged(rows, total, page, size), shown


async def page(request: Request) -> HTMLResponse:
    data, filters = ops_page(request)
    pages = max(1, -(-data["total"] // data["size"]))
    kinds = op_kinds(panel_context(request).services.store)
    return render(request, "ops.html", {"title_key": "ops.title", "data": data, "filters": filters,
                                        "kinds": kinds, "pages": pages})


async def api(request: Request) -> JSONResponse:
    data, _ = ops_page(request)
    return JSONResponse(data)


def routes() -> list[BaseRoute]:
    return [Route("/ops", page, methods=["GET"]), Route("/api/ops", api, methods=["GET"])]
