"""The tool registry (layer 0), two executor layers (T4): a shared table (built-ins, MCP) and one per session.

A session tool overrides a shared tool of the same name, and only one definition per name is sent.
Tables are copy-on-write: a load replaces the mapping in one assignment, so tools of the same round
that are reading (or iterating) the old mapping are never disturbed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from services.errors import ToolArgumentError, ToolError
from tools.base import Tool

log = logging.getLogger(__name__)

UNKNOWN_TOOL = 'Error: unknown tool "{name}". Available tools: {names}.'
BAD_JSON = 'Error: the arguments of tool "{name}" are not valid JSON ({detail}). Call it again with a JSON object.'
BAD_ARGS = 'Error: invalid arguments for tool "{name}": {detail}'
TOOL_FAILED = 'Error: tool "{name}" failed: {detail}'
TOOL_ERROR = 'Error: {detail}'


@dataclass(frozen=True)
class ToolCall:
    """One call the model made. `args_error` is set when the arguments were not valid JSON."""

    id: str
    name: str
    args: dict[str, Any]
    args_error: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCall:
        return cls(id=d["id"], name=d["name"], args=dict(d.get("args") or {}), args_error=d.get("args_error"))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "args": self.args, "args_error": self.args_error}


#: How a call ended: it ran, it failed (the text says why), or a gate blocked it.
ToolStatus = Literal["ok", "error", "blocked"]


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    status: ToolStatus = "ok"


class ToolTable:
    """A name → tool mapping replaced wholesale on every change."""

    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: Mapping[str, Tool[Any]] = {}
        self.add(tools)

    def add(self, tools: Iterable[Tool[Any]]) -> None:
        new = dict(self._tools)
        for t in tools:
            new[t.name] = t
        self._tools = new

    def remove(self, names: Iterable[str]) -> None:
        drop = set(names)
        self._tools = {k: v for k, v in self._tools.items() if k not in drop}

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def snapshot(self) -> Mapping[str, Tool[Any]]:
        return self._tools


class SharedExecutor(ToolTable):
    """Built-in tools and eagerly registered MCP tools, shared by every session."""


class SessionExecutor:
    """The tools one session sees: its own table over the shared one. `owner` is the session whose own
    executor this is (what it loads is kept for later turns); None for a throwaway one (subagent, clock)."""

    def __init__(self, shared: SharedExecutor, session_tools: Iterable[Tool[Any]] = (),
                 owner: str | None = None) -> None:
        self.shared = shared
        self.own = ToolTable(session_tools)
        self.owner = owner

    def load(self, tools: Iterable[Tool[Any]]) -> None:
        self.own.add(tools)

    def unload(self, names: Iterable[str]) -> None:
        self.own.remove(names)

    def get(self, name: str) -> Tool[Any] | None:
        return self.own.get(name) or self.shared.get(name)

    def tools(self) -> list[Tool[Any]]:
        merged = {**self.shared.snapshot(), **self.own.snapshot()}
        return [merged[k] for k in sorted(merged)]

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self.tools()]

    def resolve(self, call: ToolCall) -> tuple[Tool[Any], Any]:
        """The tool and its validated arguments, or a ToolError whose text the model reads."""
        if call.args_error is not None:
            raise ToolError(BAD_JSON.format(name=call.name, detail=call.args_error))
        tool = self.get(call.name)
        if tool is None:
            names = ", ".join(t.name for t in self.tools()) or "(none)"
            raise ToolError(UNKNOWN_TOOL.format(name=call.name, names=names))
        try:
            return tool, tool.parse(call.args)
        except ToolArgumentError as e:
            raise ToolError(BAD_ARGS.format(name=call.name, detail=e)) from None

    async def execute(self, tool: Tool[Any], args: Any, ctx: Any) -> ToolOutcome:
        """Run a resolved call; a raising tool becomes an error result, the loop goes on."""
        try:
            return ToolOutcome(await tool.execute(args, ctx))
        except asyncio.CancelledError:
            raise
        except ToolError as e:
            return ToolOutcome(TOOL_ERROR.format(detail=e), "error")
        except Exception as e:
            log.warning("tool %s raised", tool.name, exc_info=True)
            return ToolOutcome(TOOL_FAILED.format(name=tool.name, detail=f"{type(e).__name__}: {e}"), "error")

    async def invoke(self, call: ToolCall, ctx: Any) -> ToolOutcome:
        """Resolve and execute without gates (used by tests and the benchmark's direct path)."""
        try:
            tool, args = self.resolve(call)
        except ToolError as e:
            return ToolOutcome(str(e), "error")
        return await self.execute(tool, args, ctx)


def parse_raw_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Parse a JSON arguments string as the model sent it."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as e:
        return {}, f"{e.msg} at position {e.pos}"
    if not isinstance(value, dict):
        return {}, f"expected an object, got {type(value).__name__}"
    return value, None
