"""The durable inbox (issue 26, "Found already"): a message the bot has taken is recorded before it waits,
and after a kill -9 it is answered by the next start, once; the message whose turn was running gets its
query-log row (`interrupted`) and is not answered twice. A real `ania serve` process, killed with SIGKILL."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys

from ania.fakes.openai_server import Reply, Stall
from tests.onebot_fake import FakeOneBot, at, text
from tests.test_serve import BOT, ended, env_for, signalled, start


def db_rows(tmp_path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(str(tmp_path / "data" / "ania.db"))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def until(cond, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def test_a_message_waiting_behind_a_turn_is_answered_once_after_kill_9(scripted_llm, tmp_path):
    fake = await FakeOneBot(self_id=BOT).serve()
    env = env_for(scripted_llm, tmp_path, ANIA_ONEBOT__WS_URL=fake.url)
    scripted_llm.script([Stall(30)])  # the first turn is still running when the bot is killed
    proc = await start(env)
    try:
        await fake.wait_for(fake.connected.is_set, timeout=30)
        first = await fake.group_message(555, 42, [at(BOT), text(" first")])
        await fake.wait_for(lambda: scripted_llm.requests, timeout=30)
        waiting = await fake.group_message(555, 43, [at(BOT), text(" waiting behind it")])
        await until(lambda: db_rows(tmp_path, "SELECT message_id FROM inbox") == [(str(waiting),)])
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        scripted_llm.reset()
        scripted_llm.script([Reply("answered after the restart")])
        proc = await start(env)
        await fake.wait_for(lambda: fake.connections == 2 and "answered after the restart" in fake.texts(), timeout=60)
        await asyncio.sleep(1.0)  # nothing else comes: the first message is not answered again
        assert fake.texts() == ["answered after the restart"]
        assert [r.messages[-1]["content"] for r in scripted_llm.requests] == ["[43] user43: waiting behind it"]
        assert await signalled(proc, signal.SIGTERM) == 0
    finally:
        await ended(proc, fake)
    rows = db_rows(tmp_path, "SELECT status, message_ids, senders FROM query_log WHERE session = 'g:555' ORDER BY id")
    assert rows == [("interrupted", f'["{first}"]', '["42"]'), ("success", f'["{waiting}"]', '["43"]')]
    assert db_rows(tmp_path, "SELECT COUNT(*) FROM inbox") == [(0,)]


def test_an_inbox_row_of_a_live_process_is_left_alone(tmp_path):
    """Only a gone process's rows are taken: a second reader (`ania chat` on the same data directory) must not
    answer what the running bot will answer."""
    from services.flow import Inbox
    from services.store import AppStore
    from services.usage import pid_alive

    store = AppStore(tmp_path / "ania.db")
    inbox = Inbox(store)
    mine = inbox.record("g:1", "42", "hello", message_id="7")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    other = inbox.record("g:1", "43", "from before")
    store.write("UPDATE inbox SET pid = ? WHERE id = ?", [int(gone.stdout), other])
    taken = inbox.waiting(lambda key: key.startswith("g:"), pid_alive)
    assert [(r.id, r.sender, r.body) for r in taken] == [(other, "43", "from before")]
    assert inbox.waiting(lambda key: True, pid_alive) == []  # now this process's: not taken twice
    assert mine and inbox.count() == 2
