"""No value in a model's tool call (or its text) may break a turn or its session (issue 22, item 11).

Each case goes through the real engine and the real SQLite saver (data/checkpoints.db) with the scripted
model: an unusable argument becomes a clear tool result, the call does not run, the turn goes on, a second
turn of the same session works, and the session's history loads as `ania sessions history` reads it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ania.fakes.openai_server import Calls, Reply
from checkpoints.factory import open_checkpointer
from checkpoints.history import history_lines
from core.tool import Tool
from tests.conftest import make_settings
from tests.test_agent_loop import SleepParams
from tests.test_gates import tool_results


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


UNUSABLE = 'Error: the arguments of "{tool}" cannot be used: {why}. Call it again with other values.'

CASES: dict[str, tuple[str, Any, str]] = {
    # name: (tool, args, the reason the model reads)
    "huge integer": ("subagent_run", {"task": "x", "timeout_sec": 10**30},
                     'argument "timeout_sec": integer too large (beyond 64 bits)'),
    "huge negative integer": ("subagent_run", {"task": "x", "timeout_sec": -(10**20)},
                              'argument "timeout_sec": integer too large (beyond 64 bits)'),
    "not a number": ("subagent_run", {"task": "x", "timeout_sec": float("nan")},
                     'argument "timeout_sec": not a finite number'),
    "infinity": ("subagent_run", {"task": "x", "timeout_sec": float("inf")},
                 'argument "timeout_sec": not a finite number'),
    "deep nesting": ("todo_write", {"todos": nested(500)}, 'argument "todos": nested deeper than 32 levels'),
    "lone surrogate": ("todo_write", {"todos": [{"content": "fix \ud800 this", "status": "pending"}]},
                       'argument "todos[0].content": text with a lone surrogate (\\ud800), not valid Unicode'),
    "lone surrogate key": ("time", {"\udc80": 1}, 'argument "\\udc80": text with a lone surrogate (\\udc80), '
                                                  "not valid Unicode"),
    "huge string": ("todo_write", {"todos": [{"content": "x" * 2_000_000, "status": "pending"}]},
                    "the arguments are 2000049 characters long (at most 1000000)"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_an_unusable_argument_is_told_and_the_session_goes_on(scripted_llm, make_chat, tmp_path, case):
    tool, args, why = CASES[case]
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Calls([(tool, args), ("time", {})]), Reply("went on")])
    assert await chat.say("f:local", "admin", "go") == ["went on"]
    unusable, other = sorted(tool_results(scripted_llm), key=lambda r: "UTC" in r)
    assert unusable == UNUSABLE.format(tool=tool, why=why)
    assert "UTC" in other  # the round's other call ran
    assert chat.engine.services.todos.get("f:local") == []  # the unusable call did not run
    scripted_llm.script([Calls([("todo_write", {"todos": [{"content": "ok", "status": "pending"}]})]),
                         Reply("second turn")])
    assert await chat.say("f:local", "admin", "again") == ["second turn"]
    scripted_llm.script([Reply("third turn")])
    assert await chat.say("f:local", "admin", "and again") == ["third turn"]
    sent = json.dumps(scripted_llm.requests[-1].messages)  # the whole history went to the model as JSON
    assert "went on" in sent and "second turn" in sent
    await _history_loads(chat, tmp_path)


async def _history_loads(chat: Any, tmp_path: Any) -> None:
    await chat.engine.close()
    async with open_checkpointer(tmp_path / "data") as saver:
        lines = await history_lines(saver, "f:local")
    assert len(lines) > 5 and all(isinstance(line.summary, str) for line in lines)


@pytest.mark.parametrize("where", ["reply", "with calls"])
async def test_a_lone_surrogate_in_the_model_text_is_replaced(scripted_llm, make_chat, tmp_path, where):
    chat = await make_chat(make_settings(scripted_llm))
    bad = "half \ud83d of an emoji"
    script = [Reply(bad)] if where == "reply" else [Calls([("time", {})], text=bad), Reply("done")]
    scripted_llm.script(script)
    out = await chat.say("f:local", "admin", "go")
    assert out[0] == "half \ufffd of an emoji"
    scripted_llm.script([Reply("second turn")])
    assert await chat.say("f:local", "admin", "again") == ["second turn"]
    await _history_loads(chat, tmp_path)


async def test_a_tool_result_with_a_lone_surrogate_is_stored(scripted_llm, make_chat, tmp_path):
    """A tool's own text (an MCP server's, a file's name) can carry one too: stored with U+FFFD instead."""
    chat = await make_chat(make_settings(scripted_llm))
    chat.engine.services.shared_tools.add([HalfEmoji()])
    scripted_llm.script([Calls([("half_emoji", {"label": "a"})]), Reply("done")])
    assert await chat.say("f:local", "admin", "go") == ["done"]
    assert tool_results(scripted_llm) == ["a: \ufffd"]
    scripted_llm.script([Reply("second turn")])
    assert await chat.say("f:local", "admin", "again") == ["second turn"]
    await _history_loads(chat, tmp_path)


class HalfEmoji(Tool[SleepParams]):
    name = "half_emoji"
    description = "Answers half of a surrogate pair."
    params = SleepParams

    async def execute(self, args: SleepParams, ctx: Any) -> str:
        return f"{args.label}: \ud83d"
