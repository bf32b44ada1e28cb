"""The gates before and around a tool call, listed once: their order, what each runs, which may pause.

Both ways a call takes through them are built from `GATES`: the gate graph (graphs/gate.py: a node per
gate, for a call that may pause, so an approval resumes at its gate) and the in-process walk
(nodes/tool_call.py `walk_gates`, for every other call). The order is fixed, cheapest first and the
human asked last:

    plan_mode → pre_tool_hooks → admin_approval → human_approval → execute → post_tool_hooks
        (a gate before execute blocks, or the call is invalid) ──▶ emit

The first gate is every call's entry; of the others a call goes only through those with work for it
(`route_of`, kept in the state as `route`); the last one that runs writes the ToolMessage.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END

from nodes.checked import ResolvedCall
from nodes.execute import execute_call
from nodes.gates import (
    admin_approval,
    human_approval,
    needed_admin_approval,
    needed_human_approval,
    needed_post_tool_hooks,
    needed_pre_tool_hooks,
    plan_mode,
    post_tool_hooks,
    pre_tool_hooks,
)
from nodes.state import GateState
from services.context import RunContext

Gate = Callable[[GateState, RunContext, ResolvedCall], Awaitable[dict[str, Any]]]
Needed = Callable[[ResolvedCall, RunContext], Awaitable[bool]]


@dataclass(frozen=True)
class GateSpec:
    """One gate: its node name, what it runs, whether a call has work for it (None: every call does), and
    whether it may pause for an answer (an approval, or a PreToolUse hook answering "ask")."""

    name: str
    run: Gate
    needed: Needed | None = None
    may_pause: bool = False


GATES: tuple[GateSpec, ...] = (
    GateSpec("plan_mode", plan_mode),
    GateSpec("pre_tool_hooks", pre_tool_hooks, needed_pre_tool_hooks, may_pause=True),
    GateSpec("admin_approval", admin_approval, needed_admin_approval, may_pause=True),
    GateSpec("human_approval", human_approval, needed_human_approval, may_pause=True),
    GateSpec("execute", execute_call),
    GateSpec("post_tool_hooks", post_tool_hooks, needed_post_tool_hooks),
)
#: The step that runs the call: a gate before it that blocks, or gives the result, ends the branch at `EMIT`.
EXECUTE = "execute"
#: Writes a blocked (or invalid) call's ToolMessage (nodes/execute.py `emit`); not a gate.
EMIT = "emit"
ORDER = tuple(g.name for g in GATES)
#: What each gate runs, by name: the walk and the graph's nodes both look a gate up here.
STEPS: dict[str, Gate] = {g.name: g.run for g in GATES}
_PAUSING = frozenset(g.name for g in GATES if g.may_pause)
_BEFORE_EXECUTE = frozenset(ORDER[: ORDER.index(EXECUTE)])
_LAST = ORDER[-1]


async def route_of(resolved: ResolvedCall, ctx: RunContext) -> list[str]:
    """The gates after the entry gate that have work for this call, in their order (the others are skipped)."""
    return [g.name for g in GATES[1:] if g.needed is None or await g.needed(resolved, ctx)]


def may_pause(route: list[str]) -> bool:
    """Whether the route passes a gate that may pause (then the call runs in the gate graph)."""
    return not _PAUSING.isdisjoint(route)


def next_step(after: str, state: GateState) -> str:
    """Where a call goes after the step `after`: emit a block, the next gate on its route, or the end."""
    if after in (_LAST, EMIT):
        return END
    if state.get("blocked") or (after in _BEFORE_EXECUTE and state.get("result")):
        return EMIT
    route = state.get("route", ())
    return next((name for name in ORDER[ORDER.index(after) + 1:] if name in route), END)


def destinations(after: str) -> list[str]:
    """Every step `next_step` can choose after the gate `after` (the graph's edges): the later gates up to
    and including the next one every call passes, else the end; and emit, before the call runs."""
    out: list[str] = []
    for gate in GATES[ORDER.index(after) + 1:]:
        out.append(gate.name)
        if gate.needed is None:
            break
    else:
        out.append(END)
    return [*out, EMIT] if after in _BEFORE_EXECUTE else out
