"""Fork, replay, history, export and prune of stored sessions (D5, retention), on real SQLite files and, where
the test takes `checkpoint_url`, on a real Postgres too (tests/pg_helpers.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ania.cli import main
from ania.fakes.openai_server import Calls, Reply, Stall
from ania.replay import replay_on
from checkpoints.factory import CHECKPOINT_FILE
from checkpoints.history import history_lines
from checkpoints.maintenance import ForkError, fork_thread, prune_threads
from checkpoints.sessions import session_history, session_messages
from graphs.agent import build_agent_graph
from nodes.compact import SUMMARIZE_PROMPT
from tests.conftest import make_settings
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.subagent_helpers import wait_for
from tests.test_checkpoint_replay import TEXT, _dump, _model
from tests.test_gates import Marker

SESSION = "f:u1"


@pytest.fixture(params=["sqlite", "postgres"])
def checkpoint_url(request: pytest.FixtureRequest) -> str | None:
    """None: data/checkpoints.db; else a fresh Postgres database's URL."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


@asynccontextmanager
async def stock_graph(data: Path, url: str | None) -> AsyncIterator[Any]:
    """The agent graph on LangGraph's own saver over the same store: LangGraph's own loader, the reference."""
    if url is None:
        async with aiosqlite.connect(str(data / CHECKPOINT_FILE)) as conn:
            yield build_agent_graph(lambda: 10**6, checkpointer=AsyncSqliteSaver(conn))
    else:
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            yield build_agent_graph(lambda: 10**6, checkpointer=saver)


async def _state(graph, thread: str, cid: str | None = None) -> list:
    config = {"configurable": {"thread_id": thread, **({"checkpoint_id": cid} if cid else {})}}
    return list((await graph.aget_state(config)).values.get("messages", []))


