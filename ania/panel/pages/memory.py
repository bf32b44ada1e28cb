"""Memory (`/memory`, `GET /api/memory`, `DELETE /api/memory/{id}`): each chat's long-term memories (what
memory_save stored, tools/memory.py), listed per chat with their text and deleted by the operator through
the knowledge service. A deletion is in the operation log with the actor `panel`."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.labels import script_labels
from ania.panel.oplog import record_panel_op
from ania.panel.query_args import text_arg
from ania.panel.render import api_error, page_args, paged, render


async def memories_page(ctx: PanelContext, session: str | None, page: int, size: int) -> dict[str, Any]:
    """The chats that have memories; with `session`, a page of that chat's memories (newest first)."""
    knowledge = ctx.services.knowledge
    chats = await knowledge.memory_scopes()
    items: list[dict[str, Any]] = []
    total = 0
    if session:
        found, total = await knowledge.list_memories(session, size, (page - 1) * size)
        items = [{**asdict(info), "text": text} for info, text in found]
    return {**paged(items, total, page, size), "session": session,
            "sessions": [{"session": s, "memories": n} for s, n in sorted(chats.items())]}


async def page(request: Request) -> HTMLResponse:
    return render(request, "memory.html", {"title_key": "memory.title", "session": text_arg(request, "session") or "",
                                              "labels": script_labels(request, "memory")})


async def api_list(request: Request) -> JSONResponse:
    page_no, size = page_args(request)
    return JSONResponse(await memories_page(panel_context(request), text_arg(request, "session"), page_no, size))


async def api_delete(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    memory_id = request.path_params["memory_id"]
    if await ctx.services.knowledge.memory.find(memory_id) is None:
        return api_error(404, f"no memory {memory_id[:80]!r}")
    info = await ctx.services.knowledge.delete_memory(None, memory_id)
    record_panel_op(ctx, "memory_delete", {"id": info.id, "session": info.scope})
    return JSONResponse({"deleted": asdict(info)})


def routes() -> list[BaseRoute]:
    return [Route("/memory", page, methods=["GET"]), Route("/api/memory", api_list, methods=["GET"]),
            Route("/api/memory/{memory_id}", api_delete, methods=["DELETE"])]
