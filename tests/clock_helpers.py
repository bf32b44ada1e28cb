"""Helpers of the clock tests: settings with a short minimum interval, waiting for log rows, task rows."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ania.fakes.openai_server import ScriptedOpenAI
from services.clock import ClockRun
from services.clock.service import ClockService
from tests.conftest import make_settings


def clock_settings(server: ScriptedOpenAI, clock: dict[str, Any] | None = None, **sections: Any):
    """The test settings with a 1 s minimum interval, so a task can fire every second or two."""
    return make_settings(server, clock={"min_interval_sec": 1, **(clock or {})}, **sections)


async def runs_until(clock: ClockService, session: str, cond: Any, timeout: float = 20.0) -> list[ClockRun]:
    """Poll the task log (newest first) until `cond(rows)` holds."""
    deadline = time.monotonic() + timeout
    while True:
        rows = clock.log(session, limit=100)
        if cond(rows):
            return rows
        assert time.monotonic() < deadline, f"task log never matched: {[(r.status, r.detail) for r in rows]}"
        await asyncio.sleep(0.02)


def fire_now(clock: ClockService, task_id: int) -> None:
    """Advance time to the task's next fire (ClockService.bring_forward): the scheduler hands it over at once,
    as it would have when its time came. One test per behaviour keeps waiting in real time (test_clock.py's
    first, test_clock_restart.py's processes)."""
    assert clock.bring_forward(task_id), f"task {task_id} has no next fire"


def finished(rows: list[ClockRun], status: str = "success", n: int = 1) -> bool:
    return sum(1 for r in rows if r.status == status) >= n


def task_row(session: str, schedule: str, prompt: str, *, since: float, last_fire: float | None = None,
             name: str = "t", timezone: str = "UTC", run_once: int = 0, enabled: int = 1) -> dict[str, Any]:
    """A row as clock_create would store it, with a chosen past (for start-up tests)."""
    return {"session": session, "name": name, "schedule": schedule, "prompt": prompt, "timezone": timezone,
            "run_once": run_once, "enabled": enabled, "timeout_sec": None, "created_by": "u1", "created_at": since,
            "since": since, "last_fire": last_fire}
