"""Scheduled tasks through the real loop and the real scheduler (C1-C7, G2, G4): the scripted model answers by
request content, the minimum interval is 1 s so tasks fire within the test. The first test waits for its fires in
real time; the others bring a task's next fire forward to now (ClockService.bring_forward) instead of waiting."""

from __future__ import annotations

import asyncio
import re

from ania.fakes.openai_server import Calls, Fail, Reply, Stall
from checkpoints.sessions import session_messages
from tests.clock_helpers import clock_settings, finished, fire_now, runs_until
from tests.subagent_helpers import Router, Sleepy, requests_of, text, tool_results, wait_for
from tests.test_subagents import SendFile

NEXT = r"Its next run is \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w{3} \([\w/]+\)\."


async def started_clock(make_chat, settings, **kw):
    chat = await make_chat(settings, **kw)
    await chat.engine.services.clock.start()
    return chat


async def test_a_task_made_in_the_chat_fires_delivers_only_its_reply_and_survives_a_restart(scripted_llm, make_chat,
                                                                                           tmp_path):
    settings = clock_settings(scripted_llm)
    chat = await started_clock(make_chat, settings)
    chat.engine.services.shared_tools.add([SendFile()])
    scripted_llm.respond_with(Router()
        .on("remind me every 2 seconds", Calls([("clock_create", {"schedule": "@every 2s", "name": "stretch",
                                                                  "prompt": "PROMPT-R remind them to stretch"})]),
            Reply("Scheduled."))
        .on("PROMPT-R", Calls([("time", {}), ("send_note_file", {"name": "n.txt"})], text="let me check the time"),
            Reply("Time to stretch!")))
    assert await chat.say("f:u1", "u1", "remind me every 2 seconds") == ["Scheduled."]
    [created] = tool_results(scripted_llm.requests[-1])
    assert re.fullmatch(r'Created task 1 "stretch": @every 2s; next \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \w{3} \([\w/]+\); '
                        r"prompt: PROMPT-R remind them to stretch\nEach run's final reply is sent to this chat\.", created)
    clock = chat.engine.services.clock
    rows = await runs_until(clock, "f:u1", finished)
    out = chat.out["f:u1"]
    assert "Time to stretch!" in out and "let me check the time" not in out  # intermediate text dropped
    assert any(line.startswith("[file saved: ") and line.endswith("n.txt]") for line in out)  # files go out
    row = next(r for r in rows if r.status == "success")
    assert (row.task_id, row.task_name, row.reply, row.delivered) == (1, "stretch", "Time to stretch!", True)
    assert [(c.name, c.args) for c in row.tool_calls] == [("time", "{}"), ("send_note_file", '{"name": "n.txt"}')]
    assert row.tool_call_count == 2 and row.thread == f"clock:1:{row.id}"
    assert row.started is not None and row.ended is not None and row.scheduled <= row.started <= row.ended
    first = requests_of(scripted_llm, "PROMPT-R")
    assert row.usage["requests"] == 2 and row.usage["total_tokens"] == sum(r.usage["total_tokens"] for r in first[:2])
    assert [m["role"] for m in first[0].messages] == ["system", "user"]  # a fresh one-shot agent, no history
    assert "remind me every 2 seconds" not in str(first[0].messages)
    offered = set(first[0].tool_names)
    assert {"subagent_run", "subagent_list", "subagent_cancel", "clock_list", "time"} <= offered
    assert "todo_write" not in offered
    stored = await session_messages(chat.engine.graph, row.thread)  # the run's own thread
    assert stored[0].content.startswith('You are running a scheduled task of this chat (task 1 "stretch"')
    assert stored[-1].content == "Time to stretch!"
    await chat.engine.close()

    again = await started_clock(make_chat, settings, data=tmp_path / "data")
    await wait_for(lambda: "Time to stretch!" in again.out.get("f:u1", []), 20)
    [view] = again.engine.services.clock.views("f:u1")
    assert view.task is not None and view.task.name == "stretch" and view.next_fire is not None


