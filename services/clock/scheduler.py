"""The clock's own APScheduler (C1): an `AsyncIOScheduler` in the bot's event loop, shared with nothing else.

APScheduler decides *when*; the clock service decides what a fire does. A small executor hands each due
fire (the task id and its scheduled time) to the service at once and keeps no run of its own, so
APScheduler's instance limits and misfire rules never drop a fire silently: the service logs a fire
that comes too late, or while the task's previous run is still going, as `missed`. Jobs live in
APScheduler's memory store only; the tasks themselves are rows in `data/ania.db` (services/clock/store.py),
registered again at every start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.executors.base import BaseExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger

log = logging.getLogger(__name__)

#: Called with the job id (the task id as text) and the fire time it was due at.
Due = Callable[[str, datetime], None]


class HandOff(BaseExecutor):  # type: ignore[misc]  # APScheduler 3 ships no type hints: BaseExecutor is Any
    """An APScheduler executor that runs nothing: it passes the latest due fire time to `due`."""

    def __init__(self, due: Due) -> None:
        super().__init__()
        self._due = due

    def submit_job(self, job: Any, run_times: list[datetime]) -> None:
        self._due(job.id, run_times[-1])

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
        self._due(job.id, run_times[-1])


def _never_called() -> None:
    """The job function APScheduler requires; the hand-off executor never calls it."""


class Scheduler:
    def __init__(self, tz: ZoneInfo, due: Due) -> None:
        # coalesce: fire times that piled up (a busy loop) are handed over once, as the latest.
        self._aps = AsyncIOScheduler(timezone=tz, executors={"default": HandOff(due)},
                                     job_defaults={"coalesce": True, "misfire_grace_time": None})

    def put(self, task_id: int, trigger: BaseTrigger, first: datetime | None = None) -> None:
        """Register (or replace) a task's job. Its next fire is `first` when given (the first fire time after
        the moment the caller settled the overdue ones: one that passes before this call still fires, at
        once), else computed from now."""
        extra = {} if first is None else {"next_run_time": first}
        self._aps.add_job(_never_called, trigger=trigger, id=str(task_id), name=f"clock task {task_id}",
                          replace_existing=True, **extra)

    def remove(self, task_id: int) -> None:
        try:
            self._aps.remove_job(str(task_id))
        except JobLookupError:
            pass  # a one-time job APScheduler already dropped after its fire, or a paused task

    def bring_forward(self, task_id: int, at: datetime) -> bool:
        """Move the job's next fire to `at` (APScheduler's own `modify_job`, which wakes the scheduler); its
        trigger computes the fires after it. False when the task has no job (paused, done, never put)."""
        if self._aps.get_job(str(task_id)) is None:
            return False
        self._aps.modify_job(str(task_id), next_run_time=at)
        return True

    def next_fire(self, task_id: int) -> datetime | None:
        job = self._aps.get_job(str(task_id))
        return getattr(job, "next_run_time", None) if job is not None else None

    def start(self) -> None:
        self._aps.start()

    def stop(self) -> None:
        if self._aps.running:
            self._aps.shutdown(wait=False)

    def __len__(self) -> int:
        return len(self._aps.get_jobs())
