"""The web panel's server time per page on a large data directory: `python -m bench.bench_panel [--quick]`.

Seeds 100,000 query-log rows (one in fifty failed) and 100,000 operation-log rows, then times each page and
its JSON API through the app (ASGI, no socket): the median and the 95th percentile of `--requests` calls,
and the median as a share of the issue's target (100 ms). A page of another concern adds itself to `PAGES`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from ania.fakes.openai_server import ScriptedOpenAI
from ania.panel.app import available_pages
from tests.panel_helpers import PanelHarness, open_panel

TARGET_MS = 100.0
#: (page module, path): the pages this bench times when their module exists.
PAGES = [("overview", "/"), ("overview", "/api/overview"), ("config", "/config"), ("config", "/api/config"),
         ("ops", "/ops"), ("ops", "/api/ops"), ("ops", "/api/ops?kind=config_set&page=40"),
         ("approvals", "/approvals"), ("approvals", "/api/approvals")]


def seed(db: Path, rows: int) -> None:
    rng = random.Random(24)
    now = time.time()
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO query_log (started, ended, session, sender, trigger, input, status, tokens, total_tokens, "
            "duration_ms, calls, call_count, thread, checkpoint, reply, pid) VALUES (?, ?, ?, ?, 'message', ?, ?, "
            "'{}', ?, ?, '[]', 0, ?, '', ?, 0)",
            [(now - (rows - i) * 3, now - (rows - i) * 3 + 2, f"g:{i % 500}", f"u{i % 3000}", f"message {i}",
              "error" if i % 50 == 0 else "success", rng.randint(200, 4000), rng.randint(300, 9000), f"g:{i % 500}",
              f"reply {i}") for i in range(rows)])
        kinds = ("tool_approval", "config_set", "skill_manage", "mcp_manage", "reboot", "team_save")
        conn.executemany("INSERT INTO op_log (ts, kind, session, actor, detail) VALUES (?, ?, ?, ?, ?)",
                         [(now - (rows - i) * 3, kinds[i % len(kinds)], f"g:{i % 500}", f"u{i % 40}",
                           json.dumps({"n": i})) for i in range(rows)])
    conn.close()


async def time_pages(p: PanelHarness, requests: int) -> list[tuple[str, float, float]]:
    out = []
    pages = set(available_pages())
    browser, _ = await p.login()
    for concern, path in PAGES:
        if concern not in pages:
            continue
        client = p.client if path.startswith("/api/") else browser
        samples = []
        for _ in range(requests):
            t0 = time.perf_counter()
            r = await client.get(path)
            samples.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, (path, r.status_code, r.text[:200])
        samples.sort()
        out.append((path, statistics.median(samples), samples[int(len(samples) * 0.95) - 1]))
    await browser.aclose()
    return out


async def run(rows: int, requests: int) -> None:
    llm = ScriptedOpenAI().start()
    try:
        with tempfile.TemporaryDirectory(prefix="ania-bench-panel-") as tmp:
            async with open_panel(Path(tmp), llm) as p:
                seed(p.ctx.services.paths.data_dir / "ania.db", rows)
                results = await time_pages(p, requests)
    finally:
        llm.stop()
    print(f"panel pages on {rows:,} query-log and {rows:,} operation-log rows, {requests} requests each (ASGI):")
    print(f"{'path':<40} {'median ms':>10} {'p95 ms':>8} {'median / target':>16}")
    for path, median, p95 in results:
        print(f"{path:<40} {median:>10.1f} {p95:>8.1f} {median / TARGET_MS:>15.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_panel")
    parser.add_argument("--quick", action="store_true", help="10,000 rows and 10 requests per page")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    args, _ = parser.parse_known_args(argv)
    rows, requests = (10_000, 10) if args.quick else (args.rows, args.requests)
    asyncio.run(run(rows, requests))


if __name__ == "__main__":
    main()
