"""The panel's data pages at scale: each page's and API's server time with 100,000 query-log rows and 10,000
sessions (target: under 100 ms at the median), in-process over ASGI (no network), on a real engine.

Seeding: the query-log rows go in through the app store's own API (`AppStore.locked`, one transaction),
spread over 30 days, 500 chats, every status, a tool call in every third row; the quota's day counters of
those 30 days and 500 chats through `Quota.add`, as the bot writes them. The sessions are copies of a
real 3-turn session (its checkpoints and writes, in SQL) under 10,000 keys. The knowledge page holds 100
global documents, the memory page 50 memories of one chat.

Peers, the way a page would do it without the server-side paging: the session list as `list_sessions`
(every session read, then one page cut out) and the query list filtered by tool as before this change (every
matching row decoded in Python, then filtered and cut).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.panel.app import build_app
from ania.panel.auth import PanelAuth
from ania.panel.context import PanelContext
from bench.common import Ours, table
from checkpoints.sessions import list_sessions
from services.usage import Quota
from services.usage.querylog import COLUMNS

TARGET_MS = 100.0
STATUSES = ("success",) * 8 + ("error", "timeout", "stopped", "quota")
TOOLS = ("time", "bash", "kb_search", "web_fetch")


def _nobody(_user: str) -> bool:
    return False


def seed_counters(ours: Ours, now: float) -> None:
    """The quota's day counters of 30 days and 500 chats (the usage page reads them), as `Quota.add` writes them."""
    services = ours.engine.services
    for day in range(29, -1, -1):
        at = now - day * 86400
        quota = Quota(services.quota.settings, services.store, _nobody, now=functools.partial(float, at))
        for chat in range(500):
            quota.add(f"g:{chat}", 1000 + chat)


def seed_queries(ours: Ours, n: int, now: float) -> None:
    rng = random.Random(7)
    rows = []
    for i in range(n):
        started = now - rng.random() * 30 * 86400
        tokens = rng.randint(200, 4000)
        calls = ([{"name": rng.choice(TOOLS), "args": '{"q": "x"}', "status": "ok"}] if i % 3 == 0 else [])
        rows.append({"started": started, "ended": started + 2, "session": f"g:{i % 500}", "sender": f"u{i % 97}",
                     "trigger": "message", "input": f"message {i} about the weather and the trains " * 2,
                     "status": rng.choice(STATUSES), "tokens": json.dumps({"total_tokens": tokens}),
                     "total_tokens": tokens, "duration_ms": rng.randint(300, 9000), "calls": json.dumps(calls),
                     "call_count": len(calls), "thread": "", "checkpoint": "", "reply": "a reply " * 10, "pid": 0})
    store = ours.engine.services.store
    cols = list(rows[0])
    sql = f"INSERT INTO query_log ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    with store.transaction() as tx:
        for row in rows:
            tx.write(sql, [row[c] for c in cols])


async def seed_sessions(ours: Ours, llm: ScriptedOpenAI, n: int) -> None:
    for i in range(3):
        llm.script([Calls([("time", {})]), Reply(f"answer {i}")])
        await ours.turn(f"question {i}", session="f:seed")
    saver: Any = ours.engine.graph.checkpointer
    many = f"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {int(n) - 1}) "
    async with saver.lock:
        await saver.conn.execute(
            many + "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            "checkpoint, metadata) SELECT printf('g:s%05d', i), checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "type, checkpoint, metadata FROM k CROSS JOIN checkpoints c WHERE c.thread_id = 'f:seed'")
        await saver.conn.execute(
            many + "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, "
            "task_path) SELECT printf('g:s%05d', i), checkpoint_ns, checkpoint_id, task_id, idx, channel, type, "
            "value, task_path FROM k CROSS JOIN writes w WHERE w.thread_id = 'f:seed'")


async def seed_knowledge(ours: Ours, docs: int, memories: int) -> None:
    knowledge = ours.engine.services.knowledge
    for i in range(docs):
        await knowledge.add_document("global", f"Document {i}", f"Rules number {i}: the harbour opens at {i % 24}h.")
    for i in range(memories):
        await knowledge.save_memory("g:1", f"Member {i} likes tea number {i}")


