"""Schedules (C2): the text a person or the model writes, turned into an APScheduler trigger.

Forms: a 5-field cron line, `@every <duration>`, the named `@` forms, a one-time ISO datetime, and
`in <duration>` (once, that long from now; stored as the datetime it resolves to). Cron lines use
APScheduler's own `CronTrigger`, with two crontab rules it does not follow in 3.x made explicit here:

- weekday numbers are crontab's (0 and 7 = Sunday, 1 = Monday), translated to names, since APScheduler
  3.x counts 0 as Monday (its issue 286);
- a line that restricts both the day of the month and the weekday fires when either matches (crontab's
  rule), an `OrTrigger` of two cron triggers; APScheduler alone would require both.

Times are computed by the triggers on aware datetimes and compared as timestamps: adding a duration to a
local wall time loses the `fold` of a repeated hour when the clocks go back, and two times of one zone
compare as wall clocks.

The two crontab rules stay hand-written rather than moving to `croniter` at run time: APScheduler runs the
schedule (jobs, misfires, time zones), and a trigger driven by croniter would be a larger adapter than the
two rules; croniter checks them instead (tests/test_clock_schedule.py, a dev dependency).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import pairwise
from typing import Literal
from zoneinfo import ZoneInfo

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from core.errors import ToolError

ScheduleKind = Literal["cron", "every", "once"]

NAMED: dict[str, str] = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
FORMS = ('accepted schedules: a 5-field cron line "minute hour day-of-month month weekday" such as "0 9 * * 1-5" '
         '(weekday 0 or 7 = Sunday; names such as mon-fri work too); "@every <duration>" such as "@every 30m" or '
         '"@every 1h30m" (units s, m, h, d); "@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly"; '
         'a one-time ISO datetime such as "2026-05-10T09:00" (in the clock\'s timezone unless it has an offset); '
         'or "in <duration>" such as "in 20m" (once, that long from now)')
BAD = "{problem}. The " + FORMS
TOO_OFTEN = ("{schedule} runs every {gap} at its closest; repeating tasks must be at least {min} apart "
             "(clock.min_interval_sec)")
IN_THE_PAST = "{when} is in the past (it is now {now}); give a future time"

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SEC = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab numbering: index = number
_APS_ORDER = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DOW_ITEM = re.compile(r"(\*|[0-7]|[a-z]{3})(?:-([0-7]|[a-z]{3}))?(?:/(\d+))?")
#: How many fire times are looked at to find a cron line's shortest gap (a minute-level line shows it early).
GAP_SAMPLES = 60


def parse_duration(text: str) -> float:
    """Seconds in a duration such as "30m", "1h30m", "90s", "1.5h" (units ms, s, m, h, d), or ValueError."""
    text = text.strip().lower()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_SEC[m.group(2)]
        pos = m.end()
    if not text or pos != len(text):
        raise ValueError(f'"{text}" is not a duration')
    if total <= 0:
        raise ValueError(f'"{text}" is not a positive duration')
    return total


def human_seconds(seconds: float) -> str:
    """A short, stable rendering: 90 → "1m30s", 0.5 → "0.5s"."""
    if seconds < 1:
        return f"{seconds:g}s"
    whole, out = round(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            out.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(out)


def _day(token: str) -> int:
    if token.isdigit():
        return int(token) % 7
    if token not in _DAYS:
        raise ValueError(f'"{token}" is not a weekday')
    return _DAYS.index(token)


def crontab_weekdays(field: str) -> str:
    """A crontab weekday field as APScheduler day names ("1-5" → "mon,tue,wed,thu,fri"; "*" stays)."""
    field = field.lower()
    days: set[int] = set()
    for item in field.split(","):
        m = _DOW_ITEM.fullmatch(item)
        if not m:
            raise ValueError(f'"{item}" is not a weekday, range or step')
        start, end, step = m.group(1), m.group(2), int(m.group(3) or 1)
        if step < 1:
            raise ValueError(f'the step in "{item}" must be at least 1')
        if start == "*":
            if end:
                raise ValueError(f'"{item}" is not a weekday range')
            first, last = 0, 6
        else:
            first = int(start) if start.isdigit() else _day(start)
            last = (int(end) if end.isdigit() else _day(end) or 7) if end else (first if m.group(3) is None else 6)
            if last < first:
                raise ValueError(f'"{item}" runs backwards (crontab ranges do not wrap)')
        days.update(d % 7 for d in range(first, last + 1, step))
    if field in ("*", "*/1"):
        return "*"
    return ",".join(name for name in _APS_ORDER if _DAYS.index(name) in days)


def cron_trigger(line: str, tz: tzinfo) -> BaseTrigger:
    fields = line.split()
    if len(fields) != 5:
        raise ValueError(f"a cron line has 5 fields, this one has {len(fields)}")
    minute, hour, day, month, weekday = fields
    names = crontab_weekdays(weekday)
    if day != "*" and weekday != "*":  # crontab: either the day of the month or the weekday
        return OrTrigger([CronTrigger(minute=minute, hour=hour, day=day, month=month, timezone=tz),
                          CronTrigger(minute=minute, hour=hour, month=month, day_of_week=names, timezone=tz)])
    return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=names, timezone=tz)


@dataclass(frozen=True)
class Schedule:
    #: The schedule as stored: normalized (lower-case `@` forms, single spaces; `in 20m` as its datetime).
    text: str
    kind: ScheduleKind
    trigger: BaseTrigger
    tz: ZoneInfo

    @property
    def repeats(self) -> bool:
        return self.kind != "once"

    def first_after(self, since: datetime) -> datetime | None:
        """The first fire time at or after `since` (an @every schedule's first is one interval after it)."""
        first: datetime | None = self.trigger.get_next_fire_time(None, since.astimezone(self.tz))
        return first

    def after(self, previous: datetime) -> datetime | None:
        """The first fire time strictly after `previous` (which was a fire time)."""
        later = (previous.astimezone(UTC) + timedelta(seconds=1)).astimezone(self.tz)
        nxt: datetime | None = self.trigger.get_next_fire_time(previous.astimezone(self.tz), later)
        return nxt

    def fires(self, since: datetime, last: datetime | None = None) -> Iterator[datetime]:
        """Fire times in order: after `last` when the task fired before, else from `since`."""
        t = self.after(last) if last is not None else self.first_after(since)
        while t is not None:
            yield t
            nxt = self.after(t)
            # Never go back (a trigger that did would loop forever). Timestamps, not `<=`: two times of one
            # zone compare as wall clocks, and the repeated hour of a DST change would look like no progress.
            if nxt is not None and nxt.timestamp() <= t.timestamp():
                return
            t = nxt

    def shortest_gap(self, since: datetime) -> float | None:
        """Seconds between the closest two of the next fire times (None for a one-time schedule)."""
        if self.kind == "once":
            return None
        times = []
        for t in self.fires(since):
            times.append(t.timestamp())
            if len(times) >= GAP_SAMPLES:
                break
        gaps = [b - a for a, b in pairwise(times)]
        return min(gaps) if gaps else None


def parse(text: str, tz: ZoneInfo, since: datetime) -> Schedule:
    """The schedule, or a ValueError naming the problem. `since` anchors @every and resolves `in <duration>`."""
    raw = " ".join(text.split())
    low = raw.lower()
    if not raw:
        raise ValueError("the schedule is empty")
    if low in NAMED:
        return Schedule(low, "cron", cron_trigger(NAMED[low], tz), tz)
    if low.startswith("@every"):
        seconds = parse_duration(low.removeprefix("@every"))
        start = datetime.fromtimestamp(since.timestamp() + seconds, tz)
        trigger = IntervalTrigger(seconds=seconds, start_date=start, timezone=tz)
        return Schedule(f"@every {human_seconds(seconds)}", "every", trigger, tz)
    if low.startswith("@"):
        raise ValueError(f'"{raw}" is not a known @ form')
    if low.startswith("in "):
        seconds = parse_duration(low.removeprefix("in "))
        when = datetime.fromtimestamp(since.timestamp() + seconds, tz).replace(microsecond=0)
        return Schedule(when.isoformat(), "once", DateTrigger(when, timezone=tz), tz)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ].*)?", raw):
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise ValueError(f'"{raw}" is not a valid ISO datetime') from None
        when = when.replace(tzinfo=tz) if when.tzinfo is None else when
        return Schedule(when.isoformat(), "once", DateTrigger(when, timezone=tz), tz)
    return Schedule(raw, "cron", cron_trigger(raw, tz), tz)


