"""Hook output the runner must not take loosely (hardening): oversized reasons and JSON, "ask", unknown
or malformed decisions, and the environment a hook sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ania.fakes.openai_server import Calls, Reply
from services.hooks import HookEvent
from services.hooks.manager import HookManager
from services.hooks.shell import MAX_OUTPUT_BYTES, MAX_REASON_CHARS
from tests.conftest import make_settings
from tests.hook_helpers import TOOL, one, script, warnings_of

pytestmark = pytest.mark.timeout(30)


async def test_exit2_reason_of_1mb_is_capped(tmp_path: Path) -> None:
    one(tmp_path, "PreToolUse", script(tmp_path, "h", "head -c 1048576 /dev/zero | tr '\\0' x >&2; exit 2"))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and len(out.reason) <= MAX_REASON_CHARS + 40 and out.reason.endswith("[hook output truncated]")


async def test_block_json_over_the_output_cap_still_blocks(tmp_path: Path) -> None:
    # A valid block answer padded past 1 MB: cut, it no longer parses; the call must not run.
    pad = "x" * (MAX_OUTPUT_BYTES + 10)
    body = f"printf '%s' '{{\"decision\": \"block\", \"reason\": \"no\", \"pad\": \"{pad}\"}}'"
    cmd = script(tmp_path, "h", body)
    one(tmp_path, "PreToolUse", cmd)
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and "could not be read" in out.reason and f"more than {MAX_OUTPUT_BYTES} bytes" in out.reason


@pytest.mark.parametrize("stdout", ['{"decision": "BLOCK", "reason": "upper"}', '{"decision": "deny", "reason": "upper"}'])
async def test_decision_is_case_insensitive(tmp_path: Path, stdout: str) -> None:
    one(tmp_path, "PreToolUse", script(tmp_path, "h", f"echo '{stdout}'"))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason == "upper"


async def test_unparseable_json_blocks_a_blocking_event_and_is_logged(tmp_path: Path, caplog) -> None:
    one(tmp_path, "PreToolUse", script(tmp_path, "h", """echo '{"decision": "block", '"""))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and "not valid JSON" in out.reason
    assert any("not valid JSON; blocked to be safe" in w for w in warnings_of(caplog))


async def test_unparseable_json_on_a_notification_event_is_logged_and_passes(tmp_path: Path, caplog) -> None:
    one(tmp_path, "PostToolUse", script(tmp_path, "h", "echo '{oops'"))
    out = await HookManager(tmp_path).run(HookEvent("PostToolUse", **TOOL))
    assert not out.blocked and out.context == ()
    assert any("not valid JSON; ignored" in w for w in warnings_of(caplog))


async def test_unknown_decision_values_fail_closed(tmp_path: Path) -> None:
    one(tmp_path, "PreToolUse", script(tmp_path, "h", """echo '{"hookSpecificOutput": {"permissionDecision": "maybe"}}'"""))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and "permissionDecision" in out.reason


async def test_ask_is_reported(tmp_path: Path) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                     "permissionDecisionReason": "writes outside the project"}}
    one(tmp_path, "PreToolUse", script(tmp_path, "h", f"echo '{json.dumps(answer)}'"))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.ask and not out.blocked and out.reason == "writes outside the project"


async def test_hooks_do_not_see_secrets(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANIA_LLM__API_KEY", "sk-secret-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-2")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    dump = tmp_path / "env.txt"
    one(tmp_path, "UserPromptSubmit", script(tmp_path, "h", f"env > {dump}"))
    await HookManager(tmp_path).run(HookEvent("UserPromptSubmit", prompt="hi"))
    seen = dump.read_text()
    assert "sk-secret-1" not in seen and "ghp-secret-2" not in seen
    assert "HARMLESS_SETTING=visible" in seen and "CLAUDE_PROJECT_DIR=" in seen


async def test_ask_through_the_loop_asks_a_human_even_with_approval_off(scripted_llm, make_chat, tmp_path):
    cfg = tmp_path / "config"
    cfg.mkdir()
    answer = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check the zone"}}
    one(cfg, "PreToolUse", script(tmp_path, "ask", f"echo '{json.dumps(answer)}'"), matcher="time")
    chat = await make_chat(make_settings(scripted_llm, approval={"enable": False}), hooks=HookManager(cfg),
                           approval_timeout_sec=0.3)
    scripted_llm.script([Calls([("time", {})]), Reply("ok")])
    out = await chat.say("f:admin", "admin", "time?")  # an admin: the prompt is asked in this chat
    assert out[0].startswith('Tool "time" wants to run with {}\nA PreToolUse hook asks for approval: check the zone')
    results = [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"]
    assert results == ['Not run: no approval for "time" (timed out after 0.3 s).']
