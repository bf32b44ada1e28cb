"""The gate pipeline through the real loop: plan mode, hooks, admin and human approval (G1-G5)."""

from __future__ import annotations

import asyncio
import json
import re
import time

from pydantic import BaseModel, Field

from ania.fakes.openai_server import Calls, Reply
from core.tool import Tool
from services.hooks.manager import HookManager
from tests.conftest import make_settings


class KV(BaseModel):
    key: str = Field(description="setting key")
    value: str = Field("", description="new value")


class FakeConfigSet(Tool[KV]):
    """Stands in for config_set (a later issue): a tool that changes configuration."""

    name = "config_set"
    description = "Change a setting."
    params = KV
    side_effect = True
    changes_config = True

    async def execute(self, args: KV, ctx) -> str:
        return f"set {args.key}={args.value}"


class Marker(Tool[KV]):
    """A side-effect tool that records that it ran."""

    name = "write_note"
    description = "Write a note."
    params = KV
    side_effect = True

    def __init__(self) -> None:
        self.ran: list[tuple[str, float]] = []

    async def execute(self, args: KV, ctx) -> str:
        self.ran.append((args.key, time.monotonic()))
        return f"wrote {args.key}"


def tool_results(server) -> list[str]:
    return [m["content"] for m in server.requests[-1].messages if m["role"] == "tool"]


