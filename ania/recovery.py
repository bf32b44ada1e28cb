"""Settling a turn that did not finish: a crash, a restart, `/stop`, Ctrl-C or the message time budget.

Such a thread ends mid-step: the assistant's tool calls are stored, but some (or all) results are
not, and approvals may be pending. Providers reject a history where a tool call has no result, so
before the session's next message we write the results that exist (branches that finished keep their
real result), answer the rest with a clear "not run" text, log pending approvals as denied, and mark
the step done. Nothing is re-run: a tool that was cut off mid-way is not started again. A call whose
execution had begun (recorded by the execute step) is answered "may or may not have run", never "not
run": the model must not retry a non-idempotent command believing it never happened.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from checkpoints.factory import thread_config
from nodes.tool_calls import TOOL_NODE, calls_of
from services.gates.approval_types import ApprovalOp
from services.store import AppStore

log = logging.getLogger(__name__)

NOT_RUN = 'Not run: {reason}.'
#: Why a running turn was cancelled, given as the cancellation's message (`Task.cancel(msg)`): the settle
#: reason, and the query log's status. A cancel without a message is `/stop`.
STOPPED = "stopped with /stop"
CTRL_C = "interrupted by Ctrl-C"
#: A cluster worker shutting down (ania/cluster/worker.py): its chats' next turns run on another worker.
WORKER_STOPPED = "the worker running it shut down"
CANCEL_STATUS = {STOPPED: "stopped", CTRL_C: "interrupted", WORKER_STOPPED: "interrupted"}
MAY_HAVE_RUN = ('No result: "{name}" had started, but the turn ended before it finished ({reason}); it may or may '
                'not have done its work. Check before running it again.')


def cancel_reason(error: BaseException) -> tuple[str, str]:
    """(settle reason, query-log status) of a turn cancelled with `error`."""
    said = error.args[0] if error.args else None
    reason = said if isinstance(said, str) and said in CANCEL_STATUS else STOPPED
    return reason, CANCEL_STATUS[reason]


def _finished_results(snapshot: Any) -> dict[str, ToolMessage]:
    out: dict[str, ToolMessage] = {}
    for task in snapshot.tasks:
        if task.name != TOOL_NODE or not isinstance(task.result, dict):
            continue
        for m in task.result.get("messages", []):
            if isinstance(m, ToolMessage):
                out[m.tool_call_id] = m
    return out


async def settle(graph: CompiledStateGraph[Any, Any, Any, Any], session_key: str, store: AppStore, reason: str) -> int:
    """Close a dangling step of `session_key`; returns how many tool calls were answered as not run."""
    config = thread_config(session_key)
    saver = graph.checkpointer
    if isinstance(saver, BaseCheckpointSaver) and await saver.aget_tuple(config) is None:
        return 0  # a new session: nothing stored, nothing to settle
    snapshot = await graph.aget_state(config)
    if not snapshot.next:
        return 0
    for intr in snapshot.interrupts:
        value = intr.value if isinstance(intr.value, dict) else {}  # read leniently: a checkpoint of any version
        op: ApprovalOp = {
            "kind": value.get("kind", ""), "tool": value.get("tool", ""), "args": value.get("args"),
            "decision": "deny", "reason": reason,
        }
        store.log_op("tool_approval", session_key, "", dict(op))
    messages = snapshot.values.get("messages", [])
    last_ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    # The snapshot's values may already show finished branches' results that the stored checkpoint
    # lacks; every result is written again (add_messages replaces a message with the same id).
    known = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    known.update(_finished_results(snapshot))
    patch: list[Any] = []
    not_run = 0
    started = store.started_calls(session_key)
    for call in calls_of(last_ai) if last_ai is not None else []:
        if call.id in known:
            patch.append(known[call.id])
            continue
        not_run += 1
        text = (MAY_HAVE_RUN.format(name=call.name, reason=reason) if call.id in started
                else NOT_RUN.format(reason=reason))
        patch.append(ToolMessage(content=text, tool_call_id=call.id, name=call.name, status="error"))
    # As if the round of tool calls had ended: with the status "stopped" the route after it ends the turn.
    await graph.aupdate_state(config, {"messages": patch, "status": "stopped"}, as_node=TOOL_NODE)
    store.forget_started_calls(session_key)
    log.info("settled %s: %d result(s) kept, %d not run (%s)", session_key, len(patch) - not_run, not_run, reason)
    return not_run
