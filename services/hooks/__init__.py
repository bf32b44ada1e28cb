"""Hooks (H1-H4): Python handlers, then shell hooks from `hooks.json` (the Claude Code format), per event.

How the modules fit:
- `types`: the narrow `HookRunner` interface the engine depends on, the frozen `HookEvent`, `HookOutcome`;
- `config`: parsing `hooks.json` into immutable tables (a broken file is rejected whole);
- `shell`: running one hook as a real subprocess and reading its verdict (exit codes, JSON answers);
- `manager`: `HookManager`, the real runner (handlers first, TTL re-read of the file, first block wins).
"""

from services.hooks.manager import HOOKS_FILE, HookHandler, HookManager
from services.hooks.types import EVENTS, HookEvent, HookEventName, HookOutcome, HookRunner, NoHooks

__all__ = ["EVENTS", "HOOKS_FILE", "HookEvent", "HookEventName", "HookHandler", "HookManager", "HookOutcome",
           "HookRunner", "NoHooks"]
