"""The throwaway Postgres the cluster tests and benches use: it starts, answers, keeps its address and data
across a restart, and leaves nothing behind."""

from __future__ import annotations

import subprocess

from ania.localservers.postgres import LocalPostgres
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures


def psql(url: str, sql: str) -> str:
    done = subprocess.run(["psql", "-X", "-A", "-t", url, "-c", sql], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_each_test_gets_its_own_database(pg_url: str, postgres_server: LocalPostgres) -> None:  # noqa: F811
    psql(pg_url, "CREATE TABLE t (v int); INSERT INTO t VALUES (7)")
    assert psql(pg_url, "SELECT v FROM t") == "7"
    assert psql(postgres_server.url, "SELECT to_regclass('t') IS NULL") == "t"


def test_a_restart_keeps_the_address_and_the_data() -> None:
    server = LocalPostgres().start()
    try:
        psql(server.url, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('here')")
        port = server.port
        server.stop("immediate", remove=False)  # like a crash
        server.start()
        assert server.port == port and psql(server.url, "SELECT v FROM kept") == "here"
    finally:
        server.stop()
    assert not server.root.exists()
