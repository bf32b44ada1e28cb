"""Per-turn engine overhead of Ania against LangChain's `create_agent`, prefix stability, checkpoint size.

For each history size, both agents get a fresh session, each on its own instance of the scripted model,
turns alternating between them (machine load hits both alike). The history is built with plain turns
(one user message, one reply: 2 messages each), then `--turns` timed turns each make one `time` tool
call and answer (4 messages each, so the history grows during the timed part; the table shows the range).
Overhead = wall time of the turn minus the scripted model's delays; medians.

Prefix stability: for consecutive requests of a session, request N+1's messages start with request N's
messages byte for byte and the tools arrays are byte-identical (no compaction happens at these sizes).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from bench.common import Ours, Peer, db_bytes, kib, median, prefix_stable, subgraph_share, table, timed

SIZES = (2, 20, 100)
TURNS = 20
TOOL_CALL = ("time", {"timezone": "Asia/Shanghai"})


@dataclass
class Result:
    overhead_ms: float = 0.0
    turn_ms: float = 0.0
    stable: tuple[int, int] = (0, 0)
    messages: int = 0
    checkpoint_bytes: int = 0
    subgraph_share: float = 0.0


@dataclass
class Side:
    """One agent on its own scripted server (so each server's requests are one session's)."""

    agent: Any
    llm: ScriptedOpenAI
    overheads: list[float] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)

    async def plain(self, i: int, delay: float) -> None:
        self.llm.script([Reply(f"noted {i}", delay=delay)])
        await self.agent.turn(f"remember item {i}")

    async def timed_turn(self, i: int, delay: float) -> None:
        self.llm.script([Calls([TOOL_CALL], delay=delay), Reply(f"it is late ({i})", delay=delay)])
        before = self.llm.model_seconds
        wall, reply = await timed(self.agent.turn(f"what time is it in Shanghai? ({i})"))
        assert reply == f"it is late ({i})", f"{type(self.agent).__name__} answered {reply!r}"
        self.overheads.append(wall - (self.llm.model_seconds - before))
        self.walls.append(wall)

    async def finish(self) -> Result:
        last = self.llm.requests[-1].messages
        assert last[-1]["role"] == "tool" and "Asia/Shanghai" in last[-1]["content"], last[-1]
        await self.agent.close()
        db = self.agent.checkpoint_db
        # The last request holds the system prompt + the history; the stored history adds the reply.
        return Result(median(self.overheads) * 1000, median(self.walls) * 1000, prefix_stable(self.llm.requests),
                      len(last), db_bytes(db), subgraph_share(db))


async def _compare(llms: tuple[ScriptedOpenAI, ScriptedOpenAI], size: int, turns: int, delay: float,
                   schemas: list[dict[str, Any]]) -> dict[str, Result]:
    """Both agents side by side, turns alternating (so load drift on the machine hits both alike)."""
    for llm in llms:
        llm.reset()
    gc.collect()
    with tempfile.TemporaryDirectory(prefix="ania-bench-loop-") as tmp:
        ours = await Ours.start(llms[0], Path(tmp) / "ours")
        schemas[:] = schemas or ours.tool_schemas()
        peer = await Peer.start(llms[1], Path(tmp) / "peer", schemas, ours.system_prompt())
        sides = {"ours": Side(ours, llms[0]), "peer": Side(peer, llms[1])}
        for i in range(max(1, size // 2)):
            for side in sides.values():
                await side.plain(i, delay)
        for i in range(turns):
            order = list(sides.values()) if i % 2 == 0 else list(sides.values())[::-1]
            for side in order:
                await side.timed_turn(i, delay)
        return {kind: await side.finish() for kind, side in sides.items()}


def _pct(stable: tuple[int, int]) -> str:
    n, total = stable
    return f"{100 * n / total:.0f}% ({n}/{total})" if total else "-"


async def run(sizes: Sequence[int], turns: int, delay: float) -> dict[int, dict[str, Result]]:
    results: dict[int, dict[str, Result]] = {}
    schemas: list[dict[str, Any]] = []  # the peer gets ours' tool list (time as a @tool, the rest as schemas)
    with ScriptedOpenAI() as ours_llm, ScriptedOpenAI() as peer_llm:
        await _compare((ours_llm, peer_llm), 2, 3, delay, schemas)  # warm-up: imports, connections, SQLite
        for size in sizes:
            results[size] = await _compare((ours_llm, peer_llm), size, turns, delay, schemas)
    return results


def report(results: dict[int, dict[str, Result]], turns: int, delay: float) -> str:
    walls = ["ours wall", "peer wall"] if delay else []
    rows = []
    for size, r in results.items():
        ours, peer = r["ours"], r["peer"]
        rows.append([f"{size}->{size + 4 * turns}", ours.overhead_ms, peer.overhead_ms,
                     ours.overhead_ms / peer.overhead_ms, *([ours.turn_ms, peer.turn_ms] if delay else []),
                     _pct(ours.stable), _pct(peer.stable)])
    out = [f"Turn overhead (median of {turns} turns; 1 tool call + answer; wall minus model time), ms",
           table(["history msgs", "ours", "peer", "ours/peer", *walls, "prefix-stable ours",
                  "prefix-stable peer"], rows)]
    size = max(results)
    ours, peer = results[size]["ours"], results[size]["peer"]
    out += ["", f"Checkpoint file after the {size}-message run (ends at {ours.messages} messages; saver closed, "
                "WAL folded in)",
            table(["", "bytes", "size", "ours/peer", "gate-branch share"],
                  [["ours (DeltaChannel messages)", ours.checkpoint_bytes, kib(ours.checkpoint_bytes),
                    ours.checkpoint_bytes / max(1, peer.checkpoint_bytes), f"{100 * ours.subgraph_share:.0f}%"],
                   ["peer (full snapshot per step)", peer.checkpoint_bytes, kib(peer.checkpoint_bytes), 1.0, "-"]])]
    return "\n".join(out)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.bench_loop", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="history sizes in messages (default 2,20,100)")
    p.add_argument("--turns", type=int, default=TURNS, help="timed turns per size (default 20)")
    p.add_argument("--model-delay", type=float, default=0.0, help="scripted model latency per request, seconds")
    p.add_argument("--peer-durability", choices=["sync", "async", "exit"], default=None,
                   help="the peer's LangGraph durability (default: LangGraph's own, async; ours uses sync)")
    p.add_argument("--peer-client", choices=["stock", "lean"], default="stock",
                   help="the peer's model client: LangChain's ChatOpenAI (default) or Ania's lean one")
    p.add_argument("--quick", action="store_true", help="sizes 2,20 and 5 turns")
    args, _ = p.parse_known_args(argv)
    if args.quick:
        args.sizes, args.turns = "2,20", 5
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    turns = max(1, min(args.turns, 200))
    Peer.durability = args.peer_durability
    Peer.client = args.peer_client
    print(f"peer: create_agent with {'Ania' if args.peer_client == 'lean' else 'the stock'} ChatOpenAI client")
    print(report(asyncio.run(run(sizes, turns, args.model_delay)), turns, args.model_delay))


if __name__ == "__main__":
    main()
