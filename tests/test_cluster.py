"""The cluster (issue 25): a gateway and two workers, real processes on one Postgres, through the OneBot fake.
Each chat's messages are answered in order and once, whichever worker takes them; a worker killed mid-turn
leaves its chat to the other within seconds, its turn settled as interrupted and nothing answered twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

import pytest

from ania.fakes.openai_server import Reply, ScriptedOpenAI, Stall
from tests.cluster_helpers import Cluster
from tests.onebot_fake import FakeOneBot, at, text
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.test_serve import BOT

pytestmark = pytest.mark.timeout(240)


async def up(fake: FakeOneBot, cluster: Cluster, workers: int = 2) -> None:
    """Until the gateway is linked to the fake and every worker has registered with the queue."""
    await fake.wait_for(fake.connected.is_set, timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if cluster.rows("SELECT COUNT(*) FROM procrastinate_workers")[0][0] >= workers:
                return
        except Exception:  # noqa: BLE001, S110 - the tables appear when the first process made them
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"workers did not register: {cluster.log('worker0')[-2000:]}")


def answered(cluster: Cluster) -> dict[str, list[list[str]]]:
    """Each session's query-log rows (oldest first) as the message ids each answered."""
    out: dict[str, list[list[str]]] = {}
    for session, ids in cluster.rows("SELECT session, message_ids FROM query_log WHERE status = 'success' ORDER BY id"):
        out.setdefault(session, []).append(json.loads(ids))
    return out


async def test_forty_messages_over_ten_groups_are_answered_in_order_once(scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url).start(workers=2)
    try:
        await up(fake, cluster)
        sent: dict[str, list[str]] = {}
        for i in range(40):
            group = 100 + i % 10
            mid = await fake.group_message(group, 40 + i, [at(BOT), text(f" message {i}")])
            sent.setdefault(f"g:{group}", []).append(str(mid))
        def done() -> bool:  # every message accounted for, and every reply sent (the row closes just before)
            rows = answered(cluster)
            return sum(len(v) for s in rows.values() for v in s) == 40 and len(fake.sent) == sum(map(len, rows.values()))

        await fake.wait_for(done, timeout=120)
        got = answered(cluster)
        for session, ids in sent.items():
            assert [m for row in got[session] for m in row] == ids, session  # in order, each once
        pids = {p for (p,) in cluster.rows("SELECT DISTINCT pid FROM query_log")}
        assert pids <= {w.pid for w in cluster.workers} and len(pids) == 2  # both workers took chats
        for session in sent:  # every answer went out through the gateway, to its own chat
            assert len(fake.texts(session)) == len(got[session])
        assert cluster.rows("SELECT COUNT(*) FROM inbox") == [(0,)]
        # Quotas count once, whichever worker spent the tokens: the day's counter is the sum of the turns'.
        spent = sum(t for (t,) in cluster.rows("SELECT total_tokens FROM query_log"))
        (day,), = cluster.rows("SELECT value FROM kv WHERE key LIKE %s", ["daily:%:global"])
        assert spent > 0 and int(json.loads(day)) == spent
    finally:
        await cluster.close()
        await fake.close()


async def hung_turn_with_one_waiting(fake: FakeOneBot, cluster: Cluster, llm: ScriptedOpenAI, group: int,
                                     second_text: str) -> tuple[int, int, int]:
    """A turn hanging in its model call with a second message waiting behind it; the model then answers
    "answered by the other worker". Returns (the first message's id, the worker running it, the second's id)."""
    llm.script([Stall(120)])
    first = await fake.group_message(group, 42, [at(BOT), text(" first")])
    await fake.wait_for(lambda: llm.requests, timeout=60)  # the stall is taken: its turn hangs
    (pid,), = cluster.rows("SELECT pid FROM query_log WHERE status = 'running'")
    second = await fake.group_message(group, 43, [at(BOT), text(second_text)])
    await fake.wait_for(lambda: cluster.rows("SELECT COUNT(*) FROM inbox") == [(1,)], timeout=30)
    llm.reset()
    llm.script([Reply("answered by the other worker")])
    return first, pid, second


