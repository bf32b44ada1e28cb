"""A real Chroma server for the tests (ania/localservers/chroma.py): one server per xdist worker, a fresh
namespace (a Chroma database, made on first use) per test.

    async def test_x(chroma_url: str) -> None: ...   # http://127.0.0.1:PORT/?database=t_<hex>

Without the `chroma` command the tests skip, except in CI (CI=true), where a missing server fails them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from ania.localservers.chroma import ChromaUnavailable, LocalChroma


def need_chroma(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the Chroma server tests need a server in CI: {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[LocalChroma]:
    try:
        server = LocalChroma().start()
    except ChromaUnavailable as e:
        need_chroma(str(e))
    yield server
    server.stop()


@pytest.fixture
def chroma_url(chroma_server: LocalChroma) -> str:
    if not chroma_server.alive():  # a test stopped it and failed before bringing it back
        chroma_server.stop(remove=False)
        chroma_server.start()
    return f"{chroma_server.url}/?database=t_{secrets.token_hex(6)}"
