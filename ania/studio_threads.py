"""Bot sessions as Studio threads: the copy `ania sessions studio KEY` makes, and what the Studio server
does with it.

Studio accepts only UUID thread ids, so a session keyed `g:123` is copied to the thread
`studio_thread_id(KEY)` in the bot's own checkpoints.db and the key is remembered in the app store (runs
there act as the session, ania/studio.py). The server's thread list is langgraph-api's own table (in
memory under `langgraph dev`), which learns a thread's values only when a run ends there; `sync_values`
sets them from the checkpoint, so `GET /threads/{id}` shows the session's messages at once.

When the server starts (`running`, in the lifespan of ania/studio_http.py) it lists the bot's most recent
sessions (copying those not copied yet; an earlier copy is kept, since Studio runs may have continued it)
and records its URL and pid in `<data dir>/studio.json`, which `ania sessions studio` reads (a file whose
pid is gone is stale and ignored); the file is removed when the server stops.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

log = logging.getLogger("ania.studio")
#: How many of the bot's most recent sessions a starting Studio server lists.
RECENT = 20
URL_FILE = "studio.json"


async def copy_session(saver: BaseCheckpointSaver[str], data_dir: Path, key: str, *,
                       refresh: bool = False) -> str | None:
    """Copies the session to its Studio thread (unless copied before, or `refresh`), remembers the key.
    Returns "copied" or "kept", or None when there is no such session."""
    from ania.studio_checkpointer import STUDIO_THREAD, studio_thread_id
    from checkpoints.maintenance import fork_thread
    from checkpoints.sessions import latest_checkpoint
    from core.settings import Paths, load_settings
    from services.store import open_store

    thread = studio_thread_id(key)
    latest = await latest_checkpoint(saver, key)
    if not latest:
        return None
    copied = await latest_checkpoint(saver, thread)
    if copied and refresh:
        await saver.adelete_thread(thread)
    if not copied or refresh:
        await fork_thread(saver, key, latest, thread)
    settings = load_settings(Paths.from_env().config_dir)
    store = open_store(data_dir, settings.cluster.postgres_url)  # the bot's store (ania/studio.py reads it there)
    try:
        store.kv_set(f"{STUDIO_THREAD}{thread}", key)
    finally:
        store.close()
    return "kept" if copied and not refresh else "copied"


async def sync_values(thread: str, saver: BaseCheckpointSaver[str] | None = None) -> bool:
    """In the server: the thread's values, next steps and pending interrupts from its newest checkpoint."""
    from langgraph_runtime.database import connect
    from langgraph_runtime.ops import Threads

    from ania.engine_mode import stock_mode
    from ania.state_url import state_url
    from checkpoints.factory import open_checkpointer, thread_config
    from core.settings import Paths
    from graphs.agent import build_agent_graph

    paths = Paths.from_env()
    stock = stock_mode(paths.config_dir)

    async def snapshot(s: BaseCheckpointSaver[str]) -> Any:
        return await build_agent_graph(lambda: 10**6, checkpointer=s, stock=stock).aget_state(thread_config(thread))

    if saver is None:
        async with open_checkpointer(paths.data_dir, state_url(paths.config_dir) or None, stock=stock) as own:
            state = await snapshot(own)
    else:
        state = await snapshot(saver)
    if not state.values:
        return False
    payload: Any = {"values": state.values, "next": list(state.next),
                    "tasks": [{"id": t.id, "interrupts": list(t.interrupts)} for t in state.tasks]}
    async with connect() as conn:
        await Threads.set_status(conn, thread, payload, None)
    return True


async def register(saver: BaseCheckpointSaver[str], data_dir: Path, key: str) -> str | None:
    """In the server: copy the session if needed and list it as a thread with its values."""
    from langgraph_runtime.database import connect
    from langgraph_runtime.ops import Threads

    from ania.studio_checkpointer import studio_thread_id

    if await copy_session(saver, data_dir, key) is None:
        return None
    thread = studio_thread_id(key)
    async with connect() as conn:
        async for _ in await Threads.put(conn, thread, metadata={"session": key, "graph_id": "agent"},
                                         if_exists="do_nothing"):
            pass
    await sync_values(thread, saver)
    return thread


async def register_recent(data_dir: Path, n: int = RECENT) -> list[str]:
    from ania.engine_mode import stock_mode
    from ania.state_url import state_url
    from checkpoints.factory import CHECKPOINT_FILE, open_checkpointer
    from checkpoints.sessions import recent_sessions
    from core.settings import Paths

    config_dir = Paths.from_env().config_dir
    url = state_url(config_dir) or None
    if not url and not (data_dir / CHECKPOINT_FILE).exists():
        return []
    done = []
    async with open_checkpointer(data_dir, url, stock=stock_mode(config_dir)) as saver:
        for key in await recent_sessions(saver, n):
            if await register(saver, data_dir, key):
                done.append(key)
    return done


def running_url(data_dir: Path) -> str | None:
    """The URL the Studio server on this data directory serves on, if one is running."""
    try:
        info = json.loads((data_dir / URL_FILE).read_text())
        pid, url = int(info["pid"]), str(info["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # stale: that server is gone
    except PermissionError:
        pass  # alive, another user's
    return url


@asynccontextmanager
async def running() -> AsyncIterator[None]:
    from core.settings import Paths

    data_dir = Paths.from_env().data_dir
    url = os.environ.get("LANGGRAPH_API_URL", "")
    mine = {"url": url, "pid": os.getpid()}
    if url:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / URL_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, as the data is
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(mine))
    try:
        keys = await register_recent(data_dir)
        sys.stderr.write(f"Ania: {len(keys)} recent bot session(s) listed as Studio threads"
                         f"{' (' + ', '.join(keys) + ')' if keys else ''}; `ania sessions studio KEY` opens another\n")
    except Exception:
        log.exception("Ania: could not list the bot's sessions in Studio; `ania sessions studio KEY` opens one")
    try:
        yield
    finally:
        with suppress(OSError, ValueError):
            if json.loads((data_dir / URL_FILE).read_text()) == mine:
                (data_dir / URL_FILE).unlink()
