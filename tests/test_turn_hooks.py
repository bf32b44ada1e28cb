"""Hooks and reminders where the agent graph runs them: prompt, session start, tools, stop."""

from __future__ import annotations

import json

from ania.fakes.openai_server import Calls, Reply
from services.hooks import HookEvent, HookOutcome
from services.hooks.manager import HookManager
from tests.conftest import make_settings


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    async def on_hook(self, hook: HookEvent) -> HookOutcome | None:
        event, payload = hook.name, hook.payload()
        self.events.append((event, payload))
        if event == "UserPromptSubmit" and "password" in (payload.get("prompt") or ""):
            return HookOutcome(blocked=True, reason="no passwords here")
        if event == "SessionStart":
            return HookOutcome(context=("the user prefers metric units",))
        if event == "PostToolUse":
            return HookOutcome(context=("checked by audit",))
        return None


async def test_prompt_block_session_context_and_tool_hooks(scripted_llm, make_chat, tmp_path):
    rec = Recorder()
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(tmp_path / "config", [rec]))
    scripted_llm.script([Calls([("time", {})]), Reply("done")])
    assert await chat.say("g:1", "u1", "hello") == ["done"]
    first = scripted_llm.requests[0].messages[-1]["content"]
    assert first == "[u1] hello\n\n<hook_context>\nthe user prefers metric units\n</hook_context>"
    assert "<hook_context>checked by audit</hook_context>" in scripted_llm.requests[1].messages[-1]["content"]
    assert [e for e, _ in rec.events] == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    pre = dict(rec.events[2][1])
    assert (pre["tool_name"], pre["tool_input"], pre["session_id"], pre["agent_kind"]) == ("time", {}, "g:1", "main")
    n = len(scripted_llm.requests)
    assert await chat.say("g:1", "u1", "my password is hunter2") == ["Your message was not processed: no passwords here"]
    assert len(scripted_llm.requests) == n  # the model never saw it
    scripted_llm.script([Reply("ok")])
    await chat.say("g:1", "u1", "next")
    sent = json.dumps(scripted_llm.requests[-1].messages)
    assert "hunter2" not in sent and "metric units" in sent  # session context once, in its own turn
    assert sent.count("metric units") == 1


async def test_todo_reminder_only_when_the_list_changed(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    todos = [{"content": "write tests", "status": "in_progress"}, {"content": "ship", "status": "pending"}]
    scripted_llm.script([Calls([("todo_write", {"todos": todos})]), Reply("listed")])
    await chat.say("f:u1", "u1", "plan")
    await chat.say("f:u1", "u1", "continue")
    assert "<todo_reminder>" in scripted_llm.requests[-1].messages[-1]["content"]
    await chat.say("f:u1", "u1", "and again")
    assert "<todo_reminder>" not in scripted_llm.requests[-1].messages[-1]["content"]
    done = [{"content": "write tests", "status": "completed"}, {"content": "ship", "status": "in_progress"}]
    scripted_llm.script([Calls([("todo_write", {"todos": done})]), Reply("progress")])
    await chat.say("f:u1", "u1", "work")
    await chat.say("f:u1", "u1", "status?")
    last = scripted_llm.requests[-1].messages[-1]["content"]
    assert "<todo_reminder>" in last and "ship" in last
    for prev, cur in zip(scripted_llm.requests, scripted_llm.requests[1:], strict=False):
        assert cur.messages[: len(prev.messages)] == prev.messages  # reminders never break the prefix


async def test_bash_paths_through_the_loop(scripted_llm, make_chat):
    settings = make_settings(scripted_llm, bash={"enable": True, "blacklist": [r"^rm\s"], "whitelist": [r"^echo\b"]},
                             approval={"self_approve_in_private": True})  # the prompt in the requester's chat
    chat = await make_chat(settings, approval_timeout_sec=0.3)
    scripted_llm.script([Calls([("bash", {"command": "echo hi"}), ("bash", {"command": "echo x; rm -rf /tmp/nothing"}),
                                ("bash", {"command": "pwd"})]), Reply("ran")])
    out = await chat.say("f:u1", "u1", "shell stuff")
    results = [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert results[0] == "hi"
    assert results[1].startswith('Error: bash command refused: it matches the blacklist pattern "^rm\\s"')
    assert results[2] == 'Not run: no approval for "bash" (timed out after 0.3 s).'
    assert sum(1 for t in out if t.startswith('Tool "bash" wants to run with {"command": "pwd"}')) == 1
    chat = await make_chat(settings.model_copy(update={"approval": settings.approval.model_copy(
        update={"enable": False})}))
    scripted_llm.script([Calls([("bash", {"command": "pwd"})]), Reply("ran")])
    await chat.say("f:u1", "u1", "again")
    assert [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"][-1].endswith("workspace")
