"""`ania migrate --to URL` (a real process) from a data directory a real engine wrote (turns through the
scripted model, a scheduled task that ran, an operation-log row, quota counters) into Postgres: every row
read back the same, ids continuing after the copied ones, and a bot on Postgres reading them. Refused: a
second run into the now non-empty database, a run while a bot holds the data directory, and a URL that is
malformed or reaches no server, each with one clear line, never a traceback, never the password."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ania.engine import Engine
from ania.fakes.openai_server import Reply, ScriptedOpenAI
from ania.localservers.postgres import free_port
from checkpoints.factory import open_checkpointer
from checkpoints.sessions import list_sessions, session_messages
from core.settings.cluster import redact_url
from services.datadir import BOT_LOCK
from services.files import OwnerLock
from services.store_schema import MIGRATIONS
from services.usage import QueryFilter
from tests.clock_helpers import clock_settings, finished, fire_now, runs_until
from tests.conftest import Chat
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sekrit-pw-4711"
TABLES = ("kv", "op_log", "started_calls", "clock_tasks", "clock_runs", "query_log", "inbox")


def ania(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    (tmp_path / "config").mkdir(exist_ok=True)
    base.update({"ANIA_CONFIG_DIR": str(tmp_path / "config"), "ANIA_DATA_DIR": str(tmp_path / "data"), **env})
    return subprocess.run([sys.executable, "-m", "ania.cli", *argv], cwd=ROOT, env=base, capture_output=True,
                          text=True, timeout=120, check=False)


def sqlite_rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    finally:
        conn.close()


def pg_rows(url: str, table: str, columns: int) -> list[tuple[Any, ...]]:
    order = "rowid" if table == "clock_runs" else "1, 2" if table == "started_calls" else "1"
    with psycopg.connect(url) as conn:
        return [tuple(r[:columns]) for r in conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()]


async def write_data_dir(llm: ScriptedOpenAI, tmp_path: Path) -> None:
    """What a real bot leaves: three turns, a scheduled task's run, an operation, started calls, quotas."""
    llm.respond_with(lambda body: Reply("an answer"))
    (tmp_path / "config").mkdir(exist_ok=True)
    engine = await Engine.start(tmp_path / "config", tmp_path / "data", settings=clock_settings(llm))
    try:
        chat = Chat(engine, {})
        for i in range(3):
            assert await chat.say("f:u1", "u1", f"hello {i}") == ["an answer"]
        clock = engine.services.clock
        await clock.start()
        view = clock.create("f:u1", "u1", "@every 1h", "PROMPT-C report", name="report")
        fire_now(clock, view.id)
        await runs_until(clock, "f:u1", finished)
        engine.services.store.log_op("config_set", "f:u1", "admin", {"key": "llm.model"})
        engine.services.store.call_started("f:u1", "call-1", "bash")
        engine.services.quota.add("f:u1", 123)
    finally:
        await engine.close()


