"""The group-chat flow through the real engine and the OneBot fake (issue 23: F1 batching, F2 flood limits):
a batch of three messages from two members in one model call, a batch's rights at the approval gate, the
flood figure, the queue bound and its notice, round robin, a command and an approval reply arriving in the
middle, and /stop dropping its sender's waiting messages."""

from __future__ import annotations

import asyncio
import math
import re
import time

from ania.fakes.openai_server import Calls, Reply
from ania.logs_cli import query_full
from services.usage import QueryFilter
from tests.onebot_fake import at, text
from tests.onebot_helpers import ADMIN, BOT

STAMP = r"\d\d:\d\d:\d\d UTC"


def rows(b, **kw):
    return b.engine.services.queries.rows(QueryFilter(session="g:555", limit=1000, **kw))


async def say(b, user: int, words: str) -> int:
    return await b.fake.group_message(555, user, [at(BOT), text(f" {words}")])


async def test_three_messages_from_two_members_are_answered_in_one_model_call(bot, scripted_llm):
    b = await bot(flow={"settle_sec": 1.0})
    scripted_llm.script([Reply("all three")])
    ids = [await say(b, 42, "one"), await say(b, 43, "two"), await say(b, 42, "three")]
    await b.fake.wait_for(lambda: b.fake.sent)
    await asyncio.wait_for(b.adapter.entry.drain(), 10)
    assert len(scripted_llm.requests) == 1
    assert re.fullmatch(
        r"\[3 messages arrived for you since your last reply, oldest first; answer them together\]\n"
        rf"\[1\] {STAMP} \[42\] user42: one\n\[2\] {STAMP} \[43\] user43: two\n\[3\] {STAMP} \[42\] user42: three",
        b.user_texts()[0])
    reply = b.fake.sent[0]["message"]
    assert reply[0] == {"type": "reply", "data": {"id": str(ids[-1])}}  # quotes the last message addressed to it
    assert b.fake.texts("g:555") == ["all three"]
    (row,) = rows(b)
    assert (row["status"], row["sender"], row["message_ids"], row["senders"]) == (
        "success", "42", [str(i) for i in ids], ["42", "43", "42"])
    assert f"messages  {ids[0]} (42), {ids[1]} (43), {ids[2]} (42)\n" in query_full(row)  # `ania logs show`
    assert b.engine.services.inbox.count() == 0


async def test_a_batch_runs_with_its_least_privileged_authors_rights_at_the_approval_gate(bot, scripted_llm):
    """A member's message batched with an admin's: the approval is the member's (its prompt quotes and
    @-mentions the member; self-approval is off in groups, so the member may not answer it, as for their own
    message alone), only an admin decides it, and the reply quotes the batch's last message (the admin's)."""
    b = await bot(flow={"settle_sec": 1.0}, approval={"tools": ["time"]})
    scripted_llm.script([Calls([("time", {})]), Reply("it is time")])
    mid = await say(b, 42, "what time is it?")
    last = await say(b, int(ADMIN), "and for me?")
    await b.fake.wait_for(lambda: b.fake.sent)
    prompt = b.fake.sent[0]["message"]
    assert prompt[:2] == [{"type": "reply", "data": {"id": str(mid)}}, {"type": "at", "data": {"qq": "42"}}]
    rid = re.search(r'"allow ([0-9a-f]{4})"', b.fake.texts()[0]).group(1)
    await b.fake.group_message(555, 42, f"allow {rid}")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.fake.texts()[1] == ("You cannot answer this approval: in a group only an admin can approve "
                                 "(approval.self_approve_in_groups is off).")
    await b.fake.group_message(555, 43, f"allow {rid}")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 3)
    assert b.fake.texts()[2] == "You cannot answer this approval: only the person who asked or an admin can decide."
    await b.fake.group_message(555, int(ADMIN), f"allow {rid}")
    await b.fake.wait_for(lambda: "it is time" in b.fake.texts())
    assert b.fake.sent[-1]["message"][0] == {"type": "reply", "data": {"id": str(last)}}
    (row,) = rows(b)
    assert (row["sender"], row["senders"], row["calls"][0]["status"]) == ("42", ["42", ADMIN], "ok")
    assert len(scripted_llm.requests) == 2  # the approval answers were never batched into a turn


