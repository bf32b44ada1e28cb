"""What an MCP server can make the bot send to the model is bounded (hardening): a huge listing, a huge
description or schema, a tool the client cannot call; and what the model may write into mcp_add."""

from __future__ import annotations

import sys

import pytest

from services.mcp.convert import MAX_DESCRIPTION_RUNES, MAX_PARAMETERS_BYTES
from services.mcp.manager import MAX_LISTING_CHARS
from tests.mcp_servers.harness import DEMO, make_env

pytestmark = [pytest.mark.timeout(60)]


def hostile() -> dict:
    return {"command": sys.executable, "args": [DEMO, "stdio", "--hostile"]}


def many(n: int) -> dict:
    return {"command": sys.executable, "args": [DEMO, "stdio", "--many", str(n)]}


async def test_discover_over_3000_tools_is_capped_and_says_how_to_narrow(tmp_path):
    e = await make_env(tmp_path, {"big": many(3000)}, connect_timeout_sec=40)
    try:
        text = (await e.call("mcp_discover")).text
        assert len(text) <= MAX_LISTING_CHARS
        assert "more lines not shown: narrow the list with server=" in text
        assert text.endswith("they stay in your tool list for the rest of this conversation.")
        narrowed = (await e.call("mcp_discover", {"keyword": "get_svc_item7"})).text
        assert "mcp__big__get_svc_item7" in narrowed and "not shown" not in narrowed
    finally:
        await e.close()


async def test_huge_description_is_cut_and_unofferable_tools_are_left_out(tmp_path, caplog):
    e = await make_env(tmp_path, {"h": hostile()})
    try:
        listing = (await e.call("mcp_discover")).text
        assert "mcp__h__needs_task" not in listing  # requires task augmentation: the client cannot call it
        assert "mcp__h__huge_schema" not in listing  # parameters larger than MAX_PARAMETERS_BYTES
        assert "mcp__h__plain" in listing and "mcp__h__wordy" in listing
        assert any("needs_task is not offered" in r.getMessage() for r in caplog.records)
        await e.call("mcp_load", {"names": ["mcp__h__wordy", "mcp__h__plain"]})
        schemas = {s["function"]["name"]: s for s in e.executor("g:1").schemas()}
        assert len(schemas["mcp__h__wordy"]["function"]["description"]) <= MAX_DESCRIPTION_RUNES
        assert (await e.call("mcp__h__wordy")).text == "ok"
        refused = await e.call("mcp_load", {"names": ["mcp__h__needs_task"]})
        assert refused.status == "error" and "no such tool" in refused.text
    finally:
        await e.close()
    assert MAX_PARAMETERS_BYTES < 100_000


@pytest.mark.parametrize("field,value", [
    ("env", ["TOKEN=${ANIA_LLM__API_KEY}"]),
    ("args", ["-c", "echo ${HOME}"]),
    ("headers", ["Authorization=Bearer ${GITHUB_TOKEN}"]),
])
async def test_mcp_add_refuses_variable_references(tmp_path, field, value):
    e = await make_env(tmp_path, {}, manage=True)
    try:
        spec = {"name": "x", "command": sys.executable} if field != "headers" else {"name": "x", "url": "http://127.0.0.1:9/mcp"}
        out = await e.call("mcp_add", {**spec, field: value})
        assert out.status == "error" and "${...} reference" in out.text
        assert (e.manager.servers == {} and not e.manager.path.exists()) or "x" not in e.manager.path.read_text()
    finally:
        await e.close()


async def test_mcp_json_written_by_the_bot_is_private(tmp_path):
    e = await make_env(tmp_path, {}, manage=True)
    try:
        out = await e.call("mcp_add", {"name": "demo", "command": sys.executable, "args": [DEMO, "stdio"],
                                       "env": ["API_TOKEN=secret"]})
        assert out.status == "ok", out.text
        assert e.manager.path.stat().st_mode & 0o777 == 0o600
    finally:
        await e.close()
