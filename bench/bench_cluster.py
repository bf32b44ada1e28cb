"""The cluster against the single process: turns per second, latency, and how long a failover takes.

Every side is real processes: `ania serve` (one process, on SQLite, then on Postgres) and `ania serve --role
gateway` with 1, 2 and 4 `--role worker` processes on one Postgres (ania/localservers/postgres.py), all on
the OneBot fake (tests/onebot_fake.py, in this process) and one scripted model in its own process that answers
each request after a fixed latency (100 ms). Same settings on every side: no settle window, no member rate
limit (the load is the bot's, not the flood limit's), the panel off.

Load: G groups, each a conversation of M messages (the next is sent when the reply arrives): throughput
(messages/s) and p50/p95 from the event to the reply being sent, as bench_onebot measures the single process.

Failover: a gateway and two workers; a message whose model call hangs, a second one waiting behind it in the
same group; the worker running the first is killed with SIGKILL; the figure is from the kill to the second
message's reply (heartbeat timeout `cluster.stall_sec`, the gateway's sweep, the other worker's poll), with
the default stall_sec and the smallest.

The machine's core count is printed: on 2 cores, more workers than cores share them with the gateway, the
model and Postgres. Bytes stored per turn on Postgres: bench_postgres.

    python -m bench.bench_cluster [--cluster-groups 20] [--cluster-messages 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Reply, ScriptedOpenAI, Stall, Step
from ania.localservers.postgres import LocalPostgres
from bench.bench_onebot import conversation, reply_latencies
from tests.cluster_helpers import Cluster
from tests.onebot_fake import FakeOneBot, at, text
from tests.test_serve import BOT, ROOT

LATENCY = 0.1
SAME = {"ANIA_FLOW__SETTLE_SEC": "0", "ANIA_FLOW__MEMBER_RATE_PER_MIN": "0", "ANIA_LLM__TIMEOUT_SEC": "60",
        "ANIA_BOT__MSG_EVENT_TIMEOUT_SEC": "600", "ANIA_ONEBOT__API_TIMEOUT_SEC": "30"}


def serve_model(latency: float) -> None:
    """The scripted model in its own process: "[stall]" hangs (the failover's turn), anything else answers after
    `latency`. Prints its port, serves until killed."""

    def step(body: dict[str, Any]) -> Step:
        return Stall(300) if "[stall]" in str(body["messages"][-1].get("content")) else Reply("done", delay=latency)

    llm = ScriptedOpenAI().start()
    llm.respond_with(step)
    print(llm.port, flush=True)
    while True:
        time.sleep(3600)


class Endpoint:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


async def start_model(latency: float) -> tuple[asyncio.subprocess.Process, Endpoint]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.bench_cluster", "--serve-model",
                                                "--cluster-latency", str(latency), stdout=asyncio.subprocess.PIPE,
                                                cwd=ROOT)
    assert proc.stdout is not None
    port = int((await asyncio.wait_for(proc.stdout.readline(), 60)).decode())
    return proc, Endpoint(f"http://127.0.0.1:{port}/v1")


async def _registered(cluster: Cluster, workers: int) -> None:
    for _ in range(2400):
        try:
            if cluster.rows("SELECT COUNT(*) FROM procrastinate_workers")[0][0] >= workers:
                return
        except Exception:  # noqa: S110 - the queue's tables appear with the first process
            pass
        await asyncio.sleep(0.05)
    raise RuntimeError(f"the workers did not register with the queue; worker0's log ends: "
                       f"{cluster.log('worker0')[-1500:]}")


async def _side(name: str, workers: int, db_url: str, model: Endpoint, root: Path,
                fake: FakeOneBot) -> Cluster:
    """Start one side: workers == 0 is `ania serve` alone (db_url "" for SQLite)."""
    cluster = Cluster(model, root / name, db_url, fake.url)
    cluster.tmp.mkdir()
    if workers == 0:
        extra = dict(SAME)
        env = cluster.env("single", **extra)
        if not db_url:
            env.pop("ANIA_CLUSTER__POSTGRES_URL")
        cluster.gateway = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ania.cli", "serve", env=env, cwd=ROOT, stdout=asyncio.subprocess.DEVNULL,
            stderr=open(cluster.tmp / "single.log", "wb"))  # noqa: SIM115, ASYNC230 - the child owns it
    else:
        await cluster.start(workers=workers, **SAME)
        await _registered(cluster, workers)
    await fake.wait_for(fake.connected.is_set, timeout=120)
    return cluster


async def warm_up(fake: FakeOneBot, cluster: Cluster, workers: int) -> None:
    """Until every process has answered one message (a process's first turn builds its model client: not
    measured). A worker takes whichever job it fetches first, so rounds of messages go out until each has."""
    for round_ in range(10):
        want = len(fake.sent) + 2 * max(1, workers)
        for g in range(2 * max(1, workers)):
            await fake.group_message(900 + g, 99, [at(BOT), text(f" warm up {round_}")])
        await fake.wait_for(lambda w=want: len(fake.sent) >= w, timeout=120)
        if workers == 0 or len(cluster.rows("SELECT DISTINCT pid FROM query_log")) >= workers:
            return


async def load(name: str, workers: int, db_url: str, model: Endpoint, root: Path, groups: int,
               messages: int) -> dict[str, Any]:
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = await _side(name, workers, db_url, model, root, fake)
    try:
        await warm_up(fake, cluster, workers)
        await asyncio.sleep(1.0)
        fake.sent.clear()
        fake.sent_at.clear()
        pushed: dict[int, float] = {}
        t0 = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(conversation(fake, 1000 + g, messages, pushed)
                                                for g in range(groups))), 600)
        wall = time.monotonic() - t0
        latencies = reply_latencies(fake, pushed)
    finally:
        await cluster.close()
        await fake.close()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {"side": name, "answered": len(latencies), "total": groups * messages, "rate": len(latencies) / wall,
            "p50": q[49], "p95": q[94]}


async def failover(db_url: str, model: Endpoint, root: Path, stall_sec: float) -> float:
    fake = await FakeOneBot(self_id=BOT).serve()
    cluster = Cluster(model, root, db_url, fake.url)
    cluster.tmp.mkdir()
    await cluster.start(workers=2, ANIA_CLUSTER__STALL_SEC=f"{stall_sec:g}", **SAME)
    try:
        await _registered(cluster, 2)
        await fake.wait_for(fake.connected.is_set, timeout=120)
        await fake.group_message(7, 42, [at(BOT), text(" first [stall]")])
        await fake.wait_for(lambda: cluster.rows("SELECT pid FROM query_log WHERE status = 'running'"), timeout=60)
        await asyncio.sleep(0.5)  # its model call is under way (the model process stalls it)
        pid = cluster.rows("SELECT pid FROM query_log WHERE status = 'running'")[0][0]
        second = await fake.group_message(7, 43, [at(BOT), text(" second")])
        await fake.wait_for(lambda: cluster.rows("SELECT COUNT(*) FROM inbox")[0][0] == 1, timeout=30)
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()

        def replied() -> bool:
            return any(seg["type"] == "reply" and int(seg["data"]["id"]) == second
                       for sent in fake.sent for seg in sent["message"])

        await fake.wait_for(replied, timeout=120)
        return time.monotonic() - killed
    finally:
        await cluster.close()
        await fake.close()


async def run(groups: int, messages: int, latency: float, runs: int) -> str:
    model_proc, model = await start_model(latency)
    server = LocalPostgres({"fsync": "off"}).start()  # the same server settings for every Postgres side
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            sides = [("one process, SQLite", 0, ""), ("one process, Postgres", 0, "pg"), ("1 worker", 1, "pg"),
                     ("2 workers", 2, "pg"), ("4 workers", 4, "pg")]
            rows = []
            for i, (name, workers, db) in enumerate(sides):
                url = server.create_database(f"b{i}") if db else ""
                rows.append(await load(f"side{i}", workers, url, model, root, groups, messages) | {"side": name})
            fails = {}
            for stall in (6.0, 2.0):
                fails[stall] = [await failover(server.create_database(f"f{int(stall)}_{r}"), model,
                                               root / f"fail{int(stall)}_{r}", stall) for r in range(runs)]
    finally:
        server.stop()
        model_proc.kill()
        await model_proc.wait()
    return report(rows, fails, groups, messages, latency)


def report(rows: list[dict[str, Any]], fails: dict[float, list[float]], groups: int, messages: int,
           latency: float) -> str:
    base = rows[0]["rate"] or 1.0
    out = [f"Cluster vs one process: {groups} groups x {messages} messages (conversations), model latency "
           f"{latency * 1000:.0f} ms, {os.cpu_count()} cores",
           f"{'side':<24}{'answered':>10}{'msg/s':>8}{'x SQLite':>10}{'p50 ms':>9}{'p95 ms':>9}"]
    for r in rows:
        out.append(f"{r['side']:<24}{r['answered']:>5}/{r['total']:<4}{r['rate']:>8.1f}{r['rate'] / base:>10.2f}"
                   f"{r['p50'] * 1000:>9.0f}{r['p95'] * 1000:>9.0f}")
    for stall, times in fails.items():
        out.append(f"failover (kill -9 of the worker mid-turn -> the waiting message answered by the other), "
                   f"cluster.stall_sec {stall:g}: median {statistics.median(times):.1f} s, max {max(times):.1f} s "
                   f"over {len(times)} runs")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench_cluster")
    p.add_argument("--cluster-groups", type=int, default=20)
    p.add_argument("--cluster-messages", type=int, default=5)
    p.add_argument("--cluster-latency", type=float, default=LATENCY)
    p.add_argument("--cluster-runs", type=int, default=3)
    p.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true")
    args, _ = p.parse_known_args(argv)
    if args.serve_model:
        serve_model(args.cluster_latency)
        return
    if args.quick:
        args.cluster_groups, args.cluster_messages, args.cluster_runs = 10, 3, 1
    print(asyncio.run(run(args.cluster_groups, args.cluster_messages, args.cluster_latency, args.cluster_runs)))


if __name__ == "__main__":
    main()
