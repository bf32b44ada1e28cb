"""Every package's own SQL on both backends: the query log (with its batch's inbox rows), the durable inbox,
the clock's tasks and runs, the daily quota counters, teams in the KV, and the operation log's reads."""

from __future__ import annotations

import os
import threading
import time

from core.settings import LogsSettings, QuotaSettings
from services.clock.model import ClockRun, RunOutcome, ToolCallRecord
from services.clock.store import KEEP_RUNS, ClockStore
from services.flow.inbox import Inbox
from services.store import AppStore
from services.teams import TeamStore
from services.usage import Batch, QueryFilter, QueryLog, count_ops, op_kinds, read_ops
from services.usage.quota import Quota
from tests.clock_helpers import task_row
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.store_helpers import store  # noqa: F401 - fixture

DEAD_PID = 2**22 + 12345  # above any pid_max in use here: no such process


def test_query_log_rows_filters_and_the_batch_leaving_the_inbox(store: AppStore) -> None:  # noqa: F811
    inbox, log = Inbox(store), QueryLog(store, LogsSettings())
    ids = [inbox.record("g:1", f"u{i}", f"hello {i}", message_id=str(100 + i)) for i in range(3)]
    other = inbox.record("g:2", "u9", "elsewhere")
    qid = log.start("g:1", "u0", "hello 0", thread="g:1", checkpoint="cp1",
                    batch=Batch(("100", "101"), ("u0", "u1"), tuple(ids[:2])))
    assert sorted(r["id"] for r in store.query("SELECT id FROM inbox")) == [ids[2], other]
    log.finish(qid, "success", {"total_tokens": 42}, [{"name": "bash", "args": "ls", "status": "ok"}], "done",
               recalled=[{"source": "kb", "text": "x"}])
    log.settled("g:1", "u2", "hello 2", "rate_limited", batch=Batch(("102",), ("u2",), (ids[2],)))
    row = log.get(qid)
    assert row is not None
    assert (row["status"], row["tokens"], row["total_tokens"], row["message_ids"], row["senders"], row["recalled"]) == \
        ("success", {"total_tokens": 42}, 42, ["100", "101"], ["u0", "u1"], [{"source": "kb", "text": "x"}])
    assert row["duration_ms"] >= 0 and row["calls"] == [{"name": "bash", "args": "ls", "status": "ok"}]
    assert [r["status"] for r in log.rows(QueryFilter(session="g:1"))] == ["rate_limited", "success"]
    assert [r["id"] for r in log.rows(QueryFilter(session="g:1", status="success"))] == [qid]
    assert [r["id"] for r in log.rows(QueryFilter(tool="bash"))] == [qid]
    assert log.rows(QueryFilter(tool="bas")) == []  # the LIKE matches, the JSON check does not
    assert log.count(QueryFilter(since=0, until=time.time() + 1)) == 2
    assert inbox.count() == 1


def test_query_log_interrupts_the_rows_of_a_dead_process_and_prunes(store: AppStore) -> None:  # noqa: F811
    log = QueryLog(store, LogsSettings())
    mine = log.start("g:1", "u", "still running here")
    dead = log.start("g:1", "u", "its process died")
    store.write("UPDATE query_log SET pid = ? WHERE id = ?", [DEAD_PID, dead])
    assert log.interrupt_running() == 1
    assert [(r["id"], r["status"]) for r in log.rows(QueryFilter())] == [(dead, "interrupted"), (mine, "running")]
    assert log.prune(time.time() + 1, dry_run=True) == 1
    assert log.prune(time.time() + 1) == 1
    assert [r["id"] for r in log.rows(QueryFilter())] == [mine]


def test_inbox_rows_of_a_dead_process_are_taken_once(store: AppStore) -> None:  # noqa: F811
    inbox = Inbox(store)
    first = inbox.record("g:1", "u", "a", message_id="7")
    inbox.record("f:2", "u", "b")
    store.write("UPDATE inbox SET pid = ?", [DEAD_PID])
    taken = inbox.waiting(lambda s: s.startswith("g:"), lambda pid: pid == os.getpid())
    assert [(r.id, r.session, r.body, r.message_id) for r in taken] == [(first, "g:1", "a", "7")]
    assert inbox.waiting(lambda s: True, lambda pid: pid == os.getpid())[0].session == "f:2"
    assert inbox.waiting(lambda s: True, lambda pid: pid == os.getpid()) == []  # ours now, alive


def _run(task_id: int, n: int, scheduled: float, status: str = "running") -> ClockRun:
    return ClockRun(id=f"r{task_id}-{n}", task_id=task_id, session="g:1", task_name="t", status=status,  # type: ignore[arg-type]
                    scheduled=scheduled, started=scheduled if status == "running" else None)


