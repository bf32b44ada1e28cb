"""The operator's toolkit at scale (Q1-Q3, D5): what logging and quotas cost a turn, `ania sessions
history` on a 1,000-turn session, and the checkpoint file per 1,000 turns with and without prune.

1. Per-turn cost: two engines on the same scripted model, alternating turn by turn (one `time` call and
   an answer, a fresh session every 20 turns): "on" (quotas set, so the check reads both counters; the
   query-log row; the INFO line written to a file) and "off" (no quota, no query log, the INFO line
   filtered). The difference of the medians, against the turn's own time. The same two steps are also
   timed directly (open_turn + close_turn), which the turn's noise cannot hide.
2. `ania sessions history` on one session of N turns (4 messages each: ~5 checkpoints per turn): the
   lines as the command builds them, in-process, and the whole command as a subprocess (Python start-up
   and imports included).
3. The checkpoint file after N turns; then after `prune` keeping the last tenth of the turns, and keeping
   only the newest copy of the history, each followed by VACUUM.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.operations import close_turn, open_turn
from bench.common import SESSION, USER, Ours, db_bytes, kib, table
from checkpoints.factory import CHECKPOINT_FILE, open_checkpointer
from checkpoints.history import history_lines
from checkpoints.maintenance import prune_threads, vacuum
from checkpoints.sessions import checkpoint_time, session_history

TEXT = ("A realistic chat line about the weather, the trains, the meeting at ten and who brings the slides; "
        "nothing special, just what people say in a group all day long. ") * 2
TEXT = TEXT[:280]


def _script(llm: ScriptedOpenAI, turn: int) -> None:
    llm.script([Calls([("time", {"timezone": "UTC"})]), Reply(f"answer {turn} {TEXT}")])


async def per_turn(llm: ScriptedOpenAI, root: Path, turns: int) -> list[str]:
    on = await Ours.start(llm, root / "on", quota={"session_daily_tokens": 10**12, "global_daily_tokens": 10**12,
                                                   "admins_exempt": False})  # the bench user is an admin
    off = await Ours.start(llm, root / "off", logs={"query_log": False})
    turn_log = logging.getLogger("ania.turn")
    handler = logging.FileHandler(root / "turns.log")
    level = turn_log.level
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for i in range(turns + 10):
            for name, engine in (("on", on), ("off", off)) if i % 2 else (("off", off), ("on", on)):
                turn_log.setLevel(logging.INFO if name == "on" else logging.WARNING)
                if name == "on":
                    turn_log.addHandler(handler)
                _script(llm, i)
                t0 = time.perf_counter()
                await engine.turn(f"question {i} {TEXT}", session=f"f:bench{i // 20}")
                if i >= 10:  # warm-up
                    times[name].append(time.perf_counter() - t0)
                turn_log.removeHandler(handler)
        direct = await _direct(on, min(turns, 500))
    finally:
        turn_log.setLevel(level)
        handler.close()
        await on.close()
        await off.close()
    med_on, med_off = statistics.median(times["on"]), statistics.median(times["off"])
    rows = [["off (no quota, no query log)", med_off * 1000, "-"],
            ["on (quotas, query log, INFO line)", med_on * 1000, f"{(med_on - med_off) / med_off * 100:+.1f} %"]]
    return [f"Per turn ({turns} turns each, alternating; one tool call and an answer)",
            table(["engine", "median turn ms", "vs off"], rows),
            f"open_turn + close_turn alone: {direct * 1e6:.0f} µs per turn = {direct / med_off * 100:.1f} % of the "
            f"turn ({med_off * 1000:.2f} ms)"]


async def _direct(ours: Ours, n: int) -> float:
    """open_turn + close_turn on the "on" engine, without the graph: the records' own cost."""
    services, graph = ours.engine.services, ours.engine.graph
    state = await graph.aget_state({"configurable": {"thread_id": "f:bench0"}})
    messages = list(state.values["messages"])
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        record = await open_turn(services, graph, "f:bench0", USER, "question")
        close_turn(services, record, "ok", "answer", {"total_tokens": 100, "requests": 2}, messages)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


async def history_and_size(llm: ScriptedOpenAI, root: Path, turns: int) -> list[str]:
    ours = await Ours.start(llm, root / "long", agent={"context_tokens": 10**9})
    marks: list[str] = []
    try:
        for turn in range(1, turns + 1):
            _script(llm, turn)
            await ours.turn(f"question {turn} {TEXT}")
        saver = ours.engine.graph.checkpointer
        steps = await session_history(saver, SESSION)
        marks = [s.checkpoint_id for s in steps if s.source == "input"]
    finally:
        await ours.close()
    data = root / "long" / "data"
    async with open_checkpointer(data) as saver:
        t0 = time.perf_counter()
        lines = await history_lines(saver, SESSION)
        in_process = time.perf_counter() - t0
    env = {**os.environ, "ANIA_DATA_DIR": str(data), "ANIA_CONFIG_DIR": str(root / "long" / "config")}
    t0 = time.perf_counter()
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "ania.cli", "sessions", "history",
                                                    SESSION], env=env, capture_output=True, text=True, check=True,
                                   timeout=120)
    command = time.perf_counter() - t0
    out = [f"`ania sessions history` on a {turns}-turn session ({len(lines)} checkpoints, "
           f"{len(done.stdout.splitlines())} lines): {in_process * 1000:.0f} ms in-process, "
           f"{command * 1000:.0f} ms as a command (start-up and imports included)", ""]
    rows = [["no prune", kib(db_bytes(data / CHECKPOINT_FILE)), "-"]]
    keep_tenth = checkpoint_time(marks[len(marks) * 9 // 10])
    for label, before in (("prune, keep the last tenth of the turns", keep_tenth),
                          ("prune --older-than 0s, the session active (its newest copy kept)", None)):
        copy = root / f"pruned-{len(rows)}"
        shutil.copytree(data, copy)
        async with open_checkpointer(copy) as saver:
            report = await prune_threads(saver, before or datetime.now(UTC), running={SESSION})
            await vacuum(saver)
            left = len(await session_history(saver, SESSION))
        rows.append([label, kib(db_bytes(copy / CHECKPOINT_FILE)), f"{report.checkpoints} deleted, {left} left"])
    out += [f"Checkpoint file after {turns} turns (4 messages of ~300 characters per turn, compaction off)",
            table(["", "file", "checkpoints"], rows)]
    return out


async def run(turns: int, long_turns: int) -> str:
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory(prefix="ania-bench-ops-") as tmp_dir:
        root = Path(tmp_dir)
        lines = await per_turn(llm, root, turns)
        lines += ["", *await history_and_size(llm, root, long_turns)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_ops", description=__doc__.splitlines()[0])
    p.add_argument("--ops-turns", type=int, default=300, help="turns per engine for the per-turn cost (default 300)")
    p.add_argument("--ops-long", type=int, default=1000, help="turns of the long session (default 1000)")
    p.add_argument("--quick", action="store_true", help="60 turns per engine, a 200-turn session")
    args, _ = p.parse_known_args(argv)
    turns, long_turns = (60, 200) if args.quick else (args.ops_turns, args.ops_long)
    print(asyncio.run(run(max(10, turns), max(20, long_turns))))


if __name__ == "__main__":
    main()
