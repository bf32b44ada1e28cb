"""Everything Ania asks of the OneBot implementation: sending (split, retried once, logged when lost),
uploading files, reading history, file URLs and image bytes.

Group sessions (`g:<group>`) use the `*_group_*` actions, private ones (`f:<user>`) the private or
friend ones. History and file actions are the implementations' extensions (NapCat, Lagrange, LLOneBot
all offer them); where one is missing, the tool gets a clear error result. Nothing of another chat is read
for a chat's model: a history item that names another chat is left out, and `get_private_file_url` (which
names no chat) is asked only for a file id seen in this chat's messages.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ania.platforms.onebot.connection import Connection, OneBotError
from ania.platforms.onebot.events import chat_of, parse_event
from ania.platforms.onebot.message import Segment, split_text, text
from core.settings import OneBotSettings
from services.images import MAX_IMAGE_BYTES, FetchError, fetch_bytes
from services.lru import LRU
from services.net.fetch import Refused
from services.retry import ONEBOT_SEND, RetryPolicy

log = logging.getLogger(__name__)

#: Message ids the bot sent (and where to), to tell a reply to the bot from other replies without asking.
OWN_IDS = 4096
#: File ids seen in a chat's messages: `get_private_file_url` names no chat, so the id must have been here.
SEEN_FILES = 4096
NOT_HERE = ("Error: file {file_id} was not sent in this chat as far as the bot has seen (read the chat with "
            "get_msg_history if it was; files of other chats are not available here).")


def target(session_key: str) -> tuple[str, dict[str, Any]]:
    """("group" | "private", the id parameter) of a session key."""
    kind, _, ident = session_key.partition(":")
    value: Any = int(ident) if ident.isdigit() else ident
    return ("group", {"group_id": value}) if kind == "g" else ("private", {"user_id": value})


class Outbound:
    def __init__(self, conn: Connection, settings: Callable[[], OneBotSettings],
                 retry: RetryPolicy = ONEBOT_SEND) -> None:
        self.conn = conn
        self._settings = settings
        self.retry = retry
        self._own: LRU[str, str] = LRU(OWN_IDS)
        self._files: LRU[str, str] = LRU(SEEN_FILES)
        self.self_id = ""

    def own_chat(self, message_id: str) -> str | None:
        """The session the bot sent this message to, when it is one of the bot's (recent) messages."""
        return self._own.get(message_id) if message_id else None

    def note_sent(self, message_id: str, session_key: str) -> None:
        """A message the bot sent through another process (a cluster worker, through the gateway's relay)."""
        if message_id:
            self._own.put(message_id, session_key)

    def note_file_ids(self, session_key: str, file_ids: Iterable[str]) -> None:
        """Remember the file ids a message of this private chat showed (the model may ask for their URLs). A
        group's file is asked of that group (get_group_file_url): its ids would only push private ones out."""
        if target(session_key)[0] != "private":
            return
        for file_id in file_ids:
            self._files.put(file_id, session_key)

    def file_chat(self, file_id: str) -> str | None:
        """The private chat a (recent) message showed this file id in, or None: `file_url`'s check, public for
        the tests of the bounded record."""
        return self._files.get(file_id)

    async def _twice(self, action: str, params: dict[str, Any], what: str) -> Any:
        """Call, and once more on failure (`self.retry`); OneBotError after the last failure."""
        return await self.retry.call(
            lambda: self.conn.call(action, params), lambda e: isinstance(e, OneBotError),
            lambda e: log.info("OneBot: %s failed (%s); retrying once", what, e))

    async def send_segments(self, session_key: str, segments: list[Segment]) -> str | None:
        """The sent message's id ("" when the implementation gave none), or None when it was lost."""
        kind, params = target(session_key)
        payload = {**params, "message": [s.to_json() for s in segments]}
        try:
            data = await self._twice(f"send_{kind}_msg", payload, f"a message to {session_key}")
        except OneBotError as e:
            preview = "".join(s.get("text") or f"[{s.type}]" for s in segments)
            log.warning("OneBot: a message to %s was lost after a retry (%s): %.300s", session_key, e, preview)
            return None
        mid = str(data.get("message_id") or "") if isinstance(data, dict) else ""
        self.note_sent(mid, session_key)
        return mid

    async def send_text(self, session_key: str, body: str, quote: str = "", at: str = "") -> bool:
        """Split at `onebot.max_message_runes`; the first part quotes `quote` and @-mentions `at`."""
        ok = True
        for i, chunk in enumerate(split_text(body, self._settings().max_message_runes)):
            head: list[Segment] = []
            if i == 0 and quote:
                head.append(Segment("reply", {"id": quote}))
            if i == 0 and at:
                head += [Segment("at", {"qq": at}), text(" ")]
            ok = await self.send_segments(session_key, [*head, text(chunk)]) is not None and ok
        return ok

    async def upload_file(self, session_key: str, name: str, b64: str) -> str:
        kind, params = target(session_key)
        action = "upload_group_file" if kind == "group" else "upload_private_file"
        try:
            await self._twice(action, {**params, "file": f"base64://{b64}", "name": Path(name).name},
                              f"uploading {name} to {session_key}")
        except OneBotError as e:
            log.warning("OneBot: file %s to %s was lost after a retry: %s", name, session_key, e)
            return f"Error: the file could not be sent ({e})."
        return "sent"

    async def history(self, session_key: str, count: int, before_seq: int = 0) -> str:
        kind, params = target(session_key)
        action = "get_group_msg_history" if kind == "group" else "get_friend_msg_history"
        query: dict[str, Any] = {**params, "count": count}
        if before_seq:
            query["message_seq"] = before_seq
        try:
            data = await self.conn.call(action, query)
        except OneBotError as e:
            return f"Error: the chat history could not be read ({e})."
        items = data.get("messages") if isinstance(data, dict) else None
        if not isinstance(items, list):
            return "(no messages)"
        lines = []
        for item in sorted((m for m in items if isinstance(m, dict)), key=lambda m: m.get("time") or 0)[-count:]:
            item = {**item, "message_type": item.get("message_type") or kind}
            if chat_of(item, self.self_id) not in (None, session_key):
                continue  # the query names this chat; an item that says it is another's is left out
            msg = parse_event(item)
            if msg is None:
                continue
            self.note_file_ids(session_key, msg.content.file_ids)
            when = time.strftime("%m-%d %H:%M", time.localtime(int(item.get("time") or 0)))
            who = "you (the bot)" if msg.user_id == self.self_id else f"{msg.name} ({msg.user_id})"
            lines.append(f"[{when}] {who}: {msg.render(self.self_id)}")
        return "\n".join(lines) or "(no messages)"

    async def file_url(self, session_key: str, file_id: str) -> str:
        kind, params = target(session_key)
        if kind == "private" and self.file_chat(file_id) != session_key:
            return NOT_HERE.format(file_id=file_id)  # the private action would find any chat's file
        action, query = (("get_group_file_url", {**params, "file_id": file_id}) if kind == "group"
                         else ("get_private_file_url", {"file_id": file_id}))
        try:
            data = await self.conn.call(action, query)
        except OneBotError as e:
            return f"Error: no URL for file {file_id} ({e})."
        url = data.get("url") if isinstance(data, dict) else None
        return str(url) if url else f"Error: the implementation gave no URL for file {file_id}."

    async def get_message(self, message_id: str) -> dict[str, Any] | None:
        try:
            data = await self.conn.call("get_msg", {"message_id": int(message_id) if message_id.isdigit()
                                                    else message_id}, timeout=10)
        except OneBotError as e:
            log.info("OneBot: get_msg %s failed: %s", message_id, e)
            return None
        return data if isinstance(data, dict) else None

    async def image_bytes(self, seg: Segment) -> bytes:
        """An image segment's bytes: its URL, an inline base64 file, or the implementation's get_image.

        The segment's URL may be written by a member (a CQ code), so it goes through the address guard
        (loopback and private hosts refused unless onebot.allow_private_hosts); when it is refused and the
        segment names a file, the implementation is asked for it instead. What get_image answers comes
        from the trusted peer, which may well serve its own files from 127.0.0.1."""
        settings = self._settings()
        timeout = settings.api_timeout_sec
        file = seg.get("file")
        if file.startswith("base64://"):
            return base64.b64decode(file[len("base64://"):])
        is_url = file.lower().startswith(("http://", "https://"))
        url = seg.get("url") or (file if is_url else "")
        if url:
            try:
                return await fetch_bytes(url, timeout, private_ok=settings.allow_private_hosts,
                                         setting="onebot.allow_private_hosts")
            except Refused as refused:
                if not file or is_url:
                    raise
                try:
                    return await self._get_image(file, timeout)
                except FetchError:
                    raise refused from None
        return await self._get_image(file, timeout)

    async def _get_image(self, file: str, timeout: float) -> bytes:
        try:
            data = await self.conn.call("get_image", {"file": file})
        except OneBotError as e:
            raise FetchError(f"get_image failed ({e})") from None
        if isinstance(data, dict):
            if data.get("base64"):
                return base64.b64decode(str(data["base64"]))
            if data.get("url"):
                return await fetch_bytes(str(data["url"]), timeout, private_ok=True)
            local = _read_local(str(data.get("file") or ""))
            if local is not None:
                return local
        raise FetchError("the implementation gave neither a URL nor the image")


def _read_local(path: str) -> bytes | None:
    """The image file the implementation downloaded (when it runs on this machine)."""
    p = Path(path)
    if path and p.is_file() and p.stat().st_size <= MAX_IMAGE_BYTES:
        return p.read_bytes()
    return None
