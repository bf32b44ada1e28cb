"""Running the panel: uvicorn in the bot's own event loop (`ania serve`, `ania chat` with panel.enable), or
alone on a data directory (`ania panel`).

Alone means no bot runs there: the panel then holds the data directory's bot lock (the clock's
`clock.lock`, the one a second bot is refused by), and a bot started meanwhile is refused until the panel
stops. Beside a running bot the panel is that bot's own (panel.enable): one process owns the live state
(waiting approvals, running turns, the MCP sessions), so there is never a second engine on the same files.

At first start the token is made and the login link printed once (`ania panel --link` prints it again).
A listen address beyond loopback needs a password and gets a warning to put TLS in front.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Generator
from functools import partial

import uvicorn

from ania.engine import Engine
from ania.entry import MessageEntry
from ania.panel.app import build_app
from ania.panel.auth import PanelAuth
from ania.panel.context import PanelContext
from ania.panel.guard import origin_of
from ania.panel.listen import link_host, login_link, loopback, split_listen
from ania.platforms.bridge import ChatBridge
from core.errors import RunError
from core.settings import PanelSettings, Paths
from services.datadir import BOT_LOCK
from services.files import OwnerLock

log = logging.getLogger("ania.panel")
BOT_RUNNING = ("a bot (process {pid}) runs on the data directory {dir}; its panel is part of it (panel.enable): "
               "open that one, or stop the bot to run `ania panel` alone")
TLS_WARNING = ("ania panel: listening on {where}, beyond this machine: put a TLS proxy (https) in front of it and "
               "set panel.public_url; the password and the session cookie must not travel in clear text")


class QuietServer(uvicorn.Server):
    """The bot owns SIGINT and SIGTERM (ania/platforms): uvicorn must not take them over."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class PanelServer:
    def __init__(self, engine: Engine, settings: PanelSettings, *, mode: str,
                 say: Callable[[str], None] = print) -> None:
        self.settings = settings
        self.say = say
        self.auth = PanelAuth(engine.services.paths.data_dir, settings)
        extra = (origin_of(settings.public_url),) if settings.public_url else ()
        self.ctx = PanelContext(engine=engine, reboot=None, auth=self.auth, extra_origins=extra, mode=mode,
                                started=time.time())
        self._server: QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    def attach(self, entry: MessageEntry, connected: Callable[[], bool] | None = None) -> None:
        """The bot's message entry (a reboot from the panel stops its turns first) and its platform's status."""
        self.ctx.reboot = lambda: entry.restart("", "panel")
        self.ctx.platform_connected = connected

    async def start(self) -> str:
        """Bind and serve in this event loop; the panel's address. RunError when it cannot listen."""
        host, port = split_listen(self.settings.listen)
        if not loopback(host) and not self.auth.has_password:
            raise RunError(f"panel.listen = {self.settings.listen} is beyond this machine: set a password first "
                           "(`ania panel --set-password`), or listen on 127.0.0.1")
        token, made = self.auth.ensure_token()
        try:
            sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        except OSError as e:
            raise RunError(f"the panel cannot listen on {self.settings.listen}: {e.strerror or e} (another "
                           "`ania serve` or `ania panel`? set panel.listen, or panel.enable = \"off\")") from None
        config = uvicorn.Config(build_app(self.ctx), log_level="warning", lifespan="off", access_log=False,
                                proxy_headers=False, server_header=False)
        self._server = QuietServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="panel")
        where = f"http://{link_host(host)}:{port}"
        if not loopback(host):
            self.say(TLS_WARNING.format(where=self.settings.listen))
        if made and not self.auth.has_password:
            self.say(f"ania panel: open {login_link(self.settings, token)} to log in (printed once; "
                     "`ania panel --link` prints it again)")
        else:
            self.say(f"ania panel: {self.settings.public_url or where}")
        return where

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._server = self._task = None


async def _nowhere(_text: str) -> None:
    return None


def detached_entry(engine: Engine, send: Callable[[str, str], Awaitable[None]] | None = None) -> MessageEntry:
    """A message entry with no platform (`ania panel` alone): the panel's reboot goes through it like the
    bot's /reboot. `send(session, text)` receives what it would say in a chat (nothing by default)."""
    outbox = engine.services.paths.data_dir / "outbox"

    def bridge(key: str) -> ChatBridge:
        return ChatBridge(partial(send, key) if send is not None else _nowhere, outbox / key)

    return MessageEntry(engine, bridge)


def wanted(settings: PanelSettings, command: str) -> bool:
    """Whether `ania <command>` starts the panel: auto = with serve only (see README "The panel")."""
    return settings.enable == "on" or (settings.enable == "auto" and command == "serve")


async def run_alone(paths: Paths, stop: asyncio.Event, say: Callable[[str], None] = print) -> None:
    """`ania panel`: an engine and its panel on a data directory where no bot runs (its lock held meanwhile,
    taken before anything starts)."""
    lock = OwnerLock(paths.data_dir / BOT_LOCK)
    holder = lock.acquire()
    if holder is not None:
        raise RunError(BOT_RUNNING.format(pid=holder, dir=paths.data_dir))
    try:
        engine = await Engine.start(paths.config_dir, paths.data_dir)
        try:
            server = PanelServer(engine, engine.services.settings.panel, mode="alone", say=say)
            server.attach(detached_entry(engine))
            await server.start()
            try:
                await stop.wait()
            finally:
                await server.stop()
        finally:
            await engine.close()
    finally:
        lock.release()
