"""The group-chat flow while ania.db refuses writes (a full disk, a read-only directory), found by the soak
harness (bench/soak) on the merged flow: a message that arrived then was dropped with a traceback and no
answer (its inbox row could not be written), `/stop` raised instead of answering, and a turn whose query-log
row could not be opened left its messages in the inbox, to be answered again by the next start.

`PRAGMA query_only` makes the app store's own connection refuse every write, as the soak's `chattr +i` does.
"""

from __future__ import annotations

import asyncio
import os

from ania.fakes.openai_server import Reply
from services.usage import QueryFilter
from tests.conftest import make_settings


def refuse_writes(chat, on: bool) -> None:
    chat.engine.services.store.write(f"PRAGMA query_only={int(on)}")


def inbox(chat) -> int:
    return chat.engine.services.inbox.count()


async def test_a_message_arriving_while_writes_are_refused_is_still_answered(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    refuse_writes(chat, True)
    try:  # one clear answer (the turn's own writes are refused too: the failure notice), not silence
        said = await chat.say("f:u1", "u1", "while the disk refuses")
    finally:
        refuse_writes(chat, False)
    assert len(said) == 1 and said[0].startswith("Sorry, something went wrong on my side (OperationalError)")
    scripted_llm.script([Reply("logged again")])
    assert await chat.say("f:u1", "u1", "afterwards") == ["logged again"]
    rows = chat.engine.services.queries.rows(QueryFilter())
    assert [(r["input"], r["status"]) for r in rows] == [("afterwards", "success")]
    assert inbox(chat) == 0


async def test_a_turn_whose_row_was_refused_at_its_start_takes_its_messages_out_of_the_inbox(scripted_llm,
                                                                                             make_chat):
    """The known limit of the first flow: the row (and with it the inbox rows' removal) is written when the
    turn ends, before its reply goes out; before, the inbox row stayed and a later start answered it again."""
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("answered once", delay=0.3)])
    db = chat.engine.services.store
    db.write("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.query_log BEGIN SELECT RAISE(FAIL, 'disk full'); END")
    try:  # only the query-log row is refused (a full disk at that moment)
        task = await chat.entry.submit("f:u1", "u1", "hello")
        assert task is not None and inbox(chat) == 1  # recorded before it waits
        while not scripted_llm.requests:  # the turn opened (its row refused) and asks the model
            await asyncio.sleep(0.01)
    finally:
        db.write("DROP TRIGGER temp.refuse")
    assert (await task).reply == "answered once"
    assert inbox(chat) == 0
    assert chat.engine.services.inbox.waiting(lambda s: True, lambda pid: pid != os.getpid()) == []
    rows = chat.engine.services.queries.rows(QueryFilter())
    assert [(r["input"], r["status"], r["senders"]) for r in rows] == [("hello", "success", ["u1"])]


async def test_stop_answers_while_writes_are_refused(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("slow", delay=5)])
    running = await chat.entry.submit("f:u1", "u1", "first")
    while not scripted_llm.requests:
        await asyncio.sleep(0.01)
    waiting = await chat.entry.submit("f:u1", "u1", "second")
    assert running is not None and waiting is not None
    refuse_writes(chat, True)
    try:
        assert await chat.say("f:u1", "u1", "/stop") == ["Stopped 2 running or queued message(s)."]
    finally:
        refuse_writes(chat, False)
    assert running.cancelled() and waiting.cancelled()
    scripted_llm.script([Reply("goes on")])
    assert await chat.say("f:u1", "u1", "third") == ["goes on"]
