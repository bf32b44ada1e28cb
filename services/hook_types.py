"""The narrow interface the engine depends on for hooks (H4). The implementation is services/hooks.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

#: Events whose hooks can block (H3); on these, output the runner cannot read fails closed.
BLOCKING_EVENTS = frozenset({"PreToolUse", "UserPromptSubmit"})
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop", "PreCompact")


@dataclass(frozen=True)
class HookOutcome:
    """What running the hooks of one event decided."""

    blocked: bool = False
    reason: str = ""
    #: A PreToolUse hook answered `permissionDecision: "ask"`: a human must approve the call (reason in `reason`).
    ask: bool = False
    #: Texts hooks want the model to read (stdout of passing shell hooks, handler context).
    context: tuple[str, ...] = field(default_factory=tuple)


class HookRunner(Protocol):
    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        """Run the hooks of `event`. `payload` carries session_id, agent_kind, tool_name, ..."""
        ...

    async def wants(self, event: str, tool_name: str | None = None) -> bool:
        """Whether any hook would run for `event` (and tool); lets the gate graph skip empty gates."""
        ...


class NoHooks:
    """A runner with no hooks at all."""

    async def run(self, event: str, payload: dict[str, Any]) -> HookOutcome:
        return HookOutcome()

    async def wants(self, event: str, tool_name: str | None = None) -> bool:
        return False
