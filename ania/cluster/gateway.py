"""`ania serve --role gateway`: the one process that holds the OneBot link.

It runs message entry as a single process does (approval answers, slash commands, the flood limits: one
admission point, so a member's token bucket and a chat's queue bound hold across every worker), but an
admitted message is not answered here: it is recorded in the shared inbox with the event it came from and
the chat's job is deferred (ania/cluster/queue.py). Workers answer through the relay (ania/cluster/relay.py).
The sweep (ania/cluster/sweep.py) settles the chats of a worker that died. No turn runs here, and the clock
runs on the workers (one of them fires: services/clock/lease.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

import psycopg
from procrastinate import App
from procrastinate.exceptions import ProcrastinateException

from ania.cluster.queue import defer_chat
from ania.engine import Engine, TurnResult
from ania.flow import Flow
from ania.platforms.onebot.adapter import OneBotAdapter
from ania.platforms.onebot.bridge import OneBotBridge
from services.context import CallbackBridge
from services.store import WRITE_REFUSED

log = logging.getLogger(__name__)

NOT_QUEUED = "Your message could not be queued (the bot's database refused it). Please send it again in a while."
#: What a failed defer can raise: the sweep defers the chat again (its rows are in the inbox).
DEFER_ERRORS = (psycopg.Error, ProcrastinateException, OSError)


def bridge_meta(bridge: CallbackBridge) -> str:
    """What a worker needs to rebuild the message's bridge: the event and the quoted message, as received."""
    if not isinstance(bridge, OneBotBridge) or bridge.message is None:
        return ""
    quoted = bridge.quoted.raw if bridge.quoted is not None else None
    return json.dumps({"event": bridge.message.raw, "quoted": quoted}, ensure_ascii=False)


class GatewayFlow(Flow):
    """Admission as in one process; an admitted message goes to the shared inbox and the queue."""

    def __init__(self, engine: Engine, bridge_for: Callable[[str], CallbackBridge], app: App) -> None:
        super().__init__(engine, bridge_for)
        self._app = app

    def queued(self, session_key: str) -> int:
        return self.engine.services.inbox.waiting_in(session_key)

    async def _admit(self, session_key: str, user_id: str, body: str, bridge: CallbackBridge, trigger: str,
                     message_id: str) -> asyncio.Future[TurnResult] | None:
        try:
            self.engine.services.inbox.record(session_key, user_id, body, message_id=message_id, trigger=trigger,
                                              meta=bridge_meta(bridge))
        except WRITE_REFUSED as e:  # no worker could ever see it: say so rather than lose it silently
            log.error("could not queue a message of %s (store refused it): %s", session_key, e)
            await bridge.send_text(NOT_QUEUED)
            return None
        try:
            await defer_chat(self._app, session_key)
        except DEFER_ERRORS as e:
            log.warning("could not defer the job of %s (%s); the sweep defers it again", session_key, e)
        return None  # answered by a worker

    def recover(self, accept: Callable[[str], bool]) -> list[asyncio.Future[TurnResult]]:
        return []  # the inbox's rows are the workers' (the sweep defers a chat whose job was lost)


class GatewayAdapter(OneBotAdapter):
    def __init__(self, engine: Engine, app: App) -> None:
        super().__init__(engine)
        self.entry.flow = GatewayFlow(engine, self.bridge_for, app)
