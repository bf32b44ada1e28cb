"""One migration list for both backends: on SQLite a fresh file gets exactly the schema the sqlite-utils
migrations made (tests/snapshots/store_schema_sqlite.json, taken from that code), so old and new files are
alike; on Postgres the same tables with 64-bit integers, double-precision timestamps and bytewise text;
several processes migrating one empty Postgres database at once all find it migrated, each migration once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from services.store import AppStore, open_store
from services.store_schema import MIGRATIONS
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = Path(__file__).parent / "snapshots" / "store_schema_sqlite.json"


def sqlite_schema(path: Path) -> dict[str, dict[str, list[list[object]]]]:
    conn = sqlite3.connect(path)
    try:
        out: dict[str, dict[str, list[list[object]]]] = {}
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence' "
                              "ORDER BY name").fetchall()
        for (t,) in tables:
            columns = [list(r) for r in conn.execute(f"PRAGMA table_info({t})")]
            indexes = sorted([r[1], r[2], [x[2] for x in conn.execute(f"PRAGMA index_info({r[1]})")]]
                             for r in conn.execute(f"PRAGMA index_list({t})"))
            out[t] = {"columns": columns, "indexes": indexes}
        return out
    finally:
        conn.close()


def test_a_fresh_sqlite_file_has_the_schema_the_old_migrations_made(tmp_path: Path) -> None:
    AppStore(tmp_path / "ania.db").close()
    assert sqlite_schema(tmp_path / "ania.db") == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_postgres_columns_are_wide_and_text_is_bytewise(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    open_store(tmp_path, pg_url).close()
    with psycopg.connect(pg_url) as conn:
        cols = {(t, c): (ty, coll) for t, c, ty, coll in conn.execute(
            "SELECT table_name, column_name, data_type, collation_name FROM information_schema.columns "
            "WHERE table_schema = 'public'").fetchall()}
    assert cols[("kv", "key")] == ("text", "C")
    assert cols[("query_log", "started")][0] == cols[("clock_runs", "scheduled")][0] == "double precision"
    assert cols[("query_log", "total_tokens")][0] == cols[("inbox", "id")][0] == "bigint"
    AppStore(tmp_path / "ania.db").close()
    assert {t for t, _ in cols} == set(sqlite_schema(tmp_path / "ania.db"))


OPEN_AT = """
import sys, time
from pathlib import Path
from services.store import open_store
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time() - 0.01))
while time.time() < start:
    pass
open_store(Path(sys.argv[3]), sys.argv[1]).close()
print("ok")
"""


def test_processes_starting_together_migrate_one_postgres_once(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    start = time.time() + 2.5  # after every process's imports
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, pg_url, str(start), str(tmp_path)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, results, strict=True)] == [(0, "ok")] * 4, \
        [err[-2000:] for _, err in results]
    with psycopg.connect(pg_url) as conn:
        applied = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name").fetchall()]
    assert applied == [name for name, _ in MIGRATIONS]


def test_text_sorts_bytewise_in_a_database_made_with_a_language_locale(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    """An operator's database is often made with en_US or zh_CN collation, where `Zeta` sorts after `alpha`
    and punctuation is nearly ignored; the store's columns sort as SQLite does all the same (the quota's key
    ranges depend on it)."""
    name = pg_url.rsplit("/", 1)[1] + "_icu"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'")
        in_locale = conn.execute("SELECT x FROM (VALUES ('alpha'), ('Zeta')) AS t(x) ORDER BY x COLLATE \"en-US-x-icu\"")
        assert in_locale.fetchall() == [("alpha",), ("Zeta",)]  # what the locale alone would do
    store = open_store(tmp_path, pg_url.rsplit("/", 1)[0] + "/" + name)
    try:
        keys = ["alpha", "Zeta", "daily:2026-01-02:g:1", "daily:2026-01-02;", "daily:2026-01-021"]
        for k in keys:
            store.kv_set(k, 0)
        assert [r["key"] for r in store.query("SELECT key FROM kv ORDER BY key")] == sorted(keys)
        assert [r["key"] for r in store.query("SELECT key FROM kv WHERE key >= ? AND key < ?",
                                              ["daily:2026-01-02:", "daily:2026-01-02;"])] == ["daily:2026-01-02:g:1"]
    finally:
        store.close()
