"""`ania serve --role gateway|worker`: the two halves of the bot in a cluster (`--role all`, the default, is
the single process: ania/platforms/onebot/serve.py)."""

from __future__ import annotations

import asyncio
import logging

from ania.cluster.config_watch import ConfigWatch
from ania.cluster.gateway import GatewayAdapter
from ania.cluster.queue import ensure_schema, open_app
from ania.cluster.relay import Relay
from ania.cluster.sweep import Sweep
from ania.cluster.worker import run_worker
from ania.engine import Engine
from ania.platforms.onebot.serve import Ready, stop_on_signals
from core.errors import ConfigError

log = logging.getLogger(__name__)

ROLES = ("all", "gateway", "worker")


async def run_role(engine: Engine, role: str, stop: asyncio.Event | None = None, ready: Ready | None = None) -> None:
    if not engine.services.settings.cluster.postgres_url:
        raise ConfigError(f"ania serve --role {role} needs cluster.postgres_url (ANIA_CLUSTER__POSTGRES_URL): the "
                          "gateway and its workers share their state there (docs/DEPLOY.md)")
    stop = stop or asyncio.Event()
    with stop_on_signals(stop):
        if role == "worker":
            await run_worker(engine, stop)
        else:
            await run_gateway(engine, stop, ready)


async def run_gateway(engine: Engine, stop: asyncio.Event, ready: Ready | None = None) -> None:
    url = engine.services.settings.cluster.postgres_url
    await ensure_schema(url)
    app = open_app(url)
    async with app.open_async():
        adapter = GatewayAdapter(engine, app)
        await adapter.start()
        relay = Relay(adapter.conn, adapter.out)
        tasks: list[asyncio.Task[None]] = []
        try:
            await relay.start(engine.services.settings.cluster)
            shared = engine.services.config.shared.publish_all()  # the gateway's config/ is the cluster's
            log.info("cluster: %s shared with the workers", ", ".join(shared) or "no configuration file")
            tasks = [asyncio.create_task(Sweep(lambda: engine.services, app, adapter.out.send_text).run()),
                     asyncio.create_task(ConfigWatch(engine, local_wins=True).run())]
            if ready is not None:
                ready(adapter.entry, lambda: adapter.conn.connected)
            log.info("ania serve --role gateway: messages go to the workers; Ctrl-C or SIGTERM stops")
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await relay.stop()
            await adapter.stop(grace=0)
