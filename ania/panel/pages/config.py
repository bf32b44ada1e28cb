"""Configuration (`/config`, `GET /api/config`, `PUT /api/config/{key}`, `POST /api/reboot`).

Every setting with its description, default and running value; a sensitive one only says whether it is set.
A change goes through the same editor as the chat's config_set (services/configure/edit.py: the key's own
validation, ania.toml edited in place, the operation-log row) with the panel as the actor: the panel is
the operator, so the chat's second-admin approval does not apply. Settings take effect after a reboot.
"""

from __future__ import annotations

import json
import types
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.render import BadInput, api_error, json_body, render
from core.settings import Settings
from services.configure.edit import KeyView

ACTOR = "panel"


def _field(key: str) -> Any:
    section, _, name = key.partition(".")
    model = Settings.model_fields[section].annotation
    assert isinstance(model, type) and issubclass(model, BaseModel)  # noqa: S101 - registry() checked it
    return model.model_fields[name]


def _kind(annotation: Any) -> dict[str, Any]:
    """How the page edits a value: a switch, a number, a choice, a list (JSON) or text."""
    origin = get_origin(annotation)
    if origin is Literal:
        return {"kind": "choice", "choices": [str(a) for a in get_args(annotation)]}
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return _kind(inner[0]) if len(inner) == 1 else {"kind": "text"}
    if annotation is bool:
        return {"kind": "bool"}
    if annotation in (int, float):
        return {"kind": "number", "step": "1" if annotation is int else "any"}
    if origin in (list, tuple, set, frozenset, dict) or annotation in (list, tuple, dict):
        return {"kind": "json"}
    return {"kind": "text"}


def _default(field: Any) -> Any:
    if field.is_required():
        return None
    value = field.get_default(call_default_factory=True)
    return list(value) if isinstance(value, tuple | frozenset | set) else value


def key_entry(view: KeyView) -> dict[str, Any]:
    info = view.info
    field = _field(info.key)
    entry: dict[str, Any] = {
        "key": info.key, "section": info.key.partition(".")[0], "description": info.description,
        "env": info.env, "from_env": view.from_env, "sensitive": info.sensitive,
        "needs_reboot": view.needs_reboot, **_kind(field.annotation),
    }
    if info.sensitive:  # never the value: whether one is set, now and after the reboot
        entry.update(value=None, is_set=bool(view.value), default=None,
                     pending_set=bool(view.pending) if view.needs_reboot else None)
    else:
        entry.update(value=view.value, default=_default(field), pending=view.pending if view.needs_reboot else None)
    return entry


def config_entries(ctx: PanelContext) -> list[dict[str, Any]]:
    return [key_entry(v) for v in ctx.services.config.views()]


async def page(request: Request) -> HTMLResponse:
    ctx = panel_context(request)
    entries = config_entries(ctx)
    sections: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        sections.setdefault(entry["section"], []).append(entry)
    return render(request, "config.html", {
        "title_key": "config.title", "sections": sections, "can_reboot": ctx.reboot is not None,
        "needs_reboot": any(e["needs_reboot"] for e in entries), "tojson": json.dumps})


async def api_list(request: Request) -> JSONResponse:
    entries = config_entries(panel_context(request))
    return JSONResponse({"items": entries, "needs_reboot": any(e["needs_reboot"] for e in entries)})


async def api_set(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    editor = ctx.services.config
    key = request.path_params["key"]
    if key not in editor.keys:
        return api_error(404, f'unknown setting "{key[:80]}"')
    body = await json_body(request)
    if "value" not in body:
        raise BadInput('send {"value": <the new value>} (null removes the key from ania.toml)')
    value = body["value"]
    raw = value if isinstance(value, str) else json.dumps(value)
    message = await editor.set(key, raw, session="", actor=ACTOR, approved_by=ACTOR)
    view = editor.views([editor.key(key)])[0]
    return JSONResponse({"message": message, "item": key_entry(view)})


async def api_reboot(request: Request) -> JSONResponse:
    ctx = panel_context(request)
    if ctx.reboot is None:
        return api_error(409, "a reboot is not possible from here")
    before = ctx.services
    message = await ctx.reboot()
    if ctx.services is before:  # refused (a setting that does not load) or failed: the old engine goes on
        return api_error(409, message)
    return JSONResponse({"message": message})


def routes() -> list[BaseRoute]:
    return [
        Route("/config", page, methods=["GET"]),
        Route("/api/config", api_list, methods=["GET"]),
        Route("/api/config/{key}", api_set, methods=["PUT"]),
        Route("/api/reboot", api_reboot, methods=["POST"]),
    ]
