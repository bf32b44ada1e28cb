"""`meme` (T5, T6): find sticker/meme images through a configurable API and send them to the chat.

`meme.url` is a request template with `${msg}` (the search words), `${num}` (how many) and `${key}`
(`meme.key`); `meme.list_path` and `meme.img_field` are GJSON paths to the result list and, inside one
result, to the image URL. Any API that answers with a list of image URLs fits; the default is GIPHY
stickers. A template that needs `${key}` with no key configured gets an instruction, not the upstream 401.
The image URLs come from the API's answer, so they go through the address guard (services/net/fetch.py):
loopback and private-network hosts are refused unless `meme.allow_private_hosts` is on.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import gjson
from pydantic import BaseModel, Field

from core.errors import ToolError
from core.settings.platform import MemeSettings
from core.tool import Tool
from services.context import RunContext
from services.images import checked_image, fetch_bytes
from services.net.fetch import FetchError, Guard, TimedOut, fetch

MAX_API_BYTES = 2 * 1024 * 1024
SETTING = "meme.allow_private_hosts"
NO_KEY = ("the meme API needs a key: meme.url contains ${key} but meme.key is not set. An admin can get a free "
          "GIPHY API key at developers.giphy.com and set meme.key (or ANIA_MEME__KEY), or point meme.url at an "
          "API without a key")


class MemeParams(BaseModel):
    msg: str = Field(description="What the meme should be about (search words)")
    num: int = Field(1, ge=1, le=5, description="How many images to send (1-5)")


def build_url(template: str, msg: str, num: int, key: str) -> str:
    return template.replace("${msg}", quote(msg)).replace("${num}", str(num)).replace("${key}", quote(key))


def _path(doc: Any, path: str) -> Any:
    try:
        return gjson.get(doc, path)
    except Exception:  # noqa: BLE001 - gjson raises its own parse errors for a missing key or a bad path
        return None


def image_urls(doc: Any, list_path: str, img_field: str) -> list[str]:
    """The image URLs in an API response, by the two GJSON paths; empty when the shape does not match."""
    items = _path(doc, list_path) if list_path else doc
    if not isinstance(items, list):
        items = [items] if items is not None else []
    urls = []
    for item in items:
        url = _path(item, img_field) if img_field else item
        if isinstance(url, str) and url.lower().startswith(("http://", "https://")):
            urls.append(url)
    return urls


class MemeTool(Tool[MemeParams, RunContext]):
    name = "meme"
    description = "Find a meme/sticker image about a topic and send it to the chat."
    params = MemeParams

    async def execute(self, args: MemeParams, ctx: RunContext) -> str:
        s = ctx.services.settings.meme
        if "${key}" in s.url and not s.key:
            raise ToolError(NO_KEY)
        msg = args.msg.strip()
        if not msg:
            raise ToolError("msg is empty: say what the meme should be about")
        doc = await _search(build_url(s.url, msg, args.num, s.key), s)
        urls = image_urls(doc, s.list_path, s.img_field)
        if not urls:
            return f'No meme found for "{msg}" (or meme.list_path / meme.img_field do not match the API\'s answer).'
        sent, problems = await _send_images(urls[: args.num], s, ctx)
        if not sent:
            raise ToolError(f'found memes for "{msg}" but none could be sent: {"; ".join(problems)}')
        note = f" ({len(problems)} failed: {'; '.join(problems)})" if problems else ""
        return f'Sent {sent} meme image(s) for "{msg}" to the chat{note}.'


async def _search(url: str, s: MemeSettings) -> Any:
    """The API's answer as JSON; a ToolError that says what went wrong otherwise."""
    try:  # meme.url is the operator's (it may be on the LAN); a redirect to another host is checked
        response = await fetch(url, Guard(MAX_API_BYTES, s.timeout_sec, s.allow_private_hosts, SETTING),
                               trusted=True, ok_statuses=range(200, 600))
    except TimedOut:
        raise ToolError(f"the meme API did not answer within {s.timeout_sec:g} s") from None
    except FetchError as e:
        raise ToolError(f"the meme API could not be reached ({e})") from None
    if response.status in (401, 403):
        raise ToolError(f"the meme API refused the request (HTTP {response.status}): check meme.key")
    if response.status >= 400:
        raise ToolError(f"the meme API failed: HTTP {response.status}")
    try:
        return json.loads(response.body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ToolError("the meme API did not answer with JSON (check meme.url)") from None


async def _send_images(urls: list[str], s: MemeSettings, ctx: RunContext) -> tuple[int, list[str]]:
    """Fetch and send each image, in order: how many were sent, and why the others were not."""
    sent, problems = 0, []
    for image_url in urls:
        data = await checked_image(fetch_bytes(image_url, s.timeout_sec, private_ok=s.allow_private_hosts,
                                               setting=SETTING), "an answer that is not an image")
        if isinstance(data, str):
            problems.append(data)
            continue
        result = await ctx.bridge.send_image(base64.b64encode(data).decode())
        if result == "sent":
            sent += 1
        else:
            problems.append(result)
    return sent, problems
