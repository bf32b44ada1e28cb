"""Configuration changes and /reboot across the cluster (services/configure/shared.py holds the table).

Every process of a cluster runs a `ConfigWatch`: every `CHECK_SEC` one small read of the newest shared file
change and the /reboot generation. A newer file is written into this process's `config/` (hooks and custom
commands apply within seconds, as on one process); a new generation restarts this process's engine (a
worker: `on_reboot`). A poll, as the clock's lease does: it needs nothing of the writer and misses nothing
while a process reconnects. The gateway makes its own `config/` the cluster's when it starts, publishes what
is edited there by hand (each check), takes what the chat changed on a worker before it restarts, and bumps
the generation after a /reboot that rebuilt it (GatewayEntry).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ania.engine import Engine
from services.store import STORE_ERRORS

log = logging.getLogger(__name__)

CHECK_SEC = 2.0


class ConfigWatch:
    def __init__(self, engine: Engine, on_reboot: Callable[[], Awaitable[None]] | None = None, *,
                 local_wins: bool = False) -> None:
        """`local_wins`: the gateway's watch, whose `config/` is the cluster's (its hand edits are published)."""
        self.engine = engine
        self._on_reboot = on_reboot
        self._local_wins = local_wins
        self._seen = engine.services.config.shared.stamp()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(CHECK_SEC)
            try:
                await self.once()
            except STORE_ERRORS as e:
                log.warning("config watch: %s (next try in %g s)", e, CHECK_SEC)

    async def once(self) -> None:
        shared = self.engine.services.config.shared
        if self._local_wins:
            shared.publish_edits()
        now = shared.stamp()
        if now.files != self._seen.files:
            shared.pull(local_wins=self._local_wins)
        if now.generation != self._seen.generation and self._on_reboot is not None:
            log.info("config: /reboot on another process of the cluster (generation %d): restarting", now.generation)
            await self._on_reboot()
        self._seen = now
