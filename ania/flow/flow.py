"""Admission to a chat's queue (F2) and the durable inbox's restart (issue 26), around ania/flow/chats.py.

A message that reaches the queue step is refused, not answered, when its author is over their token
bucket in that chat (`rate_limited`; admins are exempt) or the chat's queue is full (`queue_full`). A
refused message is not lost silently: it gets its own query-log row, and its author one notice per
`flow.notice_window_sec` (a flood of refusals must not become a flood of notices). An admitted message
is written to the inbox before it waits; at the next start `recover` queues again what a killed process
had taken and no turn had answered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ania.engine import Engine, TurnResult
from ania.flow.chats import Chats
from ania.flow.message import Waiting
from services.context import CallbackBridge
from services.flow import Buckets, Notices
from services.store import WRITE_REFUSED
from services.usage import Batch, pid_alive

log = logging.getLogger(__name__)

RATE_LIMITED = ("You are sending messages faster than I can answer: more than {rate:g} a minute in this chat are "
                "not answered. (This notice comes at most once every {window:g} s.)")
QUEUE_FULL = ("{n} messages are already waiting in this chat, so yours was not answered. Please send it again "
              "in a while. (This notice comes at most once every {window:g} s.)")


class Flow:
    def __init__(self, engine: Engine, bridge_for: Callable[[str], CallbackBridge], *, settle: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.bridge_for = bridge_for
        self.chats = Chats(engine, settle=settle, clock=clock)
        self._buckets = Buckets(clock)
        self._notices = Notices(clock)

    async def offer(self, session_key: str, user_id: str, body: str, bridge: CallbackBridge, *,
                    trigger: str = "message", message_id: str = "") -> asyncio.Future[TurnResult] | None:
        """Queue the message, or refuse it (None: its row written, its author told when due)."""
        services = self.engine.services
        flow = services.settings.flow
        refusal = ""
        if self.queued(session_key) >= flow.max_queue:
            refusal = "queue_full"
        elif (flow.member_rate_per_min > 0 and not services.admins.is_admin(user_id)
              and not self._buckets.take((session_key, user_id), flow.member_rate_per_min / 60, flow.member_burst)):
            refusal = "rate_limited"
        if refusal:
            await self._refuse(session_key, user_id, body, bridge, trigger, message_id, refusal)
            return None
        return await self._admit(session_key, user_id, body, bridge, trigger, message_id)

    def queued(self, session_key: str) -> int:
        """How many of the chat's messages wait (the queue bound's count)."""
        return self.chats.waiting(session_key)

    async def _admit(self, session_key: str, user_id: str, body: str, bridge: CallbackBridge, trigger: str,
                     message_id: str) -> asyncio.Future[TurnResult] | None:
        """Record the admitted message in the inbox and queue it here (a cluster gateway queues it for a worker:
        ania/cluster/gateway.py)."""
        services = self.engine.services
        try:
            inbox_id = services.inbox.record(session_key, user_id, body, message_id=message_id, trigger=trigger)
        except WRITE_REFUSED as e:  # disk full or locked: answered all the same, only not durable
            log.error("could not record a message of %s in the inbox (answered, but not kept across a restart): %s",
                      session_key, e)
            inbox_id = 0
        return self._queue(session_key, user_id, body, bridge, trigger, message_id, inbox_id, time.time())

    def _queue(self, session_key: str, user_id: str, body: str, bridge: CallbackBridge, trigger: str,
               message_id: str, inbox_id: int, received: float) -> asyncio.Future[TurnResult]:
        future: asyncio.Future[TurnResult] = asyncio.get_running_loop().create_future()
        self.chats.put(Waiting(session_key, user_id, body, bridge, trigger, message_id, received, self.chats.clock(),
                               inbox_id, future))
        return future

    async def _refuse(self, session_key: str, user_id: str, body: str, bridge: CallbackBridge, trigger: str,
                      message_id: str, status: str) -> None:
        flow = self.engine.services.settings.flow
        notice = ""
        if self._notices.due((session_key, user_id), flow.notice_window_sec):
            notice = (QUEUE_FULL.format(n=self.queued(session_key), window=flow.notice_window_sec)
                      if status == "queue_full" else
                      RATE_LIMITED.format(rate=flow.member_rate_per_min, window=flow.notice_window_sec))
        self.engine.services.queries.settled(session_key, user_id, body, status, reply=notice, trigger=trigger,
                                             batch=Batch((message_id,) if message_id else (), (user_id,)))
        if notice:
            await bridge.send_text(notice)

    def recover(self, accept: Callable[[str], bool]) -> list[asyncio.Future[TurnResult]]:
        """Queue the inbox's messages left by a process that is gone (of the sessions `accept` takes), oldest
        first, to be answered in their chats (without a quote: the message they came with is gone)."""
        rows = self.engine.services.inbox.waiting(accept, pid_alive)
        return [self._queue(r.session, r.sender, r.body, self.bridge_for(r.session), r.trigger, r.message_id, r.id,
                            r.received) for r in rows]