async def test_async_subagents_are_drained_and_every_result_reaches_the_synthesis(scripted_llm, make_chat):
    settings = clock_settings(scripted_llm, subagent={"parent_reserve_sec": 2, "min_budget_sec": 1})
    chat = await started_clock(make_chat, settings)
    stubborn = Stubborn()
    chat.engine.services.shared_tools.add([stubborn])
    scripted_llm.respond_with(Router()
        .on("<subagent_results>", Reply("SYNTHESIS: A and B"))
        .on("PROMPT-S", Calls([("subagent_run", {"task": "TASK-A"}), ("subagent_run", {"task": "TASK-B"}),
                               ("subagent_run", {"task": "TASK-STUBBORN"}), ("subagent_run", {"task": "TASK-LONG"})]),
            Calls([("subagent_list", {}), ("subagent_cancel", {"id": "s4"}), ("subagent_cancel", {"id": "s9"})]),
            Reply("interim words, never sent"))
        .on("TASK-A", Reply("answer A"))
        .on("TASK-B", Calls([("time", {})]), Reply("answer B"))
        .on("TASK-STUBBORN", Calls([("stubborn", {"label": "x"})]), Reply("too late"))
        .on("TASK-LONG", Stall(60)))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "in 60s", "PROMPT-S gather", name="gather", timeout_sec=8)
    fire_now(clock, view.id)
    rows = await runs_until(clock, "f:u1", finished)
    assert chat.out["f:u1"] == ["SYNTHESIS: A and B"]  # only the synthesized reply
    results = tool_results(requests_of(scripted_llm, "PROMPT-S")[2])
    started, listed = results[:4], results[4:]
    assert [line.split(" (budget")[0] for line in started] == [f"Started subagent s{i} in the background"
                                                               for i in range(1, 5)]
    budget = float(re.search(r"budget ([0-9.]+) s", started[0]).group(1))
    assert budget <= 8 - 2 - 2  # the run's time, less the reserve for the synthesis and the margin
    lines, cancelled, unknown = listed
    assert [line[:5] for line in lines.splitlines()] == ["- s1:", "- s2:", "- s3:", "- s4:"]
    assert cancelled == "Cancelled subagent s4."
    assert unknown == "Error: no subagent s9 in this run. Its subagents: s1, s2, s3, s4."
    [synthesis] = [r for r in scripted_llm.requests if text(r.messages[-1]).startswith("<subagent_results>")]
    fed = text(synthesis.messages[-1])
    assert fed.startswith("<subagent_results>\n[subagent s1 ok, ") and "task: TASK-A\nanswer A" in fed
    assert re.search(r"\[subagent s2 ok, [0-9.]+ s, 2 model calls, \d+ tokens\] task: TASK-B\nanswer B", fed)
    assert re.search(r"\[subagent s3 cancelled after [0-9.]+ s: still running when the run kept its last 2 s for "
                     r"the final answer\] task: TASK-STUBBORN\n\(no answer\)", fed)
    assert re.search(r"\[subagent s4 cancelled after [0-9.]+ s: cancelled with subagent_cancel\] task: TASK-LONG", fed)
    assert fed.endswith("(synthesis round 1 of at most 5).")
    assert stubborn.cancelled == 2  # ignored its own timeout, then the drain cancelled it
    [row] = [r for r in rows if r.status == "success"]
    answered = [r for r in scripted_llm.requests if r.usage]
    assert row.usage["requests"] == len(answered)  # the run's calls and its subagents', each once
    assert row.usage["total_tokens"] == sum(r.usage["total_tokens"] for r in answered)
    assert [c.name for c in row.tool_calls].count("subagent_run") == 4 and row.tool_call_count == 7
    assert clock.views("f:u1") == []  # a one-time task is gone after its run


