"""Sessions (`/sessions`, `GET /api/sessions`, `GET /api/sessions/{key}`, fork, replay, export, prune): the stored
sessions paged and searched in SQL (checkpoints/sessions.py), a session's whole conversation across its
compactions (checkpoints/transcript.py) with tool calls and images, and the operations of `ania sessions`
through the same functions (checkpoints/maintenance.py, ania/replay.py, ania/transcripts.py, ania/retention.py).
Secrets are masked in everything shown, as in an export."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ania.cli import SESSION_KEY
from ania.panel.context import PanelContext, panel_context
from ania.panel.labels import script_labels
from ania.panel.oplog import record_panel_op
from ania.panel.query_args import text_arg
from ania.panel.render import BadInput, api_error, json_body, page_args, paged, render
from ania.replay import replay_on
from ania.retention import prune_stored
from ania.transcripts import entry_dict, export_text, masked, redact, secret_values
from ania.when import parse_duration
from checkpoints.maintenance import ForkError, fork_thread
from checkpoints.sessions import latest_checkpoint, page_sessions, session_messages
from checkpoints.sessions import render as render_message
from checkpoints.transcript import Entry, full_transcript
from services.lru import LRU

MAX_KEY = 300
MAX_MESSAGE = 20_000


def _saver(ctx: PanelContext) -> Any:
    saver = ctx.engine.graph.checkpointer
    if saver is None or isinstance(saver, bool):
        raise BadInput("this engine has no checkpointer")
    return saver


def _key(value: Any, what: str = "key") -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_KEY:
        raise BadInput(f"{what} must be a session key such as g:123 or f:456")
    return value.strip()


async def sessions_page(ctx: PanelContext, search: str, page: int, size: int) -> dict[str, Any]:
    rows, total = await page_sessions(_saver(ctx), search, (page - 1) * size, size)
    items = [{"key": r.key, "checkpoints": r.checkpoints, "newest": r.newest,
              "at": r.at.isoformat(timespec="seconds") if r.at else None} for r in rows]
    return paged(items, total, page, size)


#: Whole transcripts kept by (session, newest checkpoint): checkpoints never change, so a kept one stays true
#: until the session moves on; paging through a long session rebuilds it once.
TRANSCRIPTS_KEPT = 8
Transcripts = LRU[tuple[str, str], list[Entry]]


def transcripts(request: Request) -> Transcripts:
    """The app's transcript cache (on `app.state`, made at first use)."""
    state = request.app.state
    if not hasattr(state, "transcripts"):
        state.transcripts = LRU(TRANSCRIPTS_KEPT)
    cache: Transcripts = state.transcripts
    return cache


async def transcript_page(ctx: PanelContext, key: str, page: int, size: int,
                          kept: Transcripts | None = None) -> dict[str, Any] | None:
    """A page of the whole conversation (oldest first), secrets masked; None: no such session."""
    saver = _saver(ctx)
    newest = await latest_checkpoint(saver, key)
    if not newest:
        return None
    entries = kept.get((key, newest)) if kept is not None else None
    if entries is None:
        entries = await full_transcript(saver, key) or []
        if kept is not None:
            kept.put((key, newest), entries)
    shown = masked([entry_dict(e) for e in entries[(page - 1) * size: page * size]], ctx.services.paths,
                   ctx.services.settings)
    return {**paged(shown, len(entries), page, size), "key": key,
            "compactions": sum(1 for e in entries if e.kind == "compaction")}


async def run_replay(ctx: PanelContext, key: str, at: str, message: str | None) -> dict[str, Any]:
    """ania/replay.py on the panel's engine: a scratch fork run again (plan mode on, approvals denied)."""
    said: list[str] = []
    try:
        report = await replay_on(ctx.engine, key, at, message=message, side_effects=False, out=said.append)
    except ForkError as e:
        raise BadInput(str(e)) from None
    values = secret_values(ctx.services.paths, ctx.services.settings)
    return {"session": key, "at": at, "scratch": report.scratch, "status": report.status,
            "removed_tools": report.removed_tools,
            "messages": [redact(render_message(m), values) for m in report.new_messages],
            "log": redact("".join(said), values)}


async def page(request: Request) -> HTMLResponse:
    return render(request, "sessions.html", {"title_key": "sessions.title",
                                             "labels": script_labels(request, "sessions")})


async def show_page(request: Request) -> HTMLResponse:
    return render(request, "session.html", {"title_key": "sessions.transcript",
                                            "key": request.query_params.get("key", "")[:MAX_KEY],
                                            "labels": script_labels(request, "sessions")})


