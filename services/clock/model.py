"""What the clock stores and hands around: a task, a run's log row, a run's outcome, and the runner seam."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from services.clock.background import BackgroundSubagents

#: How a run ended (C4): it answered, ran out of time, failed, was cut off by a stop or crash of the bot, or
#: never started (its fire time passed while the bot was down, or its previous run was still going).
RunStatus = Literal["running", "success", "timeout", "error", "interrupted", "missed"]
#: Each run's log keeps the first this-many tool calls, and the total count.
LOGGED_CALLS = 20
#: A logged call's arguments are cut to this many characters.
LOGGED_ARGS = 200


@dataclass(frozen=True)
class ClockTask:
    id: int
    #: The target: the session it belongs to and reports to (`g:<group>` / `f:<user>`).
    session: str
    name: str
    #: The schedule as stored (services/clock/schedule.py `Schedule.text`).
    schedule: str
    prompt: str
    #: The IANA timezone its schedule is read in (clock.timezone when it was created).
    timezone: str
    run_once: bool
    enabled: bool
    timeout_sec: int | None
    created_by: str
    created_at: float
    #: Fire times count from here (creation, the last change of schedule, resume).
    since: float
    #: The scheduled time of its latest fire (None before the first).
    last_fire: float | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ClockTask:
        """Raises (ValueError, TypeError, KeyError) on a row that is not a task: the caller reports it."""
        timeout = row["timeout_sec"]
        last = row["last_fire"]
        task = cls(id=int(row["id"]), session=_text(row, "session"), name=_text(row, "name"),
                   schedule=_text(row, "schedule"), prompt=_text(row, "prompt"), timezone=_text(row, "timezone"),
                   run_once=_flag(row, "run_once"), enabled=_flag(row, "enabled"),
                   timeout_sec=None if timeout is None else int(timeout), created_by=str(row["created_by"] or ""),
                   created_at=float(row["created_at"]), since=float(row["since"]),
                   last_fire=None if last is None else float(last))
        if not task.session.startswith(("g:", "f:")):
            raise ValueError(f"session {task.session!r} is not g:<group> or f:<user>")
        return task

    @property
    def label(self) -> str:
        return f'task {self.id} "{self.name}"'


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} is {value!r}, not a text")
    return value


def _flag(row: Mapping[str, Any], key: str) -> bool:
    value = row[key]
    if value not in (0, 1, True, False):
        raise ValueError(f"{key} is {value!r}, not 0 or 1")
    return bool(value)


@dataclass(frozen=True)
class ToolCallRecord:
    name: str
    args: str

    @classmethod
    def of(cls, name: str, args: Any) -> ToolCallRecord:
        text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
        return cls(name, text if len(text) <= LOGGED_ARGS else text[:LOGGED_ARGS] + "…")


@dataclass(frozen=True)
class ClockRun:
    """One row of the task log."""

    id: str
    task_id: int
    session: str
    task_name: str
    status: RunStatus
    scheduled: float
    started: float | None = None
    ended: float | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_count: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    reply: str = ""
    #: Why it ended as it did (an error, what was missed, "not delivered: …").
    detail: str = ""
    delivered: bool = False
    #: Its checkpoint thread, `clock:<task id>:<run id>` ("" when it never started).
    thread: str = ""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ClockRun:
        calls = tuple(ToolCallRecord(str(c.get("name", "")), str(c.get("args", "")))
                      for c in json.loads(row["tool_calls"] or "[]"))
        return cls(id=row["id"], task_id=int(row["task_id"]), session=row["session"], task_name=row["task_name"],
                   status=row["status"], scheduled=float(row["scheduled"]), started=row["started"],
                   ended=row["ended"], tool_calls=calls, tool_call_count=int(row["tool_call_count"]),
                   usage=json.loads(row["usage"] or "{}"), reply=row["reply"] or "", detail=row["detail"] or "",
                   delivered=bool(row["delivered"]), thread=row["thread"] or "")


@dataclass(frozen=True)
class RunSpec:
    """One run as the service hands it to the runner."""

    run_id: str
    scheduled: datetime
    budget_sec: float
    #: The run's async subagents (C7), drained before its synthesis.
    background: BackgroundSubagents
    #: Who started it by hand (`/clock run`), "" when the schedule did.
    by: str = ""


@dataclass(frozen=True)
class RunOutcome:
    status: Literal["success", "timeout", "error"]
    reply: str = ""
    delivered: bool = False
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_count: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    detail: str = ""
    thread: str = ""
    #: The target was already told this (a repeating task refused by the daily quota): logged, not told again.
    quiet: bool = False


class ClockRunner(Protocol):
    """What the runtime binds (ania/clock/runner.py): one run of the clock graph for a task. It never
    raises for the run's own failures (a model error, a timeout): they come back as the outcome."""

    async def run(self, task: ClockTask, spec: RunSpec) -> RunOutcome: ...


def new_run_id() -> str:
    """A run's id: 12 hex digits, unique enough within one store's run log."""
    return uuid.uuid4().hex[:12]
