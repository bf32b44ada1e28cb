"""Subagents and teams: is the team fan-out real, and what does one subagent cost over a plain agent?

1. Fan-out: `team_run`'s path (`services.subagents.run_team`, the team graph, one subagent per member) for
   a team of N members (default 10) against a team of one, each member making one `time` call and then
   answering, against a scripted model with `--member-delay` seconds (default 0.2) per request. The ratio
   of the two wall times is the fan-out's cost: 1.0 would be perfectly parallel members (target ≤ 1.5).
2. Per-subagent overhead: one subagent run (`services.subagents.run`: its own checkpointed thread, the gate
   graph per call, the budget) against a plain `create_agent` invocation of the same work (same model
   settings, system prompt and `time` tool, no checkpointer), alternating, each on its own scripted server.
   Overhead = wall time minus the scripted model's delays; medians (target ours/peer ≤ 1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI, Step
from bench.common import SESSION, USER, Ours, median, peer_model, peer_time_tool, settings_for, table, timed
from services.subagents import SubagentRequest, TeamRunRequest
from services.teams import Member, Team

MEMBERS = 10
ROUNDS = 5
RUNS = 30
TOOL_CALL = ("time", {"timezone": "Asia/Shanghai"})


def member_steps(delay: float) -> Any:
    """Every run asks twice: first it calls `time`, then (with the result) it answers."""

    def respond(body: dict[str, Any]) -> Step:
        if body["messages"][-1].get("role") == "tool":
            return Reply("it is late", delay=delay)
        return Calls([TOOL_CALL], delay=delay)

    return respond


def team_of(n: int) -> Team:
    members = tuple(Member(f"m{i}", f"You are reviewer {i}. Check the time.") for i in range(n))
    return Team("bench", "Benchmark team.", members, SESSION)


async def fan_out(llm: ScriptedOpenAI, root: Path, members: int, rounds: int, delay: float) -> list[list[Any]]:
    llm.reset()
    llm.respond_with(member_steps(delay))
    ours = await Ours.start(llm, root)
    try:
        ctx = ours.engine.context(SESSION, USER, ours.bridge())
        subagents = ours.engine.services.subagents

        async def run(n: int) -> float:
            wall, text = await timed(subagents.run_team(ctx, TeamRunRequest(team_of(n), "What time is it?", 60)))
            assert f"({n} ok)" in text, text[:300]
            return wall

        await run(1)
        await run(members)  # warm-up: connections, SQLite, imports
        gc.collect()
        one, many = [], []
        for i in range(rounds):
            for n, out in ((1, one), (members, many)) if i % 2 == 0 else ((members, many), (1, one)):
                out.append(await run(n))
    finally:
        await ours.close()
    ratio = median(many) / median(one)
    return [["1 member", median(one) * 1000, 1.0], [f"{members} members", median(many) * 1000, ratio]]


class PeerAgent:
    """LangChain's `create_agent`: the same model settings, system prompt and `time` tool; no checkpointer."""

    def __init__(self, llm: ScriptedOpenAI, client: str) -> None:
        from langchain.agents import create_agent

        settings = settings_for(llm)
        self.stack = AsyncExitStack()
        self.agent = create_agent(peer_model(settings, client, self.stack), [peer_time_tool()],
                                  system_prompt=settings.bot.system_prompt)

    async def run(self, task: str) -> str:
        out = await self.agent.ainvoke({"messages": [{"role": "user", "content": task}]})
        return str(out["messages"][-1].content)