async def test_a_model_error_tells_the_target_and_the_next_fire_still_happens(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm))
    answers = iter([Fail(500), Reply("recovered")])
    scripted_llm.respond_with(lambda body: next(answers, Reply("again")))
    clock = chat.engine.services.clock
    view = clock.create("g:7", "u1", "@every 1s", "PROMPT-E", name="news")
    fire_now(clock, view.id)
    rows = await runs_until(clock, "g:7", lambda rs: finished(rs, "error") and finished(rs, "success"))
    out = chat.out["g:7"]
    assert re.fullmatch(r'Scheduled task 1 "news" failed: the model endpoint failed \(HTTP 500\)\. ' + NEXT, out[0])
    assert out[1] == "recovered"
    error = next(r for r in rows if r.status == "error")
    assert error.detail == "the model endpoint failed (HTTP 500)" and not error.delivered


async def test_a_timeout_tells_the_target_which_task_and_the_next_fire_still_happens(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm, clock={"default_timeout_sec": 1}))
    answers = iter([Stall(30), Reply("in time")])
    scripted_llm.respond_with(lambda body: next(answers, Reply("again")))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "@every 2s", "PROMPT-T", name="slow one")
    fire_now(clock, view.id)
    await runs_until(clock, "f:u1", lambda rs: finished(rs, "timeout"))
    fire_now(clock, view.id)  # the next fire: still scheduled
    rows = await runs_until(clock, "f:u1", lambda rs: finished(rs, "timeout") and finished(rs, "success"))
    out = chat.out["f:u1"]
    assert re.fullmatch(r'Scheduled task 1 "slow one" timed out after 1 s \(clock.default_timeout_sec\) and was '
                        r"stopped\. " + NEXT, out[0])
    assert out[1] == "in time"
    timed_out = next(r for r in rows if r.status == "timeout")
    assert timed_out.detail == "timed out after 1 s" and timed_out.ended is not None


async def test_a_run_that_raises_is_logged_and_told_and_the_task_goes_on(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm))
    chat.detach()
    sends: list[str] = []

    async def flaky(session: str, line: str) -> bool:  # a platform whose first send raises
        sends.append(line)
        if len(sends) == 1:
            raise ConnectionError("platform down")
        return True

    chat.engine.services.outboxes.attach("flaky", flaky)
    scripted_llm.respond_with(lambda body: Reply("hello from the task"))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "@every 1s", "PROMPT-X", name="flaky")
    fire_now(clock, view.id)
    rows = await runs_until(clock, "f:u1", lambda rs: finished(rs, "error") and finished(rs, "success"))
    assert sends[0] == "hello from the task"  # the delivery that raised
    assert re.fullmatch(r'Scheduled task 1 "flaky" failed: an error in a step of the run \(ConnectionError\); it is '
                        r"in the log\. " + NEXT, sends[1])
    assert sends[2] == "hello from the task"
    error = next(r for r in rows if r.status == "error")
    assert error.detail == "an error in a step of the run (ConnectionError); it is in the log"


async def test_only_an_admin_approves_a_call_of_a_clock_run(scripted_llm, make_chat):
    settings = clock_settings(scripted_llm, approval={"tools": ["time"]})
    chat = await started_clock(make_chat, settings, approval_timeout_sec=10.0)
    scripted_llm.respond_with(Router().on("PROMPT-A", Calls([("time", {"timezone": "Asia/Shanghai"})]),
                                          Reply("approved and done")))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "in 60s", "PROMPT-A", name="asks")
    fire_now(clock, view.id)
    approvals = chat.engine.services.approvals
    await wait_for(lambda: approvals.is_waiting("f:admin"), 15)  # nobody in f:u1 may decide: an admin is asked
    assert chat.out["f:admin"][-1].startswith('[clock task 1] Tool "time" wants to run with {"timezone": "Asia/Shanghai"}')
    assert 'An admin must approve "time" here; I asked one' in chat.out["f:u1"][-1]
    assert await chat.say("f:u1", "u1", "allow") == [  # the task's creator is not its requester: nobody is
        "You cannot answer this approval: only the person who asked or an admin can decide."]
    assert (await chat.say("f:admin", "admin", "allow"))[0].startswith('Allowed: "time"')
    await runs_until(clock, "f:u1", finished)
    assert chat.out["f:u1"][-1] == "approved and done"
    assert "+0800" in tool_results(requests_of(scripted_llm, "PROMPT-A")[-1])[0]


