"""The WebSocket link to a OneBot v11 implementation, in either direction.

- Forward (`onebot.ws_url`): Ania dials the implementation's WebSocket server and redials with backoff
  (1 s doubling to `onebot.reconnect_max_sec`) whenever the link drops or is refused: websockets' own
  reconnecting iterator (`async for ws in connect(...)`), with our delays and our log lines.
- Reverse (`onebot.listen` + `onebot.path`): Ania listens and the implementation dials in (Universal
  client, or separate API and Event clients told apart by `X-Client-Role`).

`onebot.access_token` is sent as `Authorization: Bearer` when dialling, and required when listening
(a missing token is refused with 401, a wrong one with 403, as the spec's HTTP API does). Whoever holds
the link speaks for QQ (it can claim any sender, an admin too), so the adapter refuses to listen on an
address other machines reach without a token, and warns on loopback.

API calls carry an `echo` and are matched to their response; a call waits for a link while there is
none, and gives up after `onebot.api_timeout_sec` with `OneBotError`. Events are handed to the
handler as tasks, so a slow handler never stalls the reading of API responses. Heartbeat meta events
arm a watchdog: a link that stays silent for three intervals, and at least `onebot.heartbeat_floor_sec`
(5 s: a jittery fast heartbeat is no death), is closed (and redialled).

Nothing the peer sends ends the reading loop: a frame that cannot be decoded or handled (any exception,
e.g. the `RecursionError` of a deeply nested array) is logged and dropped. A link that fails anyway is
logged as an error; the dialer redials it with the same backoff (in reverse mode the client redials).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import itertools
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.http11 import Request, Response

from core.errors import ConfigError

log = logging.getLogger(__name__)

EventHandler = Callable[[dict[str, Any]], Awaitable[None]]
OnConnect = Callable[[], Coroutine[Any, Any, None]]
WebSocket = ClientConnection | ServerConnection
MAX_FRAME = 32 * 1024 * 1024
#: The first wait before a redial; it doubles while dials fail, up to `onebot.reconnect_max_sec`.
FIRST_DELAY = 1.0
#: A link that sent nothing for this many heartbeat intervals is taken for dead.
SILENT_INTERVALS = 3
#: The watchdog never closes a link silent for less (`onebot.heartbeat_floor_sec`, whose default this is).
HEARTBEAT_FLOOR_SEC = 5.0


class OneBotError(Exception):
    """An API call failed: refused by the implementation, timed out, or no link."""


class Link:
    """One open WebSocket: echo-matched calls out, events in."""

    def __init__(self, ws: WebSocket, on_event: EventHandler, *, api: bool = True, events: bool = True) -> None:
        self.ws = ws
        self.api = api
        self.events = events
        self._on_event = on_event
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._echo = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._silence: float | None = None
        #: The watchdog never closes a link silent for less (set by `Connection.serve_link`).
        self.heartbeat_floor = HEARTBEAT_FLOOR_SEC
        self.self_id = ""
        self.closed = asyncio.Event()

    async def call(self, action: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        echo = f"ania-{next(self._echo)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[echo] = future
        try:
            await self.ws.send(json.dumps({"action": action, "params": params, "echo": echo}, ensure_ascii=False))
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise OneBotError(f"{action}: no answer within {timeout:.1f} s") from None
        except ConnectionClosed:
            raise OneBotError(f"{action}: the connection closed") from None
        finally:
            self._pending.pop(echo, None)

    async def run(self) -> None:
        """Read until the link closes; pending calls then fail at once."""
        try:
            while True:
                try:
                    raw = await asyncio.wait_for(self.ws.recv(), self._silence)
                except TimeoutError:
                    log.warning("OneBot link silent for %.0f s (heartbeats missed); closing it", self._silence or 0)
                    await self.ws.close(1001, "heartbeat timeout")
                    break
                try:
                    self._frame(raw)
                except Exception as e:  # noqa: BLE001 - a frame never ends the link (RecursionError from deep nesting, ...)
                    log.warning("OneBot sent a frame that could not be handled (%s, dropped): %.200r",
                                type(e).__name__, raw)
        except ConnectionClosed:
            pass
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed(None, None))
            self.closed.set()

    def _frame(self, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            log.warning("OneBot sent a frame that is not JSON (ignored): %.200r", raw)
            return
        if not isinstance(frame, dict):
            log.warning("OneBot sent a frame that is not an object (ignored): %.200r", raw)
            return
        if "post_type" in frame:
            self._meta(frame)
            if self.events:
                task = asyncio.create_task(self._handle(frame))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            return
        echo = frame.get("echo")
        future = self._pending.get(str(echo)) if echo is not None else None
        if future is not None and not future.done():
            future.set_result(frame)
        else:
            log.info("OneBot answer for an unknown or expired call (ignored): %.200r", raw)

    def _meta(self, event: dict[str, Any]) -> None:
        if event.get("self_id") is not None:
            self.self_id = str(event["self_id"])
        if event.get("post_type") == "meta_event" and event.get("meta_event_type") == "heartbeat":
            interval = event.get("interval")
            if isinstance(interval, (int, float)) and interval > 0:
                self._silence = max(self.heartbeat_floor, SILENT_INTERVALS * interval / 1000)

    async def _handle(self, event: dict[str, Any]) -> None:
        try:
            await self._on_event(event)
        except Exception:
            log.exception("handling a OneBot event failed: %.300r", event)


def _result(action: str, frame: dict[str, Any]) -> Any:
    if frame.get("status") in ("ok", "async") or frame.get("retcode") in (0, 1):
        return frame.get("data")
    detail = frame.get("wording") or frame.get("message") or frame.get("msg") or ""
    raise OneBotError(f"{action} failed (retcode {frame.get('retcode')}{': ' + str(detail) if detail else ''})")


class Connection:
    """The link in use, whichever direction it came from; `call` is what the adapter uses."""

    def __init__(self, on_event: EventHandler, api_timeout: float,
                 heartbeat_floor: float = HEARTBEAT_FLOOR_SEC) -> None:
        self.on_event = on_event
        self.api_timeout = api_timeout
        self.heartbeat_floor = heartbeat_floor
        self._link: Link | None = None
        self._ready = asyncio.Event()
        self.self_id = ""

    @property
    def connected(self) -> bool:
        return self._link is not None

    def use(self, link: Link) -> None:
        self._link = link
        self._ready.set()

    def drop(self, link: Link) -> None:
        if link.self_id:
            self.self_id = link.self_id
        if self._link is link:
            self._link = None
            self._ready.clear()

    async def wait_connected(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def call(self, action: str, params: dict[str, Any] | None = None, timeout: float | None = None) -> Any:
        """The response's `data`; OneBotError when the call failed, timed out or found no link in time."""
        budget = self.api_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        if not await self.wait_connected(budget):
            raise OneBotError(f"{action}: not connected to the OneBot implementation")
        link = self._link
        if link is None:  # dropped between the wake-up and now
            raise OneBotError(f"{action}: the connection closed")
        frame = await link.call(action, params or {}, max(0.1, round(deadline - loop.time(), 1)))
        return _result(action, frame)

    async def serve_link(self, link: Link) -> None:
        link.heartbeat_floor = self.heartbeat_floor
        if link.api:
            self.use(link)
        try:
            await link.run()
        finally:
            self.drop(link)