async def test_migrate_copies_every_table_and_a_bot_then_runs_on_postgres(
        scripted_llm: ScriptedOpenAI, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    await write_data_dir(scripted_llm, tmp_path)
    db = tmp_path / "data" / "ania.db"
    before = {t: sqlite_rows(db, t) for t in TABLES}
    assert all(before[t] for t in ("kv", "op_log", "started_calls", "clock_tasks", "clock_runs", "query_log"))

    async with open_checkpointer(tmp_path / "data") as saver:
        sessions = await list_sessions(saver)
        history = {i.key: [m.model_dump() for m in await session_messages(saver, i.key)] for i in sessions}
    assert "f:u1" in history

    url = pg_url.replace("postgresql://ania@", f"postgresql://ania:{SECRET}@")  # the test server ignores it
    done = ania(tmp_path, "migrate", "--to", url)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr and "ania:***@127.0.0.1" in done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("copying the app store's tables (data/ania.db) into postgresql://")
    assert f"  query_log: {len(before['query_log'])} rows" in lines and lines[-1].startswith("done: ")
    for table in TABLES:
        assert pg_rows(pg_url, table, len(before[table][0]) if before[table] else 0) == before[table], table
    with psycopg.connect(pg_url) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")] == [n for n, _ in MIGRATIONS]
    assert "copying the conversations (data/checkpoints.db) into " + redact_url(url) in lines
    async with open_checkpointer(tmp_path / "data", pg_url) as saver:  # the conversations, the same there
        assert await list_sessions(saver) == sessions
        assert {i.key: [m.model_dump() for m in await session_messages(saver, i.key)] for i in sessions} == history
    listed = ania(tmp_path, "sessions", "list", ANIA_CLUSTER__POSTGRES_URL=pg_url, ANIA_DATA_DIR=str(tmp_path / "empty"))
    assert listed.returncode == 0 and listed.stdout.split()[0::3] == [i.key for i in sessions], listed.stderr

    again = ania(tmp_path, "migrate", "--to", pg_url)  # not twice: the target holds the rows now
    assert again.returncode == 2 and "already holds the app store's tables" in again.stderr
    assert "nothing was copied" in again.stderr and "Traceback" not in again.stderr

    scripted_llm.respond_with(lambda body: Reply("on postgres"))
    settings = clock_settings(scripted_llm, cluster={"postgres_url": pg_url})
    engine = await Engine.start(tmp_path / "config", tmp_path / "data2", settings=settings)
    try:
        assert await Chat(engine, {}).say("f:u1", "u1", "after the move") == ["on postgres"]
        said = [m.get("content") for m in scripted_llm.requests[-1].messages]
        assert "hello 0" in str(said) and said[-1] == "after the move"  # the conversation went on from its history
        assert not (tmp_path / "data2" / "checkpoints.db").exists()
        rows = engine.services.queries.rows(QueryFilter(session="f:u1", limit=10))
        assert [r["input"] for r in rows] == ["after the move", "PROMPT-C report", "hello 2", "hello 1", "hello 0"]
        assert rows[0]["id"] > max(r[0] for r in before["query_log"])  # ids go on after the copied ones
        assert [(v.task.name, v.task.prompt) for v in engine.services.clock.views("f:u1") if v.task] == \
            [("report", "PROMPT-C report")]
        assert engine.services.quota.used("f:u1").session >= 123
        assert not (tmp_path / "data2" / "ania.db").exists()
    finally:
        await engine.close()


async def test_migrate_is_refused_while_a_bot_holds_the_data_directory(
        scripted_llm: ScriptedOpenAI, tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    await write_data_dir(scripted_llm, tmp_path)
    lock = OwnerLock(tmp_path / "data" / BOT_LOCK)
    assert lock.acquire() is None
    try:
        done = ania(tmp_path, "migrate", "--to", pg_url)
    finally:
        lock.release()
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"ania: a bot (process {os.getpid()}) runs on the data directory {tmp_path / 'data'}: "
                           "stop it first; nothing was copied\n")
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('kv')").fetchone() == (None,)


@pytest.mark.parametrize("url", [
    f"postgresql://ania:{SECRET}@127.0.0.1:{{port}}/nowhere",  # no server there
    f"postgresql://ania:{SECRET}@127.0.0.1:notaport/x",
    f"postgresql://ania:{SECRET}@127.0.0.1:{{port}}/x?sslmode={SECRET}",
])
def test_a_bad_postgres_url_is_one_line_naming_the_setting_without_the_password(tmp_path: Path, url: str) -> None:
    url = url.replace("{port}", str(free_port()))
    (tmp_path / "data").mkdir(mode=0o700)  # private, as the bot makes it (no warning line)
    sqlite3.connect(tmp_path / "data" / "ania.db").close()
    for argv, env, setting in ((["migrate", "--to", url], {}, "--to"),
                               (["logs", "ops"], {"ANIA_CLUSTER__POSTGRES_URL": url}, "cluster.postgres_url")):
        done = ania(tmp_path, *argv, **env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"ania: {setting}: cannot use the Postgres database postgresql://ania:***@")
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert SECRET not in done.stderr + done.stdout


def test_a_postgres_url_of_another_kind_is_refused_by_the_settings(tmp_path: Path) -> None:
    done = ania(tmp_path, "logs", "ops", ANIA_CLUSTER__POSTGRES_URL=f"mysql://ania:{SECRET}@127.0.0.1/x")
    assert done.returncode == 2 and "cluster.postgres_url" in done.stderr and "postgresql://" in done.stderr
    assert SECRET not in done.stderr and "Traceback" not in done.stderr
    refused = ania(tmp_path, "migrate", "--to", f"mysql://ania:{SECRET}@127.0.0.1/x")
    assert refused.returncode == 2 and SECRET not in refused.stderr and "--to must be a postgresql://" in refused.stderr
