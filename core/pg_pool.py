"""Pool callbacks that spare a turn the connection a database restart cut (issue 25).

A pooled connection that Postgres dropped (a restart, a failover) looks healthy until it is used, so the
first query after the restart failed and its turn ended with "try again". psycopg_pool can check each
connection it hands out, but a check on every hand-out is a round trip per query of a turn that makes
dozens. These callbacks check only a connection that sat unused for `IDLE_CHECK_SEC` or more, which is
every connection a restart of a few seconds cut: the pool replaces one that fails its check (waiting for
the server within its own timeout), and a busy connection is handed out as it is.
"""

from __future__ import annotations

import time
from typing import Any
from weakref import WeakKeyDictionary

from psycopg_pool import AsyncConnectionPool, ConnectionPool

#: A connection unused this long is checked (one empty query) before it is handed out.
IDLE_CHECK_SEC = 1.0


class _Idle:
    def __init__(self) -> None:
        self._returned: WeakKeyDictionary[Any, float] = WeakKeyDictionary()

    def idle(self, conn: Any) -> bool:
        return time.monotonic() - self._returned.get(conn, 0.0) >= IDLE_CHECK_SEC

    def returned(self, conn: Any) -> None:
        self._returned[conn] = time.monotonic()


class IdleCheck(_Idle):
    """`check=` and `reset=` of a `ConnectionPool`."""

    def check(self, conn: Any) -> None:
        if self.idle(conn):
            ConnectionPool.check_connection(conn)

    def reset(self, conn: Any) -> None:
        self.returned(conn)


class AsyncIdleCheck(_Idle):
    """`check=` and `reset=` of an `AsyncConnectionPool`."""

    async def check(self, conn: Any) -> None:
        if self.idle(conn):
            await AsyncConnectionPool.check_connection(conn)

    async def reset(self, conn: Any) -> None:
        self.returned(conn)