async def timed_get(client: httpx.AsyncClient, path: str, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per request (CPU: this process, its SQLite and Chroma threads included; on
    a machine shared with other jobs it is the steadier figure)."""
    for _ in range(3):
        assert (await client.get(path)).status_code == 200, path
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        r = await client.get(path)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        assert r.status_code == 200, (path, r.text[:200])
    return wall, cpu


async def peer_times(ours: Ours, runs: int) -> dict[str, list[float]]:
    saver: Any = ours.engine.graph.checkpointer
    store = ours.engine.services.store
    out: dict[str, list[float]] = {"sessions": [], "tool": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        every = await list_sessions(saver)
        _ = every[:50]
        out["sessions"].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        rows = store.query(f"SELECT {COLUMNS} FROM query_log WHERE calls LIKE ? ORDER BY id DESC",
                           ['%"name": "bash"%'])
        kept = [r for r in ({**r, "calls": json.loads(r["calls"] or "[]")} for r in rows)
                if any(c.get("name") == "bash" for c in r["calls"])][:50]
        _ = len(kept)
        out["tool"].append((time.perf_counter() - t0) * 1000)
    return out


ROUTES = (
    ("query log page", "/queries"), ("query log API, page 1", "/api/queries"),
    ("query log API, page 1,000", "/api/queries?page=1000&size=50"),
    ("query log API, by chat + status", "/api/queries?session=g:7&status=success"),
    ("query log API, by tool", "/api/queries?tool=bash"), ("query log API, by user, last 2 days", "/api/queries?user=u5&since=2d"),
    ("query row detail", "/api/queries/50000"),
    ("usage page (chart)", "/usage"), ("usage API", "/api/usage"), ("usage API, one chat", "/api/usage?session=g:7"),
    ("sessions page", "/sessions"), ("sessions API, page 1", "/api/sessions"),
    ("sessions API, search", "/api/sessions?q=s0999"), ("sessions API, page 100", "/api/sessions?page=100"),
    ("transcript API", "/api/sessions/g:s00042"), ("transcript page", "/sessions/show?key=g:s00042"),
    ("knowledge page", "/knowledge"), ("knowledge API", "/api/knowledge"),
    ("knowledge search", "/api/knowledge/search?q=harbour%20rules"),
    ("memory page", "/memory"), ("memory API, one chat", "/api/memory?session=g:1"),
)


async def run(rows: int, sessions: int, runs: int) -> None:
    llm = ScriptedOpenAI()
    llm.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ours = await Ours.start(llm, Path(tmp))
            try:
                t0 = time.perf_counter()
                seed_queries(ours, rows, time.time())
                seed_counters(ours, time.time())
                await seed_sessions(ours, llm, sessions)
                await seed_knowledge(ours, 100, 50)
                print(f"seeded {rows:,} query-log rows, {sessions:,} sessions, 100 documents, 50 memories "
                      f"in {time.perf_counter() - t0:.1f} s\n")
                await measure(ours, runs, rows)
            finally:
                await ours.close()
    finally:
        llm.stop()


async def measure(ours: Ours, runs: int, rows: int) -> None:
    auth = PanelAuth(ours.engine.services.paths.data_dir, ours.engine.services.settings.panel)
    token, _ = auth.ensure_token()
    app = build_app(PanelContext(engine=ours.engine, reboot=None, auth=auth, started=time.time()))
    lines = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:6190",
                                 headers={"Authorization": f"Bearer {token}"}) as client:
        for name, path in ROUTES:
            wall, cpu = await timed_get(client, path.replace("50000", str(rows // 2)), runs)
            med = statistics.median(wall)
            lines.append([name, f"{med:.1f}", f"{statistics.median(cpu):.1f}", f"{max(wall):.1f}",
                          f"{med / TARGET_MS:.2f}"])
    peers = await peer_times(ours, runs)
    print(table(["page or API", "median ms", "median CPU ms", "max ms", "median ÷ 100 ms target"], lines))
    paged = {r[0]: float(r[1]) for r in lines}
    print()
    print(table(["list", "paged on the server (ms)", "peer: read all, cut in Python (ms)", "peer ÷ ours"], [
        ["sessions, page 1", paged["sessions API, page 1"], f"{statistics.median(peers['sessions']):.1f}",
         f"{statistics.median(peers['sessions']) / paged['sessions API, page 1']:.1f}"],
        ["query log by tool", paged["query log API, by tool"], f"{statistics.median(peers['tool']):.1f}",
         f"{statistics.median(peers['tool']) / paged['query log API, by tool']:.1f}"],
    ]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 rows, 1,000 sessions, fewer runs")
    parser.add_argument("--panel-rows", type=int, default=100_000)
    parser.add_argument("--panel-sessions", type=int, default=10_000)
    args, _ = parser.parse_known_args(argv)
    rows, sessions, runs = ((10_000, 1_000, 5) if args.quick else (args.panel_rows, args.panel_sessions, 15))
    asyncio.run(run(rows, sessions, runs))


if __name__ == "__main__":
    main()
