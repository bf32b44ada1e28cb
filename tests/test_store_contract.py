"""The app store's contract, the same on SQLite and on Postgres: the KV, the operation log, started calls,
callers' own statements (placeholders, literal `%` and `?`, ids, row counts), transactions that commit
together or not at all, timestamps kept to the microsecond, and text sorted bytewise."""

from __future__ import annotations

import threading
import time

import pytest

from services.store import STORE_ERRORS, AppStore
from tests.pg_helpers import pg_url, postgres_server  # noqa: F401 - fixtures
from tests.store_helpers import store  # noqa: F401 - fixture


def test_kv_round_trips_json_and_overwrites(store: AppStore) -> None:  # noqa: F811
    assert store.kv_get("team:g:1", "none") == "none"
    store.kv_set("team:g:1", {"b": [1, 2], "a": "日本語 ✓"})
    store.kv_set("team:g:1", {"b": [3], "a": "second"})
    assert store.kv_get("team:g:1") == {"a": "second", "b": [3]}
    store.kv_delete("team:g:1")
    assert store.kv_get("team:g:1") is None


def test_kv_entries_expire(store: AppStore) -> None:  # noqa: F811
    store.kv_set("short", 1, ttl_sec=-1)
    store.kv_set("long", 2, ttl_sec=3600)
    assert (store.kv_get("short", "gone"), store.kv_get("long")) == ("gone", 2)


def test_operation_log_in_order_with_its_detail(store: AppStore) -> None:  # noqa: F811
    store.log_op("config_set", "g:1", "admin", {"key": "llm.model", "value": "x"})
    store.log_op("reboot", "g:1", "admin", {})
    store.log_op("config_set", "f:2", "admin", {"key": "bot.name"})
    assert [(r["kind"], r["session"]) for r in store.ops()] == [("config_set", "g:1"), ("reboot", "g:1"),
                                                                 ("config_set", "f:2")]
    assert [r["detail"] for r in store.ops("config_set")] == [{"key": "llm.model", "value": "x"}, {"key": "bot.name"}]


def test_started_calls_are_recorded_replaced_and_forgotten(store: AppStore) -> None:  # noqa: F811
    store.call_started("g:1", "c1", "bash")
    store.call_started("g:1", "c1", "bash")  # the same call again: one row
    store.call_started("g:1", "c2", "time")
    store.call_started("g:2", "c3", "bash")
    assert store.started_calls("g:1") == {"c1", "c2"}
    store.forget_started_calls("g:1")
    assert (store.started_calls("g:1"), store.started_calls("g:2")) == (set(), {"c3"})
    store.call_started("g:1", "c4", "bash")  # after a forget the session is recorded again
    assert store.started_calls("g:1") == {"c4"}


def test_own_statements_ids_counts_and_literals(store: AppStore) -> None:  # noqa: F811
    first = store.insert("INSERT INTO inbox (received, session, sender, body) VALUES (?, ?, ?, ?)",
                         [1.5, "g:1", "u", "50% off? yes"])
    second = store.insert("INSERT INTO inbox (received, session, sender, body) VALUES (?, ?, ?, ?)",
                          [2.5, "g:1", "u", "b"])
    assert second > first > 0
    third = store.write("INSERT INTO inbox (received, session, sender, body) VALUES (?, ?, ?, ?)", [3, "g:1", "u", "c"])
    assert third > second  # `write` of an INSERT gives the id too (its contract before there were two backends)
    store.write("DELETE FROM inbox WHERE id = ?", [third])
    assert store.write("UPDATE inbox SET pid = ? WHERE session = ?", [7, "g:1"]) == 2
    assert store.write("UPDATE inbox SET pid = ? WHERE session = ?", [7, "none"]) == 0
    rows = store.query("SELECT '100%?' AS lit, body FROM inbox WHERE body LIKE ? ORDER BY id", ["50%"])
    assert rows == [{"lit": "100%?", "body": "50% off? yes"}]


def test_a_transaction_commits_together_or_not_at_all(store: AppStore) -> None:  # noqa: F811
    with store.transaction() as tx:
        tx.write("INSERT INTO kv (key, value) VALUES (?, ?)", ["a", "1"])
        tx.write("INSERT INTO kv (key, value) VALUES (?, ?)", ["b", "2"])
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.write("INSERT INTO kv (key, value) VALUES (?, ?)", ["c", "3"])
        raise RuntimeError("the caller fails halfway")
    with pytest.raises(STORE_ERRORS), store.transaction() as tx:
        tx.write("INSERT INTO kv (key, value) VALUES (?, ?)", ["d", "4"])
        tx.write("INSERT INTO kv (key, value) VALUES (?, ?)", ["a", "dup"])  # the primary key refuses it
    assert [r["key"] for r in store.query("SELECT key FROM kv ORDER BY key")] == ["a", "b"]
    assert store.kv_get("a") == 1  # and the store still works after a refused statement


def test_timestamps_keep_their_microseconds_and_flags_are_integers(store: AppStore) -> None:  # noqa: F811
    ts = 1796231491.123456
    store.write("INSERT INTO started_calls (session, call_id, tool, ts) VALUES (?, ?, ?, ?)", ["s", "c", "t", ts])
    assert store.query("SELECT ts FROM started_calls")[0]["ts"] == ts
    store.write("INSERT INTO clock_tasks (session, name, schedule, prompt, timezone, run_once, created_at, since) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ["g:1", "t", "@daily", "p", "UTC", True, ts, ts])
    assert store.query("SELECT run_once, enabled FROM clock_tasks") == [{"run_once": 1, "enabled": 1}]


def test_text_sorts_bytewise(store: AppStore) -> None:  # noqa: F811
    keys = ["daily:2026-01-02;", "daily:2026-01-02:g:1", "Zeta", "alpha", "daily:2026-01-02:global", "é", "a b"]
    for k in keys:
        store.kv_set(k, 0)
    assert [r["key"] for r in store.query("SELECT key FROM kv ORDER BY key")] == sorted(keys)
    found = store.query("SELECT key FROM kv WHERE key >= ? AND key < ? ORDER BY key",
                        ["daily:2026-01-02:", "daily:2026-01-02;"])
    assert [r["key"] for r in found] == ["daily:2026-01-02:g:1", "daily:2026-01-02:global"]


def test_threads_share_the_store(store: AppStore) -> None:  # noqa: F811
    """Writes from many threads at once (the event loop and the worker threads): none lost."""
    def work(n: int) -> None:
        for i in range(40):
            store.call_started(f"g:{n}", f"c{i}", "bash")
            store.log_op("x", f"g:{n}", "u", {"i": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [len(store.started_calls(f"g:{n}")) for n in range(6)] == [40] * 6
    assert len(store.ops("x")) == 240


def test_a_statement_the_store_refuses_raises_a_store_error(store: AppStore) -> None:  # noqa: F811
    with pytest.raises(STORE_ERRORS):
        store.query("SELECT nothing FROM no_such_table")
    assert store.kv_get("missing", time.time) is time.time
