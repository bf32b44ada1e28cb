"""The gate pipeline's overhead per tool call, with every gate passing (no hooks, plan mode off, no
approval needed), against calling the tool directly (`SessionExecutor.invoke`).

Four ways to run one `time` call with the real engine's run context:
  direct      `ctx.executor.invoke(call, ctx)`: resolve + execute, no gates
  fast path   what a turn runs for a call that cannot pause: the call checked and its route listed once,
              then the same gates walked as plain calls (nodes/tool_call.py)
  gate graph  the compiled gate graph (graphs/gate.py) over the call, no checkpointer
  + sqlite    the same with the SQLite checkpointer (each gate step checkpointed, which is what lets an
              approval resume at its gate; a turn runs only calls that may pause this way)
Then whole turns with 1 vs 8 parallel tool calls, ours against LangChain's `create_agent`, alternating
(a fresh session per turn, so history does not grow).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from bench.common import SESSION, USER, Ours, Peer, median, table, timed
from checkpoints.factory import open_checkpointer
from core.registry import ToolCall
from graphs.gate import build_gate_graph
from nodes.checked import check_call
from nodes.gate_list import route_of
from nodes.tool_call import walk_gates

N_CALLS = 200
N_TURNS = 10
ZONES = ("UTC", "Asia/Shanghai", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Europe/Paris",
         "Australia/Sydney", "America/Sao_Paulo")


async def _per_call(fn: Callable[[int], Awaitable[Any]], n: int) -> list[float]:
    for i in range(min(20, n)):  # warm-up
        await fn(i)
    gc.collect()
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await fn(i)
        out.append(time.perf_counter() - t0)
    return out


async def gate_overhead(llm: ScriptedOpenAI, root: Path, n: int) -> list[list[Any]]:
    ours = await Ours.start(llm, root / "ours")
    try:
        ctx = ours.engine.context(SESSION, USER, ours.bridge())  # the production hook manager, approval on
        call = ToolCall(id="call_1", name="time", args={"timezone": "Asia/Shanghai"})
        gate = build_gate_graph()

        async def direct(i: int) -> None:
            out = await ctx.executor.invoke(call, ctx)
            assert out.status == "ok", out

        async def fast(i: int) -> None:
            resolved = check_call(call.to_dict(), ctx)
            assert not isinstance(resolved, str), resolved
            start = {"call": call.to_dict(), "route": await route_of(resolved, ctx)}
            out = await walk_gates(start, ctx, resolved)
            assert out["messages"][-1].response_metadata["ania_status"] == "ok", out

        async def gated(i: int) -> None:
            out = await gate.ainvoke({"call": call.to_dict()}, context=ctx)
            assert out["messages"][-1].response_metadata["ania_status"] == "ok", out

        async with open_checkpointer(root / "gate-ckpt") as saver:
            gate_saved = build_gate_graph(checkpointer=saver)

            async def saved(i: int) -> None:  # a fresh thread per call, like a fresh branch in a turn
                config = {"configurable": {"thread_id": f"bench-gate-{i}-{time.perf_counter_ns()}"}}
                out = await gate_saved.ainvoke({"call": call.to_dict()}, config, context=ctx)
                assert out["messages"][-1].response_metadata["ania_status"] == "ok", out

            times = {"direct": await _per_call(direct, n), "fast path": await _per_call(fast, n),
                     "gate graph": await _per_call(gated, n),
                     "gate graph + sqlite": await _per_call(saved, n)}
    finally:
        await ours.close()
    base = median(times["direct"])
    return [[name, median(ts) * 1e6, sum(ts) / len(ts) * 1e6, median(ts) / base] for name, ts in times.items()]


async def _turn(agent: Any, llm: ScriptedOpenAI, k: int, session: str) -> float:
    llm.script([Calls([("time", {"timezone": z}) for z in ZONES[:k]]), Reply("done")])
    before = llm.model_seconds
    wall, reply = await timed(agent.turn("what time is it around the world?", session=session))
    assert reply == "done", reply
    tools = [m for m in llm.requests[-1].messages if m["role"] == "tool"]
    assert len(tools) == k and all(not t["content"].startswith(("Error", "Not run", "Blocked")) for t in tools)
    return wall - (llm.model_seconds - before)


async def parallel_turns(llm: ScriptedOpenAI, root: Path, n: int) -> list[list[Any]]:
    """Ours and the peer alternate turns (machine load hits both alike); the first two are warm-up."""
    ours = await Ours.start(llm, root / "turn-ours")
    peer = await Peer.start(llm, root / "turn-peer", ours.tool_schemas(), ours.system_prompt())
    rows = []
    try:
        for k in (1, 8):
            walls: dict[str, list[float]] = {"o": [], "p": []}
            for i in range(n + 2):
                for tag, agent in (("o", ours), ("p", peer)) if i % 2 else (("p", peer), ("o", ours)):
                    wall = await _turn(agent, llm, k, f"f:{tag}-{k}-{i}")
                    if i >= 2:
                        walls[tag].append(wall)
            o, p = median(walls["o"]) * 1000, median(walls["p"]) * 1000
            rows.append([k, o, p, o / p])
    finally:
        await ours.close()
        await peer.close()
    (_, o1, p1, _), (_, o8, p8, _) = rows
    rows.append(["per extra call", (o8 - o1) / 7, (p8 - p1) / 7, (o8 - o1) / max(1e-9, p8 - p1)])
    return rows


async def run(n: int, turns: int) -> str:
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory(prefix="ania-bench-gate-") as tmp:
        gate_rows = await gate_overhead(llm, Path(tmp), n)
        turn_rows = await parallel_turns(llm, Path(tmp), turns)
    return "\n".join([
        f"Gate pipeline per tool call, all gates passing (N={n}), µs",
        table(["path", "median µs", "mean µs", "x direct"], gate_rows),
        "",
        f"Whole turn with parallel tool calls (median of {turns} turns, fresh session each; wall minus model time), ms",
        table(["tool calls", "ours", "peer", "ours/peer"], turn_rows),
    ])


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_gate", description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=N_CALLS, help="tool calls per path (default 200)")
    p.add_argument("--gate-turns", type=int, default=N_TURNS, help="turns per parallel-call size (default 10)")
    p.add_argument("--quick", action="store_true", help="50 calls, 4 turns")
    args, _ = p.parse_known_args(argv)
    n, turns = (50, 4) if args.quick else (max(1, min(args.calls, 5000)), max(1, min(args.gate_turns, 100)))
    print(asyncio.run(run(n, turns)))


if __name__ == "__main__":
    main()
