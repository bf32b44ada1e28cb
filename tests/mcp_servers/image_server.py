"""A stdio MCP server whose tool answers with an image, like `get-tiny-image` of the reference
`server-everything`: a text block, the image (image/png, base64), and another text block."""

from __future__ import annotations

import base64

from mcp import types
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

PNG_1X1 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

server = FastMCP("images", log_level="WARNING")


@server.tool(name="get-tiny-image", annotations=ToolAnnotations(readOnlyHint=True))
def tiny_image() -> list[types.TextContent | types.ImageContent]:
    """Return a tiny PNG image."""
    base64.b64decode(PNG_1X1)  # it is valid base64
    return [types.TextContent(type="text", text="This is a tiny image:"),
            types.ImageContent(type="image", data=PNG_1X1, mimeType="image/png"),
            types.TextContent(type="text", text="The image above is the MCP logo.")]


if __name__ == "__main__":
    server.run("stdio")
