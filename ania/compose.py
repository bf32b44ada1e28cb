"""The composition root: every service is built here, once, for the engine, Studio and the tests alike.

Nothing else constructs a service. What differs between callers is passed in: the local admins (the
terminal's own user, Studio), a hook runner or handlers, a shorter approval timeout in tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from ania.clock import ClockRunner
from ania.subagents import SubagentRunner
from core.registry import SharedExecutor
from core.settings import Paths, Settings
from core.tool import AnyTool
from services.clock import ClockService
from services.clock.zones import local_zone
from services.cluster import open_signals
from services.commands import CommandStore
from services.configure.edit import ConfigEditor
from services.container import Services
from services.datadir import BOT_LOCK, make_private
from services.flow import Inbox
from services.gates.admins import Admins
from services.gates.approvals import Approvals
from services.gates.approvals_shared import SharedQuestions
from services.gates.plan_mode import PlanMode
from services.hooks import HookManager, HookRunner
from services.images import ImageShelf
from services.knowledge import KnowledgeService
from services.llm import CallLimiter, ModelFactory, VisionDescriber
from services.mcp import MCPManager
from services.outboxes import Outboxes
from services.persona import load_persona
from services.recall import Recall
from services.sessions import SessionRegistry
from services.skills import Root, SkillInstaller, SkillRegistry
from services.store import open_store
from services.subagents import Subagents
from services.teams import TeamStore
from services.todos import TodoStore
from services.usage import QueryLog, Quota
from tools.bash import bash_tools
from tools.chat import chat_tools
from tools.clock import clock_tools
from tools.config import config_tools
from tools.files import file_tools
from tools.knowledge import knowledge_tools
from tools.mcp import RemoteTool, engine_tools
from tools.meme import MemeTool
from tools.memory import memory_tools
from tools.skills import skill_tools
from tools.subagent import SubagentRunTool
from tools.team import team_tools
from tools.time_tool import TimeTool
from tools.todo import TodoWriteTool
from tools.web import web_tools

#: The skills shipped with the bot: the repository's `skills/` folder.
SHIPPED_SKILLS = Path(__file__).resolve().parent.parent / "skills"


def builtin_tools(settings: Settings, paths: Paths) -> list[AnyTool]:
    """The always-on built-ins and the ones behind config (T5)."""
    clock_zone = local_zone(settings.clock.timezone).key
    tools: list[AnyTool] = [TimeTool(), TodoWriteTool(), SubagentRunTool(), *team_tools(), *clock_tools(clock_zone),
                         *bash_tools(settings, paths.data_dir, paths.config_dir), *skill_tools(settings),
                         *config_tools(), *chat_tools(), *web_tools(), MemeTool(), *file_tools(settings)]
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
    outboxes: Outboxes | None = None,
    role: str = "all",
) -> Services:
    """Build every service; whatever needs closing is registered on `stack` (closed in reverse order).
    `outboxes` carries the attached platforms over a /reboot."""
    make_private(paths.data_dir)  # before anything is created there: the stores hold every chat
    store = open_store(paths.data_dir, settings.cluster.postgres_url)
    stack.callback(store.close)
    signals = await open_signals(store, settings.cluster.postgres_url)
    stack.push_async_callback(signals.aclose)
    questions = SharedQuestions(store, signals) if signals.shared else None  # approvals across processes
    if questions is not None:
        stack.push_async_callback(questions.aclose)
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
    outboxes = outboxes if outboxes is not None else Outboxes()
    subagents = Subagents()
    skills = SkillRegistry([Root(SHIPPED_SKILLS, "shipped"), Root(paths.data_dir / "skills", "installed")],
                           settings.skills.enabled)
    await skills.reload()
    commands = CommandStore(paths.config_dir, store)
    knowledge = build_knowledge(paths, settings)
    stack.push_async_callback(knowledge.aclose)
    queries = QueryLog(store, settings.logs)
    if role == "all":  # in a cluster another host's pid means nothing here: the gateway's sweep settles
        queries.interrupt_running()
    return Services(
        settings=settings, paths=paths, admins=admins, store=store, signals=signals, shared_tools=shared,
        sessions=sessions, llm=llm, limiter=CallLimiter(settings.llm.max_concurrent_calls),
        hooks=hooks if hooks is not None else HookManager(paths.config_dir, hook_handlers), mcp=mcp,
        outboxes=outboxes,
        approvals=Approvals(settings, admins, outboxes.send, timeout_sec=approval_timeout_sec, shared=questions),
        plan_mode=PlanMode(store), todos=TodoStore(store), teams=TeamStore(store), subagents=subagents,
        clock=ClockService(store, settings, outboxes, subagents, paths.data_dir / BOT_LOCK),
        skills=skills, skill_installer=SkillInstaller(skills, paths.data_dir / "skills", settings.skills, store),
        commands=commands, persona=load_persona(paths.config_dir, settings),
        config=ConfigEditor(paths, settings, store, commands), knowledge=knowledge,
        recall=Recall(settings, knowledge),
        vision=vision, images=ImageShelf(),
        quota=Quota(settings.quota, store, admins.is_admin), queries=queries, inbox=Inbox(store),
    )


def bind_subagents(services: Services, checkpointer: Any, stack: AsyncExitStack) -> None:
    """Attach the subagent and team graphs to `services.subagents` (A1-A4); finished runs are kept on
    `checkpointer`, and closing `stack` waits until they are."""
    settings = services.settings
    runner = SubagentRunner(checkpointer, lambda: settings.agent.context_tokens, stock=settings.engine.stock)
    services.subagents.bind(runner)
    stack.push_async_callback(runner.aclose)


def bind_clock(services: Services, checkpointer: Any, stack: AsyncExitStack) -> None:
    """Attach the clock graph to `services.clock` (C3); each run is checkpointed on `checkpointer`. Closing
    `stack` stops the clock first (registered last), while the model and the checkpointer are still open."""
    services.clock.bind(ClockRunner(services, checkpointer, lambda: services.settings.agent.context_tokens))
    stack.push_async_callback(services.clock.stop)
