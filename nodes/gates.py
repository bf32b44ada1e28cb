"""The gates before a tool runs (G1-G5), each a small function; nodes/gate_list.py orders them.

Each gate gets the call already checked (nodes/checked.py `ResolvedCall`: the tool and its validated
arguments) and says, through its `needed_*` predicate in the list, whether a call has work for it.

Approvals pause with a LangGraph `interrupt`: the chat runtime asks in the chat and resumes with the
answer (or a timeout's deny); Studio and the HTTP API resume with `allow` / `deny` directly. The request,
the answers and the log record are typed in services/gates/approval_types.py (the protocol a panel builds on).
"""

from __future__ import annotations

import json
import logging
from typing import Any, cast

from langgraph.types import interrupt

from core.registry import ToolCall
from core.tool import AnyTool
from nodes.checked import ResolvedCall
from nodes.hook_events import hook_event
from nodes.state import GateState
from nodes.tool_calls import tool_message
from services.context import RunContext
from services.gates.approval_types import ALLOW_WORDS, DENY_WORDS, AnswerDict, ApprovalKind, ApprovalOp, ApprovalRequest
from services.hooks import HookEvent, HookOutcome

log = logging.getLogger(__name__)

PLAN_BLOCKED = (
    'Blocked: plan mode is on, and "{name}" has side effects. Plan first (todo_write is allowed); '
    "the user turns plan mode off with /plan off."
)
HOOK_BLOCKED = 'Blocked by a PreToolUse hook: {reason}'
HOOK_ASKS = "A PreToolUse hook asks for approval: {reason}"
HOOK_FAILED = "Blocked: the PreToolUse hooks could not be run (the error is in the bot's log); blocked to be safe."
DENIED = 'Not run: user {by} denied the call to "{name}"{why}.'
NO_ANSWER = 'Not run: no approval for "{name}" ({why}).'
APPROVAL_PROMPT = 'Tool "{name}" wants to run with {args}\n{why}'
#: A resume value that is neither an allow nor a deny word (Studio, the HTTP API) is refused, not taken as a deny.
UNKNOWN_ANSWER = ('{answer!r} is not an answer to this approval; resume with one of: {words} '
                  '(or {{"decision": "allow" or "deny", "by": "...", "reason": "..."}}).\n')


#: Longer arguments are shown head and tail only, with a warning (a long line can hide a command).
MAX_SHOWN_ARGS = 2000
LONG_ARGS = ("\n[the arguments are {total} characters long; only the start and the end are shown. "
             "Deny unless you know the whole call]")


