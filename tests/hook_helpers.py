"""Helpers shared by the hook tests: scripts in tmp_path, config files, a fake clock."""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path
from typing import Any

import pytest

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
