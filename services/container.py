"""The services a run can reach, built once by the composition root (ania/compose.py) and passed in
through the run context. Nothing here is a module global."""

from __future__ import annotations

from dataclasses import dataclass

from core.registry import SharedExecutor
from core.settings import Paths, Settings
from services.clock import ClockService
from services.cluster import Signals
from services.commands import CommandStore
from services.configure.edit import ConfigEditor
from services.flow import Inbox
from services.gates.admins import Admins
from services.gates.approvals import Approvals
from services.gates.plan_mode import PlanMode
from services.hooks.types import HookRunner
from services.images import ImageShelf
from services.knowledge import KnowledgeService
from services.llm import CallLimiter, ModelFactory, VisionDescriber
from services.mcp import MCPManager
from services.outboxes import Outboxes
from services.persona import Persona
from services.recall import Recall
from services.sessions import SessionRegistry
from services.skills import SkillInstaller, SkillRegistry
from services.store import AppStore
from services.subagents import Subagents
from services.teams import TeamStore
from services.todos import TodoStore
from services.usage import QueryLog, Quota


@dataclass(frozen=True)
class Services:
    settings: Settings
    paths: Paths
    admins: Admins
    store: AppStore
    #: Signals to the other processes sharing the store (Postgres), or to this one alone (SQLite): /stop of a
    #: chat whose turn runs elsewhere, approvals answered elsewhere (services/cluster/signals.py).
    signals: Signals
    shared_tools: SharedExecutor
    sessions: SessionRegistry
    llm: ModelFactory
    #: Every chat-model request holds one of its slots while it is out (llm.max_concurrent_calls), round robin by chat.
    limiter: CallLimiter
    hooks: HookRunner
    mcp: MCPManager
    outboxes: Outboxes
    approvals: Approvals
    plan_mode: PlanMode
    todos: TodoStore
    #: Saved teams, and the seam to the subagent and team runner (bound once the graphs are built).
    teams: TeamStore
    subagents: Subagents
    #: Scheduled tasks (C1-C7); it fires only once `start()` is called (ania chat), its runs go through the
    #: runner bound with the checkpointer (ania/compose.py `bind_clock`).
    clock: ClockService
    #: Skills (S1-S4), custom commands (G8), the system prompt's base (prompt.json), config editing (T8).
    skills: SkillRegistry
    skill_installer: SkillInstaller
    commands: CommandStore
    persona: Persona
    config: ConfigEditor
    #: The knowledge base and long-term memory (K1-K5), Chroma opened at first use.
    knowledge: KnowledgeService
    #: What of the knowledge base and memory each new message is about, quoted into it (F3, nodes/recall.py).
    recall: Recall
    #: Images for a model without vision are described by this one (vision.*); images a session saw, by ref.
    vision: VisionDescriber
    images: ImageShelf
    #: Daily token quotas (Q1) and the query log (Q3).
    quota: Quota
    queries: QueryLog
    #: Messages taken and not yet accounted for by a query-log row (issue 26; services/flow/inbox.py).
    inbox: Inbox
