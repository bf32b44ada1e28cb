"""Opening the Postgres checkpointer: a pool of one connection, LangGraph's tables set up, a clear error
otherwise.

One connection, as before (the saver's lock lets one caller use it at a time), but held by a psycopg pool:
a connection the server dropped (a Postgres restart, a failover, an idle timeout) is discarded when the
call that met it fails, and the next call gets a new one. On a bare connection every later turn failed
until the bot restarted (found by stopping Postgres under a cluster worker). A call that waits for a
connection gives up after `POOL_TIMEOUT` seconds (the turn fails with a clear reply, not a hang).

A malformed URL, a server that does not answer or refuses the login is a `ConfigError` of one line that
names the setting and the URL with `***` for its password (core/settings/cluster.py `redact_url`,
`scrub`), never the password, whatever the driver said.

The connection commits with `synchronous_commit = off`, the same promise as SQLite's synchronous=NORMAL
(checkpoints/factory.py `tune_sqlite`): a commit does not wait for the server's disk, so every stored step
survives a crash of the bot (or a worker's `kill -9`); only a crash of the database server or its machine
can lose its last moments (at most three `wal_writer_delay`s, 0.6 s by default), never corrupt anything.
A turn stores a dozen steps and writes: waiting for the disk each time cost 0.3-0.6 ms a turn on a quiet
machine, and up to ~100 ms while other jobs wrote to the disk (bench_postgres `--pg-sync`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from checkpoints.loader import Reducer
from checkpoints.saver_pg import AniaPostgresSaver
from checkpoints.serde import MessageSerializer
from core.errors import ConfigError
from core.pg_pool import AsyncIdleCheck
from core.settings.cluster import SETTING, redact_url, scrub

POSTGRES_SCHEMES = ("postgres://", "postgresql://")
#: Seconds to wait for the server before giving up (a wrong host should not hang the start).
CONNECT_TIMEOUT = 10
#: Seconds a checkpointer call waits for its connection while the server is away.
POOL_TIMEOUT = 5.0


async def connect(url: str) -> psycopg.AsyncConnection[Any]:
    """One autocommit connection as LangGraph's `from_conn_string` makes it, or a `ConfigError`."""
    try:
        return await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=0,
                                                     row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.ProgrammingError as e:
        raise ConfigError(f"{SETTING}: not a valid Postgres URL ({scrub(str(e), url)})") from None
    except psycopg.Error as e:
        raise ConfigError(f"{SETTING}: cannot reach Postgres at {redact_url(url)}: {scrub(str(e), url)}") from None


#: Held while the checkpoint tables are made or migrated: LangGraph's `setup` is not safe to run twice at once
#: (the processes of a cluster start together).
SETUP_LOCK = 7_302_412


async def _take_setup_lock(conn: psycopg.AsyncConnection[Any]) -> None:
    """Polled, not waited for: a session blocked in `pg_advisory_lock` is an open transaction, and the holder's
    CREATE INDEX CONCURRENTLY waits for every open transaction: a deadlock."""
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS got", [SETUP_LOCK])
        row = await cur.fetchone()
        if row and row["got"]:
            return
        await asyncio.sleep(0.1)


async def _tune(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.execute("SET synchronous_commit = off")


@asynccontextmanager
async def open_postgres(url: str, *, stock: bool,
                        reducers: Mapping[str, Reducer]) -> AsyncIterator[AsyncPostgresSaver]:
    """Our saver (or with `stock` LangGraph's) on a pool of one connection, its tables made or migrated."""
    async with await connect(url) as setup_conn:  # also the URL's check: one clear line when it is wrong
        idle = AsyncIdleCheck()  # a connection a restart of the server cut is replaced, not handed to a turn
        pool: AsyncConnectionPool[psycopg.AsyncConnection[DictRow]] = AsyncConnectionPool(
            url, min_size=1, max_size=1, timeout=POOL_TIMEOUT, open=False, configure=_tune, name="ania-checkpoints",
            check=idle.check, reset=idle.reset,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                    "connect_timeout": CONNECT_TIMEOUT})
        await pool.open(wait=True, timeout=CONNECT_TIMEOUT)
        try:
            saver = AsyncPostgresSaver(pool) if stock else AniaPostgresSaver(pool, reducers=reducers,
                                                                             serde=MessageSerializer())
            try:
                await _take_setup_lock(setup_conn)
                try:
                    await saver.setup()
                finally:
                    await setup_conn.execute("SELECT pg_advisory_unlock(%s)", [SETUP_LOCK])
            except psycopg.Error as e:
                raise ConfigError(f"{SETTING}: cannot set up the checkpoint tables at {redact_url(url)}: "
                                  f"{scrub(str(e), url)}") from None
        except BaseException:
            await pool.close()
            raise
    try:
        yield saver
    finally:
        await pool.close()
