"""Query log (`/queries`, `GET /api/queries`, `GET /api/queries/{id}`, `POST /api/queries/{id}/replay`): the rows
of services/usage/querylog.py filtered by chat, user, status, tool and time, paged in SQL; a row in full (input,
tool calls, tokens, reply, and what later migrations add, such as the passages a turn was given); a replay of
the turn from the checkpoint it started at, through ania/replay.py (a scratch fork, plan mode on)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.labels import script_labels
from ania.panel.oplog import record_panel_op
from ania.panel.pages.sessions import run_replay
from ania.panel.query_args import text_arg, time_arg
from ania.panel.render import BadInput, api_error, page_args, paged, render
from ania.transcripts import masked
from services.usage import STATUSES, QueryFilter

#: Characters of a row's input and reply in the list (the detail has them whole).
LIST_CHARS = 200


def query_filter(request: Request, page: int, size: int) -> QueryFilter:
    """The list's conditions from the query string (chat, user, status, tool, since, until); BadInput says
    what is wrong with one."""
    status = text_arg(request, "status")
    if status is not None and status not in STATUSES:
        raise BadInput(f"unknown status {status!r}; one of: {', '.join(STATUSES)}")
    return QueryFilter(session=text_arg(request, "session"), status=status, since=time_arg(request, "since"),
                       tool=text_arg(request, "tool"), sender=text_arg(request, "user"),
                       until=time_arg(request, "until"), limit=size, offset=(page - 1) * size)


def _short(row: dict[str, Any]) -> dict[str, Any]:
    cut = {k: (v if not isinstance(v, str) or len(v) <= LIST_CHARS else v[: LIST_CHARS - 1] + "…")
           for k, v in row.items() if k in ("input", "reply")}
    return {**row, **cut, "tools": sorted({c.get("name", "") for c in row["calls"]}), "calls": None}


def queries_page(ctx: PanelContext, f: QueryFilter, page: int, size: int) -> dict[str, Any]:
    log = ctx.services.queries
    rows = masked([_short(r) for r in log.rows(f)], ctx.services.paths, ctx.services.settings)
    return paged(rows, log.count(f), page, size)


def _qid(request: Request) -> int:
    raw = request.path_params["qid"]
    if not raw.isdigit() or len(raw) > 18:
        raise BadInput(f"a query id is a number, not {raw[:40]!r}")
    return int(raw)


async def page(request: Request) -> HTMLResponse:
    return render(request, "queries.html", {"title_key": "queries.title", "statuses": STATUSES,
                                            "labels": script_labels(request, "queries")})


async def api_list(request: Request) -> JSONResponse:
    page_no, size = page_args(request)
    return JSONResponse(queries_page(panel_context(request), query_filter(request, page_no, size), page_no, size))


def _row(request: Request) -> tuple[PanelContext, int, dict[str, Any] | None]:
    """The row the path names (None: there is none); BadInput for an id that is not a number."""
    ctx = panel_context(request)
    qid = _qid(request)
    return ctx, qid, ctx.services.queries.get(qid)


async def api_show(request: Request) -> JSONResponse:
    ctx, qid, row = _row(request)
    if row is None:
        return api_error(404, f"no query {qid}")
    return JSONResponse(masked(row, ctx.services.paths, ctx.services.settings))


async def api_replay(request: Request) -> JSONResponse:
    ctx, qid, row = _row(request)
    if row is None:
        return api_error(404, f"no query {qid}")
    if not row.get("checkpoint"):
        raise BadInput(f"query {qid} started a new session: there is no checkpoint to replay it from")
    result = await run_replay(ctx, row["session"], row["checkpoint"], None)
    record_panel_op(ctx, "query_replay", {"query": qid, "session": row["session"], "at": row["checkpoint"],
                                          "scratch": result["scratch"], "status": result["status"]})
    return JSONResponse(result)


def routes() -> list[BaseRoute]:
    return [Route("/queries", page, methods=["GET"]), Route("/api/queries", api_list, methods=["GET"]),
            Route("/api/queries/{qid}", api_show, methods=["GET"]),
            Route("/api/queries/{qid}/replay", api_replay, methods=["POST"])]
