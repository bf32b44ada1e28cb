"""Approval questions across the processes of a cluster (issue 25): the turn waits on a worker, the answer
("allow 3f2a") arrives at the gateway's message entry.

With the Postgres store each open question is also a row of `approvals_open` (migration 008): its id,
the process that waits for it (`owner`), where it was asked (the chat, and the admin's private chat it
went to), and the request. Any process's `take_reply` reads the rows of that chat, applies the same rules
(services/gates/approvals.py) and writes its verdict into the row, only while the row has none: whoever
writes first decides, the owner's timeout included. The owner learns of it from a signal
(services/cluster/signals.py) at once, or from its slow poll of its own rows when the signal was lost.

The owner renews `alive_until` on every poll while it waits. A process that dies leaves rows nobody
renews: past `alive_until` they are read by nobody (no bare "allow" is refused because of them) and the
next question asked anywhere deletes them. The owner deletes its row when the question is decided or timed
out, so nothing stays behind.

The store's calls are synchronous, on the event loop's thread, as everywhere else (services/store.py). The
rows' writes commit without waiting for the disk (`quick_commit`): a question outlives neither its owner nor
the database server, so a crash of the server's machine losing its last 0.6 s loses nothing that lasts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from services.cluster import Payload, Signals, quick_commit
from services.gates.approval_types import ApprovalRequest, Decision, Verdict
from services.store import STORE_ERRORS, AppStore

log = logging.getLogger(__name__)

TOPIC = "approval_decided"
#: The owner reads its own rows this often besides the signals (a lost NOTIFY costs at most this long).
POLL_SEC = 2.0
#: A row's owner has this long to renew it before other processes take it for dead.
LEASE_SEC = 15.0
_COLUMNS = "id, session, admin_place, request"


@dataclass
class Question:
    """An open question, wherever it waits: its id, the request, the chats where an answer is taken."""

    id: str
    request: ApprovalRequest
    places: tuple[str, ...]

    def line(self) -> str:
        return f'{self.id} ("{self.request.get("tool", "?")}" in {self.request.get("session", "?")})'


class SharedQuestions:
    def __init__(self, store: AppStore, signals: Signals, *, poll_sec: float = POLL_SEC,
                 lease_sec: float = LEASE_SEC) -> None:
        self._store = store
        self._signals = signals
        self.owner = signals.origin
        self.poll_sec = poll_sec
        self._lease = lease_sec
        #: This process's open questions: id → what resolves its wait.
        self._futures: dict[str, asyncio.Future[Decision]] = {}
        self._poller: asyncio.Task[None] | None = None
        signals.subscribe(TOPIC, self._on_decided)

    def held(self) -> int:
        return len(self._futures)

    def open(self, question: Question, future: asyncio.Future[Decision]) -> bool:
        """Record the question (False: its id is taken by another process's question; pick another). Rows
        of dead owners are deleted first."""
        now = time.time()
        admin = question.places[1] if len(question.places) > 1 else ""
        with quick_commit(self._store) as tx:
            tx.write("DELETE FROM approvals_open WHERE alive_until < ?", [now])
            made = tx.query(
                "INSERT INTO approvals_open (id, owner, session, admin_place, request, created, alive_until) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id",
                [question.id, self.owner, question.places[0], admin,
                 json.dumps(question.request, ensure_ascii=False), now, now + self._lease])
        if not made:
            return False
        self._futures[question.id] = future
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())
        return True

    def moved(self, question: Question) -> None:
        """The question's places changed (the admin whose private chat it was sent to)."""
        admin = question.places[1] if len(question.places) > 1 else ""
        self._write("UPDATE approvals_open SET admin_place = ? WHERE id = ? AND owner = ?",
                    [admin, question.id, self.owner])

    def here(self, place: str) -> list[Question]:
        """The undecided questions of live owners asked in or sent to `place`, oldest first."""
        return self._rows("(session = ? OR admin_place = ?) AND ", [place, place])

    def everywhere(self) -> list[Question]:
        return self._rows("", [])

    def _rows(self, where: str, args: list[Any]) -> list[Question]:
        rows = self._store.query(f"SELECT {_COLUMNS} FROM approvals_open WHERE {where}verdict IS NULL "  # noqa: S608 - constant clauses, values as placeholders
                                 "AND alive_until > ? ORDER BY created, id", [*args, time.time()])
        return [Question(r["id"], json.loads(r["request"]),
                         (r["session"], r["admin_place"]) if r["admin_place"] else (r["session"],)) for r in rows]

    def decide(self, rid: str, verdict: Verdict, by: str) -> bool:
        """Write the verdict unless the question is decided, timed out or gone already (False then). Its owner
        is told: directly when it is this process, else by a signal carrying the verdict just committed."""
        if not self._write("UPDATE approvals_open SET verdict = ?, decided_by = ? WHERE id = ? AND verdict IS NULL "
                           "AND alive_until > ?", [verdict, by, rid, time.time()]):
            return False
        decision: Decision = {"decision": verdict, "by": by}
        if rid in self._futures:
            self._resolve(rid, decision)
        else:
            self._signals.publish(TOPIC, {"id": rid, **decision})
        return True

    def expire(self, rid: str) -> Decision | None:
        """At the timeout: close the question, unless an answer was written first (then that answer). A store
        that cannot be read leaves the timeout's denial (fail closed)."""
        try:
            if self._write("UPDATE approvals_open SET verdict = 'timeout' WHERE id = ? AND owner = ? "
                           "AND verdict IS NULL", [rid, self.owner]):
                return None
            rows = self._store.query("SELECT verdict, decided_by FROM approvals_open WHERE id = ? AND owner = ?",
                                     [rid, self.owner])
        except STORE_ERRORS as e:
            log.warning("could not close approval question %s at its timeout (denied): %s", rid, e)
            return None
        return _decision(rows[0]) if rows else None

    def close(self, rid: str) -> None:
        """The wait is over (decided, timed out or cancelled): the row goes."""
        self._futures.pop(rid, None)
        try:
            self._write("DELETE FROM approvals_open WHERE id = ? AND owner = ?", [rid, self.owner])
        except STORE_ERRORS as e:  # nobody renews it now: it falls out of every reading at `alive_until`
            log.error("could not delete approval question %s: %s", rid, e)

    async def _on_decided(self, payload: Payload) -> Payload | None:
        """Another process decided one of this process's questions (committed before the signal was sent)."""
        decision = _decision({"verdict": payload.get("decision"), "decided_by": payload.get("by")})
        if decision is not None:
            self._resolve(str(payload.get("id", "")), decision)
        return None

    def _resolve(self, rid: str, decision: Decision) -> None:
        future = self._futures.get(rid)
        if future is not None and not future.done():
            future.set_result(decision)

    def _write(self, sql: str, args: list[Any]) -> int:
        with quick_commit(self._store) as tx:
            return tx.write(sql, args)

    async def _poll(self) -> None:
        """While this process waits: renew its rows and take the verdicts written into them."""
        try:
            while self._futures:
                await asyncio.sleep(self.poll_sec)
                try:
                    self._sweep()
                except STORE_ERRORS as e:
                    log.warning("could not read the approval questions: %s", e)
        finally:
            self._poller = None

    def _sweep(self) -> None:
        if not self._futures:
            return
        with quick_commit(self._store) as tx:
            rows = tx.query("UPDATE approvals_open SET alive_until = ? WHERE owner = ? "
                            "RETURNING id, verdict, decided_by", [time.time() + self._lease, self.owner])
        for row in rows:
            decision = _decision(row)
            if decision is not None:
                self._resolve(row["id"], decision)

    async def aclose(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller


def _decision(row: dict[str, Any]) -> Decision | None:
    verdict = row.get("verdict")
    if verdict == "allow":
        return {"decision": "allow", "by": str(row.get("decided_by") or "")}
    if verdict == "deny":
        return {"decision": "deny", "by": str(row.get("decided_by") or "")}
    return None
