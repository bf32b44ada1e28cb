"""Per-turn engine overhead of Ania against LangChain's `create_agent`, like for like (the headline table).

Both sides as bench/common.py sets them up: the same lean model client, durability "sync", the same
SQLite checkpointer settings; ours with the production hook manager on an empty hooks file and approval
on. A timed turn is one user message of 300 characters, `--calls` parallel `time` calls (1 and 4), and
an answer of 300 characters; its overhead is its wall time minus the scripted model's delays. Before it,
the session holds a history of the given size (plain turns of 300-character messages, built through the
real loop so each side stores it as it would in production). A session takes timed turns only while its
history stays within 10% of the size; then a fresh one is built. Ours and the peer alternate turn by turn
(machine load hits both alike), each on its own scripted server. Each figure is the median with its
min-max over the runs, all in this one process; the runs per figure are printed.

Second table: what Ania's lean client saves (its smaller request payload and its HTTP pool on aiohttp,
services/llm/), the same `create_agent` with LangChain's stock `ChatOpenAI` against it with the lean
one (a client improvement any LangChain agent could use; not counted above).
Prefix stability: each side's consecutive requests share the previous messages byte for byte.

`--both` adds a third side to the first table, taking turns with the other two: Ania with
`engine.stock = true` (LangGraph's own message reducer, saver and serializer, the plain ChatOpenAI: what
the copied internals win, docs/ARCHITECTURE.md "Copied internals").
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import math
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from bench.common import Ours, Peer, median, prefix_stable, spread, table, timed

SIZES = (10, 100, 300, 1000)
CALLS = (1, 4)
RUNS = 10
TEXT = ("The quick brown fox jumps over the lazy dog while the committee reviews the quarterly figures; "
        "meanwhile the weather in the mountains turns, trains run late, and somebody asks about lunch. ") * 2
TEXT = TEXT[:300]
ZONES = ("UTC", "Asia/Shanghai", "Europe/Berlin", "America/New_York")


def growth(calls: int) -> int:
    """Messages a timed turn adds: the question, the call message, one result per call, the answer."""
    return 3 + calls


@dataclass
class Side:
    """One agent on its own scripted server (so each server's requests are one session's)."""

    name: str
    agent: Any
    llm: ScriptedOpenAI
    overheads: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    #: CPU time of the process per timed turn (steadier than wall time on a busy machine; it includes the
    #: side's scripted server thread, which does the same work for both sides).
    cpu: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    #: Where each session's requests start in `llm.requests` (prefix stability is per session).
    starts: list[int] = field(default_factory=list)

    def stable(self) -> tuple[int, int]:
        bounds = [*self.starts, len(self.llm.requests)]
        pairs = [prefix_stable(self.llm.requests[a:b]) for a, b in itertools.pairwise(bounds)]
        return sum(n for n, _ in pairs), sum(t for _, t in pairs)

    async def build(self, session: str, size: int) -> None:
        self.starts.append(len(self.llm.requests))
        for i in range(size // 2):
            self.llm.script([Reply(f"noted {i}. {TEXT}"[:300])])
            await self.agent.turn(f"remember item {i}: {TEXT}"[:300], session=session)

    async def timed_turn(self, session: str, key: tuple[int, int], i: int) -> None:
        calls = key[1]
        answer = f"it is late ({i}) {TEXT}"[:300]
        self.llm.script([Calls([("time", {"timezone": z}) for z in ZONES[:calls]]), Reply(answer)])
        before, cpu0 = self.llm.model_seconds, time.process_time()
        wall, reply = await timed(self.agent.turn(f"what time is it? ({i}) {TEXT}"[:300], session=session))
        self.cpu.setdefault(key, []).append(time.process_time() - cpu0)
        assert reply == answer, f"{self.name} answered {reply!r}"
        tools = [m for m in self.llm.requests[-1].messages if m["role"] == "tool"]
        assert len(tools) >= calls and all("Error" not in t["content"][:20] for t in tools[-calls:]), tools
        self.overheads.setdefault(key, []).append(wall - (self.llm.model_seconds - before))


async def compare(sides: list[Side], sizes: Sequence[int], calls: Sequence[int], runs: int) -> None:
    """Timed turns of every side at every (size, calls), alternating which side goes first."""
    for size in sizes:
        for k in calls:
            per_session = max(1, (size // 10) // growth(k))
            sessions = math.ceil(runs / per_session)
            done = 0
            for s in range(sessions):
                session = f"f:bench-{size}-{k}-{s}"
                for side in sides:
                    await side.build(session, size)
                gc.collect()
                for _ in range(min(per_session, runs - done)):
                    order = sides if done % 2 == 0 else sides[::-1]
                    for side in order:
                        await side.timed_turn(session, (size, k), done)
                    done += 1


async def run(sizes: Sequence[int], calls: Sequence[int], runs: int, client_sizes: Sequence[int],
              both: bool = False) -> str:
    with (ScriptedOpenAI() as ours_llm, ScriptedOpenAI() as peer_llm, ScriptedOpenAI() as stock_llm,
          ScriptedOpenAI() as plain_llm, tempfile.TemporaryDirectory(prefix="ania-bench-loop-") as tmp):
        root = Path(tmp)
        ours = await Ours.start(ours_llm, root / "ours", agent={"context_tokens": 10**9})  # compaction off, as the peer
        schemas = ours.tool_schemas()
        peer = await Peer.start(peer_llm, root / "peer", schemas, client="lean")
        stock = await Peer.start(stock_llm, root / "stock", schemas, client="stock")
        main = [Side("ours", ours, ours_llm), Side("peer", peer, peer_llm)]
        agents: list[Any] = [ours, peer, stock]
        if both:  # Ania on the libraries' own code (engine.stock), taking turns with the other two
            plain = await Ours.start(plain_llm, root / "plain", agent={"context_tokens": 10**9}, engine={"stock": True})
            agents.append(plain)
            main.append(Side("ours, engine.stock", plain, plain_llm))
        try:
            await compare(main, (2,), (1,), 2)  # warm-up: imports, connections, SQLite
            for side in main:
                side.overheads.clear()
                side.cpu.clear()
                side.starts.clear()
                side.llm.reset()
            await compare(main, sizes, calls, runs)
            stable = {side.name: side.stable() for side in main}
            clients = [Side("stock client", stock, stock_llm), Side("lean client", peer, peer_llm)]
            if client_sizes:
                await compare(clients, client_sizes, (1,), runs)
        finally:
            for agent in agents:
                await agent.close()
    return report(main, clients, stable, runs)


def report(main: list[Side], clients: list[Side], stable: dict[str, tuple[int, int]], runs: int) -> str:
    ours, peer = main[:2]
    rows = []
    worst = 0.0
    for key in ours.overheads:
        o, p = ours.overheads[key], peer.overheads[key]
        ratio = median(o) / median(p)
        worst = max(worst, ratio)
        cpu = median(ours.cpu[key]) / median(peer.cpu[key])
        rows.append([key[0], key[1], spread(o), spread(p), ratio, f"{median(ours.cpu[key]) * 1000:.1f} / "
                     f"{median(peer.cpu[key]) * 1000:.1f} ({cpu:.2f})", len(o)])
    out = [f"Like for like: turn overhead, ms, median [min-max] over the runs (wall minus model time; "
           f"{runs} runs per figure, one process)",
           table(["history msgs", "tool calls", "ours", "create_agent", "ours/peer", "CPU ms ours / peer", "runs"],
                 rows),
           f"worst ratio: {worst:.2f}" + ("  (target <= 1.0: met)" if worst <= 1.0 else "  (target <= 1.0: MISSED)"),
           "prefix-stable consecutive requests within a session: "
           + ", ".join(f"{k} {n}/{t}" for k, (n, t) in stable.items())]
    if len(main) > 2:
        plain = main[2]
        srows = [[key[0], key[1], spread(ours.overheads[key]), spread(plain.overheads[key]),
                  spread(peer.overheads[key]), median(ours.overheads[key]) / median(peer.overheads[key]),
                  median(plain.overheads[key]) / median(peer.overheads[key]),
                  f"{median(ours.cpu[key]) * 1000:.1f} / {median(plain.cpu[key]) * 1000:.1f}"] for key in ours.overheads]
        out += ["", "Both modes, same runs: Ania (fast, the default) and Ania with engine.stock = true, ms",
                table(["history msgs", "tool calls", "ours", "ours stock", "create_agent", "ours/peer",
                       "stock/peer", "CPU ms ours / stock"], srows)]
    stock, lean = clients
    if stock.overheads:
        crow = [[key[0], key[1], spread(stock.overheads[key]), spread(lean.overheads[key]),
                 median(lean.overheads[key]) / median(stock.overheads[key])] for key in stock.overheads]
        out += ["", "The lean model client on its own: create_agent with LangChain's stock ChatOpenAI vs with "
                    "Ania's lean client (its payload and its aiohttp pool; same graph), ms",
                table(["history msgs", "tool calls", "stock client", "lean client", "lean/stock"], crow)]
    return "\n".join(out)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.bench_loop", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="history sizes, messages (default 10,100,300,1000)")
    p.add_argument("--tool-calls", default=",".join(map(str, CALLS)),
                   help="parallel tool calls per timed turn (default 1,4)")
    p.add_argument("--runs", type=int, default=RUNS, help="timed turns per figure (default 10)")
    p.add_argument("--client-sizes", default="10,300", help="history sizes of the client table ('' to skip)")
    p.add_argument("--quick", action="store_true", help="sizes 10,100; 5 runs; client table at 10")
    p.add_argument("--both", action="store_true", help="a third side: Ania with engine.stock = true")
    args, _ = p.parse_known_args(argv)
    if args.quick:
        args.sizes, args.runs, args.client_sizes = "10,100", 5, "10"
    return args


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


def main(argv: Sequence[str] | None = None, runner: Callable[[Awaitable[str]], str] = asyncio.run) -> None:
    args = parse(argv)
    runs = max(1, min(args.runs, 200))
    print(runner(run(_ints(args.sizes), _ints(args.tool_calls), runs, _ints(args.client_sizes), args.both)))


if __name__ == "__main__":
    main()
