"""The narrow interface the engine depends on for hooks (H4), and the one type an event has.

A `HookEvent` is built once per event (nodes/hook_events.py builds it from the run context), is frozen
(a handler cannot change what later hooks see), and is what every hook gets: Python handlers the object,
shell hooks its JSON on stdin. The implementation of the runner is services/hooks/manager.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

HookEventName = Literal[
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop", "PreCompact"]
EVENTS: tuple[str, ...] = get_args(HookEventName)
#: Events whose hooks can block (H3); on these, output the runner cannot read fails closed.
BLOCKING_EVENTS = frozenset({"PreToolUse", "UserPromptSubmit"})


@dataclass(frozen=True)
class HookEvent:
    """One event as hooks see it (H1). Fields a given event does not have stay None."""

    name: HookEventName
    session_id: str = ""
    agent_kind: str = "main"
    tool_name: str | None = None
    tool_input: Mapping[str, Any] | None = None
    tool_result: str | None = None
    prompt: str | None = None

    def payload(self) -> dict[str, Any]:
        """The fields of the JSON a shell hook reads on stdin (besides hook_event_name and cwd)."""
        return {"session_id": self.session_id, "agent_kind": self.agent_kind, "tool_name": self.tool_name,
                "tool_input": dict(self.tool_input) if self.tool_input is not None else None,
                "tool_result": self.tool_result, "prompt": self.prompt}


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
    async def run(self, event: HookEvent) -> HookOutcome:
        """Run the hooks of `event.name`."""
        ...

    async def wants(self, event: HookEventName, tool_name: str | None = None) -> bool:
        """Whether any hook would run for `event` (and tool); lets the gate graph skip empty gates."""
        ...


class NoHooks:
    """A runner with no hooks at all."""

    async def run(self, event: HookEvent) -> HookOutcome:
        return HookOutcome()

    async def wants(self, event: HookEventName, tool_name: str | None = None) -> bool:
        return False