async def api_list(request: Request) -> JSONResponse:
    page_no, size = page_args(request)
    search = text_arg(request, "q") or ""
    return JSONResponse(await sessions_page(panel_context(request), search, page_no, size))


async def api_show(request: Request) -> JSONResponse:
    key = _key(request.path_params["key"])
    page_no, size = page_args(request)
    found = await transcript_page(panel_context(request), key, page_no, size, transcripts(request))
    if found is None:
        return api_error(404, f"no session {key!r}")
    return JSONResponse(found)


async def api_export(request: Request) -> Response:
    ctx = panel_context(request)
    key = _key(request.query_params.get("key"))
    fmt = request.query_params.get("format", "json")
    if fmt not in ("json", "md"):
        raise BadInput("format must be json or md")
    full = request.query_params.get("full", "1") not in ("0", "false", "no")
    paths, settings = ctx.services.paths, ctx.services.settings
    if full:
        entries = await full_transcript(_saver(ctx), key)
        text = export_text(key, fmt, paths, entries=entries, settings=settings) if entries else None
    else:
        messages = await session_messages(_saver(ctx), key)
        text = export_text(key, fmt, paths, messages=messages, settings=settings) if messages else None
    if text is None:
        return api_error(404, f"no session {key!r}")
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in key)
    media = "application/json" if fmt == "json" else "text/markdown; charset=utf-8"
    return Response(text, media_type=media,
                    headers={"content-disposition": f'attachment; filename="session-{name}.{fmt}"'})


async def api_fork(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    body = await json_body(request)
    key, at = _key(body.get("key")), _key(body.get("at"), "at (a checkpoint id)")
    target = body.get("to") or f"{key}-fork-{secrets.token_hex(3)}"
    if not isinstance(target, str) or not SESSION_KEY.match(target) or len(target) > MAX_KEY:
        raise BadInput("to must be a session key: f:<user id> or g:<group id>")
    try:
        n = await fork_thread(_saver(ctx), key, at, target)
    except ForkError as e:
        return api_error(404 if str(e).startswith("no session") else 400, str(e))
    record_panel_op(ctx, "session_fork", {"session": key, "at": at, "to": target, "checkpoints": n})
    return JSONResponse({"session": key, "at": at, "to": target, "checkpoints": n})


async def api_replay(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    body = await json_body(request)
    key, at = _key(body.get("key")), _key(body.get("at"), "at (a checkpoint id)")
    message = body.get("message")
    if message is not None and (not isinstance(message, str) or not message.strip() or len(message) > MAX_MESSAGE):
        raise BadInput(f"message must be a text of 1 to {MAX_MESSAGE} characters")
    if not await latest_checkpoint(_saver(ctx), key):
        return api_error(404, f"no session {key!r}")
    result = await run_replay(ctx, key, at, message)
    record_panel_op(ctx, "session_replay", {"session": key, "at": at, "scratch": result["scratch"],
                                            "status": result["status"]})
    return JSONResponse(result)


async def api_prune(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    body = await json_body(request)
    older = body.get("older_than")
    try:
        seconds = parse_duration(older) if isinstance(older, str) else -1.0
    except ValueError as e:
        raise BadInput(f"older_than: {e}") from None
    if seconds <= 0:
        raise BadInput("older_than must be a duration such as 30d or 12h")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise BadInput("dry_run must be true or false")
    before = datetime.now(UTC) - timedelta(seconds=seconds)
    done = await prune_stored(_saver(ctx), ctx.services.store, ctx.services.queries, before, dry_run=dry_run)
    result = {"dry_run": dry_run, "before": before.isoformat(timespec="seconds"),
              "sessions_deleted": done.report.sessions_deleted, "checkpoints": done.report.checkpoints,
              "writes": done.report.writes, "query_rows": done.query_rows}
    if not dry_run:
        record_panel_op(ctx, "session_prune", {k: v for k, v in result.items() if k != "sessions_deleted"}
                        | {"sessions": len(done.report.sessions_deleted)})
    return JSONResponse(result)


def routes() -> list[BaseRoute]:
    return [Route("/sessions", page, methods=["GET"]), Route("/sessions/show", show_page, methods=["GET"]),
            Route("/api/sessions", api_list, methods=["GET"]),
            Route("/api/sessions/export", api_export, methods=["GET"]),
            Route("/api/sessions/fork", api_fork, methods=["POST"]),
            Route("/api/sessions/replay", api_replay, methods=["POST"]),
            Route("/api/sessions/prune", api_prune, methods=["POST"]),
            Route("/api/sessions/{key:path}", api_show, methods=["GET"])]