async def test_a_flood_does_not_starve_another_member_and_model_calls_follow_the_rate_limit(bot, scripted_llm):
    """The figure: one member floods at 100 messages per second; another member's message is answered by the
    turn after the one running when it arrived (within two turns), and the model calls stay bounded by the
    rate limit (burst + rate x duration), not by the 100 messages. Every flood message has its outcome."""
    rate_per_min, burst = 60, 3
    b = await bot(flow={"member_rate_per_min": rate_per_min, "member_burst": burst})
    scripted_llm.respond_with(lambda body: Reply("ok", delay=0.3))
    sent = 0

    async def flood() -> None:  # on a schedule of 100 a second (no pause when behind it)
        nonlocal sent
        for i in range(100):
            await say(b, 41, f"spam {i}")
            sent += 1
            await asyncio.sleep(max(0.0, started + (i + 1) / 100 - time.monotonic()))

    started = time.monotonic()
    flooding = asyncio.create_task(flood())
    await b.fake.wait_for(lambda: sent >= 10)
    before = len(scripted_llm.requests)
    await say(b, 42, "a real question")
    await flooding
    elapsed = time.monotonic() - started

    def accounted() -> int:  # the flood's messages with an outcome: admitted to the inbox or refused with a row
        refused = sum(1 for r in rows(b, status="rate_limited") if r["sender"] == "41")
        return refused + b.engine.services.store.query("SELECT COUNT(*) AS n FROM inbox WHERE sender = '41'")[0]["n"] \
            + sum(r["senders"].count("41") for r in rows(b) if r["status"] != "rate_limited")

    await b.fake.wait_for(lambda: accounted() >= 100)  # the last frames may still be on the wire
    await asyncio.wait_for(b.adapter.entry.drain(), 30)
    asked = [i for i, t in enumerate(b.user_texts()) if "a real question" in t]
    assert asked and asked[0] <= before + 1, (asked, before)  # the running turn, then the next one
    calls = len(scripted_llm.requests)
    assert calls <= burst + math.ceil(rate_per_min / 60 * elapsed) + 2, (calls, elapsed)
    flooder = [r for r in rows(b) if "41" in r["senders"] or r["sender"] == "41"]
    limited = [r for r in flooder if r["status"] == "rate_limited"]
    answered = sum(r["senders"].count("41") for r in flooder if r["status"] == "success")
    assert answered + len(limited) == 100 and answered <= burst + math.ceil(rate_per_min / 60 * elapsed)
    notices = [t for t in b.fake.texts("g:555") if "faster than I can answer" in t]
    assert len(notices) == 1  # one notice per window, not one per refused message


async def test_the_queue_bound_refuses_with_one_notice_and_a_row_each(bot, scripted_llm):
    b = await bot(flow={"max_queue": 2})
    scripted_llm.script([Reply("first", delay=1.0), Reply("the rest")])
    await say(b, 42, "m0")
    await b.fake.wait_for(lambda: scripted_llm.requests)
    for i in range(1, 5):
        await say(b, 42, f"m{i}")
    await b.fake.wait_for(lambda: "the rest" in b.fake.texts())
    await asyncio.wait_for(b.adapter.entry.drain(), 10)
    texts = b.fake.texts("g:555")
    assert [t for t in texts if "already waiting" in t] == [
        "2 messages are already waiting in this chat, so yours was not answered. Please send it again in a while. "
        "(This notice comes at most once every 60 s.)"]
    assert texts[-2:] == ["first", "the rest"]
    full = rows(b, status="queue_full")
    assert sorted(r["input"] for r in full) == ["user42: m3", "user42: m4"]
    assert len(scripted_llm.requests) == 2 and "user42: m1" in b.user_texts()[1] and "user42: m2" in b.user_texts()[1]