async def wait_for(cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


def hooks_file(cfg, event: str, command: str, matcher: str = "") -> None:
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "hooks.json").write_text(json.dumps(
        {"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}}))


async def test_plan_mode_blocks_side_effects_before_hooks(scripted_llm, make_chat, tmp_path):
    cfg = tmp_path / "config"
    marker = tmp_path / "hook-ran"
    hooks_file(cfg, "PreToolUse", f"touch {marker}")
    chat = await make_chat(make_settings(scripted_llm), hooks=HookManager(cfg))
    note = Marker()
    chat.engine.services.shared_tools.add([note])
    assert await chat.say("f:admin", "admin", "/plan on") == ["Plan mode is on."]
    scripted_llm.script([Calls([("write_note", {"key": "a"}), ("todo_write", {"todos": [
        {"content": "plan it", "status": "in_progress"}]})]), Reply("planned")])
    assert await chat.say("f:admin", "admin", "do it") == ["planned"]
    results = tool_results(scripted_llm)
    assert results[0].startswith('Blocked: plan mode is on, and "write_note" has side effects')
    assert results[1].startswith("Todo list updated: 1 item")
    assert note.ran == []
    assert marker.exists()  # todo_write passed plan mode and reached the hooks
    marker.unlink()
    scripted_llm.script([Calls([("write_note", {"key": "a"})]), Reply("x")])
    await chat.say("f:admin", "admin", "again")
    assert not marker.exists(), "a plan-mode block must never reach the hooks"
    assert await chat.say("f:u9", "u9", "/plan off") == ["Only an admin can change plan mode."]


async def test_hook_block_never_asks_for_approval(scripted_llm, make_chat, tmp_path):
    cfg = tmp_path / "config"
    hooks_file(cfg, "PreToolUse", "echo 'no time for you' >&2; exit 2", matcher="time")
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"]}), hooks=HookManager(cfg))
    scripted_llm.script([Calls([("time", {})]), Reply("ok")])
    out = await chat.say("f:u1", "u1", "time?")
    assert out == ["ok"]  # no approval prompt was sent
    assert tool_results(scripted_llm) == ["Blocked by a PreToolUse hook: no time for you"]


async def _ask_then(chat, session, requester, text, replies):
    """Start a turn, and answer each approval prompt with the next (user, reply) pair."""
    task = await chat.entry.submit(session, requester, text)
    answers = []
    for user, reply in replies:
        await wait_for(lambda: chat.engine.services.approvals.is_waiting(session))
        answers.append(await chat.say(session, user, reply))
    await task
    return answers


async def test_requester_approves(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"], "self_approve_in_private": True}))
    scripted_llm.script([Calls([("time", {"timezone": "Asia/Shanghai"})]), Reply("done")])
    answers = await _ask_then(chat, "f:u1", "u1", "time?", [("u1", "allow")])
    assert re.fullmatch(r'Allowed: "time" \([0-9a-f]{4}\)\.', answers[0][0])
    prompt = chat.out["f:u1"][0]
    assert prompt.startswith('Tool "time" wants to run with {"timezone": "Asia/Shanghai"}')
    assert "Asia/Shanghai" in tool_results(scripted_llm)[0] and chat.out["f:u1"][-1] == "done"
    ops = chat.engine.services.store.ops("tool_approval")
    assert [(o["actor"], o["detail"]["decision"]) for o in ops] == [("u1", "allow")]


async def test_admin_approves_in_a_group_and_a_stranger_is_refused(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"]}))
    scripted_llm.script([Calls([("time", {})]), Reply("done")])
    answers = await _ask_then(chat, "g:club", "u1", "time?", [("u2", "allow"), ("u1", "allow"), ("admin", "同意")])
    assert answers[0] == ["You cannot answer this approval: only the person who asked or an admin can decide."]
    assert answers[1] == ["You cannot answer this approval: in a group only an admin can approve "
                          "(approval.self_approve_in_groups is off)."]
    assert answers[2][0].startswith('Allowed: "time"')
    assert not tool_results(scripted_llm)[0].startswith("Not run")


async def test_deny_and_ordinary_messages_are_not_taken(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"], "self_approve_in_private": True}))
    scripted_llm.script([Calls([("time", {})]), Reply("understood"), Reply("second")])
    task = await chat.entry.submit("f:u1", "u1", "time?")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:u1"))
    queued = await chat.entry.submit("f:u1", "u1", "by the way, hello")  # not an approval word: queued
    assert queued is not None
    await chat.say("f:u1", "u1", "拒绝")
    await task
    await queued
    first_turn_results = [m["content"] for m in scripted_llm.requests[1].messages if m["role"] == "tool"]
    assert first_turn_results == ['Not run: user u1 denied the call to "time".']


async def test_config_change_needs_another_admin(scripted_llm, make_chat):
    settings = make_settings(scripted_llm, bot={"admins": ["admin", "admin2"]})
    chat = await make_chat(settings)
    chat.engine.services.shared_tools.add([FakeConfigSet()])
    scripted_llm.script([Calls([("config_set", {"key": "agent.max_rounds", "value": "5"})]), Reply("changed")])
    task = await chat.entry.submit("g:ops", "admin", "set max rounds to 5")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:admin2"))
    assert chat.out["f:admin2"][0].startswith('Tool "config_set" wants to run')  # prompt went to the other admin
    assert await chat.say("g:ops", "admin", "allow") == [
        "You cannot answer this approval: the requester cannot approve their own configuration change."]
    assert await chat.say("g:ops", "u7", "allow") == [
        "You cannot answer this approval: only an admin can approve a configuration change."]
    assert (await chat.say("f:admin2", "admin2", "yes"))[0].startswith('Allowed: "config_set"')
    await task
    assert tool_results(scripted_llm) == ["set agent.max_rounds=5"]


async def test_config_change_needs_admin_even_with_approval_off(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"enable": False}), approval_timeout_sec=0.3)
    chat.engine.services.shared_tools.add([FakeConfigSet()])
    scripted_llm.script([Calls([("config_set", {"key": "k"})]), Reply("x")])
    await chat.say("f:admin", "admin", "change it")  # the only admin is the requester: times out
    assert tool_results(scripted_llm) == ['Not run: no approval for "config_set" (timed out after 0.3 s).']


async def test_timeout_denies_and_is_logged(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"]}), approval_timeout_sec=0.2)
    scripted_llm.script([Calls([("time", {})]), Reply("gave up")])
    out = await chat.say("f:u1", "u1", "time?")
    assert re.fullmatch(r'Approval [0-9a-f]{4} for "time" timed out; the call was not run\.', out[1])
    assert out[-1] == "gave up"
    assert tool_results(scripted_llm) == ['Not run: no approval for "time" (timed out after 0.2 s).']
    assert chat.engine.services.store.ops("tool_approval")[0]["detail"]["decision"] == "deny"


def test_approval_timeout_is_clamped():
    from core.settings import ApprovalSettings

    assert ApprovalSettings(timeout_sec=1).effective_timeout == 10
    assert ApprovalSettings(timeout_sec=999).effective_timeout == 240
    assert ApprovalSettings().effective_timeout == 120


async def test_stop_cancels_the_wait_and_the_session_goes_on(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"]}))
    scripted_llm.script([Calls([("time", {})])])
    task = await chat.entry.submit("f:u1", "u1", "time?")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:u1"))
    assert await chat.say("f:u1", "u1", "/stop") == ["Stopped 1 running or queued message(s)."]
    assert task.cancelled()
    scripted_llm.script([Reply("fresh start")])
    assert await chat.say("f:u1", "u1", "hello again") == ["fresh start"]
    msgs = scripted_llm.requests[-1].messages
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "user"]
    assert msgs[3]["content"] == "Not run: stopped with /stop."
    ops = chat.engine.services.store.ops("tool_approval")
    assert ops[-1]["detail"]["decision"] == "deny" and ops[-1]["detail"]["reason"] == "stopped with /stop"


async def test_two_approvals_are_asked_one_after_the_other(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time", "config_get"], "self_approve_in_private": True}))
    note = Marker()
    chat.engine.services.shared_tools.add([note])
    scripted_llm.script([Calls([("time", {"timezone": "UTC"}), ("write_note", {"key": "fast"}),
                                ("time", {"timezone": "Asia/Tokyo"})]), Reply("all done")])
    task = await chat.entry.submit("f:u1", "u1", "go")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:u1"))
    assert note.ran and note.ran[0][0] == "fast"  # the third tool already finished
    prompts = [t for t in chat.out["f:u1"] if t.startswith('Tool "time"')]
    assert len(prompts) == 1 and '"UTC"' in prompts[0]  # one question at a time
    await chat.say("f:u1", "u1", "allow")
    await wait_for(lambda: len([t for t in chat.out["f:u1"] if t.startswith('Tool "time"')]) == 2)
    assert "Asia/Tokyo" in [t for t in chat.out["f:u1"] if t.startswith('Tool "time"')][1]
    await chat.say("f:u1", "u1", "deny")
    await task
    results = tool_results(scripted_llm)
    assert "UTC" in results[0] and results[1] == "wrote fast" and results[2].startswith("Not run: user u1 denied")
    assert len(note.ran) == 1  # resuming did not re-run the finished sibling


async def test_only_calls_that_may_pause_store_gate_checkpoints(scripted_llm, make_chat, tmp_path):
    import sqlite3

    chat = await make_chat(make_settings(scripted_llm, approval={"tools": ["time"], "self_approve_in_private": True}))
    scripted_llm.script([Calls([("todo_write", {"todos": []})]), Reply("plain")])
    await chat.say("f:u1", "u1", "clear my list")
    db = chat.engine.services.paths.data_dir / "checkpoints.db"

    def branch_rows() -> int:
        with sqlite3.connect(db) as conn:
            return conn.execute("select count(*) from checkpoints where checkpoint_ns != ''").fetchone()[0]

    assert branch_rows() == 0  # a call that cannot pause runs its gates without a checkpointer
    scripted_llm.script([Calls([("time", {})]), Reply("asked")])
    task = await chat.entry.submit("f:u1", "u1", "time?")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:u1"))
    assert branch_rows() >= 1  # the approval pause is stored, so it can resume
    await chat.say("f:u1", "u1", "allow")
    await task
    assert "UTC" in tool_results(scripted_llm)[-1]


async def test_admin_prompt_falls_back_to_the_session_when_the_private_chat_fails(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm, bot={"admins": ["admin", "admin2"]}))
    chat.engine.services.shared_tools.add([FakeConfigSet()])
    delivered = chat.outbox

    async def no_private_chats(session_key: str, text: str) -> bool:
        return False if session_key.startswith("f:admin") else await delivered(session_key, text)

    chat.detach()
    chat.engine.services.outboxes.attach("no private chats", no_private_chats)
    scripted_llm.script([Calls([("config_set", {"key": "k", "value": "v"})]), Reply("done")])
    task = await chat.entry.submit("g:ops", "u5", "change k")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("g:ops"))
    assert not chat.engine.services.approvals.is_waiting("f:admin2")
    assert chat.out["g:ops"][0].startswith('Tool "config_set" wants to run')
    assert (await chat.say("g:ops", "admin2", "allow"))[0].startswith('Allowed: "config_set"')
    await task
    assert tool_results(scripted_llm) == ["set k=v"]
