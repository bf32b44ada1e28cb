"""The app store on both backends for one test: `store` is parametrized over SQLite (a file in tmp_path) and
Postgres (a fresh database of the test's own server, tests/pg_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.store import AppStore, open_store

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AppStore]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else ""
    s = open_store(tmp_path / "data", url)
    yield s
    s.close()