@pytest.mark.timeout(300)
async def test_a_fork_at_every_checkpoint_of_a_long_session_equals_the_conversation_there(
        scripted_llm, make_chat, tmp_path, checkpoint_url):
    settings = make_settings(scripted_llm, agent={"context_tokens": 2500, "keep_recent_tokens": 600})
    chat = await make_chat(settings, data=tmp_path / "data", checkpoint_url=checkpoint_url)
    scripted_llm.script([_model] * 2000)
    questions = [f"question {i} {'four' if i % 3 == 0 else 'one'} {TEXT}" for i in range(60)]
    for q in questions:
        await chat.say(SESSION, "u1", q)
    assert sum(r.messages[0]["content"] == SUMMARIZE_PROMPT for r in scripted_llm.requests) >= 2
    saver = chat.engine.graph.checkpointer
    steps = await session_history(saver, SESSION)
    original = _dump(await session_messages(saver, SESSION))
    for i, step in enumerate(steps):
        await fork_thread(saver, SESSION, step.checkpoint_id, f"f:fork{i}")
    mid = next(i for i in range(len(steps) // 2, len(steps)) if not steps[i].ran)  # the end of a turn
    scripted_llm.reset()
    scripted_llm.script([Reply("a different answer")])
    await chat.say(f"f:fork{mid}", "u1", "go another way")
    await chat.engine.close()

    async with stock_graph(tmp_path / "data", checkpoint_url) as stock:  # LangGraph's own loader
        copies = 0
        for i, step in enumerate(steps):
            truth = await _state(stock, SESSION, step.checkpoint_id)
            if i != mid:
                assert _dump(await _state(stock, f"f:fork{i}", step.checkpoint_id)) == _dump(truth), i
            # The conversation at that point: the questions sent so far, the oldest summarized away.
            sent = sum(s.source == "input" and s.checkpoint_id < step.checkpoint_id for s in steps)
            humans = [m.content for m in truth
                      if isinstance(m, HumanMessage) and not m.content.startswith("<conversation_summary>")]
            assert humans == questions[sent - len(humans):sent], i
            copies += any(isinstance(m, HumanMessage) for m in truth) and len(humans) < sent
        assert copies, "the session should have compacted"
        forked = await _state(stock, f"f:fork{mid}")
        before = await _state(stock, SESSION, steps[mid].checkpoint_id)
        assert _dump(forked[: len(before)]) == _dump(before) and forked[-1].content == "a different answer"
        assert _dump(await _state(stock, SESSION)) == original  # the original is untouched


async def test_fork_errors_are_clear(scripted_llm, make_chat, checkpoint_url):
    chat = await make_chat(make_settings(scripted_llm), checkpoint_url=checkpoint_url)
    scripted_llm.script([Reply("hi")])
    await chat.say(SESSION, "u1", "hello")
    saver = chat.engine.graph.checkpointer
    with pytest.raises(ForkError, match="no session 'f:nobody'"):
        await fork_thread(saver, "f:nobody", "x", "f:new")
    with pytest.raises(ForkError, match=r"has no checkpoint 'nope'.*sessions history f:u1"):
        await fork_thread(saver, SESSION, "nope", "f:new")
    last = (await session_history(saver, SESSION))[-1].checkpoint_id
    await fork_thread(saver, SESSION, last, "f:new")
    with pytest.raises(ForkError, match="already exists"):
        await fork_thread(saver, SESSION, last, "f:new")


async def test_history_says_what_each_step_did_newest_first(scripted_llm, make_chat, checkpoint_url):
    chat = await make_chat(make_settings(scripted_llm, approval={"enable": True, "tools": ["time"], "self_approve_in_private": True}),
                           approval_timeout_sec=30, checkpoint_url=checkpoint_url)
    scripted_llm.script([Calls([("time", {})]), Reply("noon")])
    task = await chat.entry.submit(SESSION, "u1", "what time")
    await wait_for(lambda: any("allow" in t for t in chat.out.get(SESSION, [])))
    saver = chat.engine.graph.checkpointer
    lines = await history_lines(saver, SESSION)
    assert "approval pending" in lines[0].summary
    rid = next(t for t in chat.out[SESSION] if "allow" in t).split("allow ")[1].split()[0].strip("\"'`")
    await chat.say(SESSION, "u1", f"allow {rid}")
    await task
    lines = await history_lines(saver, SESSION)
    assert [ln.step.step for ln in lines] == sorted((ln.step.step for ln in lines), reverse=True)
    text = "\n".join(f"{ln.node} | {ln.summary}" for ln in lines)
    assert "user: what time" in text and "model called time" in text and "time ok" in text
    assert "model replied: noon" in lines[0].summary and "end of turn" in lines[0].summary


async def test_replay_reports_a_removed_tool_and_leaves_the_original(scripted_llm, make_chat, checkpoint_url):
    chat = await make_chat(make_settings(scripted_llm), checkpoint_url=checkpoint_url)
    note = Marker()
    chat.engine.services.shared_tools.add([note])
    scripted_llm.script([Calls([("write_note", {"key": "a"})]), Reply("noted")])
    await chat.say(SESSION, "u1", "write it")
    saver = chat.engine.graph.checkpointer
    original = _dump(await session_messages(saver, SESSION))
    steps = await session_history(saver, SESSION)
    chat.engine.services.shared_tools.remove(["write_note"])
    lines: list[str] = []
    # From the step where the model had asked for the call: the call runs again against today's tools.
    at = next(s for s in steps if "tool_call" in s.ran or "send" in s.ran).checkpoint_id
    scripted_llm.script([Reply("fixed")])
    report = await replay_on(chat.engine, SESSION, at, out=lines.append)
    assert report.removed_tools == ["write_note"] and any("'write_note'" in ln for ln in lines)
    results = [m for m in report.new_messages if isinstance(m, ToolMessage)]
    assert results and "unknown tool" in str(results[0].content).lower()
    assert _dump(await session_messages(saver, SESSION)) == original and note.ran == [("a", note.ran[0][1])]
    # From before the turn, with a changed message: a new answer in another scratch session.
    scripted_llm.script([Reply("a better answer")])
    report = await replay_on(chat.engine, SESSION, steps[0].checkpoint_id, message="write it better",
                             out=lines.append)
    assert [m.content for m in report.new_messages if isinstance(m, AIMessage)] == ["a better answer"]
    assert _dump(await session_messages(saver, SESSION)) == original
    with pytest.raises(ForkError, match="no checkpoint"):
        await replay_on(chat.engine, SESSION, "bad-id", out=lines.append)


async def test_replay_without_a_message_sends_the_one_that_followed(scripted_llm, make_chat, checkpoint_url):
    chat = await make_chat(make_settings(scripted_llm), checkpoint_url=checkpoint_url)
    scripted_llm.script([Reply("one"), Reply("two")])
    await chat.say(SESSION, "u1", "first")
    await chat.say(SESSION, "u1", "second")
    saver = chat.engine.graph.checkpointer
    steps = await session_history(saver, SESSION)
    end_of_first = [s for s in steps if s.source == "input"][1].parent_id
    scripted_llm.script([Reply("two again")])
    report = await replay_on(chat.engine, SESSION, end_of_first, out=lambda s: None)
    assert [m.content for m in report.new_messages] == ["second", "two again"]


def _cli(monkeypatch, tmp_path, *argv: str) -> int:
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path / "config"))
    return main(list(argv))


