"""Bad input and faults on the OneBot link (issue 15): a disconnect mid-turn, an API call that never
answers, wrong access tokens both ways, malformed events, unknown segments, a 100 KB message, 30
messages at once in one group while another group talks, and a clean shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import pytest

from ania.fakes.openai_server import Calls, Reply
from ania.platforms.onebot.adapter import SHUTTING_DOWN
from ania.platforms.onebot.serve import run_serve
from checkpoints.sessions import session_messages
from tests.onebot_fake import FakeOneBot, at, text
from tests.onebot_helpers import BOT, make_engine


async def test_disconnect_mid_turn_reply_goes_out_after_reconnecting(bot, scripted_llm):
    b = await bot()
    scripted_llm.script([Reply("worth the wait", delay=0.5)])
    await b.fake.private_message(42, "take your time")
    await b.fake.wait_for(lambda: scripted_llm.requests)
    await b.fake.drop()  # the implementation restarts while the model thinks
    await b.fake.wait_for(lambda: "worth the wait" in b.fake.texts(), timeout=30)
    assert b.fake.connections == 2
    await b.fake.private_message(42, "still there?")
    await b.fake.wait_for(lambda: len(b.fake.sent) == 2)
    assert b.fake.texts() == ["worth the wait", "echo: still there?"]


async def test_reply_logged_as_lost_when_the_link_stays_down(bot, scripted_llm, caplog):
    b = await bot(onebot={"api_timeout_sec": 0.5})
    scripted_llm.script([Reply("nobody hears this", delay=0.3)])
    await b.fake.private_message(42, "hello")
    await b.fake.wait_for(lambda: scripted_llm.requests)
    b.fake.stop_serving()  # gone for good: no redial succeeds
    await b.fake.drop()
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(b.adapter.entry.drain(), 20)
    assert any("was lost after a retry" in r.getMessage() and "nobody hears this" in r.getMessage()
               for r in caplog.records)
    assert b.engine.services.sessions.state("f:42").clean  # the turn itself finished


async def test_api_call_that_never_answers_times_out_is_retried_once_and_the_bot_goes_on(bot, scripted_llm, caplog):
    b = await bot(onebot={"api_timeout_sec": 0.5})
    b.fake.hang.add("send_private_msg")
    with caplog.at_level(logging.INFO):
        await b.fake.private_message(42, "first")
        await b.fake.wait_for(lambda: sum(a == "send_private_msg" for a, _ in b.fake.calls) == 2)
        await asyncio.wait_for(b.adapter.entry.drain(), 10)
    assert any("lost after a retry" in r.getMessage() and "no answer within" in r.getMessage()
               for r in caplog.records)
    b.fake.hang.clear()
    await b.fake.private_message(42, "second")
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.fake.texts() == ["echo: second"]


async def test_a_send_that_fails_once_is_retried(bot):
    b = await bot()
    b.fake.fail["send_group_msg"] = 1
    await b.fake.group_message(555, 42, [at(BOT), text(" hi")])
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.fake.texts() == ["echo: [42] user42: hi"]


@pytest.mark.parametrize(("ours", "status"), [("wrong", 403), ("", 401)])
async def test_forward_wrong_or_missing_access_token_is_refused_and_reported(bot, caplog, ours, status):
    fake = FakeOneBot(self_id=BOT, token="s3cret")
    await fake.serve()
    with caplog.at_level(logging.ERROR):
        b = await bot(fake=fake, wait=False, onebot={"access_token": ours})
        await fake.wait_for(lambda: fake.refused)
        await asyncio.sleep(0.1)
    assert fake.refused[0] == status and fake.connections == 0 and not b.adapter.conn.connected
    assert any(f"refused the connection: HTTP {status}" in r.getMessage() and "onebot.access_token" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize(("theirs", "status"), [("nope", "403"), ("", "401")])
async def test_reverse_wrong_or_missing_access_token_is_refused(bot, scripted_llm, theirs, status):
    fake = FakeOneBot(self_id=BOT)
    b = await bot(mode="reverse", fake=fake, wait=False, onebot={"access_token": "s3cret"})
    fake.stop_dialing()
    fake.dial(f"ws://127.0.0.1:{b.adapter.port}/onebot/v11/ws", token=theirs)
    await fake.wait_for(lambda: fake.reverse_errors)
    assert fake.reverse_errors[0] == status and fake.connections == 0 and not b.adapter.conn.connected
    assert scripted_llm.requests == []


async def test_reverse_wrong_path_is_refused(bot):
    fake = FakeOneBot(self_id=BOT)
    b = await bot(mode="reverse", fake=fake, wait=False)
    fake.stop_dialing()
    fake.dial(f"ws://127.0.0.1:{b.adapter.port}/somewhere/else")
    await fake.wait_for(lambda: fake.reverse_errors)
    assert fake.reverse_errors[0] == "404"


async def test_malformed_events_and_unknown_segments_lose_nothing(bot, caplog):
    b = await bot()
    with caplog.at_level(logging.INFO):
        await b.fake.push_raw("{this is not json")
        await b.fake.push_raw("[1, 2, 3]")
        await b.fake.push_raw(json.dumps({"post_type": "message", "message_type": "group", "message": "no ids"}))
        await b.fake.push_raw(json.dumps({"post_type": "message", "message_type": "private", "user_id": 42,
                                          "message": [{"type": "text"}, "junk", {"data": {}}, 7]}))
        await b.fake.push_raw(json.dumps({"post_type": "notice", "notice_type": "group_increase"}))
        await b.fake.push_raw(json.dumps({"echo": "ania-99999", "status": "ok", "retcode": 0}))
        await b.fake.private_message(43, [text("look: "), {"type": "mystery", "data": {"x": "1"}},
                                          {"type": "face", "data": {"id": "5"}}])
        await b.fake.wait_for(lambda: "echo: look: [mystery][face 5]" in b.fake.texts())
    assert any("not JSON" in r.getMessage() for r in caplog.records)
    assert any("without usable ids" in r.getMessage() for r in caplog.records)


async def test_cq_string_with_escapes_and_unknown_codes(bot):
    b = await bot()
    await b.fake.push_raw(json.dumps({
        "post_type": "message", "message_type": "group", "sub_type": "normal", "message_id": 5, "group_id": 555,
        "user_id": 42, "message": f"[CQ:at,qq={BOT}] a &#91;b&#93; &amp; c[CQ:unknown_thing,k=v&#44;w][CQ:at,qq=7]",
        "raw_message": "", "font": 0, "sender": {"user_id": 42, "nickname": "N"}, "time": 0, "self_id": BOT}))
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.user_texts() == ["[42] N: a [b] & c[unknown_thing]@7"]


async def test_a_100_kb_message_is_taken_and_the_long_reply_split(bot, scripted_llm):
    b = await bot(onebot={"max_message_runes": 5000}, bot={"max_input_runes": 200_000})
    big = ("word " * 20_000).strip()
    await b.fake.private_message(42, big)
    await b.fake.wait_for(lambda: scripted_llm.requests)
    assert b.user_texts() == [big]
    await asyncio.wait_for(b.adapter.entry.drain(), 20)
    parts = b.fake.texts()
    assert len(parts) == 21 and all(len(p) <= 5000 for p in parts)
    assert " ".join(parts) == "echo: " + big


async def test_thirty_messages_in_one_group_one_turn_at_a_time_groups_in_parallel(bot, scripted_llm):
    """Thirty messages at once are answered in a few batches (F1: what waited for a turn, at most
    `flow.max_batch_messages` each), each message exactly once and in order, one turn at a time in the
    group, while another group is answered in parallel."""
    b = await bot(flow={"max_batch_messages": 20})
    first_busy: list[float] = []

    def step(body):
        last = body["messages"][-1]["content"]
        if "other group" in last:
            # The busy group's first turn is still waiting for its (slow) answer: groups run in parallel.
            in_flight = bool(first_busy) and time.monotonic() < first_busy[0] + 3
            return Reply("parallel" if in_flight else "serialized")
        if not first_busy:  # the busy group's first turn (what arrived before it started) is slow
            first_busy.append(time.monotonic())
            return Reply(f"done {last.rsplit(' ', 1)[-1]}", delay=3)  # under llm.timeout_sec (5 s in tests)
        return Reply(f"done {last.rsplit(' ', 1)[-1]}")

    scripted_llm.respond_with(step)
    for i in range(30):
        await b.fake.group_message(555, 42 + i % 3, [at(BOT), text(f" msg {i}")])
    await b.fake.group_message(556, 99, [at(BOT), text(" other group")])
    await b.fake.wait_for(lambda: "done 29" in b.fake.texts("g:555"), timeout=60)
    await asyncio.wait_for(b.adapter.entry.drain(), 20)
    assert b.fake.texts("g:556") == ["parallel"]
    busy_requests = [r for r in scripted_llm.requests if "msg" in r.messages[-1]["content"]]
    sizes = [len(re.findall(r"msg \d+", r.messages[-1]["content"])) for r in busy_requests]
    assert 2 <= len(sizes) <= 3 and max(sizes) <= 20, sizes  # 30 messages in at most three turns
    read = [int(n) for r in busy_requests for n in re.findall(r"msg (\d+)", r.messages[-1]["content"])]
    assert read == list(range(30))  # nothing dropped, nothing twice, in order
    # One turn at a time in the busy group: each request already holds the previous turn's reply.
    for r, before in zip(busy_requests[1:], b.fake.texts("g:555"), strict=False):
        assert r.messages[-2]["content"] == before


async def test_shutdown_lets_a_running_turn_finish_and_takes_no_new_message(tmp_path, scripted_llm):
    fake = FakeOneBot(self_id=BOT)
    engine = await make_engine(tmp_path, scripted_llm, fake, onebot={"shutdown_grace_sec": 10})
    stop = asyncio.Event()
    serving = asyncio.create_task(run_serve(engine, stop))
    try:
        await fake.wait_for(fake.connected.is_set)
        scripted_llm.script([Reply("finished in time", delay=0.5)])
        await fake.private_message(42, "quick one")
        await fake.wait_for(lambda: scripted_llm.requests)
        stop.set()  # what SIGINT/SIGTERM do
        await asyncio.sleep(0.05)
        await fake.private_message(43, "too late to start")
        await asyncio.wait_for(serving, 15)
        assert fake.texts() == ["finished in time"] and len(scripted_llm.requests) == 1
        assert engine.services.sessions.state("f:42").clean
    finally:
        stop.set()
        await fake.close()
        await engine.close()


async def test_shutdown_stops_a_turn_that_outlives_the_grace_and_tells_its_chat(tmp_path, scripted_llm):
    fake = FakeOneBot(self_id=BOT)
    engine = await make_engine(tmp_path, scripted_llm, fake, onebot={"shutdown_grace_sec": 0.5})
    stop = asyncio.Event()
    serving = asyncio.create_task(run_serve(engine, stop))
    try:
        await fake.wait_for(fake.connected.is_set)
        scripted_llm.script([Reply("never", delay=30)])
        await fake.group_message(555, 42, [at(BOT), text(" a very slow question")])
        await fake.wait_for(lambda: scripted_llm.requests)
        stop.set()
        await asyncio.wait_for(serving, 15)
        assert fake.texts() == [SHUTTING_DOWN]
        assert engine.services.sessions.state("g:555").clean is False  # settled at the next turn or start
        assert await session_messages(engine.graph, "g:555")  # the stopped turn was settled, not lost
    finally:
        stop.set()
        await fake.close()
        await engine.close()


async def test_a_silent_link_is_closed_after_missed_heartbeats_and_redialled(bot):
    b = await bot(fake=FakeOneBot(self_id=BOT, heartbeat_ms=200), onebot={"heartbeat_floor_sec": 0.5})
    await asyncio.sleep(0.5)  # a few heartbeats arm the watchdog
    b.fake.silence()
    await b.fake.wait_for(lambda: b.fake.connections == 2, timeout=30)  # closed by Ania after 0.6 s, redialled
    await b.fake.private_message(42, "back?")
    await b.fake.wait_for(lambda: b.fake.sent)
    assert b.fake.texts() == ["echo: back?"]


async def test_config_change_prompt_reaches_an_admins_private_chat_through_onebot(bot, scripted_llm):
    b = await bot(mcp_tool={"enable": True}, bot={"admins": ["900", "901"]})
    scripted_llm.script([Calls([("mcp_remove", {"name": "x"})]), Reply("asked")])
    await b.fake.group_message(555, 42, [at(BOT), text(" remove server x")])
    await b.fake.wait_for(lambda: b.fake.texts("f:900"))
    assert b.fake.texts("f:900")[0].startswith('Tool "mcp_remove" wants to run with')
    assert b.fake.texts("g:555") == []  # the group does not see the prompt
    await b.fake.private_message(900, "deny")
    await b.fake.wait_for(lambda: "asked" in b.fake.texts("g:555"))
