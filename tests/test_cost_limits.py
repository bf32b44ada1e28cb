"""Cost bombs (issue 22, item 3) tried from a QQ group through the real engine: one message asking for 40
subagents, the quota checked before every model call, and one fair limit on model calls in flight."""

from __future__ import annotations

import pytest

from ania.fakes.openai_server import Calls, Reply
from checkpoints.sessions import session_messages
from core.errors import ToolError
from services.teams import Member, Team
from services.usage import MessageLimits
from tests.clock_helpers import clock_settings, finished, runs_until
from tests.onebot_fake import at, text
from tests.onebot_helpers import ADMIN, BOT
from tests.subagent_helpers import Router, is_subagent, requests_of, tool_results

QUOTA = 3000
STOPPED = "[subagent stopped: daily token quota reached"
#: The results of calls over a cap (written out: the test runs against code without the caps too).
OVER_ROUND = "Error: Not run: at most 4 subagent_run and team_run calls run per round"
OVER_MESSAGE = "Error: Not run: this message has already started 5 subagents and team runs"


def flood(n: int, marker: str = "SUBTASK") -> Calls:
    return Calls([("subagent_run", {"task": f"{marker}-{i} look this up"}) for i in range(n)])


async def stored_results(b, session: str) -> list[str]:
    return [str(m.content) for m in await session_messages(b.engine.graph, session) if m.type == "tool"]


async def test_forty_subagent_calls_in_one_round_run_four_and_the_quota_stops_the_rest(bot):
    b = await bot(quota={"session_daily_tokens": QUOTA})
    b.llm.respond_with(Router().on("flood please", flood(40), Reply("all done"))
                       .on("SUBTASK-", Calls([("time", {})]), Reply("sub answer")))
    await b.fake.group_message(555, 42, [at(BOT), text(" flood please")])
    await b.fake.wait_for(lambda: any("daily token quota" in t for t in b.fake.texts("g:555")))
    services = b.engine.services
    await services.subagents.flush()
    results = await stored_results(b, "g:555")
    assert len(results) == 40
    # Which calls run is decided by their order in the model's message: the first four, the rest refused.
    assert all(r.startswith(STOPPED) for r in results[:4]), results[:4]
    assert all(r.startswith(OVER_ROUND) for r in results[4:]), results[4:6]
    assert "call 5 of this round" in results[4]
    # The first model request alone crossed the quota: each started subagent stopped before its first model
    # call, and the turn ended with the quota's reply instead of a second call.
    assert len(b.llm.requests) == 1 and not requests_of(b.llm, "SUBTASK-")
    [reply] = [t for t in b.fake.texts("g:555") if "daily token quota" in t]
    assert reply.startswith("This chat has used its daily token quota")
    # Spent: the one request, counted once (nothing left in flight, nothing counted twice).
    spent = sum(r.usage["total_tokens"] for r in b.llm.requests)
    assert services.quota.used("g:555").session == spent and services.quota.in_flight() == 0
    assert spent < QUOTA + max(r.usage["total_tokens"] for r in b.llm.requests)


async def test_the_quota_stops_a_message_between_its_subagents_model_calls(bot):
    """A quota the first request does not reach: the subagents' calls in flight finish, the next ones stop."""
    b = await bot(subagent={"max_calls_per_round": 40, "max_calls_per_message": 40},
                  llm={"max_concurrent_calls": 2})
    b.llm.respond_with(Router())
    await b.fake.group_message(555, 42, [at(BOT), text(" warm up")])  # measures one request of this chat
    await b.fake.wait_for(lambda: len(b.fake.texts("g:555")) == 1)
    first = b.llm.requests[0].usage["total_tokens"]
    b.llm.reset()
    services = b.engine.services
    quota = services.quota.used("g:555").session + int(first * 2.5)  # the flood's first call and about 1.5 more
    b.llm.respond_with(Router().on("flood please", flood(6), Reply("all done"))
                       .on("SUBTASK-", Calls([("time", {})], delay=0.3), Reply("sub answer", delay=0.3)))
    services.quota.settings = services.quota.settings.model_copy(update={"session_daily_tokens": quota})
    await b.fake.group_message(555, 42, [at(BOT), text(" flood please")])
    await b.fake.wait_for(lambda: any("daily token quota" in t for t in b.fake.texts("g:555")))
    calls = len(b.llm.requests)
    assert 2 <= calls < 1 + 6 * 2 + 1  # unbounded, the flood would make every call: 1 + 6 subagents x 2 + 1
    assert b.llm.peak_in_flight == services.limiter.limit  # two subagents' calls at a time
    results = await stored_results(b, "g:555")
    assert sum(r.startswith(STOPPED) for r in results) >= 1
    used = services.quota.used("g:555").session
    biggest = max(r.usage["total_tokens"] for r in b.llm.requests)
    assert used <= quota + services.limiter.limit * biggest  # the overshoot: at most the calls in flight
    assert services.quota.in_flight() == 0