async def overhead(llms: tuple[ScriptedOpenAI, ScriptedOpenAI], root: Path, runs: int, delay: float,
                   client: str) -> list[list[Any]]:
    for llm in llms:
        llm.reset()
        llm.respond_with(member_steps(delay))
    ours = await Ours.start(llms[0], root)
    peer = PeerAgent(llms[1], client)
    try:
        ctx = ours.engine.context(SESSION, USER, ours.bridge())
        subagents = ours.engine.services.subagents

        async def our_run() -> str:
            result = await subagents.run(ctx, SubagentRequest(task="What time is it in Shanghai?", budget_sec=60))
            assert result.status == "ok", result
            return result.text

        sides: dict[str, tuple[Any, ScriptedOpenAI, dict[str, list[float]]]] = {
            "ours": (our_run, llms[0], {"wall": [], "overhead": [], "cpu": []}),
            "peer": (lambda: peer.run("What time is it in Shanghai?"), llms[1], {"wall": [], "overhead": [], "cpu": []}),
        }
        for fn, *_ in sides.values():  # warm-up
            for _ in range(3):
                await fn()
        await subagents.flush()
        gc.collect()
        for i in range(runs):
            order = list(sides.values()) if i % 2 == 0 else list(sides.values())[::-1]
            for fn, llm, out in order:
                before, cpu = llm.model_seconds, time.process_time()
                wall, answer = await timed(fn())
                assert answer == "it is late", answer
                await subagents.flush()  # a finished run is kept off the caller's path: its CPU counts, not its wall
                out["cpu"].append(time.process_time() - cpu)
                out["wall"].append(wall)
                out["overhead"].append(wall - (llm.model_seconds - before))
    finally:
        await ours.close()
        await peer.stack.aclose()
    peer_side = sides["peer"][2]
    return [[name, median(out["overhead"]) * 1000, median(out["overhead"]) / median(peer_side["overhead"]),
             median(out["cpu"]) * 1000, median(out["cpu"]) / median(peer_side["cpu"]), median(out["wall"]) * 1000]
            for name, (_, _, out) in sides.items()]


async def run(args: argparse.Namespace) -> str:
    out = []
    with tempfile.TemporaryDirectory(prefix="ania-bench-team-") as tmp, ScriptedOpenAI() as ours_llm, \
            ScriptedOpenAI() as peer_llm:
        rows = await fan_out(ours_llm, Path(tmp) / "fan", args.members, args.rounds, args.member_delay)
        out += [f"Team fan-out: wall time of team_run's path, each member 1 tool call + answer, model "
                f"{args.member_delay * 1000:.0f} ms per request; medians of {args.rounds}",
                table(["team", "wall ms", "ratio to 1 member"], rows), ""]
        rows = await overhead((ours_llm, peer_llm), Path(tmp) / "over", args.runs, args.overhead_delay,
                              args.peer_client)
        out += [f"One subagent (1 tool call + answer) against create_agent ({args.peer_client} ChatOpenAI, no "
                f"checkpointer), model {args.overhead_delay * 1000:.0f} ms per request; medians of {args.runs}",
                table(["", "overhead ms", "ratio to peer", "CPU ms", "CPU ratio", "wall ms"], rows),
                "(CPU: this process's CPU time per run, the scripted server's thread and the copy of a finished "
                "run to SQLite included; steadier than wall time on a loaded machine)"]
    return "\n".join(out)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.bench_team", description=__doc__.splitlines()[0])
    p.add_argument("--members", type=int, default=MEMBERS, help="members of the big team (default 10)")
    p.add_argument("--rounds", type=int, default=ROUNDS, help="timed team runs of each size (default 5)")
    p.add_argument("--runs", type=int, default=RUNS, help="timed subagent runs per side (default 30)")
    p.add_argument("--member-delay", type=float, default=0.2, help="model latency in the fan-out part, seconds")
    p.add_argument("--overhead-delay", type=float, default=0.0, help="model latency in the overhead part")
    p.add_argument("--peer-client", choices=["stock", "lean"], default="stock",
                   help="the peer's model client: LangChain's ChatOpenAI (default) or Ania's lean one")
    p.add_argument("--quick", action="store_true", help="3 rounds, 10 runs")
    args, _ = p.parse_known_args(argv)
    if args.quick:
        args.rounds, args.runs = 3, 10
    args.members = max(1, min(args.members, 10))
    return args


def main(argv: Sequence[str] | None = None) -> None:
    print(asyncio.run(run(parse(argv))))


if __name__ == "__main__":
    main()
