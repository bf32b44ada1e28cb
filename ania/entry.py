"""Message entry: what happens to every incoming chat message, in order.

1. An approval reply is taken first (an approval wait holds the session's turn, and replies are
   usually not addressed to the bot).
2. Slash commands (`/stop`, `/plan on|off`, `/help`, `/cmd`, `/reboot`, `/usage`, `/clock`:
   ania/clock/command.py); a custom command (config/commands.json) is expanded into its prompt and goes on
   like a normal message. Any other `/word` at the start of a message addressed to the bot gets "unknown
   command" and the list, not a model call (a path such as `/usr/bin ...` still goes to the model).
3. Otherwise the message joins its chat's queue (ania/flow/): one turn at a time per chat, chats in
   parallel, and the messages that waited for a turn are answered together by the next one (F1), as far
   as each member's rate limit and the queue's bound admit them (F2). What the model reads (a custom
   command's expansion too) is cut at `bot.max_input_runes`, with a marker that says so.

`/reboot` (admins) checks the new settings first, stops every running turn of this entry (each
session is told), then rebuilds the engine in place; messages that arrive meanwhile wait for it.

`/stop` from an admin stops the session's running turn and drops every waiting message, and stops the
runs in progress of its scheduled tasks; from anyone else it drops that person's waiting messages, stops
the running turn only when all of its messages are theirs, and the runs of the tasks they created (a
group member cannot cut off somebody else's request). When this process holds nothing of the chat and
shares its store with others (a cluster's gateway), the process holding it stops it by the same rules and
the reply gives its counts (ania/flow/stop.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ania.clock import clock_command
from ania.commands import cmd_command, command_word, help_text, unknown_command
from ania.engine import Engine, TurnResult
from ania.flow import Flow
from ania.flow.stop import STOP, WAIT_SEC, Stopped
from ania.operations import usage_text
from ania.recovery import STOPPED
from core.errors import ConfigError
from core.settings import load_settings
from services.context import CallbackBridge
from services.unicode_safe import scrub

log = logging.getLogger(__name__)

BridgeFor = Callable[[str], CallbackBridge]
CUT = "[message cut: {kept} of {total} characters]"
REBOOT_STOPPED = "Stopped: the bot is restarting (/reboot by an admin). Please send your message again in a moment."


class MessageEntry:
    def __init__(self, engine: Engine, bridge_for: BridgeFor, *, settle: bool = True) -> None:
        """`settle=False`: no settle window before a turn (`flow.settle_sec` is for chat platforms)."""
        self.engine = engine
        self.bridge_for = bridge_for
        self.flow = Flow(engine, bridge_for, settle=settle)
        #: Cleared while /reboot rebuilds the engine; messages wait for it.
        self._ready = asyncio.Event()
        self._ready.set()

    def held(self) -> int:
        """How many sessions the entry keeps state for (turns queued or running, their locks): 0 once every
        turn ended, however many sessions came by (the bounded-state tests check it)."""
        return len(self.flow.chats)

    async def submit(self, session_key: str, user_id: str, text: str, *, bridge: CallbackBridge | None = None,
                     prompt: str | None = None, addressed: bool = True,
                     message_id: str = "") -> asyncio.Future[TurnResult] | None:
        """Handle one message. Returns what resolves to the result of the turn that answers it when it was
        queued (None when consumed or refused).

        A platform may pass the message's own `bridge` (it knows the message: quotes, images), the `prompt`
        the model reads when it differs from the typed text (who spoke, what was quoted), and
        `addressed=False` for a group message not meant for the bot: then only an approval reply or a
        command is taken, and anything else is ignored. A custom command's expansion is what the model
        reads, whoever typed it and whether or not the bot was addressed."""
        await self._ready.wait()
        bridge = bridge if bridge is not None else self.bridge_for(session_key)
        answer = self.engine.services.approvals.take_reply(session_key, user_id, text)
        if answer is not None:
            await bridge.send_text(answer)
            return None
        command, trigger = text.strip(), "message"
        if command.startswith("/"):
            reply = await self.command(session_key, user_id, command)
            if reply is not None:
                await bridge.send_text(reply)
                return None
            expanded = await self.engine.services.commands.expand(command)
            if expanded:
                text, prompt, addressed, trigger = expanded, None, True, "command"
            elif addressed and (word := command_word(command)):  # no such command: say so, no model call
                await bridge.send_text(await unknown_command(self.engine.services.commands, word))
                return None
        if not addressed:
            return None
        body = cut_input(text if prompt is None else prompt, self.engine.services.settings.bot.max_input_runes)
        return await self.flow.offer(session_key, user_id, body, bridge, trigger=trigger, message_id=message_id)

    def recover(self, accept: Callable[[str], bool]) -> int:
        """Answer the messages a killed process had taken and not answered (of the sessions `accept` takes);
        how many. A platform calls it once it can send."""
        return len(self.flow.recover(accept))

    async def command(self, session_key: str, user_id: str, command: str) -> str | None:
        """Built-in commands; None means "not a command of ours" (the text goes to the model)."""
        name, _, arg = command.partition(" ")
        if name == "/stop":
            return await self._stop_command(session_key, user_id)
        if name == "/plan":
            if not self.engine.services.admins.is_admin(user_id):
                return "Only an admin can change plan mode."
            plan = self.engine.services.plan_mode
            if arg.strip() in ("on", "off"):
                plan.set(session_key, arg.strip() == "on")
            return f"Plan mode is {'on' if plan.is_on(session_key) else 'off'}."
        if name == "/clock":
            return await clock_command(self.engine.services, session_key, user_id, arg)
        if name == "/help":
            return await help_text(self.engine.services.commands)
        if name == "/cmd":
            return await cmd_command(self.engine.services, session_key, user_id, arg)
        if name == "/reboot":
            return await self.reboot(session_key, user_id)
        if name == "/usage":
            return await usage_text(self.engine.services, self.engine.graph, session_key)
        return None

    async def _stop_command(self, session_key: str, user_id: str) -> str:
        """The chat's turns, then its scheduled tasks' runs in progress, as far as `user_id` may stop them."""
        done = await self.flow.chats.stop_here(session_key, user_id)
        if not done:  # not here: the process holding the chat, if another does (none with SQLite: no wait)
            answer = await self.engine.services.signals.request(STOP, {"session": session_key, "user": user_id},
                                                                wait_sec=WAIT_SEC)
            done = Stopped.of(answer) if answer is not None else done
        return done.text()

    async def reboot(self, session_key: str, user_id: str) -> str:
        """Admins only. New settings are checked before anything stops; a broken file changes nothing."""
        if not self.engine.services.admins.is_admin(user_id):
            return "Only an admin can restart the bot."
        return await self.restart(session_key, user_id)

    async def restart(self, session_key: str, actor: str) -> str:
        """/reboot without the admin check: for the operator's own tools (the web panel, actor "panel")."""
        services = self.engine.services
        try:
            settings = load_settings(services.paths.config_dir)
        except ConfigError as e:
            return f"Not restarted: {e}. The bot goes on with the settings it has."
        self._ready.clear()
        try:
            stopped = 0
            for key in self.flow.chats.sessions():
                n, _ = await self.stop(key)
                stopped += n
                if n and key != session_key:
                    await self.bridge_for(key).send_text(REBOOT_STOPPED)
            services.store.log_op("reboot", session_key, actor, {"stopped_turns": stopped})
            try:
                await self.engine.reboot(settings)
            except Exception as e:  # noqa: BLE001 - any failure keeps the previous engine, and the user is told why
                return f"The restart failed ({type(e).__name__}: {e}); the bot runs with the previous settings."
        finally:
            self._ready.set()
        return _restarted(self.engine, stopped)

    async def stop(self, session_key: str, user_id: str | None = None, *, reason: str = STOPPED) -> tuple[int, int]:
        """Stop the session's messages that `user_id` may stop (all of them for an admin or None): waiting
        ones are dropped, the running turn is stopped when they are all of its messages; `reason`
        (ania/recovery.py) is what the settled turn and the query log say. Returns (messages stopped,
        messages left because they belong to someone else)."""
        return await self.flow.chats.stop_for(session_key, user_id, reason)

    async def drain(self) -> None:
        """Wait until every queued message is answered."""
        await self.flow.chats.drain()


def cut_input(text: str, limit: int) -> str:
    """At most `limit` runes of an incoming message and a stable marker saying so: one 10 MB line must not
    become a 27 MB model request (and then a compaction request of the same size). Lone surrogates (a
    OneBot frame may spell one as a JSON escape) become U+FFFD: stored as they are, they would fail every
    later encode."""
    text = scrub(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n{CUT.format(kept=limit, total=len(text))}"


def _restarted(engine: Engine, stopped: int) -> str:
    s = engine.services
    lines = [f"Restarted with the settings in {s.paths.config_dir.name}/ (stopped {stopped} running message(s)). "
             f"{len(s.mcp.servers)} MCP server(s), {len(s.skills.current.skills)} skill(s), "
             f"system prompt from {s.persona.source}."]
    if s.persona.problem:
        lines.append(f"prompt.json was not used: {s.persona.problem}")
    lines += [f"Skill not loaded: {p}" for p in s.skills.current.problems]
    return "\n".join(lines)
