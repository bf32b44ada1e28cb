"""What happens at start to fire times that passed while the bot was down (C4): nothing is skipped silently.

The latest of them runs once at start when it is at most `clock.misfire_grace_sec` late; every other one
(the earlier ones, or all of them when even the latest is too late) is written to the task log as
`missed`, as one row that counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from services.clock.schedule import Schedule

#: Counting stops here (a task every minute while the bot was down for a year is "at least" this many).
MAX_COUNTED = 10000


@dataclass(frozen=True)
class Overdue:
    #: The fire time to run now (None: none is recent enough).
    run_at: datetime | None
    #: The earliest and latest missed fire time, and how many there were (0: none).
    first_missed: datetime | None = None
    last_missed: datetime | None = None
    missed: int = 0
    #: True when counting stopped at MAX_COUNTED.
    at_least: bool = False
    #: The first fire time after now (None: none, or counting stopped before it).
    upcoming: datetime | None = None


def overdue(schedule: Schedule, since: datetime, last_fire: datetime | None, now: datetime,
            grace_sec: float) -> Overdue:
    """The fire times in (last fire or since, now], split into the one to run and the missed ones."""
    due: list[datetime] = []
    first: datetime | None = None
    upcoming: datetime | None = None
    count, at_least = 0, False
    for t in schedule.fires(since, last_fire):
        if t.timestamp() > now.timestamp():  # not `t > now`: one zone's times compare as wall clocks
            upcoming = t
            break
        count += 1
        first = first or t
        due = [*due[-1:], t]  # only the last two are needed
        if count >= MAX_COUNTED:
            at_least = True
            break
    if not count:
        return Overdue(None, upcoming=upcoming)
    latest = due[-1]
    if not at_least and now.timestamp() - latest.timestamp() <= grace_sec:
        if count == 1:
            return Overdue(latest, upcoming=upcoming)
        return Overdue(latest, first, due[-2], count - 1, upcoming=upcoming)
    return Overdue(None, first, latest, count, at_least, upcoming)