async def test_the_cap_per_message_counts_every_round(bot):
    b = await bot(subagent={"max_calls_per_round": 3, "max_calls_per_message": 5})
    b.llm.respond_with(Router().on("two rounds", flood(3, "ROUND-A"), flood(3, "ROUND-B"), Reply("both rounds"))
                       .on("ROUND-", Reply("sub answer")))
    await b.fake.group_message(555, 42, [at(BOT), text(" two rounds")])
    await b.fake.wait_for(lambda: "both rounds" in b.fake.texts("g:555"))
    results = await stored_results(b, "g:555")
    assert [r.startswith("[subagent ok") for r in results] == [True] * 5 + [False]
    assert results[5].startswith(OVER_MESSAGE) and "(subagent.max_calls_per_message)" in results[5]
    assert len(requests_of(b.llm, "ROUND-")) == 5  # the refused call made no model call


async def test_a_second_chat_is_served_while_the_first_floods_and_the_limit_holds(bot):
    b = await bot(subagent={"max_calls_per_round": 12, "max_calls_per_message": 12},
                  llm={"max_concurrent_calls": 2})
    b.llm.respond_with(Router().on("flood please", flood(12), Reply("flood done"))
                       .on("SUBTASK-", Reply("sub answer", delay=0.5))  # long enough for a loaded machine
                       .on("just one question", Reply("answer for the second chat")))

    def flood_requests() -> list[int]:
        return [i for i, r in enumerate(b.llm.requests) if is_subagent(r.body)]

    await b.fake.group_message(555, 42, [at(BOT), text(" flood please")])
    await b.fake.wait_for(lambda: len(flood_requests()) >= 2)  # the flood has started: its other calls wait
    await b.fake.group_message(666, 77, [at(BOT), text(" just one question")])
    await b.fake.wait_for(lambda: "answer for the second chat" in b.fake.texts("g:666"))
    [second] = [i for i, r in enumerate(b.llm.requests) if "just one question" in str(r.messages)]
    # Served in turn with the flooding chat (round robin by chat), not behind the flood's queue of 10 calls.
    assert len([i for i in flood_requests() if i < second]) <= 4
    assert "flood done" not in b.fake.texts("g:555")
    await b.fake.wait_for(lambda: "flood done" in b.fake.texts("g:555"))
    assert len(flood_requests()) == 12
    limiter = b.engine.services.limiter
    assert b.llm.peak_in_flight == limiter.limit == 2  # reached, never passed
    assert limiter.in_flight == 0 and limiter.waiting() == 0


async def fan_out_task(scripted_llm, make_chat, prompt: str, subagents: int, marker: str, **settings):
    """A member's (42) clock task in g:555 whose run asks for `subagents` async subagent_run calls at once;
    returns the chat, its clock started."""
    chat = await make_chat(clock_settings(scripted_llm, subagent={"parent_reserve_sec": 2, "min_budget_sec": 1},
                                          **settings))
    clock = chat.engine.services.clock
    await clock.start()
    scripted_llm.respond_with(Router()
        .on("<subagent_results>", Reply("SYNTHESIS"))
        .on(prompt, flood(subagents, marker), Reply("interim, never sent"))
        .on(f"{marker}-", Reply("sub answer")))
    clock.create("g:555", "42", "in 1s", f"{prompt} fan out", name="fan", timeout_sec=20)
    return chat


