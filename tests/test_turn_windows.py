"""A turn cancelled at any await after its query-log row is written still closes the row (found by the soak
harness, bench/soak: a `/stop` that reached a turn while it settled the turn a kill -9 had cut off left the row
`running` for good, and the message had no outcome)."""

from __future__ import annotations

import asyncio

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
