"""Callback bridges (T7): how tools and the runtime reach a chat.

`ChatBridge` is the main session's bridge over a platform's send function (the terminal; tests). OneBot
has its own (`ania/platforms/onebot/bridge.py`). `SubagentBridge` is a subagent's or team member's (A1):
it drops intermediate text (logged only), keeps its own image queue, and sends a tool's images and
files, reads history and asks for approvals through the parent's bridge. `ClockBridge` is a clock run's
(C5): it drops intermediate text too, and sends images, files and approval prompts to the task's target
chat through the outboxes (images and files as such where the platform can: `Outboxes.media`).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from services.context import CallbackBridge
from services.images import MAX_IMAGE_BYTES, sniff_mime
from services.outboxes import Media

log = logging.getLogger(__name__)

Send = Callable[[str], Awaitable[None]]
MAX_QUEUED_IMAGES = 8
#: Sends a text to a session's chat (services/outboxes.py `Outboxes.send`).
SendTo = Callable[[str, str], Awaitable[bool]]


def read_image(path: str) -> tuple[str | None, str]:
    """(base64, "") for an image file, or (None, why not). The caller has checked the path is allowed."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_IMAGE_BYTES:
            return None, f"Error: {p.name} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB."
        data = p.read_bytes()
    except OSError as e:
        return None, f"Error: cannot read {p.name}: {e.strerror or type(e).__name__}."
    if sniff_mime(data) is None:
        return None, f"Error: {p.name} is not a PNG, JPEG, GIF, WebP or BMP image."
    return base64.b64encode(data).decode(), ""


class ImageQueue:
    """The images loaded for the model's next request (T7 `take_loaded_images`), at most eight."""

    def __init__(self) -> None:
        self._images: list[str] = []

    def queue_images(self, images: list[str]) -> None:
        self._images = (self._images + list(images))[-MAX_QUEUED_IMAGES:]

    def take_loaded_images(self) -> list[str]:
        images, self._images = self._images, []
        return images

    async def load_local_image(self, path: str) -> str:
        b64, problem = read_image(path)
        if b64 is None:
            return problem
        self.queue_images([b64])
        return f"Loaded the image {Path(path).name}."


class ChatBridge(ImageQueue):
    """Sends text to one chat; images and files are saved under `outbox` and announced by path."""

    def __init__(self, send: Send, outbox: Path, history: list[str] | None = None) -> None:
        super().__init__()
        self._send = send
        self._outbox = outbox
        self._history = history if history is not None else []

    async def send_text(self, text: str) -> str:
        self._history.append(text)
        await self._send(text)
        return "sent"

    async def _save(self, name: str, b64: str) -> Path:
        self._outbox.mkdir(parents=True, exist_ok=True)
        path = self._outbox / Path(name).name  # never a path from the model
        path.write_bytes(base64.b64decode(b64))
        return path

    async def send_image(self, b64: str) -> str:
        path = await self._save(f"image-{len(list(self._outbox.glob('image-*'))) + 1}.png", b64)
        await self._send(f"[image saved: {path}]")
        return "sent"

    async def send_file(self, name: str, b64: str) -> str:
        path = await self._save(name, b64)
        await self._send(f"[file saved: {path}]")
        return "sent"

    async def get_msg_history(self, count: int, before_seq: int = 0) -> str:
        items = self._history[: len(self._history) - before_seq] if before_seq else self._history
        return "\n".join(items[-count:]) or "(no messages)"

    async def get_private_file_url(self, file_id: str) -> str:
        return f"Error: this chat has no private files (asked for {file_id!r})."

    async def load_images(self) -> str:
        return "No images in this chat."

    async def request_approval(self, prompt: str) -> bool:
        await self.send_text(prompt)
        return True


DEFERRED_IMAGES = "Not here: images are loaded by the main assistant (a subagent has its own, empty image queue)."


class Forwarding:
    """Images and files sent, the chat's history and file URLs: those of another bridge (`_parent`)."""

    _parent: CallbackBridge

    async def send_image(self, b64: str) -> str:
        return await self._parent.send_image(b64)

    async def send_file(self, name: str, b64: str) -> str:
        return await self._parent.send_file(name, b64)

    async def get_msg_history(self, count: int, before_seq: int = 0) -> str:
        return await self._parent.get_msg_history(count, before_seq)

    async def get_private_file_url(self, file_id: str) -> str:
        return await self._parent.get_private_file_url(file_id)


class SubagentBridge(Forwarding, ImageQueue):
    """A one-shot run's bridge: only its final answer is its output, and that goes back to its caller."""

    def __init__(self, parent: CallbackBridge, label: str) -> None:
        super().__init__()
        self._parent = parent
        self._label = label

    async def send_text(self, text: str) -> str:
        log.info("[%s] intermediate text (not sent): %s", self._label, text[:500])
        return "not sent: a subagent's text goes back to the main assistant only in its final answer"

    async def load_images(self) -> str:
        return DEFERRED_IMAGES

    async def load_local_image(self, path: str) -> str:
        return DEFERRED_IMAGES

    async def request_approval(self, prompt: str) -> bool:
        """Approvals of a subagent's calls are asked in the chat the run belongs to."""
        return await self._parent.request_approval(prompt)


class ClockBridge(ChatBridge):
    """A clock run's bridge (C5): only the run's final reply is its message (the graph's deliver step sends it);
    images and files that tools send explicitly go to the target chat at once: as images and files where
    its platform sends them (`media`: OneBot), else saved under `outbox` and announced by path."""

    def __init__(self, send_to: SendTo, target: str, outbox: Path, label: str,
                 media: Callable[[str], Media | None] | None = None) -> None:
        async def send(text: str) -> None:
            await send_to(target, text)

        super().__init__(send, outbox)
        self._label = label
        self._target = target
        self._media = media

    def _sender(self) -> Media | None:
        """The platform's, asked at each send (a platform may attach after the run started)."""
        return self._media(self._target) if self._media is not None else None

    async def send_image(self, b64: str) -> str:
        media = self._sender()
        return await (media.send_image(b64) if media is not None else super().send_image(b64))

    async def send_file(self, name: str, b64: str) -> str:
        media = self._sender()
        return await (media.send_file(name, b64) if media is not None else super().send_file(name, b64))

    async def send_text(self, text: str) -> str:
        log.info("[%s] intermediate text (not sent): %s", self._label, text[:500])
        return "not sent: a scheduled task's text reaches the chat only as its final reply"

    async def request_approval(self, prompt: str) -> bool:
        """Approvals of a run's calls are asked in the target chat (the run's own text is never sent)."""
        await self._send(prompt)
        return True
