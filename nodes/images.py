"""Images the tools loaded (`load_images`, `local_image`, MCP results) reach the model before its next request.

- `llm.vision` on: one user message with the images as image parts;
- else, with `vision.base_url`/`vision.model` set: the vision model describes them, the description goes
  in as text, and its tokens count in the turn's usage;
- else they are dropped (the tools already told the model it cannot see images).

The message stays in the history, so later requests start with the same bytes (prefix caches hold).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.messages import HumanMessage

from nodes.metered import QuotaReached, metered
from nodes.state import usage_of
from services.context import RunContext
from services.images import CANNOT_SEE, data_url

log = logging.getLogger(__name__)

SHOWN = "<loaded_images count=\"{n}\">The image(s) the tools above loaded, in order.</loaded_images>"
DESCRIBED = "<image_descriptions count=\"{n}\">\n{text}\n</image_descriptions>"
NOT_DESCRIBED = "<image_descriptions count=\"{n}\">The images could not be described: {why}.</image_descriptions>"
async def present_images(ctx: RunContext) -> tuple[list[HumanMessage], dict[str, int] | None]:
    """The messages that show the loaded images to the model, and the vision model's usage (if any)."""
    images = ctx.bridge.take_loaded_images()
    if not images:
        return [], None
    services = ctx.services
    meta = {"ania_images": len(images)}
    if services.settings.llm.vision:
        parts: list[Any] = [{"type": "text", "text": SHOWN.format(n=len(images))}]
        parts += [{"type": "image_url", "image_url": {"url": data_url(b64)}} for b64 in images]
        return [HumanMessage(content=parts, response_metadata=meta)], None
    if services.vision.configured:
        try:
            text, reply = await metered(ctx, lambda: services.vision.describe(images), lambda r: r[1])
        except QuotaReached:
            why = "the daily token quota is reached"
            return [HumanMessage(NOT_DESCRIBED.format(n=len(images), why=why), response_metadata=meta)], None
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any vision failure becomes a note the main model reads
            log.warning("vision model failed for %s: %s", ctx.session_key, e)
            why = f"the vision model failed ({type(e).__name__})"
            return [HumanMessage(NOT_DESCRIBED.format(n=len(images), why=why), response_metadata=meta)], None
        usage = usage_of(reply)
        return [HumanMessage(DESCRIBED.format(n=len(images), text=text), response_metadata=meta)], usage
    log.info("dropped %d loaded image(s) for %s: %s", len(images), ctx.session_key, CANNOT_SEE)
    return [], None
