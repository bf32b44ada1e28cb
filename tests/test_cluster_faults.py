"""The cluster when its database goes away (issue 25): Postgres stopped and started again under a gateway and
a worker. Nobody exits; the message that meets the dead connection gets a clear reply (never a traceback),
and the next one is answered as usual: every connection of the store, the checkpointer, the queue, the
signals and the clock's lease is made again."""

from __future__ import annotations

import asyncio

import pytest

from ania.localservers.postgres import LocalPostgres, PostgresUnavailable
from tests.cluster_helpers import Cluster
from tests.onebot_fake import FakeOneBot, at, text
from tests.pg_helpers import need_postgres
from tests.test_cluster import up
from tests.test_serve import BOT

pytestmark = pytest.mark.timeout(300)


async def test_a_postgres_restart_costs_at_most_one_reply_and_nothing_exits(scripted_llm, tmp_path) -> None:
    try:
        server = LocalPostgres({"fsync": "off"}).start()
    except PostgresUnavailable as e:
        need_postgres(str(e))
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, server.create_database("faults"), fake.url).start(workers=1)
    try:
        await up(fake, cluster, workers=1)
        await fake.group_message(5, 42, [at(BOT), text(" before")])
        await fake.wait_for(lambda: fake.texts("g:5") == ["echo: [42] user42: before"], timeout=60)
        server.stop("immediate", remove=False)
        await asyncio.sleep(3)
        server.start()
        for i in range(3):  # every connection the restart cut is checked before a turn gets it (core/pg_pool.py)
            await fake.group_message(5, 42, [at(BOT), text(f" after {i}")])
            await fake.wait_for(lambda i=i: len(fake.texts("g:5")) == i + 2, timeout=90)
        assert fake.texts("g:5")[1:] == [f"echo: [42] user42: after {i}" for i in range(3)], \
            cluster.log("worker0")[-3000:]
        assert cluster.gateway.returncode is None and all(w.returncode is None for w in cluster.workers)
    finally:
        await cluster.close()
        await fake.close()
        server.stop()
