"""Overview (`/`, `GET /api/overview`): is the bot up (platform, model endpoint, MCP servers, clock), today's
tokens against the quotas, and the recent failed turns. The page polls the API every few seconds."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.render import render

RECENT_ERRORS = 10
FAILED = ("error", "timeout", "interrupted")


def overview_data(ctx: PanelContext) -> dict[str, Any]:
    services = ctx.services
    settings = services.settings
    servers = [{"name": name, "state": server.state(), "up": server.conn.alive(), "tools": len(server.defs())}
               for name, server in sorted(services.mcp.servers.items())]
    servers += [{"name": name, "state": f"invalid ({why})", "up": False, "tools": 0}
                for name, why in sorted(services.mcp.invalid.items())]
    used = services.quota.used("")
    marks = ",".join("?" * len(FAILED))
    errors = services.store.query(
        f"SELECT id, started, session, sender, status, input FROM query_log WHERE status IN ({marks}) "  # noqa: S608 - placeholders only
        "ORDER BY id DESC LIMIT ?", [*FAILED, RECENT_ERRORS])
    running = services.store.query("SELECT COUNT(*) AS n FROM query_log WHERE status = 'running'")[0]["n"]
    return {
        "mode": ctx.mode,
        "uptime_sec": round(time.time() - ctx.started, 1) if ctx.started else 0,
        "platform": {"connected": ctx.platform_connected() if ctx.platform_connected is not None else None},
        "model": {"base_url": settings.llm.base_url, "model": settings.llm.model},
        "mcp": {"servers": servers, "up": sum(1 for s in servers if s["up"]), "total": len(servers)},
        "clock": {"running": services.clock.running, "tasks": len(services.clock.views())},
        "tokens": {"day": used.day, "total": used.total, "global_quota": settings.quota.global_daily_tokens,
                   "session_quota": settings.quota.session_daily_tokens, "in_flight": services.quota.in_flight()},
        "running_turns": int(running),
        "recent_errors": errors,
    }


async def page(request: Request) -> HTMLResponse:
    return render(request, "overview.html", {"title_key": "overview.title",
                                             "data": overview_data(panel_context(request))})


async def api(request: Request) -> JSONResponse:
    return JSONResponse(overview_data(panel_context(request)))


def routes() -> list[BaseRoute]:
    return [Route("/", page, methods=["GET"]), Route("/api/overview", api, methods=["GET"])]
