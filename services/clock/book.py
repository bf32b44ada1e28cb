"""The task book (C2, C6): creating, changing, deleting and listing tasks, with the checks every change meets.

Ownership is checked here for the tools and `/clock` alike: `session` is the caller's chat, and None means
an admin acting on any chat. Errors are `ToolError`s whose text is shown as it is. The book knows nothing of
the scheduler: the clock service (services/clock/service.py) registers what the book returns.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from core.context import is_session_key
from core.errors import ToolError
from core.settings import ClockSettings
from services.clock.model import ClockRun, ClockTask
from services.clock.schedule import Schedule, parse, parse_for_task
from services.clock.store import ClockStore
from services.clock.texts import TaskView
from services.clock.zones import local_zone

MAX_PROMPT = 4000
MAX_NAME = 40
NOT_HERE = "no task {id} in this chat (clock_list shows this chat's tasks; a chat manages only its own)"
TOO_MANY = "this chat already has {n} tasks (clock.max_tasks_per_session is {max}); delete one first"
EMPTY_PROMPT = "the prompt is empty; say what the task should do each time it runs"
LONG_PROMPT = "the prompt is {n} characters long; at most {max} are accepted"
BAD_NAME = "the name must be one line of at most {max} characters"
BROKEN = "task {id} cannot be scheduled ({why}); delete it and create it again"
BAD_SESSION = '"{session}" is not a chat: use g:<group id> or f:<user id>'
NOTHING_TO_CHANGE = "nothing to change: give a schedule, prompt, enabled or timeout_sec"
#: What a stored row that is not a task raises when it is read (reported, never loaded).
UNREADABLE = (ValueError, TypeError, KeyError, OverflowError)

#: The id of a task's run in progress ("" when none).
RunningOf = Callable[[int], str]


class TaskBook:
    def __init__(self, db: ClockStore, settings: ClockSettings, tz: ZoneInfo, running_of: RunningOf) -> None:
        self.db = db
        self.settings = settings
        self.tz = tz
        self._running_of = running_of
        #: Rows that could not be loaded at start: task id → why.
        self.broken: dict[int, str] = {}

    def create(self, session: str, by: str, schedule: str, prompt: str, name: str | None = None,
               run_once: bool = False, timeout_sec: int | None = None) -> ClockTask:
        if not is_session_key(session):
            raise ToolError(BAD_SESSION.format(session=session[:80]))
        prompt = _checked_prompt(prompt)
        count = self.db.count(session)
        if count >= self.settings.max_tasks_per_session:
            raise ToolError(TOO_MANY.format(n=count, max=self.settings.max_tasks_per_session))
        now = datetime.now(self.tz)
        parsed = parse_for_task(schedule, self.tz, now, self.settings.min_interval_sec)
        values = {"session": session, "name": _checked_name(name, prompt), "schedule": parsed.text, "prompt": prompt,
                  "timezone": self.tz.key, "run_once": int(run_once or not parsed.repeats), "enabled": 1,
                  "timeout_sec": self.clamp_timeout(timeout_sec), "created_by": by, "created_at": now.timestamp(),
                  "since": now.timestamp(), "last_fire": None}
        return self.task(self.db.add(values))

    def update(self, session: str | None, task_id: int, *, schedule: str | None = None, prompt: str | None = None,
               enabled: bool | None = None, timeout_sec: int | None = None) -> ClockTask:
        task = self.owned(session, task_id)
        if schedule is None and prompt is None and enabled is None and timeout_sec is None:
            raise ToolError(NOTHING_TO_CHANGE)
        changes: dict[str, Any] = {}
        now = datetime.now(self.tz)
        if schedule is not None:
            parsed = parse_for_task(schedule, self.zone(task), now, self.settings.min_interval_sec)
            changes.update(schedule=parsed.text, since=now.timestamp(), last_fire=None)
            if not parsed.repeats:
                changes["run_once"] = 1
        if prompt is not None:
            changes["prompt"] = _checked_prompt(prompt)
        if timeout_sec is not None:
            changes["timeout_sec"] = self.clamp_timeout(timeout_sec)
        if enabled is not None and enabled != task.enabled:
            changes["enabled"] = int(enabled)
            if enabled and "since" not in changes:  # fire times count again from now: a pause is not made up
                changes.update(since=now.timestamp(), last_fire=None)
        if changes:
            self.db.update(task.id, **changes)
        return self.task(task.id)

    def delete(self, session: str | None, task_id: int) -> TaskView:
        """Delete a task (a broken row too); returns how it looked."""
        row = self.db.row(task_id)
        if row is None or (session is not None and row.get("session") != session):
            raise ToolError(NOT_HERE.format(id=task_id))
        view = self.view_of(row)
        self.db.delete(task_id)
        self.broken.pop(task_id, None)
        return view

    def views(self, session: str | None = None) -> list[TaskView]:
        """This chat's tasks (every chat's for None), by id; broken rows included."""
        return [self.view_of(row) for row in self.db.rows(session)]

    def log(self, session: str | None, task_id: int | None = None, limit: int = 10) -> list[ClockRun]:
        return self.db.runs(session=session, task_id=task_id, limit=max(1, min(limit, 100)))

    def clamp_timeout(self, seconds: int | None) -> int | None:
        return None if seconds is None else min(max(int(seconds), 1), self.settings.max_timeout_sec)

    # --- reading ----------------------------------------------------------------------------------
    def task(self, task_id: int) -> ClockTask:
        task = self.db.get(task_id)
        if task is None:
            raise ToolError(NOT_HERE.format(id=task_id))
        return task

    def owned(self, session: str | None, task_id: int) -> ClockTask:
        """The task, when `session` may manage it (None: anyone) and it can be scheduled."""
        row = self.db.row(task_id)
        if row is None or (session is not None and row.get("session") != session):
            raise ToolError(NOT_HERE.format(id=task_id))
        try:
            task = ClockTask.from_row(row)
            self.schedule(task)
        except UNREADABLE as e:
            raise ToolError(BROKEN.format(id=task_id, why=why(e))) from None
        return task

    def zone(self, task: ClockTask) -> ZoneInfo:
        return local_zone(task.timezone, strict=True)

    def schedule(self, task: ClockTask) -> Schedule:
        tz = self.zone(task)
        return parse(task.schedule, tz, datetime.fromtimestamp(task.since, tz))

    def view(self, task: ClockTask) -> TaskView:
        schedule = self.schedule(task)
        return TaskView(task.id, task.session, task, schedule, self.next_fire(task, schedule),
                        running=self._running_of(task.id))

    def view_of(self, row: dict[str, Any]) -> TaskView:
        try:
            return self.view(ClockTask.from_row(row))
        except UNREADABLE as e:
            reason = self.broken.get(int(row["id"])) or why(e)
            return TaskView(int(row["id"]), str(row.get("session")), None, None, None, broken=reason)

    def maybe_view(self, task_id: int) -> TaskView | None:
        """The task's view for a notice, None when it is gone or unreadable."""
        try:
            task = self.db.get(task_id)
            return self.view(task) if task is not None else None
        except UNREADABLE:
            return None

    def next_fire(self, task: ClockTask, schedule: Schedule) -> datetime | None:
        if not task.enabled:
            return None
        now = datetime.now(self.tz)
        nxt = schedule.first_after(now)
        return nxt if nxt is not None and nxt.timestamp() >= now.timestamp() else None


def _checked_prompt(prompt: str) -> str:
    prompt = prompt.strip()
    if not prompt:
        raise ToolError(EMPTY_PROMPT)
    if len(prompt) > MAX_PROMPT:
        raise ToolError(LONG_PROMPT.format(n=len(prompt), max=MAX_PROMPT))
    return prompt


def _checked_name(name: str | None, prompt: str) -> str:
    if name is None or not name.strip():
        words = " ".join(prompt.split())
        return words if len(words) <= 30 else words[:30] + "…"
    name = name.strip()
    if len(name) > MAX_NAME or "\n" in name:
        raise ToolError(BAD_NAME.format(max=MAX_NAME))
    return name


def why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:200]