async def test_a_worker_killed_mid_turn_leaves_its_chat_to_the_other(scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    from ania.cluster.sweep import INTERRUPTED

    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url).start(workers=2)
    try:
        await up(fake, cluster)
        first, pid, second = await hung_turn_with_one_waiting(fake, cluster, scripted_llm, 7,
                                                              " second, waiting behind it")
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        await fake.wait_for(lambda: "answered by the other worker" in fake.texts("g:7"), timeout=60)
        assert time.monotonic() - killed > 0  # how long it took: bench/bench_cluster.py measures it
        await asyncio.sleep(1.5)  # nothing more comes: the first message is not answered twice
        assert fake.texts("g:7") == [INTERRUPTED, "answered by the other worker"]
        assert [r.messages[-1]["content"] for r in scripted_llm.requests] == ["[43] user43: second, waiting behind it"]
        rows = cluster.rows("SELECT status, message_ids, pid FROM query_log WHERE session = 'g:7' ORDER BY id")
        survivor = next(w.pid for w in cluster.workers if w.pid != pid)
        assert rows == [("interrupted", f'["{first}"]', pid), ("success", f'["{second}"]', survivor)]
        assert cluster.rows("SELECT COUNT(*) FROM inbox") == [(0,)]
    finally:
        await cluster.close()
        await fake.close()


async def test_messages_that_wait_during_a_turn_are_answered_together_and_the_queue_bound_holds(
        scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    """Batching and the flood limits across workers: the gateway is the one admission point (its count of a
    chat's waiting messages is the shared inbox's), and the next job answers what waited together."""
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url).start(workers=2, ANIA_FLOW__MAX_QUEUE="2")
    try:
        await up(fake, cluster)
        scripted_llm.script([Reply("first done", delay=3.0), Reply("the two waiting ones")])
        first = await fake.group_message(8, 42, [at(BOT), text(" first")])
        await fake.wait_for(lambda: scripted_llm.requests, timeout=60)
        second = await fake.group_message(8, 43, [at(BOT), text(" second")])
        third = await fake.group_message(8, 44, [at(BOT), text(" third")])
        await fake.wait_for(lambda: cluster.rows("SELECT COUNT(*) FROM inbox") == [(2,)], timeout=30)
        fourth = await fake.group_message(8, 45, [at(BOT), text(" fourth, over the bound")])
        await fake.wait_for(lambda: "the two waiting ones" in fake.texts("g:8"), timeout=60)
        rows = cluster.rows("SELECT status, message_ids FROM query_log WHERE session = 'g:8' ORDER BY id")
        assert sorted(rows) == sorted([("success", f'["{first}"]'), ("queue_full", f'["{fourth}"]'),
                                       ("success", f'["{second}", "{third}"]')])
        texts = fake.texts("g:8")
        assert texts[0].startswith("2 messages are already waiting in this chat") and texts[1:] == [
            "first done", "the two waiting ones"]
        second_request = scripted_llm.requests[1].messages[-1]["content"]
        assert "second" in second_request and "third" in second_request and "fourth" not in second_request
    finally:
        await cluster.close()
        await fake.close()


async def test_a_role_without_a_shared_database_is_one_clear_line(scripted_llm, tmp_path) -> None:
    from tests.test_serve import ROOT, env_for

    for role in ("worker", "gateway"):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ania.cli", "serve", "--role", role, env=env_for(scripted_llm, tmp_path), cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 2
        assert err.decode().strip() == (f"ania: ania serve --role {role} needs cluster.postgres_url "
                                        "(ANIA_CLUSTER__POSTGRES_URL): the gateway and its workers share their state "
                                        "there (docs/DEPLOY.md)")


async def test_a_worker_stopped_with_sigterm_hands_its_chat_over(scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    """SIGTERM: the running turn gets `onebot.shutdown_grace_sec`, then is stopped (`interrupted`, the chat
    told); the message waiting behind it is answered by the other worker; the worker exits 0."""
    from ania.cluster.worker import SHUT_DOWN

    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url).start(
        workers=2, ANIA_ONEBOT__SHUTDOWN_GRACE_SEC="1")
    try:
        await up(fake, cluster)
        first, pid, second = await hung_turn_with_one_waiting(fake, cluster, scripted_llm, 9, " second")
        worker = next(w for w in cluster.workers if w.pid == pid)
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(worker.wait(), 60) == 0, cluster.log(f"worker{cluster.workers.index(worker)}")
        await fake.wait_for(lambda: "answered by the other worker" in fake.texts("g:9"), timeout=60)
        assert fake.texts("g:9") == [SHUT_DOWN, "answered by the other worker"]
        rows = cluster.rows("SELECT status, message_ids FROM query_log WHERE session = 'g:9' ORDER BY id")
        assert rows == [("interrupted", f'["{first}"]'), ("success", f'["{second}"]')]
    finally:
        await cluster.close()
        await fake.close()
