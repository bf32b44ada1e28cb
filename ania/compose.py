"""The composition root: every service is built here, once, for the engine, Studio and the tests alike.

Nothing else constructs a service. What differs between callers is passed in: the local admins (the
terminal's own user, Studio), a hook runner or handlers, a shorter approval timeout in tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from ania.subagents import SubagentRunner
from services.admins import Admins
from services.approvals import Approvals
from services.commands import CommandStore
from services.config import Paths, Settings
from services.config_edit import ConfigEditor
from services.container import Services
from services.hooks import HookManager, HookRunner
from services.llm import ModelFactory
from services.mcp import MCPManager
from services.outboxes import Outboxes
from services.persona import load_persona
from services.plan_mode import PlanMode
from services.sessions import SessionRegistry
from services.skills import Root, SkillInstaller, SkillRegistry
from services.store import AppStore
from services.subagents import Subagents
from services.teams import TeamStore
from services.todos import TodoStore
from services.usage import QueryLog, Quota
from tools.base import Tool
from tools.bash import bash_tools
from tools.config import config_tools
from tools.mcp import RemoteTool, engine_tools
from tools.registry import SharedExecutor
from tools.skills import skill_tools
from tools.subagent import SubagentRunTool
from tools.team import team_tools
from tools.time_tool import TimeTool
from tools.todo import TodoWriteTool

#: The skills shipped with the bot: the repository's `skills/` folder.
SHIPPED_SKILLS = Path(__file__).resolve().parent.parent / "skills"


def builtin_tools(settings: Settings, paths: Paths) -> list[Tool]:
    """The always-on built-ins and the ones behind config (T5)."""
    return [TimeTool(), TodoWriteTool(), SubagentRunTool(), *team_tools(),
            *bash_tools(settings, paths.data_dir, paths.config_dir), *skill_tools(settings), *config_tools()]


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
) -> Services:
    """Build every service; whatever needs closing is registered on `stack` (closed in reverse order).
    `outboxes` carries the attached platforms over a /reboot."""
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
    outboxes = outboxes if outboxes is not None else Outboxes()
    skills = SkillRegistry([Root(SHIPPED_SKILLS, "shipped"), Root(paths.data_dir / "skills", "installed")],
                           settings.skills.enabled)
    await skills.reload()
    commands = CommandStore(paths.config_dir, store)
    queries = QueryLog(store, settings.logs)
    queries.interrupt_running()
    return Services(
        settings=settings, paths=paths, admins=admins, store=store, shared_tools=shared, sessions=sessions,
        llm=llm, hooks=hooks if hooks is not None else HookManager(paths.config_dir, hook_handlers), mcp=mcp,
        outboxes=outboxes, approvals=Approvals(settings, admins, outboxes.send, timeout_sec=approval_timeout_sec),
        plan_mode=PlanMode(store), todos=TodoStore(store), teams=TeamStore(store), subagents=Subagents(),
        skills=skills, skill_installer=SkillInstaller(skills, paths.data_dir / "skills", settings.skills, store),
        commands=commands, persona=load_persona(paths.config_dir, settings),
        config=ConfigEditor(paths, settings, store, commands),
        quota=Quota(settings.quota, store, admins.is_admin), queries=queries,
    )


def bind_subagents(services: Services, checkpointer: Any, stack: AsyncExitStack) -> None:
    """Attach the subagent and team graphs to `services.subagents` (A1-A4); finished runs are kept on
    `checkpointer`, and closing `stack` waits until they are."""
    settings = services.settings
    runner = SubagentRunner(checkpointer, lambda: settings.agent.context_tokens)
    services.subagents.bind(runner)
    stack.push_async_callback(runner.aclose)
