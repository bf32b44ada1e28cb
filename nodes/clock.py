"""The steps of a clock run (C3, C5, C7): the task message, the model step with the synthesis limit, the drain
of async subagents, and the delivery of the final reply.

- `drain` runs whenever the agent stops calling tools. When the run's background subagents have anything
  the agent has not seen, it waits for them until the run's deadline less `subagent.parent_reserve_sec`
  (the time kept for the synthesis), cancels the stragglers (each is reported as cancelled), folds the
  tokens they spent into the run's usage, and adds one message with every result. The agent then
  writes its answer from them: a synthesis round, at most MAX_SYNTHESIS of them.
- `deliver` sends the final reply, and only it, to the target chat through `services.outboxes`. A run
  that ended in an error delivers nothing here: the clock service tells the target what failed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Send

from core.registry import SessionExecutor, SharedExecutor
from nodes.model import call_model
from nodes.prompt import text_of
from nodes.state import ClockState
from nodes.tool_calls import TOOL_NODE, calls_of
from services.clock import BackgroundSubagents, ClockTask, show
from services.container import Services
from services.context import RunContext
from tools.clock_subagents import async_subagent_tools

MAX_SYNTHESIS = 5
BRIEF = ("You are running a scheduled task of this chat ({label}, schedule \"{schedule}\", due {due}). Nobody is "
         "there to answer questions: carry out the task below with your tools, then end with the message to send "
         "to the chat. Only that final message is sent; nothing else you write reaches anyone.")
TASK = "<task>\n{prompt}\n</task>"
RESULTS = ("<subagent_results>\n{results}\n</subagent_results>\n"
           "Your background subagents have finished or were stopped; their answers are above. Write the final "
           "message for the chat from them now (synthesis round {round} of at most {max}).")
SYNTHESIS_LIMIT = "it used its {max} synthesis rounds without a final answer"
#: Not offered to a clock run: the todo list is the chat's own, and subagent_run is the async variant here.
NOT_FOR_CLOCK = frozenset({"subagent_run", "todo_write"})


def clock_executor(services: Services, session: str, background: BackgroundSubagents) -> SessionExecutor:
    """A throwaway executor with the target chat's tools (full rights, C3) and the async subagent tools (C7)."""
    tools = [t for t in services.sessions.executor(session).tools() if t.name not in NOT_FOR_CLOCK]
    return SessionExecutor(SharedExecutor([*tools, *async_subagent_tools(background)]))


def task_message(task: ClockTask, run_id: str, due: datetime, tz: ZoneInfo) -> HumanMessage:
    """The run's only user message: what it is, when it was due (in the task's timezone), and the prompt."""
    head = BRIEF.format(label=task.label, schedule=task.schedule, due=show(due, tz))
    return HumanMessage(content=f"{head}\n\n{TASK.format(prompt=task.prompt)}", id=f"clock-{run_id}")


async def clock_model(state: ClockState, ctx: RunContext) -> dict[str, Any]:
    """The loop's model step; after a drain each call is a synthesis round, and there are at most MAX_SYNTHESIS."""
    if not state.get("drained"):
        return await call_model(state, ctx)
    done = state.get("synthesis", 0)
    if done >= MAX_SYNTHESIS:
        return {"messages": [AIMessage(SYNTHESIS_LIMIT.format(max=MAX_SYNTHESIS))], "status": "max_rounds"}
    return {**await call_model(state, ctx), "synthesis": done + 1}


def route_after_model(state: ClockState) -> list[Send] | str:
    last = state["messages"][-1] if state.get("messages") else None
    if isinstance(last, AIMessage) and state.get("status", "ok") == "ok":
        calls = calls_of(last)
        if calls:
            return [Send(TOOL_NODE, {"call": c.to_dict()}) for c in calls]
    return "drain"


async def drain(state: ClockState, ctx: RunContext) -> dict[str, Any]:
    background = ctx.services.clock.background(state.get("run_id", ""))
    if state.get("status", "ok") != "ok" or background is None or not background.waiting():
        return {"fed": False}
    reserve = ctx.services.settings.subagent.parent_reserve_sec
    remaining = ctx.remaining()
    jobs = await background.drain(None if remaining is None else max(0.0, remaining - reserve), reserve)
    limit = ctx.services.settings.subagent.max_result_len
    text = RESULTS.format(results="\n\n".join(j.render(limit) for j in jobs), round=state.get("synthesis", 0) + 1,
                          max=MAX_SYNTHESIS)
    update: dict[str, Any] = {"messages": [HumanMessage(text)], "fed": True, "drained": True}
    if spent := background.spent_since_last():
        update.update(turn_usage=spent, total_usage=spent)
    return update


def route_after_drain(state: ClockState) -> str:
    return "model" if state.get("fed") else "deliver"


async def deliver(state: ClockState, ctx: RunContext) -> dict[str, Any]:
    if state.get("status", "ok") != "ok":
        return {"delivered": False}
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    reply = text_of(last).strip() if isinstance(last, AIMessage) else ""
    if not reply:
        return {"delivered": False, "reply": ""}
    sent = await ctx.services.outboxes.send(ctx.session_key, reply)
    return {"delivered": bool(sent), "reply": reply}
