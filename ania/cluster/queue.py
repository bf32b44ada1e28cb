"""The cluster's message queue: procrastinate on the shared Postgres (the choice: docs/ARCHITECTURE.md, "The
queue").

One job kind, `ania.chat(session)`: "answer what waits in this chat's inbox". The gateway records each admitted
message in the inbox (services/flow/inbox.py) and then defers the chat's job with `lock=session` and
`queueing_lock=session`:
- the lock: procrastinate starts no job while another of the same lock is `doing`, so a chat's turns run one
  at a time, on whichever worker, in order;
- the queueing lock: at most one job per chat waits (`todo`); deferring another raises AlreadyEnqueued, which
  is fine: the waiting job reads the inbox when it starts, so it answers this message too (the row is
  committed before the defer). A job that is running when a message arrives does not see it: the message
  gets the next job, and every message that arrived during a turn is answered together by the next (F1).

Workers beat a heartbeat (procrastinate's `procrastinate_workers`); `stalled` finds the jobs of a worker whose
heartbeat stopped (kill -9, a machine gone), for the gateway's sweep (ania/cluster/sweep.py) to settle.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from procrastinate import App, PsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued
from procrastinate.jobs import Job, Status

log = logging.getLogger(__name__)

CHAT_TASK = "ania.chat"
QUEUE = "ania_chats"
#: Taken while the schema is checked and applied: several processes start at once.
SCHEMA_LOCK = 7_302_411


def open_app(url: str) -> App:
    """The procrastinate app over the cluster's Postgres (opened by the caller: `async with app.open_async()`)."""
    return App(connector=PsycopgConnector(conninfo=url, min_size=1, max_size=8))


#: procrastinate wakes its workers when a job is inserted, not when a job's lock is freed: a chat's next job,
#: deferred while the previous one ran, would wait for a worker's poll (up to a second per message of a
#: conversation, measured in bench_cluster). This trigger says "a job is ready" when a chat job ends and
#: another of its chat waits.
WAKE_NEXT = [
    """CREATE OR REPLACE FUNCTION ania_wake_next_chat_job() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE next_id bigint;
    BEGIN
        IF OLD.status = 'doing' AND OLD.lock IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.status <> 'doing') THEN
            SELECT id INTO next_id FROM procrastinate_jobs WHERE lock = OLD.lock AND status = 'todo' LIMIT 1;
            IF next_id IS NOT NULL THEN
                PERFORM pg_notify('procrastinate_queue_v1#' || OLD.queue_name,
                                  json_build_object('type', 'job_inserted', 'job_id', next_id)::text);
            END IF;
        END IF;
        RETURN NULL;
    END $$""",
    "DROP TRIGGER IF EXISTS ania_wake_next_chat_job ON procrastinate_jobs",
    "CREATE TRIGGER ania_wake_next_chat_job AFTER UPDATE OF status OR DELETE ON procrastinate_jobs "
    "FOR EACH ROW EXECUTE FUNCTION ania_wake_next_chat_job()",
]


async def ensure_schema(url: str) -> None:
    """procrastinate's tables, made once (its `apply_schema` is not idempotent: checked under a lock), and our
    wake-up trigger."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)", [SCHEMA_LOCK])
        try:
            cur = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            row = await cur.fetchone()
            if row is None or not row[0]:
                app = open_app(url)
                async with app.open_async():
                    await app.schema_manager.apply_schema_async()
                log.info("cluster: the queue's tables were created")
            async with conn.transaction():
                for statement in WAKE_NEXT:
                    await conn.execute(statement)
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", [SCHEMA_LOCK])


async def defer_chat(app: App, session: str) -> None:
    """Make sure a job will answer what waits in `session`'s inbox."""
    try:
        await app.configure_task(CHAT_TASK, lock=session, queueing_lock=session, queue=QUEUE).defer_async(
            session=session)
    except AlreadyEnqueued:
        pass  # a waiting job of this chat reads the inbox when it starts: it answers this message too


async def stalled(app: App, stall_sec: float) -> list[Job]:
    """The chat jobs whose worker has not beaten its heartbeat for `stall_sec` (or was pruned as dead)."""
    jobs = await app.job_manager.get_stalled_jobs(queue=QUEUE, task_name=CHAT_TASK, seconds_since_heartbeat=stall_sec)
    return list(jobs)


async def give_up(app: App, job: Job) -> None:
    """Close a dead worker's job (its lock is freed: the chat's next job may start)."""
    await app.job_manager.finish_job(job, status=Status.FAILED, delete_job=False)


def session_of(job: Job) -> str:
    kwargs: dict[str, Any] = job.task_kwargs
    return str(kwargs.get("session", ""))
