"""A hook that fails never replaces a tool's result, nor fails the round's other calls (issue 22, item 12).

The reported run: the terminal on uvloop, SessionStart and UserPromptSubmit hooks, a PreToolUse hook that
blocks `time` (it exits without reading its stdin) and a PostToolUse hook that runs past its timeout; the
turn answered "Sorry, something went wrong on my side (RuntimeError)" (ania/engine.py's TURN_FAILED).
The cause: uvloop closes a pipe's transport as soon as it sees the read end close, and a write after that
raises RuntimeError, which `_feed` (services/hooks/shell.py) did not catch; it went up through the hook
runner and the gate to the tool-call step and failed the whole round. That needs the hook to exit before
the bot writes its stdin, which a busy loop makes happen: here a tool of the same round holds the loop
while the hook starts, so the run is reproduced every time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from ania.engine import Engine
from ania.entry import MessageEntry
from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.platforms.bridge import ChatBridge
from core.tool import Tool
from services.hooks import HookEvent, HookManager, HookOutcome
from tests.conftest import make_settings
from tests.hook_helpers import write_config
from tests.test_gates import tool_results

uvloop = pytest.importorskip("uvloop")

MARK = "ania-no-time-hook"


class BusyParams(BaseModel):
    label: str = Field(description="a label")


class BusyTool(Tool[BusyParams]):
    """Holds the event loop, as a CPU-heavy step would, once the PreToolUse hook of `time` has started."""

    name = "busy"
    description = "Works hard for a moment."
    params = BusyParams

    async def execute(self, args: BusyParams, ctx) -> str:
        deadline = time.monotonic() + 10
        while not _hook_started() and time.monotonic() < deadline:
            await asyncio.sleep(0)
        time.sleep(0.5)  # the point: the loop is busy while the hook exits
        return f"busy {args.label} done"


def _hook_started() -> bool:
    """Whether a child of this process runs the PreToolUse hook (its command line carries MARK)."""
    pid = os.getpid()
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if MARK in Path(f"/proc/{child}/cmdline").read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _hooks(cfg: Path) -> None:
    write_config(cfg, {
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo started"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "cat > /dev/null; echo prompt seen"}]}],
        "PreToolUse": [{"matcher": "time", "hooks": [
            {"type": "command", "command": f"echo 'no time here' >&2; exit 2 # {MARK}"}]}],
        "PostToolUse": [{"matcher": "get_msg_history", "hooks": [
            {"type": "command", "command": "exec 0<&-; sleep 30", "timeout": 1}]}],
    })


async def _scenario(tmp: Path, llm: ScriptedOpenAI) -> list[str]:
    cfg = tmp / "config"
    cfg.mkdir()
    _hooks(cfg)
    engine = await Engine.start(cfg, tmp / "data", settings=make_settings(llm), hooks=None)
    try:
        engine.services.shared_tools.add([BusyTool()])
        out: list[str] = []

        async def send(text: str) -> None:
            out.append(text)

        entry = MessageEntry(engine, lambda key: ChatBridge(send, tmp / "outbox"))
        llm.script([Calls([("get_msg_history", {"count": 5}), ("time", {}), ("busy", {"label": "a"})]),
                    Reply("all done")])
        task = await entry.submit("f:local", "local", "what happened, and what time is it?")
        assert task is not None
        await task
        return out
    finally:
        await engine.close()


def test_hooks_that_exit_early_or_time_out_on_uvloop_leave_every_tool_result(tmp_path, scripted_llm, caplog):
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("needs /proc/<pid>/task/<tid>/children (a kernel with CONFIG_PROC_CHILDREN)")
    caplog.set_level(logging.WARNING)
    out = uvloop.run(_scenario(tmp_path, scripted_llm))
    assert out == ["all done"]  # not "Sorry, something went wrong on my side (RuntimeError) ..."
    history, blocked, busy = tool_results(scripted_llm)
    assert history == "(no messages)"  # the tool's own answer (the terminal's bridge keeps no history)
    assert blocked == "Blocked by a PreToolUse hook: no time here"
    assert busy == "busy a done"
    logged = [r.getMessage() for r in caplog.records]
    assert "PostToolUse hook `exec 0<&-; sleep 30` timed out after 1 s; its process group was killed" in logged


class BrokenRunner:
    """A hook runner (a plugin's) with a bug in one event: the calls' results must still reach the model."""

    def __init__(self, event: str) -> None:
        self.event = event

    async def run(self, event: HookEvent) -> HookOutcome:
        if event.name == self.event:
            raise RuntimeError("hook runner bug")
        return HookOutcome()

    async def wants(self, event, tool_name=None) -> bool:
        return event in ("PreToolUse", "PostToolUse")


@pytest.mark.parametrize(("event", "time_result"), [
    ("PostToolUse", "UTC"),
    ("PreToolUse", "Blocked: the PreToolUse hooks could not be run (the error is in the bot's log); "
                   "blocked to be safe."),
])
async def test_a_failing_hook_runner_never_replaces_a_result(scripted_llm, make_chat, caplog, event, time_result):
    chat = await make_chat(make_settings(scripted_llm), hooks=BrokenRunner(event))
    scripted_llm.script([Calls([("time", {}), ("todo_write", {"todos": []})]), Reply("fine")])
    assert await chat.say("f:local", "admin", "time?") == ["fine"]
    results = tool_results(scripted_llm)
    assert len(results) == 2 and time_result in results[0]
    assert any(f"the {event} hooks failed for tool time in f:local" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("event", "blocked"), [("PreToolUse", True), ("PostToolUse", False)])
async def test_a_hook_that_cannot_be_run_is_logged_by_name(tmp_path, caplog, event, blocked):
    """An error running the hook itself (here a working directory the OS refuses) is the hook's failure."""
    write_config(tmp_path, {event: [{"hooks": [{"type": "command", "command": "echo hi"}]}]})
    manager = HookManager(tmp_path, cwd=Path("/tmp/bad\0dir"))
    out = await manager.run(HookEvent(event, session_id="f:1", tool_name="time", tool_input={}))
    assert out.blocked is blocked
    assert any(f"{event} hook `echo hi` could not be run (ValueError" in r.getMessage() for r in caplog.records)
    assert out.reason == ("PreToolUse hook `echo hi` could not be run (ValueError); blocked to be safe."
                          if blocked else "")


class BuggyGateTool(Tool[BusyParams]):
    """A tool whose own approval check has a bug: the gate raises before the call could run."""

    name = "buggy_gate"
    description = "A tool with a broken approval check."
    params = BusyParams

    def approval_reason(self, args: BusyParams, ctx) -> str | None:
        raise RuntimeError("approval check bug")

    async def execute(self, args: BusyParams, ctx) -> str:
        raise AssertionError("never run: its gate failed")


async def test_a_bug_in_a_gate_fails_only_its_own_call(scripted_llm, make_chat, caplog):
    """nodes/tool_call.py: the call whose gates raised answers with an error; the round's other call runs."""
    chat = await make_chat(make_settings(scripted_llm))
    chat.engine.services.shared_tools.add([BuggyGateTool()])
    scripted_llm.script([Calls([("buggy_gate", {"label": "a"}), ("time", {})]), Reply("fine")])
    assert await chat.say("f:local", "admin", "go") == ["fine"]
    failed, other = tool_results(scripted_llm)
    assert failed == ('Error: the call to "buggy_gate" failed inside the bot (RuntimeError); the error is in the '
                      "log. It may or may not have run.")
    assert "UTC" in other
    assert any(r.getMessage().startswith("tool call buggy_gate (") and r.exc_info for r in caplog.records)
