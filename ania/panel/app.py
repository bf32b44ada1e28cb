"""`build_app(ctx)`: the panel's Starlette app, assembled from the page modules that exist.

Each name in `PAGE_MODULES` is a module `ania/panel/pages/<name>.py` exporting `routes()` (its page and its
JSON API); a name whose module is not there yet is skipped, and the sidebar leaves it out.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from ania.panel import login
from ania.panel.context import PanelContext
from ania.panel.guard import PanelGuard
from ania.panel.i18n import load_catalogs, t
from ania.panel.render import BadInput, api_error
from core.errors import ToolError

HERE = Path(__file__).parent
PAGE_MODULES = ("overview", "queries", "usage", "sessions", "clock", "teams", "skills", "knowledge", "memory",
                "hooks", "config", "mcp", "commands", "ops", "approvals")


def available_pages() -> list[str]:
    return [name for name in PAGE_MODULES if importlib.util.find_spec(f"ania.panel.pages.{name}") is not None]


def templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["t"] = t
    return env


async def _bad_input(request: Request, exc: Exception) -> Response:
    return api_error(400, str(exc))


def build_app(ctx: PanelContext) -> Starlette:
    pages = available_pages()
    routes: list[BaseRoute] = [*login.routes()]
    for name in pages:
        routes.extend(importlib.import_module(f"ania.panel.pages.{name}").routes())
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="static"))
    app = Starlette(routes=routes, exception_handlers={BadInput: _bad_input, ToolError: _bad_input})
    app.state.panel = ctx
    app.state.pages = frozenset(pages)
    app.state.templates = templates()
    app.state.catalogs = load_catalogs()
    app.add_middleware(PanelGuard, auth=ctx.auth, extra_origins=ctx.extra_origins)
    return app
