"""OneBot runtime under load: 50 groups x 10 messages through the fake OneBot v11 implementation.

Everything is real except the two ends: the fake implementation (tests/onebot_fake.py) pushes group
@-mention events over a forward WebSocket, and the scripted model answers each request after a fixed
latency (100 ms by default). Between them: the adapter, message entry (one turn at a time per group,
groups in parallel), the agent graph with its SQLite checkpoints, the gate pipeline and the sends.

Three runs:
- plain: every message is one model call; each group sends its next message when the reply arrives;
- tool: every message makes one tool round (`time`) and then answers: two model calls per message;
- burst: tool turns, but each group sends its 10 messages at once (they queue: latency includes the wait).

Figures: messages lost, throughput (messages/s), p50/p95 from the event to the reply being sent, and
the process's peak RSS. Target (issue 15): nothing lost, and p95 of the conversation runs within 1.5x
the model time of one turn (plain: one request; tool: two).

    python -m bench.bench_onebot [--onebot-groups 50] [--onebot-messages 10] [--onebot-latency 0.1] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.platforms.onebot import OneBotAdapter
from tests.onebot_fake import FakeOneBot, at, text
from tests.onebot_helpers import BOT, make_engine


def step_for(latency: float):
    """One model request: a tool call for a message marked [tool] (then the answer), else the answer."""

    def step(body: dict[str, Any]):
        last = body["messages"][-1]
        if last["role"] == "user" and "[tool]" in str(last["content"]):
            return Calls([("time", {"timezone": "UTC"})], delay=latency)
        return Reply("done", delay=latency)

    return step


def serve_model(latency: float) -> None:
    """The scripted model in its own process (as a real endpoint is): prints its port, serves until killed."""
    llm = ScriptedOpenAI().start()
    llm.script([step_for(latency)] * 1_000_000)
    print(llm.port, flush=True)
    while True:
        time.sleep(3600)


async def start_model(latency: float) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bench.bench_onebot", "--serve-model",
                                                "--onebot-latency", str(latency), stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    port = int((await asyncio.wait_for(proc.stdout.readline(), 60)).decode())
    return proc, f"http://127.0.0.1:{port}/v1"


async def conversation(fake: FakeOneBot, group: int, messages: int, pushed: dict[int, float], marker: str = "", *,
                       wait: bool = True) -> list[int]:
    """One group's messages, each sent when the previous one's reply arrived (`wait`), else all at once;
    `pushed` gets each message's send time. Returns the ids sent, in order."""
    answered = fake.sent_to.setdefault(f"g:{group}", asyncio.Event())
    ids = []
    for i in range(messages):
        answered.clear()
        mid = await fake.group_message(group, 100 + group, [at(BOT), text(f" message {i}{marker}")])
        pushed[mid] = time.monotonic()
        ids.append(mid)
        if wait:
            await answered.wait()
    return ids


def reply_latencies(fake: FakeOneBot, pushed: dict[int, float]) -> list[float]:
    """From each message's send to its reply (the reply quotes it), for the messages in `pushed`."""
    out = []
    for quoted, at_time in _quoted(fake):
        if quoted in pushed:
            out.append(at_time - pushed[quoted])
    return out


def batch_latencies(fake: FakeOneBot, groups: dict[int, list[int]], pushed: dict[int, float]) -> list[float]:
    """From each message's send to the first reply that answers it: a reply quotes a batch's last message
    (F1), so it answers every earlier message of that group too. `groups`: each group's ids in send order."""
    first: dict[int, float] = {}
    for quoted, at_time in _quoted(fake):
        first.setdefault(quoted, at_time)
    out = []
    for ids in groups.values():
        answered_at: float | None = None
        for mid in reversed(ids):  # the earliest reply quoting this message or a later one
            if mid in first:
                answered_at = first[mid] if answered_at is None else min(answered_at, first[mid])
            if answered_at is not None:
                out.append(answered_at - pushed[mid])
    return out


def _quoted(fake: FakeOneBot) -> list[tuple[int, float]]:
    """(the message id a sent message quotes, when it was sent), for the sent messages that quote one."""
    out = []
    for sent, at_time in zip(fake.sent, fake.sent_at, strict=True):
        quoted = next((s["data"]["id"] for s in sent["message"] if s["type"] == "reply"), None)
        if quoted is not None:
            out.append((int(quoted), at_time))
    return out


