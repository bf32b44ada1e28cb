"""A real Postgres for the tests (ania/localservers/postgres.py): one server per xdist worker, one fresh
database per test.

    async def test_x(pg_url: str) -> None: ...      # pg_url: postgresql://ania@127.0.0.1:PORT/t_<hex>

Without Postgres the tests skip, except in CI (CI=true), where a missing server fails them (.ci/run
installs Debian's `postgresql`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from ania.localservers.postgres import LocalPostgres, PostgresUnavailable


def need_server(what: str, why: str) -> None:
    """Skip a test that cannot have its `what` server, or fail it in CI (CI=true), where .ci/run installs it."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the {what} tests need a server in CI: {why}")
    pytest.skip(why)


def need_postgres(why: str) -> None:
    need_server("Postgres", why)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    try:
        server = LocalPostgres({"fsync": "off", "synchronous_commit": "off"}).start()
    except PostgresUnavailable as e:
        need_postgres(str(e))
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres_server: LocalPostgres) -> str:
    return postgres_server.create_database(f"t_{secrets.token_hex(6)}")