async def test_a_batch_takes_members_in_turn(bot, scripted_llm):
    b = await bot(flow={"max_batch_messages": 2})
    scripted_llm.script([Reply("slow", delay=0.8)])
    await say(b, 41, "a0")
    await b.fake.wait_for(lambda: scripted_llm.requests)
    for i in range(1, 4):
        await say(b, 41, f"a{i}")
    await say(b, 42, "b0")
    await b.fake.wait_for(lambda: len(b.fake.texts("g:555")) == 3, timeout=30)
    await asyncio.wait_for(b.adapter.entry.drain(), 10)
    second, third = b.user_texts()[1:]
    assert re.findall(r"user4\d: \w+", second) == ["user41: a1", "user42: b0"]  # not a1 and a2
    assert re.findall(r"user4\d: \w+", third) == ["user41: a2", "user41: a3"]


async def test_a_command_and_an_approval_reply_in_the_middle_act_at_once_and_are_not_batched(bot, scripted_llm):
    b = await bot(approval={"tools": ["time"]})
    scripted_llm.script([Calls([("time", {})]), Reply("it is time"), Reply("second turn")])
    await say(b, 42, "what time is it?")
    await b.fake.wait_for(lambda: b.fake.sent)
    rid = re.search(r'"allow ([0-9a-f]{4})"', b.fake.texts()[0]).group(1)
    await say(b, 43, "hello there")  # waits for the next turn
    await b.fake.group_message(555, 43, "/help")  # a command: answered now, while the turn waits
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert "/stop" in b.fake.texts()[1] and len(scripted_llm.requests) == 1
    await b.fake.group_message(555, int(ADMIN), f"allow {rid}")  # an approval reply: taken at once
    await b.fake.wait_for(lambda: "second turn" in b.fake.texts())
    assert b.fake.texts()[2:] == [f'Allowed: "time" ({rid}).', "it is time", "second turn"]
    assert b.user_texts()[-1] == "[43] user43: hello there"  # a batch of one reads as a single message
    assert not [t for t in b.user_texts() if "/help" in t or "allow" in t]


async def test_stop_stops_its_senders_turn_and_drops_their_waiting_messages_only(bot, scripted_llm):
    b = await bot()
    scripted_llm.script([Reply("too late", delay=5), Reply("for 43")])
    await say(b, 42, "a long essay")
    await b.fake.wait_for(lambda: scripted_llm.requests)
    await say(b, 42, "and another")
    await say(b, 43, "my question")
    await b.fake.group_message(555, 42, "/stop")
    await b.fake.wait_for(lambda: "for 43" in b.fake.texts(), timeout=30)
    assert b.fake.texts("g:555") == ["Stopped 2 running or queued message(s).", "for 43"]
    assert b.user_texts()[-1] == "[43] user43: my question"
    stopped = rows(b, status="stopped")
    assert sorted(r["input"] for r in stopped) == ["user42: a long essay", "user42: and another"]
    assert b.engine.services.inbox.count() == 0


async def test_a_custom_command_is_expanded_and_then_batched_like_a_message(bot, scripted_llm, tmp_path):
    from tests.test_commands import COMMANDS, write_commands

    write_commands(tmp_path, COMMANDS)
    b = await bot(flow={"settle_sec": 1.0})
    scripted_llm.script([Reply("both")])
    await say(b, 42, "hi")
    await b.fake.group_message(555, 43, "/tr hallo")  # a custom command needs no @
    await b.fake.wait_for(lambda: b.fake.sent)
    await asyncio.wait_for(b.adapter.entry.drain(), 10)
    assert len(scripted_llm.requests) == 1
    assert re.findall(r"UTC \[(\d+)\] (.+)$", b.user_texts()[0], re.MULTILINE) == [
        ("42", "user42: hi"), ("43", "Translate into English: hallo")]
    (row,) = rows(b)
    assert (row["trigger"], row["senders"]) == ("message", ["42", "43"])
