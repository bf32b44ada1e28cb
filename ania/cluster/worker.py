"""`ania serve --role worker`: runs the turns of the chats the queue hands it.

Each `ania.chat(session)` job (ania/cluster/queue.py) answers what waits in that chat's inbox: after the settle
window (`flow.settle_sec`, from the oldest message's arrival) it takes the chat's rows and runs them through
the same queue a single process uses (ania/flow/chats.py: bounded batches, members in turn, one turn at a
time), each message with the bridge of the event the gateway recorded, so quotes, @-mentions, images and
files work as in one process. The chat's thread is settled first when another worker left it mid-step.

The platform is reached through the gateway's relay (ania/cluster/relay.py) with the OneBot client; the clock
runs here too (services/clock/lease.py: one worker fires). At shutdown the worker takes no new job, lets its
turns finish for `onebot.shutdown_grace_sec`, then stops them (`interrupted`); messages it had not started
stay in the inbox for another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from procrastinate import App

from ania.cluster.config_watch import ConfigWatch
from ania.cluster.queue import CHAT_TASK, QUEUE, defer_chat, ensure_schema, open_app
from ania.engine import Engine, TurnResult
from ania.entry import REBOOT_STOPPED
from ania.flow.chats import Chats
from ania.flow.message import Waiting
from ania.platforms.onebot.adapter import is_chat_session
from ania.platforms.onebot.bridge import OneBotBridge
from ania.platforms.onebot.connection import Connection, dial_forever
from ania.platforms.onebot.events import parse_event
from ania.platforms.onebot.outbound import Outbound
from ania.recovery import WORKER_STOPPED
from services.flow.inbox import InboxRow

log = logging.getLogger(__name__)

#: New jobs wake a worker at once (LISTEN/NOTIFY); a job freed by the sweep (its dead worker's lock gone)
#: notifies nobody, so idle workers also look this often.
FETCH_POLL_SEC = 1.0
SHUT_DOWN = ("Stopped: the worker answering here shut down before it finished. Please send your message again; "
             "another worker answers it.")


async def _no_events(event: dict[str, Any]) -> None:
    """The relay sends none (messages come through the queue)."""


class RelayPlatform:
    """The OneBot platform as a worker sees it: the gateway's relay in place of the implementation."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        onebot = engine.services.settings.onebot
        self.conn = Connection(_no_events, onebot.api_timeout_sec, onebot.heartbeat_floor_sec)
        self.out = Outbound(self.conn, lambda: self.engine.services.settings.onebot)
        self._dialer: asyncio.Task[None] | None = None
        self._detach: Any = None

    async def start(self) -> None:
        cluster = self.engine.services.settings.cluster
        self._detach = self.engine.services.outboxes.attach("onebot", self.out.send_text, is_chat_session,
                                                            self.bridge_for)
        self._dialer = asyncio.create_task(dial_forever(
            self.conn, cluster.relay_url, cluster.relay_token, self.engine.services.settings.onebot.reconnect_max_sec,
            self._login))

    async def _login(self) -> None:
        with contextlib.suppress(Exception):
            data = await self.conn.call("get_login_info", timeout=10)
            if isinstance(data, dict) and data.get("user_id"):
                self.out.self_id = str(data["user_id"])

    async def stop(self) -> None:
        if self._dialer is not None:
            self._dialer.cancel()
            await asyncio.gather(self._dialer, return_exceptions=True)
        if self._detach is not None:
            self._detach()

    def bridge_for(self, session_key: str) -> OneBotBridge:
        return OneBotBridge(self.out, session_key)

    def bridge_of(self, row: InboxRow) -> OneBotBridge:
        """The bridge of the message the gateway recorded (its quote, its images), or a plain one."""
        try:
            meta = json.loads(row.meta) if row.meta else {}
        except ValueError:
            meta = {}
        message = parse_event(meta["event"]) if isinstance(meta.get("event"), dict) else None
        quoted = parse_event(meta["quoted"]) if isinstance(meta.get("quoted"), dict) else None
        if message is None or message.session_key != row.session:
            return self.bridge_for(row.session)
        self.out.note_file_ids(row.session, message.content.file_ids + (quoted.content.file_ids if quoted else ()))
        return OneBotBridge(self.out, row.session, message, quoted)


