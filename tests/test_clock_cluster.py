"""The clock with two bots on one Postgres store (issue 25): each has its own data directory, one fires the
tasks (the clock's advisory lock, services/clock/lease.py) and the other stands by; tasks made, paused or
deleted on either reach the one firing; when it stops, or is killed, the other takes over; and every due
time of a repeating task is in the run log once, run or `missed`, across the hand-over."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import psycopg

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI, Stall
from services.clock import ClockRun
from services.store import AppStore
from services.store_pg import PostgresBackend
from tests.clock_helpers import clock_settings, finished, runs_until, task_row
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.subagent_helpers import Router, wait_for
from tests.terminal_helpers import env_for
from tests.test_clock_restart import Terminal

EVERY = 2.0
CREATE = Calls([("clock_create", {"schedule": "@every 2s", "name": "beat", "prompt": "PROMPT-BEAT"})])
MISSED_AT_START = re.compile(r"(\d+) run\(s\) due while the bot was down")


def due_times(rows: list[ClockRun]) -> list[float]:
    """Every due time the rows account for (a `missed` row of a start counts the ones it stands for), sorted;
    rounded to ms (the interval's times are computed in floats)."""
    times: list[float] = []
    for row in rows:
        counted = MISSED_AT_START.match(row.detail) if row.status == "missed" else None
        times += [round(row.scheduled + i * EVERY, 3) for i in range(int(counted[1]) if counted else 1)]
    return sorted(times)


def assert_each_due_time_once(rows: list[ClockRun]) -> None:
    times = due_times(rows)
    assert len(times) == len(set(times)), [(r.status, r.scheduled, r.detail) for r in rows]
    assert times == [round(times[0] + i * EVERY, 3) for i in range(len(times))], times  # none left out


async def test_two_bots_fire_each_due_time_once_and_a_task_made_on_either_fires_on_the_holder(
        scripted_llm: ScriptedOpenAI, make_chat, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    settings = clock_settings(scripted_llm, cluster={"postgres_url": pg_url})
    scripted_llm.respond_with(Router().on("every two seconds", CREATE, Reply("Scheduled."))
                              .on("PROMPT-BEAT", Reply("beat")))
    first = await make_chat(settings, data=tmp_path / "one")
    second = await make_chat(settings, data=tmp_path / "two")
    one, two = first.engine.services.clock, second.engine.services.clock
    await one.start()
    await two.start()
    assert one.firing and two.running and not two.firing

    # The tool on the bot that stands by: the task is a row; the holder picks it up and fires it.
    assert await second.say("f:u1", "u1", "every two seconds") == ["Scheduled."]
    rows = await runs_until(two, "f:u1", lambda rs: finished(rs, "success", 3), timeout=60)
    assert first.out["f:u1"].count("beat") >= 3 and "beat" not in second.out.get("f:u1", [])
    [listed] = await second.say("f:u1", "u1", "/clock list")
    assert listed.startswith('- 1 "beat": @every 2s; next ')

    # Paused on the bot that stands by: the holder drops the task's job (a probe that brings it forward is
    # refused once it has none; a fire it brings forward meanwhile finds the task paused and does nothing).
    [paused] = await second.say("f:u1", "u1", "/clock pause 1")
    assert paused.startswith("Paused task 1 ")
    await wait_for(lambda: not one.bring_forward(1), 30)
    [resumed] = await second.say("f:u1", "u1", "/clock resume 1")
    assert resumed.startswith("Resumed task 1 ")
    resumed_at = time.time()
    await runs_until(two, "f:u1", lambda rs: any(r.status == "success" and r.scheduled > resumed_at for r in rs),
                     timeout=60)

    # The holder stops: the other takes over and fires the task from where it was.
    await first.engine.close()
    await wait_for(lambda: two.firing, 60)
    rows = await runs_until(two, "f:u1", lambda rs: "beat" in second.out.get("f:u1", []), timeout=60)
    assert_each_due_time_once([r for r in rows if r.scheduled > resumed_at])  # a pause is not made up
    assert {r.status for r in rows} <= {"success", "missed", "interrupted", "running"}


def test_a_due_time_claimed_by_two_bots_at_once_runs_once(pg_url: str) -> None:  # noqa: F811
    """The race of a hand-over, made on purpose: two stores (two bots' pools) write the same due times at the
    same moment; each due time gets one row."""
    from services.clock.store import ClockStore

    stores = [AppStore(backend=PostgresBackend(pg_url)) for _ in range(2)]
    try:
        clocks = [ClockStore(s) for s in stores]
        task = clocks[0].add(task_row("f:u1", "@every 1s", "P", since=1000.0))
        dues = [1000.0 + i for i in range(1, 41)]
        won: list[list[bool]] = [[], []]
        start = threading.Barrier(2)

        def fire(i: int) -> None:
            start.wait()
            for due in dues:
                run = ClockRun(f"r{i}-{due:.0f}", task, "f:u1", "t", "running", due, started=due)
                if i == 0 or due % 2:
                    won[i].append(clocks[i].start_run(run, fired=True))
                else:  # the other bot logs some of them missed (too late, or its previous run still going)
                    won[i].append(clocks[i].add_missed([ClockRun(run.id, task, "f:u1", "t", "missed", due)], due))

        threads = [threading.Thread(target=fire, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [a + b for a, b in zip(won[0], won[1], strict=True)] == [1] * len(dues)
        with psycopg.connect(pg_url) as conn:
            scheduled = [r[0] for r in conn.execute("SELECT scheduled FROM clock_runs ORDER BY scheduled")]
            assert scheduled == dues
            assert conn.execute("SELECT last_fire FROM clock_tasks").fetchone() == (dues[-1],)
        # A due time at or before the last one accounted is refused: nothing is written.
        assert not clocks[1].start_run(ClockRun("late", task, "f:u1", "t", "running", dues[5]), fired=True)
        assert not clocks[1].add_missed([ClockRun("late2", task, "f:u1", "t", "missed", dues[-1])], dues[-1])
        assert len(clocks[1].runs(task_id=task, limit=100)) == len(dues)
    finally:
        for s in stores:
            s.close()


async def test_the_holder_killed_the_other_bot_takes_over_and_each_due_time_is_logged_once(
        scripted_llm: ScriptedOpenAI, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    """Two `ania chat` processes with their own data directories on one database; the one firing is killed
    with SIGKILL; the other fires the task from then on, and the run log has each due time once."""
    scripted_llm.respond_with(Router().on("every two seconds", CREATE, Reply("Scheduled."))
                              .on("hello", Reply("hi")).on("PROMPT-BEAT", Reply("beat")))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    envs = [env_for(scripted_llm, tmp_path / name, ANIA_CLOCK__MIN_INTERVAL_SEC="1",
                    ANIA_CLUSTER__POSTGRES_URL=pg_url) for name in ("a", "b")]
    holder = await Terminal.start(envs[0])
    await holder.say("hello")
    await holder.until(lambda lines: "hi" in lines, 60)  # up, its clock started (and the lock taken)
    other = await Terminal.start(envs[1])
    try:
        await other.say("every two seconds")  # made on the bot that stands by
        await other.until(lambda lines: "Scheduled." in lines, 60)
        await holder.until(lambda lines: lines.count("beat") >= 2, 60)
        assert "beat" not in other.lines
        holder.kill()
        await holder.proc.wait()
        await other.until(lambda lines: lines.count("beat") >= 2, 90)  # took over
    finally:
        if holder.proc.returncode is None:
            holder.kill()
        assert await other.close() == 0
    with psycopg.connect(pg_url) as conn:
        conn.row_factory = psycopg.rows.dict_row
        rows = [ClockRun.from_row(r) for r in conn.execute("SELECT * FROM clock_runs ORDER BY scheduled")]
    assert_each_due_time_once(rows)
    assert {r.status for r in rows} <= {"success", "missed", "interrupted"}
    # Each "beat" printed is a run's row: `success`, or `interrupted` when its bot was killed (or stopped) after
    # the reply went out and before the row was finished.
    assert sum(r.status in ("success", "interrupted") for r in rows) >= 4


async def test_a_holder_whose_connection_is_cut_stops_firing_and_one_bot_fires_on(
        scripted_llm: ScriptedOpenAI, make_chat, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    """The server ends the holder's lock connection (as a network cut would): the lock is free at once, the
    holder sees it at its next check and stops firing, and one of the two fires from then on; a due time the
    two might both have fired in between is logged once."""
    settings = clock_settings(scripted_llm, cluster={"postgres_url": pg_url})
    scripted_llm.respond_with(Router().on("PROMPT-BEAT", Reply("beat")))
    first = await make_chat(settings, data=tmp_path / "one")
    second = await make_chat(settings, data=tmp_path / "two")
    one, two = first.engine.services.clock, second.engine.services.clock
    await one.start()
    await two.start()
    one.create("f:u1", "u1", "@every 2s", "PROMPT-BEAT", name="beat")
    await runs_until(two, "f:u1", lambda rs: finished(rs, "success", 2), timeout=60)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        [(cut,)] = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND "
                                "granted AND database = (SELECT oid FROM pg_database "
                                "WHERE datname = current_database())").fetchall()
    assert cut
    cut_at = time.time()
    rows = await runs_until(two, "f:u1", lambda rs: one.firing != two.firing and any(
        r.status == "success" and r.scheduled > cut_at + 2 * EVERY for r in rs), timeout=60)
    assert_each_due_time_once(rows)
    with psycopg.connect(pg_url) as conn:  # the lock is held again, by the one bot that fires
        assert conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
                            "(SELECT oid FROM pg_database WHERE datname = current_database())").fetchone() == (1,)


async def test_the_bot_standing_by_sees_a_run_in_progress_on_the_holder_and_does_not_start_it_again(
        scripted_llm: ScriptedOpenAI, make_chat, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    settings = clock_settings(scripted_llm, cluster={"postgres_url": pg_url})
    scripted_llm.respond_with(Router().on("PROMPT-LONG", Stall(30, Reply("done"))))
    first = await make_chat(settings, data=tmp_path / "one")
    second = await make_chat(settings, data=tmp_path / "two")
    one, two = first.engine.services.clock, second.engine.services.clock
    await one.start()
    await two.start()
    two.create("f:u1", "u1", "in 1s", "PROMPT-LONG a long job", name="long")  # made on the bot standing by
    [row] = await runs_until(two, "f:u1", lambda rs: finished(rs, "running"), timeout=60)
    [listed] = await second.say("f:u1", "u1", "/clock list")
    assert f"running now (run {row.id})" in listed
    assert await second.say("f:u1", "u1", "/clock run 1") == [
        f"Task 1 is running now (run {row.id}); wait for it to finish"]
    await one.stop()  # the holder stops: its run is logged interrupted, the other bot then holds the clock
    await wait_for(lambda: two.firing, 60)
    [after] = two.log("f:u1")
    assert (after.id, after.status) == (row.id, "interrupted")
