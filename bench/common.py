"""Shared pieces of the benchmarks: the scripted model, both agents on the same endpoint, tables.

Ours is the real `Engine` (`run_turn`, the same path a chat message takes after message entry) as it
runs in production: the `HookManager` reading an empty hooks file, approval on (no call here needs one),
durability "sync". The peer is LangChain's `create_agent`, like for like by default: the same model
client (Ania's lean `ChatOpenAI`), durability "sync", the same system prompt, the same tool list (an
equivalent `@tool` for `time`, the other tools' schemas as Ania sends them), and the same checkpointer
(`AsyncSqliteSaver` on a temp file, with the same SQLite settings). Everything runs on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, closing, contextmanager
from pathlib import Path
from typing import Any

from ania.engine import Engine
from ania.fakes.openai_server import Recorded, ScriptedOpenAI
from ania.localservers.postgres import LocalPostgres, PostgresUnavailable
from ania.platforms.bridge import ChatBridge
from checkpoints.factory import CHECKPOINT_FILE, tune_sqlite
from core.settings import Settings
from services.hooks import HOOKS_FILE, NoHooks
from services.llm import ModelFactory
from tools.time_tool import TimeParams, TimeTool

SESSION = "f:bench"
USER = "bench"


@contextmanager
def throwaway_postgres() -> Iterator[tuple[LocalPostgres, Path] | None]:
    """A Postgres server from Debian's package (default durability) and a temporary directory, for one
    benchmark; None, after a line saying why, where there is no Postgres."""
    try:
        server = LocalPostgres().start()
    except PostgresUnavailable as e:
        print(f"skipped: {e}")
        yield None
        return
    try:
        with tempfile.TemporaryDirectory() as tmp:
            yield server, Path(tmp)
    finally:
        server.stop()


def settings_for(llm: ScriptedOpenAI, **sections: dict[str, Any]) -> Settings:
    base: dict[str, Any] = {
        # The limiter stays in every call's path, uncontended: the benches measure the engine, not its queueing.
        "llm": {"base_url": llm.base_url, "model": "scripted-model", "api_key": "k", "timeout_sec": 30,
                "max_retries": 0, "max_concurrent_calls": 256},
        "bot": {"admins": [USER]},
    }
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return Settings(**base)


class Ours:
    """The Ania engine on a temp dir; `turn` sends one message and returns the reply."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.replies: list[str] = []

    @classmethod
    async def start(cls, llm: ScriptedOpenAI, root: Path, *, production_hooks: bool = True,
                    checkpoint_url: str | None = None, **sections: dict[str, Any]) -> Ours:
        """`production_hooks`: the real HookManager on an empty hooks file (as deployed), else no hook runner;
        `checkpoint_url`: the checkpoints on that Postgres instead of data/checkpoints.db."""
        (root / "config").mkdir(parents=True, exist_ok=True)
        (root / "config" / HOOKS_FILE).write_text('{"hooks": {}}\n')
        sections = {"approval": {"enable": True}, **sections}
        engine = await Engine.start(root / "config", root / "data", settings=settings_for(llm, **sections),
                                    hooks=None if production_hooks else NoHooks(), checkpoint_url=checkpoint_url)
        return cls(engine)

    def bridge(self) -> ChatBridge:
        async def send(text: str) -> None:
            self.replies.append(text)

        return ChatBridge(send, self.engine.services.paths.data_dir / "outbox")

    async def turn(self, text: str, session: str = SESSION) -> str:
        result = await self.engine.run_turn(session, USER, text, self.bridge())
        return result.reply

    @property
    def checkpoint_db(self) -> Path:
        return self.engine.services.paths.data_dir / CHECKPOINT_FILE

    def tool_schemas(self, session: str = SESSION) -> list[dict[str, Any]]:
        return self.engine.services.sessions.executor(session).schemas()

    def system_prompt(self) -> str:
        """The system prompt ours sends (persona and the available_skills block); the peer gets the same."""
        from nodes.prompt import system_prompt

        return system_prompt(self.engine.services)

    async def close(self) -> None:
        await self.engine.close()


def peer_time_tool() -> Any:
    from langchain_core.tools import tool

    impl = TimeTool()

    @tool("time", description=TimeTool.description, args_schema=TimeParams)
    async def time_(timezone: str = "UTC") -> str:
        """The same work as Ania's `time` tool."""
        return await impl.execute(TimeParams(timezone=timezone), None)  # type: ignore[arg-type]

    return time_


