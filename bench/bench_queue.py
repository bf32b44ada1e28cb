"""The message queue on Postgres: procrastinate against pgqueuer, with one chat's jobs one at a time and in order.

Ania will queue chat messages for worker processes; one chat's messages must run one at a time, in the
order they came, whichever worker takes them, while chats run in parallel. Each side runs on its own fresh
database of one throwaway Postgres (ania/localservers/postgres.py, Debian's package, its default settings),
with the same 2 worker processes of the same concurrency each, and the same job body: sleep `--queue-work-ms`
(default 5 ms, so two jobs of one chat that overlap can be seen) and record (key, seq, defer time, start,
end). One process defers the jobs one call each (as a gateway enqueues messages as they come), round-robin
over the keys, each key's `seq` counting up. Sides:

- procrastinate, `lock=<key>`: its own per-key lock (a job whose lock is held by a running job, or by an
  older waiting one, is not fetched);
- pgqueuer, one entrypoint: no per-key rule at all (what pgqueuer gives as is; the violations show why
  it needs something on top);
- pgqueuer, one entrypoint per key with `concurrency_limit=1`: pgqueuer's only built-in way to serialize
  (its limits are per entrypoint, enforced in SQL across workers); every worker must register every
  chat's entrypoint up front, so a new chat needs every worker restarted.

Two phases on the same running workers: a burst (`--queue-jobs` jobs over `--queue-keys` keys, deferred as
fast as one process can: jobs/s from the first defer to the last end, and the latency a backlog gives), then
`--queue-paced` jobs at `--queue-rate` jobs/s, the wake-up latency of an idle queue (LISTEN/NOTIFY on both).
Latency is defer call to job start (wall clock, one machine). Violations: per key, with the jobs sorted by
start, a job started before the previous one ended (overlap) or with a smaller seq (order); lost or repeated
jobs are counted too. `python -m bench.bench_queue [--quick]`. pgqueuer is not a dependency of Ania: without
it (pip install pgqueuer) its sides are skipped with a message.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ania.localservers.postgres import LocalPostgres
from bench.common import table

ROOT = Path(__file__).resolve().parent.parent
SIDES = ("procrastinate", "pgqueuer", "pgqueuer-per-key", "pgqueuer-per-key-capped")
LABELS = {"procrastinate": "procrastinate lock=key", "pgqueuer": "pgqueuer, one entrypoint",
          "pgqueuer-per-key": "pgqueuer, entrypoint per key (limit 1)",
          "pgqueuer-per-key-capped": "the same, capped like procrastinate"}
WORKERS = 2


@dataclass(frozen=True)
class Config:
    jobs: int
    keys: int
    paced: int
    rate: float
    concurrency: int
    work_ms: float


def key_name(i: int) -> str:
    return f"chat-{i}"


# --- the worker processes -------------------------------------------------------------------------------------
def _recorder(out: Path, work_ms: float) -> Any:
    sink = out.open("a", buffering=1)

    async def record(args: dict[str, Any]) -> None:
        start = time.time()
        await asyncio.sleep(work_ms / 1000)
        sink.write(json.dumps([args["phase"], args["key"], args["seq"], args["t"], start, time.time()]) + "\n")

    return record


async def _procrastinate_worker(url: str, out: Path, cfg: Config) -> None:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    record = _recorder(out, cfg.work_ms)

    @app.task(name="noop")
    async def noop(**args: Any) -> None:
        await record(args)

    async with app.open_async():
        out.with_suffix(".ready").touch()
        await app.run_worker_async(concurrency=cfg.concurrency, wait=True, install_signal_handlers=True,
                                   delete_jobs="successful")


async def _pgqueuer_worker(url: str, out: Path, cfg: Config, per_key: bool, capped: bool) -> None:
    import psycopg
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.models import Job
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    qm = QueueManager(Queries(PsycopgDriver(conn)))
    record = _recorder(out, cfg.work_ms)

    async def noop(job: Job) -> None:
        await record(json.loads(job.payload or b"{}"))

    for name in ([key_name(i) for i in range(cfg.keys)] if per_key else ["noop"]):
        qm.entrypoint(name, concurrency_limit=1 if per_key else 0)(noop)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, qm.shutdown.set)
    out.with_suffix(".ready").touch()
    if capped:  # at most `concurrency` running jobs per worker, as procrastinate's (pgqueuer: cap >= 2 x batch)
        await qm.run(batch_size=max(1, cfg.concurrency // 2), max_concurrent_tasks=max(2, cfg.concurrency))
    else:  # pgqueuer's default: no cap; each dequeue takes up to `concurrency` jobs, again until none is left
        await qm.run(batch_size=cfg.concurrency)
    await conn.close()


def worker(argv: Sequence[str]) -> None:
    side, url, out, raw = argv
    cfg = Config(**json.loads(raw))
    if side == "procrastinate":
        asyncio.run(_procrastinate_worker(url, Path(out), cfg))
    else:
        asyncio.run(_pgqueuer_worker(url, Path(out), cfg, per_key="per-key" in side, capped="capped" in side))


# --- the deferring side ----------------------------------------------------------------------------------------
class Deferrer:
    """Installs the side's schema and defers one job per call."""

    def __init__(self, side: str, url: str) -> None:
        self.side, self.url = side, url
        self._close: Any = None
        self._defer: Any = None

    async def open(self) -> None:
        if self.side == "procrastinate":
            import procrastinate

            # its warning about an App made in `__main__` (python -m bench.bench_queue) is for its own CLI's imports
            logging.getLogger("procrastinate").setLevel(logging.ERROR)
            app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=self.url))
            await app.open_async()
            await app.schema_manager.apply_schema_async()
            task = app.task(name="noop")(lambda **_: None)

            async def defer(key: str, args: dict[str, Any]) -> None:
                await task.configure(lock=key).defer_async(**args)

            self._defer, self._close = defer, app.close_async
        else:
            import psycopg
            from pgqueuer.db import PsycopgDriver
            from pgqueuer.queries import Queries

            conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
            queries = Queries(PsycopgDriver(conn))
            await queries.install()
            per_key = "per-key" in self.side

            async def enqueue(key: str, args: dict[str, Any]) -> None:
                await queries.enqueue(key if per_key else "noop", json.dumps(args).encode())

            self._defer, self._close = enqueue, conn.close

    async def defer(self, phase: str, key: str, seq: int) -> None:
        await self._defer(key, {"phase": phase, "key": key, "seq": seq, "t": time.time()})

    async def close(self) -> None:
        await self._close()


