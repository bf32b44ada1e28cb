"""The clock's tables in the app store (`data/ania.db`, migration `004_clock`): tasks and the task log.

Every method is one short statement or transaction (on SQLite or Postgres: services/store.py); the service
calls the ones on a run's path from a worker thread. A fire writes its log row and the task's `last_fire` together, and
a run-once task's last row and its deletion are one transaction, so a crash never leaves one without
the other.

A scheduled fire *claims* its due time: moving `last_fire` forward to it is one conditional UPDATE (only
while `last_fire` is before it), in the transaction that writes the row. Two processes firing the same due
time (a hand-over between bots on one Postgres store: services/clock/lease.py) are serialized on the task's
row, and the second finds it claimed and writes nothing: each due time is logged once, run or `missed`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Any

from services.clock.model import ClockRun, ClockTask, RunOutcome
from services.store import AppStore, Tx

TASK_COLUMNS = ("session", "name", "schedule", "prompt", "timezone", "run_once", "enabled", "timeout_sec",
                "created_by", "created_at", "since", "last_fire")
#: Log rows kept per task (the newest); older ones are dropped when a run ends.
KEEP_RUNS = 200


class ClockStore:
    def __init__(self, store: AppStore) -> None:
        self._store = store

    # --- tasks -------------------------------------------------------------------------------
    def add(self, values: Mapping[str, Any]) -> int:
        cols = ", ".join(TASK_COLUMNS)
        marks = ", ".join("?" for _ in TASK_COLUMNS)
        return self._store.insert(f"INSERT INTO clock_tasks ({cols}) VALUES ({marks})",  # noqa: S608 - constant TASK_COLUMNS, values as ? placeholders
                                  [values[c] for c in TASK_COLUMNS])

    def rows(self, session: str | None = None) -> list[dict[str, Any]]:
        """Raw task rows, by id (the service turns them into tasks and reports the ones that are not)."""
        where, args = ("WHERE session = ?", [session]) if session else ("", [])
        return self._store.query(f"SELECT * FROM clock_tasks {where} ORDER BY id", args)  # noqa: S608 - `where` is empty or a constant clause, values as ? placeholders

    def row(self, task_id: int) -> dict[str, Any] | None:
        found = self._store.query("SELECT * FROM clock_tasks WHERE id = ?", [task_id])
        return found[0] if found else None

    def get(self, task_id: int) -> ClockTask | None:
        found = self.row(task_id)
        return None if found is None else ClockTask.from_row(found)

    def count(self, session: str) -> int:
        return int(self._store.query("SELECT count(*) AS n FROM clock_tasks WHERE session = ?", [session])[0]["n"])

    def update(self, task_id: int, **values: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        self._store.write(f"UPDATE clock_tasks SET {sets} WHERE id = ?", [*values.values(), task_id])  # noqa: S608 - the column names are our own callers' keyword names, values as ? placeholders

    def delete(self, task_id: int) -> None:
        self._store.write("DELETE FROM clock_tasks WHERE id = ?", [task_id])

    # --- the task log --------------------------------------------------------------------------
    def start_run(self, run: ClockRun, fired: bool) -> bool:
        """The `running` row; `fired` (the schedule fired it, not a person) also claims its due time. False
        (nothing written) when the due time was claimed already, or the task is gone."""
        with self._store.transaction() as tx:
            if fired and not _claim(tx, run.task_id, run.scheduled, run.scheduled):
                return False
            _insert(tx, run)
        return True

    def add_missed(self, runs: Iterable[ClockRun], last_fire: float | None = None) -> bool:
        """`missed` rows; with `last_fire`, they claim the due times from the first row's to `last_fire` (the
        task's fires up to it are accounted). False (nothing written) when one of them was claimed already."""
        runs = list(runs)
        with self._store.transaction() as tx:
            if last_fire is not None and runs and not _claim(tx, runs[0].task_id, runs[0].scheduled, last_fire):
                return False
            for run in runs:
                _insert(tx, run)
        return True

    def finish_run(self, run_id: str, task_id: int, outcome: RunOutcome, delete_task: bool) -> None:
        calls = json.dumps([asdict(c) for c in outcome.tool_calls], ensure_ascii=False)
        with self._store.transaction() as tx:
            tx.write(
                "UPDATE clock_runs SET status = ?, ended = ?, tool_calls = ?, tool_call_count = ?, usage = ?, "
                "reply = ?, detail = ?, delivered = ?, thread = ? WHERE id = ?",
                [outcome.status, time.time(), calls, outcome.tool_call_count, json.dumps(dict(outcome.usage)),
                 outcome.reply, outcome.detail, int(outcome.delivered), outcome.thread, run_id])
            if delete_task:
                tx.write("DELETE FROM clock_tasks WHERE id = ?", [task_id])
            tx.write("DELETE FROM clock_runs WHERE task_id = ? AND id NOT IN (SELECT id FROM clock_runs "
                     "WHERE task_id = ? ORDER BY scheduled DESC, rowid DESC LIMIT ?)", [task_id, task_id, KEEP_RUNS])

    def running(self, task_id: int) -> str:
        """The id of the task's newest run logged `running` ("" when none)."""
        found = self._store.query("SELECT id FROM clock_runs WHERE task_id = ? AND status = 'running' "
                                  "ORDER BY scheduled DESC, rowid DESC LIMIT 1", [task_id])
        return str(found[0]["id"]) if found else ""

    def interrupt(self, run_id: str, detail: str) -> None:
        self._store.write("UPDATE clock_runs SET status = 'interrupted', ended = ?, detail = ? WHERE id = ? "
                          "AND status = 'running'", [time.time(), detail, run_id])

    def interrupt_all(self, detail: str) -> list[ClockRun]:
        """Rows left `running` (the bot died during their run) become `interrupted`; returns them (as they
        were: locked when read, so the rows changed are the rows returned)."""
        with self._store.transaction() as tx:
            left = _select(tx, "WHERE status = 'running' ORDER BY rowid" + self._store.dialect.for_update, [])
            for run in left:
                tx.write("UPDATE clock_runs SET status = 'interrupted', ended = ?, detail = ? WHERE id = ?",
                         [time.time(), detail, run.id])
        return left

    def runs(self, *, session: str | None = None, task_id: int | None = None, limit: int = 10) -> list[ClockRun]:
        """The newest rows first, of one session and/or one task (all for neither)."""
        conds: list[str] = []
        args: list[Any] = []
        if session is not None:
            conds.append("session = ?")
            args.append(session)
        if task_id is not None:
            conds.append("task_id = ?")
            args.append(task_id)
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        return _select(self._store, f"{where} ORDER BY scheduled DESC, rowid DESC LIMIT ?", [*args, limit])


def _claim(tx: Tx, task_id: int, first: float, last: float) -> bool:
    """Move the task's last fire to `last` if no fire at or after `first` is accounted yet (on Postgres the
    UPDATE waits for another transaction's claim of the row and then reads the row it left)."""
    return tx.write("UPDATE clock_tasks SET last_fire = ? WHERE id = ? AND (last_fire IS NULL OR last_fire < ?)",
                    [last, task_id, first]) == 1


def _insert(tx: Tx, run: ClockRun) -> None:
    tx.write(
        "INSERT INTO clock_runs (id, task_id, session, task_name, status, scheduled, started, ended, detail, thread) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run.id, run.task_id, run.session, run.task_name, run.status, run.scheduled, run.started, run.ended,
         run.detail, run.thread])


def _select(db: Tx | AppStore, tail: str, args: list[Any]) -> list[ClockRun]:
    return [ClockRun.from_row(r) for r in db.query(f"SELECT * FROM clock_runs {tail}", args)]  # noqa: S608 - callers pass constant tails, values as ? placeholders
