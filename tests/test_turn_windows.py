"""A turn cancelled at any await after its query-log row is written still closes the row (found by the soak
harness, bench/soak: a `/stop` that reached a turn while it settled the turn a kill -9 had cut off left the row
`running` for good, and the message had no outcome)."""

from __future__ import annotations

import asyncio
import sqlite3

from ania.fakes.openai_server import Reply
from services.usage import QueryFilter
from tests.conftest import make_settings


async def test_a_stop_while_the_unfinished_last_turn_is_settled_closes_the_row(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("first answer")])
    assert await chat.say("f:u1", "u1", "first") == ["first answer"]
    chat.engine.services.sessions.state("f:u1").clean = False  # as after a kill -9 in the middle of a turn
    log = chat.engine.services.queries
    task = await chat.entry.submit("f:u1", "u1", "second")
    assert task is not None
    while not [r for r in log.rows(QueryFilter()) if r["input"] == "second"]:
        await asyncio.sleep(0)  # its row is written; the turn now settles the one before
    stopped, _ = await chat.entry.stop("f:u1")
    assert stopped == 1
    assert [r["status"] for r in log.rows(QueryFilter()) if r["input"] == "second"] == ["stopped"]
    scripted_llm.script([Reply("third answer")])
    assert await chat.say("f:u1", "u1", "third") == ["third answer"]  # the session goes on


async def test_a_reply_goes_out_when_the_store_refuses_the_query_log_row(scripted_llm, make_chat, tmp_path):
    """A disk that refuses writes (here: another process's lock held past the busy timeout) costs the row,
    never the reply; the next turn is logged again."""
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("answered anyway", delay=0.3)])
    task = await chat.entry.submit("f:u1", "u1", "hello")
    assert task is not None
    while not scripted_llm.requests:
        await asyncio.sleep(0.01)
    holder = sqlite3.connect(tmp_path / "data" / "ania.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the turn's model call is in flight; its row cannot be closed now
    try:
        result = await task
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.reply == "answered anyway"
    assert chat.out["f:u1"] == ["answered anyway"]
    scripted_llm.script([Reply("logged again")])
    assert await chat.say("f:u1", "u1", "again") == ["logged again"]
    assert [r["status"] for r in chat.engine.services.queries.rows(QueryFilter()) if r["input"] == "again"] == [
        "success"]


async def test_a_message_gets_a_clear_answer_when_the_store_refuses_every_write(scripted_llm, make_chat, tmp_path):
    """The row cannot even be opened (the data directory refuses writes from before the message arrives to
    after its turn): the message still gets one clear answer, not silence (before: the turn raised out of
    the entry's task and nothing was sent)."""
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("first")])
    assert await chat.say("f:u1", "u1", "first") == ["first"]
    scripted_llm.script([Reply("answered unlogged")])
    holder = sqlite3.connect(tmp_path / "data" / "ania.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        task = await chat.entry.submit("f:u1", "u1", "while the disk refuses")
        assert task is not None
        result = await task
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert chat.out["f:u1"][1:] == [result.reply]
    assert result.reply.startswith("Sorry, something went wrong on my side (OperationalError)")
    assert not [r for r in chat.engine.services.queries.rows(QueryFilter()) if r["input"] == "while the disk refuses"]


async def test_a_turn_whose_checkpoints_cannot_be_written_ends_with_a_notice(scripted_llm, make_chat, tmp_path):
    """The checkpoint store starts refusing writes while the model thinks: the turn fails, settling it fails
    the same way, and the person still gets the failure notice (before: the settle's error left the entry's
    task and nothing was sent); once the store writes again, the next turn settles it and goes on."""
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("first")])
    assert await chat.say("f:u1", "u1", "first") == ["first"]
    scripted_llm.script([Reply("never stored", delay=0.5)])
    task = await chat.entry.submit("f:u1", "u1", "while the disk refuses")
    assert task is not None
    while len(scripted_llm.requests) < 2:
        await asyncio.sleep(0.01)  # the turn's input is stored; the model is thinking
    holder = sqlite3.connect(tmp_path / "data" / "checkpoints.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = await task
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.status == "error" and result.reply.startswith("Sorry, something went wrong on my side")
    assert chat.out["f:u1"][-1] == result.reply
    scripted_llm.script([Reply("back")])
    assert await chat.say("f:u1", "u1", "again") == ["back"]