class Endpoint:
    """What make_engine needs of the model server: its base URL."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


async def run(mode: str, groups: int, messages: int, latency: float, base_url: str) -> dict[str, Any]:
    fake = FakeOneBot(self_id=BOT)
    marker = "" if mode == "plain" else " [tool]"
    with tempfile.TemporaryDirectory() as tmp:
        # The engine's figures, not the flood limit's: one member sends every group's messages, more than the
        # default bucket (F2) allows, so no member rate limit in this bench.
        engine = await make_engine(Path(tmp), Endpoint(base_url), fake, llm={"timeout_sec": 60},
                                   bot={"msg_event_timeout_sec": 600}, onebot={"api_timeout_sec": 30},
                                   flow={"member_rate_per_min": 0})
        adapter = OneBotAdapter(engine)
        await adapter.start()
        await fake.wait_for(lambda: fake.connected.is_set() and adapter.conn.connected)
        # Warm-up (not measured): the first turn of the process builds the model client and opens the stores.
        await fake.group_message(999, 99, [at(BOT), text(" warm up")])
        await fake.wait_for(lambda: fake.sent)
        fake.sent.clear()
        fake.sent_at.clear()
        pushed: dict[int, float] = {}
        t0 = time.monotonic()
        sent = await asyncio.gather(*(conversation(fake, 1000 + g, messages, pushed, marker, wait=mode != "burst")
                                      for g in range(groups)))
        by_group = dict(enumerate(sent))
        total = groups * messages
        lasts = {ids[-1] for ids in sent}
        try:  # a burst's later messages are answered together, by one reply quoting the last (F1)
            await fake.wait_for(lambda: lasts <= {q for q, _ in _quoted(fake)}, timeout=600)
        except AssertionError:
            pass  # counted as lost below
        wall = time.monotonic() - t0
        latencies = batch_latencies(fake, by_group, pushed)
        await adapter.stop(grace=5)
        await fake.close()
        await engine.close()
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return {"mode": mode, "messages": total, "answered": len(latencies), "lost": total - len(latencies),
            "throughput": len(latencies) / wall, "p50": q[49], "p95": q[94],
            "model_time": latency * (1 if mode == "plain" else 2)}


def report(rows: list[dict[str, Any]], groups: int, messages: int, latency: float, peak_kib: int,
           start_kib: int = 0) -> str:
    out = [f"OneBot runtime: up to {groups} groups x {messages} messages, scripted model latency {latency * 1000:.0f} ms",
           f"{'run':<8}{'groups':>7}{'lost':>6}{'msg/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'model ms/turn':>15}"
           f"{'p95/model':>11}  target"]
    for r in rows:
        ratio = r["p95"] / r["model_time"] if r["model_time"] else 0.0
        target = "-" if r["mode"] == "burst" else ("met" if r["lost"] == 0 and ratio <= 1.5 else "MISSED")
        out.append(f"{r['mode']:<8}{r['groups']:>7}{r['lost']:>6}{r['throughput']:>9.1f}{r['p50'] * 1000:>9.0f}"
                   f"{r['p95'] * 1000:>9.0f}{r['model_time'] * 1000:>15.0f}{ratio:>11.2f}  {target}")
    out.append(f"peak RSS of the bot's process (engine, adapter and the fake implementation; the scripted model runs "
               f"in its own process): {peak_kib / 1024:.0f} MiB")
    # Under bench.run what the earlier benchmarks left resident is in that peak (alone, imports take ~160 MiB).
    if start_kib > 512 * 1024:
        out.append(f"  ({start_kib / 1024:.0f} MiB were resident before this bench started, left by the earlier "
                   "benchmarks of this process: run `python -m bench.bench_onebot` alone for the bot's own figure)")
    out.append("burst: a group's messages arrive at once: the first turn answers the first, the next turn the "
               "rest together (F1 batching), so latency includes the queue; no member rate limit in this bench.")
    return "\n".join(out)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.bench_onebot", description=__doc__.splitlines()[0])
    p.add_argument("--onebot-groups", type=int, default=50)
    p.add_argument("--onebot-messages", type=int, default=10)
    p.add_argument("--onebot-latency", type=float, default=0.1, help="scripted model latency per request, seconds")
    p.add_argument("--quick", action="store_true", help="10 groups x 3 messages")
    p.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args, _ = p.parse_known_args(argv)
    if args.quick:
        args.onebot_groups, args.onebot_messages = 10, 3
    return args


async def run_all(groups: int, messages: int, latency: float) -> list[dict[str, Any]]:
    """Conversations at 1, 10 and `groups` groups (where the bot's CPU saturates shows), then the burst."""
    proc, base_url = await start_model(latency)
    sizes = sorted({min(groups, n) for n in (1, 10)} | {groups})
    try:
        rows = []
        for mode in ("plain", "tool"):
            for n in sizes:
                rows.append({**await run(mode, n, messages, latency, base_url), "groups": n})
        rows.append({**await run("burst", groups, messages, latency, base_url), "groups": groups})
        return rows
    finally:
        proc.kill()
        await proc.wait()


def _reset_peak_rss() -> bool:
    """Linux: start the peak RSS count over (writing 5 to clear_refs resets VmHWM)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_rss_kib() -> int:
    return _status_kib("VmHWM:") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _status_kib(field: str) -> int:
    """A KiB figure of /proc/self/status (Linux), else 0."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith(field)), 0)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.serve_model:
        serve_model(args.onebot_latency)
        return
    from ania.loop import run as run_bot  # the event loop `ania serve` runs on

    fresh = _reset_peak_rss()  # under bench.run this process has already run the other benchmarks
    start_kib = _status_kib("VmRSS:")
    rows = run_bot(run_all(args.onebot_groups, args.onebot_messages, args.onebot_latency))
    peak_kib = _peak_rss_kib() if fresh else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(report(rows, args.onebot_groups, args.onebot_messages, args.onebot_latency, peak_kib, start_kib))


if __name__ == "__main__":
    main()
