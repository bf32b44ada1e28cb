"""Compaction: summarize older turns above agent.context_tokens; keep pairs; append-only afterwards."""

from __future__ import annotations

import itertools

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ania.fakes.openai_server import Calls, Reply
from checkpoints.factory import thread_config
from nodes.compact import SUMMARIZE_PROMPT, cut_index
from tests.conftest import make_settings


def _ai_call(i: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"id": f"c{i}", "name": "time", "args": {}}])


def _pairs_intact(messages) -> bool:
    called = set()
    for m in messages:
        if isinstance(m, AIMessage):
            called |= {c["id"] for c in m.tool_calls}
        if isinstance(m, ToolMessage) and m.tool_call_id not in called:
            return False
    return True


def test_cut_never_separates_a_call_from_its_result():
    long = "z" * 2000
    one_turn = [HumanMessage("go")]
    for i in range(6):
        one_turn += [_ai_call(i), ToolMessage(long, tool_call_id=f"c{i}")]
    one_turn.append(AIMessage("done"))
    cut = cut_index(one_turn, keep_tokens=100)
    assert cut > 0 and not isinstance(one_turn[cut], ToolMessage)
    assert _pairs_intact(one_turn[cut:])
    turns = [HumanMessage("a" * 900), _ai_call(1), ToolMessage("r", tool_call_id="c1"), AIMessage("x"),
             HumanMessage("b" * 900), AIMessage("y"), HumanMessage("c")]
    assert isinstance(turns[cut_index(turns, keep_tokens=100)], HumanMessage)


async def test_compaction_summarizes_and_history_is_append_only_again(scripted_llm, make_chat):
    settings = make_settings(scripted_llm, agent={"context_tokens": 500, "keep_recent_tokens": 100})
    chat = await make_chat(settings)
    scripted_llm.script([Calls([("time", {})]), Reply("first answer " + "x" * 2400)])
    await chat.say("f:u1", "u1", "first question")
    before = len(scripted_llm.requests)
    scripted_llm.script([Reply("SUMMARY: asked the time, got a long answer"), Calls([("time", {})]), Reply("second answer")])
    assert await chat.say("f:u1", "u1", "second question " + "y" * 300) == ["second answer"]
    summary_req, *after = scripted_llm.requests[before:]
    assert summary_req.messages[0]["content"] == SUMMARIZE_PROMPT and not summary_req.tools
    assert "first question" in summary_req.messages[1]["content"]
    first_after = after[0].messages
    assert first_after[0]["role"] == "system"
    assert first_after[1]["content"].startswith("<conversation_summary>\nSUMMARY: asked the time")
    assert first_after[2]["content"].startswith("second question")
    assert all("first question" not in str(m.get("content")) for m in first_after)
    scripted_llm.script([Reply("third answer")])
    await chat.say("f:u1", "u1", "third")
    after.append(scripted_llm.requests[-1])
    for prev, cur in itertools.pairwise(after):
        assert cur.messages[: len(prev.messages)] == prev.messages  # append-only again
    state = await chat.engine.graph.aget_state(thread_config("f:u1"))
    assert _pairs_intact(state.values["messages"])


async def test_failed_summary_keeps_the_history(scripted_llm, make_chat):
    from ania.fakes.openai_server import Fail

    settings = make_settings(scripted_llm, agent={"context_tokens": 500, "keep_recent_tokens": 100})
    chat = await make_chat(settings)
    await chat.say("f:u1", "u1", "first " + "q" * 2400)
    scripted_llm.script([Fail(500), Reply("still answered")])
    assert await chat.say("f:u1", "u1", "second") == ["still answered"]
    assert "first " in scripted_llm.requests[-1].messages[1]["content"]