async def test_a_task_an_admin_made_needs_a_second_admin_for_a_configuration_change(scripted_llm, make_chat):
    """The task's creator is its author: like a requester, they cannot approve its config_set (G3)."""
    settings = clock_settings(scripted_llm, bot={"admins": ["admin", "admin2"]})
    chat = await started_clock(make_chat, settings, approval_timeout_sec=10.0)
    scripted_llm.respond_with(Router().on("PROMPT-CFG", Calls([("config_set", {"key": "agent.max_rounds",
                                                                               "value": "7"})]), Reply("set")))
    clock = chat.engine.services.clock
    view = clock.create("f:admin", "admin", "in 60s", "PROMPT-CFG", name="cfg")
    fire_now(clock, view.id)
    approvals = chat.engine.services.approvals
    await wait_for(lambda: approvals.is_waiting("f:admin2"), 15)  # asked of the other admin
    assert await chat.say("f:admin", "admin", "allow") == [
        "You cannot answer this approval: the requester cannot approve their own configuration change."]
    assert (await chat.say("f:admin2", "admin2", "allow"))[0].startswith('Allowed: "config_set"')
    [row] = await runs_until(clock, "f:admin", finished)
    assert row.reply == "set"
    assert tool_results(requests_of(scripted_llm, "PROMPT-CFG")[-1])[0].startswith("Set agent.max_rounds = 7")


async def test_nor_through_an_async_subagent_of_the_task(scripted_llm, make_chat):
    settings = clock_settings(scripted_llm, bot={"admins": ["admin", "admin2"]}, subagent={"min_budget_sec": 1})
    chat = await started_clock(make_chat, settings, approval_timeout_sec=10.0)
    scripted_llm.respond_with(Router()
        .on("<subagent_results>", Reply("reported"))
        .on("PROMPT-SUB", Calls([("subagent_run", {"task": "TASK-CFG set it"})]), Reply("waiting"))
        .on("TASK-CFG", Calls([("config_set", {"key": "agent.max_rounds", "value": "7"})]), Reply("sub done")))
    clock = chat.engine.services.clock
    view = clock.create("f:admin", "admin", "in 60s", "PROMPT-SUB", name="cfg", timeout_sec=60)
    fire_now(clock, view.id)
    approvals = chat.engine.services.approvals
    await wait_for(lambda: approvals.is_waiting("f:admin2"), 15)
    assert await chat.say("f:admin", "admin", "allow") == [
        "You cannot answer this approval: the requester cannot approve their own configuration change."]
    assert (await chat.say("f:admin2", "admin2", "allow"))[0].startswith('Allowed: "config_set"')
    [row] = await runs_until(clock, "f:admin", finished)
    assert row.reply == "reported"


async def test_plan_mode_blocks_create_update_and_delete(scripted_llm, make_chat):
    chat = await make_chat(clock_settings(scripted_llm))
    clock = chat.engine.services.clock
    clock.create("f:admin", "admin", "@daily", "PROMPT-P", name="kept")
    assert await chat.say("f:admin", "admin", "/plan on") == ["Plan mode is on."]
    scripted_llm.respond_with(Router().on("plan it", Calls([
        ("clock_create", {"schedule": "@hourly", "prompt": "x"}), ("clock_update", {"task_id": 1, "enabled": False}),
        ("clock_delete", {"task_id": 1}), ("clock_list", {}), ("clock_log", {})]), Reply("planned")))
    await chat.say("f:admin", "admin", "plan it")
    results = tool_results(scripted_llm.requests[-1])
    for name, result in zip(["clock_create", "clock_update", "clock_delete"], results, strict=False):
        assert result.startswith(f'Blocked: plan mode is on, and "{name}" has side effects'), result
    assert results[3].startswith('This chat\'s tasks (1):\n- 1 "kept": @daily; next ')
    assert results[4] == "No runs logged yet."
    [view] = clock.views("f:admin")
    assert view.task is not None and view.task.enabled


