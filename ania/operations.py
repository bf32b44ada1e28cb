"""What the runtime records around every turn (Q1-Q3): the quota check, the query-log row, the day's
token counters and one structured log line.

`open_turn` runs before the turn's first model call: it refuses a session over its quota (one reply, no
model call) and otherwise opens the query-log row with the checkpoint the turn starts from, and makes the
message's limits (its subagent and team calls, its spend: every model call of the message checks the
quota again and adds to the quota's in-flight tally). `close_turn` runs once when the turn has ended,
whatever the way: the turn's tokens (the model calls, compaction summaries, subagents and team members,
all folded into `turn_usage` by the graph) are added to the day's counters exactly once, what the message
put in the in-flight tally comes out, the row is completed with the tool calls, and one INFO line is logged.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph

from checkpoints.factory import thread_config
from checkpoints.history import describe
from checkpoints.sessions import latest_checkpoint
from nodes.gates import HOOK_BLOCKED, PLAN_BLOCKED
from nodes.prompt import user_message
from nodes.recall import RECALLED
from services.container import Services
from services.store import WRITE_REFUSED
from services.usage import EMPTY, Batch, MessageLimits

log = logging.getLogger("ania.turn")

#: How a turn's graph status reads in the query log.
QUERY_STATUS = {"ok": "success", "max_rounds": "stopped", "blocked": "stopped", "stopped": "stopped",
                "error": "error", "timeout": "timeout", "quota": "quota"}


@dataclass
class TurnRecord:
    session: str
    user: str
    message: HumanMessage
    qid: int = 0
    checkpoint: str = ""
    refusal: str | None = None
    started: float = field(default_factory=time.monotonic)
    limits: MessageLimits | None = None
    #: What `open_turn` could not write (the store refused): the row's text, trigger and batch, written when
    #: the turn closes, so the batch's inbox rows leave the inbox before the reply goes out (else a later
    #: start would answer them again: a double, found by the soak harness).
    unwritten: tuple[str, str, Batch] | None = None


async def open_turn(services: Services, graph: CompiledStateGraph[Any, Any, Any, Any], session: str, user: str,
                    text: str, trigger: str = "message", batch: Batch = EMPTY) -> TurnRecord:
    """`batch`: the messages the turn answers (F1); several name their senders in `text` themselves."""
    named = len(batch.message_ids) > 1
    message = user_message(session, user, text, named=named).model_copy(update={"id": f"u-{uuid.uuid4().hex}"})
    limits = services.quota.open(session, user)
    record = TurnRecord(session, user, message, refusal=services.quota.call_refusal(limits), limits=limits)
    if services.queries.enabled:
        saver = graph.checkpointer if not isinstance(graph.checkpointer, bool) else None
        record.checkpoint = await latest_checkpoint(saver, session)
    try:  # the log off: no row, but the inbox rows still go
        record.qid = services.queries.start(session, user, text, trigger=trigger, thread=session,
                                            checkpoint=record.checkpoint, batch=batch)
    except WRITE_REFUSED as e:  # disk full or locked: the turn goes on, its row is written at its end
        log.error("could not open the query-log row of %s's turn (tried again when it ends): %s", session, e)
        record.unwritten = (text, trigger, batch)
    return record


def write_late(services: Services, record: TurnRecord) -> None:
    """The row `open_turn` could not write, written now (its batch's inbox rows go with it). When the store
    still refuses, the inbox rows stay (a later start answers them: the disk left no other record)."""
    if record.unwritten is None:
        return
    text, trigger, batch = record.unwritten
    try:
        record.qid = services.queries.start(record.session, record.user, text, trigger=trigger,
                                            thread=record.session, checkpoint=record.checkpoint, batch=batch)
    except WRITE_REFUSED as e:
        log.error("could not write the query-log row of %s's turn at its end either: %s", record.session, e)
        return
    record.unwritten = None


async def state_after(graph: CompiledStateGraph[Any, Any, Any, Any], record: TurnRecord) -> dict[str, Any]:
    """The turn's usage and messages read back from the checkpoint (a turn that timed out, failed or was
    stopped); nothing when the turn never got as far as its first model step."""
    try:
        values = (await graph.aget_state(thread_config(record.session))).values
    except Exception:
        log.warning("could not read the state of %s after its turn", record.session, exc_info=True)
        return {}
    if values.get("turn") != record.message.id:
        return {}
    return {"usage": dict(values.get("turn_usage") or {}), "messages": list(values.get("messages") or [])}


def close_turn(services: Services, record: TurnRecord, status: str, reply: str, usage: Mapping[str, int],
               messages: Sequence[AnyMessage]) -> None:
    write_late(services, record)
    shown, calls = record_run(services, record.session, record.qid, status, reply, usage, messages,
                              record.message.id or "", record.limits)
    duration_ms = int((time.monotonic() - record.started) * 1000)
    if log.isEnabledFor(logging.DEBUG):  # `ania -v`: each step of the turn (names and short texts, no arguments)
        for n, phrase in enumerate(turn_steps(messages, record.message.id or ""), 1):
            log.debug("step session=%s n=%d %s", record.session, n, phrase)
    log.info("turn session=%s status=%s tokens=%d requests=%d calls=%d duration_ms=%d query=%d", record.session,
             shown, int(usage.get("total_tokens", 0)), int(usage.get("requests", 0)), calls, duration_ms, record.qid)


def record_run(services: Services, session: str, qid: int, status: str, reply: str, usage: Mapping[str, int],
               messages: Sequence[AnyMessage], message_id: str = "",
               limits: MessageLimits | None = None) -> tuple[str, int]:
    """A finished run's tokens to the day's counters (once; out of the in-flight tally of its `limits`) and
    its query-log row completed; the status as the log shows it, and the number of tool calls. A chat turn
    starts at its user message (`message_id`); a clock run's messages are all its own ("")."""
    services.quota.close(limits, session, int(usage.get("total_tokens", 0)))
    executor = services.sessions.executor(session)

    def masked(name: str, args: dict[str, Any]) -> dict[str, Any]:
        tool = executor.get(name)
        return tool.shown_args(args) if tool is not None else args

    shown = QUERY_STATUS.get(status, status)
    calls = turn_calls(messages, message_id, masked)
    services.queries.finish(qid, shown, usage, calls, reply, turn_recalled(messages, message_id))
    return shown, len(calls)