def shown_args(args: dict[str, Any]) -> str:
    text = json.dumps(args, ensure_ascii=False, sort_keys=True)
    if len(text) <= MAX_SHOWN_ARGS:
        return text
    head, tail = text[: MAX_SHOWN_ARGS * 3 // 4], text[-MAX_SHOWN_ARGS // 4:]
    return f"{head} … {tail}" + LONG_ARGS.format(total=len(text))


async def plan_mode(state: GateState, ctx: RunContext, resolved: ResolvedCall) -> dict[str, Any]:
    """Plan mode blocks calls with side effects (G2); every call passes here."""
    call, tool, args = resolved.call, resolved.tool, resolved.args
    if tool.has_side_effect(args, ctx) and ctx.services.plan_mode.is_on(ctx.session_key):
        return {"blocked": PLAN_BLOCKED.format(name=call.name)}
    return {}


async def needed_pre_tool_hooks(resolved: ResolvedCall, ctx: RunContext) -> bool:
    return await ctx.services.hooks.wants("PreToolUse", resolved.call.name)


async def needed_post_tool_hooks(resolved: ResolvedCall, ctx: RunContext) -> bool:
    return await ctx.services.hooks.wants("PostToolUse", resolved.call.name)


async def needed_admin_approval(resolved: ResolvedCall, ctx: RunContext) -> bool:
    return resolved.tool.changes_config


async def needed_human_approval(resolved: ResolvedCall, ctx: RunContext) -> bool:
    return bool(_human_reason(resolved, ctx))


async def _hooks(ctx: RunContext, event: HookEvent) -> HookOutcome | None:
    """The hooks' outcome, or None when the hook runner itself failed (logged naming the event and tool):
    a runner's bug never replaces the call's result nor fails the round's other calls (issue 22, item 12)."""
    try:
        return await ctx.services.hooks.run(event)
    except Exception:
        log.exception("the %s hooks failed for tool %s in %s", event.name, event.tool_name, ctx.session_key)
        return None


async def pre_tool_hooks(state: GateState, ctx: RunContext, resolved: ResolvedCall) -> dict[str, Any]:
    call = resolved.call
    out = await _hooks(ctx, hook_event(ctx, "PreToolUse", tool_name=call.name, tool_input=call.args))
    if out is None:  # their verdict is unknown: blocked, as a hook whose answer cannot be read
        return {"blocked": HOOK_FAILED}
    if out.blocked:
        return {"blocked": HOOK_BLOCKED.format(reason=out.reason or "no reason given")}
    update: dict[str, Any] = {"notes": list(out.context)} if out.context else {}
    if out.ask:  # Claude Code's permissionDecision "ask": a human decides, whatever approval.enable says
        route = state.get("route", [])
        if "human_approval" not in route:
            route = [*route[: route.index("execute")], "human_approval", *route[route.index("execute"):]]
        update.update(route=route, hook_ask=HOOK_ASKS.format(reason=out.reason))
    return update


async def post_tool_hooks(state: GateState, ctx: RunContext, resolved: ResolvedCall) -> dict[str, Any]:
    """Tell PostToolUse hooks, then write the result (with any hook context) as the ToolMessage."""
    call = resolved.call
    out = await _hooks(ctx, hook_event(
        ctx, "PostToolUse", tool_name=call.name, tool_input=call.args, tool_result=state.get("result", {}).get("text")))
    notes = [*state.get("notes", []), *(out.context if out is not None else ())]
    return {"messages": [tool_message({**state, "notes": notes})]}


def _ask(kind: ApprovalKind, call: ToolCall, why: str, ctx: RunContext, tool: AnyTool) -> dict[str, Any]:
    """Pause this branch until someone decides; returns the gate's update."""
    masked = tool.shown_args(call.args)
    args = shown_args(masked)
    request: ApprovalRequest = {
        "type": "tool_approval", "kind": kind, "tool": call.name, "args": masked, "call_id": call.id,
        "reason": why, "session": ctx.session_key,
        "requester": ctx.requester or (ctx.author if kind == "admin" else ""),  # "": only admins answer
        "prompt": APPROVAL_PROMPT.format(name=call.name, args=args, why=why),
    }
    answer = interrupt(request)
    while (decision := _decision(answer)) is None:  # ask again, saying which words count
        words = ", ".join(f'"{w}"' for w in (*ALLOW_WORDS, *DENY_WORDS))
        refused = UNKNOWN_ANSWER.format(answer=answer, words=words)
        answer = interrupt({**request, "prompt": refused + str(request["prompt"])})
    if not isinstance(answer, dict):  # a bare word from Studio or the HTTP API: the run's user answered
        decision = {**decision, "by": ctx.requester or "api", "reason": "answered in Studio or over the HTTP API"}
    allowed = str(decision.get("decision", "")).strip().lower() in ALLOW_WORDS
    op: ApprovalOp = {
        "kind": kind, "tool": call.name, "args": masked, "decision": "allow" if allowed else "deny",
        "reason": decision.get("reason", ""),
    }
    ctx.services.store.log_op("tool_approval", ctx.session_key, str(decision.get("by", "")), dict(op))
    if allowed:
        return {"approved_by": str(decision.get("by", ""))} if kind == "admin" else {}
    if not decision.get("by"):
        return {"blocked": NO_ANSWER.format(name=call.name, why=decision.get("reason") or "denied")}
    why_not = f" ({decision['reason']})" if decision.get("reason") else ""
    return {"blocked": DENIED.format(by=decision["by"], name=call.name, why=why_not)}


def _decision(answer: object) -> AnswerDict | None:
    """The answer (an `Answer`, or anything a client resumed with) as a decision dict, or None when its word
    is neither an allow nor a deny word."""
    decision = cast(AnswerDict, answer) if isinstance(answer, dict) else AnswerDict(decision=str(answer))
    word = str(decision.get("decision", "")).strip().lower()
    return decision if word in ALLOW_WORDS or word in DENY_WORDS else None


async def admin_approval(state: GateState, ctx: RunContext, resolved: ResolvedCall) -> dict[str, Any]:
    """Configuration changes always need an admin other than the requester (G3)."""
    call, tool = resolved.call, resolved.tool
    if not tool.changes_config:
        return {}
    why = f'"{call.name}" changes the configuration: an admin other than the requester must allow it.'
    return _ask("admin", call, why, ctx, tool)


async def human_approval(state: GateState, ctx: RunContext, resolved: ResolvedCall) -> dict[str, Any]:
    """Tools in approval.tools, or calls a tool itself flags (bash off the whitelist), ask a human (G4, G6)."""
    why = state.get("hook_ask") or _human_reason(resolved, ctx)
    return _ask("human", resolved.call, why, ctx, resolved.tool) if why else {}


def _human_reason(resolved: ResolvedCall, ctx: RunContext) -> str | None:
    settings = ctx.services.settings.approval
    if not settings.enable:
        return None
    name = resolved.call.name
    return f'"{name}" is in approval.tools.' if name in settings.tools else resolved.tool.approval_reason(
        resolved.args, ctx)
