"""Each chat's queue and its one worker (F1, F2): the turns of a chat run one at a time, and each turn
answers what waited for it together.

A message that passes admission (ania/flow/admit.py) is recorded in the durable inbox, then waits. The
chat's worker starts a turn as soon as there is something to answer (after `flow.settle_sec` from the
oldest waiting message's arrival, when set): it takes a bounded batch, members in turn
(services/flow/batch.py), and runs one turn for it with the rights of its least-privileged author,
answering through the bridge of its last message (so the reply quotes it). Messages arriving meanwhile
wait for the next turn. The worker ends when its queue is empty; an idle chat holds no state.

/stop of a chat this process holds, sent to another process (a cluster's gateway), arrives as the signal
`STOP` (ania/flow/stop.py): the chats listen to the signals of the engine's current services.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ania.engine import Engine, TurnResult
from ania.flow.bridge import BatchBridge
from ania.flow.message import Waiting, batch_of
from ania.flow.stop import STOP, Stopped
from ania.recovery import CANCEL_STATUS, STOPPED
from services.cluster import Payload, Signals
from services.flow import batch_text, least_privileged, take_batch


@dataclass(eq=False)
class ChatQueue:
    waiting: list[Waiting] = field(default_factory=list)
    worker: asyncio.Task[None] | None = None
    turn: asyncio.Task[TurnResult] | None = None
    batch: list[Waiting] = field(default_factory=list)


class Chats:
    def __init__(self, engine: Engine, *, settle: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
        """`settle=False`: never wait for more messages before a turn (the terminal)."""
        self.engine = engine
        self._settle = settle
        self.clock = clock
        self._chats: dict[str, ChatQueue] = {}
        self._signals: Signals | None = None
        self._listen()

    def _listen(self) -> None:
        """Take /stop signals from the services' signals (again after a /reboot built new services)."""
        signals = self.engine.services.signals
        if signals is not self._signals:
            signals.subscribe(STOP, self._on_stop)
            self._signals = signals

    def __len__(self) -> int:
        return len(self._chats)

    def sessions(self) -> list[str]:
        return list(self._chats)

    def waiting(self, session_key: str) -> int:
        chat = self._chats.get(session_key)
        return len(chat.waiting) if chat else 0

    def put(self, message: Waiting) -> None:
        self._listen()
        chat = self._chats.setdefault(message.session_key, ChatQueue())
        chat.waiting.append(message)
        if chat.worker is None:
            chat.worker = asyncio.create_task(self._work(message.session_key, chat))

    async def _work(self, key: str, chat: ChatQueue) -> None:
        try:
            while chat.waiting:
                settle = self.engine.services.settings.flow.settle_sec if self._settle else 0.0
                wait = chat.waiting[0].arrived + settle - self.clock()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                flow = self.engine.services.settings.flow
                batch, chat.waiting = take_batch(chat.waiting, lambda m: m.user_id, lambda m: len(m.body),
                                                 max_messages=flow.max_batch_messages, max_runes=flow.max_batch_runes)
                chat.batch, chat.turn = batch, asyncio.create_task(self._turn(key, batch))
                await asyncio.wait([chat.turn])
                for m in batch:
                    m.resolve(chat.turn)
                chat.batch, chat.turn = [], None
        except asyncio.CancelledError:
            if chat.turn is not None:
                chat.turn.cancel()
            raise
        finally:
            if self._chats.get(key) is chat:
                del self._chats[key]
            if chat.waiting:  # only when the worker itself was cancelled: they are stopped, not lost
                self._drop(key, chat.waiting, STOPPED)

    async def _turn(self, key: str, batch: list[Waiting]) -> TurnResult:
        """One turn for the batch: the least-privileged author's rights, the last message's bridge (approval
        prompts: the requester's last message's)."""
        requester = least_privileged([m.user_id for m in batch], self.engine.services.admins.is_admin)
        text = batch_text([(m.user_id, m.received, m.body) for m in batch])
        triggers = {m.trigger for m in batch}
        trigger = triggers.pop() if len(triggers) == 1 else "message"
        last, asker = batch[-1].bridge, next(m for m in reversed(batch) if m.user_id == requester).bridge
        bridge = last if asker is last else BatchBridge(last, asker)
        return await self.engine.run_turn(key, requester, text, bridge, trigger, batch_of(batch))

    async def stop(self, key: str, may_stop: Callable[[str], bool], reason: str = STOPPED) -> tuple[int, int]:
        """Drop the waiting messages whose author `may_stop`, and stop the running turn when every author of
        its batch is such; (messages stopped, messages left because they are someone else's)."""
        chat = self._chats.get(key)
        if chat is None:
            return 0, 0
        dropped = [m for m in chat.waiting if may_stop(m.user_id)]
        chat.waiting = [m for m in chat.waiting if not may_stop(m.user_id)]
        self._drop(key, dropped, reason)
        stopped, others = len(dropped), len(chat.waiting)
        turn, batch = chat.turn, chat.batch
        if turn is not None and not turn.done():
            if all(may_stop(m.user_id) for m in batch):
                turn.cancel(reason)
                await asyncio.wait([turn])
                for m in batch:
                    m.resolve(turn)
                stopped += len(batch)
            else:
                others += len(batch)
        return stopped, others

    def release(self, key: str) -> int:
        """Let go of the chat's waiting messages without answering them: their inbox rows stay for another
        process (a cluster worker shutting down); how many."""
        chat = self._chats.get(key)
        if chat is None:
            return 0
        released, chat.waiting = chat.waiting, []
        for m in released:
            m.future.cancel()
        return len(released)

    async def stop_for(self, key: str, user_id: str | None, reason: str = STOPPED) -> tuple[int, int]:
        """`stop` with the rights of `user_id`: an admin (or None, the bot itself) stops every message, anyone
        else their own."""
        everyone = user_id is None or self.engine.services.admins.is_admin(user_id)
        return await self.stop(key, lambda who: everyone or who == user_id, reason)

    async def stop_here(self, key: str, user_id: str) -> Stopped:
        """/stop by `user_id` of what this process holds of chat `key`: its messages, then the runs in progress
        of its scheduled tasks."""
        services = self.engine.services
        stopped, others = await self.stop_for(key, user_id)
        runs, runs_others = await services.clock.stop_runs(key, user_id, admin=services.admins.is_admin(user_id))
        return Stopped(stopped, others, runs, runs_others)

    async def _on_stop(self, payload: Payload) -> Payload | None:
        """Another process's /stop: the counts when this process holds anything of the chat, else silence."""
        key, user_id = payload.get("session"), payload.get("user")
        if not isinstance(key, str) or not isinstance(user_id, str) or not user_id:
            return None
        done = await self.stop_here(key, user_id)
        return done.payload() if done else None

    def _drop(self, key: str, messages: list[Waiting], reason: str) -> None:
        """Waiting messages that will not be answered: each gets its query-log row (it leaves the inbox)."""
        status = CANCEL_STATUS.get(reason, "stopped")
        for m in messages:
            self.engine.services.queries.settled(key, m.user_id, m.body, status, trigger=m.trigger,
                                                 batch=batch_of([m]))
            m.future.cancel()

    async def drain(self) -> None:
        """Wait until every chat's queue is empty and its turn done."""
        while self._chats:
            await asyncio.gather(*(c.worker for c in list(self._chats.values()) if c.worker is not None),
                                 return_exceptions=True)
