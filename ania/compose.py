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
from services.images import ImageShelf
from services.llm import ModelFactory, VisionDescriber
from services.mcp import MCPManager
from services.outboxes import Outboxes
from services.plan_mode import PlanMode
from services.sessions import SessionRegistry
from services.store import AppStore
from services.todos import TodoStore
from tools.base import Tool
from tools.bash import bash_tools
from tools.chat import chat_tools
from tools.files import file_tools
from tools.mcp import RemoteTool, engine_tools
from tools.meme import MemeTool
from tools.registry import SharedExecutor
from tools.time_tool import TimeTool
from tools.todo import TodoWriteTool
from tools.web import web_tools


def builtin_tools(settings: Settings, paths: Paths) -> list[Tool]:
    """The always-on built-ins and the ones behind config (T5)."""
    return [TimeTool(), TodoWriteTool(), *bash_tools(settings, paths.data_dir, paths.config_dir),
            *chat_tools(), *web_tools(), MemeTool(), *file_tools(settings)]


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
    vision = VisionDescriber(settings)
    stack.push_async_callback(vision.aclose)
    admins = Admins(settings, local_admins)
    outboxes = Outboxes()
    return Services(
        settings=settings, paths=paths, admins=admins, store=store, shared_tools=shared, sessions=sessions,
        llm=llm, hooks=hooks if hooks is not None else HookManager(paths.config_dir, hook_handlers), mcp=mcp,
        outboxes=outboxes, approvals=Approvals(settings, admins, outboxes.send, timeout_sec=approval_timeout_sec),
        plan_mode=PlanMode(store), todos=TodoStore(store), vision=vision, images=ImageShelf(),
    )
