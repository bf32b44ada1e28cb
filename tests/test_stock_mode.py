"""The switch to the libraries' own code (engine.stock, ania/engine_mode.py) and the version check of the
copies (services/versions.py): each mode builds its own parts, sends the same request bytes, and reads the
sessions the other stored; the fast mode refuses to start outside the checked library versions."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from langchain_openai import ChatOpenAI
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ania.engine_mode import engine_mode, stock_mode
from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from checkpoints.delta import GrowingDeltaChannel
from checkpoints.factory import CHECKPOINT_FILE, REDUCERS
from checkpoints.saver import AniaSqliteSaver
from checkpoints.serde import MessageSerializer
from checkpoints.sessions import session_messages
from core.errors import ConfigError
from core.settings import Settings
from graphs.agent import build_agent_graph
from graphs.clock import build_clock_graph
from graphs.subagent import build_subagent_graph
from nodes.compact import SUMMARIZE_PROMPT
from nodes.state import add_messages_per_write
from services.llm.lean_openai import LeanChatOpenAI
from services.versions import CHECKED, check_versions, installed_version
from tests.conftest import make_settings

SESSION = "f:u1"
TEXT = "lorem ipsum dolor sit amet " * 11


def _model(body: dict[str, Any]) -> Any:
    """A tool round per question (todo_write: a result that is the same every run), summaries when asked."""
    messages = body["messages"]
    if messages[0]["content"] == SUMMARIZE_PROMPT:
        return Reply("summary of the earlier conversation")
    if messages[-1]["role"] == "user":
        return Calls([("todo_write", {"todos": [{"content": "answer", "status": "in_progress"}]})])
    return Reply("answer " + TEXT)


def _dump(messages: list[Any]) -> list[tuple[str, str | None, Any]]:
    return [(m.type, m.id, m.content) for m in messages]


@pytest.mark.parametrize("build", [build_agent_graph, build_subagent_graph, build_clock_graph])
def test_the_graphs_compile_in_both_modes_with_their_own_message_channel(build):
    fast, stock = build(lambda: 1000), build(lambda: 1000, stock=True)
    assert type(fast.channels["messages"]) is GrowingDeltaChannel
    channel = stock.channels["messages"]
    assert type(channel) is DeltaChannel and channel.reducer is add_messages_per_write
    assert fast.get_graph().draw_mermaid() == stock.get_graph().draw_mermaid()


@pytest.mark.parametrize("stock", [False, True])
async def test_each_mode_runs_on_its_own_parts(make_chat, scripted_llm, tmp_path, stock):
    chat = await make_chat(make_settings(scripted_llm, engine={"stock": stock}), data=tmp_path / f"d{stock}")
    saver = chat.engine.graph.checkpointer
    assert type(saver) is (AsyncSqliteSaver if stock else AniaSqliteSaver)
    assert type(saver.serde) is (JsonPlusSerializer if stock else MessageSerializer)
    assert type(chat.engine.services.llm.model()) is (ChatOpenAI if stock else LeanChatOpenAI)


async def test_both_modes_send_the_same_request_bytes(make_chat, tmp_path):
    """The same conversation, a tool round and a compaction included, on two fresh servers (the tool call
    ids are numbered per server): byte for byte the same requests."""
    bodies = []
    for stock in (False, True):
        with ScriptedOpenAI() as server:
            server.script([_model] * 100)
            settings = make_settings(server, engine={"stock": stock},
                                     agent={"context_tokens": 1500, "keep_recent_tokens": 400})
            chat = await make_chat(settings, data=tmp_path / f"d{stock}")
            for i in range(10):
                await chat.say(SESSION, "u1", f"question {i} {TEXT}")
            await chat.engine.close()
            bodies.append([r.raw for r in server.requests])
            assert any(r.messages[0]["content"] == SUMMARIZE_PROMPT for r in server.requests), "it should compact"
    assert bodies[0] == bodies[1]


def _ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND "
                                           "checkpoint_ns = '' ORDER BY checkpoint_id", [SESSION])]


async def _every_checkpoint(db: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The history at each checkpoint as each mode reads it (its own saver, serializer and channel)."""
    out: list[dict[str, Any]] = []
    async with aiosqlite.connect(str(db), isolation_level=None) as conn:
        for stock in (False, True):
            saver = AsyncSqliteSaver(conn) if stock else AniaSqliteSaver(conn, reducers=REDUCERS,
                                                                          serde=MessageSerializer())
            graph = build_agent_graph(lambda: 10**6, checkpointer=saver, stock=stock)
            seen = {}
            for cid in _ids(db):
                snap = await graph.aget_state({"configurable": {"thread_id": SESSION, "checkpoint_id": cid}})
                seen[cid] = _dump(snap.values.get("messages", []))
            out.append(seen)
    return out[0], out[1]


