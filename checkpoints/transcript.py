"""A session's whole conversation, across compactions, rebuilt from its checkpoints.

A compaction (nodes/compact.py) replaces the history with `[summary, *recent]`, so the latest history
(`session_messages`) starts at the last summary. Every message is still in the checkpoint writes: this
walks the session's checkpoint chain, oldest first, and folds the message writes the way the reducer
does, except that a compaction keeps what came before it and adds its summary as an entry of its own,
at the moment it happened, with the number of messages it summarized. A message a later write replaced
(same id) shows as replaced; one removed by id (a prompt a hook blocked) is left out, as it was never
part of the conversation. Writes at the newest checkpoint are pending (a step not yet done) and are not
shown. A pruned session starts at its oldest kept copy of the history.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, writes_sort_key

from checkpoints.factory import REDUCERS
from checkpoints.fold import REMOVE_ALL_MESSAGES
from checkpoints.maintenance import CHAIN_SQL
from checkpoints.sessions import LATEST_SQL, checkpoint_time, session_messages
from checkpoints.tables import Query, copy_at, dialect, fetch

#: The summary message's id prefix (nodes/compact.py), for a summary found in a stored copy.
SUMMARY_ID = "summary-"
WRITES_SQL = Query("SELECT checkpoint_id, task_path, task_id, idx, type, value FROM writes WHERE thread_id = ? "
                   "AND checkpoint_ns = '' AND channel = 'messages'",
                   "SELECT checkpoint_id, task_path, task_id, idx, type, blob FROM checkpoint_writes "
                   "WHERE thread_id = %s AND checkpoint_ns = '' AND channel = 'messages'")


@dataclass
class Entry:
    """One message of the conversation, or one compaction (`message` is then its summary)."""

    kind: Literal["message", "compaction"]
    message: BaseMessage
    #: The checkpoint the step that wrote it started from (`--at` of fork and replay), and when it ended.
    checkpoint: str
    at: datetime | None
    #: A compaction: how many messages of the history then it replaced.
    summarized: int = 0


async def full_transcript(saver: BaseCheckpointSaver[str], session_key: str) -> list[Entry] | None:
    """Every message of the session in order, with each compaction where it happened; None: no such session.
    Another saver than SQLite's or Postgres' gives the latest history only."""
    if not dialect(saver):
        messages = await session_messages(saver, session_key)
        return [Entry("compaction" if (m.id or "").startswith(SUMMARY_ID) else "message", m, "", None)
                for m in messages] or None
    latest = await fetch(saver, LATEST_SQL, (session_key,))
    if not latest:
        return None
    chain = [str(r[0]) for r in await fetch(saver, CHAIN_SQL, (session_key, latest[0][0], session_key))][::-1]
    rows = await fetch(saver, WRITES_SQL, (session_key,))
    fold = _Fold()
    fold.seed(_stored_messages(*await copy_at(saver, session_key, chain[0])), chain[0])
    order = {cid: i for i, cid in enumerate(chain[:-1])}  # the newest checkpoint's writes are pending
    applied = sorted((r for r in rows if r[0] in order),
                     key=lambda r: (order[r[0]], writes_sort_key(r[1] or "", r[2], r[3])))
    for cid, _path, _task, _idx, typ, blob in applied:
        child = chain[order[cid] + 1]
        fold.write(saver.serde.loads_typed((typ, bytes(blob))), cid, checkpoint_time(child))
    return fold.entries()


def _stored_messages(stored: bool, value: Any) -> list[BaseMessage]:
    """The copy of the history stored at a checkpoint (the oldest kept one of a pruned session), if any."""
    if not stored:
        return []
    channel: DeltaChannel[Any] = DeltaChannel(REDUCERS["messages"])
    channel.key = "messages"
    return list(channel.from_checkpoint(value).value)


class _Fold:
    """The reducer's fold, keeping what a compaction drops."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}  # by message id (a compaction's by its summary's), in order
        self._live: list[str] = []  # the ids in the history as the graph holds it

    def seed(self, messages: list[BaseMessage], checkpoint: str) -> None:
        at = checkpoint_time(checkpoint)
        for m in messages:
            mid = m.id or str(uuid.uuid4())
            kind: Literal["message", "compaction"] = "compaction" if mid.startswith(SUMMARY_ID) else "message"
            self._entries[mid] = Entry(kind, m, checkpoint, at)
            self._live.append(mid)

    def write(self, value: Any, checkpoint: str, at: datetime | None) -> None:
        batch = [m for m in (value if isinstance(value, list) else [value]) if isinstance(m, BaseMessage)]
        cut = max((i for i, m in enumerate(batch) if isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES),
                  default=None)
        if cut is not None:
            tail = [m for m in batch[cut + 1:] if not isinstance(m, RemoveMessage)]
            kept = {m.id for m in tail}
            summarized = sum(1 for mid in self._live if mid not in kept)
            for m in tail:
                mid = m.id or str(uuid.uuid4())
                if mid in self._entries:
                    self._entries[mid].message = m
                else:
                    self._entries[mid] = Entry("compaction", m, checkpoint, at, summarized)
            self._live = [m.id or "" for m in tail]
            return
        for m in batch:
            mid = m.id or str(uuid.uuid4())
            if isinstance(m, RemoveMessage):
                self._entries.pop(mid, None)
                self._live = [i for i in self._live if i != mid]
            elif mid in self._entries:
                self._entries[mid].message = m
            else:
                self._entries[mid] = Entry("message", m, checkpoint, at)
                self._live.append(mid)

    def entries(self) -> list[Entry]:
        return list(self._entries.values())
