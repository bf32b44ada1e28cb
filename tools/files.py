"""`send_file` and `local_image` (T5, behind config): a file from `files.allowed_dirs` to the chat, or an
image from there to the model.

Both are offered only when `files.allowed_dirs` lists a directory. A path from the model is resolved
(symlinks followed, `..` collapsed) before it is checked, so a path that ends up outside every allowed
directory, by `..`, an absolute path or a symlink, is refused. A relative path is taken inside the first
allowed directory.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from services.config import Settings
from services.context import RunContext
from services.errors import ToolError
from services.images import CANNOT_SEE
from tools.base import Tool
from tools.chat import how_shown, sees

OUTSIDE = "{path} is outside the directories files may come from (files.allowed_dirs: {dirs})"


def allowed_dirs(settings: Settings) -> list[Path]:
    return [Path(d).expanduser().resolve() for d in settings.files.allowed_dirs if d.strip()]


def resolve_allowed(raw: str, settings: Settings) -> Path:
    """The real path of an existing regular file inside an allowed directory; ToolError otherwise."""
    roots = allowed_dirs(settings)
    if not roots:
        raise ToolError("no directory is allowed (files.allowed_dirs is empty)")
    raw = raw.strip()
    if not raw or "\x00" in raw:
        raise ToolError("the path is empty or invalid")
    given = Path(raw).expanduser()
    candidate = given if given.is_absolute() else roots[0] / given
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        # A path that does not exist is reported as such only when it would have been inside.
        lexical = Path(*_collapse(candidate.parts))
        if not any(lexical.is_relative_to(r) for r in roots):
            raise ToolError(OUTSIDE.format(path=raw, dirs=", ".join(map(str, roots)))) from None
        raise ToolError(f"no such file: {raw}") from None
    if not any(real.is_relative_to(r) for r in roots):
        raise ToolError(OUTSIDE.format(path=raw, dirs=", ".join(map(str, roots))))
    if not real.is_file():
        raise ToolError(f"not a regular file: {raw}")
    return real


def read_limited(path: Path, max_mb: float) -> str:
    """The file as base64, or ToolError when it is larger than `max_mb`."""
    if path.stat().st_size > max_mb * 1024 * 1024:
        raise ToolError(f"{path.name} is larger than files.max_file_mb ({max_mb:g} MB)")
    return base64.b64encode(path.read_bytes()).decode()


def _collapse(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for p in parts:
        if p == "..":
            if len(out) > 1:
                out.pop()
        elif p != ".":
            out.append(p)
    return out or ["/"]


class PathParams(BaseModel):
    path: str = Field(description="Path of the file, inside an allowed directory (relative paths start in the first)")


class SendFileTool(Tool[PathParams]):
    name = "send_file"
    description = "Send a file from the bot's allowed directories to this chat."
    params = PathParams
    side_effect = True

    async def execute(self, args: PathParams, ctx: RunContext) -> str:
        settings = ctx.services.settings
        path = resolve_allowed(args.path, settings)
        result = await ctx.bridge.send_file(path.name, read_limited(path, settings.files.max_file_mb))
        return f"Sent {path.name} to the chat." if result == "sent" else result


class LocalImageTool(Tool[PathParams]):
    name = "local_image"
    description = "Look at an image file from the bot's allowed directories."
    params = PathParams

    async def execute(self, args: PathParams, ctx: RunContext) -> str:
        if not sees(ctx):
            raise ToolError(CANNOT_SEE)
        path = resolve_allowed(args.path, ctx.services.settings)
        text = await ctx.bridge.load_local_image(str(path))
        return f"{text} ({how_shown(ctx)})" if text.startswith("Loaded") else text


def file_tools(settings: Settings) -> list[Tool[Any]]:
    return [LocalImageTool(), SendFileTool()] if allowed_dirs(settings) else []
