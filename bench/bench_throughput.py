"""Throughput past one core: many sessions at once, one engine process against several worker processes.

The scripted model runs in a process of its own (200 ms per request by default; a turn is one tool call
and an answer, so 400 ms of model time), so the engines' CPU is all that is measured. A driver sends
`--sessions` sessions of `--turns` turns each, at most `--concurrency` turns in flight, to `--workers`
engine processes. Sessions are assigned to a worker by a stable hash of their key, so each session's
turns, its checkpoint thread and its per-session state stay in one process; the workers share the data
directory (`checkpoints.db` and `ania.db` in WAL mode, one writer at a time, with busy timeouts).
Reported per configuration: latency per turn (p50, p95) against the model time, turns per second, and
the engines' CPU time per turn. Workers run on the bot's event loop (ania/loop.py: uvloop where installed);
the last row runs the most workers again on asyncio's own loop, to show the loop's share apart.

This is the measured design, not yet the product: what a product version still needs is in `NOTES`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI, Step
from ania.loop import loop_factory

NOTES = """\
What a product version needs beyond this bench: approval replies that arrive in another session (an admin's
private chat) must reach the worker that waits for them (the router must know each worker's pending
approvals); configuration changes made through one worker (tools with changes_config, MCP management) must
reach the others; and the chat platform connection lives in the router, which forwards replies."""

ROOT = Path(__file__).resolve().parent.parent


class AutoModel(ScriptedOpenAI):
    """Answers any session: a `time` call for a user message, then an answer, each after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def _next(self, body: dict[str, Any]) -> Step:
        last = body["messages"][-1]
        if last["role"] == "user":
            return Calls([("time", {"timezone": "UTC"})], delay=self.delay)
        return Reply("It is " + "late " * 50, delay=self.delay)


def serve_model(port_file: Path, delay: float) -> None:
    """Until terminated (the driver ends it)."""
    server = AutoModel(delay).start()
    port_file.write_text(str(server.port))
    while True:
        time.sleep(3600)


async def serve_worker(sock: Path, root: Path, base_url: str) -> None:
    """One engine on the shared data directory, answering turns on a Unix socket (JSON lines)."""
    from ania.engine import Engine
    from ania.loop import settle_heap
    from ania.platforms.bridge import ChatBridge
    from core.settings import Settings

    settings = Settings(llm={"base_url": base_url, "model": "scripted-model", "api_key": "k", "timeout_sec": 60,
                             "max_retries": 0, "max_concurrent_calls": 256}, bot={"admins": ["bench"], "msg_event_timeout_sec": 120})
    engine = await Engine.start(root / "config", root / "data", settings=settings)
    settle_heap()  # as `ania chat` and `ania serve` do

    async def drop(text: str) -> None:
        return None

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lock = asyncio.Lock()

        async def one(req: dict[str, Any]) -> None:
            if req.get("cpu"):
                usage = resource.getrusage(resource.RUSAGE_SELF)
                out: dict[str, Any] = {"id": req["id"], "cpu": usage.ru_utime + usage.ru_stime}
            else:
                bridge = ChatBridge(drop, root / "data" / "outbox" / req["session"])
                result = await engine.run_turn(req["session"], "bench", req["text"], bridge)
                out = {"id": req["id"], "status": result.status}
            async with lock:
                writer.write((json.dumps(out) + "\n").encode())
                await writer.drain()

        tasks = set()
        while line := await reader.readline():
            task = asyncio.create_task(one(json.loads(line)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)

    server = await asyncio.start_unix_server(handle, path=str(sock))
    async with server:
        await server.serve_forever()


class Worker:
    def __init__(self, sock: Path) -> None:
        self.sock = sock
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.seq = 0

    async def connect(self) -> None:
        for _ in range(300):
            if self.sock.exists():
                try:
                    self.reader, self.writer = await asyncio.open_unix_connection(str(self.sock))
                    break
                except OSError:
                    pass
            await asyncio.sleep(0.1)
        else:
            raise RuntimeError(f"worker {self.sock} did not start")
        self.listener = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        while line := await self.reader.readline():
            msg = json.loads(line)
            self.pending.pop(msg["id"]).set_result(msg)

    async def call(self, **req: Any) -> dict[str, Any]:
        self.seq += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.seq] = fut
        self.writer.write((json.dumps({"id": self.seq, **req}) + "\n").encode())
        return await fut


async def drive(workers: list[Worker], sessions: int, turns: int, concurrency: int) -> tuple[list[float], float]:
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def session(i: int) -> None:
        key = f"f:user{i:03d}"
        worker = workers[zlib.crc32(key.encode()) % len(workers)]
        for t in range(turns):
            async with gate:
                t0 = time.perf_counter()
                out = await worker.call(session=key, text=f"what time is it? ({t}) " + "x" * 260)
                latencies.append(time.perf_counter() - t0)
                assert out["status"] == "ok", out

    t0 = time.perf_counter()
    await asyncio.gather(*(session(i) for i in range(sessions)))
    return latencies, time.perf_counter() - t0


