"""Approvals (`/approvals`, `GET /api/approvals`, `POST /api/approvals/{id}`): the questions waiting for a
person (gated tool calls, configuration changes from a chat), answered here as the operator. The answer is
recorded as the panel's (the gate's `tool_approval` row has `by` = panel) and the chat is told."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.render import BadInput, api_error, json_body, render
from services.gates.approval_types import ALLOW_WORDS, DENY_WORDS, Verdict

ACTOR = "panel"
TOLD = '{verb} from the web panel: "{tool}" ({id}).'


def open_items(ctx: PanelContext) -> list[dict[str, Any]]:
    return [{"id": p.id, "kind": p.request["kind"], "tool": p.request["tool"], "session": p.request["session"],
             "requester": p.request.get("requester", ""), "reason": p.request.get("reason", ""),
             "args": p.request.get("args", {}), "prompt": p.request.get("prompt", "")}
            for p in ctx.services.approvals.open_questions()]


async def page(request: Request) -> HTMLResponse:
    return render(request, "approvals.html", {"title_key": "approvals.title",
                                              "items": open_items(panel_context(request))})


async def api_list(request: Request) -> JSONResponse:
    items = open_items(panel_context(request))
    return JSONResponse({"items": items, "total": len(items)})


async def api_answer(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    body = await json_body(request)
    word = str(body.get("decision", "")).strip().lower()
    verdict: Verdict
    if word in ALLOW_WORDS:
        verdict = "allow"
    elif word in DENY_WORDS:
        verdict = "deny"
    else:
        raise BadInput('send {"decision": "allow"} or {"decision": "deny"}')
    pending = ctx.services.approvals.answer_as_operator(request.path_params["id"], verdict, ACTOR)
    if pending is None:
        return api_error(404, "no such question is waiting (answered or timed out already?)")
    verb = "Allowed" if verdict == "allow" else "Denied"
    await ctx.services.outboxes.send(pending.request["session"],
                                     TOLD.format(verb=verb, tool=pending.request["tool"], id=pending.id))
    return JSONResponse({"id": pending.id, "decision": verdict, "by": ACTOR})


def routes() -> list[BaseRoute]:
    return [
        Route("/approvals", page, methods=["GET"]),
        Route("/api/approvals", api_list, methods=["GET"]),
        Route("/api/approvals/{id}", api_answer, methods=["POST"]),
    ]