def test_clock_tasks_and_runs(store: AppStore) -> None:  # noqa: F811
    db = ClockStore(store)
    now = time.time()
    tid = db.add(task_row("g:1", "@every 1s", "PROMPT", since=now))
    other = db.add(task_row("g:2", "@daily", "P2", since=now, run_once=1))
    assert other > tid and db.count("g:1") == 1 and [r["id"] for r in db.rows()] == [tid, other]
    db.update(tid, enabled=False, name="renamed")
    task = db.get(tid)
    assert task is not None and (task.enabled, task.name, task.since) == (False, "renamed", now)
    assert db.start_run(_run(tid, 0, now), fired=True)  # claims its due time
    assert db.add_missed([_run(tid, n, now, "missed") for n in (1, 2)])  # same due time, no claim: order kept
    assert [r.id for r in db.runs(task_id=tid)] == [f"r{tid}-2", f"r{tid}-1", f"r{tid}-0"]
    assert db.get(tid).last_fire == now  # type: ignore[union-attr]
    assert not db.start_run(_run(tid, 3, now), fired=True)  # claimed already: nothing written
    assert not db.add_missed([_run(tid, 4, now, "missed")], last_fire=now + 5)
    assert db.add_missed([_run(tid, 5, now + 1, "missed")], last_fire=now + 5)  # due times now+1 .. now+5
    assert db.get(tid).last_fire == now + 5  # type: ignore[union-attr]
    assert [r.id for r in db.runs(task_id=tid)] == [f"r{tid}-5", f"r{tid}-2", f"r{tid}-1", f"r{tid}-0"]
    outcome = RunOutcome("success", reply="ok", delivered=True, tool_calls=(ToolCallRecord("time", "{}"),),
                         tool_call_count=1, usage={"total_tokens": 3}, thread="clock:x")
    db.finish_run(f"r{tid}-0", tid, outcome, delete_task=False)
    run = db.runs(task_id=tid)[-1]
    assert (run.status, run.reply, run.delivered, run.tool_calls, run.usage) == \
        ("success", "ok", True, (ToolCallRecord("time", "{}"),), {"total_tokens": 3})
    db.start_run(_run(other, 0, now), fired=False)
    assert [r.id for r in db.interrupt_all("the bot stopped")] == [f"r{other}-0"]
    assert db.runs(task_id=other)[0].status == "interrupted"
    db.finish_run(f"r{other}-0", other, RunOutcome("error"), delete_task=True)
    assert db.get(other) is None and db.count("g:2") == 0


def test_clock_keeps_the_newest_runs_per_task(store: AppStore) -> None:  # noqa: F811
    db = ClockStore(store)
    tid = db.add(task_row("g:1", "@every 1s", "P", since=0.0))
    db.add_missed([_run(tid, n, float(n // 2), "missed") for n in range(KEEP_RUNS + 9)])
    db.start_run(_run(tid, 999, 10_000.0), fired=True)
    db.finish_run(f"r{tid}-999", tid, RunOutcome("success"), delete_task=False)
    kept = db.runs(task_id=tid, limit=1000)
    assert len(kept) == KEEP_RUNS and kept[0].id == f"r{tid}-999"
    assert kept[-1].id == f"r{tid}-10"  # ties on the due time broken by insertion order, as on SQLite


def test_quota_counters(store: AppStore) -> None:  # noqa: F811
    day0 = 1796169600.0  # 2026-12-02 00:00 UTC
    clock = [day0 + 3600]
    quota = Quota(QuotaSettings(), store, lambda u: False, now=lambda: clock[0])
    quota.add("g:1", 100)
    quota.add("g:1", 50)
    quota.add("f:2", 7)
    assert quota.used("g:1").session == 150 and quota.used("g:1").total == 157
    assert quota.today() == {"g:1": 150, "f:2": 7, "global": 157}
    clock[0] = day0 + 86400 + 60
    quota.add("g:1", 3_000_000_000)  # past a 32-bit integer
    assert quota.daily("2026-12-01", "2026-12-03") == {"2026-12-02": 157, "2026-12-03": 3_000_000_000}
    assert quota.totals("2026-12-02", "2026-12-03", 5) == [("g:1", 3_000_000_150), ("f:2", 7)]
    assert quota.prune("2026-12-03") == 3
    assert quota.daily("2026-12-01", "2026-12-03", "g:1") == {"2026-12-03": 3_000_000_000}


def test_quota_counts_every_token_from_many_threads(store: AppStore) -> None:  # noqa: F811
    quota = Quota(QuotaSettings(), store, lambda u: False)
    threads = [threading.Thread(target=lambda: [quota.add("g:1", 3) for _ in range(25)]) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert quota.used("g:1").session == 6 * 25 * 3


def test_teams_scopes_and_operation_log_reads(store: AppStore) -> None:  # noqa: F811
    store.kv_set("team:global", {})
    store.kv_set("team:g:9", {})
    store.kv_set("teams", {})
    assert TeamStore(store).scopes() == ["global", "g:9"]
    for i, kind in enumerate(["reboot", "config_set", "config_set"]):
        store.log_op(kind, f"g:{i}", "admin", {"n": i})
    assert [r["detail"] for r in read_ops(store, kind="config_set")] == [{"n": 2}, {"n": 1}]
    assert count_ops(store, session="g:0") == 1 and op_kinds(store) == ["config_set", "reboot"]
