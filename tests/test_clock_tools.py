"""The clock tools and `/clock` (C2, C6, R2): bad input gets a clear error and changes nothing, a chat manages only
its own tasks, admins list all (and manage any with `/clock`), limits hold."""

from __future__ import annotations

import re

from ania.fakes.openai_server import Reply, Stall
from core.registry import ToolCall
from core.settings import Settings
from services.clock import show
from services.clock.schedule import FORMS
from tests.clock_helpers import clock_settings, finished, runs_until
from tests.conftest import run_context
from tests.subagent_helpers import wait_for

CREATED = re.compile(r'Created task (\d+) "[^"]+": .+; next .+\nEach run\'s final reply is sent to this chat\.')


async def call(services, session, requester, tool, **args) -> str:
    ctx = run_context(services, session, requester)
    outcome = await services.sessions.executor(session).invoke(ToolCall("c1", tool, args), ctx)
    return outcome.text


async def test_bad_schedules_are_refused_with_the_accepted_forms_and_nothing_is_stored(make_services):
    services = await make_services()
    for schedule, problem in [("0 9 * * 1-5 *", "a cron line has 5 fields, this one has 6"),
                              ("@every 5 minutes", '"5 minutes" is not a duration'),
                              ("@every", '"" is not a duration'),
                              ("tomorrow", "a cron line has 5 fields, this one has 1")]:
        text = await call(services, "g:1", "u1", "clock_create", schedule=schedule, prompt="p")
        assert text == f"Error: {problem}. The {FORMS}", text
    text = await call(services, "g:1", "u1", "clock_create", schedule="@every 5s", prompt="p")
    assert text == ('Error: "@every 5s" runs every 5s at its closest; repeating tasks must be at least 1m apart '
                    "(clock.min_interval_sec)")
    text = await call(services, "g:1", "u1", "clock_create", schedule="2020-01-01T09:00", prompt="p")
    assert re.fullmatch(r"Error: 2020-01-01 09:00:00 Wed \(.+\) is in the past \(it is now .+\); give a future time", text)
    assert await call(services, "g:1", "u1", "clock_create", schedule="@daily", prompt="  ") == (
        "Error: the prompt is empty; say what the task should do each time it runs")
    assert await call(services, "g:1", "u1", "clock_create", schedule="@daily", prompt="x" * 4001) == (
        "Error: the prompt is 4001 characters long; at most 4000 are accepted")
    assert await call(services, "g:1", "u1", "clock_create", schedule="@daily", prompt="p", name="n" * 41) == (
        "Error: the name must be one line of at most 40 characters")
    assert await call(services, "g:1", "u1", "clock_list") == "No scheduled tasks in this chat; create one with clock_create."


async def test_the_21st_task_is_refused_and_other_chats_are_not_counted(make_services):
    services = await make_services()
    for i in range(20):
        assert CREATED.fullmatch(await call(services, "g:1", "u1", "clock_create", schedule="@daily", prompt=f"p{i}"))
    assert await call(services, "g:1", "u2", "clock_create", schedule="@daily", prompt="one more") == (
        "Error: this chat already has 20 tasks (clock.max_tasks_per_session is 20); delete one first")
    assert CREATED.fullmatch(await call(services, "g:2", "u1", "clock_create", schedule="@daily", prompt="elsewhere"))
    assert len(services.clock.views("g:1")) == 20


async def test_another_chats_task_cannot_be_changed_or_deleted_even_by_an_admins_model(make_services):
    services = await make_services(Settings(bot={"admins": ["admin"]}))
    created = await call(services, "g:1", "u1", "clock_create", schedule="0 9 * * 1-5", prompt="news", name="news")
    assert created.startswith('Created task 1 "news": 0 9 * * 1-5; next ')
    for session, who in (("g:2", "u2"), ("f:u2", "u2"), ("f:admin", "admin")):
        assert await call(services, session, who, "clock_update", task_id=1, prompt="hijacked") == (
            "Error: no task 1 in this chat (clock_list shows this chat's tasks; a chat manages only its own)")
        assert await call(services, session, who, "clock_delete", task_id=1) == (
            "Error: no task 1 in this chat (clock_list shows this chat's tasks; a chat manages only its own)")
        assert await call(services, session, who, "clock_log", task_id=1) == "No runs logged yet."
    [view] = services.clock.views("g:1")
    assert view.task is not None and view.task.prompt == "news"
    assert await call(services, "g:2", "u2", "clock_list", all_sessions=True) == (
        "Error: only an admin can list every chat's tasks")
    listed = await call(services, "f:admin", "admin", "clock_list", all_sessions=True)
    assert listed.startswith("Every chat's tasks (1):\n- 1 \"news\" in g:1: 0 9 * * 1-5; next ")


