"""Checkpoints on Postgres against SQLite: what a turn pays, and the bytes stored per turn.

Four engines side by side in one run, the turns interleaved (turn i on each before turn i+1 on any, so
machine load hits all alike): ours on SQLite (data/checkpoints.db), ours on Postgres (checkpoints/
saver_pg.py), and the stock mode (`engine.stock`: LangGraph's own `AsyncSqliteSaver` / `AsyncPostgresSaver`
and its `DeltaChannel` with the fixed snapshot cadence) on each. Postgres is a throwaway server from Debian's
package (ania/localservers/postgres.py) on loopback with its default durability (fsync on); the
checkpointer's connection commits with `synchronous_commit = off` (checkpoints/pg.py), as SQLite runs WAL
with synchronous=NORMAL: neither waits for the disk at each commit. `--pg-sync` keeps `synchronous_commit
= on` (each commit waits for the disk) to show what that costs. Each turn: a user message of ~280
characters, one `time` call, an answer of ~280 characters (4 messages; the words drawn at random per turn,
see `text`); compaction off. Per window between marks (default 10, 100, 1000 turns):
- saver ms/turn: wall time inside the checkpointer (puts, loads, history), median per turn;
- turn ms, CPU ms: the whole turn's wall time and this process's CPU time (the scripted model server runs
  in this process too; the Postgres server's own CPU is not counted), medians;
- stored: the rows' bytes (SQLite: the values' lengths; Postgres: `pg_column_size` of each row) and the
  bytes on disk (SQLite: the file with its WAL folded in; Postgres: the three tables with indexes and
  TOAST), in total and per turn since the previous mark.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite
import psycopg

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.localservers.postgres import LocalPostgres
from bench.common import Ours, table

MARKS = (10, 100, 1000)
WORDS = ("weather", "trains", "meeting", "ten", "slides", "nothing", "special", "kind", "thing", "people",
         "group", "day", "long", "rain", "coffee", "lunch", "report", "budget", "deadline", "printer",
         "office", "window", "garden", "weekend", "concert", "ticket", "station", "delay", "bridge", "river",
         "market", "bakery", "bicycle", "airport", "suitcase", "passport", "holiday", "museum", "library",
         "lecture")


def text(turn: int, kind: str) -> str:
    """~280 characters that differ from turn to turn: Postgres compresses values over 2 KB (TOAST), and
    a line repeated every turn would make the stored copies of the history compress far better than a
    real conversation's."""
    rng = random.Random(f"{kind}{turn}")
    return f"{kind} {turn}: " + " ".join(rng.choice(WORDS) for _ in range(40))[:270]
SAVER_METHODS = ("aput", "aput_writes", "aget_tuple", "aget_delta_channel_history", "alist")
PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


@dataclass
class Side:
    name: str
    llm: ScriptedOpenAI
    ours: Ours
    url: str | None
    saver_s: list[float] = field(default_factory=list)
    turn_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    saver_ms: list[float] = field(default_factory=list)


def _instrument(saver: Any, sink: list[float]) -> None:
    """Time the saver's methods (instance attributes shadow the class's); a nested call counts once."""
    depth = [0]
    for name in SAVER_METHODS:
        method = getattr(saver, name)
        if name == "alist":
            continue  # an async generator; the engine's turn does not list

        async def timed(*args: Any, _m: Any = method, **kw: Any) -> Any:
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return await _m(*args, **kw)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    sink.append(time.perf_counter() - t0)

        setattr(saver, name, timed)


async def _stored(side: Side) -> tuple[int, int]:
    """(row bytes, bytes on disk) of the side's checkpoints."""
    if side.url is None:
        db = side.ours.checkpoint_db
        async with aiosqlite.connect(str(db)) as conn:
            await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            rows = 0
            for sql in ("SELECT SUM(LENGTH(thread_id) + LENGTH(checkpoint_ns) + LENGTH(checkpoint_id) + "
                        "IFNULL(LENGTH(parent_checkpoint_id), 0) + LENGTH(type) + LENGTH(checkpoint) + "
                        "LENGTH(metadata)) FROM checkpoints",
                        "SELECT SUM(LENGTH(thread_id) + LENGTH(checkpoint_ns) + LENGTH(checkpoint_id) + "
                        "LENGTH(task_id) + LENGTH(task_path) + 8 + LENGTH(channel) + LENGTH(type) + "
                        "LENGTH(value)) FROM writes"):
                found = await (await conn.execute(sql)).fetchone()
                rows += int(found[0] or 0) if found else 0
        return rows, db.stat().st_size
    async with await psycopg.AsyncConnection.connect(side.url, autocommit=True) as conn:
        rows = disk = 0
        for name in PG_TABLES:
            cur = await conn.execute(f"SELECT COALESCE(SUM(pg_column_size(t.*)), 0), "
                                     f"pg_total_relation_size('{name}') FROM {name} t")
            found = await cur.fetchone()
            rows += int(found[0]) if found else 0
            disk += int(found[1]) if found else 0
        return rows, disk


