"""Hooks service (H1-H4): real hook subprocesses written into tmp_path, no network."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from services.hooks import HookEvent
from services.hooks.config import MAX_TIMEOUT_SEC, effective_timeout, parse_hooks
from services.hooks.manager import HookManager
from services.hooks.shell import PAYLOAD_KEYS, execute
from services.hooks.types import HookOutcome

pytestmark = pytest.mark.timeout(20)

from tests.hook_helpers import TOOL, alive, one, script, warnings_of, write_config

# --- exit codes and output --------------------------------------------------------------------


async def test_exit0_stdout_becomes_context(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", script(tmp_path, "h", "echo '  remember the rules  '"))
    out = await HookManager(tmp_path).run(HookEvent("UserPromptSubmit", prompt="hi"))
    assert out == HookOutcome(blocked=False, reason="", context=("remember the rules",))


async def test_exit0_empty_stdout_gives_no_context(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", script(tmp_path, "h", "echo '   '; exit 0"))
    assert await HookManager(tmp_path).run(HookEvent("UserPromptSubmit")) == HookOutcome()


async def test_exit2_blocks_with_stderr_reason(tmp_path: Path) -> None:
    one(tmp_path, "PreToolUse", script(tmp_path, "h", "echo ignored; echo ' no writes here ' >&2; exit 2"))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason == "no writes here" and out.context == ()


async def test_exit2_empty_stderr_default_reason_names_command(tmp_path: Path) -> None:
    cmd = script(tmp_path, "silent", "exit 2")
    one(tmp_path, "PreToolUse", cmd)
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and cmd in out.reason and "PreToolUse" in out.reason


async def test_other_exit_code_is_logged_nonblocking(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cmd = script(tmp_path, "broken", "echo some context; printf 'first line\\nsecond line\\n' >&2; exit 1")
    one(tmp_path, "PostToolUse", cmd)
    out = await HookManager(tmp_path).run(HookEvent("PostToolUse", **TOOL))
    assert out == HookOutcome()
    [msg] = [m for m in warnings_of(caplog) if "exit code" in m]
    assert "PostToolUse" in msg and cmd in msg and "exit code 1" in msg and "first line" in msg
    assert "second line" not in msg


async def test_garbage_output_does_not_crash(tmp_path: Path) -> None:
    one(tmp_path, "PostToolUse", script(tmp_path, "g", r"printf 'ok\xff\xfe\x00\x80bin'"))
    out = await HookManager(tmp_path).run(HookEvent("PostToolUse", **TOOL))
    assert not out.blocked and out.context[0].startswith("ok") and "\ufffd" in out.context[0]
    one(tmp_path, "PreToolUse", script(tmp_path, "g2", r"printf '\xff\xfenope' >&2; exit 2"))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason.endswith("nope")


# --- Claude Code JSON output ------------------------------------------------------------------


def json_hook(tmp_path: Path, obj: dict[str, Any]) -> str:
    return script(tmp_path, "j", f"cat <<'EOF'\n{json.dumps(obj)}\nEOF")


async def test_json_decision_block(tmp_path: Path) -> None:
    one(tmp_path, "PreToolUse", json_hook(tmp_path, {"decision": "block", "reason": "policy says no"}))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason == "policy says no"


async def test_json_permission_deny(tmp_path: Path) -> None:
    obj = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                  "permissionDecisionReason": "outside the sandbox"}}
    one(tmp_path, "PreToolUse", json_hook(tmp_path, obj))
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason == "outside the sandbox"


async def test_json_permission_allow_passes(tmp_path: Path) -> None:
    obj = {"hookSpecificOutput": {"permissionDecision": "allow", "permissionDecisionReason": "fine"}}
    one(tmp_path, "PreToolUse", json_hook(tmp_path, obj))
    assert await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL)) == HookOutcome()


async def test_json_continue_false_blocks(tmp_path: Path) -> None:
    one(tmp_path, "Stop", json_hook(tmp_path, {"continue": False, "stopReason": "budget exhausted"}))
    out = await HookManager(tmp_path).run(HookEvent("Stop"))
    assert out.blocked and out.reason == "budget exhausted"


async def test_json_additional_context(tmp_path: Path) -> None:
    obj = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "today is Tuesday"},
           "suppressOutput": True}
    one(tmp_path, "SessionStart", json_hook(tmp_path, obj))
    out = await HookManager(tmp_path).run(HookEvent("SessionStart"))
    assert out == HookOutcome(context=("today is Tuesday",))


async def test_json_without_context_gives_no_raw_context(tmp_path: Path) -> None:
    one(tmp_path, "PostToolUse", json_hook(tmp_path, {"suppressOutput": True, "decision": "approve"}))
    assert await HookManager(tmp_path).run(HookEvent("PostToolUse", **TOOL)) == HookOutcome()


# --- matchers ---------------------------------------------------------------------------------


async def test_matchers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def entry(name: str, matcher: str | None) -> dict[str, Any]:
        e: dict[str, Any] = {"hooks": [{"type": "command", "command": f"echo {name}"}]}
        if matcher is not None:
            e["matcher"] = matcher
        return e

    entries = [entry("exact", "Write"), entry("alt", "Edit|Write"), entry("mcp", "mcp__time__.*"),
               entry("star", "*"), entry("empty", ""), entry("missing", None), entry("invalid", "(unclosed")]
    write_config(tmp_path, {"PreToolUse": entries})
    m = HookManager(tmp_path)

    async def ran(tool: str) -> list[str]:
        return list((await m.run(HookEvent("PreToolUse", **{**TOOL, "tool_name": tool}))).context)

    everywhere = ["star", "empty", "missing"]
    assert await ran("Write") == ["exact", "alt", *everywhere]
    assert await ran("Edit") == ["alt", *everywhere]
    assert await ran("WriteFile") == everywhere  # fullmatch, not search
    assert await ran("MultiEdit") == everywhere
    assert await ran("mcp__time__get_current_time") == ["mcp", *everywhere]
    assert await ran("mcp__other__time") == everywhere
    [msg] = [w for w in warnings_of(caplog) if "(unclosed" in w]
    assert str(tmp_path / "hooks.json") in msg and "regex" in msg


async def test_matcher_ignored_for_non_tool_events(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", "echo ran", matcher="(not a [valid regex")
    assert (await HookManager(tmp_path).run(HookEvent("UserPromptSubmit", prompt="x"))).context == ("ran",)


# --- payload ----------------------------------------------------------------------------------


async def test_payload_on_stdin(tmp_path: Path) -> None:
    dump = tmp_path / "stdin.json"
    workdir = tmp_path / "work"
    workdir.mkdir()
    one(tmp_path, "PostToolUse", script(tmp_path, "d", f"cat > {shlex.quote(str(dump))}; pwd > {workdir}/pwd"))
    payload = {**TOOL, "tool_result": "wrote 3 bytes", "prompt": "写文件 ✓"}
    await HookManager(tmp_path, cwd=workdir).run(HookEvent("PostToolUse", **payload))
    raw = dump.read_bytes()
    got = json.loads(raw)
    assert set(got) == {"hook_event_name", "cwd", *PAYLOAD_KEYS}
    assert got == {"hook_event_name": "PostToolUse", "session_id": "group:42", "agent_kind": "main",
                   "tool_name": "Write", "tool_input": {"path": "a.txt"}, "tool_result": "wrote 3 bytes",
                   "prompt": "写文件 ✓", "cwd": str(workdir)}
    assert list(got) == sorted(got)  # sort_keys
    assert "写文件 ✓".encode() in raw  # ensure_ascii=False
    assert (workdir / "pwd").read_text().strip() == str(workdir)


async def test_absent_payload_keys_are_null(tmp_path: Path) -> None:
    dump = tmp_path / "stdin.json"
    one(tmp_path, "SessionStart", f"cat > {shlex.quote(str(dump))}")
    await HookManager(tmp_path).run(HookEvent("SessionStart", session_id="private:7"))
    got = json.loads(dump.read_text())
    assert got["session_id"] == "private:7" and got["hook_event_name"] == "SessionStart"
    assert got["agent_kind"] == "main"  # every event comes from a run, which has a kind
    assert all(got[k] is None for k in ("tool_name", "tool_input", "tool_result", "prompt"))


async def test_hook_ignoring_large_stdin(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", "echo fine")
    out = await HookManager(tmp_path).run(HookEvent("UserPromptSubmit", prompt="x" * 2_000_000))
    assert out.context == ("fine",)


# --- timeouts ---------------------------------------------------------------------------------


async def test_timeout_kills_process_group(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pidfile = tmp_path / "child.pid"
    cmd = script(tmp_path, "slow", f"sleep 30 &\necho $! > {shlex.quote(str(pidfile))}\nwait")
    one(tmp_path, "PreToolUse", cmd, timeout=1)
    started = time.monotonic()
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert time.monotonic() - started < 2.5
    assert out == HookOutcome()
    assert any("timed out" in w and cmd in w for w in warnings_of(caplog))
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 1
    while alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not alive(pid)


async def test_timeout_with_escaped_daemon_holding_stdout(tmp_path: Path) -> None:
    """A daemon that left the process group keeps the pipe open: the run must still end promptly."""
    pidfile = tmp_path / "daemon.pid"
    one(tmp_path, "Stop", script(tmp_path, "d", f"setsid sleep 30 &\necho $! > {shlex.quote(str(pidfile))}\nsleep 30"),
        timeout=1)
    started = time.monotonic()
    try:
        assert await HookManager(tmp_path).run(HookEvent("Stop")) == HookOutcome()
        assert time.monotonic() - started < 2.5
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


async def test_cancelled_run_kills_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    one(tmp_path, "Stop", script(tmp_path, "slow", f"sleep 30 &\necho $! > {shlex.quote(str(pidfile))}\nwait"))
    task = asyncio.create_task(HookManager(tmp_path).run(HookEvent("Stop")))
    started = time.monotonic() + 15  # a loaded machine (parallel workers) may take seconds to start the hook
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < started, "the hook never started"
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 1
    while alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not alive(pid)


def test_timeout_default_override_and_cap() -> None:
    assert effective_timeout(None) == 10
    assert effective_timeout(3) == 3
    assert effective_timeout(999) == MAX_TIMEOUT_SEC == 60
    text = json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a", "timeout": 999},
                                                    {"type": "command", "command": "b"}]}]}})
    table, warnings = parse_hooks(text, "hooks.json")
    assert [h.timeout for h in table["Stop"][0].hooks] == [60, 10] and warnings == []


async def test_a_cancel_while_the_hook_starts_leaves_nothing_running(tmp_path: Path) -> None:
    """/stop can land while asyncio still connects the new child's pipes: the child already runs, and it used to
    be left running with nobody holding its pid (services/processes.py `spawn_group`)."""
    token = f"31.{os.getpid()}{time.monotonic_ns() % 10**6}"  # a `sleep` no other test starts
    task = asyncio.create_task(execute(f"sleep {token} & wait", b"", 10))
    await asyncio.sleep(0)  # the task is inside create_subprocess_shell now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 5
    while running_with(token) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert running_with(token) == []


def running_with(token: str) -> list[int]:
    """Live processes whose command line holds `token` (zombies left for their reaper do not count)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found
