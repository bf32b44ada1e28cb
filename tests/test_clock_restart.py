"""The clock across restarts and faults (C1, C4, R2): `ania chat` as a person runs it (a reminder arrives, /clock
lists and deletes, the task is still there after a restart), a bot killed during a run, a corrupt task row,
and fire times that passed while the bot was down."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import socket
import sqlite3
import sys
import time
from datetime import UTC, datetime

from ania.fakes.openai_server import Calls, Reply, Stall
from ania.platforms.onebot.serve import run_serve
from core.tool import NoParams, Tool
from tests.clock_helpers import clock_settings, finished, runs_until, task_row
from tests.onebot_fake import FakeOneBot
from tests.onebot_helpers import BOT, make_engine
from tests.subagent_helpers import Router, requests_of, wait_for
from tests.terminal_helpers import ROOT, env_for
from tests.test_subagents import SendFile

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class SendPicture(Tool[NoParams]):
    """Sends a 1x1 PNG through the run's bridge, as send_image does."""

    name = "send_picture"
    description = "Send a picture to the chat."
    params = NoParams

    async def execute(self, args: NoParams, ctx) -> str:
        return await ctx.bridge.send_image(PNG)


NEXT = r"Its next run is \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w{3} \([\w/]+\)\."


class Terminal:
    """`ania chat` in a subprocess with its stdin kept open (it keeps running while it waits for input)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, env: dict[str, str]) -> Terminal:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ania.cli", "chat", env=env, cwd=ROOT, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line.decode().rstrip("\n"))

    async def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()

    async def until(self, cond, timeout: float = 30.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while not cond(self.lines):
            if self.proc.returncode is not None or time.monotonic() > deadline:
                err = (await self.proc.stderr.read()).decode() if self.proc.returncode is not None else ""
                raise AssertionError(f"not seen in time: {self.lines}\n{err}")
            await asyncio.sleep(0.05)
        return self.lines

    async def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), 30)
        await self._reader
        return code

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)


async def test_a_person_sees_the_reminder_lists_and_deletes_and_finds_the_task_after_a_restart(scripted_llm, tmp_path):
    env = env_for(scripted_llm, tmp_path, ANIA_CLOCK__MIN_INTERVAL_SEC="1")
    scripted_llm.respond_with(Router()
        .on("remind me in a second", Calls([("clock_create", {"schedule": "in 1s", "prompt": "PROMPT-ONCE water"})]),
            Reply("OK, I will remind you."))
        .on("remind me every 2 seconds", Calls([("clock_create", {"schedule": "@every 2s", "name": "stand",
                                                                  "prompt": "PROMPT-EVERY stand up"})]),
            Reply("Every 2 seconds, then."))
        .on("PROMPT-ONCE", Reply("Drink water!"))
        .on("PROMPT-EVERY", Reply("Stand up!")))
    term = await Terminal.start(env)
    await term.say("remind me in a second")
    await term.until(lambda lines: "Drink water!" in lines)
    assert term.lines[:2] == ["OK, I will remind you.", "Drink water!"]
    await term.say("remind me every 2 seconds")
    await term.until(lambda lines: "Stand up!" in lines)
    await term.say("/clock list")
    await term.until(lambda lines: any(line.startswith('- 2 "stand"') for line in lines))
    [listed] = [line for line in term.lines if line.startswith("- ")]
    assert re.fullmatch(r'- 2 "stand": @every 2s; next .+; prompt: PROMPT-EVERY stand up', listed)  # task 1 ran once
    assert await term.close() == 0

    again = await Terminal.start(env)
    await again.say("/clock list")
    await again.until(lambda lines: any(line.startswith('- 2 "stand"') for line in lines))
    await again.until(lambda lines: "Stand up!" in lines)  # it fires in the new process too
    await again.say("/clock del 2")
    await again.until(lambda lines: 'Deleted task 2 "stand".' in lines)
    await again.say("/clock list")
    await again.until(lambda lines: "No scheduled tasks in this chat." in lines)
    assert await again.close() == 0


async def test_a_second_bot_on_the_same_data_directory_is_refused_and_the_first_goes_on(scripted_llm, tmp_path):
    """Two processes on one data directory would both fire every task, and the second would mark the
    first one's runs `interrupted`: the second is refused with one line, before it touches a row."""
    env = env_for(scripted_llm, tmp_path, ANIA_CLOCK__MIN_INTERVAL_SEC="1")
    scripted_llm.respond_with(Router()
        .on("every two seconds please", Calls([("clock_create", {"schedule": "@every 2s", "prompt": "PROMPT-W"})]),
            Reply("Done."))
        .on("PROMPT-W", Stall(10, Reply("tick"))))
    first = await Terminal.start(env)
    await first.say("every two seconds please")
    await wait_for(lambda: requests_of(scripted_llm, "PROMPT-W"), 30)  # a run is in progress
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        listen = f"127.0.0.1:{probe.getsockname()[1]}"
    for cmd in ("chat", "serve"):
        second = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ania.cli", cmd, env={**env, "ANIA_ONEBOT__LISTEN": listen}, cwd=ROOT,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(second.communicate(), 60)
        assert second.returncode == 2, (cmd, out, err)
        assert err.decode().strip().splitlines()[-1] == (
            f"ania: another Ania bot (process {first.proc.pid}) is running on the data directory "
            f"{tmp_path / 'data'} and fires its scheduled tasks; stop it first, or give this bot its own "
            "ANIA_DATA_DIR"), (cmd, err)
        assert b"Traceback" not in err
    with sqlite3.connect(tmp_path / "data" / "ania.db") as db:
        statuses = [row[0] for row in db.execute("SELECT status FROM clock_runs")]
    # The first bot's run is left alone: still running, or (on a loaded machine, where the two refused starts
    # outlast its 10 s) finished by the first bot itself; never marked interrupted by the second.
    assert "interrupted" not in statuses and ("running" in statuses or "success" in statuses)
    await first.until(lambda lines: "tick" in lines)  # ... and it goes on firing
    assert await first.close() == 0
    again = await Terminal.start(env)  # once the first has stopped, a bot starts there again
    await again.until(lambda lines: lines.count("tick") >= 1)
    assert await again.close() == 0