def _cpu_of(pid: int) -> float:
    """A process's CPU seconds so far (Linux; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(n_workers: int, loop: str, model_pid: int, base_url: str, args: argparse.Namespace) -> list[Any]:
    with tempfile.TemporaryDirectory(prefix="ania-bench-tp-") as tmp:
        root = Path(tmp)
        (root / "config").mkdir()
        (root / "config" / "hooks.json").write_text('{"hooks": {}}\n')
        procs, workers = [], []
        for w in range(n_workers):
            sock = root / f"w{w}.sock"
            procs.append(await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bench.bench_throughput", "--serve-worker", str(sock), "--root", str(root),
                "--base-url", base_url, cwd=os.getcwd(), env={**os.environ, "ANIA_EVENT_LOOP": loop}))
            workers.append(Worker(sock))
        try:
            for worker in workers:
                await worker.connect()
            for i, w in enumerate(workers):  # warm-up of every worker: imports, first connections
                for t in range(3):
                    await w.call(session=f"f:warm{i}-{t}", text="warm-up")
            cpu0 = sum([(await w.call(cpu=True))["cpu"] for w in workers])
            model0 = _cpu_of(model_pid)
            latencies, wall = await drive(workers, args.sessions, args.turns, args.concurrency)
            cpu = sum([(await w.call(cpu=True))["cpu"] for w in workers]) - cpu0
            model_cpu = _cpu_of(model_pid) - model0
        finally:
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    p.terminate()
            for p in procs:
                await p.wait()
    n = len(latencies)
    model = 2 * args.model_delay
    qs = statistics.quantiles(latencies, n=20)
    p50, p95 = statistics.median(latencies), qs[18]
    return [n_workers, loop, n, f"{p50 * 1000:.0f} ms ({p50 / model:.2f}x)", f"{p95 * 1000:.0f} ms ({p95 / model:.2f}x)",
            f"{n / wall:.1f}", f"{cpu / n * 1000:.1f} ms", f"{model_cpu / n * 1000:.1f} ms"]


async def run(args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory(prefix="ania-bench-model-") as tmp:
        port_file = Path(tmp) / "port"
        model = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.bench_throughput", "--serve-model", str(port_file),
            "--model-delay", str(args.model_delay), cwd=os.getcwd())
        try:
            for _ in range(300):
                if port_file.exists() and port_file.read_text():
                    break
                await asyncio.sleep(0.1)
            base_url = f"http://127.0.0.1:{port_file.read_text()}/v1"
            default = "uvloop" if loop_factory() is not None else "asyncio"  # what the bot runs on
            rows = [await measure(w, default, model.pid, base_url, args) for w in args.workers]
            if args.compare_loop:  # the event loop's share: the most workers again on asyncio's own loop
                rows.append(await measure(max(args.workers), "asyncio", model.pid, base_url, args))
        finally:
            with contextlib.suppress(ProcessLookupError):
                model.terminate()
            await model.wait()
    from bench.common import table

    return "\n".join([
        f"{args.sessions} sessions x {args.turns} turns, at most {args.concurrency} turns in flight; a turn is a "
        f"tool call and an answer, {2 * args.model_delay * 1000:.0f} ms of model time (model in its own process)",
        table(["workers", "event loop", "turns", "p50 latency (x model)", "p95 latency (x model)", "turns/s", "engine CPU/turn",
               "model server CPU/turn"],
              rows), "", NOTES])


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_throughput", description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--turns", type=int, default=2, help="turns per session (default 2)")
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--model-delay", type=float, default=0.2, help="seconds per model request (default 0.2)")
    p.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    p.add_argument("--no-compare-loop", dest="compare_loop", action="store_false",
                   help="skip the run on asyncio's own event loop (the bot runs on uvloop where installed)")
    p.add_argument("--quick", action="store_true", help="40 sessions, 1 turn each, concurrency 20")
    p.add_argument("--serve-model", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--serve-worker", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--base-url", help=argparse.SUPPRESS)
    args, _ = p.parse_known_args(argv)
    if args.serve_model:
        serve_model(args.serve_model, args.model_delay)
        return
    if args.serve_worker:
        from ania.loop import run as run_bot  # the loop `ania chat` runs on

        run_bot(serve_worker(args.serve_worker, args.root, args.base_url))
        return
    if args.quick:
        args.sessions, args.turns, args.concurrency = 40, 1, 20
    args.workers = [max(1, min(int(w), 8)) for w in str(args.workers).split(",") if w.strip()]
    print(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