async def test_a_clock_run_is_capped_too(scripted_llm, make_chat):
    """The async subagent_run of a clock run (tools/clock_subagents.py): the same caps, by the reply's order."""
    chat = await fan_out_task(scripted_llm, make_chat, "PROMPT-C", 12, "CLOCKSUB")
    await runs_until(chat.engine.services.clock, "g:555", finished)
    results = tool_results(requests_of(scripted_llm, "PROMPT-C")[1])
    assert [r.split(" (budget")[0] for r in results[:4]] == [f"Started subagent s{i} in the background"
                                                             for i in range(1, 5)]
    assert all(r.startswith(OVER_ROUND) for r in results[4:]) and len(results) == 12
    assert len(requests_of(scripted_llm, "CLOCKSUB-")) == 4


async def test_a_clock_run_and_its_subagents_stop_at_the_quota(scripted_llm, make_chat):
    chat = await fan_out_task(scripted_llm, make_chat, "PROMPT-Q", 4, "QSUB", quota={"session_daily_tokens": QUOTA})
    [row] = await runs_until(chat.engine.services.clock, "g:555", lambda rows: finished(rows, "error"))
    # The run's first request crossed the quota: its four subagents stopped before their first model call and
    # the synthesis was not asked; the run ended with the quota's words.
    assert len(scripted_llm.requests) == 1 and "daily token quota" in row.detail
    services = chat.engine.services
    spent = scripted_llm.requests[0].usage["total_tokens"]
    assert services.quota.used("g:555").session == spent == row.usage["total_tokens"]
    assert services.quota.in_flight() == 0


async def test_a_team_run_is_one_call_and_an_exempt_admins_subagents_pass_the_quota(bot):
    b = await bot(quota={"session_daily_tokens": QUOTA})
    members = tuple(Member(f"m{i}", f"MEMBER-{i} checks one thing") for i in range(5))
    b.engine.services.teams.save(Team("crew", "Checks things.", members, "g:555"))
    calls = [("team_run", {"name": "crew", "task": "TEAMTASK check"}), *flood(4).calls]
    b.llm.respond_with(Router().on("team and more", Calls(calls), Reply("admin's answer"))
                       .on("MEMBER-", Reply("member answer")).on("SUBTASK-", Reply("sub answer")))
    # An admin's message (quota.admins_exempt): its subagents and members are not stopped by the quota.
    await b.fake.group_message(555, int(ADMIN), [at(BOT), text(" team and more")])
    await b.fake.wait_for(lambda: "admin's answer" in b.fake.texts("g:555"))
    results = await stored_results(b, "g:555")
    assert results[0].startswith('Team "crew": 5 members') and "5 ok" in results[0]  # one call, five members
    assert [r.startswith("[subagent ok") for r in results[1:]] == [True, True, True, False]
    assert results[4].startswith(OVER_ROUND) and "call 5 of this round" in results[4]
    assert len(requests_of(b.llm, "MEMBER-")) == 5 and len(requests_of(b.llm, "SUBTASK-")) == 3
    assert b.engine.services.quota.used("g:555").session > QUOTA  # exempt, and still counted (once)
    assert b.engine.services.quota.in_flight() == 0


def test_a_call_id_an_earlier_reply_used_is_decided_by_its_own_reply():
    """Some providers number tool calls per reply (call_0, call_1, ...): a refusal of round one must not
    stick to the same id in round two, where it was admitted and counted."""
    limits = MessageLimits("g:555")
    calls = [{"name": "subagent_run", "id": f"call_{i}"} for i in range(3)]
    limits.plan_round(calls, 2, 8)
    with pytest.raises(ToolError, match="call 3 of this round"):
        limits.admit("call_2", 8)
    limits.plan_round(calls, 3, 8)  # the next reply: all three run
    for call in calls:
        limits.admit(call["id"], 8)
    assert limits.started == 5