async def test_killed_during_a_run_the_row_becomes_interrupted_and_the_task_still_fires(scripted_llm, tmp_path,
                                                                                       make_chat):
    env = env_for(scripted_llm, tmp_path, ANIA_CLOCK__MIN_INTERVAL_SEC="1")
    scripted_llm.respond_with(Router()
        .on("every two seconds please", Calls([("clock_create", {"schedule": "@every 2s", "name": "beat",
                                                                 "prompt": "PROMPT-K"})]), Reply("Done."))
        .on("PROMPT-K", Stall(60)))
    term = await Terminal.start(env)
    await term.say("every two seconds please")
    await wait_for(lambda: requests_of(scripted_llm, "PROMPT-K"), 30)  # a run is in progress
    term.kill()  # a crash
    await term.proc.wait()
    scripted_llm.respond_with(Router().on("PROMPT-K", Reply("after the crash")))
    chat = await make_chat(clock_settings(scripted_llm), data=tmp_path / "data")
    clock = chat.engine.services.clock
    [before] = clock.log("f:local")
    assert before.status == "running"  # as the crash left it
    await clock.start()
    rows = await runs_until(clock, "f:local", finished)
    interrupted = next(r for r in rows if r.id == before.id)
    assert (interrupted.status, interrupted.detail) == ("interrupted", "the bot stopped or crashed during the run")
    out = chat.out["f:local"]
    assert re.fullmatch(r'Scheduled task 1 "beat" was interrupted: the bot stopped during its run \(due .+\)\. ' + NEXT,
                        out[0])
    assert "after the crash" in out
    [view] = clock.views("f:local")
    assert view.task is not None and view.next_fire is not None


