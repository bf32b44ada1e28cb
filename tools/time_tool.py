"""The `time` built-in (T5): the current date and time, in a timezone the model names."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tool import Tool
from services.context import RunContext


class TimeParams(BaseModel):
    timezone: str = Field("UTC", description="IANA timezone name, e.g. Asia/Shanghai or Europe/Berlin")


class TimeTool(Tool[TimeParams, RunContext]):
    name = "time"
    description = "Get the current date, time and weekday in a timezone."
    params = TimeParams

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        self._now = now or (lambda: datetime.now(ZoneInfo("UTC")))

    async def execute(self, args: TimeParams, ctx: RunContext) -> str:
        try:
            zone = ZoneInfo(args.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(f'unknown timezone "{args.timezone}"; use an IANA name such as Asia/Shanghai') from None
        t = self._now().astimezone(zone)
        return f"{t:%Y-%m-%d %H:%M:%S} {args.timezone} ({t:%A}, UTC{t:%z})"
