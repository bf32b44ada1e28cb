"""Subagents and team runs (A1-A4): what a run is asked and returns, its time budget, and the runner seam.

The run itself is a graph (graphs/subagent.py, graphs/team.py), which a tool in layer 2 cannot import.
So tools and nodes reach it through `Subagents`, a service the composition root binds to the runner
(ania/subagents.py) once the checkpointer is open. A later clock issue uses the same seam.

The time budget (A3) is decided here, before anything runs: the requested seconds are clamped as
integers (a huge or negative value never becomes a float or a duration), then shrunk to the parent's
remaining time less a reserve for the parent's own reply; with too little left the call is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from services.config import SubagentSettings
from services.errors import ToolError
from services.teams import Team
from tools.base import Tool

SubagentKind = Literal["subagent", "team_member"]
#: How a run ended: it answered, it failed (model error, bug), its time ran out, it hit its round limit, or the
#: daily token quota stopped it before a model call.
SubagentStatus = Literal["ok", "failed", "timeout", "max_rounds", "quota"]

#: Never offered to a subagent or team member: no recursion (nor a clock run's async subagent tools), and the
#: todo list is the main session's.
NOT_FOR_SUBAGENTS = frozenset({"subagent_cancel", "subagent_list", "subagent_run", "team_delete", "team_list",
                               "team_run", "team_save", "todo_write"})

NO_TIME = ("Not started: only {left:.0f} s of this message's time budget are left and {reserve} s are kept for "
           "your reply (subagent.parent_reserve_sec); answer without it.")
NOT_AVAILABLE = "subagents are not available in this process (no runner is bound)"
CUT = "\n[cut: {cut} of {total} characters not shown (subagent.max_result_len)]"
CLAMPED = "[timeout_sec {asked} is outside 1..{max}; {used} was used]\n"
STATUS_WORDS: dict[str, str] = {"ok": "ok", "failed": "failed", "timeout": "timed out after {budget:g} s",
                                "max_rounds": "stopped at its round limit",
                                "quota": "stopped: daily token quota reached"}


def admit(ctx: Any) -> None:
    """Raise the refusal of a subagent or team call over `subagent.max_calls_per_round` or
    `max_calls_per_message` (services/usage/limits.py); `ctx` is the caller's RunContext."""
    if ctx.limits is not None:
        ctx.limits.admit(ctx.call_id, ctx.services.settings.subagent.max_calls_per_message)


def clamp_timeout(requested: int | None, settings: SubagentSettings) -> int:
    """Seconds as an integer in 1..max_timeout_sec (clamped before any conversion: no overflow)."""
    if requested is None:
        return min(settings.default_timeout_sec, settings.max_timeout_sec)
    return min(max(int(requested), 1), settings.max_timeout_sec)


def budget(requested: int | None, settings: SubagentSettings, remaining: float | None) -> float:
    """The run's budget in seconds: the clamped request, shrunk to the parent's remaining time less the
    reserve. `remaining` None means the parent has no deadline. Raises ToolError when too little is left."""
    seconds = float(clamp_timeout(requested, settings))
    if remaining is None:
        return seconds
    left = remaining - settings.parent_reserve_sec
    if left < settings.min_budget_sec:
        raise ToolError(NO_TIME.format(left=max(0.0, remaining), reserve=settings.parent_reserve_sec))
    return min(seconds, left)


def clamp_note(requested: int | None, settings: SubagentSettings) -> str:
    """A line that tells the model its timeout_sec was clamped ("" when it was not)."""
    used = clamp_timeout(requested, settings)
    if requested is None or requested == used:
        return ""
    return CLAMPED.format(asked=requested, max=settings.max_timeout_sec, used=used)


def cut(text: str, limit: int) -> str:
    """At most `limit` runes, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + CUT.format(cut=len(text) - limit, total=len(text))


@dataclass(frozen=True)
class SubagentRequest:
    """One run: the task, the budget (already decided by `budget`), and who it is."""

    task: str
    budget_sec: float
    kind: SubagentKind = "subagent"
    #: A team member's role prompt ("" for a plain subagent).
    role: str = ""
    #: Who it is in logs, approval prompts and result lines.
    label: str = "subagent"
    #: Tool rounds; None = `subagent.max_rounds`.
    max_rounds: int | None = None
    #: Names its thread `<session>/sub/<run_id>`; "" = a new id.
    run_id: str = ""
    #: The tools it gets; None = the parent's, less NOT_FOR_SUBAGENTS.
    tools: tuple[Tool[Any], ...] | None = None


@dataclass(frozen=True)
class SubagentResult:
    text: str
    status: SubagentStatus
    duration_sec: float
    budget_sec: float
    thread_id: str
    usage: Mapping[str, int] = field(default_factory=dict)

    def meta(self) -> str:
        """The run-metadata line: status, duration, model calls, tokens."""
        word = STATUS_WORDS[self.status].format(budget=round(self.budget_sec, 1))
        calls = int(self.usage.get("requests", 0))
        seconds = f"{self.duration_sec:.1f}" if self.duration_sec >= 1 else f"{self.duration_sec:.2f}"
        return (f"{word}, {seconds} s, {calls} model call{'' if calls == 1 else 's'}, "
                f"{int(self.usage.get('total_tokens', 0))} tokens")

    def render(self, label: str, limit: int) -> str:
        return f"[{label} {self.meta()}]\n{cut(self.text, limit)}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "usage": dict(self.usage)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SubagentResult:
        return cls(text=str(d["text"]), status=d["status"], duration_sec=float(d["duration_sec"]),
                   budget_sec=float(d["budget_sec"]), thread_id=str(d["thread_id"]), usage=dict(d.get("usage") or {}))


@dataclass(frozen=True)
class TeamRunRequest:
    team: Team
    task: str
    budget_sec: float
    run_id: str = ""


class SubagentRunner(Protocol):
    """What the runtime binds (ania/subagents.py). `parent` is the caller's RunContext (typed loosely: the
    run context carries the services, so naming it here would be an import cycle). Every run adds the
    tokens it spent to `parent.usage` when it ends, so the caller's turn counts them exactly once."""

    async def run(self, parent: Any, request: SubagentRequest) -> SubagentResult: ...

    async def run_team(self, parent: Any, request: TeamRunRequest) -> str: ...

    async def flush(self) -> None:
        """Wait until every finished run is stored where Studio and `ania sessions show` read it."""
        ...


class Subagents:
    """The seam tools and nodes call; `bind` attaches the runner once the graphs are built."""

    def __init__(self) -> None:
        self._runner: SubagentRunner | None = None

    def bind(self, runner: SubagentRunner) -> None:
        self._runner = runner

    @property
    def runner(self) -> SubagentRunner:
        if self._runner is None:
            raise ToolError(NOT_AVAILABLE)
        return self._runner

    async def run(self, parent: Any, request: SubagentRequest) -> SubagentResult:
        return await self.runner.run(parent, request)

    async def run_team(self, parent: Any, request: TeamRunRequest) -> str:
        return await self.runner.run_team(parent, request)

    async def flush(self) -> None:
        if self._runner is not None:
            await self._runner.flush()