async def test_export_keeps_chinese_images_and_calls_and_drops_secrets(scripted_llm, make_chat, tmp_path,
                                                                      monkeypatch, capsys):
    (tmp_path / "config").mkdir()
    secret = "sk-export-secret-42"
    (tmp_path / "config" / "ania.toml").write_text(f'[llm]\napi_key = "{secret}"\n')
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Calls([("time", {})]), Reply(f"现在是中午 (key {secret})")])
    await chat.say(SESSION, "u1", "几点了？")
    image = HumanMessage(content=[{"type": "text", "text": "看这张图"},
                                  {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
    await chat.engine.graph.aupdate_state({"configurable": {"thread_id": SESSION}}, {"messages": [image]},
                                          as_node="model")
    await chat.engine.close()
    assert await asyncio.to_thread(_cli, monkeypatch, tmp_path, "sessions", "export", SESSION, "--format", "md") == 0
    md = capsys.readouterr().out
    assert "几点了？" in md and "现在是中午" in md and "[image]" in md and "看这张图" in md
    assert "calls `time`" in md and "**tool time** (ok)" in md and secret not in md and "[redacted]" in md
    assert await asyncio.to_thread(_cli, monkeypatch, tmp_path, "sessions", "export", SESSION) == 0
    data = json.loads(capsys.readouterr().out)
    assert "几点了？" in json.dumps(data, ensure_ascii=False) and secret not in json.dumps(data)
    assert data["session"] == SESSION and any(m["type"] == "ai" for m in data["messages"])
    assert await asyncio.to_thread(_cli, monkeypatch, tmp_path, "sessions", "export", "f:nobody") == 1


async def test_prune_trims_old_checkpoints_and_never_breaks_a_running_turn(scripted_llm, make_chat, tmp_path,
                                                                           checkpoint_url):
    chat = await make_chat(make_settings(scripted_llm), checkpoint_url=checkpoint_url)
    scripted_llm.script([Reply(f"answer {i} {TEXT}") for i in range(60)])
    for i in range(60):
        await chat.say("f:busy", "u1", f"q{i}")
    await chat.say("f:idle", "u1", "old news")
    saver = chat.engine.graph.checkpointer
    busy = _dump(await session_messages(saver, "f:busy"))
    scripted_llm.script([Stall(1.0, then=Reply("late answer"))])
    task = await chat.entry.submit("f:busy", "u1", "still going")
    await wait_for(lambda: len(scripted_llm.requests) == 62)
    later = datetime.now(UTC) + timedelta(days=1)
    dry = await prune_threads(saver, later, dry_run=True, running={"f:busy"})
    assert dry.sessions_deleted == ["f:idle"] and dry.checkpoints > 0
    assert len(await session_history(saver, "f:idle")) > 0  # a dry run deletes nothing
    kept = len(await session_history(saver, "f:busy"))
    report = await prune_threads(saver, later, running={"f:busy"})
    assert report == dry
    assert await session_history(saver, "f:idle") == []
    assert len(await session_history(saver, "f:busy")) < kept / 2  # trimmed to its newest copy of the history
    result = await task
    assert result.reply == "late answer"
    after = _dump(await session_messages(saver, "f:busy"))
    assert after[: len(busy)] == busy and len(after) == len(busy) + 2
    scripted_llm.script([Reply("and on")])
    assert await chat.say("f:busy", "u1", "next") == ["and on"]
    async with stock_graph(tmp_path / "data", checkpoint_url) as stock:
        assert _dump(await _state(stock, "f:busy"))[-1] == _dump(await session_messages(saver, "f:busy"))[-1]


def test_cli_errors_are_one_clear_line(monkeypatch, tmp_path, capsys):
    (tmp_path / "config").mkdir()
    assert _cli(monkeypatch, tmp_path, "sessions", "history", "f:x") == 1
    assert "no stored sessions yet" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        _cli(monkeypatch, tmp_path, "sessions", "prune", "--older-than", "soon")
    assert exit_.value.code == 2 and "not a duration" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _cli(monkeypatch, tmp_path, "logs", "queries", "--since", "yesterday-ish")
    assert "neither a duration" in capsys.readouterr().err


async def test_the_session_commands_from_the_command_line(scripted_llm, make_chat, tmp_path, monkeypatch, capsys):
    from ania import logs_cli
    from core.settings import LogsSettings
    from services.store import AppStore
    from services.usage import QueryFilter, QueryLog

    (tmp_path / "config").mkdir(exist_ok=True)
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Calls([("time", {})]), Reply("noon")])
    await chat.say("g:team", "u1", "what time")
    await chat.engine.close()

    def cli(*argv: str) -> tuple[int, str, str]:
        code = _cli(monkeypatch, tmp_path, *argv)
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, _ = await asyncio.to_thread(cli, "sessions", "history", "g:team")
    lines = out.splitlines()
    assert code == 0 and "model replied: noon; end of turn" in lines[0] and "user: [u1] what time" in out
    first = lines[-1].split()[0]
    code, out, _ = await asyncio.to_thread(cli, "sessions", "fork", "g:team", "--at", first, "--to", "g:copy")
    assert code == 0 and "forked g:team" in out and "ania chat --session g:copy" in out
    code, _, err = await asyncio.to_thread(cli, "sessions", "fork", "g:team", "--at", "zzz")
    assert code == 1 and "has no checkpoint 'zzz'" in err and "Traceback" not in err
    code, out, _ = await asyncio.to_thread(cli, "sessions", "prune", "--older-than", "30d", "--dry-run")
    assert code == 0 and out.startswith("would delete: 0 idle session(s), 0 checkpoint(s)")
    # The terminal table and the full view of a row (what a person sees when stdout is a terminal).
    store = AppStore(tmp_path / "data" / "ania.db")
    try:
        [row] = QueryLog(store, LogsSettings()).rows(QueryFilter())
        blank = store.write("INSERT INTO query_log (started, session, status) VALUES (1, 'g:x', 'running')")
        bare = QueryLog(store, LogsSettings()).get(blank)
    finally:
        store.close()
    assert "g:team" in logs_cli.query_line(row) and "1 calls  what time" in logs_cli.query_line(row)
    full = logs_cli.query_full(row)
    assert "time({}) → ok" in full and "replay:" not in full  # a new session: nothing to replay from
    assert "(new session)" in full and logs_cli.query_line(bare) and logs_cli.query_full(bare)


@pytest.mark.timeout(180)  # several real `ania sessions` processes in a row: slow on a loaded machine
async def test_a_reader_that_stops_early_ends_the_command_quietly(scripted_llm, make_chat, tmp_path):
    """`ania sessions export KEY | head` used to end in a BrokenPipeError traceback. The pipe's reading end is
    closed before the command writes, so every write fails; each command must exit 141 with nothing on stderr."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("ok " * 50_000)])  # an export far larger than a pipe's buffer
    await chat.say(SESSION, "u1", "a long answer, please")
    await chat.engine.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update(ANIA_CONFIG_DIR=str(tmp_path / "config"), ANIA_DATA_DIR=str(tmp_path / "data"))
    ania = Path(sys.executable).parent / "ania"

    def run(*args: str) -> tuple[int, str]:
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first line
        try:
            r = subprocess.run([str(ania), *args], stdout=write, stderr=subprocess.PIPE, env=env, timeout=60)
        finally:
            os.close(write)
        return r.returncode, r.stderr.decode(errors="replace")

    for args in (("sessions", "export", SESSION), ("sessions", "export", SESSION, "--format", "md"),
                 ("sessions", "show", SESSION), ("sessions", "list"), ("sessions", "history", SESSION),
                 ("logs", "queries"), ("logs", "show", "1"), ("kb", "list")):
        code, err = await asyncio.to_thread(run, *args)
        assert (code, err) == (141, ""), args