def turn_recalled(messages: Sequence[AnyMessage], message_id: str) -> list[dict[str, Any]]:
    """The passages recalled into the turn's message (nodes/recall.py keeps them in its metadata); a clock
    run's ("") is its first message."""
    for m in reversed(messages) if message_id else messages:
        if isinstance(m, HumanMessage) and (m.id == message_id or not message_id):
            return list(m.response_metadata.get(RECALLED) or [])
    return []


def turn_steps(messages: Sequence[AnyMessage], message_id: str) -> list[str]:
    """What the turn did, one phrase per message after the user's ("model called bash", "bash ok", ...)."""
    start = next((i for i in range(len(messages) - 1, -1, -1)
                  if isinstance(messages[i], HumanMessage) and messages[i].id == message_id), None)
    return [p for m in messages[start + 1:] for p in describe(m)] if start is not None else []


def _no_mask(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return args


def turn_calls(messages: Sequence[AnyMessage], message_id: str,
               shown: Callable[[str, dict[str, Any]], dict[str, Any]] = _no_mask) -> list[dict[str, Any]]:
    """The tool calls of the turn that began with `message_id` (all of them for ""): name, arguments (as
    `shown` masks them: a secret given to config_set never reaches the log), result status."""
    start = 0 if not message_id else next((i for i in range(len(messages) - 1, -1, -1)
                                           if isinstance(messages[i], HumanMessage) and messages[i].id == message_id),
                                          None)
    if start is None:
        return []
    results = {m.tool_call_id: m for m in messages[start:] if isinstance(m, ToolMessage)}
    out = []
    for m in messages[start:]:
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                out.append({"name": c["name"], "args": _args(c.get("args"), shown, c["name"]),
                            "status": call_status(results.get(c.get("id") or ""))})
            out += [{"name": c.get("name") or "", "args": str(c.get("args") or ""), "status": "invalid arguments"}
                    for c in m.invalid_tool_calls]
    return out


def call_status(result: ToolMessage | None) -> str:
    """ok, error, "blocked by <gate>", or "no result" (a turn cut off before the call ended)."""
    if result is None:
        return "no result"
    status = str(result.response_metadata.get("ania_status") or ("error" if result.status == "error" else "ok"))
    if status != "blocked":
        return status
    text = str(result.content)
    if text.startswith(PLAN_BLOCKED.split("{", 1)[0]):
        return "blocked by plan mode"
    if text.startswith(HOOK_BLOCKED.split("{", 1)[0]):
        return "blocked by a PreToolUse hook"
    return "blocked by approval"


def _args(args: Any, shown: Callable[[str, dict[str, Any]], dict[str, Any]], name: str) -> str:
    return json.dumps(shown(name, dict(args or {})), ensure_ascii=False, sort_keys=True)


async def usage_text(services: Services, graph: CompiledStateGraph[Any, Any, Any, Any], session: str) -> str:
    """`/usage`: today's counters (this chat and all chats) and the session's totals since it began."""
    saver = graph.checkpointer
    totals: Mapping[str, Any] = {}
    if saver is not None and not isinstance(saver, bool):
        found = await saver.aget_tuple(thread_config(session))  # channel values only, no history rebuilt
        totals = (found.checkpoint["channel_values"].get("total_usage") or {}) if found else {}
    return (f"{services.quota.describe(session)}\nThis chat since it began: {int(totals.get('total_tokens', 0)):,} "
            f"tokens in {int(totals.get('requests', 0)):,} model request(s).")
