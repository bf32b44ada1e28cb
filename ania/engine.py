"""The composition root: builds every service once and runs turns of the agent graph.

`Engine.start` wires settings, stores, tools, hooks, MCP and the checkpointer; `run_turn` runs one
message through the graph, answering approval interrupts through `Approvals` until the turn ends.
Message entry (approval replies, slash commands, the per-session queue) is ania/entry.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from langchain_core.messages import AIMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from ania.recovery import settle
from checkpoints.factory import open_checkpointer, thread_config
from graphs.agent import build_agent_graph
from nodes.prompt import text_of, user_message
from services.approvals import Approvals
from services.config import Paths, Settings, load_settings
from services.container import Services
from services.hook_types import HookRunner
from services.hooks import HookManager
from services.llm import ModelFactory
from services.mcp import MCPManager
from services.sessions import SessionRegistry
from services.store import AppStore
from tools.bash import bash_tools
from tools.context import CallbackBridge, RunContext
from tools.executor import SharedExecutor
from tools.time_tool import TimeTool
from tools.todo import TodoWriteTool

log = logging.getLogger(__name__)

TURN_TIMEOUT = "Sorry, this took longer than {sec:g} s (bot.msg_event_timeout_sec) and was stopped."
TURN_FAILED = "Sorry, something went wrong on my side ({detail}); the error is in the log. Please try again."
#: Sends a text to a session's chat (the platform adapter provides it); False if it could not.
Outbox = Callable[[str, str], Awaitable[bool]]


@dataclass
class TurnResult:
    reply: str
    status: str
    usage: dict[str, int] = field(default_factory=dict)


async def _no_outbox(session_key: str, text: str) -> bool:
    log.info("no platform for %s: %s", session_key, text)
    return False


class Engine:
    def __init__(self, services: Services, graph: CompiledStateGraph, stack: AsyncExitStack,
                 approval_timeout_sec: float | None = None) -> None:
        self.services = services
        self.graph = graph
        self._stack = stack
        #: Set by the platform adapter: how to send a text to any session (approval prompts to admins).
        self.outbox: Outbox = _no_outbox
        self.approvals = Approvals(services.settings, self._notify, timeout_sec=approval_timeout_sec)
        #: Sessions whose last turn ended cleanly in this process: no dangling step to settle.
        self._clean: set[str] = set()

    async def _notify(self, session_key: str, text: str) -> bool:
        return await self.outbox(session_key, text)

    @classmethod
    async def start(
        cls,
        config_dir: Path | None = None,
        data_dir: Path | None = None,
        *,
        settings: Settings | None = None,
        hooks: HookRunner | None = None,
        hook_handlers: Sequence[Any] = (),
        approval_timeout_sec: float | None = None,
    ) -> "Engine":
        paths = Paths.from_env()
        paths = Paths(config_dir=Path(config_dir or paths.config_dir), data_dir=Path(data_dir or paths.data_dir))
        settings = settings or load_settings(paths.config_dir)
        stack = AsyncExitStack()
        try:
            store = AppStore(paths.data_dir / "ania.db")
            stack.callback(store.close)
            shared = SharedExecutor(builtin_tools(settings, paths))
            sessions = SessionRegistry(shared)
            hooks = hooks if hooks is not None else HookManager(paths.config_dir, hook_handlers)
            mcp = await start_mcp(paths, settings, store, shared, sessions, stack)
            llm = ModelFactory(settings)
            stack.push_async_callback(llm.aclose)
            services = Services(settings=settings, paths=paths, store=store, shared_tools=shared,
                                sessions=sessions, llm=llm, hooks=hooks, mcp=mcp)
            saver = await stack.enter_async_context(open_checkpointer(paths.data_dir))
            graph = build_agent_graph(lambda: settings.agent.context_tokens, checkpointer=saver)
        except BaseException:
            await stack.aclose()
            raise
        return cls(services, graph, stack, approval_timeout_sec)

    async def close(self) -> None:
        await self._stack.aclose()

    def context(self, session_key: str, user_id: str, bridge: CallbackBridge, kind: str = "main") -> RunContext:
        budget = self.services.settings.bot.msg_event_timeout_sec
        return RunContext(session_key=session_key, requester=user_id, bridge=bridge,
                          executor=self.services.sessions.executor(session_key), services=self.services,
                          agent_kind=kind, deadline=time.monotonic() + budget)

    async def run_turn(self, session_key: str, user_id: str, text: str, bridge: CallbackBridge) -> TurnResult:
        """One message → one reply (sent through the bridge). Never raises for endpoint or tool errors."""
        store = self.services.store
        if session_key not in self._clean:
            await settle(self.graph, session_key, store, "the previous turn did not finish (restart or stop)")
        self._clean.discard(session_key)
        ctx = self.context(session_key, user_id, bridge)
        budget = self.services.settings.bot.msg_event_timeout_sec
        try:
            result = await asyncio.wait_for(self._drive(ctx, text), budget)
        except asyncio.TimeoutError:
            await settle(self.graph, session_key, store, "the message's time budget ran out")
            result = TurnResult(TURN_TIMEOUT.format(sec=budget), "timeout")
        except asyncio.CancelledError:
            await asyncio.shield(settle(self.graph, session_key, store, "stopped with /stop"))
            raise
        except Exception as e:  # noqa: BLE001 - a bug in a step must still end the turn with a reply
            log.exception("turn of %s failed", session_key)
            await settle(self.graph, session_key, store, f"the turn failed ({type(e).__name__})")
            result = TurnResult(TURN_FAILED.format(detail=type(e).__name__), "error")
        self._clean.add(session_key)
        store.forget_started_calls(session_key)
        if result.reply:
            await bridge.send_text(result.reply)
        return result

    async def _drive(self, ctx: RunContext, text: str) -> TurnResult:
        config = thread_config(ctx.session_key)
        inp: Any = {"messages": [user_message(ctx.session_key, ctx.requester, text)]}
        while True:
            out = await self.graph.ainvoke(inp, config, context=ctx, durability="sync")
            interrupts = out.get("__interrupt__") or []
            if not interrupts:
                break
            answers = {}
            for intr in interrupts:  # one question at a time (Approvals also serializes per session)
                answers[intr.id] = await self.approvals.ask(intr.value)
            inp = Command(resume=answers)
        return TurnResult(reply=_reply_of(out), status=out.get("status", "ok"), usage=dict(out.get("turn_usage") or {}))


def _reply_of(state: dict[str, Any]) -> str:
    if state.get("reply"):
        return state["reply"]
    last = (state.get("messages") or [None])[-1]
    return text_of(last) if isinstance(last, AIMessage) else ""


def builtin_tools(settings: Settings, paths: Paths) -> list:
    """The always-on built-ins and the ones behind config (T5)."""
    return [TimeTool(), TodoWriteTool(), *bash_tools(settings, paths.data_dir, paths.config_dir)]


async def start_mcp(paths: Paths, settings: Settings, store: AppStore, shared: SharedExecutor,
                    sessions: SessionRegistry, stack: AsyncExitStack) -> Any:
    manager = MCPManager(paths.config_dir, settings, store, shared, sessions)
    await manager.start()
    stack.push_async_callback(manager.close)
    shared.add(manager.engine_tools())
    return manager
