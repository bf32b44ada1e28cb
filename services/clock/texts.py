"""What people and the model read about tasks and runs: one line per task, one per log row, the notices.

The tools (tools/clock.py) and `/clock` (ania/clock/command.py) print the same lines. Times are shown in
the task's own timezone; lists are sorted by task id (newest log rows first).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from services.clock.model import ClockRun, ClockTask
from services.clock.schedule import Schedule, show

PROMPT_SHOWN = 80
REPLY_SHOWN = 200

TIMED_OUT = 'Scheduled {label} timed out after {sec} s ({key}) and was stopped. {next}'
FAILED = 'Scheduled {label} failed: {detail} {next}'
INTERRUPTED = 'Scheduled {label} was interrupted: the bot stopped during its run (due {due}). {next}'
MISSED = ('Scheduled {label} missed {n} run{s} while the bot was down (due {first}{last}); runs more than '
          '{grace} s late are not made up (clock.misfire_grace_sec). {next}')
NEXT = "Its next run is {when}."
NO_NEXT = "It will not run again."
PAUSED = "It is paused."


@dataclass(frozen=True)
class TaskView:
    """A task as listed: its row id and target even when the row is broken."""

    id: int
    session: str
    task: ClockTask | None
    schedule: Schedule | None
    next_fire: datetime | None
    #: Why it cannot be scheduled ("" when it can).
    broken: str = ""
    #: The id of its run in progress ("" when none).
    running: str = ""

    def line(self, with_session: bool = False) -> str:
        where = f" in {self.session}" if with_session else ""
        task = self.task
        if task is None or self.schedule is None:
            return f"- {self.id}{where}: broken, not scheduled ({self.broken}); /clock del {self.id} removes it"
        state = "" if task.enabled else ", paused"
        state += f", running now (run {self.running})" if self.running else ""
        once = ", runs once" if task.run_once else ""
        timeout = f", timeout {task.timeout_sec} s" if task.timeout_sec else ""
        nxt = show(self.next_fire, self.schedule.tz) if task.enabled else "none while paused"
        return (f'- {task.id} "{task.name}"{where}: {self.schedule.text}{once}{timeout}{state}; next {nxt}; '
                f"prompt: {_cut(task.prompt, PROMPT_SHOWN)}")


def run_line(run: ClockRun, tz: ZoneInfo) -> str:
    scheduled = show(datetime.fromtimestamp(run.scheduled, tz), tz)
    head = f'- {run.id} task {run.task_id} "{run.task_name}": {run.status}, due {scheduled}'
    if run.started is not None:
        head += f", started {run.started - run.scheduled:+.1f} s"
        if run.ended is not None:
            head += f", took {run.ended - run.started:.1f} s"
    if run.tool_call_count:
        names = ", ".join(c.name for c in run.tool_calls)
        hidden = run.tool_call_count - len(run.tool_calls)
        more = f" and {hidden} more" if hidden > 0 else ""
        head += f", {run.tool_call_count} tool call{'s' if run.tool_call_count != 1 else ''} ({names}{more})"
    if run.usage.get("total_tokens"):
        head += f", {run.usage['total_tokens']} tokens"
    if run.detail:
        head += f"; {run.detail}"
    if run.reply:
        head += f"; reply{'' if run.delivered else ' (not delivered)'}: {_cut(run.reply, REPLY_SHOWN)}"
    return head


def next_words(view: TaskView | None) -> str:
    """The sentence a notice ends with: when it runs next."""
    if view is None or view.task is None:
        return NO_NEXT
    if not view.task.enabled:
        return PAUSED
    if view.next_fire is None or view.schedule is None:
        return NO_NEXT
    return NEXT.format(when=show(view.next_fire, view.schedule.tz))


def missed_notice(task: ClockTask, n: int, first: datetime, last: datetime | None, grace: int, at_least: bool,
                  tz: ZoneInfo, view: TaskView | None) -> str:
    count = f"at least {n}" if at_least else str(n)
    last_text = f" to {show(last, tz)}" if last is not None and n > 1 else ""
    return MISSED.format(label=task.label, n=count, s="" if n == 1 else "s", first=show(first, tz), last=last_text,
                         grace=grace, next=next_words(view))


def _cut(text: str, limit: int) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[:limit] + "…"


def show_ts(ts: float, tz: ZoneInfo) -> str:
    """A stored timestamp as the clock shows times to people."""
    return show(datetime.fromtimestamp(ts, tz), tz)
