"""Clock runs in the operator's toolkit (Q1-Q3): a run is a query-log row with trigger "clock", its tokens
count once in the day's counters, and a chat over its daily quota runs no task (it is told why)."""

from __future__ import annotations

from ania.fakes.openai_server import Calls, Reply
from services.usage.querylog import QueryFilter
from tests.clock_helpers import clock_settings, finished, fire_now, runs_until
from tests.subagent_helpers import Router, requests_of


async def test_a_clock_run_is_a_query_row_and_its_tokens_count_once_for_the_day(scripted_llm, make_chat):
    chat = await make_chat(clock_settings(scripted_llm))
    services = chat.engine.services
    await services.clock.start()
    scripted_llm.respond_with(Router()
        .on("remind me", Calls([("clock_create", {"schedule": "@every 2s", "prompt": "PROMPT-Q say hi"})]),
            Reply("Scheduled."))
        .on("PROMPT-Q", Calls([("time", {})]), Reply("hi from the clock")))
    assert await chat.say("f:u1", "u1", "remind me") == ["Scheduled."]
    before = services.quota.used("f:u1").session
    fire_now(services.clock, 1)
    [run] = [r for r in await runs_until(services.clock, "f:u1", finished) if r.status == "success"][:1]
    rows = [r for r in services.queries.rows(QueryFilter(session="f:u1")) if r["trigger"] == "clock"]
    row = next(r for r in rows if r["thread"] == run.thread)
    assert (row["status"], row["sender"], row["input"]) == ("success", "u1", "PROMPT-Q say hi")
    assert [(c["name"], c["status"]) for c in row["calls"]] == [("time", "ok")]
    spent = sum(r.usage["total_tokens"] for r in requests_of(scripted_llm, "PROMPT-Q")[:2])
    assert row["total_tokens"] == run.usage["total_tokens"] == spent
    assert services.quota.used("f:u1").session >= before + spent  # added for the day, by the run itself


async def test_a_chat_over_its_daily_quota_runs_no_task_and_is_told(scripted_llm, make_chat):
    chat = await make_chat(clock_settings(scripted_llm, quota={"session_daily_tokens": 1, "admins_exempt": False}))
    services = chat.engine.services
    await services.clock.start()
    scripted_llm.respond_with(Router()
        .on("remind me", Calls([("clock_create", {"schedule": "@every 2s", "prompt": "PROMPT-X never runs"})]),
            Reply("Scheduled."))
        .on("PROMPT-X", Reply("should not be asked")))
    # This turn spends the day's quota: its tool call runs, and the quota stops it before its next model call.
    [stopped] = await chat.say("f:u1", "u1", "remind me")
    assert stopped.startswith("This chat has used its daily token quota")
    fire_now(services.clock, 1)
    await runs_until(services.clock, "f:u1", lambda rs: finished(rs, "error"))
    fire_now(services.clock, 1)  # the next fire is refused too
    rows = await runs_until(services.clock, "f:u1", lambda rs: finished(rs, "error", n=2))
    failed = [r for r in rows if r.status == "error"]
    assert all(r.detail.startswith("not run: ") and "quota" in r.detail for r in failed)  # every refusal logged
    assert requests_of(scripted_llm, "PROMPT-X") == []  # no model call for the task
    assert sum("quota" in line for line in chat.out["f:u1"]) == 2  # the turn's stop; the task's notice once
    refused = [r for r in services.queries.rows(QueryFilter(session="f:u1")) if r["trigger"] == "clock"]
    assert len(refused) >= 2 and {r["status"] for r in refused} == {"quota"}  # each refusal is a query row
