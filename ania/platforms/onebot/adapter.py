"""The OneBot v11 platform: events in, message entry, replies out (D7).

Which messages the bot takes: every private message; in a group one that @-mentions the bot, replies to
one of its messages in that group, or starts with one of `bot.group_prefixes`. A quoted message is shown
to the model (and its images to `load_images`) only when it belongs to the same chat; a quote from
another chat is shown as such, without its content, and addresses nobody. Approval answers and slash
commands are taken in a group without an @ (entry decides; anything else that is not addressed is
ignored). The bot's own messages, blocked users, and users or groups outside `bot.users` / `bot.groups`
are ignored.

Events of one session are taken in arrival order (a per-session lock around the short step before the
message is queued); entry then runs one turn at a time per session, sessions in parallel. The adapter
attaches to `services.outboxes` for `g:` and `f:` sessions, so approval prompts to an admin's private
chat and other sends reach QQ.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

from ania.engine import Engine
from ania.entry import MessageEntry
from ania.platforms.onebot.bridge import OneBotBridge
from ania.platforms.onebot.connection import Connection, close_quietly, dial_forever, guarded_listen, listen
from ania.platforms.onebot.events import Incoming, allowed, chat_of, parse_event, strip_prefix
from ania.platforms.onebot.outbound import Outbound
from core.errors import ConfigError
from core.settings import OneBotSettings
from services.locks import KeyedLocks

log = logging.getLogger(__name__)

SHUTTING_DOWN = "Stopped: the bot is shutting down. Please send your message again once it is back."
QUOTE_RUNES = 300
QUOTE_ELSEWHERE = "[replying to a message from another chat: not shown here]"


def is_chat_session(session_key: str) -> bool:
    return session_key.startswith(("g:", "f:"))


class OneBotAdapter:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.conn = Connection(self.on_event, self.settings.api_timeout_sec, self.settings.heartbeat_floor_sec)
        self.out = Outbound(self.conn, lambda: self.settings)
        self.entry = MessageEntry(engine, self.bridge_for)
        self._order = KeyedLocks()
        self._accepting = True
        self._recovered = False
        self._detach: Any = None
        self._dialer: asyncio.Task[None] | None = None
        self._server: Any = None

    @property
    def settings(self) -> OneBotSettings:
        return self.engine.services.settings.onebot  # read each time: /reboot may replace the services

    @property
    def self_id(self) -> str:
        return self.out.self_id

    def bridge_for(self, session_key: str) -> OneBotBridge:
        return OneBotBridge(self.out, session_key)

    # --- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        s = self.settings
        if not (s.ws_url or s.listen):
            raise ConfigError("set onebot.ws_url (forward WebSocket: Ania dials the implementation) or "
                              "onebot.listen (reverse WebSocket: the implementation dials Ania), e.g. "
                              "ANIA_ONEBOT__LISTEN=127.0.0.1:8080")
        host, port = self._listen_address()
        if s.ws_url:
            try:
                parse_uri(s.ws_url)  # a malformed URL would never connect: say so now, not at every redial
            except InvalidURI as e:
                raise ConfigError(f"onebot.ws_url: {e}") from None
        self._detach = self.engine.services.outboxes.attach("onebot", self._outbox, is_chat_session, self.bridge_for)
        if s.listen:
            try:
                self._server = await listen(self.conn, host, port, s.path, s.access_token, self._login)
            except OSError as e:
                self._detach()
                raise ConfigError(f"onebot.listen {s.listen!r}: {e}") from None
            log.info("OneBot: listening on ws://%s:%d%s", host, port, "/" + s.path.strip("/"))
        if s.ws_url:
            self._dialer = asyncio.create_task(dial_forever(self.conn, s.ws_url, s.access_token,
                                                            s.reconnect_max_sec, self._login))

    def _listen_address(self) -> tuple[str, int]:
        """The reverse listener's host and port (("", 0) without one). Whoever connects speaks for QQ and can
        claim any sender, an admin too: without a token only this machine may connect, and it is warned."""
        s = self.settings
        if not s.listen:
            return "", 0
        host, port = guarded_listen(s.listen, s.access_token, "onebot.listen", "onebot.access_token",
                                    "ANIA_ONEBOT__ACCESS_TOKEN; the same token in the OneBot implementation")
        if not s.access_token:
            log.warning("OneBot: onebot.listen %s has no onebot.access_token: any program on this machine can "
                        "connect as the QQ implementation and claim to be an admin; set a token", s.listen)
        return host, port

    @property
    def port(self) -> int:
        """The reverse listener's port (tests listen on port 0)."""
        return int(next(iter(self._server.sockets)).getsockname()[1]) if self._server else 0

    async def stop(self, grace: float | None = None) -> None:
        """Take no new messages; let running turns finish for `grace` seconds, then stop them (their
        sessions are settled and told), then close the link."""
        self._accepting = False
        grace = self.settings.shutdown_grace_sec if grace is None else grace
        try:
            await asyncio.wait_for(asyncio.shield(self.entry.drain()), grace)  # a timeout must not cancel the turns
        except TimeoutError:
            for key in self.entry.flow.chats.sessions():
                stopped, _ = await self.entry.stop(key)
                if stopped:
                    await self.out.send_text(key, SHUTTING_DOWN)
        if self._dialer is not None:
            self._dialer.cancel()
            await asyncio.gather(self._dialer, return_exceptions=True)
        await close_quietly(self._server)
        if self._detach is not None:
            self._detach()

    async def _login(self) -> None:
        await self._get_login_info()
        if not self._recovered:  # once a link is up: the replies of the recovered messages can be sent
            self._recovered = True
            n = self.entry.recover(is_chat_session)
            if n:
                log.info("OneBot: %d message(s) taken before a restart and not answered are answered now", n)

    async def _get_login_info(self) -> None:
        try:
            data = await self.conn.call("get_login_info", timeout=10)
        except Exception as e:  # noqa: BLE001 - the login info is optional: the bot works without its own id
            log.info("OneBot: get_login_info failed: %s", e)
            return
        if isinstance(data, dict) and data.get("user_id"):
            self.out.self_id = str(data["user_id"])

    async def _outbox(self, session_key: str, body: str) -> bool:
        return await self.out.send_text(session_key, body)

    # --- events ------------------------------------------------------------------------------------

    async def on_event(self, event: dict[str, Any]) -> None:
        if event.get("self_id") is not None:
            self.out.self_id = str(event["self_id"])
        post = event.get("post_type")
        if post == "meta_event":
            log.debug("OneBot meta event: %s %s", event.get("meta_event_type"), event.get("sub_type"))
            return
        if post != "message":
            return  # notices, requests, and NapCat's message_sent echoes of our own messages
        msg = parse_event(event)
        if msg is None:
            log.info("OneBot: a message event without usable ids was ignored: %.200r", event)
            return
        if msg.user_id == self.self_id:
            return
        why = allowed(msg, self.engine.services.settings.bot)
        if why:
            log.debug("OneBot: message from %s in %s ignored (%s)", msg.user_id, msg.session_key, why)
            return
        if not self._accepting:
            log.warning("OneBot: message from %s in %s arrived during shutdown (not taken)",
                        msg.user_id, msg.session_key)
            return
        async with self._order.hold(msg.session_key):
            await self._take(msg)

    async def _take(self, msg: Incoming) -> None:
        quoted, to_bot, elsewhere = await self._quoted(msg)
        self.out.note_file_ids(msg.session_key, msg.content.file_ids + (quoted.content.file_ids if quoted else ()))
        typed = msg.content.plain
        addressed = msg.kind == "private" or to_bot or msg.content.mentions(self.self_id)
        if msg.kind == "group":
            rest = strip_prefix(typed, list(self.engine.services.settings.bot.group_prefixes))
            if rest is not None:
                typed, addressed = rest, True
        prompt = self._prompt(msg, quoted, typed) + (f"\n{QUOTE_ELSEWHERE}" if elsewhere else "")
        bridge = OneBotBridge(self.out, msg.session_key, msg, quoted)
        await self.entry.submit(msg.session_key, msg.user_id, typed or prompt, bridge=bridge, prompt=prompt,
                                addressed=addressed, message_id=msg.message_id)

    async def _quoted(self, msg: Incoming) -> tuple[Incoming | None, bool, bool]:
        """The message this one replies to when it belongs to this chat (and can be read), whether it is one of
        the bot's, and whether it belongs to another chat. Ids are small integers a member can walk, so a
        message is this chat's only when our record of the bot's sends or the implementation's answer says
        so; an answer that names no chat counts as another chat's."""
        rid = msg.content.reply_id
        if not rid:
            return None, False, False
        own = self.out.own_chat(rid)
        data = await self.out.get_message(rid) if own in (None, msg.session_key) else None  # else not shown
        chat = own or (chat_of(data, self.self_id) if data else None)
        if chat != msg.session_key:
            if data is None and own is None:
                return None, False, False  # could not be read: nothing to show
            log.info("OneBot: %s in %s quoted message %s of another chat (not shown)", msg.user_id,
                     msg.session_key, rid)
            return None, False, True
        quoted = parse_event({**data, "message_type": msg.kind, "group_id": msg.chat_id}) if data else None
        return quoted, own is not None or (quoted is not None and quoted.user_id == self.self_id), False

    def _prompt(self, msg: Incoming, quoted: Incoming | None, typed: str) -> str:
        """What the model reads: in a group who spoke (the id is added by the prompt step), the message
        with markers for images, files and mentions, and the quoted message."""
        body = msg.render(self.self_id)
        prefix = strip_prefix(body, list(self.engine.services.settings.bot.group_prefixes))
        if msg.kind == "group" and prefix is not None:
            body = prefix
        lines = [f"{msg.name}: {body}" if msg.kind == "group" else body]
        if quoted is not None:
            who = "you (the bot)" if quoted.user_id == self.self_id else f"{quoted.name} ({quoted.user_id})"
            said = quoted.render(self.self_id)
            said = said if len(said) <= QUOTE_RUNES else said[:QUOTE_RUNES] + "…"
            lines.append(f"[replying to {who}: {said}]")
        return "\n".join(lines)
