"""One subagent run (A1-A3): the reusable function behind subagent_run, team members and, later, clock runs.

`run_subagent(graph, parent, request, bridge)` runs the subagent graph (graphs/subagent.py) once:

- on its own thread `<session>/sub/<run id>` of the graph's checkpointer (the runtime keeps a copy for
  Studio and `ania sessions show`: ania/subagents.py), started in a fresh contextvars context so
  LangGraph does not take it for a subgraph of the parent's step (an approval inside it pauses this
  run, not the parent's graph);
- with a run context of its own: the parent's session (history reads, sends and plan mode act there),
  no requester (only admins can approve its calls, G4), its agent kind in every hook event, the
  parent's tools less NOT_FOR_SUBAGENTS in a throwaway executor, and its own deadline;
- under its budget: when the time is up it comes back as a result ("timed out", with what it had
  finished), never as the parent's death; a failure comes back the same way. Only the parent's own
  cancellation (/stop, the parent's budget) propagates, and it cancels the run.

Approval interrupts are asked through the approvals service and resumed, as the engine does for a
turn. The tokens the run spent are added to `parent.usage` once, however the run ended (Q2).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Durability

from checkpoints.factory import thread_config
from core.registry import SessionExecutor, SharedExecutor
from nodes.hook_events import hook_event
from nodes.model import call_model
from nodes.prompt import text_of
from nodes.recall import recalled_into
from nodes.state import SubagentState
from services.context import CallbackBridge, RunContext
from services.gates.approval_types import ApprovalRequest, Decision
from services.subagents import NOT_FOR_SUBAGENTS, SubagentRequest, SubagentResult, SubagentStatus

log = logging.getLogger(__name__)
T = TypeVar("T")

BRIEF = ("You are a subagent: the chat assistant handed you one task. Work on it alone (you cannot ask "
         "questions), use your tools as needed, and end with your final answer. Only that final message goes "
         "back to the assistant; nothing else you write reaches anyone.")
ROLE = "<role>\n{role}\n</role>"
TASK = "<task>\n{task}\n</task>"
MAX_ROUNDS = "I stopped after {n} rounds of tool calls (my limit) before finishing."
UNFINISHED = "It had not finished. What it had so far:\n{progress}"
NOTHING_YET = "It had not finished and had nothing to show yet."
FAILED = "It failed ({detail}); the error is in the log."
STOPPED = "It was stopped (/stop) before it finished."
#: How long a SubagentStop hook may take once /stop has cut the run.
STOP_HOOK_SEC = 10.0
#: One tool result shown in an unfinished run's progress is cut to this many runes.
PROGRESS_RESULT = 500
#: Steps are stored when the run exits (answer, interrupt, error, timeout, cancellation), not after each one:
#: nothing resumes a one-shot run midway, and an approval pause or a timed-out run's progress is read from
#: what it stores on exit.
DURABILITY: Durability = "exit"
STATUS: dict[str, SubagentStatus] = {"ok": "ok", "max_rounds": "max_rounds", "quota": "quota"}


async def subagent_model(state: SubagentState, ctx: RunContext) -> dict[str, Any]:
    """The loop's model step, with the run's own round limit (a team's default or subagent.max_rounds)."""
    limit = state.get("max_rounds") or ctx.services.settings.subagent.max_rounds
    if state.get("rounds", 0) >= limit:
        return {"messages": [AIMessage(MAX_ROUNDS.format(n=limit))], "status": "max_rounds"}
    return await call_model(state, ctx)


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def thread_of(session_key: str, run_id: str) -> str:
    return f"{session_key}/sub/{run_id}"


def task_message(request: SubagentRequest, run_id: str) -> HumanMessage:
    parts = [BRIEF, ROLE.format(role=request.role) if request.role else "", TASK.format(task=request.task)]
    return HumanMessage(content="\n\n".join(p for p in parts if p), id=f"task-{run_id}")


def subagent_executor(parent: RunContext, request: SubagentRequest) -> SessionExecutor:
    """A throwaway executor: what it loads vanishes with the run; never the recursion tools."""
    tools = request.tools if request.tools is not None else parent.executor.tools()
    return SessionExecutor(SharedExecutor(t for t in tools if t.name not in NOT_FOR_SUBAGENTS))


async def detached(coro: Awaitable[T]) -> T:
    """Await `coro` in a fresh context (no parent run config); cancelling the caller cancels it."""

    async def run() -> T:
        return await coro

    return await asyncio.create_task(run(), context=contextvars.Context())


async def drive(graph: CompiledStateGraph[Any, Any, Any, Any], inp: Any, thread: str, ctx: RunContext,
                label: str) -> dict[str, Any]:
    """Run a graph on its thread until it ends, asking approvals for its interrupts on the way."""
    config = thread_config(thread)
    out = await graph.ainvoke(inp, config, context=ctx, durability=DURABILITY)
    while interrupts := out.get("__interrupt__"):
        answers: dict[str, Decision] = {}
        for intr in interrupts:  # the approval gates are the graph's only interrupts
            value = cast(ApprovalRequest, intr.value if isinstance(intr.value, dict) else {})
            if "prompt" in value:
                value = {**value, "prompt": f"[{label}] {value['prompt']}"}
            answers[intr.id] = await ctx.services.approvals.ask(value)
        out = await graph.ainvoke(Command(resume=answers), config, context=ctx, durability=DURABILITY)
    return out


async def run_subagent(graph: CompiledStateGraph[Any, Any, Any, Any], parent: RunContext, request: SubagentRequest,
                       bridge: CallbackBridge) -> SubagentResult:
    run_id = request.run_id or new_run_id()
    thread = thread_of(parent.session_key, run_id)
    started = time.monotonic()
    ctx = RunContext(session_key=parent.session_key, requester="", bridge=bridge,
                     executor=subagent_executor(parent, request), services=parent.services,
                     agent_kind=request.kind, deadline=started + request.budget_sec,
                     author=parent.requester or parent.author,  # who cannot approve its config changes
                     limits=parent.limits)  # the message's quota standing and spend
    task = await recalled_into(ctx, task_message(request, run_id), request.task)  # recall.subagents
    inp = {"messages": [task], "max_rounds": request.max_rounds or 0}
    status: SubagentStatus
    out: dict[str, Any] = {}
    crashed = False
    try:
        async with asyncio.timeout(request.budget_sec):
            out = await detached(drive(graph, inp, thread, ctx, request.label))
        status = STATUS.get(str(out.get("status", "ok")), "failed")
    except TimeoutError:
        status = "timeout"
    except asyncio.CancelledError:  # /stop, or a clock run's drain giving up on it: what it spent still counts,
        await _stopped(graph, thread, ctx, parent)  # and SubagentStop still fires
        raise
    except Exception:  # a bug in a step: the parent reads it as a result, its siblings go on
        log.exception("%s on %s failed", request.label, thread)
        status, crashed = "failed", True
    values = out or await stored_values(graph, thread)
    if crashed:
        text = FAILED.format(detail="an error in a step")
    elif status in ("ok", "failed", "quota"):
        text = _answer(values)
    else:
        text = _progress(values)
    if (status == "timeout" or crashed) and not await _reached_finish(graph, thread):
        # the graph's finish step did not run: SubagentStop fires here (once: not when `finish` itself failed)
        await ctx.services.hooks.run(hook_event(ctx, "SubagentStop", tool_result=text))
    usage = dict(values.get("turn_usage") or {})
    if parent.usage is not None:
        parent.usage.add(usage)
    duration = time.monotonic() - started
    log.info("%s on %s: %s in %.1f s", request.label, thread, status, duration)
    return SubagentResult(text=text, status=status, duration_sec=duration, budget_sec=request.budget_sec,
                          thread_id=thread, usage=usage)


async def _stopped(graph: CompiledStateGraph[Any, Any, Any, Any], thread: str, ctx: RunContext,
                   parent: RunContext) -> None:
    """A run cut from outside: its tokens so far go to the parent, and SubagentStop fires, bounded so a slow
    hook cannot hold the stop up."""
    try:
        async with asyncio.timeout(STOP_HOOK_SEC):
            if parent.usage is not None:
                parent.usage.add((await stored_values(graph, thread)).get("turn_usage"))
            await ctx.services.hooks.run(hook_event(ctx, "SubagentStop", tool_result=STOPPED))
    except Exception as e:  # noqa: BLE001 - a failing hook must not turn a stop into an error
        log.warning("SubagentStop hook after /stop failed on %s: %s", ctx.session_key, e)


async def _reached_finish(graph: CompiledStateGraph[Any, Any, Any, Any], thread: str) -> bool:
    """Whether the run got as far as its `finish` step (which tells SubagentStop), even if that step failed."""
    try:
        snapshot = await graph.aget_state(thread_config(thread))
    except Exception:
        log.exception("cannot read the state of %s", thread)
        return False
    return "finish" in snapshot.next


async def stored_values(graph: CompiledStateGraph[Any, Any, Any, Any], thread: str) -> dict[str, Any]:
    """What the run's checkpoints hold, with the results of tool calls that finished in an unfinished step."""
    try:
        snapshot = await graph.aget_state(thread_config(thread))
    except Exception:
        log.exception("cannot read the state of %s", thread)
        return {}
    values = dict(snapshot.values)
    messages = list(values.get("messages", []))
    known = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for task in snapshot.tasks:
        if isinstance(task.result, dict):
            messages += [m for m in task.result.get("messages", [])
                         if isinstance(m, ToolMessage) and m.tool_call_id not in known]
    return {**values, "messages": messages}


def _answer(values: dict[str, Any]) -> str:
    if values.get("reply"):
        return str(values["reply"])
    last = (values.get("messages") or [None])[-1]
    return text_of(last) if isinstance(last, AIMessage) else ""


def _progress(values: dict[str, Any]) -> str:
    """An unfinished run's work: its texts and tool results, in order (the task itself left out)."""
    lines = []
    for m in values.get("messages", [])[1:]:
        if isinstance(m, AIMessage) and text_of(m).strip():
            lines.append(f"- it wrote: {text_of(m).strip()}")
        elif isinstance(m, ToolMessage):
            result = text_of(m)
            shown = result if len(result) <= PROGRESS_RESULT else result[:PROGRESS_RESULT] + " …"
            lines.append(f"- {m.name} returned: {shown}")
    return UNFINISHED.format(progress="\n".join(lines)) if lines else NOTHING_YET
