"""Signals between the processes that share one store (issue 25): a gateway and its workers tell each other
"question 3f2a is decided" or "stop chat g:555" without a queue of their own.

One Postgres channel (`ania_signals`) carries every signal as a small JSON envelope: its topic, the sending
process, its payload, and for a request the token its answer goes back to. `publish` reaches every process
listening (this one too); `request` reaches the others and returns the first answer, or None when none
came within the wait (nobody holds what was asked about). A handler subscribed to a topic returns the
answer to send back, or None to stay silent.

NOTIFY is not durable: a process that is not listening at that moment (reconnecting, or dead) misses the
signal. Whatever must not be missed keeps its state in a table and polls it slowly besides (approvals:
services/gates/approvals_shared.py); a missed /stop is a /stop to send again.

With the SQLite store there is one process: `LocalSignals` calls this process's handlers directly and a
request of the others answers None at once, so single-process mode pays nothing and waits for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from core.errors import ConfigError
from core.settings.cluster import SETTING, redact_url, scrub
from services.store import STORE_ERRORS, AppStore, Tx

log = logging.getLogger(__name__)

CHANNEL = "ania_signals"
#: The topic answers to a `request` travel on.
REPLY = "_reply"
#: A lost listening connection is opened again after this long (the approvals' poll covers the gap).
RECONNECT_SEC = 1.0
CONNECT_TIMEOUT_SEC = 10

Payload = dict[str, Any]
#: Called with a signal's payload; returns the answer to a request, or None.
Handler = Callable[[Payload], Awaitable[Payload | None]]


@contextmanager
def quick_commit(store: AppStore) -> Iterator[Tx]:
    """A transaction on the Postgres store whose commit does not wait for the disk (`synchronous_commit = off`,
    as the checkpoints' connection): for signals, and for rows that matter only while their processes live.
    Waiting for the disk at each commit made an approval's hand-off 18x slower here (bench/bench_signals.py)."""
    with store.transaction() as tx:
        tx.write("SET LOCAL synchronous_commit = off")
        yield tx


def process_name() -> str:
    """A name for this process that no other process shares, now or later (host, pid, and a random part)."""
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


class Signals:
    """Topics and their handlers, and the envelopes; the subclasses carry them (`_send`)."""

    #: Whether other processes hear these signals (False: one process, nothing to ask the others).
    shared = False

    def __init__(self) -> None:
        self.origin = process_name()
        self._handlers: dict[str, list[Handler]] = {}
        self._answers: dict[str, asyncio.Future[Payload]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(self, topic: str, handler: Handler) -> Callable[[], None]:
        """Call `handler` for each signal on `topic`; returns what unsubscribes it."""
        self._handlers.setdefault(topic, []).append(handler)

        def unsubscribe() -> None:
            handlers = self._handlers.get(topic, [])
            if handler in handlers:
                handlers.remove(handler)
            if not handlers:
                self._handlers.pop(topic, None)

        return unsubscribe

    def publish(self, topic: str, payload: Payload) -> None:
        """Tell every process (this one too). Never raises: a signal that cannot be sent is logged."""
        self._send({"t": topic, "from": self.origin, "p": payload})

    async def request(self, topic: str, payload: Payload, *, wait_sec: float) -> Payload | None:
        """Ask the other processes; the first answer, or None when none came within `wait_sec`."""
        if not self.shared:
            return None
        token = secrets.token_hex(8)
        answer: asyncio.Future[Payload] = asyncio.get_running_loop().create_future()
        self._answers[token] = answer
        try:
            self._send({"t": topic, "from": self.origin, "p": payload, "r": token, "others": True})
            return await asyncio.wait_for(answer, wait_sec)
        except TimeoutError:
            return None
        finally:
            del self._answers[token]

    def held(self) -> int:
        """Requests waiting for an answer and handlers still running: 0 when idle."""
        return len(self._answers) + len(self._tasks)

    def _send(self, envelope: Payload) -> None:
        raise NotImplementedError

    def _receive(self, envelope: Payload) -> None:
        """One envelope, as it arrived: an answer goes to its request, a signal to the topic's handlers."""
        topic, payload = envelope.get("t"), envelope.get("p")
        if not isinstance(topic, str) or not isinstance(payload, dict):
            log.warning("a signal without a topic or payload was ignored: %.200r", envelope)
            return
        if topic == REPLY:
            waiting = self._answers.get(str(payload.get("to", "")))
            answer = payload.get("answer")
            if waiting is not None and not waiting.done() and isinstance(answer, dict):
                waiting.set_result(answer)
            return
        if envelope.get("others") and envelope.get("from") == self.origin:
            return
        for handler in list(self._handlers.get(topic, ())):
            task = asyncio.create_task(self._handle(handler, payload, envelope.get("r")))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _handle(self, handler: Handler, payload: Payload, token: object) -> None:
        try:
            answer = await handler(payload)
        except Exception:
            log.exception("a signal's handler failed")
            return
        if answer is not None and isinstance(token, str):
            self._send({"t": REPLY, "from": self.origin, "p": {"to": token, "answer": answer}})

    async def start(self) -> None:
        """Ready to receive (the subclasses that listen somewhere start listening)."""

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class LocalSignals(Signals):
    """One process (the SQLite store): a published signal goes to this process's handlers, nothing else."""

    def _send(self, envelope: Payload) -> None:
        self._receive(envelope)


class PgSignals(Signals):
    """Postgres LISTEN/NOTIFY on `CHANNEL`: received on one asynchronous connection of its own (opened again
    when lost), sent through the store's pool (`pg_notify`, as its other statements)."""

    shared = True

    def __init__(self, url: str, store: AppStore) -> None:
        super().__init__()
        self._url = url
        self._store = store
        self._reader: asyncio.Task[None] | None = None
        #: The connection listening now (None while it is being opened again).
        self.conn: psycopg.AsyncConnection[Any] | None = None

    async def start(self) -> None:
        """Listening before this returns: a signal sent after the start is not missed. A server that does not
        answer is a ConfigError naming the setting (the store has opened the same URL just before)."""
        try:
            conn = await self._listen()
        except psycopg.Error as e:
            raise ConfigError(f"{SETTING}: cannot listen on the Postgres database {redact_url(self._url)}: "
                              f"{scrub(str(e), self._url).strip()}") from None
        self._reader = asyncio.create_task(self._read(conn))

    async def _listen(self) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SEC)
        await conn.execute(f"LISTEN {CHANNEL}")
        self.conn = conn
        return conn

    async def _read(self, conn: psycopg.AsyncConnection[Any] | None) -> None:
        while True:
            try:
                if conn is None:
                    conn = await self._listen()
                async for note in conn.notifies():
                    self._decode(note.payload)
            except psycopg.Error as e:
                log.warning("lost the signals connection (%s); listening again in %g s",
                            scrub(str(e), self._url).strip(), RECONNECT_SEC)
            if conn is not None:
                with contextlib.suppress(psycopg.Error):
                    await conn.close()
            conn = self.conn = None
            await asyncio.sleep(RECONNECT_SEC)

    def _decode(self, raw: str) -> None:
        try:
            envelope = json.loads(raw)
        except ValueError:
            log.warning("a signal that is not JSON was ignored: %.200r", raw)
            return
        if isinstance(envelope, dict):
            self._receive(envelope)

    def _send(self, envelope: Payload) -> None:
        try:
            with quick_commit(self._store) as tx:
                tx.query("SELECT pg_notify(?, ?)", [CHANNEL, json.dumps(envelope, ensure_ascii=False)])
        except STORE_ERRORS as e:
            log.error("could not send a %s signal: %s", envelope.get("t"), e)

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        if self.conn is not None:
            with contextlib.suppress(psycopg.Error):
                await self.conn.close()
            self.conn = None
        await super().aclose()


async def open_signals(store: AppStore, postgres_url: str) -> Signals:
    """The signals the store implies: Postgres's when `cluster.postgres_url` is set, else this process's own."""
    signals: Signals = PgSignals(postgres_url, store) if postgres_url else LocalSignals()
    await signals.start()
    return signals
