"""Keeping the scheduler in step with the task rows (C2, C4): every task at the start, fire times that passed
unseen settled first (services/clock/misfire.py: made up once, or logged `missed` and told); later, on a
Postgres store other bots share, only the tasks another bot created, changed or deleted. A row that cannot be
read as a task is reported, not loaded. The service (services/clock/service.py) owns the scheduler and the
fires; this module decides what the scheduler holds."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from services.clock.book import UNREADABLE, TaskBook, why
from services.clock.misfire import overdue
from services.clock.model import ClockRun, ClockTask, new_run_id
from services.clock.schedule import Schedule
from services.clock.scheduler import Scheduler
from services.clock.store import ClockStore
from services.clock.texts import missed_notice, show_ts

log = logging.getLogger(__name__)

#: A due time taken by another bot at a hand-over of the clock (its `missed` row or run already written).
TAKEN = "clock %s: its run due at %s was taken by another bot (a hand-over of the clock)"


def _key(task: ClockTask) -> tuple[Any, ...]:
    """What decides when a task fires (the prompt and the timeout are read at each fire)."""
    return task.schedule, task.timezone, task.enabled, task.since, task.run_once


class TaskLoader:
    """`fire_late(task_id, due)` starts a made-up run; `tell(session, text)` tells a chat its runs were missed."""

    def __init__(self, db: ClockStore, book: TaskBook, grace_sec: int, fire_late: Callable[[int, datetime], None],
                 tell: Callable[[str, str], Awaitable[None]]) -> None:
        self._db, self._book, self._grace = db, book, grace_sec
        self._fire_late, self._tell = fire_late, tell
        #: What the scheduler has of each task (its scheduling columns; None for a broken row).
        self._known: dict[int, tuple[Any, ...] | None] = {}

    def clear(self) -> None:
        self._known.clear()

    def forget(self, task_id: int, scheduler: Scheduler | None) -> None:
        if scheduler is not None:
            scheduler.remove(task_id)
        self._known.pop(task_id, None)

    def register(self, task: ClockTask, scheduler: Scheduler | None) -> None:
        """A task created or changed in this process: on the scheduler (when firing) as it is now."""
        if scheduler is None:
            return
        schedule = self._book.schedule(task)
        if task.enabled and self._book.next_fire(task, schedule) is not None:
            scheduler.put(task.id, schedule.trigger)
        else:
            scheduler.remove(task.id)
        self._known[task.id] = _key(task)

    async def pick_up(self, scheduler: Scheduler, now: datetime) -> int:
        """Load the tasks the scheduler does not have as they are (all of them at the start; later the ones
        another bot created, changed or deleted); returns how many runs were made up."""
        rows = {int(row["id"]): row for row in self._db.rows()}
        for gone in set(self._known) - set(rows):
            scheduler.remove(gone)
            del self._known[gone]
        made_up = 0
        for task_id, row in rows.items():
            try:
                task = ClockTask.from_row(row)
                schedule = self._book.schedule(task)
            except UNREADABLE as e:
                if task_id not in self._known or self._known[task_id] is not None:
                    self._book.broken[task_id] = reason = why(e)
                    log.error("clock task row %s cannot be loaded (%s); the other tasks are loaded", task_id, reason)
                    scheduler.remove(task_id)
                    self._known[task_id] = None
                continue
            if task_id in self._known and self._known[task_id] == _key(task):
                continue
            self._book.broken.pop(task_id, None)
            self._known[task_id] = _key(task)
            made_up += await self._load(task, schedule, scheduler, now)
        return made_up

    async def _load(self, task: ClockTask, schedule: Schedule, scheduler: Scheduler, now: datetime) -> int:
        """Settle a task's fire times that passed unseen and register it; 1 when a run is made up now."""
        if not task.enabled:
            scheduler.remove(task.id)
            return 0
        since = datetime.fromtimestamp(task.since, schedule.tz)
        last = None if task.last_fire is None else datetime.fromtimestamp(task.last_fire, schedule.tz)
        late = overdue(schedule, since, last, now, self._grace)
        if late.missed and late.first_missed is not None:
            await self._missed(task, schedule, late.first_missed, late.last_missed, late.missed, late.at_least)
        if late.upcoming is not None or (late.at_least and self._book.next_fire(task, schedule) is not None):
            # From `upcoming`, not from the time of this call: a fire time between `now` and here (telling a
            # chat of missed runs, a slow store at a hand-over of the clock) is neither overdue nor skipped.
            scheduler.put(task.id, schedule.trigger, late.upcoming)
        else:
            scheduler.remove(task.id)
            if late.run_at is None:  # a one-time task whose time passed: nothing left to run
                self._db.delete(task.id)
        if late.run_at is None:
            return 0
        self._fire_late(task.id, late.run_at)
        return 1

    async def _missed(self, task: ClockTask, schedule: Schedule, first: datetime, last: datetime | None, n: int,
                      at_least: bool) -> None:
        count = f"at least {n}" if at_least else str(n)
        latest = show_ts((last or first).timestamp(), schedule.tz)
        detail = f"{count} run(s) due while the bot was down, up to {latest}"
        run = ClockRun(new_run_id(), task.id, task.session, task.name, "missed", first.timestamp(), detail=detail)
        if not self._db.add_missed([run], last_fire=(last or first).timestamp()):
            log.info(TAKEN, task.label, latest)
            return
        log.warning("clock %s: %s", task.label, detail)
        await self._tell(task.session, missed_notice(task, n, first, last, self._grace, at_least, schedule.tz,
                                                     self._book.maybe_view(task.id)))
