"""The clock: start-up with many stored tasks, and how late fires start when many are due together.

1. Start-up: `ClockService.start()` with N stored tasks (default 1,000: cron lines, @every, @daily and
   one-time datetimes, read from `data/ania.db`, parsed, checked for missed fires, registered), against
   APScheduler alone registering the same N triggers (already built) on a bare `AsyncIOScheduler`.
   Time: medians of several starts; memory: tracemalloc's peak during one start (a separate run, since
   tracing slows the code down).
2. Fire lateness: M one-time tasks (default 200, in M chats) due within a window (default 20 s, all
   within one minute), each run a real clock-graph run against the scripted model, delivered to an
   attached outbox. Lateness = the run's start (the `started` of its log row) minus its due time; the
   reply's lateness includes the model call. Side by side: the same due times on a bare AsyncIOScheduler
   whose job only records the time. Target: p95 ≤ 1 s, no task lost (every one has a `success` row and a
   delivered reply).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger

from ania.fakes.openai_server import Reply, ScriptedOpenAI
from bench.common import USER, Ours, median, table
from core.settings import Settings
from services.clock import ClockService, parse
from services.clock.store import ClockStore
from services.outboxes import Outboxes
from services.store import AppStore
from services.subagents import Subagents

SCHEDULES = ("0 9 * * 1-5", "@every 30m", "*/15 * * * *", "@daily", "30 8 1 * *", "@every 2h", "ONCE")


def _rows(n: int, now: float) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        schedule = SCHEDULES[i % len(SCHEDULES)]
        if schedule == "ONCE":
            schedule = datetime.fromtimestamp(now + 86400 + i, UTC).replace(microsecond=0).isoformat()
        out.append({"session": f"g:{i // 20}", "name": f"task {i}", "schedule": schedule, "prompt": f"do thing {i}",
                    "timezone": "UTC", "run_once": int(schedule[0].isdigit() and "T" in schedule), "enabled": 1,
                    "timeout_sec": None, "created_by": USER, "created_at": now, "since": now, "last_fire": None})
    return out


async def _ours_start(store: AppStore) -> tuple[float, ClockService]:
    service = ClockService(store, Settings(), Outboxes(), Subagents())
    t0 = time.perf_counter()
    await service.start()
    return time.perf_counter() - t0, service


async def _bare_start(triggers: list[Any]) -> tuple[float, AsyncIOScheduler]:
    t0 = time.perf_counter()
    scheduler = AsyncIOScheduler(timezone=UTC)
    for i, trigger in enumerate(triggers):
        scheduler.add_job(_noop, trigger=trigger, id=str(i))
    scheduler.start()
    return time.perf_counter() - t0, scheduler


async def _noop() -> None:
    return None


async def startup(root: Path, n: int, repeats: int) -> list[list[Any]]:
    now = time.time()
    store = AppStore(root / "ania.db")
    clock_db = ClockStore(store)
    for row in _rows(n, now):
        clock_db.add(row)
    utc = ZoneInfo("UTC")
    since = datetime.fromtimestamp(now, utc)
    triggers = [parse(r["schedule"], utc, since).trigger for r in _rows(n, now)]
    ours_t, bare_t = [], []
    for _ in range(repeats):
        t, service = await _ours_start(store)
        assert len(service.views()) == n and not service.broken
        await service.stop()
        ours_t.append(t)
        t, scheduler = await _bare_start(triggers)
        scheduler.shutdown(wait=False)
        bare_t.append(t)
    mem = []
    for fn in (lambda: _ours_start(store), lambda: _bare_start(triggers)):
        tracemalloc.start()
        _, thing = await fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        await thing.stop() if isinstance(thing, ClockService) else thing.shutdown(wait=False)
        mem.append(peak)
    store.close()
    return [["clock service (from SQLite)", median(ours_t) * 1000, median(ours_t) / median(bare_t), mem[0] / 2**20],
            ["APScheduler alone (triggers built)", median(bare_t) * 1000, 1.0, mem[1] / 2**20]]


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def lateness(llm: ScriptedOpenAI, root: Path, m: int, window: float, lead: float) -> tuple[list[list[Any]], str]:
    llm.reset()
    llm.respond_with(lambda body: Reply("tick"))
    ours = await Ours.start(llm, root / "ours")
    delivered: dict[str, float] = {}

    async def outbox(session: str, text: str) -> bool:
        delivered[session] = time.time()
        return True

    try:
        services = ours.engine.services
        services.outboxes.attach("bench", outbox)
        await services.clock.start()
        base = time.time() + lead
        due: dict[str, float] = {}
        for i in range(m):
            at = base + window * i / max(1, m - 1)
            services.clock.create(f"g:{i}", USER, datetime.fromtimestamp(at, UTC).isoformat(), "Say tick.")
            due[f"g:{i}"] = at
        assert time.time() < base, "creating the tasks took longer than --lead; raise it"
        deadline = base + window + 60
        while time.time() < deadline:
            rows = services.clock.db.runs(limit=10 * m)
            if sum(1 for r in rows if r.status != "running") >= m and len(delivered) >= m:
                break
            await asyncio.sleep(0.2)
        rows = services.clock.db.runs(limit=10 * m)
    finally:
        await ours.close()
    ok = [r for r in rows if r.status == "success"]
    late = [r.started - r.scheduled for r in ok if r.started is not None]
    reply_late = [delivered[s] - due[s] for s in delivered]
    lost = m - len(ok)
    counts = Counter(r.status for r in rows)
    bare = await _bare_lateness(m, window, lead)
    out = [["clock (fire → run start)", _pct(late, 0.5) * 1000, _pct(late, 0.95) * 1000, max(late) * 1000, lost],
           ["clock (due → reply delivered)", _pct(reply_late, 0.5) * 1000, _pct(reply_late, 0.95) * 1000,
            max(reply_late) * 1000, m - len(delivered)],
           ["APScheduler alone (no-op job)", _pct(bare, 0.5) * 1000, _pct(bare, 0.95) * 1000, max(bare) * 1000,
            m - len(bare)]]
    return out, "task log: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


async def _bare_lateness(m: int, window: float, lead: float) -> list[float]:
    scheduler = AsyncIOScheduler(timezone=UTC)
    seen: list[float] = []
    all_seen = asyncio.Event()

    async def job(at: float) -> None:
        seen.append(time.time() - at)
        if len(seen) == m:
            all_seen.set()

    base = time.time() + lead
    for i in range(m):
        at = base + window * i / max(1, m - 1)
        scheduler.add_job(job, trigger=DateTrigger(datetime.fromtimestamp(at, UTC)), args=[at], id=str(i),
                          misfire_grace_time=None)
    scheduler.start()
    try:
        await asyncio.wait_for(all_seen.wait(), lead + window + 30)
    except TimeoutError:
        pass  # counted as lost
    scheduler.shutdown(wait=False)
    return seen


async def run(args: argparse.Namespace) -> str:
    out = []
    with tempfile.TemporaryDirectory(prefix="ania-bench-clock-") as tmp, ScriptedOpenAI() as llm:
        rows = await startup(Path(tmp) / "start", args.tasks, args.repeats)
        out += [f"Start-up with {args.tasks} stored tasks (medians of {args.repeats}; memory: tracemalloc peak)",
                table(["", "ms", "ratio", "peak MiB"], rows), ""]
        rows, statuses = await lateness(llm, Path(tmp) / "late", args.due, args.window, args.lead)
        out += [f"Fire lateness: {args.due} one-time tasks due within {args.window:g} s, each a clock-graph run "
                "against the scripted model (0 ms)",
                table(["", "p50 ms", "p95 ms", "max ms", "lost"], rows), statuses]
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.bench_clock", description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=1000, help="stored tasks at start-up (default 1000)")
    p.add_argument("--repeats", type=int, default=5, help="timed starts per side (default 5)")
    p.add_argument("--due", type=int, default=200, help="tasks due together (default 200)")
    p.add_argument("--window", type=float, default=20.0, help="seconds their due times spread over (default 20)")
    p.add_argument("--lead", type=float, default=8.0, help="seconds from creating them to the first due time")
    p.add_argument("--quick", action="store_true", help="3 starts, 100 tasks due within 5 s")
    args, _ = p.parse_known_args(argv)
    if args.quick:
        args.repeats, args.due, args.window = 3, 100, 5.0
    return args


def main(argv: Sequence[str] | None = None) -> None:
    print(asyncio.run(run(parse_args(argv))))


if __name__ == "__main__":
    main()
