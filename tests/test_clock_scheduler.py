"""The clock's APScheduler wrapper (services/clock/scheduler.py): a task registered from the first fire time
after the overdue ones were settled fires that time even when it passed before the registration (a slow
store at a hand-over of the clock, a chat told of missed runs), instead of skipping it silently."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.triggers.interval import IntervalTrigger

from services.clock.scheduler import Scheduler


async def test_a_fire_time_that_passed_before_the_registration_fires_once_at_once() -> None:
    handed: list[tuple[str, datetime]] = []
    scheduler = Scheduler(ZoneInfo("UTC"), lambda job, at: handed.append((job, at)))
    scheduler.start()
    try:
        now = datetime.now(UTC)
        upcoming = now - timedelta(seconds=0.5)  # after the settled `now`, passed by the time of the put
        trigger = IntervalTrigger(seconds=10, start_date=upcoming - timedelta(seconds=10), timezone=UTC)
        scheduler.put(1, trigger, upcoming)
        scheduler.put(2, trigger)  # from now: the passed time is not the job's
        for _ in range(100):
            if handed:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        assert handed == [("1", upcoming)]
        assert scheduler.next_fire(1) == upcoming + timedelta(seconds=10)  # then on its period
        assert scheduler.next_fire(2) == upcoming + timedelta(seconds=10)
    finally:
        scheduler.stop()
