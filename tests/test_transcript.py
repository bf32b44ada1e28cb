"""The whole conversation across compactions (checkpoints/transcript.py), in the panel's data and in
`ania sessions export --full`."""

from __future__ import annotations

import asyncio
import json

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ania.cli import main
from ania.fakes.openai_server import Calls, Reply
from checkpoints.sessions import session_messages
from checkpoints.transcript import full_transcript
from tests.conftest import make_settings

SESSION = "f:u1"


async def compacted_chat(scripted_llm, make_chat, turns: int = 6):
    """A session of `turns` user turns, compacted at least twice (each answer is long)."""
    chat = await make_chat(make_settings(scripted_llm, agent={"context_tokens": 500, "keep_recent_tokens": 100}))
    for i in range(turns):
        script = [Calls([("time", {})]), Reply(f"answer {i} " + "x" * 2400)]
        if i >= 1:
            script.insert(0, Reply(f"SUMMARY {i}: the talk so far"))
        scripted_llm.script(script)
        await chat.say(SESSION, "u1", f"question {i}")
    return chat


def _texts(entries) -> list[str]:
    return [e.message.content if isinstance(e.message.content, str) else "" for e in entries]


async def test_the_full_transcript_keeps_every_turn_and_places_each_summary(scripted_llm, make_chat):
    chat = await compacted_chat(scripted_llm, make_chat)
    saver = chat.engine.graph.checkpointer
    latest = await session_messages(saver, SESSION)
    entries = await full_transcript(saver, SESSION)
    assert entries is not None
    users = [t for t in _texts(entries) if "question" in t]
    assert len(users) == 6 and all(f"question {i}" in users[i] for i in range(6))
    assert len([m for m in latest if isinstance(m, HumanMessage) and "question" in str(m.content)]) < 6
    compactions = [i for i, e in enumerate(entries) if e.kind == "compaction"]
    assert len(compactions) >= 2
    for i in compactions:
        e = entries[i]
        assert "SUMMARY" in str(e.message.content) and e.summarized > 0
        before = " ".join(_texts(entries[:i]))
        n = int(str(e.message.content).split("SUMMARY ")[1].split(":")[0])
        assert f"question {n}" in before  # the summary sits after the question whose turn compacted
    calls = [e for e in entries if isinstance(e.message, AIMessage) and e.message.tool_calls]
    results = [e for e in entries if isinstance(e.message, ToolMessage)]
    assert len(calls) == len(results) == 6
    latest_ids = [m.id for m in latest[1:]]  # the latest history: its summary, then what followed it
    assert [e.message.id for e in entries if e.message.id in latest_ids] == latest_ids
    assert entries[-len(latest_ids):][0].message.id in {latest[0].id, latest_ids[0]}
    assert all(e.at is not None and e.checkpoint for e in entries)
    assert await full_transcript(saver, "f:nobody") is None


async def test_export_full_from_the_command_line(scripted_llm, make_chat, tmp_path, monkeypatch, capsys):
    (tmp_path / "config").mkdir(exist_ok=True)
    chat = await compacted_chat(scripted_llm, make_chat, turns=4)
    await chat.engine.close()
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path / "config"))

    def cli(*argv: str) -> tuple[int, str]:
        code = main(list(argv))
        return code, capsys.readouterr().out

    code, out = await asyncio.to_thread(cli, "sessions", "export", SESSION, "--full")
    data = json.loads(out)
    assert code == 0 and data["full"] is True
    kinds = [e["kind"] for e in data["entries"]]
    assert kinds.count("compaction") >= 1
    assert all(f"question {i}" in out for i in range(4))
    summary = next(e for e in data["entries"] if e["kind"] == "compaction")
    assert summary["summary"].startswith("SUMMARY") and "<conversation_summary>" not in summary["summary"]
    code, md = await asyncio.to_thread(cli, "sessions", "export", SESSION, "--full", "--format", "md")
    assert code == 0 and "compacted here:" in md and md.index("question 0") < md.index("compacted here:")
    code, short = await asyncio.to_thread(cli, "sessions", "export", SESSION)
    assert code == 0 and "question 0" not in short  # without --full: the history since the last compaction
    code, _ = await asyncio.to_thread(cli, "sessions", "export", "f:nobody", "--full")
    assert code == 1
