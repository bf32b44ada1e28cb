"""Graph state: what is checkpointed. Live objects go in the run context (services/context.py).

The types are `typing_extensions.TypedDict`: pydantic (which LangGraph uses for the graphs' JSON schemas,
what Studio's input form reads) refuses `typing.TypedDict` before Python 3.12.

`messages` is a delta channel (checkpoints/delta.py): a checkpoint stores only the new messages of its
step, plus a full copy now and then, spaced in proportion to the history, so the checkpoint file grows
linearly with the conversation instead of with its square, as the stock full-snapshot-per-step storage
would. Its reducer is `fold_messages` (checkpoints/fold.py): `add_messages` once per write, in one pass.

With `engine.stock = true` the graphs take their state schema from `state_schema(cls, stock=True)`: the
same fields, with `messages` on LangGraph's own `DeltaChannel` (its fixed snapshot cadence) and LangGraph's
`add_messages` applied once per write. The stored format is LangGraph's either way, so each mode reads the
sessions the other stored (tests/test_stock_mode.py).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar, cast, get_type_hints

from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from checkpoints.delta import GrowingDeltaChannel
from checkpoints.fold import fold_messages

__all__ = ["USAGE_KEYS", "AgentState", "GateInput", "GateOutput", "GateState", "TurnStatus", "add_messages_per_write",
           "add_usage", "fold_messages", "state_schema", "usage_of"]

S = TypeVar("S")


USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "requests")
#: How the current message ended: it answered, an endpoint or step failed, it hit agent.max_rounds, a
#: hook blocked the prompt, or it was stopped (/stop, the time budget, a restart: set by recovery).
TurnStatus = Literal["ok", "error", "max_rounds", "blocked", "stopped", "quota"]


def usage_of(reply: BaseMessage) -> dict[str, int]:
    """The token counters of one model call (one request), as the usage channels add them up."""
    meta: Mapping[str, Any] = getattr(reply, "usage_metadata", None) or {}
    return {"input_tokens": int(meta.get("input_tokens", 0)), "output_tokens": int(meta.get("output_tokens", 0)),
            "total_tokens": int(meta.get("total_tokens", 0)), "requests": 1}


def add_usage(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int]:
    """Sum token counters; `None` resets (sent with each new message for the per-turn counter)."""
    if right is None:
        return {}
    out = dict(left or {})
    for k, v in right.items():
        out[k] = out.get(k, 0) + int(v)
    return out


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], GrowingDeltaChannel(fold_messages)]
    #: Token usage of the current message (reset when a message arrives) and of the whole session.
    turn_usage: Annotated[dict[str, int], add_usage]
    total_usage: Annotated[dict[str, int], add_usage]
    #: Tool rounds in the current message.
    rounds: int
    #: The id of the user message whose turn this is, once its turn has started (nodes/prepare.py).
    turn: str
    status: TurnStatus
    #: A reply that is not part of the history (e.g. a prompt blocked by a hook).
    reply: str


class GateState(TypedDict, total=False):
    """One tool call's trip through the gate pipeline (graphs/gate.py)."""

    call: dict[str, Any]
    #: The gates after the first that have work for this call (nodes/gate_list.py `route_of`, listed once).
    route: list[str]
    #: Set by the first gate that blocks; the text becomes the tool result.
    blocked: str
    #: Context texts hooks want the model to read with the result.
    notes: list[str]
    #: Set when a PreToolUse hook answered "ask": why a human must approve.
    hook_ask: str
    #: The admin who allowed a configuration change (the admin-approval gate); the tool logs it.
    approved_by: str
    result: dict[str, Any]
    messages: Annotated[list[AnyMessage], add_messages]
    #: Tokens the call spent outside the loop (a subagent, a team); folded into the turn's usage.
    turn_usage: Annotated[dict[str, int], add_usage]
    total_usage: Annotated[dict[str, int], add_usage]


class GateInput(TypedDict):
    """What a `Send` hands the tool-call node: just the call."""

    call: dict[str, Any]


class GateOutput(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turn_usage: Annotated[dict[str, int], add_usage]
    total_usage: Annotated[dict[str, int], add_usage]


class SubagentState(AgentState, total=False):
    """A subagent's or team member's one-shot run (graphs/subagent.py): the loop's state and its round limit."""

    max_rounds: int


class ClockState(AgentState, total=False):
    """One run of a scheduled task (graphs/clock.py): the loop's state plus the drain and synthesis (C7)."""

    #: The run's id: its async subagents are found by it (services.clock `background`).
    run_id: str
    #: Set once a drain handed subagent results to the agent: from then on each model call is a synthesis round.
    drained: bool
    #: Synthesis rounds so far (at most nodes/clock.py MAX_SYNTHESIS).
    synthesis: int
    #: Whether the last drain added results (then the model goes again).
    fed: bool
    #: Whether the final reply reached a platform.
    delivered: bool


class TeamState(TypedDict, total=False):
    """One team run (graphs/team.py). `team` is the saved definition (services/teams.py `Team.to_dict`)."""

    team: dict[str, Any]
    task: str
    #: Each member's time budget in seconds (decided by team_run; default subagent.default_timeout_sec).
    budget_sec: float
    run_id: str
    #: One entry per finished member (services/subagents.py `SubagentResult.to_dict` plus index and name).
    results: Annotated[list[dict[str, Any]], operator.add]
    #: The gathered answer team_run returns.
    summary: str


class MemberInput(TypedDict):
    """What a `Send` hands the member node: one member and the run it belongs to."""

    index: int
    member: dict[str, Any]
    team: dict[str, Any]
    task: str
    budget_sec: float
    run_id: str


def add_messages_per_write(state: Sequence[AnyMessage] | None, writes: Sequence[Any]) -> list[AnyMessage]:
    """The stock mode's message reducer: LangGraph's `add_messages`, once per write, in order (what
    `fold_messages` equals, without the one-pass copy)."""
    value: Any = list(state or [])
    for write in writes:
        value = add_messages(value, write)
    return cast(list[AnyMessage], value)


def state_schema(cls: type[S], stock: bool) -> type[S]:
    """`cls` (a state with `messages`), or with `stock` the same fields with the stock message channel."""
    if not stock:
        return cls
    hints = get_type_hints(cls, include_extras=True)
    hints["messages"] = Annotated[list[AnyMessage], DeltaChannel(add_messages_per_write)]
    make: Any = TypedDict  # the functional form, with fields known only here
    return cast(type[S], make(cls.__name__, hints, total=False))