class Stubborn(Sleepy):
    """A tool that ignores the first cancellation (its run's own timeout) and goes on: a straggler."""

    name = "stubborn"
    description = "Works for a long time and does not stop when asked once."

    def __init__(self) -> None:
        super().__init__(seconds=30)
        self.cancelled = 0

    async def execute(self, args, ctx) -> str:
        for _ in range(2):
            try:
                await asyncio.sleep(self.seconds)
            except asyncio.CancelledError:
                self.cancelled += 1
                if self.cancelled >= 2:
                    raise
        return "finally"


async def test_a_run_has_no_requester_so_no_admin_rights_whoever_made_the_task(scripted_llm, make_chat):
    """A member cannot borrow rights through a task, and a task an admin made does not act as that admin."""
    chat = await started_clock(make_chat, clock_settings(scripted_llm))
    scripted_llm.respond_with(Router().on("PROMPT-RIGHTS", Calls([
        ("clock_list", {"all_sessions": True}),
        ("team_save", {"name": "t", "purpose": "p", "members": [{"name": "a", "role": "r"}], "scope": "global"})]),
        Reply("tried")))
    clock = chat.engine.services.clock
    member = clock.create("g:1", "member", "in 60s", "PROMPT-RIGHTS by a member")
    fire_now(clock, member.id)
    admin = clock.create("f:admin", "admin", "in 60s", "PROMPT-RIGHTS by an admin")
    fire_now(clock, admin.id)
    await runs_until(clock, "g:1", finished)
    await runs_until(clock, "f:admin", finished)
    seconds = [r for r in requests_of(scripted_llm, "PROMPT-RIGHTS") if tool_results(r)]
    assert len(seconds) == 2
    for request in seconds:
        assert tool_results(request) == ["Error: only an admin can list every chat's tasks",
                                         "Error: only an admin can save a global team"]
    assert chat.engine.services.teams.in_scope("global") == []


async def test_a_reply_no_platform_takes_is_logged_as_not_delivered(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm))
    chat.detach()  # no platform owns any chat now
    scripted_llm.respond_with(lambda body: Reply("into the void"))
    clock = chat.engine.services.clock
    view = clock.create("g:9", "u1", "in 60s", "PROMPT-V")
    fire_now(clock, view.id)
    [row] = await runs_until(clock, "g:9", finished)
    assert (row.reply, row.delivered, row.detail) == ("into the void", False,
                                                      "not delivered: no platform took the message for g:9")


async def test_synthesis_stops_after_five_rounds(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm, subagent={"min_budget_sec": 1}))
    scripted_llm.respond_with(Router()
        .on("<subagent_results>", Calls([("time", {})]))  # never answers
        .on("PROMPT-L", Calls([("subagent_run", {"task": "TASK-Q"})]), Reply("wait for it"))
        .on("TASK-Q", Reply("q")))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "in 60s", "PROMPT-L", name="loop", timeout_sec=60)
    fire_now(clock, view.id)
    [row] = await runs_until(clock, "f:u1", lambda rs: finished(rs, "error"))
    after_the_drain = [r for r in scripted_llm.requests if "<subagent_results>" in str(r.messages)]
    assert len(after_the_drain) == 5  # five synthesis rounds, each calling a tool instead of answering
    assert row.detail == "it used its 5 synthesis rounds without a final answer"
    assert chat.out["f:u1"] == ['Scheduled task 1 "loop" failed: it used its 5 synthesis rounds without a final '
                                "answer. It will not run again."]


