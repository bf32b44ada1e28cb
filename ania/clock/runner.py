"""The runner behind `services.clock` (C3-C5, C7): one run of the clock graph for a task.

Each run is a fresh one-shot agent on its own thread `clock:<task id>:<run id>` of the engine's
checkpointer (stored when it ends, pauses for an approval, fails or times out; Studio and
`ania sessions show` open it). Its run context: the target chat as session, no requester (only admins
approve its calls; the task's creator is its author, who cannot approve its configuration changes),
agent kind "clock", a `ClockBridge`, the target's tools with the async subagent tools, and the task's
deadline. Approvals it needs are asked in the target chat, prefixed with the task.

The outcome it returns is what the task log keeps: the status (a timeout and a graph error are results
here, never exceptions), the first tool calls and their count, the tokens (the subagents' included),
and the reply as delivered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from zoneinfo import ZoneInfo

from langchain_core.messages import AIMessage

from ania.operations import record_run
from ania.platforms.bridge import ClockBridge
from graphs.clock import build_clock_graph
from nodes.clock import clock_executor, task_message
from nodes.model import MODEL_FAILED
from nodes.prompt import text_of
from nodes.recall import recalled_into
from nodes.state import add_usage
from nodes.subagent import detached, drive, stored_values
from services.clock import ClockTask, RunOutcome, RunSpec, ToolCallRecord
from services.clock.model import LOGGED_CALLS
from services.container import Services
from services.context import RunContext

log = logging.getLogger(__name__)

FAILED_STEP = "an error in a step of the run ({name}); it is in the log"
NOT_DELIVERED = "not delivered: no platform took the message for {session}"
TIMED_OUT = "timed out after {sec:g} s"


class ClockRunner:
    def __init__(self, services: Services, checkpointer: Any, context_tokens: Any) -> None:
        self._services = services
        self.graph = build_clock_graph(context_tokens, checkpointer=checkpointer, stock=services.settings.engine.stock)
        #: (task id, quota day) of refusals the chat was told about: a task every minute tells it once a day.
        self._refusals_told: set[tuple[int, str]] = set()

    async def run(self, task: ClockTask, spec: RunSpec) -> RunOutcome:
        services = self._services
        thread = f"clock:{task.id}:{spec.run_id}"
        label = f"clock task {task.id}"
        bridge = ClockBridge(services.outboxes.send, task.session, services.paths.data_dir / "outbox" / task.session,
                             label, services.outboxes.media)
        # Bound by the target chat's quota as its check before the run is (its creator's standing), per call too
        limits = services.quota.open(task.session, task.created_by)
        ctx = RunContext(session_key=task.session, requester="", bridge=bridge,
                         executor=clock_executor(services, task.session, spec.background), services=services,
                         agent_kind="clock", deadline=time.monotonic() + spec.budget_sec, author=task.created_by,
                         limits=limits)
        qid = services.queries.start(task.session, task.created_by, task.prompt, trigger="clock", thread=thread)
        refusal = services.quota.call_refusal(limits)
        if refusal is not None:  # Q1: a chat over its daily tokens runs no task either (the chat is told)
            await spec.background.close()
            record_run(services, task.session, qid, "quota", refusal, {}, [])
            told = (task.id, services.quota.day())
            quiet = told in self._refusals_told
            self._refusals_told.add(told)
            return RunOutcome("error", detail=f"not run: {refusal}", thread=thread, quiet=quiet)
        try:
            message = task_message(task, spec.run_id, spec.scheduled, ZoneInfo(task.timezone))
            inp = {"messages": [await recalled_into(ctx, message, task.prompt)], "run_id": spec.run_id}  # recall.clock
            outcome, messages = await self._run(spec, ctx, inp, thread, label)
        except asyncio.CancelledError:  # /stop, the clock stopping: what its calls spent still counts, once
            services.quota.close(limits, task.session, 0)
            raise
        # Q2/Q3: the run's tokens (its subagents' included) count once for the day; its query-log row closes
        record_run(services, task.session, qid, outcome.status, outcome.reply, outcome.usage, messages, "", limits)
        return outcome

    async def _run(self, spec: RunSpec, ctx: RunContext, inp: dict[str, Any], thread: str,
                   label: str) -> tuple[RunOutcome, list[Any]]:
        task_session = ctx.session_key
        out: dict[str, Any] = {}
        failure: BaseException | None = None
        timed_out = False
        try:
            async with asyncio.timeout(spec.budget_sec):
                out = await detached(drive(self.graph, inp, thread, ctx, label))
        except TimeoutError:
            timed_out = True
        except Exception as e:  # a step raised (a platform's send, a bug): a result, with what the run did
            log.exception("clock run %s failed", thread)
            failure = e
        finally:
            await spec.background.close()
        values = out or await stored_values(self.graph, thread)
        calls = [ToolCallRecord.of(c["name"], c.get("args")) for m in values.get("messages", [])
                 if isinstance(m, AIMessage) for c in m.tool_calls]
        calls += [ToolCallRecord.of(c.get("name") or "", c.get("args")) for m in values.get("messages", [])
                  if isinstance(m, AIMessage) for c in m.invalid_tool_calls]
        usage = add_usage(values.get("turn_usage") or {}, spec.background.spent_since_last())
        common: dict[str, Any] = {"tool_calls": tuple(calls[:LOGGED_CALLS]), "tool_call_count": len(calls),
                                  "usage": usage, "thread": thread}
        messages = list(values.get("messages", []))
        if timed_out:
            return RunOutcome("timeout", detail=TIMED_OUT.format(sec=spec.budget_sec), **common), messages
        if failure is not None:
            return RunOutcome("error", detail=FAILED_STEP.format(name=type(failure).__name__), **common), messages
        if values.get("status", "ok") != "ok":
            last = (values.get("messages") or [None])[-1]
            detail = text_of(last) if isinstance(last, AIMessage) else str(values.get("status"))
            return RunOutcome("error", detail=_plain(detail), **common), messages
        reply = str(values.get("reply") or "")
        delivered = bool(values.get("delivered"))
        detail = "" if delivered or not reply else NOT_DELIVERED.format(session=task_session)
        return RunOutcome("success", reply=reply, delivered=delivered, detail=detail, **common), messages


def _plain(text: str) -> str:
    """The model step's failure text without its advice to the chat ("Please try again"): a notice of a
    scheduled task says when it runs next instead."""
    head, _, tail = MODEL_FAILED.partition("{detail}")
    if text.startswith(head) and text.endswith(tail):
        return f"the model endpoint failed ({text[len(head):len(text) - len(tail)]})"
    return text
