"""The gates listed once (nodes/gate_list.py): through the real loop each gate runs once per call, whether the call
walks the gates in process or runs the gate graph to pause for an approval, and the call is checked once."""

from __future__ import annotations

from collections import Counter

import pytest

import nodes.gate_list as gate_list
from ania.fakes.openai_server import Calls, Reply
from core.registry import SessionExecutor
from graphs.gate import build_gate_graph
from nodes.gate_list import EMIT, GATES, ORDER, destinations
from services.hooks.manager import HookManager
from tests.conftest import make_settings
from tests.test_gates import FakeConfigSet, _ask_then, hooks_file, tool_results


@pytest.fixture
def finished(monkeypatch):
    """(call id, gate) for each gate that finished (an approval's paused run raises, and LangGraph runs the
    gate again on resume: that is the one run that finishes); and the calls checked, by tool name."""
    done: list[tuple[str, str]] = []
    checked: Counter[str] = Counter()
    for name, step in list(gate_list.STEPS.items()):
        async def counted(state, ctx, resolved, _step=step, _name=name):
            out = await _step(state, ctx, resolved)
            done.append((state["call"]["id"], _name))
            return out

        monkeypatch.setitem(gate_list.STEPS, name, counted)
    real_resolve = SessionExecutor.resolve

    def resolve(self, call):
        checked[call.name] += 1
        return real_resolve(self, call)

    monkeypatch.setattr(SessionExecutor, "resolve", resolve)
    return done, checked


def _gates_of(done: list[tuple[str, str]], call_id: str) -> list[str]:
    return [gate for cid, gate in done if cid == call_id]


async def test_each_gate_runs_once_for_a_call_that_pauses_and_one_that_does_not(scripted_llm, make_chat, tmp_path,
                                                                                finished):
    done, checked = finished
    cfg = tmp_path / "config"
    runs = tmp_path / "pre-tool-runs"
    hooks_file(cfg, "PreToolUse", f"echo run >> {runs}", matcher="time")
    settings = make_settings(scripted_llm, approval={"tools": ["time"], "self_approve_in_private": True})
    chat = await make_chat(settings, hooks=HookManager(cfg))
    scripted_llm.script([Calls([("time", {"timezone": "UTC"}), ("todo_write", {"todos": []})]), Reply("done")])
    await _ask_then(chat, "f:u1", "u1", "time?", [("u1", "allow")])
    [time_id, todo_id] = [c["id"] for c in scripted_llm.requests[-1].messages[-3]["tool_calls"]]
    assert "UTC" in tool_results(scripted_llm)[0]
    # The paused call: its gates in the graph, plan_mode once (it ran twice when the branch ran it to decide).
    assert _gates_of(done, time_id) == ["plan_mode", "pre_tool_hooks", "human_approval", "execute"]
    assert runs.read_text() == "run\n"  # the PreToolUse hook ran once, though the branch ran twice (pause, resume)
    assert _gates_of(done, todo_id) == ["plan_mode", "execute"]  # walked in process
    # Checked once per run of its branch: the paused one again when it resumes (the tool table may have changed).
    assert checked == Counter({"time": 2, "todo_write": 1})


async def test_an_admin_approval_and_a_blocked_call_pass_each_gate_once(scripted_llm, make_chat, finished):
    done, checked = finished
    chat = await make_chat(make_settings(scripted_llm, bot={"admins": ["admin", "admin2"]}))
    chat.engine.services.shared_tools.add([FakeConfigSet()])
    await chat.say("g:ops", "admin", "/plan on")
    scripted_llm.script([Calls([("config_set", {"key": "k", "value": "v"})]), Reply("blocked")])
    await chat.say("g:ops", "u5", "change k")
    [blocked_id] = [c["id"] for c in scripted_llm.requests[-1].messages[-2]["tool_calls"]]
    assert _gates_of(done, blocked_id) == ["plan_mode"]  # may pause, so in the graph; blocked at its entry
    assert tool_results(scripted_llm)[0].startswith('Blocked: plan mode is on, and "config_set"')
    await chat.say("g:ops", "admin", "/plan off")
    scripted_llm.script([Calls([("config_set", {"key": "k", "value": "v"})]), Reply("done")])
    await _ask_then(chat, "g:ops", "u5", "change k", [("admin2", "allow")])
    [allowed_id] = [c["id"] for c in scripted_llm.requests[-1].messages[-2]["tool_calls"]]
    assert tool_results(scripted_llm)[-1] == "set k=v"
    assert _gates_of(done, allowed_id) == ["plan_mode", "admin_approval", "execute"]
    assert checked["config_set"] == 3  # blocked: once; allowed: before the pause and when it resumed


def test_the_graph_has_a_node_per_listed_gate_and_their_edges():
    graph = build_gate_graph().get_graph()
    assert set(graph.nodes) == {"__start__", "__end__", *ORDER, EMIT}
    for gate in GATES[:-1]:
        drawn = {e.target for e in graph.edges if e.source == gate.name}
        assert drawn == set(destinations(gate.name)), gate.name
    assert [g.name for g in GATES if g.may_pause] == ["pre_tool_hooks", "admin_approval", "human_approval"]


async def test_the_gate_graph_on_its_own_checks_the_call_itself(scripted_llm, make_chat, finished):
    """Studio's "gate" graph and the benchmark run it with only the call: its nodes check it and list its route."""
    done, _ = finished
    chat = await make_chat(make_settings(scripted_llm))
    ctx = chat.engine.context("f:u1", "u1", chat.bridge("f:u1"))
    gate = build_gate_graph()
    ok = await gate.ainvoke({"call": {"id": "c1", "name": "time", "args": {"timezone": "UTC"}}}, context=ctx)
    assert "UTC" in ok["messages"][-1].content and ok["messages"][-1].response_metadata["ania_status"] == "ok"
    assert _gates_of(done, "c1") == ["plan_mode", "execute"]
    bad = await gate.ainvoke({"call": {"id": "c2", "name": "no_such_tool", "args": {}}}, context=ctx)
    assert bad["messages"][-1].content.startswith('Error: unknown tool "no_such_tool"') and not _gates_of(done, "c2")
