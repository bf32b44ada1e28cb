"""The graphs LangGraph Studio / `langgraph dev` loads (listed in langgraph.json, D4).

Compiled without a checkpointer: the server brings the one langgraph.json names, the bot's own
`data/checkpoints.db` (ania/studio_checkpointer.py), so `ania sessions studio KEY` can open a bot session
here. Importing this module reads no model configuration: the first run builds one engine from
`ANIA_CONFIG_DIR` / `ANIA_DATA_DIR` (the only place that does so lazily) and gives each run a context for
its thread, as the local admin "studio". Approvals pause as interrupts; resume them with "allow" or
"deny" from Studio or the HTTP API (logged as answered by "studio"). With several approvals pending,
resume each by its interrupt id: `{"resume": {"<id>": "allow", "<other id>": "deny"}}` (LangGraph
refuses a bare "allow" then). The interrupt's value is an `ApprovalRequest` and a resume value an `Answer`
(services/gates/approval_types.py; docs/ARCHITECTURE.md, "The approval protocol"). Since every run is the
local admin's, the server answers only Studio's web app, pages on localhost and clients without an Origin
(ania/studio_http.py, langgraph.json `http.app`).

`langgraph dev` moves to another port when the one asked for is taken, and says so only in a log line
among many; loading this module prints the URL the server really serves on (`LANGGRAPH_API_URL`, which
`langgraph dev` sets before it loads the graphs) as one plain line on stderr. The subagent, team and
clock graphs are here too; a subagent started by a tool inside a Studio run is stored on the
engine's checkpointer (data/checkpoints.db), not Studio's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import replace

from langchain_core.runnables import RunnableConfig

from ania.engine import Engine
from ania.engine_mode import stock_mode
from ania.platforms.bridge import ChatBridge, ClockBridge, SubagentBridge
from ania.studio_checkpointer import STUDIO_THREAD
from core.registry import SessionExecutor, SharedExecutor
from core.settings import Paths
from graphs.agent import build_agent_graph
from graphs.clock import build_clock_graph
from graphs.gate import build_gate_graph
from graphs.subagent import build_subagent_graph
from graphs.team import build_team_graph
from nodes.clock import NOT_FOR_CLOCK
from nodes.subagent import subagent_executor
from services.context import RunContext
from services.subagents import SubagentRequest

log = logging.getLogger("ania.studio")
STUDIO_USER = "studio"
STUDIO_UI = "https://smith.langchain.com/studio/?baseUrl={url}"
ANNOUNCED = "ANIA_STUDIO_URL"
SERVED_AT = "Ania: graphs agent, gate, subagent, team and clock served at {url} (Studio: {ui})\n"


class _Lazy:
    """Holds the one engine of a Studio server process."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Engine:
        async with self._lock:
            if self.engine is None:
                self.engine = await Engine.start(local_admins=(STUDIO_USER,))
            return self.engine

    def context_tokens(self) -> int:
        return self.engine.services.settings.agent.context_tokens if self.engine else 60000


_lazy = _Lazy()


async def _studio_context(config: RunnableConfig) -> RunContext:
    engine = await _lazy.get()
    thread = str(config.get("configurable", {}).get("thread_id") or "studio")
    # A bot session copied with `ania sessions studio KEY` acts as that session (group rules, plan mode, tools).
    thread = str(engine.services.store.kv_get(f"{STUDIO_THREAD}{thread}", thread))

    async def send(text: str) -> None:
        log.info("[%s] %s", thread, text)

    bridge = ChatBridge(send, engine.services.paths.data_dir / "outbox" / "studio")
    return engine.context(thread, STUDIO_USER, bridge)


async def _studio_subagent_context(config: RunnableConfig) -> RunContext:
    """A subagent as subagent_run makes one: no requester, no recursion tools, a bridge that drops text."""
    ctx = await _studio_context(config)
    executor = subagent_executor(ctx, SubagentRequest(task="", budget_sec=0))
    return replace(ctx, requester="", agent_kind="subagent", executor=executor,
                   bridge=SubagentBridge(ctx.bridge, "subagent"))


async def _studio_clock_context(config: RunnableConfig) -> RunContext:
    """A clock run as the clock makes one (no requester, a bridge that drops text, the thread as its target
    chat), with the blocking subagent_run: Studio runs no scheduler, so nothing would drain async ones."""
    ctx = await _studio_context(config)
    tools = [t for t in ctx.executor.tools() if t.name not in NOT_FOR_CLOCK - {"subagent_run"}]
    services = ctx.services
    outbox = services.paths.data_dir / "outbox" / "studio"
    bridge = ClockBridge(services.outboxes.send, ctx.session_key, outbox, "clock", services.outboxes.media)
    executor = SessionExecutor(SharedExecutor(tools))
    return replace(ctx, requester="", agent_kind="clock", executor=executor, bridge=bridge)


#: engine.stock, read once: the graphs' state schemas depend on it (the engine checks it again at its start).
_STOCK = stock_mode(Paths.from_env().config_dir)
agent = build_agent_graph(_lazy.context_tokens, context_factory=_studio_context, stock=_STOCK, name="agent")
#: One tool call through the gates on its own; input: {"call": {"id": "c1", "name": "time", "args": {}}}.
gate = build_gate_graph(_studio_context)
#: A one-shot subagent; input: {"messages": [{"role": "user", "content": "<the task>"}], "max_rounds": 5}.
subagent = build_subagent_graph(_lazy.context_tokens, context_factory=_studio_subagent_context, stock=_STOCK,
                                name="subagent")
#: A team run; input: {"team": {"name": ..., "purpose": ..., "members": [{"name", "role"}]}, "task": ...}.
#: Its members run on the engine's own checkpointer (`ania sessions show <thread>/sub/<run id>-<n>`).
team = build_team_graph(context_factory=_studio_context, name="team")
#: One run of a scheduled task; input: {"messages": [{"role": "user", "content": "<the task>"}]}. Its final reply
#: is delivered to the thread id as a chat (logged when no platform owns it); no scheduler runs in Studio.
clock = build_clock_graph(_lazy.context_tokens, context_factory=_studio_clock_context, stock=_STOCK, name="clock")


def _announce() -> None:
    """Once per server process: `langgraph dev` executes this file once per graph of langgraph.json."""
    url = os.environ.get("LANGGRAPH_API_URL")
    if url and os.environ.get(ANNOUNCED) != url:
        os.environ[ANNOUNCED] = url
        sys.stderr.write(SERVED_AT.format(url=url, ui=STUDIO_UI.format(url=url)))
        sys.stderr.flush()


_announce()
