"""The app store per call on Postgres against SQLite (its peer, the default): the store calls on a turn's path.

Both stores are opened the way the bot opens them (`open_store`): `data/ania.db` in a temporary directory
(WAL, synchronous=NORMAL), and a fresh database on a throwaway Postgres on loopback
(ania/localservers/postgres.py, started here with its defaults: fsync on, as a real server; and a second
database on it with synchronous_commit off, which separates the round trip from the commit's flush). Each
operation runs N times in a round; rounds alternate the two sides; the median of the rounds' means is
shown, in µs per call, with the ratio Postgres / SQLite. The Postgres store is synchronous (psycopg 3, a
pooled connection per call): each call is one round trip, and a turn makes about five such calls
(query-log start and finish, started calls, the quota counters).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

import psycopg

from bench.common import table, throwaway_postgres
from core.settings import LogsSettings, QuotaSettings
from services.store import AppStore, open_store
from services.usage import QueryLog
from services.usage.quota import Quota

Op = Callable[[AppStore, QueryLog, Quota, int], object]
OPS: dict[str, Op] = {
    "call_started": lambda s, q, quota, i: s.call_started("g:1", f"c{i}", "bash"),
    "query log start + finish": lambda s, q, quota, i: q.finish(q.start("g:1", "u", "hello"), "success",
                                                                {"total_tokens": 5}, [], "ok"),
    "quota add (two counters)": lambda s, q, quota, i: quota.add("g:1", 7),
    "quota check (used)": lambda s, q, quota, i: quota.used("g:1"),
    "kv_get": lambda s, q, quota, i: s.kv_get("session_tools:g:1"),
    "kv_set": lambda s, q, quota, i: s.kv_set("session_tools:g:1", ["time"]),
}


def measure(stores: dict[str, AppStore], n: int, rounds: int) -> dict[tuple[str, str], float]:
    sides = {name: (s, QueryLog(s, LogsSettings()), Quota(QuotaSettings(), s, lambda u: False))
             for name, s in stores.items()}
    samples: dict[tuple[str, str], list[float]] = {(op, side): [] for op in OPS for side in sides}
    for r in range(rounds):
        for op, fn in OPS.items():
            for side in sorted(sides, reverse=bool(r % 2)):
                store, log, quota = sides[side]
                t0 = time.perf_counter()
                for i in range(n):
                    fn(store, log, quota, i)
                samples[(op, side)].append((time.perf_counter() - t0) / n * 1e6)
    return {k: statistics.median(v) for k, v in samples.items()}


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_store", description=__doc__.splitlines()[0])
    p.add_argument("--store-calls", type=int, default=300, help="calls per operation per round")
    p.add_argument("--store-rounds", type=int, default=7)
    args, _ = p.parse_known_args(argv)
    with throwaway_postgres() as found:
        if found is None:
            return
        server, tmp = found
        lazy = server.create_database("ania_lazy")
        with psycopg.connect(lazy, autocommit=True) as conn:
            conn.execute("ALTER DATABASE ania_lazy SET synchronous_commit = off")
        stores = {"sqlite": open_store(tmp), "postgres": open_store(tmp, server.url), "lazy": open_store(tmp, lazy)}
        try:
            got = measure(stores, args.store_calls, args.store_rounds)
        finally:
            for s in stores.values():
                s.close()
    rows = [[op, f"{got[(op, 'sqlite')]:.1f}", f"{got[(op, 'postgres')]:.1f}",
             f"{got[(op, 'postgres')] / got[(op, 'sqlite')]:.1f}x", f"{got[(op, 'lazy')]:.1f}",
             f"{got[(op, 'lazy')] / got[(op, 'sqlite')]:.1f}x"] for op in OPS]
    print(f"{args.store_rounds} alternating rounds of {args.store_calls} calls, median of the rounds' means "
          "(lazy: the same server, synchronous_commit = off, so a write is the round trip without its flush):")
    print(table(["operation", "SQLite µs/call", "Postgres µs/call", "Postgres / SQLite", "lazy µs/call",
                 "lazy / SQLite"], rows))


if __name__ == "__main__":
    main()
