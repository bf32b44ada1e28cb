"""The composition root: every service is built here, once, for the engine, Studio and the tests alike.

Nothing else constructs a service. What differs between callers is passed in: the local admins (the
terminal's own user, Studio), a hook runner or handlers, a shorter approval timeout in tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from services.admins import Admins
from services.approvals import Approvals
from services.config import Paths, Settings
from services.container import Services
from services.hooks import HookManager, HookRunner
from services.knowledge import KnowledgeService
from services.llm import ModelFactory
from services.mcp import MCPManager
from services.outboxes import Outboxes
from services.plan_mode import PlanMode
from services.sessions import SessionRegistry
from services.store import AppStore
from services.todos import TodoStore
from tools.base import Tool
from tools.bash import bash_tools
from tools.knowledge import knowledge_tools
from tools.mcp import RemoteTool, engine_tools
from tools.memory import memory_tools
from tools.registry import SharedExecutor
from tools.time_tool import TimeTool
from tools.todo import TodoWriteTool


def builtin_tools(settings: Settings, paths: Paths) -> list[Tool]:
    """The always-on built-ins and the ones behind config (T5)."""
    tools: list[Tool] = [TimeTool(), TodoWriteTool(), *bash_tools(settings, paths.data_dir, paths.config_dir)]
    if settings.knowledge.enable:
        tools += [*knowledge_tools(), *memory_tools()]
    return tools


def build_knowledge(paths: Paths, settings: Settings) -> KnowledgeService:
    """The knowledge base and memory (also built alone by `ania kb`); Chroma opens at its first use."""
    return KnowledgeService(settings, paths.data_dir)


async def build_services(
    paths: Paths,
    settings: Settings,
    stack: AsyncExitStack,
    *,
    local_admins: Iterable[str] = (),
    hooks: HookRunner | None = None,
    hook_handlers: Sequence[Any] = (),
    approval_timeout_sec: float | None = None,
) -> Services:
    """Build every service; whatever needs closing is registered on `stack` (closed in reverse order)."""
    store = AppStore(paths.data_dir / "ania.db")
    stack.callback(store.close)
    shared = SharedExecutor(builtin_tools(settings, paths))
    sessions = SessionRegistry(shared)
    mcp = MCPManager(paths.config_dir, settings, store, shared, sessions, RemoteTool)
    stack.push_async_callback(mcp.close)
    await mcp.start()
    shared.add(engine_tools(mcp))
    llm = ModelFactory(settings)
    stack.push_async_callback(llm.aclose)
    admins = Admins(settings, local_admins)
    outboxes = Outboxes()
    knowledge = build_knowledge(paths, settings)
    stack.push_async_callback(knowledge.aclose)
    return Services(
        settings=settings, paths=paths, admins=admins, store=store, shared_tools=shared, sessions=sessions,
        llm=llm, hooks=hooks if hooks is not None else HookManager(paths.config_dir, hook_handlers), mcp=mcp,
        outboxes=outboxes, approvals=Approvals(settings, admins, outboxes.send, timeout_sec=approval_timeout_sec),
        plan_mode=PlanMode(store), todos=TodoStore(store), knowledge=knowledge,
    )
