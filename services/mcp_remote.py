"""The handle of one MCP tool: a `Tool` whose name, description and schema come from the server.

It belongs to the MCP service (it holds the manager and the server's epoch at load time) and builds
on the layer-0 `Tool` base, so services do not import the tools layer. Arguments are checked locally
against the server's input schema (all problems at once) before a call goes out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from services.mcp_convert import RemoteDef, arg_problems, make_validator
from tools.base import Tool, ToolArgumentError

if TYPE_CHECKING:
    from services.mcp import MCPManager
    from tools.context import RunContext


@dataclass
class Handle:
    """A tool loaded into a session: its definition and the server epoch it was loaded at (M6)."""

    d: RemoteDef
    epoch: int
    _validator: Any = field(default=None, repr=False)
    _checked: bool = field(default=False, repr=False)

    def problems(self, args: Any) -> list[str]:
        if not self._checked:
            self._validator, self._checked = make_validator(self.d.input_schema), True
        return arg_problems(self._validator, args)


class RemoteTool(Tool):
    """`mcp__<server>__<tool>`: validated locally, then called on the server's persistent session."""

    def __init__(self, manager: "MCPManager", handle: Handle) -> None:
        self.name = handle.d.name  # type: ignore[misc]
        self.description = handle.d.description  # type: ignore[misc]
        #: Plan mode blocks MCP tools unless the server marks them read-only.
        self.side_effect = not handle.d.read_only  # type: ignore[misc]
        self.handle = handle
        self._manager = manager

    def parameters(self) -> dict[str, Any]:
        return self.handle.d.parameters

    def parse(self, raw: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        problems = self.handle.problems(raw)
        if problems:
            raise ToolArgumentError("; ".join(problems))
        return dict(raw)

    async def execute(self, args: Any, ctx: "RunContext") -> str:
        return await self._manager.call(self.handle, args)
