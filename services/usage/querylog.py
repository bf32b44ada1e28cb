"""The query log (Q3, G1): one row per trigger (a message, a command that reaches the model, a clock
run) from its start to its final response, in the app store's `query_log` table.

A row is written `running` when the turn starts, with the thread and the checkpoint it starts from (so
`ania sessions fork/replay --at` can go back there), and completed when it ends: status, tokens,
duration, the reply, the first 20 tool calls (name, arguments cut, result status, "blocked by <gate>")
and their total count, and the passages of knowledge and memory recalled into the message (F3). A row
still `running` whose process is gone (a crash, kill -9) is marked `interrupted` when the next engine
starts.

A turn may answer several messages (F1): the row names their ids and senders (`message_ids`, `senders`:
JSON lists). A message that reaches no turn gets a row of its own, already finished: `rate_limited`,
`queue_full`, or `stopped` (dropped while it waited). Either way the row is written in the same
transaction that takes the messages out of the durable inbox (services/flow/inbox.py).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.settings import LogsSettings
from services.store import WRITE_REFUSED, AppStore
from services.store_schema import SQLITE, Dialect

log = logging.getLogger(__name__)

#: Tool calls kept per row (the total is kept too), and characters of each call's arguments.
MAX_CALLS = 20
ARGS_CHARS = 300
REPLY_CHARS = 500
STATUSES = ("running", "success", "stopped", "timeout", "error", "quota", "interrupted", "rate_limited",
            "queue_full")
COLUMNS = ("id, started, ended, session, sender, trigger, input, status, tokens, total_tokens, duration_ms, "
           "calls, call_count, thread, checkpoint, reply, message_ids, senders, recalled")


@dataclass(frozen=True)
class Batch:
    """The messages a row accounts for: their ids and senders (shown), and their durable inbox rows (taken)."""

    message_ids: tuple[str, ...] = ()
    senders: tuple[str, ...] = ()
    inbox_ids: tuple[int, ...] = ()

    def columns(self) -> tuple[str, str]:
        return (json.dumps(list(self.message_ids), ensure_ascii=False),
                json.dumps(list(self.senders), ensure_ascii=False))


EMPTY = Batch()


@dataclass(frozen=True)
class QueryFilter:
    session: str | None = None
    status: str | None = None
    since: float | None = None
    tool: str | None = None
    limit: int = 50
    #: The panel's further conditions: who sent it, and an end of the time range (exclusive).
    sender: str | None = None
    until: float | None = None
    offset: int = 0

    def where(self, dialect: Dialect = SQLITE) -> tuple[str, list[Any]]:
        """The SQL condition (constant text, values as ? placeholders) and its values."""
        where: list[str] = []
        args: list[Any] = []
        # With a chat given, `+` keeps SQLite on the (session, started) index: the status index of a common
        # status ("success") would walk most of the table.
        status = dialect.unindexed("status") if self.session else "status"
        for column, value in (("session", self.session), (status, self.status), ("sender", self.sender)):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if self.since is not None:
            where.append("started >= ?")
            args.append(self.since)
        if self.until is not None:
            where.append("started < ?")
            args.append(self.until)
        if self.tool:  # the LIKE is a cheap prefilter on the JSON text; json_each is the exact check
            where.append("calls LIKE ? AND " + dialect.json_list_has("calls", "name"))
            args += [f"%{self.tool}%", self.tool]
        return ("WHERE " + " AND ".join(where)) if where else "", args


def cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


class QueryLog:
    def __init__(self, store: AppStore, settings: LogsSettings) -> None:
        self._store = store
        self.settings = settings

    @property
    def enabled(self) -> bool:
        return self.settings.query_log

    def interrupt_running(self) -> int:
        """Rows left `running` by a process that is gone become `interrupted` (run once at start)."""
        rows = self._store.query("SELECT id, pid FROM query_log WHERE status = 'running'")
        dead = [r["id"] for r in rows if not pid_alive(r["pid"])]
        for qid in dead:
            self._store.write("UPDATE query_log SET status = 'interrupted' WHERE id = ? AND status = 'running'", [qid])
        return len(dead)

    def interrupt_session(self, session: str) -> int:
        """The session's running message turn becomes `interrupted` (a cluster worker died running it: only
        one turn of a chat runs at a time, so it is the dead worker's); how many rows."""
        return self._store.write("UPDATE query_log SET status = 'interrupted' WHERE session = ? AND status = 'running' "
                                 "AND trigger IN ('message', 'command')", [session])

    def start(self, session: str, sender: str, text: str, *, trigger: str = "message", thread: str = "",
              checkpoint: str = "", batch: Batch = EMPTY) -> int:
        """The row of a starting turn (0 when the log is off); `batch`'s messages leave the inbox with it."""
        return self._insert(batch, "INSERT INTO query_log (started, session, sender, trigger, input, status, thread, "
                            "checkpoint, pid, total_tokens, call_count, message_ids, senders) VALUES (?, ?, ?, ?, ?, "
                            "'running', ?, ?, ?, 0, 0, ?, ?)",
                            [time.time(), session, sender, trigger, cut(text, self.settings.input_chars), thread,
                             checkpoint, os.getpid(), *batch.columns()])

    def settled(self, session: str, sender: str, text: str, status: str, *, reply: str = "",
                trigger: str = "message", batch: Batch = EMPTY) -> int:
        """The finished row of a message no turn answers (rate_limited, queue_full, stopped while waiting); 0
        when the store refuses the write (disk full, locked): the caller goes on (the notice is still sent),
        and the message stays in the inbox until a row can be written."""
        now = time.time()
        try:
            return self._settle(batch, [now, now, session, sender, trigger, cut(text, self.settings.input_chars),
                                             status, session, cut(reply, REPLY_CHARS), os.getpid(), *batch.columns()])
        except WRITE_REFUSED as e:
            log.error("could not write the %s row of a message in %s: %s", status, session, e)
            return 0

    def _settle(self, batch: Batch, args: list[Any]) -> int:
        return self._insert(batch, "INSERT INTO query_log (started, ended, session, sender, trigger, input, status, "
                            "tokens, total_tokens, duration_ms, calls, call_count, thread, checkpoint, reply, pid, "
                            "message_ids, senders) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, '{}', 0, 0, '[]', 0, ?, '', ?, ?, ?, ?)", args,
                            if_waiting=True)

    def _insert(self, batch: Batch, sql: str, args: list[Any], *, if_waiting: bool = False) -> int:
        """The row (when the log is on) and the batch's inbox rows gone, in one transaction. `if_waiting`: no
        row when none of the batch's inbox rows is left (another process of a cluster accounted for them:
        the gateway's /stop and the worker holding the chat both drop waiting messages)."""
        with self._store.transaction() as tx:
            if batch.inbox_ids:
                marks = ", ".join("?" * len(batch.inbox_ids))
                gone = tx.write(f"DELETE FROM inbox WHERE id IN ({marks})", list(batch.inbox_ids))  # noqa: S608 - only ? placeholders
                if if_waiting and not gone:
                    return 0
            return tx.insert(sql, args) if self.enabled else 0

    def finish(self, qid: int, status: str, usage: Mapping[str, int], calls: Sequence[Mapping[str, Any]],
               reply: str, recalled: Sequence[Mapping[str, Any]] = ()) -> None:
        """`recalled`: the passages quoted into the turn's message (F3; NULL when none)."""
        if not qid:
            return
        now = time.time()
        kept = [dict(c, args=cut(str(c.get("args", "")), ARGS_CHARS)) for c in calls[:MAX_CALLS]]
        self._store.write(
            "UPDATE query_log SET ended = ?, status = ?, tokens = ?, total_tokens = ?, duration_ms = "
            "CAST((? - started) * 1000 AS INTEGER), calls = ?, call_count = ?, reply = ?, recalled = ? WHERE id = ?",
            [now, status, json.dumps(dict(usage), sort_keys=True), int(usage.get("total_tokens", 0)), now,
             json.dumps(kept, ensure_ascii=False), len(calls), cut(reply, REPLY_CHARS),
             json.dumps([dict(r) for r in recalled], ensure_ascii=False) if recalled else None, qid])

    def rows(self, f: QueryFilter) -> list[dict[str, Any]]:
        """Newest first: `f.limit` rows from `f.offset` on."""
        where, args = f.where(self._store.dialect)
        sql = f"SELECT {COLUMNS} FROM query_log {where} ORDER BY id DESC LIMIT ? OFFSET ?"  # noqa: S608 - constant COLUMNS and clauses, values as ? placeholders
        return [_decoded(r) for r in self._store.query(sql, [*args, f.limit, f.offset])]

    def count(self, f: QueryFilter) -> int:
        """How many rows match (a page's total)."""
        where, args = f.where(self._store.dialect)
        return int(self._store.query(f"SELECT COUNT(*) AS n FROM query_log {where}", args)[0]["n"])  # noqa: S608 - constant clauses, values as ? placeholders

    def get(self, qid: int) -> dict[str, Any] | None:
        """One row in full, JSON columns decoded; the process id is left out."""
        found = self._store.query(f"SELECT {COLUMNS} FROM query_log WHERE id = ?", [qid])  # noqa: S608 - constant columns
        return _decoded(found[0]) if found else None

    def prune(self, before: float, *, dry_run: bool = False) -> int:
        """Rows that started before `before` and are not running."""
        where = "started < ? AND status != 'running'"
        if dry_run:
            return int(self._store.query(f"SELECT COUNT(*) AS n FROM query_log WHERE {where}", [before])[0]["n"])  # noqa: S608 - `where` is a constant clause, values as ? placeholders
        return self._store.write(f"DELETE FROM query_log WHERE {where}", [before])  # noqa: S608 - `where` is a constant clause, values as ? placeholders


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "tokens": json.loads(row["tokens"] or "{}"), "calls": json.loads(row["calls"] or "[]"),
            "message_ids": json.loads(row["message_ids"] or "[]"), "senders": json.loads(row["senders"] or "[]"),
            "recalled": json.loads(row["recalled"] or "[]")}


