"""Storage and history at scale: one long session through the real engine, as the checkpoint file sees it.

Each turn: a user message of 300 characters, one `time` call, an answer of 300 characters (4 messages);
compaction off. At each mark (turns 50, 100, 200, 500, 1000):
- the file (WAL folded in) and the bytes per turn since the previous mark (linear storage: flat);
- the saver's put time per turn (aput + aput_writes, median over the window: flat);
- the history load the engine does at every turn (median over the window), and `aget_state` cold (a
  fresh saver on the file, as after a restart): ours, ours with LangGraph's serializer (what the saver
  itself wins, apart from checkpoints/serde.py), LangGraph's own delta loader on the same file, and the
  stock saver on a thread holding the same messages as one full snapshot, read through `create_agent`'s
  graph (what the peer reads: the target) and through a one-node graph (the saver alone);
then one session's checkpoint history (`session_history`) and listing 1,000 stored sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Annotated, Any

import aiosqlite
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AnyMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from bench.common import SESSION, Ours, kib, peer_time_tool, table
from checkpoints.factory import CHECKPOINT_FILE, REDUCERS, open_checkpointer, thread_config
from checkpoints.saver import AniaSqliteSaver
from checkpoints.serde import MessageSerializer
from checkpoints.sessions import list_sessions
from core.settings import Settings
from graphs.agent import build_agent_graph

MARKS = (50, 100, 200, 500, 1000)
#: Cold reads per figure and side (the median is shown; this machine's run-to-run noise is about 15%).
READS = 25
TEXT = ("A long and realistic chat line, about the weather, the trains, the meeting at ten and who brings "
        "the slides; nothing special, just the kind of thing people say in a group all day long. ") * 2
TEXT = TEXT[:280]


class StockState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def _file_bytes(saver: Any, path: Path) -> int:
    async with saver.lock:
        await saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


async def _loads(db: Path, messages: list[AnyMessage], tmp: Path) -> list[float]:
    """`aget_state` cold, median of `READS` reads per side, the sides taking turns read by read (machine
    load hits all alike), a full garbage collection before each read: ours (a fresh saver each time, as
    after a restart; its opening is not counted); ours with LangGraph's serializer (the saver's share of
    the win, apart from the serializer's); LangGraph's own delta loader on our file; the stock saver
    holding the same messages as one full snapshot, read through `create_agent`'s graph (what the peer
    reads) and through a one-node graph."""
    async with AsyncExitStack() as stack:
        async def connect(path: Path, **kw: Any) -> aiosqlite.Connection:
            return await stack.enter_async_context(aiosqlite.connect(str(path), **kw))

        async def fresh(serde: Any) -> Any:
            conn = await connect(db, isolation_level=None)
            saver = AsyncSqliteSaver(conn) if stock_mode else AniaSqliteSaver(conn, reducers=REDUCERS, serde=serde)
            await saver.setup()
            return build_agent_graph(lambda: 10**9, checkpointer=saver, stock=stock_mode)

        stock_mode = Settings().engine.stock  # ANIA_ENGINE__STOCK=1 (bench/run.py --stock): ours is the stock path

        stock_loader = build_agent_graph(lambda: 10**9, checkpointer=AsyncSqliteSaver(await connect(db)))
        saver = AsyncSqliteSaver(await connect(tmp / f"stock-{len(messages)}.db"))
        peer = create_agent(GenericFakeChatModel(messages=iter([])), [peer_time_tool()], checkpointer=saver)
        await peer.aupdate_state(thread_config("peer"), {"messages": messages})
        g = StateGraph(StockState)
        g.add_node("model", lambda s: {})
        g.add_edge(START, "model")
        stock = g.compile(checkpointer=saver)
        await stock.aupdate_state(thread_config("stock"), {"messages": messages})
        sides: list[tuple[Callable[[], Awaitable[Any]], str]] = [
            (lambda: fresh(MessageSerializer()), SESSION), (lambda: fresh(JsonPlusSerializer()), SESSION),
            (_const(stock_loader), SESSION), (_const(peer), "peer"), (_const(stock), "stock")]
        times: list[list[float]] = [[] for _ in sides]
        for _ in range(READS):
            for (graph_for, thread), out in zip(sides, times, strict=True):
                graph = await graph_for()
                gc.collect()
                t0 = time.perf_counter()
                await graph.aget_state(thread_config(thread))
                out.append((time.perf_counter() - t0) * 1000)
    return [statistics.median(t) for t in times]


def _const(graph: Any) -> Callable[[], Awaitable[Any]]:
    async def same() -> Any:
        return graph

    return same


async def run(marks: Sequence[int], sessions: int) -> str:
    rows: list[list[Any]] = []
    with ScriptedOpenAI() as llm, tempfile.TemporaryDirectory(prefix="ania-bench-storage-") as tmp_dir:
        tmp = Path(tmp_dir)
        ours = await Ours.start(llm, tmp / "ours", agent={"context_tokens": 10**9})
        saver = ours.engine.graph.checkpointer
        db = ours.checkpoint_db
        put: list[float] = []
        load: list[float] = []
        _instrument(saver, put, load)
        per_turn_put: list[float] = []
        per_turn_load: list[float] = []
        last_mark, last_bytes = 0, 0
        try:
            for turn in range(1, max(marks) + 1):
                llm.script([Calls([("time", {"timezone": "UTC"})]), Reply(f"answer {turn} {TEXT}")])
                put.clear()
                load.clear()
                await ours.turn(f"question {turn} {TEXT}")
                per_turn_put.append(sum(put))
                per_turn_load.append(sum(load))
                if turn in marks:
                    gc.collect()
                    size = await _file_bytes(saver, db)
                    state = await ours.engine.graph.aget_state(thread_config(SESSION))
                    messages = list(state.values["messages"])
                    reads = await _loads(db, messages, tmp)
                    window = slice(last_mark, turn)
                    rows.append([turn, len(messages), kib(size), (size - last_bytes) / (turn - last_mark) / 1024,
                                 statistics.median(per_turn_put[window]) * 1000,
                                 statistics.median(per_turn_load[window]) * 1000, *reads])
                    last_mark, last_bytes = turn, size
            history_rows = await _history(saver)
        finally:
            await ours.close()
        listing = await _listing(tmp / "ours" / "data" / CHECKPOINT_FILE, tmp / "ours" / "data", sessions)
    head = ["turn", "msgs", "file", "KiB/turn since last", "put ms/turn", "load ms/turn", "aget_state cold ms",
            "same, LangGraph serializer", "LangGraph loader ms", "create_agent + stock saver ms",
            "1-node graph + stock saver ms"]
    return "\n".join([
        "One session, 4 messages of ~300 characters per turn, compaction off (marks: file size with the WAL folded in)",
        table(head, rows), "", *history_rows, "", *listing])


def _instrument(saver: Any, put: list[float], load: list[float]) -> None:
    """Time the saver's puts and history loads (instance attributes shadow the class's methods)."""
    for name, sink in (("aput", put), ("aput_writes", put), ("aget_delta_channel_history", load)):
        method = getattr(saver, name)

        async def timed(*args: Any, _m: Any = method, _sink: list[float] = sink, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await _m(*args, **kw)
            finally:
                _sink.append(time.perf_counter() - t0)

        setattr(saver, name, timed)


async def _history(saver: Any) -> list[str]:
    try:
        from checkpoints.sessions import session_history
    except ImportError:
        return ["session_history: not available in this tree"]
    t0 = time.perf_counter()
    steps = await session_history(saver, SESSION)
    took = (time.perf_counter() - t0) * 1000
    return [f"Checkpoint history of the session: {len(steps)} checkpoints (ids, times, steps, what ran) in "
            f"{took:.0f} ms"]


async def _listing(db: Path, data_dir: Path, sessions: int) -> list[str]:
    """Copy the long session's first 20 checkpoints into `sessions` threads, then list them all."""
    async with aiosqlite.connect(str(db), isolation_level=None) as conn:
        ids = [r[0] for r in await conn.execute_fetchall(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id LIMIT 20", (SESSION,))]
        marks = ",".join("?" * len(ids))
        await conn.execute("BEGIN")
        for i in range(sessions):
            await conn.execute(f"INSERT INTO checkpoints SELECT 'f:copy{i:04d}', checkpoint_ns, checkpoint_id, "
                               f"parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
                               f"WHERE thread_id = ? AND checkpoint_id IN ({marks})", (SESSION, *ids))
            await conn.execute(f"INSERT INTO writes SELECT 'f:copy{i:04d}', checkpoint_ns, checkpoint_id, task_id, "
                               f"task_path, idx, channel, type, value FROM writes "
                               f"WHERE thread_id = ? AND checkpoint_id IN ({marks})", (SESSION, *ids))
        await conn.execute("COMMIT")
    async with open_checkpointer(data_dir) as saver:
        t0 = time.perf_counter()
        found = await list_sessions(saver)
        took = (time.perf_counter() - t0) * 1000
    return [f"list_sessions: {len(found)} sessions ({sessions} x 20 checkpoints + the long one) in {took:.0f} ms"]


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_storage", description=__doc__.splitlines()[0])
    p.add_argument("--marks", default=",".join(map(str, MARKS)), help="turns at which to measure (default "
                   "50,100,200,500,1000)")
    p.add_argument("--list-sessions", type=int, default=1000, help="sessions to list (default 1000)")
    p.add_argument("--quick", action="store_true", help="marks 50,100,200; 200 sessions")
    args, _ = p.parse_known_args(argv)
    marks, sessions = ("50,100,200", 200) if args.quick else (args.marks, args.list_sessions)
    print(asyncio.run(run(sorted(int(m) for m in marks.split(",") if m.strip()), max(1, min(sessions, 5000)))))


if __name__ == "__main__":
    main()
