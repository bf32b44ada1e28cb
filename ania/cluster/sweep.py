"""The gateway's sweep: what a dead worker leaves is settled, and no chat's messages wait without a job.

Every `SWEEP_SEC`:
- a chat job whose worker's heartbeat is older than `cluster.stall_sec` (kill -9, a machine gone): the turn it
  was running is marked `interrupted` in the query log (the messages it had taken are accounted for there:
  never answered twice), its chat is told, the job is closed (its lock freed) and the chat's job deferred
  again when messages wait. The next turn of that chat, on any worker, settles the cut-off thread ("may or
  may not have run": ania/recovery.py);
- every `ORPHAN_SEC`, a chat with inbox rows older than that gets its job deferred (a gateway killed between
  recording a message and deferring its job; a failed defer). A chat whose job waits is left alone (the
  queueing lock).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from procrastinate import App

from ania.cluster.gateway import DEFER_ERRORS
from ania.cluster.queue import defer_chat, give_up, session_of, stalled
from services.container import Services

log = logging.getLogger(__name__)

SWEEP_SEC = 1.0
ORPHAN_SEC = 10.0
INTERRUPTED = ("The answer to the last message here was cut off: the worker running it stopped. Anything it had "
               "started may or may not have run. Send your message again if it still needs an answer.")

Tell = Callable[[str, str], Awaitable[bool]]


class Sweep:
    def __init__(self, services: Callable[[], Services], app: App, tell: Tell) -> None:
        self._services = services  # read each time: /reboot replaces them
        self._app = app
        self._tell = tell
        self._orphans_at = 0.0

    async def run(self) -> None:
        """Until cancelled; an error is logged and the next round tries again."""
        while True:
            try:
                await self.once()
            except DEFER_ERRORS as e:
                log.warning("cluster sweep: %s (next try in %g s)", e, SWEEP_SEC)
            await asyncio.sleep(SWEEP_SEC)

    async def once(self) -> int:
        """One round; how many dead workers' jobs it settled."""
        services = self._services()
        settled = 0
        for job in await stalled(self._app, services.settings.cluster.stall_sec):
            session = session_of(job)
            cut = services.queries.interrupt_session(session)
            await give_up(self._app, job)
            settled += 1
            log.warning("cluster: the worker running %s stopped beating its heartbeat; its turn is interrupted "
                        "(%d row(s)) and the chat goes to another worker", session, cut)
            if cut:
                await self._tell(session, INTERRUPTED)
            if services.inbox.waiting_in(session):
                await defer_chat(self._app, session)
        now = time.time()
        if now >= self._orphans_at:
            self._orphans_at = now + ORPHAN_SEC
            for session in services.inbox.sessions_since(now - ORPHAN_SEC):
                await defer_chat(self._app, session)
        return settled
