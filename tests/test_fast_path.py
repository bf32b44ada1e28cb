"""The fast path for calls that cannot pause (nodes/tool_call.py): same results and same graph events as the
gate graph, which still runs every call that may wait for an approval."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

import nodes.tool_call as tool_call_module
from ania.fakes.openai_server import Calls, Reply
from checkpoints.factory import thread_config
from nodes.prompt import user_message
from services.hooks import HookManager
from tests.conftest import make_settings
from tests.test_gates import Marker, hooks_file, tool_results

CLOCK = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def _dump(value: Any) -> Any:
    """Messages without ids, token counts aside (ids and the scripted server's counts differ run to run), and
    the time tool's clock masked (the two runs may fall in different seconds)."""
    if isinstance(value, str):
        return CLOCK.sub("<time>", value)
    if isinstance(value, BaseMessage):
        return (value.type, _dump(value.content), getattr(value, "status", None), value.response_metadata.get("ania_status"),
                [c["name"] for c in getattr(value, "tool_calls", [])])
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items() if k not in ("turn", "turn_usage", "total_usage")}
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    return value


@pytest.fixture
def count_walks(monkeypatch):
    walks: list[dict] = []
    real = tool_call_module.walk_gates

    async def counted(state, first, ctx):
        walks.append(state["call"])
        return await real(state, first, ctx)

    monkeypatch.setattr(tool_call_module, "walk_gates", counted)
    return walks


SCENARIOS = {
    "plain": [Calls([("time", {"timezone": "UTC"})]), Reply("done")],
    "four in parallel": [Calls([("time", {"timezone": z}) for z in ("UTC", "Asia/Tokyo", "Europe/Paris", "UTC")]),
                         Reply("done")],
    "unknown tool": [Calls([("no_such_tool", {})]), Reply("done")],
    "bad arguments": [Calls([("time", '{"timezone": ')]), Reply("done")],
    "plan mode blocks": [Calls([("write_note", {"key": "a"})]), Reply("done")],
}


async def _events(chat, session: str, script: list, monkeypatch, gate_graph: bool) -> list[Any]:
    """The agent graph's own stream (what Studio shows) for one turn, and the tool results the model read."""
    if gate_graph:  # every call through the gate graph, as a call that may pause goes
        monkeypatch.setattr(tool_call_module, "may_pause", lambda first: True)
    engine = chat.engine
    chat.scripted.script(list(script))
    ctx = engine.context(session, "admin", chat.bridge(session))
    events = []
    async for mode, chunk in engine.graph.astream(
            {"messages": [user_message(session, "admin", "go")]}, thread_config(session), context=ctx,
            stream_mode=["updates", "values"], durability="sync"):
        events.append((mode, _dump(chunk)))
    state = await engine.graph.aget_state(thread_config(session))
    return [_branches_sorted(events), _dump(state.values), _dump(tool_results(chat.scripted))]


def _branches_sorted(events: list[Any]) -> list[Any]:
    """Parallel branches of one step report in the order they finish, which neither path fixes: each run of
    consecutive `tool_call` updates is compared as a sorted list."""
    out: list[Any] = []
    run: list[Any] = []
    for event in [*events, None]:
        if event is not None and event[0] == "updates" and "tool_call" in event[1]:
            run.append(event)
            continue
        out += sorted(run, key=repr)
        run = []
        if event is not None:
            out.append(event)
    return out


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_fast_path_has_the_gate_graphs_results_and_events(name, scripted_llm, make_chat, monkeypatch,
                                                                 count_walks):
    chat = await make_chat(make_settings(scripted_llm))
    chat.scripted = scripted_llm
    chat.engine.services.shared_tools.add([Marker()])
    if name == "plan mode blocks":
        await chat.say("f:admin", "admin", "/plan on")
        await chat.say("f:slow", "admin", "/plan on")
    fast = await _events(chat, "f:admin", SCENARIOS[name], monkeypatch, gate_graph=False)
    walked = len(count_walks)
    slow = await _events(chat, "f:slow", SCENARIOS[name], monkeypatch, gate_graph=True)
    assert fast == slow
    assert walked == len(SCENARIOS[name][0].calls) and len(count_walks) == walked  # the second run took no walk


async def test_post_tool_hooks_run_on_the_fast_path(scripted_llm, make_chat, tmp_path, count_walks):
    cfg = tmp_path / "config"
    answer = '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "checked"}}'
    hooks_file(cfg, "PostToolUse", f"echo '{answer}'")
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(cfg))
    scripted_llm.script([Calls([("time", {"timezone": "UTC"})]), Reply("done")])
    assert await chat.say("f:u1", "u1", "time?") == ["done"]
    [result] = tool_results(scripted_llm)
    assert result.endswith("<hook_context>checked</hook_context>") and len(count_walks) == 1


async def test_calls_that_may_pause_still_run_the_gate_graph(scripted_llm, make_chat, count_walks, tmp_path):
    """An approval pauses and resumes at its gate: only the gate graph (on the checkpointer) can do that."""
    from tests.test_gates import _ask_then

    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"], "self_approve_in_private": True}))
    scripted_llm.script([Calls([("time", {"timezone": "UTC"}), ("todo_write", {"todos": [
        {"content": "x", "status": "pending"}]})]), Reply("done")])
    await _ask_then(chat, "f:u1", "u1", "time?", [("u1", "allow")])
    assert [c["name"] for c in count_walks] == ["todo_write"]  # the approved call went through the gate graph
    results = tool_results(scripted_llm)
    assert "UTC" in results[0] and results[1].startswith("Todo list updated")
