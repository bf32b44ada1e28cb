"""The services a run can reach, built once by the composition root (ania/compose.py) and passed in
through the run context. Nothing here is a module global."""

from __future__ import annotations

from dataclasses import dataclass

from services.admins import Admins
from services.approvals import Approvals
from services.config import Paths, Settings
from services.hooks.types import HookRunner
from services.images import ImageShelf
from services.llm import ModelFactory, VisionDescriber
from services.mcp import MCPManager
from services.outboxes import Outboxes
from services.plan_mode import PlanMode
from services.sessions import SessionRegistry
from services.store import AppStore
from services.todos import TodoStore
from tools.registry import SharedExecutor


@dataclass(frozen=True)
class Services:
    settings: Settings
    paths: Paths
    admins: Admins
    store: AppStore
    shared_tools: SharedExecutor
    sessions: SessionRegistry
    llm: ModelFactory
    hooks: HookRunner
    mcp: MCPManager
    outboxes: Outboxes
    approvals: Approvals
    plan_mode: PlanMode
    todos: TodoStore
    #: Images for a model without vision are described by this one (vision.*); images a session saw, by ref.
    vision: VisionDescriber
    images: ImageShelf
