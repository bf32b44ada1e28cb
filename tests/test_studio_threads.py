"""The bot's sessions in Studio: the recent ones are threads when the server starts, and `ania sessions studio`
opens one on the bot's own checkpoints (or names the server it could not reach). The server:
tests/studio_helpers.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from ania.fakes.openai_server import Reply, ScriptedOpenAI
from tests.studio_helpers import (
    EARLY_SESSION,
    OLDER_SESSIONS,
    STUDIO_MODULE,
    Studio,
    bot_turn,
    last,
    studio_llm,  # noqa: F401  (the fixture `llm`)
)

pytestmark = STUDIO_MODULE


def test_a_bot_session_opens_in_studio_and_the_original_stays(studio: Studio, llm: ScriptedOpenAI, monkeypatch,
                                                              capsys) -> None:
    """The server runs on the bot's own data/checkpoints.db; `ania sessions studio` copies a session keyed
    g:team to its UUID thread and registers it; a run there acts as g:team and leaves the bot's thread as it was.
    The server asked for a taken port and serves on another: the command finds it without --url (the URL the
    server recorded in the data directory), and GET /threads/{id} shows the session's messages at once."""
    import asyncio

    from ania.cli import main
    from ania.studio_checkpointer import studio_thread_id

    tmp = studio.log.parent
    before = bot_turn(tmp, llm, "g:team", "what happened at 14:00?", "the bot's answer")
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp / "config"))
    url = str(studio.http.base_url).rstrip("/")
    assert main(["sessions", "studio", "g:team"]) == 0
    thread = studio_thread_id("g:team")
    out = capsys.readouterr().out
    assert thread in out and f"baseUrl={url}" in out
    shown = [m["content"] for m in studio.state(thread)["values"]["messages"]]
    assert shown == before
    listed = studio.http.get(f"/threads/{thread}").json()
    assert [m["content"] for m in listed["values"]["messages"]] == before and listed["metadata"]["session"] == "g:team"
    llm.script([Reply("studio answer")])
    out = studio.say(thread, "and then?")
    assert last(out)["content"] == "studio answer"
    assert "[u1] what happened at 14:00?" in str(llm.requests[-1].messages)  # the group's history, as g:team
    assert asyncio.run(_messages(tmp / "data", "g:team")) == before  # the bot's own thread is untouched
    assert main(["sessions", "studio", "g:nobody", "--url", url]) == 1


def test_sessions_studio_names_the_server_it_could_not_reach(tmp_path: Path, monkeypatch, capsys) -> None:
    """A studio.json left by a server that is gone is ignored (its pid is dead): the default port is tried and the
    error says no running server is recorded; --port names another."""
    from ania.cli import main

    llm = ScriptedOpenAI().start()
    try:
        bot_turn(tmp_path, llm, "g:gone", "hello", "hi")
    finally:
        llm.stop()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(30)
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nothing listens there
    (tmp_path / "data" / "studio.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}", "pid": dead.pid}))
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path / "config"))
    assert main(["sessions", "studio", "g:gone", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"the Studio server at http://127.0.0.1:{port} did not take it" in err and "--url/--port" in err
    assert main(["sessions", "studio", "g:gone"]) == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" not in err, "a stale studio.json must be ignored"
    assert "no running Studio server recorded in" in err


def test_the_bot_s_recent_sessions_are_listed_when_studio_starts(studio: Studio) -> None:
    """g:early had a real turn before the server started: it is a thread at once, with its messages, and the
    server recorded its real URL (and pid) in the data directory for `ania sessions studio`."""
    from ania.studio_checkpointer import studio_thread_id

    r = studio.http.post("/threads/search", json={"metadata": {"session": EARLY_SESSION}})
    r.raise_for_status()
    (thread,) = r.json()
    assert thread["thread_id"] == studio_thread_id(EARLY_SESSION)
    assert [m["content"] for m in thread["values"]["messages"]][-2:] == ["[u1] what did we decide yesterday?",
                                                                          "the early answer"]
    assert studio.http.get(f"/threads/{thread['thread_id']}").json()["values"] == thread["values"]
    r = studio.http.post("/threads/search", json={"limit": 100})
    r.raise_for_status()
    listed = {t["metadata"].get("session") for t in r.json()} - {None}
    assert {EARLY_SESSION, *OLDER_SESSIONS[2:]} <= listed and not listed & set(OLDER_SESSIONS[:2])
    recorded = json.loads((studio.log.parent / "data" / "studio.json").read_text())
    assert recorded == {"url": studio.served_url(), "pid": recorded["pid"]} and recorded["pid"] != os.getpid()


async def _messages(data: Path, key: str) -> list[str]:
    from checkpoints.factory import open_checkpointer
    from checkpoints.sessions import session_messages

    async with open_checkpointer(data) as saver:
        return [m.content for m in await session_messages(saver, key)]
