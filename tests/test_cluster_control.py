"""The cluster's hand-offs through real processes (issue 25): an approval asked by a turn on a worker and
answered at the gateway; a configuration change made from the chat on a worker reaching every process's
`config/`, and /reboot at the gateway restarting the workers with it; /stop at the gateway stopping the
worker's turn and the messages still waiting in the shared inbox."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

import pytest

from ania.fakes.openai_server import Calls, Reply, Stall
from services.files import atomic_write_text
from tests.cluster_helpers import Cluster
from tests.onebot_fake import FakeOneBot, at, text
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.test_cluster import up
from tests.test_serve import BOT

pytestmark = pytest.mark.timeout(240)
ADMINS = '["1", "2"]'


async def test_an_approval_asked_on_a_worker_is_answered_at_the_gateway_and_config_reaches_everyone(
        scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url, own_config=True).start(
        workers=2, ANIA_BOT__ADMINS=ADMINS)
    try:
        await up(fake, cluster)
        scripted_llm.script([Calls([("config_set", {"key": "bot.system_prompt", "value": "Speak like a pirate."})]),
                             Reply("set, after a reboot")])
        await fake.group_message(5, 1, [at(BOT), text(" change the prompt")])  # admin 1 asks: admin 2 approves
        await fake.wait_for(lambda: any("allow" in t for t in fake.texts("f:2")), timeout=60)
        prompt = next(t for t in fake.texts("f:2") if "allow" in t)
        rid = re.search(r"allow ([0-9a-f]{4})", prompt).group(1)
        await fake.private_message(2, f"allow {rid}")
        await fake.wait_for(lambda: "set, after a reboot" in fake.texts("g:5"), timeout=60)
        config = [tmp_path / f"config-{n}" / "ania.toml" for n in ("gateway", "worker0", "worker1")]
        await fake.wait_for(lambda: all(p.exists() and "pirate" in p.read_text() for p in config), timeout=30)
        scripted_llm.reset()
        await fake.private_message(1, "/reboot")
        await fake.wait_for(lambda: any("restart" in t.lower() for t in fake.texts("f:1")), timeout=60)
        for i in range(2):  # both workers restart with it
            log = f"worker{i}"
            await fake.wait_for(lambda log=log: "restarting" in cluster.log(log), timeout=30)
        await asyncio.sleep(1.0)
        for group in (6, 7, 8, 9):  # whichever worker answers, it has the new prompt
            await fake.group_message(group, 42, [at(BOT), text(" hello")])
        await fake.wait_for(lambda: len(scripted_llm.requests) == 4, timeout=60)
        assert all("Speak like a pirate." in r.messages[0]["content"] for r in scripted_llm.requests)
    finally:
        await cluster.close()
        await fake.close()


async def test_stop_at_the_gateway_stops_the_workers_turn_and_what_waits(scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url).start(workers=2, ANIA_BOT__ADMINS=ADMINS)
    try:
        await up(fake, cluster)
        scripted_llm.script([Stall(120)])
        first = await fake.group_message(5, 42, [at(BOT), text(" first")])
        await fake.wait_for(lambda: scripted_llm.requests, timeout=60)
        second = await fake.group_message(5, 43, [at(BOT), text(" second")])
        third = await fake.group_message(5, 44, [at(BOT), text(" third")])
        await fake.wait_for(lambda: cluster.rows("SELECT COUNT(*) FROM inbox") == [(2,)], timeout=30)
        await fake.group_message(5, 43, "/stop")  # a member: only their own waiting message
        await fake.wait_for(lambda: fake.texts("g:5"), timeout=30)
        assert fake.texts("g:5") == ["Stopped 1 running or queued message(s)."]
        await fake.group_message(5, 1, "/stop")  # an admin: the running turn (on a worker) and the rest
        await fake.wait_for(lambda: len(fake.texts("g:5")) == 2, timeout=30)
        assert fake.texts("g:5")[1] == "Stopped 2 running or queued message(s)."
        rows = dict(cluster.rows("SELECT message_ids, status FROM query_log WHERE session = 'g:5'"))
        assert rows == {f'["{first}"]': "stopped", f'["{second}"]': "stopped", f'["{third}"]': "stopped"}
        assert cluster.rows("SELECT COUNT(*) FROM inbox") == [(0,)]
    finally:
        await cluster.close()
        await fake.close()


async def test_a_hand_edit_of_the_gateways_config_reaches_the_workers_and_an_invalid_one_stops_at_its_reboot(
        scripted_llm, tmp_path, pg_url) -> None:  # noqa: F811
    """The gateway's `config/` is the cluster's: a file edited there by hand reaches every worker within
    seconds and applies at /reboot; a hand edit that is not valid stays on the gateway, whose /reboot says
    why, and the workers neither get it nor restart."""
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await Cluster(scripted_llm, tmp_path, pg_url, fake.url, own_config=True).start(
        workers=2, ANIA_BOT__ADMINS=ADMINS)
    try:
        await up(fake, cluster)
        mine = tmp_path / "config-gateway" / "ania.toml"
        atomic_write_text(mine, '[bot]\nsystem_prompt = "Speak like a pirate."\n')  # as editors save
        copies = [tmp_path / f"config-worker{i}" / "ania.toml" for i in range(2)]

        async def until(what: str, predicate: Callable[[], bool], timeout: float = 60) -> None:
            try:
                await fake.wait_for(predicate, timeout=timeout)
            except AssertionError:
                logs = {n: cluster.log(n)[-1500:] for n in ("gateway", "worker0", "worker1")}
                raise AssertionError(f"{what}: {fake.texts('f:1')} {logs}") from None

        await until("copies", lambda: all(p.exists() and "pirate" in p.read_text() for p in copies))
        await fake.private_message(1, "/reboot")
        await until("restarted", lambda: any(t.startswith("Restarted") for t in fake.texts("f:1")))
        for i in range(2):
            await until(f"worker{i} restarting", lambda i=i: "restarting" in cluster.log(f"worker{i}"))

        atomic_write_text(mine, "[bot\nsystem_prompt = ")  # not TOML
        await asyncio.sleep(3.0)  # past the gateway's watch: it is not published
        assert all("pirate" in p.read_text() for p in copies)
        await fake.private_message(1, "/reboot")
        await until("not restarted", lambda: any(t.startswith("Not restarted") for t in fake.texts("f:1")))
        assert "not valid TOML" in next(t for t in fake.texts("f:1") if t.startswith("Not restarted"))
        await asyncio.sleep(3.0)
        assert [cluster.log(f"worker{i}").count("restarting") for i in range(2)] == [1, 1]
        assert "is not valid, so the workers keep the previous one" in cluster.log("gateway")

        scripted_llm.reset()
        scripted_llm.script([Reply("arr"), Reply("arr")])
        for group in (6, 7):  # whichever worker answers, it still has the edit that was valid
            await fake.group_message(group, 42, [at(BOT), text(" hello")])
        await until("two answers", lambda: len(scripted_llm.requests) == 2)
        assert all("Speak like a pirate." in r.messages[0]["content"] for r in scripted_llm.requests)
    finally:
        await cluster.close()
        await fake.close()
