"""Images the model has seen or can send: type sniffing, bounded downloads, and a per-session shelf.

Images travel as base64 strings (what OneBot's `base64://` and OpenAI's data URLs both take). The shelf
keeps the last few images of a session under short refs (`img-3`) so the model can send one to the chat
later (`send_image`); it is memory only and bounded (sessions by images), like the other per-session state.
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Awaitable

from core.settings import Settings
from services.lru import LRU
from services.net.fetch import FetchError as FetchError  # the image paths catch the guard's error family
from services.net.fetch import Guard, fetch

MAX_IMAGE_BYTES = 10 * 1024 * 1024
IMAGES_PER_SESSION = 16
MAX_SESSIONS = 256

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


CANNOT_SEE = ("this model cannot see images: set llm.vision = true for a vision model, or vision.base_url and "
              "vision.model for a second model that describes them")


def can_see(settings: Settings) -> bool:
    """Whether loaded images reach the model (as image parts, or described by the vision model)."""
    return settings.llm.vision or settings.vision.configured


def sniff_mime(data: bytes) -> str | None:
    """The image type from the first bytes; None when it is not an image we know."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def b64_mime(b64: str) -> str:
    try:
        head = base64.b64decode(b64[:64] + "=" * (-len(b64[:64]) % 4), validate=False)
    except ValueError:
        return "image/png"
    return sniff_mime(head) or "image/png"


def data_url(b64: str) -> str:
    return f"data:{b64_mime(b64)};base64,{b64}"


async def checked_image(download: Awaitable[bytes], not_image: str) -> bytes | str:
    """The bytes of an image, or why not: the download's error, or `not_image` when the bytes are no image
    type we know (the meme tool and the chat's image loading both skip such an image and say why)."""
    try:
        data = await download
    except FetchError as e:
        return str(e)
    return data if sniff_mime(data) is not None else not_image


async def fetch_bytes(url: str, timeout: float, *, private_ok: bool = False, setting: str = "") -> bytes:
    """An image at `url` (http/https only, at most MAX_IMAGE_BYTES) through the address guard
    (services/net/fetch.py): a URL from a member, the model or an API answer; FetchError on any failure."""
    return (await fetch(url, Guard(MAX_IMAGE_BYTES, timeout, private_ok, setting))).body


class ImageShelf:
    """The last images each session saw, by ref, for sending them on."""

    def __init__(self, per_session: int = IMAGES_PER_SESSION, max_sessions: int = MAX_SESSIONS) -> None:
        self._per_session = per_session
        self._sessions: LRU[str, dict[str, str]] = LRU(max_sessions)
        self._ids = itertools.count(1)

    def put(self, session_key: str, b64: str) -> str:
        shelf = self._sessions.get(session_key) or self._sessions.put(session_key, {})
        ref = f"img-{next(self._ids)}"
        shelf[ref] = b64
        while len(shelf) > self._per_session:
            shelf.pop(next(iter(shelf)))
        return ref

    def get(self, session_key: str, ref: str) -> str | None:
        shelf = self._sessions.get(session_key)
        return shelf.get(ref.strip()) if shelf else None

    def refs(self, session_key: str) -> list[str]:
        shelf = self._sessions.get(session_key)
        return list(shelf) if shelf else []