@dataclass
class Result:
    side: str
    defer_per_s: float
    jobs_per_s: float
    paced_ms: tuple[float, float]
    overlaps: int
    out_of_order: int
    lost: int
    repeated: int


def _pct(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=100, method="inclusive")
    return q[49] * 1000, q[94] * 1000


def judge(side: str, records: list[list[Any]], expected: dict[str, int], defer_s: float) -> Result:
    """The figures and the violations of one run's records ([phase, key, seq, deferred, start, end])."""
    seen: dict[tuple[str, int], int] = {}
    for _, key, seq, *_ in records:
        seen[(key, seq)] = seen.get((key, seq), 0) + 1
    overlaps = out_of_order = 0
    by_key: dict[str, list[list[Any]]] = {}
    for r in records:
        by_key.setdefault(r[1], []).append(r)
    for rows in by_key.values():
        rows.sort(key=lambda r: (r[4], r[5]))
        for prev, cur in itertools.pairwise(rows):
            overlaps += cur[4] < prev[5]
            out_of_order += cur[2] < prev[2]  # seq counts on across both phases
    burst = [r for r in records if r[0] == "burst"]
    drain = max(r[5] for r in burst) - min(r[4] for r in burst)
    return Result(side, expected["burst"] / defer_s, len(burst) / drain,
                  _pct([r[4] - r[3] for r in records if r[0] == "paced"]), overlaps, out_of_order,
                  sum(expected.values()) - len(seen), sum(n - 1 for n in seen.values()))


def merged(runs: list[Result]) -> Result:
    """Medians of the figures over the repeats, sums of the violations."""
    def med(values: list[float]) -> float:
        return statistics.median(values)

    return Result(runs[0].side, med([r.defer_per_s for r in runs]), med([r.jobs_per_s for r in runs]),
                  (med([r.paced_ms[0] for r in runs]), med([r.paced_ms[1] for r in runs])),
                  sum(r.overlaps for r in runs), sum(r.out_of_order for r in runs), sum(r.lost for r in runs),
                  sum(r.repeated for r in runs))


async def _wait_for(procs: list[subprocess.Popen[bytes]], files: list[Path], count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while sum(len(f.read_bytes().splitlines()) for f in files if f.exists()) < count:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a worker process exited")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the workers did not finish {count} jobs in {timeout:.0f} s")
        await asyncio.sleep(0.05)


def _spawn(side: str, url: str, cfg: Config, outs: list[Path]) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from bench.bench_queue import worker; worker(sys.argv[1:])"  # not __main__: procrastinate
    return [subprocess.Popen([sys.executable, "-c", code, side, url, str(out), json.dumps(cfg.__dict__)],
                             cwd=ROOT, env=env) for out in outs]


