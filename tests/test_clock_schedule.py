"""Schedules (C2) and start-up misfires (C4), as parts: forms, bad input, crontab weekdays and the day-or-weekday
rule against croniter (an independent crontab implementation), next fire times against APScheduler's own
CronTrigger across DST changes, and what is made up or logged missed after a downtime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.cron import CronTrigger
from croniter import croniter

from core.errors import ToolError
from services.clock.misfire import MAX_COUNTED, overdue
from services.clock.schedule import FORMS, crontab_weekdays, human_seconds, parse, parse_duration, parse_for_task

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
SHANGHAI = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 5, 4, 8, 0, tzinfo=SHANGHAI)  # a Monday


@pytest.mark.parametrize("text, kind, stored", [
    ("0 9 * * 1-5", "cron", "0 9 * * 1-5"),
    ("  0   9 * *   MON-FRI ", "cron", "0 9 * * MON-FRI"),
    ("@every 30m", "every", "@every 30m"),
    ("@EVERY 1h30m", "every", "@every 1h30m"),
    ("@every 90s", "every", "@every 1m30s"),
    ("@every 1.5h", "every", "@every 1h30m"),
    ("@hourly", "cron", "@hourly"), ("@daily", "cron", "@daily"), ("@midnight", "cron", "@midnight"),
    ("@weekly", "cron", "@weekly"), ("@monthly", "cron", "@monthly"), ("@yearly", "cron", "@yearly"),
    ("2026-05-10T09:00", "once", "2026-05-10T09:00:00+08:00"),
    ("2026-05-10 09:00:00+02:00", "once", "2026-05-10T09:00:00+02:00"),
    ("in 20m", "once", "2026-05-04T08:20:00+08:00"),
])
def test_the_accepted_forms(text, kind, stored):
    schedule = parse(text, SHANGHAI, T0)
    assert (schedule.kind, schedule.text) == (kind, stored)
    assert parse(schedule.text, SHANGHAI, T0).text == stored  # what is stored parses to itself


@pytest.mark.parametrize("text, seconds", [("30m", 1800), ("1h30m", 5400), ("1.5h", 5400), ("90s", 90),
                                           ("500ms", 0.5), ("1d", 86400), ("2h0m5s", 7205)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds
    assert parse_duration(human_seconds(seconds)) == seconds


@pytest.mark.parametrize("text", ["", "5", "m5", "1x", "-5m", "0s", "5m 3", "1h-2m"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text, problem", [
    ("61 * * * *", "Error validating expression '61'"),
    ("0 9 * *", "a cron line has 5 fields, this one has 4"),
    ("0 9 * * 8", '"8" is not a weekday'),
    ("0 9 * * 5-1", '"5-1" runs backwards'),
    ("0 9 * * fri-mon", '"fri-mon" runs backwards'),
    ("@sometimes", '"@sometimes" is not a known @ form'),
    ("@every 5", '"5" is not a duration'),
    ("@every soon", '"soon" is not a duration'),
    ("every day at nine", "a cron line has 5 fields, this one has 4"),
    ("2026-13-40T09:00", '"2026-13-40T09:00" is not a valid ISO datetime'),
    ("in forever", '"forever" is not a duration'),
    ("", "the schedule is empty"),
])
def test_bad_schedules_name_the_problem_and_list_the_forms(text, problem):
    with pytest.raises(ToolError) as e:
        parse_for_task(text, SHANGHAI, T0, 60)
    assert problem in str(e.value)
    assert str(e.value).endswith(". The " + FORMS)


def test_a_repeating_schedule_under_the_minimum_is_refused():
    with pytest.raises(ToolError) as e:
        parse_for_task("@every 5s", SHANGHAI, T0, 60)
    assert str(e.value) == ('"@every 5s" runs every 5s at its closest; repeating tasks must be at least 1m apart '
                            "(clock.min_interval_sec)")
    with pytest.raises(ToolError, match=r'"\*/2 \* \* \* \*" runs every 2m at its closest; .* at least 5m apart'):
        parse_for_task("*/2 * * * *", SHANGHAI, T0, 300)
    assert parse_for_task("@every 60s", SHANGHAI, T0, 60).text == "@every 1m"
    assert parse_for_task("in 5s", SHANGHAI, T0, 60).kind == "once"  # the minimum is for repeating tasks


def test_a_past_time_is_refused():
    with pytest.raises(ToolError) as e:
        parse_for_task("2026-05-04T07:59", SHANGHAI, T0, 60)
    assert str(e.value) == ("2026-05-04 07:59:00 Mon (Asia/Shanghai) is in the past (it is now 2026-05-04 08:00:00 "
                            "Mon (Asia/Shanghai)); give a future time")
    with pytest.raises(ToolError, match="is in the past"):
        parse_for_task("2026-05-04T08:00:00+08:00", SHANGHAI, T0, 60)  # now is not the future either


@pytest.mark.parametrize("field, names", [
    ("*", "*"), ("1-5", "mon,tue,wed,thu,fri"), ("0", "sun"), ("7", "sun"), ("0,7", "sun"), ("5-7", "fri,sat,sun"),
    ("*/2", "tue,thu,sat,sun"), ("1-5/2", "mon,wed,fri"), ("sun", "sun"), ("fri-sun", "fri,sat,sun"),
    ("MON,wed", "mon,wed"), ("0-6", "mon,tue,wed,thu,fri,sat,sun"), ("3/2", "wed,fri"),
])
def test_crontab_weekdays_become_apscheduler_names(field, names):
    assert crontab_weekdays(field) == names


@pytest.mark.parametrize("line", [
    "0 9 * * 1-5", "0 9 * * 0", "0 9 * * 7", "30 8 * * sun", "0 12 * * fri-sun", "0 0 * * */2", "5 4 * * 1-5/2",
    "0 9 1 * 1",  # crontab: the 1st of the month OR a Monday
    "15 10 13 * 5",  # the 13th OR a Friday
    "0 0 29 2 *", "*/15 * * * *", "0 22 * 1-3 mon", "@weekly", "@monthly",
])
def test_fire_times_match_crontab_semantics(line):
    """croniter is an independent crontab implementation (0 = Sunday, day-of-month OR weekday)."""
    start = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    ours = [t.timestamp() for t in _take(parse(line, ZoneInfo("UTC"), start).fires(start), 40)]
    expr = {"@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *"}.get(line, line)
    it = croniter(expr, start - timedelta(seconds=1))
    theirs = [it.get_next(datetime).timestamp() for _ in range(40)]
    assert ours == theirs


@pytest.mark.parametrize("tz, start", [
    (BERLIN, datetime(2026, 3, 27, 12, 0)),  # clocks go forward 2026-03-29 02:00 → 03:00
    (BERLIN, datetime(2026, 10, 23, 12, 0)),  # clocks go back 2026-10-25 03:00 → 02:00
    (NEW_YORK, datetime(2026, 3, 6, 12, 0)),  # forward 2026-03-08
    (NEW_YORK, datetime(2026, 10, 30, 12, 0)),  # back 2026-11-01
])
@pytest.mark.parametrize("line, fields", [
    ("30 2 * * *", {"minute": "30", "hour": "2"}),
    ("0 * * * *", {"minute": "0"}),
    ("*/20 1-3 * * *", {"minute": "*/20", "hour": "1-3"}),
    ("0 9 * * 1-5", {"minute": "0", "hour": "9", "day_of_week": "mon-fri"}),
    ("45 1 * * 0", {"minute": "45", "hour": "1", "day_of_week": "sun"}),
])
def test_next_fire_times_match_apschedulers_cron_trigger_across_dst(tz, start, line, fields):
    since = start.replace(tzinfo=tz)
    ours = _take(parse(line, tz, since).fires(since), 60)
    trigger = CronTrigger(timezone=tz, **fields)
    theirs, prev = [], None
    while len(theirs) < 60:
        prev = trigger.get_next_fire_time(prev, since if prev is None else _utc_later(prev, tz))
        theirs.append(prev)
    assert [(t.timestamp(), t.utcoffset()) for t in ours] == [(t.timestamp(), t.utcoffset()) for t in theirs]
    assert all(a.timestamp() < b.timestamp() for a, b in pairwise(ours))  # never back, never stuck


def test_what_a_dst_change_does_to_a_night_time():
    """APScheduler's behaviour, which the clock keeps: a wall time that does not exist runs an hour later in wall
    time (the same instant as the hour before the jump), and one that repeats runs at both instants."""
    forward = [t.astimezone(UTC) for t in _take(parse("30 2 * * *", BERLIN, datetime(2026, 3, 28, 12, tzinfo=BERLIN))
                                                .fires(datetime(2026, 3, 28, 12, tzinfo=BERLIN)), 3)]
    assert [f"{t:%m-%d %H:%M}" for t in forward] == ["03-29 01:30", "03-30 00:30", "03-31 00:30"]
    back = [t.astimezone(UTC) for t in _take(parse("30 2 * * *", BERLIN, datetime(2026, 10, 24, 12, tzinfo=BERLIN))
                                             .fires(datetime(2026, 10, 24, 12, tzinfo=BERLIN)), 3)]
    assert [f"{t:%m-%d %H:%M}" for t in back] == ["10-25 00:30", "10-25 01:30", "10-26 01:30"]


def test_every_keeps_real_seconds_across_dst():
    since = datetime(2026, 10, 24, 23, 0, tzinfo=BERLIN)
    times = _take(parse("@every 45m", BERLIN, since).fires(since), 10)
    assert {b.timestamp() - a.timestamp() for a, b in pairwise(times)} == {2700.0}
    assert times[0].timestamp() == since.timestamp() + 2700


def test_a_one_time_schedule_fires_once():
    schedule = parse("2026-05-10T09:00", SHANGHAI, T0)
    assert [t.isoformat() for t in schedule.fires(T0)] == ["2026-05-10T09:00:00+08:00"]
    assert list(schedule.fires(T0, last=datetime(2026, 5, 10, 9, tzinfo=SHANGHAI))) == []


# --- start-up misfires ---------------------------------------------------------------------------------

def test_nothing_overdue():
    schedule = parse("@every 1m", SHANGHAI, T0)
    assert overdue(schedule, T0, None, T0 + timedelta(seconds=59), 300).run_at is None
    assert overdue(schedule, T0, None, T0 + timedelta(seconds=59), 300).missed == 0
    assert overdue(schedule, T0, None, T0 + timedelta(seconds=59), 300).upcoming == T0 + timedelta(minutes=1)


def test_the_latest_overdue_fire_runs_and_the_earlier_ones_are_missed():
    schedule = parse("@every 1m", SHANGHAI, T0)
    late = overdue(schedule, T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=10, seconds=30), 300)
    assert late.run_at == T0 + timedelta(minutes=10)
    assert (late.first_missed, late.last_missed, late.missed) == (T0 + timedelta(minutes=2),
                                                                   T0 + timedelta(minutes=9), 8)
    once = overdue(schedule, T0, None, T0 + timedelta(minutes=1, seconds=30), 300)
    assert (once.run_at, once.missed) == (T0 + timedelta(minutes=1), 0)


def test_too_late_is_missed_not_run():
    schedule = parse("0 9 * * *", SHANGHAI, T0)
    late = overdue(schedule, T0, None, T0 + timedelta(days=1, hours=2), 300)  # 09:00 on Monday and Tuesday passed
    assert late.run_at is None and late.missed == 2
    assert (late.first_missed.day, late.last_missed.day) == (4, 5)
    one_time = parse("2026-05-04T08:30", SHANGHAI, T0)
    assert overdue(one_time, T0, None, T0 + timedelta(minutes=33), 300).run_at == T0 + timedelta(minutes=30)
    gone = overdue(one_time, T0, None, T0 + timedelta(minutes=40), 300)
    assert gone.run_at is None and gone.missed == 1 and gone.upcoming is None  # nothing left to schedule


def test_counting_stops_at_a_bound():
    schedule = parse("@every 1s", SHANGHAI, T0)
    late = overdue(schedule, T0, None, T0 + timedelta(days=30), 300)
    assert late.at_least and late.missed == MAX_COUNTED and late.run_at is None


def _take(it, n):
    out = []
    for t in it:
        out.append(t)
        if len(out) == n:
            break
    return out


def _utc_later(t: datetime, tz: ZoneInfo) -> datetime:
    return (t.astimezone(UTC) + timedelta(seconds=1)).astimezone(tz)
