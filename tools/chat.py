"""The chat built-ins (T5): `get_msg_history`, `get_private_file_url`, `load_images`, `send_image`.

They reach the chat only through the run's callback bridge (T7), so they work on any platform: OneBot
asks the implementation, the terminal answers from its own record. Images a tool loads go to the model
before its next request (nodes/images.py); a model that cannot see is told so instead.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.context import RunContext
from services.errors import ToolError
from services.images import CANNOT_SEE, can_see
from tools.base import NoParams, Tool


def sees(ctx: RunContext) -> bool:
    return can_see(ctx.services.settings)


def how_shown(ctx: RunContext) -> str:
    if ctx.services.settings.llm.vision:
        return "they follow as images after the tool results"
    return "a vision model describes them after the tool results"


class HistoryParams(BaseModel):
    count: int = Field(20, ge=1, le=100, description="How many of the latest messages to read (1-100)")


class GetMsgHistoryTool(Tool[HistoryParams]):
    name = "get_msg_history"
    description = "Read the latest messages of this chat (who said what, oldest first)."
    params = HistoryParams

    async def execute(self, args: HistoryParams, ctx: RunContext) -> str:
        return await ctx.bridge.get_msg_history(args.count)


class FileUrlParams(BaseModel):
    file_id: str = Field(description="The file_id shown in a [file ...] marker of a message")


class GetPrivateFileUrlTool(Tool[FileUrlParams]):
    name = "get_private_file_url"
    description = "Get a download URL for a file someone sent in this chat (by its file_id)."
    params = FileUrlParams

    async def execute(self, args: FileUrlParams, ctx: RunContext) -> str:
        if not args.file_id.strip():
            raise ToolError("file_id is empty; use the file_id of a [file ...] marker")
        return await ctx.bridge.get_private_file_url(args.file_id.strip())


class LoadImagesTool(Tool[NoParams]):
    name = "load_images"
    description = ("Look at the images of the current message and of the message it replies to "
                   "(shown as [image] in the text).")

    async def execute(self, args: NoParams, ctx: RunContext) -> str:
        if not sees(ctx):
            raise ToolError(CANNOT_SEE)
        text = await ctx.bridge.load_images()
        return f"{text} ({how_shown(ctx)})" if text.startswith("Loaded") else text


class SendImageParams(BaseModel):
    ref: str = Field(description='The ref of an image you were shown, e.g. "img-3"')


class SendImageTool(Tool[SendImageParams]):
    name = "send_image"
    description = "Send an image you were given by ref (from a tool result) to this chat."
    params = SendImageParams

    async def execute(self, args: SendImageParams, ctx: RunContext) -> str:
        b64 = ctx.services.images.get(ctx.session_key, args.ref)
        if b64 is None:
            known = ", ".join(ctx.services.images.refs(ctx.session_key)) or "none"
            raise ToolError(f'no image "{args.ref}" in this chat (refs you can send: {known})')
        return await ctx.bridge.send_image(b64)


def route_images(ctx: RunContext, images: list[str], label: str = "image") -> str:
    """Put images from a tool result on the session's shelf (sendable by ref) and, when the model can see,
    in the bridge's queue for its next request. Returns one line per image for the tool's result."""
    lines = []
    seen = sees(ctx)
    for b64 in images:
        ref = ctx.services.images.put(ctx.session_key, b64)
        shown = "shown to you after the tool results" if ctx.services.settings.llm.vision else (
            "described to you after the tool results" if seen else "not shown: this model cannot see images")
        lines.append(f'[{label} {ref}: {shown}; send_image("{ref}") sends it to the chat]')
    if seen and images:
        ctx.bridge.queue_images(images)
    return "\n".join(lines)


def chat_tools() -> list[Tool[Any]]:
    return [GetMsgHistoryTool(), GetPrivateFileUrlTool(), LoadImagesTool(), SendImageTool()]
