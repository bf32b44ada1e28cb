"""Runtime management (M6) and AI self-management (M7): mcp_list / mcp_add / mcp_remove / mcp_reconnect,
persisted to mcp.json, rolled back on a failed write, logged to the operation log."""

from __future__ import annotations

import json
import sys

import pytest

import services.mcp.control
from tests.mcp_servers.harness import (
    DEMO,
    HTTPServer,
    free_port,
    make_env,
    write_config,
)

# The module's MCP servers start once: under xdist its tests stay on one worker.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(30), pytest.mark.xdist_group("test_mcp_manage")]


@pytest.fixture(scope="module")
def web():
    srv = HTTPServer("streamable-http").start()
    yield srv
    srv.stop()


def saved(e) -> dict:
    return json.loads(e.manager.path.read_text())["mcpServers"]


def ops(e) -> list[dict]:
    return [{"session": o["session"], "actor": o["actor"], **o["detail"]} for o in e.store.ops("mcp_manage")]


async def test_management_tools_only_when_enabled(tmp_path):
    off = await make_env(tmp_path / "off", {})
    on = await make_env(tmp_path / "on", {}, manage=True)
    try:
        assert off.names() == []  # no servers and no way to add one: no MCP tools at all
        assert on.names() == ["mcp_add", "mcp_discover", "mcp_list", "mcp_load", "mcp_reconnect", "mcp_remove"]
        assert (await on.call("mcp_list")).text == "No MCP servers are configured."
    finally:
        await off.close()
        await on.close()


async def test_add_persists_registers_at_once_and_is_logged(tmp_path, web):
    e = await make_env(tmp_path, {}, manage=True)
    try:
        out = await e.call("mcp_add", {"name": "web", "url": web.url, "headers": ["X-Token=abc=1"]})
        assert (out.status, out.text) == ("ok", 'Added MCP server "web" (streamable_http, 9 tools). Use mcp_discover to see its tools.')
        assert saved(e) == {"web": {"url": web.url, "transport": "streamable_http", "headers": {"X-Token": "abc=1"}}}
        assert "## web (9 tools)" in (await e.call("mcp_discover")).text
        await e.call("mcp_load", {"names": ["mcp__web__echo"]})
        assert (await e.call("mcp__web__echo", {"text": "live"})).text == "live"
        assert (await e.call("mcp_list")).text == (
            f"MCP servers (1):\n- web: connected, 9 tools, streamable_http: {web.url} (headers: X-Token)")
        assert ops(e) == [{"session": "g:1", "actor": "u1", "action": "add", "server": "web", "ok": True,
                           "transport": "streamable_http", "tools": 9}]
    finally:
        await e.close()


async def test_add_a_stdio_server_with_env_vars(tmp_path):
    e = await make_env(tmp_path, {}, manage=True)
    try:
        out = await e.call("mcp_add", {"name": "local", "command": sys.executable, "args": [DEMO, "stdio"],
                                       "env": ["GREETING=hello world"], "allow": ["env_var"]})
        assert out.text == 'Added MCP server "local" (stdio, 1 tools). Use mcp_discover to see its tools.'
        assert saved(e)["local"] == {"command": sys.executable, "args": [DEMO, "stdio"],
                                     "env": {"GREETING": "hello world"}, "filter": {"allow": ["env_var"]}}
        await e.call("mcp_load", {"names": ["mcp__local__env_var"]})
        assert (await e.call("mcp__local__env_var", {"name": "GREETING"})).text == "hello world"
    finally:
        await e.close()


async def test_add_refuses_bad_names_duplicates_and_dead_servers(tmp_path, web):
    e = await make_env(tmp_path, {"web": web.spec()}, manage=True)
    try:
        for name in ("a__b", "has space", "x" * 33):
            out = await e.call("mcp_add", {"name": name, "url": web.url})
            assert out.status == "error" and "invalid MCP server name" in out.text
        dup = await e.call("mcp_add", {"name": "web", "url": web.url})
        assert dup.text == 'Error: an MCP server named "web" already exists; remove it first or reconnect it'
        dead = await e.call("mcp_add", {"name": "dead", "url": f"http://127.0.0.1:{free_port()}/mcp"})
        assert dead.status == "error" and dead.text.startswith('Error: MCP server "dead" is unavailable: cannot connect to')
        neither = await e.call("mcp_add", {"name": "empty"})
        assert neither.text == 'Error: MCP server "empty": give "command" (stdio) or "url" (streamable_http / sse)'
        badenv = await e.call("mcp_add", {"name": "x", "command": "y", "env": ["NOVALUE"]})
        assert badenv.text == 'Error: env entries must look like KEY=VALUE, got "NOVALUE"'
        assert list(saved(e)) == ["web"] and sorted(e.manager.servers) == ["web"]
        assert [o["ok"] for o in ops(e)] == [False] * 6
    finally:
        await e.close()