async def test_a_corrupt_task_row_is_reported_and_the_others_still_load(scripted_llm, make_chat, caplog):
    chat = await make_chat(clock_settings(scripted_llm))
    clock = chat.engine.services.clock
    now = time.time()
    good = clock.db.add(task_row("f:u1", "@every 1s", "PROMPT-G", since=now, name="good"))
    bad_ids = [clock.db.add(task_row("f:u1", "@every 1s", f"PROMPT-B{i}", since=now)) for i in range(4)]
    with chat.engine.services.store.transaction() as db:
        db.write("UPDATE clock_tasks SET schedule = 'every so often' WHERE id = ?", [bad_ids[0]])
        db.write("UPDATE clock_tasks SET timezone = 'Mars/Olympus' WHERE id = ?", [bad_ids[1]])
        db.write("UPDATE clock_tasks SET enabled = 'maybe' WHERE id = ?", [bad_ids[2]])
        db.write("UPDATE clock_tasks SET session = 'x:1' WHERE id = ?", [bad_ids[3]])
    scripted_llm.respond_with(lambda body: Reply("the good one ran"))
    with caplog.at_level(logging.ERROR, logger="services.clock.service"):
        await clock.start()
    reported = [r.getMessage() for r in caplog.records if "cannot be loaded" in r.getMessage()]
    assert len(reported) == 4 and all("the other tasks are loaded" in m for m in reported)
    await runs_until(clock, "f:u1", finished)
    assert chat.out["f:u1"][0] == "the good one ran"
    assert {r.task_id for r in clock.log("f:u1", limit=100)} == {good}
    listed = await chat.say("f:admin", "admin", "/clock list all")
    lines = listed[0].splitlines()
    assert lines[0].startswith('- 1 "good" in f:u1: @every 1s; next ')
    for line, why in zip(lines[1:], ["ValueError", "unknown timezone 'Mars/Olympus'", "enabled is 'maybe'",
                                     "session 'x:1'"], strict=True):
        assert re.fullmatch(r"- \d+ in \S+: broken, not scheduled \(.*\); /clock del \d+ removes it", line), line
        assert why in line
    assert await chat.say("f:admin", "admin", f"/clock del {bad_ids[1]}") == [f"Deleted task {bad_ids[1]}."]
    assert await chat.say("f:u1", "u1", f"/clock pause {bad_ids[0]}") == [
        f"Task {bad_ids[0]} cannot be scheduled (ValueError: a cron line has 5 fields, this one has 3); delete it and "
        "create it again"]


async def test_fire_times_that_passed_while_down_run_once_or_are_logged_missed(scripted_llm, make_chat):
    chat = await make_chat(clock_settings(scripted_llm))
    clock = chat.engine.services.clock
    now = time.time()
    every = clock.db.add(task_row("f:u1", "@every 1m", "PROMPT-M", since=now - 605, name="every minute"))
    stale = clock.db.add(task_row("f:u1", _iso(now - 3600), "PROMPT-STALE", since=now - 7200, name="stale",
                                  run_once=1))
    recent = clock.db.add(task_row("f:u1", _iso(now - 60), "PROMPT-RECENT", since=now - 7200, name="recent",
                                   run_once=1))
    paused = clock.db.add(task_row("f:u1", "@every 1m", "PROMPT-P", since=now - 3600, name="paused", enabled=0))
    scripted_llm.respond_with(lambda body: Reply("made up"))
    await clock.start()
    rows = await runs_until(clock, "f:u1", lambda rs: finished(rs, "success", 2))
    by_task = {t: [r for r in rows if r.task_id == t] for t in (every, stale, recent, paused)}
    missed, ran = sorted(by_task[every], key=lambda r: r.status)
    assert (missed.status, ran.status) == ("missed", "success")
    assert abs(ran.scheduled - (now - 5)) < 1.5  # the latest due fire, within clock.misfire_grace_sec
    assert missed.detail.startswith("9 run(s) due while the bot was down, up to ")
    assert [r.status for r in by_task[stale]] == ["missed"] and [r.status for r in by_task[recent]] == ["success"]
    assert by_task[paused] == []
    notices = [line for line in chat.out["f:u1"] if line.startswith("Scheduled")]
    assert any(re.fullmatch(r'Scheduled task 1 "every minute" missed 9 runs while the bot was down \(due .+ to .+\); '
                            r"runs more than 300 s late are not made up \(clock.misfire_grace_sec\)\. " + NEXT, n)
               for n in notices), notices
    assert any(n.startswith('Scheduled task 2 "stale" missed 1 run while the bot was down (due ') and
               n.endswith("It will not run again.") for n in notices), notices
    assert sorted(v.id for v in clock.views("f:u1")) == [every, paused]  # one-time tasks are done


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat()


def write_config(tmp_path, llm) -> None:
    """Config files for /reboot (it reads them again): the scripted model, one admin, a 1 s minimum interval."""
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "ania.toml").write_text(
        f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "scripted-model"\napi_key = "k"\nmax_retries = 0\n'
        '[bot]\nadmins = ["admin"]\n[clock]\nmin_interval_sec = 1\n')


