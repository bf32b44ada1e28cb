"""The bridge of a batch's turn (F1): the reply, sends and images go through the batch's last message's
bridge (the reply quotes it), and an approval prompt through the bridge of the requester's own last
message (the least-privileged author's: in a group it quotes and @-mentions them, as for their message
alone)."""

from __future__ import annotations

from ania.platforms.bridge import Forwarding
from services.context import CallbackBridge


class BatchBridge(Forwarding):
    def __init__(self, last: CallbackBridge, asker: CallbackBridge) -> None:
        self._parent = last
        self._asker = asker

    async def send_text(self, text: str) -> str:
        return await self._parent.send_text(text)

    async def load_images(self) -> str:
        return await self._parent.load_images()

    def take_loaded_images(self) -> list[str]:
        return self._parent.take_loaded_images()

    async def load_local_image(self, path: str) -> str:
        return await self._parent.load_local_image(path)

    def queue_images(self, images: list[str]) -> None:
        self._parent.queue_images(images)

    async def request_approval(self, prompt: str) -> bool:
        return await self._asker.request_approval(prompt)