async def test_a_failed_write_rolls_the_registration_back(tmp_path, web, monkeypatch):
    e = await make_env(tmp_path, {"web": web.spec()}, manage=True)

    def disk_full(path, data):
        raise OSError(28, "No space left on device")

    try:
        monkeypatch.setattr(services.mcp.control, "write_raw", disk_full)
        add = await e.call("mcp_add", {"name": "more", "url": web.url})
        assert add.text == "Error: could not save mcp.json (No space left on device); the server was not added"
        assert sorted(e.manager.servers) == ["web"] and "more" not in (await e.call("mcp_discover")).text
        remove = await e.call("mcp_remove", {"name": "web"})
        assert remove.text == "Error: could not save mcp.json (No space left on device); the server was not removed"
        await e.call("mcp_load", {"names": ["mcp__web__echo"]})
        assert (await e.call("mcp__web__echo", {"text": "still"})).text == "still"  # still registered, still live
        monkeypatch.undo()
        assert (await e.call("mcp_remove", {"name": "web"})).text == 'Removed MCP server "web".'
        assert saved(e) == {}
        gone = await e.call("mcp__web__echo", {"text": "x"})
        assert gone.text == ('Error: the MCP server "web" of tool "mcp__web__echo" is not configured any more; '
                             "call mcp_discover to see what is available")
        assert [(o["action"], o["ok"]) for o in ops(e)] == [("add", False), ("remove", False), ("remove", True)]
    finally:
        await e.close()


async def test_remove_a_server_that_never_registered_still_succeeds(tmp_path):
    e = await make_env(tmp_path, {"dead": {"url": f"http://127.0.0.1:{free_port()}/mcp"}, "bad": {"url": "nope"}},
                       manage=True)
    try:
        assert e.manager.servers["dead"].conn.status == "failed"
        assert (await e.call("mcp_remove", {"name": "dead"})).text == 'Removed MCP server "dead".'
        assert (await e.call("mcp_remove", {"name": "bad"})).text == 'Removed MCP server "bad".'  # invalid entry
        assert saved(e) == {}
        unknown = await e.call("mcp_remove", {"name": "ghost"})
        assert unknown.text == 'Error: no MCP server named "ghost". Servers: (none)'
    finally:
        await e.close()


@pytest.mark.parametrize("mode", ["native", "proxy"])
async def test_after_a_reconnect_loaded_tools_must_be_loaded_again(tmp_path, web, mode):
    e = await make_env(tmp_path, {"web": web.spec()}, manage=True, lazy_mode=mode)

    async def echo(text: str):
        if mode == "native":
            return await e.call("mcp__web__echo", {"text": text})
        return await e.call("mcp_call", {"name": "mcp__web__echo", "arguments": {"text": text}})

    try:
        await e.call("mcp_load", {"names": ["mcp__web__echo"]})
        assert (await echo("before")).text == "before"
        out = await e.call("mcp_reconnect", {"name": "web"})
        assert out.text == ('Reconnected MCP server "web" (9 tools). Tools loaded from it before must be loaded '
                            "again with mcp_load.")
        stale = await echo("stale")
        assert stale.status == "error"
        assert stale.text == ('Error: the MCP server "web" was reconnected after tool "mcp__web__echo" was loaded, so '
                              'this handle is no longer valid. Load it again with mcp_load(names=["mcp__web__echo"])')
        await e.call("mcp_load", {"names": ["mcp__web__echo"]})
        assert (await echo("after")).text == "after"
        assert e.manager.servers["web"].conn.connects == 1  # a new connection object
        assert [(o["action"], o["ok"], o["server"]) for o in ops(e)] == [("reconnect", True, "web")]
    finally:
        await e.close()


async def test_reconnect_reads_the_definition_of_a_server_that_failed_at_start(tmp_path, web):
    e = await make_env(tmp_path, {"web": {"url": f"http://127.0.0.1:{free_port()}/mcp"}}, manage=True)
    try:
        assert e.report["web"].startswith('MCP server "web" is unavailable: cannot connect to')
        write_config(tmp_path / "config", {"web": web.spec()})  # the admin fixes the file
        assert (await e.call("mcp_reconnect", {"name": "web"})).status == "ok"
        assert "## web (9 tools)" in (await e.call("mcp_discover")).text
        unknown = await e.call("mcp_reconnect", {"name": "ghost"})
        assert unknown.text == 'Error: no MCP server named "ghost" (not in mcp.json either). Servers: web'
    finally:
        await e.close()
