"""MCP modes (M2): eager registration, lazy proxy (`mcp_call`, fixed tools array), and loaded tools that
survive a restart of the bot. Servers: the demo server over Streamable HTTP, shared by the module."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core.registry import ToolCall
from tests.mcp_servers.harness import HTTPServer, free_port, make_env, write_config
from tools.mcp import engine_tools

# The module's MCP servers start once: under xdist its tests stay on one worker.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(30), pytest.mark.xdist_group("test_mcp_modes")]

DEMO_TOOLS = ["add", "big", "crash", "echo", "env_var", "fail", "paint", "pid", "slow"]


@pytest.fixture(scope="module")
def web():
    servers = [HTTPServer("streamable-http").spawn(), HTTPServer("streamable-http").spawn()]
    try:
        yield [s.wait() for s in servers]
    finally:
        for s in servers:
            s.stop()


async def test_eager_registers_every_tool_and_keeps_them_in_sync(tmp_path, web):
    e = await make_env(tmp_path, {"web": web[0].spec(), "down": {"url": f"http://127.0.0.1:{free_port()}/mcp"}},
                       lazy_load=False)
    try:
        assert e.names() == [f"mcp__web__{t}" for t in DEMO_TOOLS]  # no discover/load, sorted
        assert [t.name for t in engine_tools(e.manager)] == e.names()
        assert (await e.call("mcp__web__add", {"a": 2, "b": 3})).text == "5"
        await e.manager.control.add_server("more", web[1].spec(filter={"allow": ["echo"]}), persist=False)
        assert "mcp__more__echo" in e.names() and "mcp__more__add" not in e.names()
        assert (await e.call("mcp__more__echo", {"text": "hi"})).text == "hi"
        await e.manager.control.reconnect("web")
        assert (await e.call("mcp__web__add", {"a": 1, "b": 1})).text == "2"  # re-registered: no reload needed
        await e.manager.control.remove_server("more", persist=False)
        assert e.names() == [f"mcp__web__{t}" for t in DEMO_TOOLS]
    finally:
        await e.close()


async def test_proxy_mode_keeps_the_tools_array_fixed(tmp_path, web):
    e = await make_env(tmp_path, {"web": web[0].spec()}, lazy_mode="proxy")
    try:
        assert e.names() == ["mcp_call", "mcp_discover", "mcp_load"]
        before = json.dumps(e.executor("g:1").schemas())
        out = await e.call("mcp_load", {"names": ["mcp__web__add", "mcp__web__paint"]})
        assert out.text == (
            "Loaded 2 tools. Call them with mcp_call(name, arguments); the arguments must match the parameters below.\n\n"
            "### mcp__web__add\nAdd two integers.\n\nReturns the sum as text.\n"
            'Parameters: {"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}\n\n'
            "### mcp__web__paint\nPaint with one of the allowed colors.\n"
            'Parameters: {"type":"object","properties":{"color":{"type":"string","description":"One of: red, green, blue.",'
            '"enum":["red","green","blue"]},"shade":{"type":"integer","default":50}},"required":["color"]}'
        )
        assert json.dumps(e.executor("g:1").schemas()) == before  # the cached prefix is untouched
        assert (await e.call("mcp_call", {"name": "mcp__web__add", "arguments": {"a": 4, "b": 5}})).text == "9"
        as_text = await e.call("mcp_call", {"name": "mcp__web__add", "arguments": '{"a": 1, "b": 1}'})
        assert as_text.text == "2"
        bad = await e.call("mcp_call", {"name": "mcp__web__add", "arguments": {"a": "four"}})
        assert bad.status == "error"
        assert bad.text == ("Error: invalid arguments for \"mcp__web__add\": (arguments): 'b' is a required property; "
                            "a: 'four' is not of type 'integer'. Its parameters: {\"type\":\"object\",\"properties\":"
                            "{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},\"required\":[\"a\",\"b\"]}")
        other = await e.call("mcp_call", {"name": "mcp__web__add", "arguments": {"a": 1, "b": 1}}, "g:2")
        assert other.status == "error"
        assert other.text == ('Error: tool "mcp__web__add" is not loaded in this conversation. Load it first with '
                              'mcp_load(names=["mcp__web__add"]); mcp_discover lists the tools')
        disc = (await e.call("mcp_discover")).text
        assert disc.endswith("Load tools with mcp_load(names=[...]); then call them with mcp_call(name, arguments).")
        assert e.store.kv_get("mcp_loaded:g:1")["names"] == ["mcp__web__add", "mcp__web__paint"]
    finally:
        await e.close()


@pytest.mark.parametrize("mode", ["native", "proxy"])
async def test_loaded_tools_survive_a_restart(tmp_path, web, mode):
    servers = {"web": web[0].spec()}
    e = await make_env(tmp_path, servers, lazy_mode=mode)
    await e.call("mcp_load", {"names": ["mcp__web__echo"]}, "g:1")
    schemas = json.dumps(e.executor("g:1").schemas())
    await e.close()

    e = await make_env(tmp_path, None, lazy_mode=mode)  # same config and data dirs: a restart
    try:
        assert json.dumps(e.executor("g:1").schemas()) == schemas  # byte-identical tools array
        if mode == "native":
            assert "mcp__web__echo" in e.names("g:1") and "mcp__web__echo" not in e.names("g:2")
            out = await e.call("mcp__web__echo", {"text": "after restart"}, "g:1")
        else:
            out = await e.call("mcp_call", {"name": "mcp__web__echo", "arguments": {"text": "after restart"}}, "g:1")
            assert (await e.call("mcp_call", {"name": "mcp__web__echo", "arguments": {"text": "x"}}, "g:2")).status == "error"
        assert (out.status, out.text) == ("ok", "after restart")
    finally:
        await e.close()


async def test_a_restored_tool_whose_server_is_gone_or_down_stays_and_says_why(tmp_path, web):
    e = await make_env(tmp_path, {"web": web[0].spec()})
    await e.call("mcp_load", {"names": ["mcp__web__echo"]}, "g:1")
    schemas = json.dumps(e.executor("g:1").schemas())
    await e.close()

    write_config(tmp_path / "config", {"web": {"url": f"http://127.0.0.1:{free_port()}/mcp"}})  # nothing listens
    e = await make_env(tmp_path, None)
    try:
        assert json.dumps(e.executor("g:1").schemas()) == schemas  # the snapshot keeps it in the list
        out = await e.call("mcp__web__echo", {"text": "x"}, "g:1")
        assert out.status == "error" and out.text.startswith('Error: MCP server "web" is unavailable: cannot connect to')
    finally:
        await e.close()

    write_config(tmp_path / "config", {})
    e = await make_env(tmp_path, None)
    try:
        assert "mcp__web__echo" in e.names("g:1")
        out = await e.call("mcp__web__echo", {"text": "x"}, "g:1")
        assert out.text == ('Error: the MCP server "web" of tool "mcp__web__echo" is not configured any more; '
                            "call mcp_discover to see what is available")
    finally:
        await e.close()


@pytest.mark.parametrize("mode", ["native", "proxy"])
async def test_loads_in_a_throwaway_executor_stay_there(tmp_path, web, mode):
    """A subagent or clock run has its own executor: what it loads is neither persisted nor seen by the session."""
    e = await make_env(tmp_path, {"web": web[0].spec()}, lazy_mode=mode)
    try:
        main = e.ctx("g:1")
        sub = replace(main, executor=e.sessions.fresh(), agent_kind="subagent")
        out = await sub.executor.invoke(ToolCall("1", "mcp_load", {"names": ["mcp__web__echo"]}), sub)
        assert out.status == "ok"
        if mode == "native":
            assert "mcp__web__echo" in [t.name for t in sub.executor.tools()]
            got = await sub.executor.invoke(ToolCall("2", "mcp__web__echo", {"text": "sub"}), sub)
        else:
            got = await sub.executor.invoke(
                ToolCall("2", "mcp_call", {"name": "mcp__web__echo", "arguments": {"text": "sub"}}), sub)
            refused = await e.call("mcp_call", {"name": "mcp__web__echo", "arguments": {"text": "main"}}, "g:1")
            assert refused.status == "error"
        assert got.text == "sub"
        assert "mcp__web__echo" not in e.names("g:1")
        assert e.store.kv_get("mcp_loaded:g:1") is None
    finally:
        await e.close()


async def test_plan_mode_asks_the_proxy_target_whether_it_writes(tmp_path, web):
    from nodes.checked import check_call
    from nodes.gates import plan_mode

    e = await make_env(tmp_path, {"web": web[0].spec()}, lazy_mode="proxy")
    try:
        await e.call("mcp_load", {"names": ["mcp__web__echo", "mcp__web__add"]})
        e.services.plan_mode.set("g:1", True)

        async def gate(name: str) -> dict:
            call = ToolCall("c1", "mcp_call", {"name": name, "arguments": {}})
            ctx = e.ctx("g:1")
            resolved = check_call(call.to_dict(), ctx)
            assert not isinstance(resolved, str), resolved
            return await plan_mode({"call": call.to_dict()}, ctx, resolved)

        assert "blocked" not in await gate("mcp__web__echo")  # read-only (readOnlyHint): plans may read
        assert (await gate("mcp__web__add"))["blocked"].startswith('Blocked: plan mode is on, and "mcp_call"')
        assert "blocked" in await gate("mcp__web__not_loaded")  # unknown target: assume it writes
    finally:
        await e.close()
