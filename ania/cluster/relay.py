"""The gateway's relay: workers reach the OneBot implementation through the one link the gateway holds.

A worker dials `cluster.relay_url` with the ordinary forward-WebSocket client of the OneBot platform
(ania/platforms/onebot/connection.py) and speaks OneBot v11's API frames (`action`, `params`, `echo`); the
gateway makes each call on its own link and answers with the implementation's response, echo kept. So a
worker's replies, quotes, history, files and images take exactly the code path of a single process, and the
gateway sends no events (they reach workers through the queue). The message ids of what workers send are
noted on the gateway, so a member's reply to the bot is known as one without asking QQ.

Whoever holds the relay speaks for the bot, so `cluster.relay_token` is required as on the OneBot listener
(Bearer, checked in constant time) unless the relay listens on loopback only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from ania.platforms.onebot.connection import MAX_FRAME, Connection, OneBotError, check_request, guarded_listen
from ania.platforms.onebot.outbound import Outbound
from core.errors import ConfigError
from core.settings.cluster import ClusterSettings

log = logging.getLogger(__name__)

PATH = "relay"
SENDS = {"send_group_msg": "g", "send_private_msg": "f"}


def relay_address(settings: ClusterSettings) -> tuple[str, int]:
    return guarded_listen(settings.relay_listen, settings.relay_token, "cluster.relay_listen", "cluster.relay_token",
                          "the same in every worker")


class Relay:
    def __init__(self, upstream: Connection, out: Outbound) -> None:
        self._upstream = upstream
        self._out = out
        self._server: Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, settings: ClusterSettings) -> None:
        host, port = relay_address(settings)
        try:
            self._server = await serve(self._handler, host, port, max_size=MAX_FRAME,
                                       process_request=check_request(PATH, settings.relay_token))
        except OSError as e:
            raise ConfigError(f"cluster.relay_listen {settings.relay_listen!r}: {e}") from None
        log.info("cluster: relay for workers on ws://%s:%d/%s", host, self.port, PATH)

    @property
    def port(self) -> int:
        return int(next(iter(self._server.sockets)).getsockname()[1]) if self._server else 0

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handler(self, ws: ServerConnection) -> None:
        log.info("cluster: a worker connected to the relay")
        try:
            async for raw in ws:
                task = asyncio.create_task(self._answer(ws, raw))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except ConnectionClosed:
            pass
        log.info("cluster: a worker left the relay")

    async def _answer(self, ws: ServerConnection, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
            action, params, echo = str(frame["action"]), dict(frame.get("params") or {}), frame.get("echo")
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("cluster: the relay got a frame that is not a OneBot API call (ignored): %.200r", raw)
            return
        answer: dict[str, Any]
        try:
            data = await self._upstream.call(action, params)
            answer = {"status": "ok", "retcode": 0, "data": data, "echo": echo}
            self._note(action, params, data)
        except OneBotError as e:
            answer = {"status": "failed", "retcode": 100, "wording": str(e), "echo": echo}
        try:
            await ws.send(json.dumps(answer, ensure_ascii=False))
        except ConnectionClosed:
            log.info("cluster: a worker left before the answer to %s", action)

    def _note(self, action: str, params: dict[str, Any], data: Any) -> None:
        kind = SENDS.get(action)
        if kind is None or not isinstance(data, dict):
            return
        chat = params.get("group_id") if kind == "g" else params.get("user_id")
        self._out.note_sent(str(data.get("message_id") or ""), f"{kind}:{chat}")