async def _start_workers(side: str, url: str, cfg: Config, outs: list[Path]) -> list[subprocess.Popen[bytes]]:
    procs = _spawn(side, url, cfg, outs)
    deadline = time.monotonic() + 60
    while not all(out.with_suffix(".ready").exists() for out in outs):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise RuntimeError(f"{side}: the workers did not start")
        await asyncio.sleep(0.01)
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


async def run_side(side: str, url: str, cfg: Config, root: Path) -> Result:
    """The backlog (deferred with no worker running, then drained), then the paced jobs on the same workers."""
    deferrer = Deferrer(side, url)
    await deferrer.open()
    outs = [root / f"{side}-{url.rsplit('/', 1)[1]}-{i}.jsonl" for i in range(WORKERS)]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        seqs = dict.fromkeys(range(cfg.keys), 0)
        rng = random.Random(25)  # the same sequence of keys for every side and run
        t0 = time.perf_counter()
        for _ in range(cfg.jobs):
            k = rng.randrange(cfg.keys)
            await deferrer.defer("burst", key_name(k), seqs[k])
            seqs[k] += 1
        defer_s = time.perf_counter() - t0
        procs = await _start_workers(side, url, cfg, outs)
        await _wait_for(procs, outs, cfg.jobs, 1200)
        for _ in range(cfg.paced):
            k = rng.randrange(cfg.keys)
            await deferrer.defer("paced", key_name(k), seqs[k])
            seqs[k] += 1
            await asyncio.sleep(1 / cfg.rate)
        await _wait_for(procs, outs, cfg.jobs + cfg.paced, 120)
        await asyncio.sleep(0.5)  # a job run twice would show up here
    finally:
        _stop(procs)
        await deferrer.close()
    records = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
    return judge(side, records, {"burst": cfg.jobs, "paced": cfg.paced}, defer_s)


def report(results: list[Result], cfg: Config, repeats: int, load: float) -> None:
    base = results[0]
    rows = [[LABELS[r.side], f"{r.defer_per_s:,.0f}", f"{base.defer_per_s / r.defer_per_s:.2f}x",
             f"{r.jobs_per_s:,.0f}", f"{base.jobs_per_s / r.jobs_per_s:.2f}x",
             f"{r.paced_ms[0]:.1f} / {r.paced_ms[1]:.1f}", f"{r.paced_ms[0] / base.paced_ms[0]:.2f}x",
             str(r.overlaps), str(r.out_of_order), f"{r.lost} / {r.repeated}"] for r in results]
    print(f"{cfg.jobs:,} jobs over {cfg.keys} keys deferred, then drained; then {cfg.paced} at {cfg.rate:g}/s; "
          f"{WORKERS} worker processes x concurrency {cfg.concurrency}; job body {cfg.work_ms:g} ms; medians of "
          f"{repeats} runs per side, interleaved (violations: sums); {os.cpu_count()} cores, load {load:.1f} at start")
    print(table(["side", "defer/s", "procr./this", "drain jobs/s", "procr./this", "paced p50/p95 ms",
                 "this/procr.", "overlaps", "out of order", "lost / twice"], rows))


async def amain(cfg: Config, repeats: int) -> list[Result]:
    sides = [s for s in SIDES if s == "procrastinate" or importlib.util.find_spec("pgqueuer") is not None]
    if len(sides) < len(SIDES):
        print("pgqueuer is not installed (it is not a dependency of Ania): `pip install pgqueuer` to compare; "
              "procrastinate alone is measured")
    load = os.getloadavg()[0]
    runs: dict[str, list[Result]] = {s: [] for s in sides}
    with LocalPostgres() as pg, tempfile.TemporaryDirectory(prefix="ania-bench-queue-") as tmp:
        for rep in range(repeats):
            for side in sides:
                url = pg.create_database(f"{side.replace('-', '_')}_{rep}")
                runs[side].append(await run_side(side, url, cfg, Path(tmp)))
    results = [merged(runs[s]) for s in sides]
    report(results, cfg, repeats, load)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        worker(argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--queue-jobs", type=int, default=2000)
    parser.add_argument("--queue-keys", type=int, default=50)
    parser.add_argument("--queue-paced", type=int, default=300)
    parser.add_argument("--queue-rate", type=float, default=50.0)
    parser.add_argument("--queue-concurrency", type=int, default=4)
    parser.add_argument("--queue-work-ms", type=float, default=5.0)
    parser.add_argument("--queue-repeats", type=int, default=3)
    args, _ = parser.parse_known_args(argv)
    quick = args.quick
    cfg = Config(jobs=300 if quick else args.queue_jobs, keys=10 if quick else args.queue_keys,
                 paced=60 if quick else args.queue_paced, rate=args.queue_rate, concurrency=args.queue_concurrency,
                 work_ms=args.queue_work_ms)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(cfg, 1 if quick else args.queue_repeats))


if __name__ == "__main__":
    main()
