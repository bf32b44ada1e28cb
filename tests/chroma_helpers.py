"""A real Chroma server for the tests (ania/localservers/chroma.py): one server per xdist worker, a fresh
namespace (a Chroma database, made on first use) per test.

    async def test_x(chroma_url: str) -> None: ...   # http://127.0.0.1:PORT/?database=t_<hex>

Without the `chroma` command the tests skip, except in CI (CI=true), where a missing server fails them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from ania.localservers.chroma import ChromaUnavailable, LocalChroma
from tests.pg_helpers import need_server


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[LocalChroma]:
    try:
        server = LocalChroma()
    except ChromaUnavailable as e:
        need_server("Chroma server", str(e))
    yield server.start()
    server.stop()


@pytest.fixture
def chroma_url(chroma_server: LocalChroma) -> str:
    if not chroma_server.alive():  # a test stopped it and failed before bringing it back
        chroma_server.stop(remove=False)
        chroma_server.start()
    return f"{chroma_server.url}/?database=t_{secrets.token_hex(6)}"
