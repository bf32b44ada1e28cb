"""The OneBot callback bridge (T7): what tools of one message's run can do in its chat.

One bridge per incoming message, so it knows what to quote, whose images `load_images` means (this
message's and the one it replies to) and whom an approval prompt should @-mention. Sends go through the
adapter, which splits, retries once and logs what it could not deliver.
"""

from __future__ import annotations

import base64
import logging

from ania.platforms.bridge import MAX_QUEUED_IMAGES, ImageQueue
from ania.platforms.onebot.events import Incoming
from ania.platforms.onebot.message import Segment
from ania.platforms.onebot.outbound import Outbound
from services.images import checked_image

log = logging.getLogger(__name__)

NOT_SENT = "not sent: the chat could not be reached (the message is in the log)"


class OneBotBridge(ImageQueue):
    def __init__(self, adapter: Outbound, session_key: str, message: Incoming | None = None,
                 quoted: Incoming | None = None) -> None:
        super().__init__()
        self._adapter = adapter
        self.session_key = session_key
        self.message = message
        self.quoted = quoted

    @property
    def _quote(self) -> str:
        return self.message.message_id if self.message and self.message.kind == "group" else ""

    async def send_text(self, text: str) -> str:
        return "sent" if await self._adapter.send_text(self.session_key, text, quote=self._quote) else NOT_SENT

    async def send_image(self, b64: str) -> str:
        sent = await self._adapter.send_segments(self.session_key, [Segment("image", {"file": f"base64://{b64}"})])
        return "sent" if sent is not None else NOT_SENT

    async def send_file(self, name: str, b64: str) -> str:
        return await self._adapter.upload_file(self.session_key, name, b64)

    async def get_msg_history(self, count: int, before_seq: int = 0) -> str:
        return await self._adapter.history(self.session_key, count, before_seq)

    async def get_private_file_url(self, file_id: str) -> str:
        return await self._adapter.file_url(self.session_key, file_id)

    async def load_images(self) -> str:
        here = list(self.message.content.images) if self.message else []
        there = list(self.quoted.content.images) if self.quoted else []
        if not here and not there:
            return "No images: neither this message nor the message it replies to has one."
        loaded: list[str] = []
        problems: list[str] = []
        for seg in (here + there)[:MAX_QUEUED_IMAGES]:
            data = await checked_image(self._adapter.image_bytes(seg),
                                       "a file that is not a PNG, JPEG, GIF, WebP or BMP image")
            if isinstance(data, str):
                problems.append(data)
                continue
            loaded.append(base64.b64encode(data).decode())
        if not loaded:
            return f"Error: the images could not be loaded ({'; '.join(problems)})."
        self.queue_images(loaded)
        origin = f"{len(here)} from this message" + (f", {len(there)} from the message it replies to" if there else "")
        note = f"; {len(problems)} could not be loaded: {'; '.join(problems)}" if problems else ""
        return f"Loaded {len(loaded)} image(s) ({origin}){note}"

    async def request_approval(self, prompt: str) -> bool:
        at = self.message.user_id if self.message and self.message.kind == "group" else ""
        return await self._adapter.send_text(self.session_key, prompt, quote=self._quote, at=at)
