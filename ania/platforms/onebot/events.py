"""Incoming OneBot message events as Ania sees them, and who the bot answers.

Only `post_type: message` events of type `private` or `group` become messages; a field that is missing
or of the wrong type drops the event with a log line (never an exception). `chat_of` tells which chat a
message fetched by id belongs to, so that nothing from another chat reaches this chat's model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ania.platforms.onebot.message import Content, parse_content
from core.settings import BotSettings


@dataclass(frozen=True)
class Incoming:
    kind: Literal["group", "private"]
    chat_id: str  # the group's id, or the other user's
    user_id: str
    name: str
    message_id: str
    content: Content = field(default_factory=Content)
    #: The event it was read from: a cluster worker reads it again from the inbox (ania/cluster/).
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def session_key(self) -> str:
        return f"g:{self.chat_id}" if self.kind == "group" else f"f:{self.chat_id}"

    def render(self, self_id: str = "") -> str:
        """The text the model reads, the bot's own @ left out."""
        return self.content.text(self_id)


def _id(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return value.strip() if isinstance(value, str) and value.strip().isdigit() else ""


def parse_event(event: dict[str, Any]) -> Incoming | None:
    """A message event (or a `get_msg` answer) as an Incoming; None when it lacks what a message needs."""
    kind = event.get("message_type")
    user_id = _id(event.get("user_id"))
    raw_sender = event.get("sender")
    sender: dict[str, Any] = raw_sender if isinstance(raw_sender, dict) else {}
    if not user_id:
        user_id = _id(sender.get("user_id"))
    if kind not in ("group", "private") or not user_id:
        return None
    chat_id = _id(event.get("group_id")) if kind == "group" else user_id
    if not chat_id:
        return None
    raw = event.get("message")
    if raw is None:
        raw = event.get("raw_message")
    name = sender.get("card") or sender.get("nickname") or user_id
    return Incoming(kind=kind, chat_id=chat_id, user_id=user_id, name=str(name)[:64],
                    message_id=str(event.get("message_id") or ""), content=parse_content(raw), raw=event)


def chat_of(data: dict[str, Any], self_id: str) -> str | None:
    """The session key of the chat a fetched message (a `get_msg` answer, a history item) belongs to, or None
    when the answer does not say: then it counts as another chat's. Message ids are small integers any
    member can walk, so a quote is trusted only as far as the implementation names its chat. A private
    message the bot sent names its peer in `target_id` (NapCat); without one the peer is unknown."""
    kind = data.get("message_type")
    if kind == "group":
        group = _id(data.get("group_id"))
        return f"g:{group}" if group else None
    if kind != "private":
        return None
    sender = data.get("sender")
    user = _id(data.get("user_id")) or (_id(sender.get("user_id")) if isinstance(sender, dict) else "")
    if user and user == self_id:
        peer = _id(data.get("target_id"))
        return f"f:{peer}" if peer else None
    return f"f:{user}" if user else None


def allowed(msg: Incoming, bot: BotSettings) -> str | None:
    """None when the bot may answer this message, else why not (for the log)."""
    if msg.user_id in bot.blocked_users:
        return "blocked user"
    if msg.kind == "group" and bot.groups and msg.chat_id not in bot.groups:
        return "group not in bot.groups"
    if bot.users and msg.user_id not in bot.users and msg.user_id not in bot.admins:
        return "user not in bot.users"
    return None


def strip_prefix(text: str, prefixes: list[str]) -> str | None:
    """The text after a configured prefix, or None when it has none."""
    low = text.lower()
    for p in sorted(prefixes, key=len, reverse=True):
        if p and low.startswith(p.lower()):
            return text[len(p):].lstrip(" ,:，：")
    return None
