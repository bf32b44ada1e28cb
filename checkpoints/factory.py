"""The checkpointer factory (D2): SQLite at `<data dir>/checkpoints.db` by default, Postgres by URL.

Callers depend only on LangGraph's `BaseCheckpointSaver`, so the backend can change. The SQLite saver is
checkpoints/saver.py's (LangGraph's, with a history loader that does not grow with every load) and its
serializer checkpoints/serde.py's; with `stock` (the `engine.stock` setting) it is LangGraph's own
`AsyncSqliteSaver` with its own serializer. Both write the same tables in the same format, so either
reads what the other stored (tests/test_stock_mode.py). A `postgresql://` URL opens Postgres instead
(checkpoints/pg.py: saver_pg.py's saver, or with `stock` LangGraph's `AsyncPostgresSaver`; the same holds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from checkpoints.fold import fold_messages
from checkpoints.pg import POSTGRES_SCHEMES, open_postgres
from checkpoints.saver import AniaSqliteSaver
from checkpoints.serde import MessageSerializer
from services.files import file_lock

CHECKPOINT_FILE = "checkpoints.db"
#: The delta channels of the agent state (nodes/state.py) and their reducers, which the SQLite saver folds.
REDUCERS = {"messages": fold_messages}


@asynccontextmanager
async def open_checkpointer(data_dir: Path, url: str | None = None, *,
                            stock: bool = False) -> AsyncIterator[BaseCheckpointSaver[str]]:
    if url and url.startswith(POSTGRES_SCHEMES):
        async with open_postgres(url, stock=stock, reducers=REDUCERS) as pg:
            yield pg
        return
    data_dir.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, at start
    # Autocommit: each put is one statement and its own transaction (checkpoints/saver.py); the stock
    # saver's commits are then no-ops, and the maintenance code's BEGIN/COMMIT mean the same in both modes.
    async with aiosqlite.connect(str(data_dir / CHECKPOINT_FILE), isolation_level=None) as conn:
        saver = AsyncSqliteSaver(conn) if stock else AniaSqliteSaver(conn, reducers=REDUCERS, serde=MessageSerializer())
        # Processes opening a new file together (bench workers, `ania sessions` as the bot starts) take
        # turns: switching it to WAL can fail at once with "database is locked" instead of waiting.
        with file_lock(data_dir / (CHECKPOINT_FILE + ".setup.lock")):
            await saver.setup()
            await tune_sqlite(saver)
        yield saver


async def tune_sqlite(saver: AsyncSqliteSaver) -> None:
    """synchronous=NORMAL on the WAL database `setup()` made: a commit no longer waits for fsync. Every
    stored step survives a crash of the bot; only an OS crash or power cut can lose the last moments."""
    await saver.conn.execute("PRAGMA synchronous=NORMAL")


def thread_config(session_key: str) -> RunnableConfig:
    """One LangGraph thread per session: the thread id is the session key."""
    return {"configurable": {"thread_id": session_key}}
