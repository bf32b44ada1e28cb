"""The team run's steps (A4): fan out one member per `Send`, run each as a subagent, gather in member order.

A member never raises: a failure, a timeout or a bug becomes that member's result, so one member never
cancels another (the siblings of a LangGraph superstep die with the first exception). Only the caller's
own cancellation (/stop) reaches them, and it reaches all of them.

The gathered text gives every member a line (ok / failed / timed out, seconds, model calls, tokens) and
its answer, cut to a share of `subagent.team_max_result_len` (at most `subagent.max_result_len` each).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from langgraph.types import Send

from nodes.state import MemberInput, TeamState
from services.context import RunContext
from services.subagents import SubagentRequest, SubagentResult
from services.teams import MAX_MEMBERS

log = logging.getLogger(__name__)

MEMBER_NODE = "member"
ROLE = 'You are "{member}", a member of the team "{team}" ({purpose}).\n{role}'
HEAD = 'Team "{team}": {n} member{s} in {sec:.1f} s ({counts}).'


def fan_out(state: TeamState) -> list[Send]:
    """One branch per member (at most MAX_MEMBERS), all in one step: they run concurrently."""
    team = state["team"]
    run_id = state.get("run_id") or uuid.uuid4().hex[:12]
    budget = float(state.get("budget_sec") or 0)
    return [Send(MEMBER_NODE, MemberInput(index=i, member=m, team=team, task=state["task"], budget_sec=budget,
                                          run_id=run_id))
            for i, m in enumerate(team["members"][:MAX_MEMBERS])]


async def member(state: MemberInput, ctx: RunContext) -> dict[str, Any]:
    team, who = state["team"], state["member"]
    label = f"{team['name']}/{who['name']}"
    request = SubagentRequest(
        task=state["task"], budget_sec=state["budget_sec"] or ctx.services.settings.subagent.default_timeout_sec,
        kind="team_member", label=label, max_rounds=team.get("max_rounds"),
        run_id=f"{state['run_id']}-{state['index'] + 1}",
        role=ROLE.format(member=who["name"], team=team["name"], purpose=team.get("purpose", ""), role=who["role"]),
    )
    try:
        result = await ctx.services.subagents.run(ctx, request)
    except Exception as e:  # the runner returns failures as results; this is a last guard for the siblings
        log.exception("team member %s failed", label)
        result = SubagentResult(text=f"It failed ({type(e).__name__}).", status="failed", duration_sec=0.0,
                                budget_sec=request.budget_sec, thread_id="")
    return {"results": [{**result.to_dict(), "index": state["index"], "name": who["name"]}]}


async def gather(state: TeamState, ctx: RunContext) -> dict[str, Any]:
    settings = ctx.services.settings.subagent
    rows = sorted(state.get("results", []), key=lambda r: r["index"])
    share = min(settings.max_result_len, settings.team_max_result_len // max(1, len(rows)))
    counts: dict[str, int] = {}
    blocks = []
    for row in rows:
        result = SubagentResult.from_dict(row)
        counts[result.status] = counts.get(result.status, 0) + 1
        blocks.append(result.render(row["name"], share))
    words = {"ok": "ok", "failed": "failed", "timeout": "timed out", "max_rounds": "at the round limit",
             "quota": "stopped by the quota"}
    summary = ", ".join(f"{counts[k]} {w}" for k, w in words.items() if counts.get(k))
    took = max((r["duration_sec"] for r in rows), default=0.0)
    head = HEAD.format(team=state["team"]["name"], n=len(rows), s="" if len(rows) == 1 else "s", sec=took,
                       counts=summary or "none ran")
    return {"summary": "\n\n".join([head, *blocks])}
