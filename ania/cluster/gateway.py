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
from ania.entry import MessageEntry
from ania.flow import Flow
from ania.flow.stop import STOP, WAIT_SEC, Stopped
from ania.platforms.onebot.adapter import OneBotAdapter
from ania.platforms.onebot.bridge import OneBotBridge
from services.context import CallbackBridge
from services.store import WRITE_REFUSED
from services.usage import Batch

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

    def drop_waiting(self, session_key: str, user_id: str) -> tuple[int, int]:
        """/stop of the chat's messages no worker has taken yet (an admin: all; anyone else: their own):
        (dropped, left because they are someone else's). Each gets its `stopped` row, unless a worker took
        it meanwhile (services/usage/querylog.py `if_waiting`)."""
        services = self.engine.services
        everyone = services.admins.is_admin(user_id)
        rows = services.inbox.pending(session_key)
        mine = [r for r in rows if everyone or r.sender == user_id]
        for r in mine:
            services.queries.settled(session_key, r.sender, r.body, "stopped", trigger=r.trigger,
                                     batch=Batch((r.message_id or f"#{r.id}",), (r.sender,), (r.id,)))
        return len(mine), len(rows) - len(mine)


class GatewayEntry(MessageEntry):
    """Message entry on the gateway. /stop reaches the worker holding the chat (its running turn and what it
    took: the signal, ania/flow/stop.py) and then the messages still waiting in the shared inbox. /reboot
    (from the chat or the panel) first takes the configuration the chat changed on any worker, and then
    restarts the workers too (ania/cluster/config_watch.py)."""

    def __init__(self, engine: Engine, bridge_for: Callable[[str], CallbackBridge], app: App) -> None:
        super().__init__(engine, bridge_for)
        self.flow = self.gateway_flow = GatewayFlow(engine, bridge_for, app)

    async def _stop_command(self, session_key: str, user_id: str) -> str:
        # The waiting messages first: once the running turn stops, the chat's next job would take them.
        dropped, others = self.gateway_flow.drop_waiting(session_key, user_id)
        here = await self.flow.chats.stop_here(session_key, user_id)  # a /clock run started on the gateway
        answer = await self.engine.services.signals.request(STOP, {"session": session_key, "user": user_id},
                                                            wait_sec=WAIT_SEC)
        held = Stopped.of(answer) if answer is not None else Stopped()
        return Stopped(held.messages + dropped, held.messages_others + others, held.runs + here.runs,
                       held.runs_others + here.runs_others).text()

    async def restart(self, session_key: str, actor: str) -> str:
        """The workers restart only when the gateway did, on new settings: settings it refused (a file edited
        by hand into invalid TOML) or could not build stop at the gateway, whose answer says why, and the
        workers keep theirs."""
        before = self.engine.services
        before.config.shared.pull(local_wins=True)  # hand edits here are the cluster's; the chat's from workers
        said = await super().restart(session_key, actor)
        if self.engine.services.settings is not before.settings:  # a failed rebuild is back on the same object
            generation = self.engine.services.config.shared.bump()  # the rebuilt services'
            log.info("config: /reboot reaches the workers (generation %d)", generation)
        return said


class GatewayAdapter(OneBotAdapter):
    def __init__(self, engine: Engine, app: App) -> None:
        super().__init__(engine)
        self.entry = GatewayEntry(engine, self.bridge_for, app)