async def test_run_once_deletes_a_repeating_task_after_its_first_run(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm))
    scripted_llm.respond_with(lambda body: Reply("only once"))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "@every 2s", "PROMPT-1", name="once", run_once=True)
    fire_now(clock, view.id)
    await runs_until(clock, "f:u1", finished)
    assert clock.views("f:u1") == []  # deleted with its first run, so it never fires again:
    assert not clock.bring_forward(view.id)  # the scheduler holds no next fire of it
    rows = clock.log("f:u1", view.id, 50)
    assert [r.status for r in rows] == ["success"] and chat.out["f:u1"] == ["only once"]


async def test_the_log_keeps_the_first_20_tool_calls_and_the_total(scripted_llm, make_chat):
    chat = await started_clock(make_chat, clock_settings(scripted_llm))
    scripted_llm.respond_with(Router()
        .on("PROMPT-MANY", Calls([("time", {"n": i}) for i in range(25)]), Reply("done")))
    clock = chat.engine.services.clock
    view = clock.create("f:u1", "u1", "in 60s", "PROMPT-MANY")
    fire_now(clock, view.id)
    [row] = await runs_until(clock, "f:u1", finished)
    assert row.tool_call_count == 25 and len(row.tool_calls) == 20
    assert [c.args for c in row.tool_calls] == [f'{{"n": {i}}}' for i in range(20)]


async def test_stop_in_the_chat_stops_a_task_run_its_creator_or_an_admin_may_stop(scripted_llm, make_chat):
    """/stop reaches a scheduled task's run in progress (it used to run until its timeout): another member
    cannot stop it, its creator can; the row says who stopped it and a repeating task fires again."""
    chat = await started_clock(make_chat, clock_settings(scripted_llm, bot={"admins": ["boss"]}))
    clock = chat.engine.services.clock
    stalls = iter([Stall(60), Stall(60)])
    scripted_llm.respond_with(Router()
        .on("PROMPT-LONG", lambda body: next(stalls, Reply("quick this time")))
        .on("PROMPT-ONCE", Stall(60)))
    report = clock.create("g:club", "u1", "@every 2s", "PROMPT-LONG a long report", name="report")
    fire_now(clock, report.id)
    await runs_until(clock, "g:club", lambda rows: finished(rows, "running"))
    assert await chat.say("g:club", "u2", "/stop") == [
        "Only an admin or the person who created the task can stop a scheduled task's run."]
    assert await chat.say("g:club", "u1", "/stop") == ["Stopped 1 scheduled task run(s) in progress."]
    rows = await runs_until(clock, "g:club", lambda rows: finished(rows, "interrupted"))
    assert [(r.status, r.detail) for r in rows if r.status == "interrupted"] == [
        ("interrupted", "stopped with /stop by u1")]
    fire_now(clock, report.id)
    await runs_until(clock, "g:club", lambda rows: finished(rows, "running"))  # the next fire
    assert await chat.say("g:club", "boss", "/stop") == ["Stopped 1 scheduled task run(s) in progress."]
    fire_now(clock, report.id)
    await runs_until(clock, "g:club", lambda rows: finished(rows, "success"))  # and it goes on firing
    assert [v.id for v in clock.views("g:club")] == [1]
    once = clock.create("f:u3", "u3", "in 60s", "PROMPT-ONCE once", name="once")
    fire_now(clock, once.id)
    await runs_until(clock, "f:u3", lambda rows: finished(rows, "running"))
    assert await chat.say("f:u3", "u3", "/stop") == ["Stopped 1 scheduled task run(s) in progress."]
    [row] = clock.log("f:u3")
    assert (row.status, row.detail) == ("interrupted", "stopped with /stop by u3")
    assert clock.views("f:u3") == []  # a one-time task stopped on purpose is done
    assert await chat.say("f:u3", "u3", "/stop") == ["Nothing to stop."]
