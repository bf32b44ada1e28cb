"""Usage (`/usage`, `GET /api/usage`): today's tokens per chat and in all against the daily quotas, and the last
30 days (services/usage/report.py: the quota's counters), globally or for one chat. The chart is an SVG drawn
here, on the server."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute, Route

from ania.panel.context import PanelContext, panel_context
from ania.panel.query_args import text_arg
from ania.panel.render import render
from services.usage.report import usage_report

#: The chart's drawing area (SVG user units).
WIDTH, HEIGHT, PAD = 600, 160, 4


def usage_data(ctx: PanelContext, session: str | None) -> dict[str, Any]:
    return usage_report(ctx.services.quota, session)


def chart(days: list[dict[str, Any]], quota: int) -> dict[str, Any]:
    """Bars of the days' tokens, scaled to the largest day (or the daily quota, when higher)."""
    top = max([d["tokens"] for d in days] + [quota, 1])
    step = WIDTH / max(len(days), 1)
    bars = []
    for i, d in enumerate(days):
        h = round(d["tokens"] / top * (HEIGHT - PAD), 1)
        bars.append({"x": round(i * step + 1, 1), "y": round(HEIGHT - h, 1), "w": round(max(step - 2, 1), 1),
                     "h": h, "day": d["day"], "tokens": d["tokens"]})
    line = round(HEIGHT - quota / top * (HEIGHT - PAD), 1) if quota else None
    return {"width": WIDTH, "height": HEIGHT, "bars": bars, "quota_y": line, "top": top}


async def page(request: Request) -> HTMLResponse:
    session = text_arg(request, "session")
    data = usage_data(panel_context(request), session)
    quotas = data["quotas"]
    quota = quotas["session_daily_tokens"] if session else quotas["global_daily_tokens"]
    return render(request, "usage.html", {"title_key": "usage.title", "data": data, "session": session or "",
                                          "chart": chart(data["days"], quota), "quota": quota})


async def api(request: Request) -> JSONResponse:
    return JSONResponse(usage_data(panel_context(request), text_arg(request, "session")))


def routes() -> list[BaseRoute]:
    return [Route("/usage", page, methods=["GET"]), Route("/api/usage", api, methods=["GET"])]