async def test_update_pause_resume_and_delete_in_the_own_chat(make_services):
    services = await make_services()
    await call(services, "f:u1", "u1", "clock_create", schedule="@hourly", prompt="p", name="h", timeout_sec=99999)
    assert await call(services, "f:u1", "u1", "clock_update", task_id=1) == (
        "Error: nothing to change: give a schedule, prompt, enabled or timeout_sec")
    bad = await call(services, "f:u1", "u1", "clock_update", task_id=1, schedule="@every 1s")
    assert bad.startswith('Error: "@every 1s" runs every 1s at its closest')
    paused = await call(services, "f:u1", "u1", "clock_update", task_id=1, enabled=False)
    assert paused == 'Updated task 1 "h": @hourly, timeout 1800 s, paused; next none while paused; prompt: p'
    resumed = await call(services, "f:u1", "u1", "clock_update", task_id=1, enabled=True, schedule="30 8 * * *",
                         timeout_sec=0)
    assert resumed.startswith('[timeout_sec 0 is outside 1..1800; 1 was used]\nUpdated task 1 "h": 30 8 * * *, '
                              "timeout 1 s; next ")
    assert await call(services, "f:u1", "u1", "clock_delete", task_id=1) == 'Deleted task 1 "h".'
    assert await call(services, "f:u1", "u1", "clock_delete", task_id=1) == (
        "Error: no task 1 in this chat (clock_list shows this chat's tasks; a chat manages only its own)")


async def test_timeout_is_clamped_and_said(make_services):
    services = await make_services()
    text = await call(services, "f:u1", "u1", "clock_create", schedule="@daily", prompt="p", timeout_sec=10**12)
    assert text.startswith(f"[timeout_sec {10**12} is outside 1..1800; 1800 was used]\nCreated task 1 ")
    assert services.clock.views("f:u1")[0].task.timeout_sec == 1800


async def test_clock_command_rights_and_bad_input(scripted_llm, make_chat):
    chat = await make_chat(clock_settings(scripted_llm))
    clock = chat.engine.services.clock
    clock.create("g:1", "u1", "@daily", "PROMPT-C", name="daily")
    assert await chat.say("g:1", "u2", "/clock") == ['- 1 "daily": @daily; next ' + _next_of(chat, 1) +
                                                     "; prompt: PROMPT-C"]
    assert await chat.say("g:2", "u3", "/clock list") == ["No scheduled tasks in this chat."]
    assert await chat.say("g:2", "u3", "/clock list all") == ["Only an admin can list every chat's tasks."]
    for verb in ("pause", "resume", "del", "run", "log"):
        reply = await chat.say("g:2", "u3", f"/clock {verb} 1")
        assert reply == (["No runs logged yet."] if verb == "log" else
                         ["No task 1 in this chat (clock_list shows this chat's tasks; a chat manages only its own)"])
    assert await chat.say("g:1", "u2", "/clock del x") == ["Give the task's id, e.g. /clock del 3 (/clock list shows "
                                                           "the ids)."]
    assert (await chat.say("g:1", "u2", "/clock frobnicate 1"))[0].startswith("Usage: /clock list [all] | ")
    paused = await chat.say("g:1", "u2", "/clock pause 1")  # a member manages the chat's own tasks
    assert paused == ['Paused task 1 "daily": @daily, paused; next none while paused; prompt: PROMPT-C']
    resumed = await chat.say("f:admin", "admin", "/clock resume 1")  # an admin manages any
    assert resumed[0].startswith('Resumed task 1 "daily": @daily; next ')
    listed = await chat.say("f:admin", "admin", "/clock list all")
    assert listed[0].startswith('- 1 "daily" in g:1: @daily; next ')
    assert len(chat.out["g:1"]) == 4 and chat.out["g:1"][3] == paused[0]  # each reply went to its own chat


async def test_clock_run_now_busy_and_log(scripted_llm, make_chat):
    chat = await make_chat(clock_settings(scripted_llm))
    clock = chat.engine.services.clock
    clock.create("g:1", "u1", "@daily", "PROMPT-N", name="now")
    answers = iter([Stall(1.5, Reply("first run")), Reply("second run")])
    scripted_llm.respond_with(lambda body: next(answers, Reply("more")))
    [started] = await chat.say("g:1", "u2", "/clock run 1")
    assert re.fullmatch(r"Started task 1 now \(run [0-9a-f]{12}\); its reply goes to its chat\.", started)
    await wait_for(lambda: scripted_llm.requests, 10)
    busy = await chat.say("g:1", "u2", "/clock run 1")
    assert re.fullmatch(r"Task 1 is running now \(run [0-9a-f]{12}\); wait for it to finish", busy[0])
    await runs_until(clock, "g:1", finished)
    assert "first run" in chat.out["g:1"]
    [line] = await chat.say("g:1", "u2", "/clock log 1")
    assert re.match(r'- [0-9a-f]{12} task 1 "now": success, due .+, started \+\d+\.\d s, took \d+\.\d s, \d+ tokens; '
                    r"reply: first run$", line), line
    assert clock.views("g:1")[0].task is not None  # a manual run does not end a repeating task


def _next_of(chat, task_id: int) -> str:
    [view] = [v for v in chat.engine.services.clock.views() if v.id == task_id]
    return show(view.next_fire, view.schedule.tz)