async def test_each_mode_reads_and_continues_what_the_other_stored(make_chat, scripted_llm, tmp_path):
    """Fast, then stock, then fast again on one data directory, across both channels' snapshot copies and
    compactions: at every checkpoint both modes read the same history, and each continues the other's."""
    data = tmp_path / "data"
    scripted_llm.script([_model] * 1000)
    said = 0
    for stock, turns in ((False, 20), (True, 36), (False, 4)):
        settings = make_settings(scripted_llm, engine={"stock": stock},
                                 agent={"context_tokens": 2500, "keep_recent_tokens": 600})
        chat = await make_chat(settings, data=data)
        before = _dump(await session_messages(chat.engine.graph, SESSION))
        if said:
            assert before and before[-1][2].startswith("answer"), "the other mode's history is read"
        for _ in range(turns):
            await chat.say(SESSION, "u1", f"question {said} {TEXT}")
            said += 1
        after = await session_messages(chat.engine.graph, SESSION)
        assert after[-1].content.startswith("answer") and f"question {said - 1}" in after[-4].content
        await chat.engine.close()
    assert sum(r.messages[0]["content"] == SUMMARIZE_PROMPT for r in scripted_llm.requests) >= 2
    with sqlite3.connect(data / CHECKPOINT_FILE) as conn:
        copies = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND "
                              "json_extract(CAST(metadata AS TEXT), '$.counters_since_delta_snapshot.messages') "
                              "IS NULL", [SESSION]).fetchone()[0]
    assert copies >= 3, "both modes' snapshot copies should be in the file"
    fast, stock = await _every_checkpoint(data / CHECKPOINT_FILE)
    assert fast == stock and len(fast) > 100


# --- the version check --------------------------------------------------------------------------------------

def test_the_installed_libraries_are_in_the_checked_ranges():
    check_versions()  # what `make test` installs starts in the fast mode
    assert set(CHECKED) == {"langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
                            "langgraph-checkpoint-postgres", "langchain-core", "langchain-openai", "pydantic"}


def test_an_upgrade_outside_a_range_fails_the_fast_start_with_one_line():
    def upgraded(package: str) -> str | None:
        return "1.3.0" if package == "langgraph" else installed_version(package)

    with pytest.raises(ConfigError) as e:
        engine_mode(Settings(engine={"stock": False}), version_of=upgraded)
    line = str(e.value)
    assert "\n" not in line
    assert line.startswith(f"langgraph 1.3.0 is outside {CHECKED['langgraph']}")
    assert "checkpoints/fold.py" in line and "engine.stock = true" in line and "ANIA_ENGINE__STOCK=1" in line
    # The stock mode runs on the libraries' own code: no range applies.
    assert engine_mode(Settings(engine={"stock": True}), version_of=upgraded) is True


async def test_an_engine_refuses_to_start_fast_on_an_unchecked_version(make_chat, scripted_llm, tmp_path,
                                                                      monkeypatch):
    """The whole start, through the module's documented lookup: one line, before anything is built; the
    stock mode starts on the same libraries."""
    import services.versions

    monkeypatch.setattr(services.versions, "installed_version",
                        lambda p: "4.4.0" if p == "langgraph-checkpoint" else installed_version(p))
    with pytest.raises(ConfigError, match=r"^langgraph-checkpoint 4\.4\.0 is outside .*engine\.stock = true"):
        await make_chat(make_settings(scripted_llm, engine={"stock": False}), data=tmp_path / "fast")
    assert not (tmp_path / "fast" / CHECKPOINT_FILE).exists()
    chat = await make_chat(make_settings(scripted_llm, engine={"stock": True}), data=tmp_path / "stock")
    scripted_llm.script([Reply("hello")])
    assert await chat.say(SESSION, "u1", "hi") == ["hello"]


def test_a_missing_package_is_named():
    with pytest.raises(ConfigError, match=r"^langchain-openai \(not installed\) is outside"):
        check_versions(lambda p: None if p == "langchain-openai" else installed_version(p))


def test_the_session_commands_read_the_switch_alone(tmp_path, monkeypatch):
    monkeypatch.delenv("ANIA_ENGINE__STOCK", raising=False)
    assert stock_mode(tmp_path) is False
    (tmp_path / "ania.toml").write_text("[engine]\nstock = true\n[llm]\nmodel = 3\n")  # the rest is not read
    assert stock_mode(tmp_path, version_of=lambda p: "0.0.1") is True
    (tmp_path / "ania.toml").write_text("[engine\nstock = true\n")  # not TOML: the sessions are read all the same
    assert stock_mode(tmp_path) is False
    monkeypatch.setenv("ANIA_ENGINE__STOCK", "0")  # the environment wins, as in Settings
    with pytest.raises(ConfigError, match="outside"):
        stock_mode(tmp_path, version_of=lambda p: "0.0.1")
    monkeypatch.setenv("ANIA_ENGINE__STOCK", "perhaps")
    with pytest.raises(ConfigError, match=r"invalid setting engine.stock='perhaps'"):
        stock_mode(tmp_path)
