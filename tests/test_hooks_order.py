"""Hooks service (H1-H4): order, handlers, short-circuit, and the hooks.json file (TTL, broken files)."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

import pytest

from services.hooks import HookEvent
from services.hooks.manager import HookManager
from services.hooks.types import EVENTS, HookOutcome

pytestmark = pytest.mark.timeout(20)

from tests.hook_helpers import TOOL, FakeClock, one, warnings_of, write_config

# --- ordering, short-circuit, handlers --------------------------------------------------------


class Recorder:
    """A Python handler that records its call in a shared file and returns a fixed outcome."""

    def __init__(self, log_file: Path, name: str, outcome: HookOutcome | None = None) -> None:
        self.log_file, self.name, self.outcome = log_file, name, outcome
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def on_hook(self, event: HookEvent) -> HookOutcome | None:
        self.calls.append((event.name, event.payload()))
        with self.log_file.open("a") as f:
            f.write(self.name + "\n")
        return self.outcome


class Exploding:
    async def on_hook(self, event: HookEvent) -> HookOutcome | None:
        raise RuntimeError("plugin bug")


async def test_first_block_short_circuits(tmp_path: Path) -> None:
    marker = tmp_path / "second-ran"
    write_config(tmp_path, {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": "echo before"},
                                       {"type": "command", "command": "echo stop >&2; exit 2"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": f"touch {shlex.quote(str(marker))}"}]},
    ]})
    out = await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason == "stop" and out.context == ("before",)
    assert not marker.exists()


async def test_handlers_run_before_shell_hooks_in_order(tmp_path: Path) -> None:
    order = tmp_path / "order.txt"
    one(tmp_path, "UserPromptSubmit", f"echo shell >> {shlex.quote(str(order))}; echo shell-ctx")
    h1 = Recorder(order, "h1", HookOutcome(context=("h1-ctx",)))
    h2 = Recorder(order, "h2")
    out = await HookManager(tmp_path, [h1, h2]).run(HookEvent("UserPromptSubmit", prompt="hello"))
    assert order.read_text().split() == ["h1", "h2", "shell"]
    assert out == HookOutcome(context=("h1-ctx", "shell-ctx"))
    assert h1.calls == [("UserPromptSubmit", HookEvent("UserPromptSubmit", prompt="hello").payload())]


async def test_handler_block_skips_shell_hooks(tmp_path: Path) -> None:
    marker = tmp_path / "shell-ran"
    one(tmp_path, "PreToolUse", f"touch {shlex.quote(str(marker))}")
    later = Recorder(tmp_path / "log", "later")
    blocker = Recorder(tmp_path / "log", "blocker", HookOutcome(blocked=True, reason="handler says no"))
    out = await HookManager(tmp_path, [blocker, later]).run(HookEvent("PreToolUse", **TOOL))
    assert out.blocked and out.reason == "handler says no"
    assert later.calls == [] and not marker.exists()


async def test_raising_handler_is_isolated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    one(tmp_path, "Stop", "echo shell-ctx")
    after = Recorder(tmp_path / "log", "after", HookOutcome(context=("after-ctx",)))
    out = await HookManager(tmp_path, [Exploding(), after]).run(HookEvent("Stop"))
    assert out == HookOutcome(context=("after-ctx", "shell-ctx"))
    [rec] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Exploding" in rec.getMessage() and "Stop" in rec.getMessage()
    assert rec.exc_info is not None and str(rec.exc_info[1]) == "plugin bug"


async def test_unknown_event_at_run_is_misuse(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Notify"):
        await HookManager(tmp_path).run(HookEvent("Notify"))


# --- config file: TTL, broken files, unknown events -------------------------------------------


async def test_missing_file_means_no_shell_hooks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert await HookManager(tmp_path).run(HookEvent("PreToolUse", **TOOL)) == HookOutcome()
    assert warnings_of(caplog) == []


async def test_ttl_reread_and_recompile_only_on_change(tmp_path: Path) -> None:
    clock = FakeClock()
    one(tmp_path, "Stop", "echo A", matcher="x")
    m = HookManager(tmp_path, ttl_sec=5.0, clock=clock)
    assert (await m.run(HookEvent("Stop"))).context == ("A",)
    table = await m.table()
    one(tmp_path, "Stop", "echo B")
    clock.t += 4.9
    assert (await m.run(HookEvent("Stop"))).context == ("A",)  # within TTL: not re-read
    clock.t += 0.2
    assert (await m.run(HookEvent("Stop"))).context == ("B",)  # TTL passed: re-read
    table_b = await m.table()
    assert table_b is not table
    clock.t += 10
    assert await m.table() is table_b  # same raw text: not re-parsed


async def test_broken_file_reported_once_last_good_kept(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    one(tmp_path, "Stop", "echo good")
    m = HookManager(tmp_path, clock=clock)
    assert (await m.run(HookEvent("Stop"))).context == ("good",)
    path = tmp_path / "hooks.json"
    path.write_text('{"hooks": {"Stop": [')
    for _ in range(4):
        clock.t += 6
        assert (await m.run(HookEvent("Stop"))).context == ("good",)
    broken = [w for w in warnings_of(caplog) if "broken" in w]
    assert len(broken) == 1 and str(path) in broken[0] and "invalid JSON" in broken[0]
    path.write_text('{"hooks": {"Stop": {"command": "echo wrong shape"}}}')
    for _ in range(3):
        clock.t += 6
        assert (await m.run(HookEvent("Stop"))).context == ("good",)
    broken = [w for w in warnings_of(caplog) if "broken" in w]
    assert len(broken) == 2 and "hooks.Stop" in broken[1]
    one(tmp_path, "Stop", "echo fixed")
    clock.t += 6
    assert (await m.run(HookEvent("Stop"))).context == ("fixed",)


async def test_unknown_event_in_file_warned_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    write_config(tmp_path, {"Notification": [{"hooks": [{"type": "command", "command": "echo n"}]}],
                            "Stop": [{"hooks": [{"type": "command", "command": "echo s"}]}]})
    m = HookManager(tmp_path, clock=clock)
    for _ in range(3):
        assert (await m.run(HookEvent("Stop"))).context == ("s",)
        clock.t += 6
    assert len([w for w in warnings_of(caplog) if "Notification" in w]) == 1


def test_events_are_the_documented_seven() -> None:
    assert set(EVENTS) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
                           "SubagentStop", "PreCompact"}