# --- forward: Ania dials ---------------------------------------------------------------------------

def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class Redial:
    """The waits between failed dials, `first` doubling to `max_delay`, and what a failed dial logs. Handed to
    websockets' reconnecting `connect` (`reconnect_delays`, `process_exception`): every failure is retried,
    a refusal too (the token may be fixed on the other side). Small waits make it quick to test."""

    def __init__(self, url: str, max_delay: float, first: float = FIRST_DELAY) -> None:
        self.url = url
        self.first = first
        self.max_delay = max(first, max_delay)
        self.upcoming = first

    def connected(self) -> None:
        self.upcoming = self.first

    def delays(self) -> Generator[float]:
        """What websockets sleeps before each redial of a run of failures (a new run starts at `first`)."""
        while True:
            delay = self.upcoming
            self.upcoming = min(self.max_delay, delay * 2)
            yield delay

    def failed(self, e: Exception) -> None:
        """Log a failed dial (websockets then sleeps the next delay and dials again)."""
        if isinstance(e, InvalidStatus):
            status = e.response.status_code
            hint = " (check onebot.access_token)" if status in (401, 403) else ""
            log.error("OneBot: %s refused the connection: HTTP %s%s", self.url, status, hint)
        elif isinstance(e, (OSError, WebSocketException, TimeoutError)):
            log.warning("OneBot: cannot connect to %s (%s); retrying in %.0f s", self.url, e or type(e).__name__,
                        self.upcoming)
        else:  # a peer we did not foresee: the dialer lives on, and says so
            log.error("OneBot: dialling %s failed unexpectedly; redialling in %.0f s", self.url, self.upcoming,
                      exc_info=e)