def pid_alive(pid: int | None) -> bool:
    """Whether process `pid` still runs (this one does)."""
    if not pid:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ops_where(session: str | None, kind: str | None, since: float | None, actor: str | None = None,
               until: float | None = None) -> tuple[str, list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("session", session), ("kind", kind), ("actor", actor)):
        if value:
            where.append(f"{column} = ?")
            args.append(value)
    for clause, bound in (("ts >= ?", since), ("ts < ?", until)):
        if bound is not None:
            where.append(clause)
            args.append(bound)
    return ("WHERE " + " AND ".join(where) if where else ""), args


def read_ops(store: AppStore, *, session: str | None = None, kind: str | None = None, since: float | None = None,
             limit: int = 50, actor: str | None = None, until: float | None = None,
             offset: int = 0) -> list[dict[str, Any]]:
    """The operation log (R3: approvals, config, skill, MCP changes, reboots), newest first."""
    where, args = _ops_where(session, kind, since, actor, until)
    sql = (f"SELECT id, ts, kind, session, actor, detail FROM op_log {where}"  # noqa: S608 - constant column names and clauses, values as ? placeholders
           " ORDER BY id DESC LIMIT ? OFFSET ?")
    return [{**r, "detail": json.loads(r["detail"] or "{}")} for r in store.query(sql, [*args, limit, offset])]


def count_ops(store: AppStore, *, session: str | None = None, kind: str | None = None, since: float | None = None,
              actor: str | None = None, until: float | None = None) -> int:
    """How many rows `read_ops` would page through with the same filters."""
    where, args = _ops_where(session, kind, since, actor, until)
    return int(store.query(f"SELECT COUNT(*) AS n FROM op_log {where}", args)[0]["n"])  # noqa: S608 - as above


def op_kinds(store: AppStore) -> list[str]:
    """The kinds the log holds (the panel's filter offers them)."""
    return [r["kind"] for r in store.query("SELECT DISTINCT kind FROM op_log ORDER BY kind")]