async def test_reboot_stops_the_old_clock_and_the_new_engine_fires_the_tasks(scripted_llm, make_chat, tmp_path):
    write_config(tmp_path, scripted_llm)
    scripted_llm.respond_with(Router()
        .on("remind me every 2 seconds", Calls([("clock_create", {"schedule": "@every 2s", "prompt": "PROMPT-T tick"})]),
            Reply("Scheduled."))
        .on("PROMPT-T", Reply("Tick!")))
    chat = await make_chat(None)
    old = chat.engine.services
    await old.clock.start()
    assert await chat.say("f:admin", "admin", "remind me every 2 seconds") == ["Scheduled."]
    await runs_until(old.clock, "f:admin", finished)
    rebooted = time.time()
    [reply] = await chat.say("f:admin", "admin", "/reboot")
    assert reply.startswith("Restarted with the settings in config/")
    new = chat.engine.services
    assert new is not old and not old.clock.running and new.clock.running  # the old scheduler fires no more
    rows = await runs_until(new.clock, "f:admin",
                            lambda rows: any(r.status == "success" and (r.started or 0) > rebooted for r in rows))
    assert all(r.status in ("success", "interrupted") for r in rows)  # nothing left `running`
    assert chat.out["f:admin"].count("Tick!") >= 2 and [v.id for v in new.clock.views("f:admin")] == [1]


async def test_a_run_cut_off_by_a_reboot_is_logged_interrupted_and_its_chat_is_told(scripted_llm, make_chat, tmp_path):
    write_config(tmp_path, scripted_llm)
    scripted_llm.respond_with(lambda body: Stall(30))
    chat = await make_chat(None)
    old = chat.engine.services
    await old.clock.start()
    old.clock.create("g:club", "u5", "in 1s", "PROMPT-S a long job", name="long job")
    await runs_until(old.clock, "g:club", lambda rows: finished(rows, "running"))
    [reply] = await chat.say("f:admin", "admin", "/reboot")
    assert reply.startswith("Restarted with the settings in config/")
    [row] = chat.engine.services.clock.log("g:club", 1, 10)
    assert (row.status, row.detail) == ("interrupted", "the bot stopped during the run")
    [told] = chat.out["g:club"]
    assert re.fullmatch(r'Scheduled task 1 "long job" was interrupted: the bot stopped during its run \(due .+\)\. '
                        r"It will not run again\.", told)


async def test_a_task_run_on_qq_sends_its_images_and_files_as_such(tmp_path, scripted_llm):
    """C5 on QQ: what a run's tools send goes out as an image message and a file upload, not as a path."""
    fake = FakeOneBot(self_id=BOT)
    engine = await make_engine(tmp_path, scripted_llm, fake, clock={"min_interval_sec": 1})
    engine.services.shared_tools.add([SendFile(), SendPicture()])
    stop = asyncio.Event()
    serving = asyncio.create_task(run_serve(engine, stop))
    try:
        await fake.wait_for(fake.connected.is_set)
        scripted_llm.respond_with(Router().on("PROMPT-MEDIA", Calls([("send_note_file", {"name": "n.txt"}),
                                                                    ("send_picture", {})]), Reply("Here you go.")))
        engine.services.clock.create("g:555", "42", "in 1s", "PROMPT-MEDIA the weekly chart")
        await fake.wait_for(lambda: "Here you go." in fake.texts("g:555"))
        assert fake.uploads == [{"action": "upload_group_file", "group_id": 555, "name": "n.txt",
                                 "file": "base64://aGVsbG8="}]
        images = [seg["data"]["file"] for s in fake.sent for seg in s["message"] if seg["type"] == "image"]
        assert images == [f"base64://{PNG}"]
        assert not any("saved" in t for t in fake.texts()) and not (tmp_path / "data" / "outbox").exists()
    finally:
        stop.set()
        await asyncio.wait_for(serving, 15)
        await fake.close()
        await engine.close()


async def test_ania_serve_fires_tasks_sends_their_reply_to_qq_and_stops_the_clock(tmp_path, scripted_llm):
    fake = FakeOneBot(self_id=BOT)
    engine = await make_engine(tmp_path, scripted_llm, fake, clock={"min_interval_sec": 1})
    stop = asyncio.Event()
    serving = asyncio.create_task(run_serve(engine, stop))
    try:
        await fake.wait_for(fake.connected.is_set)
        scripted_llm.respond_with(lambda body: Reply("Time to stretch!"))
        engine.services.clock.create("f:42", "42", "in 1s", "PROMPT-QQ stretch")
        await fake.wait_for(lambda: "Time to stretch!" in fake.texts("f:42"))
        assert engine.services.clock.running
        stop.set()
        await asyncio.wait_for(serving, 15)
        assert not engine.services.clock.running
    finally:
        stop.set()
        await fake.close()
        await engine.close()