def _model(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "user":
        return Calls([("time", {"timezone": "UTC"})])
    return Reply(text(len(body["messages"]), "answer"))


async def run(marks: Sequence[int], root: Path, server: LocalPostgres, *, sync: bool = False) -> str:
    sides: list[Side] = []
    try:
        for name, stock, pg in (("ours, SQLite", False, False), ("stock, SQLite", True, False),
                                ("ours, Postgres", False, True), ("stock, Postgres", True, True)):
            llm = ScriptedOpenAI().__enter__()
            url = server.create_database(f"bench_{len(sides)}") if pg else None
            ours = await Ours.start(llm, root / f"side{len(sides)}", checkpoint_url=url,
                                    agent={"context_tokens": 10**9}, engine={"stock": stock})
            side = Side(name, llm, ours, url)
            saver = ours.engine.graph.checkpointer
            if pg and sync:
                await saver.conn.execute("SET synchronous_commit = on")
            for i in range(3):  # warm up (first imports, prepared paths) on a session of its own
                llm.script([_model, _model])
                await ours.turn(f"warm-up {i}", session="f:warm-up")
            _instrument(saver, side.saver_s)
            sides.append(side)
        rows: list[list[Any]] = []
        last: dict[str, tuple[int, int, int]] = {}
        for side in sides:
            last[side.name] = (0, *await _stored(side))
        for turn in range(1, max(marks) + 1):
            order = sides[turn % len(sides):] + sides[:turn % len(sides)]  # who goes first rotates
            for side in order:
                side.llm.script([_model, _model])
                side.saver_s.clear()
                c0, t0 = time.process_time(), time.perf_counter()
                await side.ours.turn(text(turn, "question"))
                side.turn_ms.append((time.perf_counter() - t0) * 1000)
                side.cpu_ms.append((time.process_time() - c0) * 1000)
                side.saver_ms.append(sum(side.saver_s) * 1000)
            if turn in marks:
                for side in sides:
                    stored, disk = await _stored(side)
                    prev_turn, prev_rows, prev_disk = last[side.name]
                    span = turn - prev_turn
                    window = slice(prev_turn, turn)
                    rows.append([turn, side.name, statistics.median(side.saver_ms[window]),
                                 statistics.median(side.turn_ms[window]), statistics.median(side.cpu_ms[window]),
                                 stored / 1024, (stored - prev_rows) / span / 1024,
                                 disk / 1024, (disk - prev_disk) / span / 1024])
                    last[side.name] = (turn, stored, disk)
    finally:
        for side in sides:
            await side.ours.close()
            side.llm.__exit__(None, None, None)
    head = ["turn", "side", "saver ms/turn", "turn ms", "CPU ms", "rows KiB", "rows KiB/turn",
            "disk KiB", "disk KiB/turn"]
    return "\n".join([table(head, rows), "", *_ratios(rows)])


def _ratios(rows: list[list[Any]]) -> list[str]:
    out = []
    for turn in sorted({r[0] for r in rows}):
        at = {r[1]: r for r in rows if r[0] == turn}
        ours_pg, ours_sq, stock_pg = at["ours, Postgres"], at["ours, SQLite"], at["stock, Postgres"]
        out.append(f"turn {turn}: ours on Postgres / ours on SQLite: saver {ours_pg[2] / ours_sq[2]:.2f}x, "
                   f"turn {ours_pg[3] / ours_sq[3]:.2f}x, CPU {ours_pg[4] / ours_sq[4]:.2f}x; "
                   f"ours / stock on Postgres: saver {ours_pg[2] / stock_pg[2]:.2f}x, turn {ours_pg[3] / stock_pg[3]:.2f}x, "
                   f"CPU {ours_pg[4] / stock_pg[4]:.2f}x, row bytes/turn {ours_pg[6] / stock_pg[6]:.2f}x")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_postgres", description=__doc__.splitlines()[0])
    p.add_argument("--pg-marks", default=",".join(map(str, MARKS)), help="turns at which to measure "
                   "(default 10,100,1000)")
    p.add_argument("--quick", action="store_true", help="marks 10,100")
    p.add_argument("--pg-sync", action="store_true", help="synchronous_commit on: each commit waits for the disk")
    args, _ = p.parse_known_args(argv)
    marks = sorted(int(m) for m in ("10,100" if args.quick else args.pg_marks).split(",") if m.strip())
    server = LocalPostgres().start()  # default durability: fsync and synchronous_commit on
    try:
        with tempfile.TemporaryDirectory(prefix="ania-bench-pg-") as tmp:
            report = asyncio.run(run(marks, Path(tmp), server, sync=args.pg_sync))
    finally:
        server.stop()
    commit = "on (each commit waits for the disk)" if args.pg_sync else "off"
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end; Postgres from Debian's "
          f"package on loopback, fsync on, the checkpointer's synchronous_commit {commit}")
    print(report)


if __name__ == "__main__":
    main()
