"""Which process fires the scheduled tasks when several bots share one Postgres store (issue 25).

Every bot on `cluster.postgres_url` keeps one connection of its own to the database for this, and the one
whose connection holds a session-level advisory lock (`CLOCK_LOCK`) runs the clock. A holder that dies
(kill -9, a crash, a machine gone) loses its connection, and with it the lock: Postgres frees it as soon as
it sees the connection end. The others try again every `CHECK_SEC` seconds and the first to get it starts
the clock. The holder checks its connection at the same pace: when it is gone, so is the lock, and the
holder stops firing. A due time a hand-over might fire twice is claimed in the store (services/clock/store.py),
so it still runs once. On SQLite the data directory's lock file is enough: only one bot opens the file.
"""

from __future__ import annotations

import asyncio
import logging

import psycopg

from core.settings.cluster import scrub

log = logging.getLogger(__name__)

#: The advisory lock of the clock: one constant per database ("aniacloc"; above 2**48, so apart from the
#: store's migration lock).
CLOCK_LOCK = 0x616E_6961_636C_6F63
#: How often a bot that does not hold the clock tries to take it, and the holder checks it still does (and
#: reads the tasks other bots changed). A holder's death is seen within about this long.
CHECK_SEC = 2.0
#: A check that does not answer within this long counts as a lost connection.
ANSWER_SEC = 10.0


class PgLease:
    """The right to run the clock, as the advisory lock on a connection kept open for it."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self.held = False
        #: The last take failed (said once in the log until one succeeds again).
        self._failing = False

    async def take(self) -> bool:
        """True when this process holds the lock now: a holder checks its connection is still there, any other
        tries to take the lock. A server that cannot be reached counts as not held (logged)."""
        try:
            async with asyncio.timeout(ANSWER_SEC):
                if self._conn is None or self._conn.closed:
                    self.held = False
                    self._conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True,
                                                                       connect_timeout=int(ANSWER_SEC))
                if self.held:
                    await self._conn.execute("SELECT 1")
                else:
                    cur = await self._conn.execute("SELECT pg_try_advisory_lock(%s)", [CLOCK_LOCK])
                    row = await cur.fetchone()
                    self.held = bool(row and row[0])
            self._failing = False
        except (psycopg.Error, TimeoutError) as e:
            if not self._failing:
                log.warning("clock: the connection to the Postgres store for the clock's lock failed (tried again "
                            "every %g s): %s", CHECK_SEC, scrub(str(e), self._url) or type(e).__name__)
            self._failing = True
            await self.release()
        return self.held

    async def release(self) -> None:
        """Close the connection: the lock goes with it."""
        self.held = False
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except psycopg.Error:
                pass
