"""Message entry: what happens to every incoming chat message, in order.

1. An approval reply is taken first (an approval wait holds the session's turn, and replies are
   usually not addressed to the bot).
2. Slash commands (`/stop`, `/plan on|off`).
3. Otherwise the message joins its session's queue: one turn at a time per session, sessions in
   parallel.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from ania.engine import Engine, TurnResult
from services.plan_mode import PlanMode
from tools.context import CallbackBridge

log = logging.getLogger(__name__)

BridgeFor = Callable[[str], CallbackBridge]


class MessageEntry:
    def __init__(self, engine: Engine, bridge_for: BridgeFor) -> None:
        self.engine = engine
        self.bridge_for = bridge_for
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: dict[str, set[asyncio.Task]] = {}

    async def submit(self, session_key: str, user_id: str, text: str) -> asyncio.Task | None:
        """Handle one message. Returns the turn's task when one was queued (None when consumed)."""
        bridge = self.bridge_for(session_key)
        answer = self.engine.approvals.take_reply(session_key, user_id, text)
        if answer is not None:
            await bridge.send_text(answer)
            return None
        command = text.strip()
        if command.startswith("/"):
            reply = await self.command(session_key, user_id, command)
            if reply is not None:
                await bridge.send_text(reply)
                return None
        task = asyncio.create_task(self._serial(session_key, user_id, text, bridge))
        self._tasks.setdefault(session_key, set()).add(task)
        task.add_done_callback(lambda t: self._tasks.get(session_key, set()).discard(t))
        return task

    async def _serial(self, session_key: str, user_id: str, text: str, bridge: CallbackBridge) -> TurnResult:
        lock = self._locks.setdefault(session_key, asyncio.Lock())
        async with lock:
            return await self.engine.run_turn(session_key, user_id, text, bridge)

    async def command(self, session_key: str, user_id: str, command: str) -> str | None:
        """Built-in commands; None means "not a command of ours" (the text goes to the model)."""
        name, _, arg = command.partition(" ")
        if name == "/stop":
            stopped = await self.stop(session_key)
            return f"Stopped {stopped} running or queued message(s)." if stopped else "Nothing to stop."
        if name == "/plan":
            if not self.engine.services.settings.is_admin(user_id):
                return "Only an admin can change plan mode."
            plan = PlanMode(self.engine.services.store)
            if arg.strip() in ("on", "off"):
                plan.set(session_key, arg.strip() == "on")
            return f"Plan mode is {'on' if plan.is_on(session_key) else 'off'}."
        return None

    async def stop(self, session_key: str) -> int:
        tasks = [t for t in self._tasks.get(session_key, set()) if not t.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return len(tasks)

    async def drain(self) -> None:
        """Wait until every queued turn is done."""
        while True:
            pending = [t for ts in self._tasks.values() for t in ts if not t.done()]
            if not pending:
                return
            await asyncio.gather(*pending, return_exceptions=True)
