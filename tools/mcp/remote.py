"""One MCP tool as the model calls it: a `Tool` whose name, description and schema come from the server.

The MCP service hands out `Handle`s (a definition and the server epoch it was loaded at); the composition
root gives the manager this class as its tool factory, so the service never imports the tools layer.
Arguments are checked locally against the server's input schema (all problems at once) before a call.
"""

from __future__ import annotations

from typing import Any

from core.errors import ToolArgumentError
from core.tool import Tool
from services.context import RunContext
from services.mcp import Handle
from tools.chat import route_images


class RemoteTool(Tool[Any, RunContext]):
    """`mcp__<server>__<tool>`: validated locally, then called on the server's persistent session."""

    def __init__(self, handle: Handle) -> None:
        self.name = handle.d.name
        self.description = handle.d.description
        #: Plan mode blocks MCP tools unless the server marks them read-only.
        self.side_effect = not handle.d.read_only
        self.handle = handle

    def parameters(self) -> dict[str, Any]:
        return self.handle.d.parameters

    def parse(self, raw: dict[str, Any]) -> dict[str, Any]:
        problems = self.handle.problems(raw)
        if problems:
            raise ToolArgumentError("; ".join(problems))
        return dict(raw)

    async def execute(self, args: Any, ctx: RunContext) -> str:
        images: list[str] = []
        text = await ctx.services.mcp.call(self.handle, args, images)
        return with_images(text, images, ctx)


def with_images(text: str, images: list[str], ctx: RunContext) -> str:
    """An MCP result's images go where `load_images` puts them: to the model (as images, or described)
    and on the session's shelf, sendable to the chat by ref."""
    routed = route_images(ctx, images, "image from the tool") if images else ""
    return f"{text}\n{routed}" if routed else text
