"""`ania serve`: the chat-bot process. Connects (or listens), serves every group and private chat until
SIGINT or SIGTERM, then shuts down cleanly: no new messages are taken, running turns get
`onebot.shutdown_grace_sec` to finish (their replies go out), the rest are stopped and settled.
Scheduled tasks (C1) fire while it serves; at shutdown the clock stops first, while the platform is still
attached, so a run it cuts off is told in its chat."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

from ania.engine import Engine
from ania.entry import MessageEntry
from ania.platforms.onebot.adapter import OneBotAdapter

log = logging.getLogger(__name__)


#: Told the bot's message entry and its platform's status once they exist (the web panel: ania/panel/server.py).
Ready = Callable[[MessageEntry, Callable[[], bool] | None], None]


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` while inside (a server shuts down cleanly on either)."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def run_serve(engine: Engine, stop: asyncio.Event | None = None, ready: Ready | None = None) -> None:
    stop = stop or asyncio.Event()
    with stop_on_signals(stop):
        await _serve(engine, stop, ready)


async def _serve(engine: Engine, stop: asyncio.Event, ready: Ready | None) -> None:
    adapter = OneBotAdapter(engine)
    await adapter.start()
    if ready is not None:
        ready(adapter.entry, lambda: adapter.conn.connected)
    s = engine.services.settings.onebot
    where = s.ws_url or f"ws://{s.listen}/{s.path.strip('/')}"
    log.info("ania serve: OneBot v11 on %s; Ctrl-C or SIGTERM stops", where)
    try:
        await engine.services.clock.start()
        await stop.wait()
        log.info("ania serve: shutting down (running messages get %g s to finish)", s.shutdown_grace_sec)
    finally:
        await engine.services.clock.stop()
        await adapter.stop()
