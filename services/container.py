"""The services a run can reach, built once by the composition root (ania/engine.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from services.config import Paths, Settings
from services.hook_types import HookRunner, NoHooks
from services.sessions import SessionRegistry
from services.store import AppStore
from tools.executor import SharedExecutor

if TYPE_CHECKING:
    from services.llm import ModelFactory
    from services.mcp import MCPManager


@dataclass(frozen=True)
class Services:
    settings: Settings
    paths: Paths
    store: AppStore
    shared_tools: SharedExecutor
    sessions: SessionRegistry
    llm: "ModelFactory"
    hooks: HookRunner = field(default_factory=NoHooks)
    #: The MCP manager (services/mcp.py); None in runs built without one (some unit tests).
    mcp: "MCPManager | None" = None
