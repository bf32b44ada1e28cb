"""The clock in the cluster (issue 25), through the OneBot fake: a gateway and two workers, real processes on
one Postgres. A repeating task made in a group fires once per due time, on the one worker holding the
clock's lock (services/clock/lease.py), its reply reaching the group through the gateway; `kill -9` of that
worker hands the clock to the other, and every due time is in the run log once across the hand-over."""

from __future__ import annotations

import os
import signal
import time

import psycopg
import pytest

from ania.fakes.openai_server import Reply
from services.clock import ClockRun
from tests.cluster_helpers import Cluster
from tests.onebot_fake import FakeOneBot, at, text
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.subagent_helpers import Router
from tests.test_clock_cluster import CREATE, assert_each_due_time_once
from tests.test_cluster import up
from tests.test_serve import BOT

pytestmark = pytest.mark.timeout(240)


def clock_pids(cluster: Cluster, since: float = 0.0) -> set[int]:
    """The processes that ran the clock's turns (their query-log rows), started after `since`."""
    return {pid for (pid,) in cluster.rows("SELECT DISTINCT pid FROM query_log WHERE trigger = 'clock' AND started > %s",
                                           [since])}


async def test_a_repeating_task_fires_once_per_due_time_across_workers_and_the_death_of_its_holder(
        scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    scripted_llm.respond_with(Router().on("every two seconds", CREATE, Reply("Scheduled."))
                              .on("PROMPT-BEAT", Reply("beat")))
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url).start(
        workers=2, ANIA_CLOCK__MIN_INTERVAL_SEC="1")
    try:
        await up(fake, cluster)
        await fake.group_message(9, 42, [at(BOT), text(" every two seconds, say beat")])
        await fake.wait_for(lambda: fake.texts("g:9").count("beat") >= 2, timeout=60)
        holders = clock_pids(cluster)
        assert len(holders) == 1, holders  # one worker fires; the other stands by
        (holder,) = holders
        assert holder in {w.pid for w in cluster.workers}
        survivor = next(w.pid for w in cluster.workers if w.pid != holder)

        os.kill(holder, signal.SIGKILL)
        killed = time.time()
        beats = fake.texts("g:9").count("beat")
        await fake.wait_for(lambda: fake.texts("g:9").count("beat") >= beats + 2, timeout=90)
        assert clock_pids(cluster, since=killed) == {survivor}  # took over, and only it fires
    finally:
        await cluster.close()
        await fake.close()

    assert fake.texts("g:9")[0] == "Scheduled."
    with psycopg.connect(pg_url) as conn:
        conn.row_factory = psycopg.rows.dict_row
        rows = [ClockRun.from_row(r) for r in conn.execute("SELECT * FROM clock_runs ORDER BY scheduled")]
    assert_each_due_time_once(rows)
    assert {r.status for r in rows} <= {"success", "missed", "interrupted"}, [(r.status, r.detail) for r in rows]
    # No due time is answered twice in the group: each "beat" is one run's reply.
    assert fake.texts("g:9").count("beat") <= sum(r.status in ("success", "interrupted") for r in rows)
