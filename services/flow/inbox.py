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
from typing import Any

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
    #: The platform's record of the message (JSON, '' when none): a cluster worker rebuilds its bridge from it.
    meta: str = ""


_COLUMNS = "id, received, session, sender, message_id, body, trigger, pid, meta"


def _row(r: dict[str, Any]) -> InboxRow:
    return InboxRow(r["id"], r["received"], r["session"], r["sender"], r["message_id"] or "", r["body"],
                    r["trigger"] or "message", r["meta"] or "")


class Inbox:
    def __init__(self, store: AppStore) -> None:
        self._store = store

    def record(self, session: str, sender: str, body: str, *, message_id: str = "", trigger: str = "message",
               received: float | None = None, meta: str = "") -> int:
        """The new row's id (committed when this returns)."""
        return self._store.insert(
            "INSERT INTO inbox (received, session, sender, message_id, body, trigger, pid, meta) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [time.time() if received is None else received, session, sender, message_id, body, trigger, os.getpid(),
             meta])

    def pending(self, session: str) -> list[InboxRow]:
        """The session's rows, oldest first: in the cluster, what the worker holding the chat answers (whoever
        wrote them; only one worker holds a chat at a time: ania/cluster/queue.py)."""
        return [_row(r) for r in self._store.query(f"SELECT {_COLUMNS} FROM inbox WHERE session = ? ORDER BY id",  # noqa: S608 - a constant
                                                   [session])]

    def waiting_in(self, session: str) -> int:
        return int(self._store.query("SELECT COUNT(*) AS n FROM inbox WHERE session = ?", [session])[0]["n"])

    def sessions_since(self, before: float) -> list[str]:
        """The sessions with a row received before `before` (the cluster's sweep: a chat whose job was lost)."""
        rows = self._store.query("SELECT DISTINCT session FROM inbox WHERE received < ? ORDER BY session", [before])
        return [str(r["session"]) for r in rows]

    def waiting(self, accept: Callable[[str], bool], alive: Callable[[int], bool]) -> list[InboxRow]:
        """Rows left by a process that is gone, of the sessions `accept` takes, oldest first; they become
        this process's (a second restart before they are answered finds them again). A row is taken only
        while it still names the dead process: of two processes starting together on one shared store,
        one takes it."""
        rows = self._store.query(f"SELECT {_COLUMNS} FROM inbox ORDER BY id")  # noqa: S608 - a constant
        left = [r for r in rows if accept(r["session"]) and not alive(int(r["pid"] or 0))]
        mine = [r for r in left if self._store.write("UPDATE inbox SET pid = ? WHERE id = ? AND pid = ?",
                                                     [os.getpid(), r["id"], r["pid"]])]
        return [_row(r) for r in mine]

    def count(self) -> int:
        return int(self._store.query("SELECT COUNT(*) AS n FROM inbox")[0]["n"])
