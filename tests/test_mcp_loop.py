"""MCP through the real agent loop: the engine, real ChatOpenAI against the scripted server, and the demo
MCP server over Streamable HTTP. Asserts the tools array of each request in eager, lazy native and lazy
proxy modes."""

from __future__ import annotations

import itertools
import json

import pytest

from ania.fakes.openai_server import Calls, Reply
from tests.conftest import make_settings
from tests.mcp_servers.harness import HTTPServer, write_config

# The module's MCP servers start once: under xdist its tests stay on one worker.
pytestmark = [pytest.mark.timeout(30), pytest.mark.xdist_group("test_mcp_loop")]

DEMO = ["add", "big", "crash", "echo", "env_var", "fail", "paint", "pid", "slow"]


@pytest.fixture(scope="module")
def web():
    srv = HTTPServer("streamable-http").start()
    yield srv
    srv.stop()


def tools_bytes(raw: bytes) -> bytes:
    return raw[raw.index(b'"tools":'):]


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


async def chat_with(scripted_llm, make_chat, tmp_path, web, **mcp):
    write_config(tmp_path / "config", {"web": web.spec()})
    return await make_chat(make_settings(scripted_llm, mcp=mcp))


async def test_lazy_native_loads_into_the_session_and_keeps_it(scripted_llm, make_chat, tmp_path, web):
    chat = await chat_with(scripted_llm, make_chat, tmp_path, web)
    scripted_llm.script([
        Calls([("mcp_discover", {"keyword": "integers"})]),
        Calls([("mcp_load", {"names": ["mcp__web__add"]})]),
        Calls([("mcp__web__add", {"a": 2, "b": 3})]),
        Reply("2 + 3 = 5"),
    ])
    assert await chat.say("g:1", "u1", "add 2 and 3") == ["2 + 3 = 5"]
    reqs = scripted_llm.requests
    base = reqs[0].tool_names
    assert "mcp_discover" in base and "mcp_load" in base and not any(n.startswith("mcp__") for n in base)
    assert reqs[1].tool_names == base
    assert reqs[2].tool_names == sorted([*base, "mcp__web__add"])  # loaded, sorted into the list
    assert reqs[3].tool_names == reqs[2].tool_names
    assert tool_results(reqs[3]) == [
        'MCP servers (1):\n## web (1 of 9 tools match "integers")\n- mcp__web__add: Add two integers.\n'
        "Load tools with mcp_load(names=[...]); they stay in your tool list for the rest of this conversation.",
        "Loaded 1 tool: mcp__web__add. It is in your tool list from now on in this conversation.",
        "5",
    ]
    scripted_llm.script([Calls([("mcp__web__add", {"a": 1, "b": 1})]), Reply("2")])
    assert await chat.say("g:1", "u1", "and 1 + 1?") == ["2"]
    assert scripted_llm.requests[4].tool_names == reqs[2].tool_names  # still there in the next turn
    assert tool_results(scripted_llm.requests[5])[-1] == "2"
    scripted_llm.script([Reply("hello")])
    await chat.say("g:other", "u2", "hi")
    assert scripted_llm.requests[6].tool_names == base  # another session does not see it


async def test_eager_sends_every_mcp_tool_from_the_first_request(scripted_llm, make_chat, tmp_path, web):
    chat = await chat_with(scripted_llm, make_chat, tmp_path, web, lazy_load=False)
    scripted_llm.script([Calls([("mcp__web__echo", {"text": "pong"})]), Reply("done")])
    assert await chat.say("g:1", "u1", "ping") == ["done"]
    first, second = scripted_llm.requests
    names = first.tool_names
    assert [n for n in names if n.startswith("mcp")] == [f"mcp__web__{t}" for t in DEMO]
    assert names == sorted(names)
    assert tools_bytes(first.raw) == tools_bytes(second.raw)
    assert tool_results(second) == ["pong"]


async def test_lazy_proxy_never_changes_the_tools_array(scripted_llm, make_chat, tmp_path, web):
    chat = await chat_with(scripted_llm, make_chat, tmp_path, web, lazy_mode="proxy")
    scripted_llm.script([
        Calls([("mcp_load", {"names": ["mcp__web__add"]})]),
        Calls([("mcp_call", {"name": "mcp__web__add", "arguments": {"a": 20, "b": 22}})]),
        Reply("42"),
    ])
    assert await chat.say("g:1", "u1", "add") == ["42"]
    reqs = scripted_llm.requests
    assert "mcp_call" in reqs[0].tool_names and not any(n.startswith("mcp__") for n in reqs[0].tool_names)
    assert len({tools_bytes(r.raw) for r in reqs}) == 1  # byte-identical tools array in every request
    results = tool_results(reqs[2])
    assert results[0].startswith("Loaded 1 tool. Call it with mcp_call(name, arguments)")
    assert '"required":["a","b"]' in results[0]
    assert results[1] == "42"
    for prev, cur in itertools.pairwise(reqs):  # each request extends the previous one
        assert json.dumps(cur.messages[: len(prev.messages)]) == json.dumps(prev.messages)
