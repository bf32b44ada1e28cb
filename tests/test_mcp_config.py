"""MCP without servers: mcp.json specs, filters (M5), names, schema conversion (T2), result text (M3)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from mcp import types

from services.mcp.config import (
    MCPError,
    ServerSpec,
    ToolFilter,
    check_name,
    load_specs,
    parse_kv_list,
    read_raw,
    write_raw,
)
from services.mcp.convert import (
    MAX_RESULT_RUNES,
    RemoteDef,
    arg_problems,
    convert_schema,
    exposed_name,
    make_validator,
    one_line,
    result_text,
    split_name,
    unique_names,
)
from services.mcp.transport import http_client_factory
from tools.mcp.lazy import MCPCall, MCPDiscover, MCPLoad
from tools.mcp.manage import AddParams, MCPAdd, MCPList, MCPReconnect, MCPRemove


def test_specs_of_each_transport():
    stdio = ServerSpec.parse("time", {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}})
    assert (stdio.transport, stdio.command, stdio.args, stdio.env) == ("stdio", "uvx", ("mcp-server-time",), (("TZ", "UTC"),))
    http = ServerSpec.parse("docs", {"url": "http://h/mcp", "headers": {"A": "b"}})
    assert http.transport == "streamable_http" and http.headers == (("A", "b"),)
    sse = ServerSpec.parse("s", {"url": "http://h/sse", "transport": "sse"})
    assert sse.transport == "sse"
    assert ServerSpec.parse("t", {"url": "http://h/mcp", "type": "http"}).transport == "streamable_http"
    assert ServerSpec.parse("docs", http.to_json()) == http
    assert ServerSpec.parse("time", stdio.to_json()) == stdio
    conn = http.connection("factory")
    assert conn == {"transport": "streamable_http", "url": "http://h/mcp", "headers": {"A": "b"},
                    "httpx_client_factory": "factory"}
    assert stdio.target() == "uvx mcp-server-time (env: TZ)"  # env values are not shown
    assert http.target() == "http://h/mcp (headers: A)"


@pytest.mark.parametrize("raw, message", [
    ({}, 'give "command"'),
    ({"url": "ftp://x"}, "must start with http"),
    ({"url": "http://x", "transport": "stdio"}, "needs the streamable_http or sse"),
    ({"command": "x", "transport": "sse"}, "needs the stdio transport"),
    ({"command": "x", "args": "a b"}, '"args" must be a list'),
    ({"url": "http://x", "transport": "websocket"}, "unknown transport"),
    ({"command": "x", "filter": {"prefix": ["a"]}}, "unknown filter keys: prefix"),
    ({"command": "x", "filter": {"match": "some"}}, 'must be "all" or "any"'),
    ("npx", "must be an object"),
])
def test_bad_specs_say_what_is_wrong(raw, message):
    with pytest.raises(MCPError, match=message):
        ServerSpec.parse("srv", raw)


@pytest.mark.parametrize("name", ["", "a b", "a__b", "x" * 33, "名字", "a.b"])
def test_server_names_are_tool_name_parts(name):
    with pytest.raises(MCPError, match="invalid MCP server name"):
        check_name(name)


def test_valid_names():
    for name in ("time", "my-server_2", "x" * 32, "a_b"):
        assert check_name(name) == name


def test_filters_prefix_allow_keyword_and_combinations():
    tools = {"get_time": "Current time", "set_alarm": "Set an alarm clock", "get_weather": "Weather now",
             "delete_all": "Danger"}

    def kept(raw):
        f = ToolFilter.parse(raw)
        return sorted(n for n, d in tools.items() if f.keeps(n, d))

    assert kept(None) == sorted(tools)
    assert kept({"prefixes": ["get_"]}) == ["get_time", "get_weather"]
    assert kept({"allow": ["set_alarm"]}) == ["set_alarm"]
    assert kept({"keywords": ["CLOCK"]}) == ["set_alarm"]  # case-insensitive, description too
    assert kept({"prefixes": ["get_"], "keywords": ["time"]}) == ["get_time"]  # all (default)
    assert kept({"prefixes": ["get_"], "allow": ["set_alarm"], "match": "any"}) == ["get_time", "get_weather", "set_alarm"]
    assert kept({"deny": ["delete_all"]}) == ["get_time", "get_weather", "set_alarm"]
    assert kept({"prefixes": "get_"}) == ["get_time", "get_weather"]  # one string is a list of one
    spec = ServerSpec.parse("s", {"command": "x", "filter": {"prefixes": ["get_"], "match": "any"}})
    assert spec.to_json()["filter"] == {"prefixes": ["get_"], "match": "any"}


def test_kv_lists():
    assert parse_kv_list(["A=1", "B = x=y", "C="], "env") == {"A": "1", "B": " x=y", "C": ""}
    assert parse_kv_list(["TOKEN=a=b"], "env") == {"TOKEN": "a=b"}
    with pytest.raises(MCPError, match="KEY=VALUE"):
        parse_kv_list(["novalue"], "headers")
    with pytest.raises(MCPError, match="KEY=VALUE"):
        parse_kv_list(["=x"], "env")


def test_add_params_build_the_spec():
    p = AddParams(name="t", command="uvx", args=["mcp-server-time"], env=["TZ=UTC", "A=b=c"], allow=["get_time"])
    assert p.spec() == {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC", "A": "b=c"},
                        "filter": {"allow": ["get_time"]}}
    p = AddParams(name="d", url="http://h/sse", transport="sse", headers=["Authorization=Bearer x"])
    assert p.spec() == {"url": "http://h/sse", "transport": "sse", "headers": {"Authorization": "Bearer x"}}
    assert ServerSpec.parse("d", p.spec()).headers == (("Authorization", "Bearer x"),)


def test_file_round_trip_keeps_unknown_keys_and_reports_bad_entries(tmp_path: Path):
    path = tmp_path / "mcp.json"
    assert read_raw(path) == {"mcpServers": {}}
    path.write_text(json.dumps({"x-note": 1, "mcpServers": {
        "ok": {"command": "a"}, "off": {"command": "b", "disabled": True}, "bad": {"url": "nope"},
        "a__b": {"command": "c"}}}))
    specs, errors = load_specs(path)
    assert list(specs) == ["ok"]
    assert sorted(errors) == ["a__b", "bad"]
    data = read_raw(path)
    data["mcpServers"]["new"] = {"command": "d"}
    write_raw(path, data)
    again = json.loads(path.read_text())
    assert again["x-note"] == 1 and "new" in again["mcpServers"]
    assert [p.name for p in tmp_path.iterdir()] == ["mcp.json"]  # no temp file left behind
    path.write_text("{not json")
    specs, errors = load_specs(path)
    assert specs == {} and list(errors) == ["(file)"] and errors["(file)"].startswith("mcp.json is not valid JSON")
    with pytest.raises(MCPError, match="not valid JSON"):
        read_raw(path)


def test_exposed_names():
    assert exposed_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert exposed_name("s", "a.b/c d") == "mcp__s__a_b_c_d"
    long = exposed_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__server__xxx")
    assert split_name("mcp__time__get_current_time") == ("time", "get_current_time")
    assert split_name("mcp__time") is None and split_name("time") is None
    tools = [types.Tool(name=n, inputSchema={}) for n in ("a.b", "a_b")]
    assert len(unique_names("s", tools)) == 2


def test_schema_conversion_fills_and_orders():
    raw = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Args",
        "properties": {
            "unit": {"enum": ["c", "f"], "title": "Unit", "description": "Temperature unit"},
            "level": {"enum": [1, 2, 3]},
            "place": {"$ref": "#/$defs/Place"},
            "tags": {"items": {"type": "string"}},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["unit", "place"],
        "$defs": {"Place": {"properties": {"city": {"type": "string"}}, "required": ["city"]}},
    }
    out = convert_schema(raw)
    assert out == {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "description": "Temperature unit One of: c, f.", "enum": ["c", "f"]},
            "level": {"type": "integer", "description": "One of: 1, 2, 3.", "enum": [1, 2, 3]},
            "place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opt": {"type": "string"},
        },
        "required": ["place", "unit"],
    }
    assert list(out) == ["type", "properties", "required"]
    assert convert_schema(None) == {"type": "object", "properties": {}}
    assert convert_schema({"type": "object"}) == {"type": "object", "properties": {}}
    assert json.dumps(convert_schema(raw)) == json.dumps(out)  # same bytes every time


def test_recursive_schema_keeps_its_defs():
    raw = {"type": "object", "properties": {"node": {"$ref": "#/$defs/Node"}},
           "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}}}
    out = convert_schema(raw)
    assert out["properties"]["node"] == {"$ref": "#/$defs/Node"} and "Node" in out["$defs"]


def test_argument_problems_are_all_reported_in_order():
    v = make_validator({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                        "required": ["a", "b"]})
    assert arg_problems(v, {"a": 1, "b": "x"}) == []
    assert arg_problems(v, {"a": "x"}) == ["(arguments): 'b' is a required property", "a: 'x' is not of type 'integer'"]
    assert arg_problems(v, []) == ["(arguments): expected a JSON object, got list"]
    assert make_validator({"type": 12}) is None  # an invalid schema is left to the server


def test_results_become_text_and_are_truncated():
    big = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 50_000)])
    text = result_text(big)
    assert text.startswith("x" * MAX_RESULT_RUNES)
    assert text[MAX_RESULT_RUNES:] == "\n…[truncated: the result had 50000 characters; the first 8000 are shown]"
    mixed = types.CallToolResult(content=[
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data="QUJD", mimeType="image/png"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///a", text="body")),
    ])
    assert result_text(mixed) == "hello\n[image image/png, 4 base64 characters]\nbody"
    structured = types.CallToolResult(content=[], structuredContent={"b": 1, "a": "é"})
    assert result_text(structured) == '{"a": "é", "b": 1}'
    assert result_text(types.CallToolResult(content=[])) == "(the tool returned no output)"
    assert len(result_text(types.CallToolResult(content=[types.TextContent(type="text", text="中" * 9000)]))) > 8000


def test_remote_def_round_trip_and_one_line():
    tool = types.Tool(name="get", description="First line.\n\nMore detail.", inputSchema={"type": "object"},
                      annotations=types.ToolAnnotations(readOnlyHint=True))
    d = RemoteDef.from_mcp("srv", tool)
    assert d.name == "mcp__srv__get" and d.read_only
    back = RemoteDef.from_json(d.name, json.loads(json.dumps(d.to_json())))
    assert (back.server, back.tool, back.description, back.parameters, back.read_only) == \
        (d.server, d.tool, d.description, d.parameters, d.read_only)
    assert one_line(d.description) == "First line."
    assert one_line("") == "(no description)"
    assert one_line("y" * 200).endswith("…") and len(one_line("y" * 200)) == 120


def test_plan_mode_flags_and_stable_schemas():
    """Management tools are side-effect tools (G2); discovery and listing are read-only."""
    assert not MCPDiscover.side_effect and not MCPList.side_effect and not MCPLoad.side_effect
    assert MCPAdd.side_effect and MCPRemove.side_effect and MCPReconnect.side_effect and MCPCall.side_effect
    call = MCPCall().schema["function"]["parameters"]
    assert call == {"type": "object", "properties": {
        "name": {"type": "string", "description": "The loaded MCP tool's full name, e.g. mcp__server__tool"},
        "arguments": {"type": "object", "description": "The tool's arguments as a JSON object",
                      "additionalProperties": True}}, "required": ["name"]}
    assert MCPCall().parse({"name": "x", "arguments": '{"a": 1}'}).arguments == {"a": 1}


def test_http_clients_have_no_total_or_read_timeout():
    """M4: a read timeout would cut long-lived streams; connecting and writing are bounded."""
    client = http_client_factory(7.0, lambda e, m: None)(headers={"A": "b"}, timeout=httpx.Timeout(5.0))
    assert (client.timeout.connect, client.timeout.read, client.timeout.write, client.timeout.pool) == (7.0, None, 7.0, 7.0)
    assert client.headers["A"] == "b"