class Peer:
    """LangChain's `create_agent` with the same model settings, prompt, tools and checkpointer type.

    Like for like by default: durability "sync" (the engine's; None would be LangGraph's default, "async",
    where a step's checkpoint is written while the next step runs) and Ania's lean model client.
    """

    durability: str | None = "sync"
    #: "lean": Ania's client, as the engine uses (the graphs are compared); "stock": LangChain's
    #: `ChatOpenAI` as the peer ships with it (what the lean client itself saves).
    client: str = "lean"

    def __init__(self, agent: Any, stack: AsyncExitStack, db: Path) -> None:
        self.agent = agent
        self._stack = stack
        self._db = db

    @classmethod
    async def start(cls, llm: ScriptedOpenAI, root: Path, tool_schemas: Sequence[dict[str, Any]],
                    client: str | None = None, system_prompt: str = "") -> Peer:
        from langchain.agents import create_agent
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        settings = settings_for(llm)
        root.mkdir(parents=True, exist_ok=True)
        stack = AsyncExitStack()
        db = root / "peer-checkpoints.db"
        saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(db)))
        await saver.setup()
        await tune_sqlite(saver)  # the same checkpointer settings as ours
        tools: list[Any] = [peer_time_tool() if s["function"]["name"] == "time" else s for s in tool_schemas]
        agent = create_agent(peer_model(settings, client or cls.client, stack), tools,
                             system_prompt=system_prompt or settings.bot.system_prompt,
                             checkpointer=saver)
        return cls(agent, stack, db)

    async def turn(self, text: str, session: str = SESSION) -> str:
        kw = {"durability": self.durability} if self.durability else {}
        out = await self.agent.ainvoke({"messages": [{"role": "user", "content": text}]},
                                       {"configurable": {"thread_id": session}}, **kw)
        return str(out["messages"][-1].content)

    @property
    def checkpoint_db(self) -> Path:
        return self._db

    async def close(self) -> None:
        await self._stack.aclose()


def peer_model(settings: Settings, client: str, stack: AsyncExitStack) -> Any:
    """The peer's chat model; its HTTP pool is closed with `stack`."""
    if client == "lean":
        factory = ModelFactory(settings)
        stack.push_async_callback(factory.aclose)
        return factory.model()
    from langchain_openai import ChatOpenAI

    llm = settings.llm
    return ChatOpenAI(base_url=llm.base_url, api_key=llm.api_key, model=llm.model, timeout=llm.timeout_sec,
                      max_retries=llm.max_retries, temperature=llm.temperature, stream_usage=True)


def db_bytes(path: Path) -> int:
    """A SQLite file with its WAL (after the saver is closed the WAL is folded in and removed)."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def subgraph_share(path: Path) -> float:
    """The share of checkpoint payload bytes written by subgraphs (Ania's gate branches)."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT checkpoint_ns = '', SUM(LENGTH(checkpoint) + LENGTH(metadata)) FROM checkpoints "
                          "GROUP BY checkpoint_ns = ''").fetchall()
    total = sum(n or 0 for _, n in rows)
    return sum(n or 0 for root, n in rows if not root) / total if total else 0.0


async def timed(coro: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = await coro
    return time.perf_counter() - t0, out


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float], scale: float = 1000.0) -> str:
    """`median [min-max]`, scaled (seconds to ms by default)."""
    if not values:
        return "-"
    return f"{median(values) * scale:.2f} [{min(values) * scale:.2f}-{max(values) * scale:.2f}]"


def prefix_stable(requests: Sequence[Recorded]) -> tuple[int, int]:
    """(stable, pairs) over consecutive requests of one session: N+1's messages start with N's
    messages (each message byte for byte) and the tools arrays are byte-identical."""
    dumped = [([json.dumps(m, ensure_ascii=False) for m in r.messages], json.dumps(r.tools)) for r in requests]
    stable = 0
    for (msgs, tools), (nxt, nxt_tools) in itertools.pairwise(dumped):
        stable += nxt[: len(msgs)] == msgs and tools == nxt_tools
    return stable, max(0, len(dumped) - 1)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[_fmt(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def kib(n: int) -> str:
    return f"{n / 1024:.0f} KiB"
