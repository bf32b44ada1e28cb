"""The durable inbox (issue 26): a message the bot has taken is the bot's responsibility.

Each message that joins a chat's queue is written to the `inbox` table of ania.db (migration
`006_batches`, committed before it waits: WAL, autocommit). Its row goes away in the same transaction
that writes the query-log row of the turn that answers it, or of its other outcome (stopped while
waiting): services/usage/querylog.py. So after a kill -9 every row still here is a message that no turn
took: the next start answers it (`waiting`), and a message a turn did take has its query-log row
(completed, or marked `interrupted` by the restart), never both.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from services.store import AppStore


@dataclass(frozen=True)
class InboxRow:
    id: int
    received: float
    session: str
    sender: str
    message_id: str
    body: str
    trigger: str


class Inbox:
    def __init__(self, store: AppStore) -> None:
        self._store = store

    def record(self, session: str, sender: str, body: str, *, message_id: str = "", trigger: str = "message",
               received: float | None = None) -> int:
        """The new row's id (committed when this returns)."""
        return self._store.insert(
            "INSERT INTO inbox (received, session, sender, message_id, body, trigger, pid) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [time.time() if received is None else received, session, sender, message_id, body, trigger, os.getpid()])

    def waiting(self, accept: Callable[[str], bool], alive: Callable[[int], bool]) -> list[InboxRow]:
        """Rows left by a process that is gone, of the sessions `accept` takes, oldest first; they become
        this process's (a second restart before they are answered finds them again). A row is taken only
        while it still names the dead process: of two processes starting together on one shared store,
        one takes it."""
        rows = self._store.query("SELECT id, received, session, sender, message_id, body, trigger, pid FROM inbox "
                                 "ORDER BY id")
        left = [r for r in rows if accept(r["session"]) and not alive(int(r["pid"] or 0))]
        mine = [r for r in left if self._store.write("UPDATE inbox SET pid = ? WHERE id = ? AND pid = ?",
                                                     [os.getpid(), r["id"], r["pid"]])]
        return [InboxRow(r["id"], r["received"], r["session"], r["sender"], r["message_id"] or "", r["body"],
                         r["trigger"] or "message") for r in mine]

    def count(self) -> int:
        return int(self._store.query("SELECT COUNT(*) AS n FROM inbox")[0]["n"])
