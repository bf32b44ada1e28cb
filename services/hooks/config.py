"""Parsing `hooks.json` (the Claude Code hooks format) into compiled, immutable hook tables.

Kept apart from running hooks so the manager can re-parse only when the raw text changed, and so
a broken file can be rejected as a whole (ConfigError) while the last good table keeps working.
Soft problems (unknown event, invalid matcher regex, unsupported hook type) skip just that part
and come back as warnings, so one typo does not switch every hook off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.errors import ConfigError
from services.hooks.types import EVENTS

DEFAULT_TIMEOUT_SEC = 10.0
MAX_TIMEOUT_SEC = 60.0
#: Events whose matcher is a regex on the tool name; every other event ignores the matcher.
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})


@dataclass(frozen=True)
class ShellHook:
    command: str
    #: Effective timeout in seconds (default applied, cap applied).
    timeout: float


@dataclass(frozen=True)
class HookEntry:
    """One matcher group: the hooks that run when `matcher` accepts the tool name."""

    matcher: re.Pattern[str] | None  # None matches everything
    hooks: tuple[ShellHook, ...]

    def matches(self, tool_name: str | None) -> bool:
        return self.matcher is None or self.matcher.fullmatch(tool_name or "") is not None


HookTable = Mapping[str, tuple[HookEntry, ...]]


def effective_timeout(value: float | None) -> float:
    """The timeout a hook really gets: the 10 s default when unset, never above the 60 s cap."""
    if value is None:
        return DEFAULT_TIMEOUT_SEC
    return min(float(value), MAX_TIMEOUT_SEC)


def compile_matcher(raw: str | None) -> re.Pattern[str] | None:
    """Claude Code semantics: empty, "*" or missing matches all; else a full-match regex (re.error if invalid)."""
    if raw is None or raw.strip() in ("", "*"):
        return None
    return re.compile(raw)


def parse_hooks(text: str, source: str) -> tuple[dict[str, tuple[HookEntry, ...]], list[str]]:
    """Parse the raw file text into a hook table plus soft warnings; raise ConfigError if unusable."""
    if not text.strip():
        return {}, []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError("top level must be a JSON object")
    events = data.get("hooks", {})
    if not isinstance(events, dict):
        raise ConfigError('"hooks" must be an object mapping event names to lists')
    table: dict[str, tuple[HookEntry, ...]] = {}
    warnings: list[str] = []
    for event, groups in events.items():
        if not isinstance(groups, list):
            raise ConfigError(f'"hooks.{event}" must be a list')
        if event not in EVENTS:
            warnings.append(f"{source}: unknown hook event {event!r} ignored (known: {', '.join(EVENTS)})")
            continue
        parsed = [_parse_group(event, i, g, source, warnings) for i, g in enumerate(groups)]
        table[event] = tuple(e for e in parsed if e is not None and e.hooks)
    return table, warnings


def _parse_group(event: str, index: int, group: Any, source: str, warnings: list[str]) -> HookEntry | None:
    where = f"hooks.{event}[{index}]"
    if not isinstance(group, dict):
        raise ConfigError(f"{where} must be an object")
    raw_matcher = group.get("matcher")
    if raw_matcher is not None and not isinstance(raw_matcher, str):
        raise ConfigError(f"{where}.matcher must be a string")
    raw_hooks = group.get("hooks")
    if not isinstance(raw_hooks, list):
        raise ConfigError(f"{where}.hooks must be a list")
    parsed = (_parse_hook(f"{where}.hooks[{j}]", raw, source, warnings) for j, raw in enumerate(raw_hooks))
    hooks = tuple(h for h in parsed if h is not None)
    matcher: re.Pattern[str] | None = None
    if event in TOOL_EVENTS:
        try:
            matcher = compile_matcher(raw_matcher)
        except re.error as exc:
            warnings.append(f"{source}: {where}: invalid matcher regex {raw_matcher!r} ({exc}); entry skipped")
            return None
    return HookEntry(matcher=matcher, hooks=hooks)


def _parse_hook(where: str, hook: Any, source: str, warnings: list[str]) -> ShellHook | None:
    if not isinstance(hook, dict):
        raise ConfigError(f"{where} must be an object")
    kind = hook.get("type", "command")
    if kind != "command":
        warnings.append(f"{source}: {where}: hook type {kind!r} is not supported (only 'command'); skipped")
        return None
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}.command must be a non-empty string")
    timeout = hook.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ConfigError(f"{where}.timeout must be a positive number of seconds")
    return ShellHook(command=command, timeout=effective_timeout(timeout))
