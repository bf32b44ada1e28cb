"""Knowledge (`/knowledge`, `GET/POST /api/knowledge`, `DELETE /api/knowledge/{id}`, `GET /api/knowledge/search`,
`DELETE /api/knowledge/scope/{scope}`): the global base is managed here (add through the knowledge service's
own ingest, with its limits and de-duplication; delete; search), the chats' bases are browsed and pruned.
Every change is in the operation log with the actor `panel`."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.labels import script_labels
from ania.panel.oplog import record_panel_op
from ania.panel.render import BadInput, api_error, json_body, page_args, paged, render
from services.knowledge import GLOBAL, check_scope

MAX_QUERY = 2000
MAX_TOP_K = 50


def _scope(request: Request) -> str:
    return check_scope(request.query_params.get("scope", GLOBAL).strip() or GLOBAL)


async def documents_page(ctx: PanelContext, scope: str, page: int, size: int) -> dict[str, Any]:
    knowledge = ctx.services.knowledge
    docs, total = await knowledge.list_documents(scope, size, (page - 1) * size)
    scopes = sorted((await knowledge.scopes()).items(), key=lambda kv: (kv[0] != GLOBAL, kv[0]))
    return {**paged([asdict(d) for d in docs], total, page, size), "scope": scope,
            "scopes": [{"scope": s, "documents": n} for s, n in scopes]}


async def page(request: Request) -> HTMLResponse:
    return render(request, "knowledge.html", {"title_key": "knowledge.title", "scope": _scope(request),
                                              "labels": script_labels(request, "knowledge")})


async def api_list(request: Request) -> JSONResponse:
    page_no, size = page_args(request)
    return JSONResponse(await documents_page(panel_context(request), _scope(request), page_no, size))


async def api_add(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    body = await json_body(request)
    title, content = body.get("title", ""), body.get("content")
    if not isinstance(title, str) or not isinstance(content, str):
        raise BadInput("title and content must be texts")
    scope = body.get("scope", GLOBAL)
    if scope != GLOBAL:
        raise BadInput("documents are added to the global base here; a chat's own base is filled from the chat")
    added = await ctx.services.knowledge.add_document(GLOBAL, title, content)  # ToolError: 400 with its text
    if not added.duplicate:
        record_panel_op(ctx, "kb_add", {"id": added.doc.id, "title": added.doc.title, "scope": GLOBAL,
                                        "chunks": added.doc.chunks})
    return JSONResponse({"document": asdict(added.doc), "duplicate": added.duplicate, "vectors": added.vectors},
                        status_code=200 if added.duplicate else 201)


async def api_delete(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    doc_id = request.path_params["doc_id"]
    if await ctx.services.knowledge.kb.find(doc_id) is None:
        return api_error(404, f"no document {doc_id[:80]!r} in the knowledge base")
    info = await ctx.services.knowledge.delete_document(doc_id, None, None)
    record_panel_op(ctx, "kb_delete", {"id": info.id, "title": info.title, "scope": info.scope})
    return JSONResponse({"deleted": asdict(info)})


async def api_prune_scope(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    scope = check_scope(request.path_params["scope"])
    if scope == GLOBAL:
        raise BadInput("the global base is not pruned whole: delete its documents one by one")
    gone = await ctx.services.knowledge.clear_scope(scope)
    if not gone:
        return api_error(404, f"the knowledge base of {scope} holds no document")
    record_panel_op(ctx, "kb_prune", {"scope": scope, "documents": len(gone)})
    return JSONResponse({"scope": scope, "deleted": [asdict(d) for d in gone]})


async def api_search(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    query = request.query_params.get("q", "").strip()
    if not query or len(query) > MAX_QUERY:
        raise BadInput(f"q must be a text of 1 to {MAX_QUERY} characters")
    raw = request.query_params.get("top_k", "10")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_TOP_K:
        raise BadInput(f"top_k must be a number from 1 to {MAX_TOP_K}")
    hits = await ctx.services.knowledge.search(_scope(request), query, int(raw))  # ToolError (no terms): 400
    return JSONResponse({"query": query, "items": [
        {"doc": h.chunk.doc_id, "title": h.chunk.title, "pos": h.chunk.pos, "scope": h.chunk.scope,
         "text": h.chunk.text, "score": round(h.score, 4)} for h in hits]})


def routes() -> list[BaseRoute]:
    return [Route("/knowledge", page, methods=["GET"]),
            Route("/api/knowledge", api_list, methods=["GET"]), Route("/api/knowledge", api_add, methods=["POST"]),
            Route("/api/knowledge/search", api_search, methods=["GET"]),
            Route("/api/knowledge/scope/{scope}", api_prune_scope, methods=["DELETE"]),
            Route("/api/knowledge/{doc_id}", api_delete, methods=["DELETE"])]