class ChatJobs:
    """The body of the `ania.chat` job on this worker."""

    def __init__(self, engine: Engine, platform: RelayPlatform, app: App) -> None:
        self.engine = engine
        self.platform = platform
        self.app = app
        self.chats = Chats(engine, settle=False)
        #: Cleared while a /reboot rebuilds the engine: jobs wait for it before they read the inbox.
        self.ready = asyncio.Event()
        self.ready.set()

    async def answer(self, session: str) -> None:
        await self.ready.wait()
        inbox = self.engine.services.inbox
        rows = inbox.pending(session)
        if not rows:
            return
        wait = rows[0].received + self.engine.services.settings.flow.settle_sec - time.time()
        if wait > 0:
            await asyncio.sleep(wait)
            rows = inbox.pending(session)
        self.engine.services.sessions.state(session).clean = False  # another worker may have left it mid-step
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[TurnResult]] = []
        for row in rows:
            future: asyncio.Future[TurnResult] = loop.create_future()
            self.chats.put(Waiting(session, row.sender, row.body, self.platform.bridge_of(row), row.trigger,
                                   row.message_id, row.received, self.chats.clock(), row.id, future))
            futures.append(future)
        try:
            await asyncio.gather(*futures, return_exceptions=True)
        except asyncio.CancelledError:  # the worker shuts down past its grace: the rest is another's
            released = self.chats.release(session)
            stopped, _ = await asyncio.shield(self.chats.stop(session, lambda _: True, WORKER_STOPPED))
            log.warning("worker shutting down: %s stopped (%d message(s) of its running turn; %d waiting left for "
                        "another worker)", session, stopped, released)
            if stopped:
                await asyncio.shield(self.platform.out.send_text(session, SHUT_DOWN))
            if released:
                await asyncio.shield(defer_chat(self.app, session))
            raise


    async def reboot(self) -> None:
        """A /reboot on the gateway: the running turns are stopped (their chats told, as in one process), the
        messages not started stay for the next job, and the engine is rebuilt from `config/` as it is now."""
        self.ready.clear()
        try:
            for key in self.chats.sessions():
                released = self.chats.release(key)
                stopped, _ = await self.chats.stop(key, lambda _: True)
                if stopped:
                    await self.platform.out.send_text(key, REBOOT_STOPPED)
                if released:
                    await defer_chat(self.app, key)
            self.engine.services.config.shared.pull()
            try:
                await self.engine.reboot()
            except Exception:  # noqa: BLE001 - Engine.reboot went back to the previous settings and logged why
                log.error("the worker goes on with its previous settings")
        finally:
            self.ready.set()


async def run_worker(engine: Engine, stop: asyncio.Event) -> None:
    cluster = engine.services.settings.cluster
    await ensure_schema(cluster.postgres_url)
    app = open_app(cluster.postgres_url)
    platform = RelayPlatform(engine)
    jobs = ChatJobs(engine, platform, app)
    app.task(name=CHAT_TASK, queue=QUEUE)(jobs.answer)
    if engine.services.config.shared.pull():  # the cluster's configuration, as the gateway and the chat left it
        try:
            await engine.reboot()
        except Exception:  # noqa: BLE001 - Engine.reboot went back to the settings it started with and logged why
            log.error("the worker goes on with the settings it started with")
    watch = asyncio.create_task(ConfigWatch(engine, jobs.reboot).run())
    await platform.start()
    try:
        async with app.open_async():
            worker = asyncio.create_task(app.run_worker_async(
                queues=[QUEUE], concurrency=cluster.worker_chats, install_signal_handlers=False,
                update_heartbeat_interval=cluster.stall_sec / 3, stalled_worker_timeout=cluster.stall_sec,
                shutdown_graceful_timeout=engine.services.settings.onebot.shutdown_grace_sec,
                fetch_job_polling_interval=FETCH_POLL_SEC,
                delete_jobs="successful"))
            log.info("ania serve --role worker: taking chats from the queue (%d at once)", cluster.worker_chats)
            try:
                await engine.services.clock.start()
                await asyncio.wait([worker, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
                if worker.done():
                    worker.result()  # the queue's worker ended by itself: say why
            finally:
                await engine.services.clock.stop()
                worker.cancel()
                await asyncio.gather(worker, return_exceptions=True)
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await platform.stop()
