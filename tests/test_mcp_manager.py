"""The MCP manager against real servers (M1-M5, T2): the FastMCP demo server over stdio, Streamable HTTP and
SSE, the published mcp-server-time over stdio, a command that does not exist and one that never speaks.

One manager is shared by the read-only tests of this module (lazy native mode); the tests that kill
servers build their own.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import pytest_asyncio

from tests.mcp_servers.harness import (
    HTTPServer,
    alive,
    hang_spec,
    kill,
    make_env,
    stdio_spec,
    time_spec,
)

# The module's MCP servers start once: under xdist its tests stay on one worker.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(30), pytest.mark.xdist_group("test_mcp_manager")]


@pytest.fixture(scope="module")
def http_servers():
    servers = [HTTPServer("streamable-http").spawn(), HTTPServer("sse").spawn()]  # start side by side
    try:
        yield [s.wait() for s in servers]
    finally:
        for s in servers:
            s.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory, http_servers):
    http_server, sse_server = http_servers
    e = await make_env(tmp_path_factory.mktemp("mcp"), {
        "demo": stdio_spec(),
        "http": http_server.spec(),
        "sse": sse_server.spec(),
        "time": time_spec(),
        "picky": {**stdio_spec(), "filter": {"prefixes": ["e", "a"], "deny": ["add"]}},
        "nope": {"command": "/nonexistent/mcp-server"},
        "hang": hang_spec(),
    }, connect_timeout_sec=10, call_timeout_sec=2)  # 10 s: seven servers start at once, on a busy machine too
    yield e
    await e.close()


async def test_start_reports_every_server_and_the_others_work(env):
    r = env.report
    assert r["demo"] == "ok (9 tools)" and r["http"] == "ok (9 tools)" and r["sse"] == "ok (9 tools)"
    assert r["time"] == "ok (2 tools)" and r["picky"] == "ok (2 tools)"
    assert r["nope"] == 'MCP server "nope" is unavailable: cannot start "/nonexistent/mcp-server": command not found'
    assert r["hang"] == 'MCP server "hang" is unavailable: it did not finish connecting within 10 s'
    assert env.names() == ["mcp_discover", "mcp_load"]  # lazy: no MCP tool is registered up front


async def test_discover_lists_servers_sorted_with_broken_ones_unavailable(env):
    out = await env.call("mcp_discover")
    assert out.status == "ok"
    text = out.text
    headers = [line for line in text.splitlines() if line.startswith("## ")]
    assert headers == [
        '## demo (9 tools)',
        '## hang: unavailable (it did not finish connecting within 10 s)',
        '## http (9 tools)',
        '## nope: unavailable (cannot start "/nonexistent/mcp-server": command not found)',
        '## picky (2 tools)',
        '## sse (9 tools)',
        '## time (2 tools)',
    ]
    demo = text.split("## demo (9 tools)\n")[1].split("\n## ")[0].splitlines()
    assert demo == [
        "- mcp__demo__add: Add two integers.",
        "- mcp__demo__big: Return a text of n characters (default 50,000).",
        "- mcp__demo__crash: Kill the server process in the middle of the call.",
        "- mcp__demo__echo: Echo the text back unchanged.",
        "- mcp__demo__env_var: The value of an environment variable of the server process.",
        "- mcp__demo__fail: Always fail with the given reason.",
        "- mcp__demo__paint: Paint with one of the allowed colors.",
        "- mcp__demo__pid: The server's process id.",
        "- mcp__demo__slow: Sleep for the given seconds, then answer.",
    ]
    assert "- mcp__picky__echo: Echo the text back unchanged." in text  # the filter ran at connect time
    assert text.endswith("Load tools with mcp_load(names=[...]); they stay in your tool list for the rest of this conversation.")
    assert (await env.call("mcp_discover")).text == text  # deterministic


async def test_discover_by_server_and_keyword(env):
    out = (await env.call("mcp_discover", {"server": "time", "keyword": "CONVERT"})).text
    assert out.splitlines()[:3] == ["MCP servers (1):", '## time (1 of 2 tools match "CONVERT")',
                                    "- mcp__time__convert_time: Convert time between timezones"]
    bad = await env.call("mcp_discover", {"server": "nosuch"})
    assert bad.status == "error"
    assert bad.text == 'Error: no MCP server named "nosuch". Servers: demo, hang, http, nope, picky, sse, time'


async def test_load_and_call_over_stdio_http_sse_and_a_published_server(env):
    names = ["mcp__demo__echo", "mcp__http__echo", "mcp__sse__echo", "mcp__time__get_current_time"]
    out = await env.call("mcp_load", {"names": list(reversed(names))}, "g:transports")
    assert out.text == ("Loaded 4 tools: " + ", ".join(names) +
                        ". They are in your tool list from now on in this conversation.")
    assert env.names("g:transports") == sorted(["mcp_discover", "mcp_load", *names])
    for name in names[:3]:
        got = await env.call(name, {"text": f"hi {name}"}, "g:transports")
        assert (got.status, got.text) == ("ok", f"hi {name}")
    now = await env.call("mcp__time__get_current_time", {"timezone": "UTC"}, "g:transports")
    assert now.status == "ok" and json.loads(now.text)["timezone"] == "UTC"
    assert {s: env.manager.servers[s].conn.connects for s in ("demo", "http", "sse", "time")} == \
        {"demo": 1, "http": 1, "sse": 1, "time": 1}  # one persistent session each


async def test_loaded_schema_is_converted_to_the_openai_format(env):
    await env.call("mcp_load", {"names": ["mcp__demo__paint"]}, "g:schema")
    schema = env.executor("g:schema").get("mcp__demo__paint").schema
    assert json.dumps(schema) == json.dumps({
        "type": "function",
        "function": {
            "name": "mcp__demo__paint",
            "description": "Paint with one of the allowed colors.",
            "parameters": {
                "type": "object",
                "properties": {
                    "color": {"type": "string", "description": "One of: red, green, blue.", "enum": ["red", "green", "blue"]},
                    "shade": {"type": "integer", "default": 50},
                },
                "required": ["color"],
            },
        },
    })
    bad = await env.call("mcp__demo__paint", {"color": "pink", "shade": "dark"}, "g:schema")
    assert bad.status == "error"
    assert bad.text == ("Error: invalid arguments for tool \"mcp__demo__paint\": color: 'pink' is not one of "
                        "['red', 'green', 'blue']; shade: 'dark' is not of type 'integer'")
    ok = await env.call("mcp__demo__paint", {"color": "red"}, "g:schema")
    assert ok.text == "painted red at 50"


async def test_big_results_are_truncated_and_errors_are_reported(env):
    await env.call("mcp_load", {"names": ["mcp__http__big", "mcp__http__fail"]}, "g:big")
    big = await env.call("mcp__http__big", {}, "g:big")
    assert big.status == "ok"
    assert big.text == ("0123456789" * 800) + "\n…[truncated: the result had 50000 characters; the first 8000 are shown]"
    fail = await env.call("mcp__http__fail", {"reason": "no paint left"}, "g:big")
    assert fail.status == "error"
    assert fail.text == 'Error: MCP tool "mcp__http__fail" failed: Error executing tool fail: no paint left'


async def test_loading_unknown_or_unavailable_tools_says_why(env):
    out = await env.call("mcp_load", {"names": ["mcp__demo__echo", "mcp__demo__nosuch", "mcp__nope__x", "echo"]}, "g:why")
    assert out.status == "ok"
    assert out.text.splitlines()[1] == (
        'Not loaded: echo (unknown name; MCP tools are named mcp__<server>__<tool>); mcp__demo__nosuch (no such tool '
        'on server demo); mcp__nope__x (server nope is unavailable (cannot start "/nonexistent/mcp-server": command not found)).'
    )
    none = await env.call("mcp_load", {"names": ["mcp__nope__x"]}, "g:why")
    assert none.status == "error" and none.text.startswith("Error: nothing loaded: mcp__nope__x")


async def test_a_second_session_does_not_see_the_first_sessions_tools(env):
    await env.call("mcp_load", {"names": ["mcp__demo__add"]}, "g:first")
    assert "mcp__demo__add" in env.names("g:first")
    assert env.names("g:second") == ["mcp_discover", "mcp_load"]
    out = await env.call("mcp__demo__add", {"a": 1, "b": 2}, "g:second")
    assert out.status == "error" and out.text.startswith('Error: unknown tool "mcp__demo__add". Available tools: ')
    assert "mcp_discover, mcp_load" in out.text and "mcp__demo__add," not in out.text
    assert (await env.call("mcp__demo__add", {"a": 1, "b": 2}, "g:first")).text == "3"


@pytest.mark.parametrize("server", ["demo", "http"])
async def test_a_call_that_outlives_its_deadline_fails_clearly_and_the_session_survives(env, server):
    name = f"mcp__{server}__slow"
    await env.call("mcp_load", {"names": [name, f"mcp__{server}__echo"]}, "g:slow")
    out = await env.call(name, {"seconds": 8}, "g:slow")
    assert out.status == "error"
    assert out.text == (f'Error: MCP tool "slow" of server "{server}" did not answer within 2 s '
                        "(mcp.call_timeout_sec); it may still be running on the server")
    again = await env.call(f"mcp__{server}__echo", {"text": "still here"}, "g:slow")
    assert again.text == "still here"
    assert env.manager.servers[server].conn.connects == 1


async def test_concurrent_calls_share_one_session(env):
    await env.call("mcp_load", {"names": ["mcp__sse__add"]}, "g:many")
    outs = await asyncio.gather(*(env.call("mcp__sse__add", {"a": i, "b": i}, "g:many") for i in range(20)))
    assert [o.text for o in outs] == [str(2 * i) for i in range(20)]
    assert env.manager.servers["sse"].conn.connects == 1


# --- servers that die ---------------------------------------------------------------------------

async def test_stdio_server_killed_between_calls_reconnects_and_retries(tmp_path):
    e = await make_env(tmp_path, {"demo": stdio_spec()})
    try:
        await e.call("mcp_load", {"names": ["mcp__demo__pid", "mcp__demo__echo"]})
        pid = int((await e.call("mcp__demo__pid")).text)
        kill(pid)
        out = await e.call("mcp__demo__echo", {"text": "after"})
        assert (out.status, out.text) == ("ok", "after")  # never sent to the dead process: retried
        new_pid = int((await e.call("mcp__demo__pid")).text)
        assert new_pid != pid and e.manager.servers["demo"].conn.connects == 2
    finally:
        await e.close()
    assert not alive(new_pid)  # close() shut the subprocess down


async def test_stdio_server_dying_during_a_call_is_a_clear_error_then_reconnects(tmp_path):
    e = await make_env(tmp_path, {"demo": stdio_spec()})
    try:
        await e.call("mcp_load", {"names": ["mcp__demo__crash", "mcp__demo__echo"]})
        out = await e.call("mcp__demo__crash")
        assert out.status == "error"
        assert out.text == ('Error: the connection to MCP server "demo" was lost during the call of "crash" '
                            "(connection closed); the call may or may not have run. The connection is re-opened "
                            "at the next call.")
        assert (await e.call("mcp__demo__echo", {"text": "back"})).text == "back"
        assert e.manager.servers["demo"].conn.connects == 2
    finally:
        await e.close()


async def test_http_server_killed_during_a_call_fails_fast_then_reconnects_after_restart(tmp_path):
    srv = HTTPServer("streamable-http").start()
    e = await make_env(tmp_path, {"web": srv.spec()}, call_timeout_sec=20)
    try:
        await e.call("mcp_load", {"names": ["mcp__web__slow", "mcp__web__echo"]})
        e.manager.servers["web"].conn.retry_backoff_sec = 0  # the call after the restart connects again at once
        started = tmp_path / "slow-started"
        call = asyncio.create_task(e.call("mcp__web__slow", {"seconds": 10, "started_file": str(started)}))
        while not started.exists():  # the server says the call is in flight
            await asyncio.sleep(0.01)
        srv.stop()
        out = await asyncio.wait_for(call, 10)
        # "lost during the call", not "did not answer within 20 s": the broken stream was noticed at once.
        assert out.status == "error" and "was lost during the call of \"slow\"" in out.text
        down = await e.call("mcp__web__echo", {"text": "x"})
        assert down.status == "error" and "cannot connect to" in down.text
        srv.start()
        assert (await e.call("mcp__web__echo", {"text": "up again"})).text == "up again"
    finally:
        await e.close()
        srv.stop()


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_http_server_restarted_between_calls_is_transparent(tmp_path, transport):
    """Streamable HTTP answers the old session id with 404 (as after an idle expiry); SSE loses its stream."""
    srv = HTTPServer(transport).start()
    e = await make_env(tmp_path, {"web": srv.spec()})
    try:
        await e.call("mcp_load", {"names": ["mcp__web__echo"]})
        assert (await e.call("mcp__web__echo", {"text": "one"})).text == "one"
        srv.stop()
        srv.start()
        await asyncio.sleep(0.2)
        out = await e.call("mcp__web__echo", {"text": "two"})
        assert (out.status, out.text) == ("ok", "two")
        assert e.manager.servers["web"].conn.connects == 2
    finally:
        await e.close()
        srv.stop()


async def test_an_http_server_that_never_answers_the_handshake_hits_the_connect_deadline(tmp_path):
    """M4: no total or read timeout on the HTTP client, so the connect deadline must guard the handshake."""
    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):  # take the request, never answer, until the client hangs up
            pass
        writer.close()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        e = await make_env(tmp_path, {"mute": {"url": f"http://127.0.0.1:{port}/mcp"}}, connect_timeout_sec=1)
        assert e.report["mute"] == 'MCP server "mute" is unavailable: it did not finish connecting within 1 s'
        await e.close()
    finally:
        server.close()
