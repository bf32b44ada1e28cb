"""The agent loop end to end: real ChatOpenAI against the scripted server, real SQLite checkpoints."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time

from pydantic import BaseModel, Field

from ania.fakes.openai_server import Calls, Fail, Reply, Stall
from checkpoints.factory import thread_config
from core.tool import Tool
from tests.conftest import make_settings


class SleepParams(BaseModel):
    label: str = Field(description="a label")


class SleepTool(Tool[SleepParams]):
    name = "sleepy"
    description = "Sleeps a little and records when it ran."
    params = SleepParams

    def __init__(self, seconds: float = 0.3) -> None:
        self.spans: dict[str, tuple[float, float]] = {}
        self.seconds = seconds

    async def execute(self, args: SleepParams, ctx) -> str:
        start = time.monotonic()
        await asyncio.sleep(self.seconds)
        self.spans[args.label] = (start, time.monotonic())
        return f"slept {args.label}"


class BoomTool(Tool[SleepParams]):
    name = "boom"
    description = "Always raises."
    params = SleepParams

    async def execute(self, args: SleepParams, ctx) -> str:
        raise RuntimeError("kaboom")


def tools_bytes(raw: bytes) -> bytes:
    return raw[raw.index(b'"tools":'):]


async def test_request_prefix_is_byte_stable_over_three_turns(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    for i in range(3):
        scripted_llm.script([Calls([("time", {"timezone": "UTC"})]), Reply(f"answer {i}")])
        assert await chat.say("f:u1", "u1", f"question {i}") == [f"answer {i}"]
    reqs = scripted_llm.requests
    assert len(reqs) == 6
    system = reqs[0].messages[0]
    for prev, cur in itertools.pairwise(reqs):
        assert cur.messages[: len(prev.messages)] == prev.messages
        assert json.dumps(cur.messages[: len(prev.messages)]) == json.dumps(prev.messages)
        assert tools_bytes(cur.raw) == tools_bytes(prev.raw)
        assert cur.messages[0] == system
    assert reqs[0].tool_names == sorted(reqs[0].tool_names)


async def test_parallel_tool_calls_overlap(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    sleepy = SleepTool()
    chat.engine.services.shared_tools.add([sleepy])
    scripted_llm.script([Calls([("sleepy", {"label": "a"}), ("sleepy", {"label": "b"})]), Reply("both done")])
    assert await chat.say("f:u1", "u1", "go") == ["both done"]
    (a0, a1), (b0, b1) = sleepy.spans["a"], sleepy.spans["b"]
    assert a0 < b1 and b0 < a1, "the two calls of one round must run at the same time"
    tool_msgs = [m for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["slept a", "slept b"]  # results in call order


async def test_sessions_are_isolated(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    await chat.say("f:alice", "alice", "my secret is 42")
    await chat.say("g:club", "bob", "what is the secret?")
    last = scripted_llm.requests[-1].messages
    assert all("42" not in str(m.get("content")) for m in last)
    assert last[-1]["content"] == "[bob] what is the secret?"


async def test_session_continues_in_a_new_engine(scripted_llm, make_chat, tmp_path):
    settings = make_settings(scripted_llm)
    first = await make_chat(settings, data=tmp_path / "d")
    await first.say("f:u1", "u1", "remember the word banana")
    await first.engine.close()
    second = await make_chat(settings, data=tmp_path / "d")
    await second.say("f:u1", "u1", "which word?")
    contents = [m.get("content") for m in scripted_llm.requests[-1].messages]
    assert contents[1:] == ["remember the word banana", "echo: remember the word banana", "which word?"]


async def test_bad_arguments_unknown_and_raising_tools_become_results(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    chat.engine.services.shared_tools.add([BoomTool()])
    scripted_llm.script([
        Calls([("time", '{"timezone": '), ("time", {"timezone": 5}), ("missing_tool", {}), ("boom", {"label": "x"})]),
        Reply("recovered"),
    ])
    assert await chat.say("f:u1", "u1", "try tools") == ["recovered"]
    results = [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert len(results) == 4
    # LangChain keeps valid calls before invalid ones, and sends them back in that order.
    assert results[0].startswith('Error: invalid arguments for tool "time": timezone: Input should be a valid string')
    assert results[1].startswith('Error: unknown tool "missing_tool". Available tools: boom, ') and "time, todo_write, webExplore, webSearch." in results[1]
    assert results[2] == 'Error: tool "boom" failed: RuntimeError: kaboom'
    assert results[3] == ('Error: the arguments of tool "time" are not valid JSON (Expecting value at position 13). '
                          "Call it again with a JSON object.")


async def test_endpoint_500_ends_the_turn_and_the_session_goes_on(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Fail(500)])
    out = await chat.say("f:u1", "u1", "hello")
    assert out == ["Sorry, the model endpoint failed (HTTP 500). Please try again in a moment."]
    scripted_llm.script([Reply("fine now")])
    assert await chat.say("f:u1", "u1", "again") == ["fine now"]
    roles = [m["role"] for m in scripted_llm.requests[-1].messages]
    assert roles == ["system", "user", "assistant", "user"]


async def test_endpoint_timeout_ends_the_turn(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, llm={"timeout_sec": 0.5}))
    scripted_llm.script([Stall(2.0)])
    out = await chat.say("f:u1", "u1", "hello")
    assert out == ["Sorry, the model endpoint failed (the request timed out). Please try again in a moment."]
    scripted_llm.script([Reply("back")])
    assert await chat.say("f:u1", "u1", "again") == ["back"]


async def test_max_rounds_gives_a_clear_final_message(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, agent={"max_rounds": 2}))
    scripted_llm.script([Calls([("time", {})]), Calls([("time", {})]), Calls([("time", {})])])
    out = await chat.say("f:u1", "u1", "loop forever")
    assert len(out) == 1 and "agent.max_rounds" in out[0] and "2 rounds" in out[0]
    assert len(scripted_llm.requests) == 2
    assert scripted_llm.pending() == 1


async def test_usage_is_kept_per_turn_and_in_total(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Calls([("time", {})]), Reply("a"), Reply("b")])
    await chat.say("f:u1", "u1", "one")
    state = await chat.engine.graph.aget_state(thread_config("f:u1"))
    first = state.values["turn_usage"]
    assert first["requests"] == 2 and first["total_tokens"] > 0
    await chat.say("f:u1", "u1", "two")
    state = await chat.engine.graph.aget_state(thread_config("f:u1"))
    assert state.values["turn_usage"]["requests"] == 1
    assert state.values["total_usage"]["requests"] == 3


async def test_message_budget_stops_a_slow_tool_and_the_session_stays_consistent(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, bot={"msg_event_timeout_sec": 1.5}))
    sleepy = SleepTool(seconds=30)
    chat.engine.services.shared_tools.add([sleepy])
    scripted_llm.script([Calls([("sleepy", {"label": "slow"}), ("time", {})])])
    out = await chat.say("f:u1", "u1", "take your time")
    assert out == ["Sorry, this took longer than 1.5 s (bot.msg_event_timeout_sec) and was stopped."]
    chat = await make_chat(make_settings(scripted_llm))  # the same data dir, a normal budget
    scripted_llm.script([Reply("ok")])
    assert await chat.say("f:u1", "u1", "next") == ["ok"]
    msgs = scripted_llm.requests[-1].messages
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool", "user"]
    results = [m["content"] for m in msgs if m["role"] == "tool"]
    # It had started: "may or may not have run", never "not run" (the model must not blindly retry it).
    assert results[0].startswith('No result: "sleepy" had started, but the turn ended before it finished '
                                 "(the message's time budget ran out)")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\w+, UTC\+0000\)", results[1])  # sibling kept its result


async def test_corrupt_extension_files_do_not_stop_the_bot(scripted_llm, make_chat, tmp_path, caplog):
    from services.hooks.manager import HookManager

    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "mcp.json").write_text('{"mcpServers": {')
    (cfg / "hooks.json").write_text("{not json")
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(cfg))
    scripted_llm.script([Calls([("time", {})]), Reply("still here")])
    assert await chat.say("f:u1", "u1", "hello") == ["still here"]
    warnings = " ".join(r.getMessage() for r in caplog.records)
    assert "mcp.json is not valid JSON" in warnings and "hooks.json" in warnings
    assert (cfg / "mcp.json").read_text() == '{"mcpServers": {'  # nothing was overwritten


class BrokenStopHooks:
    """A hook runner with a bug in one event: the turn must still end with a reply."""

    async def run(self, event):
        from services.hooks import HookOutcome

        if event.name == "Stop":
            raise RuntimeError("hook runner bug")
        return HookOutcome()

    async def wants(self, event, tool_name=None):
        return False


async def test_an_unexpected_error_in_a_step_still_replies(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm), hooks=BrokenStopHooks())
    scripted_llm.script([Calls([("time", {})]), Reply("never delivered")])
    out = await chat.say("f:u1", "u1", "hello")
    assert out == ["Sorry, something went wrong on my side (RuntimeError); the error is in the log. Please try again."]
    scripted_llm.script([Reply("second")])
    await chat.say("f:u1", "u1", "again")
    roles = [m["role"] for m in scripted_llm.requests[-1].messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]  # history stayed consistent