async def dial_forever(conn: Connection, url: str, token: str, max_delay: float,
                       on_connect: OnConnect | None = None, *, first_delay: float = FIRST_DELAY) -> None:
    """Forward WebSocket: keep a link to `url`, redialling with backoff (websockets' reconnecting iterator,
    timed by `Redial`). Runs until cancelled. A link that drops is redialled after `first_delay`, so a peer
    that accepts and closes at once is not dialled in a tight loop."""
    redial = Redial(url, max_delay, first_delay)
    dialer = connect(url, additional_headers=bearer(token), proxy=None, max_size=MAX_FRAME, open_timeout=10,
                     reconnect_delays=redial.delays, process_exception=redial.failed)
    links = cast(AsyncGenerator[ClientConnection], aiter(dialer))
    async with contextlib.aclosing(links):  # a cancel closes the open link at once
        async for ws in links:
            log.info("OneBot: connected to %s", url)
            redial.connected()
            try:
                link = Link(ws, conn.on_event)
                if on_connect is not None:
                    task = asyncio.create_task(on_connect())
                    task.add_done_callback(lambda t: t.cancelled() or t.exception())
                await conn.serve_link(link)
                log.warning("OneBot: connection to %s closed; reconnecting", url)
            except Exception:  # a bug of ours or a peer we did not foresee: the dialer lives on, and says so
                log.exception("OneBot: the link to %s failed unexpectedly; redialling in %.0f s", url, first_delay)
            await asyncio.sleep(first_delay)


# --- reverse: the implementation dials -------------------------------------------------------------

def _token_of(request: Request) -> str | None:
    auth = request.headers.get("Authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() in ("bearer", "token") else auth.strip()
    values = parse_qs(urlsplit(request.path).query).get("access_token")
    return values[0] if values else None


def check_request(path: str, token: str) -> Callable[[ServerConnection, Request], Response | None]:
    want = "/" + path.strip("/")

    def check(ws: ServerConnection, request: Request) -> Response | None:
        got = "/" + urlsplit(request.path).path.strip("/")
        if got != want:
            return ws.respond(HTTPStatus.NOT_FOUND, f"no OneBot endpoint at {got}; use {want}\n")
        if token:
            given = _token_of(request)
            if given is None:
                log.warning("OneBot: a reverse connection without an access token was refused")
                return ws.respond(HTTPStatus.UNAUTHORIZED, "access token required\n")
            if not hmac.compare_digest(given.encode(), token.encode()):
                log.warning("OneBot: a reverse connection with a wrong access token was refused")
                return ws.respond(HTTPStatus.FORBIDDEN, "wrong access token\n")
        return None

    return check


async def listen(conn: Connection, host: str, port: int, path: str, token: str,
                 on_connect: OnConnect | None = None) -> Server:
    """Reverse WebSocket: accept the implementation's clients on host:port/path."""

    async def handler(ws: ServerConnection) -> None:
        assert ws.request is not None  # noqa: S101 - narrows for mypy: websockets sets it before the handler
        role = (ws.request.headers.get("X-Client-Role") or "Universal").lower()
        link = Link(ws, conn.on_event, api=role in ("universal", "api"), events=role in ("universal", "event"))
        link.self_id = ws.request.headers.get("X-Self-ID", "") or ""
        log.info("OneBot: %s client connected (self id %s)", role, link.self_id or "?")
        if link.api and on_connect is not None:
            task = asyncio.create_task(on_connect())
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
        try:
            await conn.serve_link(link)
        except Exception:  # logged once as ours; the implementation redials
            log.exception("OneBot: the %s client's link failed unexpectedly", role)
        log.warning("OneBot: %s client disconnected", role)

    return await serve(handler, host, port, process_request=check_request(path, token), max_size=MAX_FRAME)


def is_loopback(host: str) -> bool:
    """Only this machine can reach `host` (an IP literal or `localhost`; any other name counts as reachable)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def guarded_listen(value: str, token: str, setting: str, token_setting: str, how: str) -> tuple[str, int]:
    """host and port of a listener whose clients speak for the bot: a ConfigError for a value that is not
    host:port, and for an address other machines reach without a token (`how`: where else the token goes)."""
    try:
        host, port = parse_listen(value)
    except ValueError as e:
        raise ConfigError(f"{setting} {value!r}: {e}") from None
    if not token and not is_loopback(host):
        raise ConfigError(f"{setting} {value!r} is reachable from other machines and {token_setting} is empty: set "
                          f"{token_setting} ({how}) or listen on 127.0.0.1")
    return host, port


def parse_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"onebot.listen must be host:port, e.g. 127.0.0.1:8080 (got {value!r})")
    return host.strip("[]"), int(port)


async def close_quietly(server: Server | None) -> None:
    if server is not None:
        server.close()
        with contextlib.suppress(Exception):
            await server.wait_closed()