def parse_for_task(text: str, tz: ZoneInfo, now: datetime, min_interval_sec: int) -> Schedule:
    """Parse what a person or the model asked for, with the limits a new or changed task must meet:
    a ToolError that lists the accepted forms, a repeating schedule no closer than the minimum, a
    one-time schedule in the future."""
    try:
        schedule = parse(text, tz, now)
    except (ValueError, TypeError, OverflowError, OSError) as e:  # APScheduler's and datetime's complaints
        raise ToolError(BAD.format(problem=str(e).rstrip("."))) from None
    if schedule.kind == "once":
        first = schedule.first_after(now)
        if first is None or first.timestamp() <= now.timestamp():
            when = datetime.fromisoformat(schedule.text)
            raise ToolError(IN_THE_PAST.format(when=show(when, tz), now=show(now, tz)))
        return schedule
    gap = schedule.shortest_gap(now)
    if gap is not None and gap < min_interval_sec:
        raise ToolError(TOO_OFTEN.format(schedule=f'"{schedule.text}"', gap=human_seconds(gap),
                                         min=human_seconds(min_interval_sec)))
    return schedule


def show(when: datetime | None, tz: ZoneInfo) -> str:
    """A fire time as people read it, in the task's timezone: "2026-05-11 09:00:00 Mon (Asia/Shanghai)"."""
    if when is None:
        return "none"
    local = when.astimezone(tz)
    return f"{local:%Y-%m-%d %H:%M:%S} {local:%a} ({tz.key})"
