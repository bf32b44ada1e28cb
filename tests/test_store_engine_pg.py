"""The bot with `cluster.postgres_url` set: its turns, tool calls, quotas and logs land in Postgres and no
`data/ania.db` is made; the URL is a secret (masked by config_get and the panel's settings, its password
out of exports and of child processes' environment); a server that is not there stops the start with
one line naming the setting."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from ania.engine import Engine
from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.localservers.postgres import free_port
from ania.transcripts import secret_values
from core.errors import ConfigError
from core.settings import Paths
from services.configure.files import MASK
from services.processes import scrubbed_env
from services.usage import QueryFilter
from tests.conftest import Chat, make_settings
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures

SECRET = "pw-9f8e7d"


def with_password(url: str) -> str:
    """The test server trusts every login: a password in the URL is accepted and ignored."""
    return url.replace("postgresql://ania@", f"postgresql://ania:{SECRET}@")


async def test_a_turn_runs_on_the_postgres_store(scripted_llm: ScriptedOpenAI, tmp_path: Path,
                                                 pg_url: str) -> None:  # noqa: F811
    url = with_password(pg_url)
    settings = make_settings(scripted_llm, cluster={"postgres_url": url},
                             quota={"session_daily_tokens": 1_000_000})
    scripted_llm.script([Calls([("time", {"timezone": "UTC"})]), Reply("it is now"), Reply("second")])
    (tmp_path / "config").mkdir()
    engine = await Engine.start(tmp_path / "config", tmp_path / "data", settings=settings)
    try:
        chat = Chat(engine, {})
        assert await chat.say("f:u1", "u1", "what time is it?") == ["it is now"]
        assert await chat.say("f:u1", "u1", "again") == ["second"]
        rows = engine.services.queries.rows(QueryFilter(session="f:u1"))
        assert [(r["input"], r["status"], r["call_count"]) for r in rows] == \
            [("again", "success", 0), ("what time is it?", "success", 1)]
        assert engine.services.quota.used("f:u1").session > 0
        assert engine.services.inbox.count() == 0

        views = {v.info.key: v.value for v in engine.services.config.views()}  # what the panel's settings show
        assert views["cluster.postgres_url"] == MASK  # set; "" when not
        assert SECRET not in engine.services.config.describe("cluster.postgres_url")
        assert SECRET in secret_values(Paths(tmp_path / "config", tmp_path / "data"), settings)
    finally:
        await engine.close()
    assert not (tmp_path / "data" / "ania.db").exists()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM query_log").fetchone() == (2,)


def test_the_url_never_reaches_a_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANIA_CLUSTER__POSTGRES_URL", f"postgresql://ania:{SECRET}@db/ania")
    monkeypatch.setenv("PGPASSWORD", SECRET)
    assert SECRET not in str(scrubbed_env())


async def test_an_unreachable_server_stops_the_start_naming_the_setting(scripted_llm: ScriptedOpenAI,
                                                                      tmp_path: Path) -> None:
    url = f"postgresql://ania:{SECRET}@127.0.0.1:{free_port()}/ania"
    (tmp_path / "config").mkdir()
    with pytest.raises(ConfigError) as raised:
        await Engine.start(tmp_path / "config", tmp_path / "data",
                           settings=make_settings(scripted_llm, cluster={"postgres_url": url}))
    said = str(raised.value)
    assert said.startswith("cluster.postgres_url: cannot use the Postgres database postgresql://ania:***@127.0.0.1:")
    assert SECRET not in said and "Connection refused" in said


def test_the_store_recovers_when_the_server_restarts(tmp_path: Path) -> None:
    """A server that goes away and comes back: calls meanwhile fail with a StoreError (a caller that goes on
    without its row catches it), and once it is back the pool's fresh connections serve again."""
    from ania.localservers.postgres import LocalPostgres
    from services.store import STORE_ERRORS, open_store

    server = LocalPostgres().start()
    try:
        store = open_store(tmp_path, server.url)
        try:
            store.kv_set("k", 1)
            server.stop("immediate", remove=False)
            with pytest.raises(STORE_ERRORS):
                store.kv_get("k")
            server.start()
            for _ in range(3):  # a connection the pool still held from before fails once, then is replaced
                try:
                    assert store.kv_get("k") == 1
                    break
                except STORE_ERRORS:
                    continue
            assert store.kv_get("k") == 1
        finally:
            store.close()
    finally:
        server.stop()
