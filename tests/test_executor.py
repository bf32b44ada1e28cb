"""Executor layers (T3, T4): sorting, session override, concurrent loads, error results."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from core.registry import SessionExecutor, SharedExecutor, ToolCall
from core.tool import Tool


class P(BaseModel):
    n: int = Field(description="a number")


def make_tool(tool_name: str, desc: str = "d") -> Tool:
    class T(Tool[P]):
        name = tool_name
        description = desc
        params = P

        async def execute(self, args: P, ctx) -> str:
            return f"{self.name}:{args.n}"

    return T()


def test_tools_sorted_and_session_wins():
    shared = SharedExecutor([make_tool("zeta"), make_tool("alpha"), make_tool("mid", "shared")])
    ex = SessionExecutor(shared, [make_tool("mid", "session"), make_tool("beta")])
    names = [s["function"]["name"] for s in ex.schemas()]
    assert names == ["alpha", "beta", "mid", "zeta"]
    mids = [s for s in ex.schemas() if s["function"]["name"] == "mid"]
    assert len(mids) == 1 and mids[0]["function"]["description"] == "session"


def test_sessions_do_not_share_loaded_tools():
    shared = SharedExecutor([make_tool("a")])
    one, two = SessionExecutor(shared), SessionExecutor(shared)
    one.load([make_tool("x")])
    assert [t.name for t in one.tools()] == ["a", "x"]
    assert [t.name for t in two.tools()] == ["a"]


async def test_loading_while_other_tools_read_is_safe():
    """A reader iterates the live table (not a copy) across awaits while loads land: copy-on-write means
    its snapshot never changes under it. With in-place updates this raises "dictionary changed size"."""
    shared = SharedExecutor([make_tool(f"t{i:03d}") for i in range(50)])
    ex = SessionExecutor(shared)
    ex.load([make_tool("s000")])
    seen: list[int] = []

    async def reader():
        for _ in range(20):
            table = ex.own.snapshot()
            size = len(table)
            for _name in table:  # iterating the mapping itself, yielding to the loader in between
                await asyncio.sleep(0)
            assert len(table) == size  # the snapshot a reader holds is never modified
            seen.append(size)

    async def loader():
        for i in range(1, 200):
            ex.load([make_tool(f"s{i:03d}")])
            await asyncio.sleep(0)

    await asyncio.gather(reader(), loader(), reader())
    assert len([t for t in ex.tools() if t.name.startswith("s")]) == 200
    assert len(seen) == 40 and max(seen) > min(seen)  # readers really overlapped with loads


async def test_error_results_name_the_tool():
    ex = SessionExecutor(SharedExecutor([make_tool("count")]))
    bad_json = await ex.invoke(ToolCall("1", "count", {}, args_error="Expecting value at position 0"), None)
    assert bad_json.status == "error" and '"count"' in bad_json.text and "not valid JSON" in bad_json.text
    invalid = await ex.invoke(ToolCall("2", "count", {"n": "many"}), None)
    assert invalid.text.startswith('Error: invalid arguments for tool "count": n:')
    missing = await ex.invoke(ToolCall("3", "count", {}), None)
    assert "n: Field required" in missing.text
    unknown = await ex.invoke(ToolCall("4", "nope", {}), None)
    assert unknown.text == 'Error: unknown tool "nope". Available tools: count.'
    ok = await ex.invoke(ToolCall("5", "count", {"n": 3}), None)
    assert (ok.status, ok.text) == ("ok", "count:3")
