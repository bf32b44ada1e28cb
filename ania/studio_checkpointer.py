"""The checkpointer `langgraph dev` uses (langgraph.json "checkpointer"): the bot's own
`<data dir>/checkpoints.db`, so Studio reads and writes the same file as the bot.

Studio accepts only UUID thread ids, and the bot's sessions are keyed `g:123`: `ania sessions studio KEY`
copies a session to the thread `studio_thread_id(KEY)` (a UUID derived from the key) and registers it
with the running server, and the Studio runs of that thread act as that session (ania/studio.py).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver

from ania.engine_mode import stock_mode
from ania.state_url import state_url
from checkpoints.factory import open_checkpointer
from core.settings import Paths
from services.datadir import make_private

#: KV key (app store) of the session a Studio thread copies.
STUDIO_THREAD = "studio_thread:"
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://ania.invalid/session")


def studio_thread_id(session_key: str) -> str:
    """The same UUID for the same session key, every time."""
    return str(uuid.uuid5(_NAMESPACE, session_key))


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    paths = Paths.from_env()
    make_private(paths.data_dir)  # the Studio server writes checkpoints.db too: private to its user like the bot's
    async with open_checkpointer(paths.data_dir, state_url(paths.config_dir) or None,
                                 stock=stock_mode(paths.config_dir)) as saver:
        yield saver
