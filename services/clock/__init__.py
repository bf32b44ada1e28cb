"""The clock (C1-C7): scheduled tasks that the model and people create, kept across restarts.

How the modules fit:

- `schedule`: the schedule text (cron, `@every`, `@daily` …, a one-time datetime, `in 20m`) → an
  APScheduler trigger, with the limits a new task must meet (minimum interval, a future time).
- `model`: the task, a task-log row, a run's spec and outcome, and the `ClockRunner` seam.
- `store`: the `clock_tasks` and `clock_runs` tables in `data/ania.db` (migration `004_clock`).
- `scheduler`: the clock's own `AsyncIOScheduler`, whose executor hands each due fire to the service.
- `misfire`: what happens at start to fire times that passed while the bot was down.
- `background`: a clock run's async subagents (C7), drained before its synthesis.
- `texts`: the lines and notices people and the model read.
- `book`: the task book: create, update, delete, list, with the checks and ownership every change meets.
- `service`: `ClockService`, the book plus the scheduler: the fire path and start-up.
- `lease`: on a Postgres store, the advisory lock that picks the one bot of those sharing it that fires.

A run itself is the clock graph (graphs/clock.py), reached through the runner the runtime binds
(ania/clock/runner.py), because a service cannot import a graph.
"""

from services.clock.background import BackgroundJob, BackgroundSubagents
from services.clock.model import ClockRun, ClockRunner, ClockTask, RunOutcome, RunSpec, RunStatus, ToolCallRecord
from services.clock.schedule import FORMS, Schedule, parse, parse_for_task, show
from services.clock.service import ClockService
from services.clock.texts import TaskView, run_line

__all__ = [
    "FORMS",
    "BackgroundJob",
    "BackgroundSubagents",
    "ClockRun",
    "ClockRunner",
    "ClockService",
    "ClockTask",
    "RunOutcome",
    "RunSpec",
    "RunStatus",
    "Schedule",
    "TaskView",
    "ToolCallRecord",
    "parse",
    "parse_for_task",
    "run_line",
    "show",
]
