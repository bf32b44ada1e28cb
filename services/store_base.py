"""What both backends of the app store share (services/store.py, services/store_pg.py): the statement
interface callers use, and the errors a refused statement raises."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Protocol

from services.store_schema import Dialect

Args = Sequence[Any]


class StoreError(Exception):
    """A Postgres store refused a statement (its driver's error, chained). SQLite's stay sqlite3.Error."""


#: What a store's refusal may raise (locked, a constraint, the server gone).
STORE_ERRORS = (sqlite3.Error, StoreError)
#: The same and the file system's (disk full, a read-only directory): callers that go on without the row.
WRITE_REFUSED = (sqlite3.Error, StoreError, OSError)


class Tx(Protocol):
    """Statements on one connection: inside `transaction()` they commit together or not at all."""

    def query(self, sql: str, args: Args = ()) -> list[dict[str, Any]]: ...
    def write(self, sql: str, args: Args = ()) -> int: ...
    def insert(self, sql: str, args: Args = ()) -> int: ...


class Backend(Tx, Protocol):
    dialect: Dialect

    def first(self, sql: str, args: Args = ()) -> tuple[Any, ...] | None: ...

    def transaction(self) -> Any: ...  # a context manager yielding a Tx
    def close(self) -> None: ...
