"""Hooks service (H1-H4): real hook subprocesses written into tmp_path, no network."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from services.hook_types import EVENTS, HookOutcome
from services.hooks import HookManager
from services.hooks_config import MAX_TIMEOUT_SEC, effective_timeout, parse_hooks
from services.hooks_shell import PAYLOAD_KEYS

pytestmark = pytest.mark.timeout(20)

TOOL = {"session_id": "group:42", "agent_kind": "main", "tool_name": "Write", "tool_input": {"path": "a.txt"}}


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def script(tmp_path: Path, name: str, body: str) -> str:
    """Write a bash hook script and return the command that runs it."""
    path = tmp_path / f"{name}.sh"
    path.write_text("set -u\n" + body + "\n")
    return f"bash {shlex.quote(str(path))}"


def write_config(tmp_path: Path, hooks: dict[str, list[dict[str, Any]]]) -> None:
    (tmp_path / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def one(tmp_path: Path, event: str, command: str, matcher: str | None = None, **extra: Any) -> None:
    """Configure a single command hook for `event`."""
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        entry["matcher"] = matcher
    write_config(tmp_path, {event: [entry]})


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# --- exit codes and output --------------------------------------------------------------------


async def test_exit0_stdout_becomes_context(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", script(tmp_path, "h", "echo '  remember the rules  '"))
    out = await HookManager(tmp_path).run("UserPromptSubmit", {"prompt": "hi"})
    assert out == HookOutcome(blocked=False, reason="", context=("remember the rules",))


async def test_exit0_empty_stdout_gives_no_context(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", script(tmp_path, "h", "echo '   '; exit 0"))
    assert await HookManager(tmp_path).run("UserPromptSubmit", {}) == HookOutcome()


async def test_exit2_blocks_with_stderr_reason(tmp_path: Path) -> None:
    one(tmp_path, "PreToolUse", script(tmp_path, "h", "echo ignored; echo ' no writes here ' >&2; exit 2"))
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
    assert out.blocked and out.reason == "no writes here" and out.context == ()


async def test_exit2_empty_stderr_default_reason_names_command(tmp_path: Path) -> None:
    cmd = script(tmp_path, "silent", "exit 2")
    one(tmp_path, "PreToolUse", cmd)
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
    assert out.blocked and cmd in out.reason and "PreToolUse" in out.reason


async def test_other_exit_code_is_logged_nonblocking(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cmd = script(tmp_path, "broken", "echo some context; printf 'first line\\nsecond line\\n' >&2; exit 1")
    one(tmp_path, "PostToolUse", cmd)
    out = await HookManager(tmp_path).run("PostToolUse", TOOL)
    assert out == HookOutcome()
    [msg] = [m for m in warnings_of(caplog) if "exit code" in m]
    assert "PostToolUse" in msg and cmd in msg and "exit code 1" in msg and "first line" in msg
    assert "second line" not in msg


async def test_garbage_output_does_not_crash(tmp_path: Path) -> None:
    one(tmp_path, "PostToolUse", script(tmp_path, "g", r"printf 'ok\xff\xfe\x00\x80bin'"))
    out = await HookManager(tmp_path).run("PostToolUse", TOOL)
    assert not out.blocked and out.context[0].startswith("ok") and "\ufffd" in out.context[0]
    one(tmp_path, "PreToolUse", script(tmp_path, "g2", r"printf '\xff\xfenope' >&2; exit 2"))
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
    assert out.blocked and out.reason.endswith("nope")


# --- Claude Code JSON output ------------------------------------------------------------------


def json_hook(tmp_path: Path, obj: dict[str, Any]) -> str:
    return script(tmp_path, "j", f"cat <<'EOF'\n{json.dumps(obj)}\nEOF")


async def test_json_decision_block(tmp_path: Path) -> None:
    one(tmp_path, "PreToolUse", json_hook(tmp_path, {"decision": "block", "reason": "policy says no"}))
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
    assert out.blocked and out.reason == "policy says no"


async def test_json_permission_deny(tmp_path: Path) -> None:
    obj = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                  "permissionDecisionReason": "outside the sandbox"}}
    one(tmp_path, "PreToolUse", json_hook(tmp_path, obj))
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
    assert out.blocked and out.reason == "outside the sandbox"


async def test_json_permission_allow_passes(tmp_path: Path) -> None:
    obj = {"hookSpecificOutput": {"permissionDecision": "allow", "permissionDecisionReason": "fine"}}
    one(tmp_path, "PreToolUse", json_hook(tmp_path, obj))
    assert await HookManager(tmp_path).run("PreToolUse", TOOL) == HookOutcome()


async def test_json_continue_false_blocks(tmp_path: Path) -> None:
    one(tmp_path, "Stop", json_hook(tmp_path, {"continue": False, "stopReason": "budget exhausted"}))
    out = await HookManager(tmp_path).run("Stop", {})
    assert out.blocked and out.reason == "budget exhausted"


async def test_json_additional_context(tmp_path: Path) -> None:
    obj = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "today is Tuesday"},
           "suppressOutput": True}
    one(tmp_path, "SessionStart", json_hook(tmp_path, obj))
    out = await HookManager(tmp_path).run("SessionStart", {})
    assert out == HookOutcome(context=("today is Tuesday",))


async def test_json_without_context_gives_no_raw_context(tmp_path: Path) -> None:
    one(tmp_path, "PostToolUse", json_hook(tmp_path, {"suppressOutput": True, "decision": "approve"}))
    assert await HookManager(tmp_path).run("PostToolUse", TOOL) == HookOutcome()


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
        return list((await m.run("PreToolUse", {**TOOL, "tool_name": tool})).context)

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
    assert (await HookManager(tmp_path).run("UserPromptSubmit", {"prompt": "x"})).context == ("ran",)


# --- payload ----------------------------------------------------------------------------------


async def test_payload_on_stdin(tmp_path: Path) -> None:
    dump = tmp_path / "stdin.json"
    workdir = tmp_path / "work"
    workdir.mkdir()
    one(tmp_path, "PostToolUse", script(tmp_path, "d", f"cat > {shlex.quote(str(dump))}; pwd > {workdir}/pwd"))
    payload = {**TOOL, "tool_result": "wrote 3 bytes", "prompt": "写文件 ✓"}
    await HookManager(tmp_path, cwd=workdir).run("PostToolUse", payload)
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
    await HookManager(tmp_path).run("SessionStart", {"session_id": "private:7"})
    got = json.loads(dump.read_text())
    assert got["session_id"] == "private:7" and got["hook_event_name"] == "SessionStart"
    assert all(got[k] is None for k in ("agent_kind", "tool_name", "tool_input", "tool_result", "prompt"))


async def test_hook_ignoring_large_stdin(tmp_path: Path) -> None:
    one(tmp_path, "UserPromptSubmit", "echo fine")
    out = await HookManager(tmp_path).run("UserPromptSubmit", {"prompt": "x" * 2_000_000})
    assert out.context == ("fine",)


# --- timeouts ---------------------------------------------------------------------------------


async def test_timeout_kills_process_group(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pidfile = tmp_path / "child.pid"
    cmd = script(tmp_path, "slow", f"sleep 30 &\necho $! > {shlex.quote(str(pidfile))}\nwait")
    one(tmp_path, "PreToolUse", cmd, timeout=1)
    started = time.monotonic()
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
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
        assert await HookManager(tmp_path).run("Stop", {}) == HookOutcome()
        assert time.monotonic() - started < 2.5
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


async def test_cancelled_run_kills_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    one(tmp_path, "Stop", script(tmp_path, "slow", f"sleep 30 &\necho $! > {shlex.quote(str(pidfile))}\nwait"))
    task = asyncio.create_task(HookManager(tmp_path).run("Stop", {}))
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
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


# --- ordering, short-circuit, handlers --------------------------------------------------------


class Recorder:
    """A Python handler that records its call in a shared file and returns a fixed outcome."""

    def __init__(self, log_file: Path, name: str, outcome: HookOutcome | None = None) -> None:
        self.log_file, self.name, self.outcome = log_file, name, outcome
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def on_hook(self, event: str, payload: dict[str, Any]) -> HookOutcome | None:
        self.calls.append((event, payload))
        with self.log_file.open("a") as f:
            f.write(self.name + "\n")
        return self.outcome


class Exploding:
    async def on_hook(self, event: str, payload: dict[str, Any]) -> HookOutcome | None:
        raise RuntimeError("plugin bug")


async def test_first_block_short_circuits(tmp_path: Path) -> None:
    marker = tmp_path / "second-ran"
    write_config(tmp_path, {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": "echo before"},
                                       {"type": "command", "command": "echo stop >&2; exit 2"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": f"touch {shlex.quote(str(marker))}"}]},
    ]})
    out = await HookManager(tmp_path).run("PreToolUse", TOOL)
    assert out.blocked and out.reason == "stop" and out.context == ("before",)
    assert not marker.exists()


async def test_handlers_run_before_shell_hooks_in_order(tmp_path: Path) -> None:
    order = tmp_path / "order.txt"
    one(tmp_path, "UserPromptSubmit", f"echo shell >> {shlex.quote(str(order))}; echo shell-ctx")
    h1 = Recorder(order, "h1", HookOutcome(context=("h1-ctx",)))
    h2 = Recorder(order, "h2")
    out = await HookManager(tmp_path, [h1, h2]).run("UserPromptSubmit", {"prompt": "hello"})
    assert order.read_text().split() == ["h1", "h2", "shell"]
    assert out == HookOutcome(context=("h1-ctx", "shell-ctx"))
    assert h1.calls == [("UserPromptSubmit", {"prompt": "hello"})]


async def test_handler_block_skips_shell_hooks(tmp_path: Path) -> None:
    marker = tmp_path / "shell-ran"
    one(tmp_path, "PreToolUse", f"touch {shlex.quote(str(marker))}")
    later = Recorder(tmp_path / "log", "later")
    blocker = Recorder(tmp_path / "log", "blocker", HookOutcome(blocked=True, reason="handler says no"))
    out = await HookManager(tmp_path, [blocker, later]).run("PreToolUse", TOOL)
    assert out.blocked and out.reason == "handler says no"
    assert later.calls == [] and not marker.exists()


async def test_raising_handler_is_isolated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    one(tmp_path, "Stop", "echo shell-ctx")
    after = Recorder(tmp_path / "log", "after", HookOutcome(context=("after-ctx",)))
    out = await HookManager(tmp_path, [Exploding(), after]).run("Stop", {})
    assert out == HookOutcome(context=("after-ctx", "shell-ctx"))
    [rec] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Exploding" in rec.getMessage() and "Stop" in rec.getMessage()
    assert rec.exc_info is not None and str(rec.exc_info[1]) == "plugin bug"


async def test_unknown_event_at_run_is_misuse(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Notify"):
        await HookManager(tmp_path).run("Notify", {})


# --- config file: TTL, broken files, unknown events -------------------------------------------


async def test_missing_file_means_no_shell_hooks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert await HookManager(tmp_path).run("PreToolUse", TOOL) == HookOutcome()
    assert warnings_of(caplog) == []


async def test_ttl_reread_and_recompile_only_on_change(tmp_path: Path) -> None:
    clock = FakeClock()
    one(tmp_path, "Stop", "echo A", matcher="x")
    m = HookManager(tmp_path, ttl_sec=5.0, clock=clock)
    assert (await m.run("Stop", {})).context == ("A",)
    table = await m.table()
    one(tmp_path, "Stop", "echo B")
    clock.t += 4.9
    assert (await m.run("Stop", {})).context == ("A",)  # within TTL: not re-read
    clock.t += 0.2
    assert (await m.run("Stop", {})).context == ("B",)  # TTL passed: re-read
    table_b = await m.table()
    assert table_b is not table
    clock.t += 10
    assert await m.table() is table_b  # same raw text: not re-parsed


async def test_broken_file_reported_once_last_good_kept(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    one(tmp_path, "Stop", "echo good")
    m = HookManager(tmp_path, clock=clock)
    assert (await m.run("Stop", {})).context == ("good",)
    path = tmp_path / "hooks.json"
    path.write_text('{"hooks": {"Stop": [')
    for _ in range(4):
        clock.t += 6
        assert (await m.run("Stop", {})).context == ("good",)
    broken = [w for w in warnings_of(caplog) if "broken" in w]
    assert len(broken) == 1 and str(path) in broken[0] and "invalid JSON" in broken[0]
    path.write_text('{"hooks": {"Stop": {"command": "echo wrong shape"}}}')
    for _ in range(3):
        clock.t += 6
        assert (await m.run("Stop", {})).context == ("good",)
    broken = [w for w in warnings_of(caplog) if "broken" in w]
    assert len(broken) == 2 and "hooks.Stop" in broken[1]
    one(tmp_path, "Stop", "echo fixed")
    clock.t += 6
    assert (await m.run("Stop", {})).context == ("fixed",)


async def test_unknown_event_in_file_warned_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    write_config(tmp_path, {"Notification": [{"hooks": [{"type": "command", "command": "echo n"}]}],
                            "Stop": [{"hooks": [{"type": "command", "command": "echo s"}]}]})
    m = HookManager(tmp_path, clock=clock)
    for _ in range(3):
        assert (await m.run("Stop", {})).context == ("s",)
        clock.t += 6
    assert len([w for w in warnings_of(caplog) if "Notification" in w]) == 1


def test_events_are_the_documented_seven() -> None:
    assert set(EVENTS) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                           "SubagentStop", "PreCompact"}
