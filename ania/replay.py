"""`ania sessions replay`: run a stored session again from one of its checkpoints (D5).

The session is forked to a scratch session (`<key>/replay/<random>`, checkpoints/maintenance.py) and run
from there with the engine as it is configured now: the model, the system prompt, the hooks and the
tools of today. So a person can see whether a changed prompt or hook fixes a bad answer. The original
is never written. By default plan mode is on in the scratch session (side-effect tools are blocked,
so a replay does not run a command twice) and approvals are denied at once. A tool the session used
that no longer exists is reported; a call to it is answered "unknown tool", as in a live turn.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from ania.engine import Engine
from ania.platforms.bridge import ChatBridge
from checkpoints.factory import thread_config
from checkpoints.maintenance import ForkError, fork_thread
from checkpoints.sessions import render, session_history
from core.settings import Paths, load_settings, require_llm
from nodes.prompt import user_message

REPLAY_USER = "local"
#: Approvals in a replay are denied at once (nobody is asked).
DENY_AT_ONCE_SEC = 0.01
#: Checkpoints after the one asked for that are searched for the next user message.
MAX_LOOKAHEAD = 20


@dataclass
class ReplayReport:
    scratch: str
    removed_tools: list[str] = field(default_factory=list)
    new_messages: list[AnyMessage] = field(default_factory=list)
    status: str = ""


async def replay(key: str, at: str, paths: Paths, *, message: str | None, side_effects: bool,
                 out: Callable[[str], Any]) -> int:
    settings = load_settings(paths.config_dir)
    require_llm(settings)
    engine = await Engine.start(paths.config_dir, paths.data_dir, settings=settings, local_admins=(REPLAY_USER,),
                                approval_timeout_sec=DENY_AT_ONCE_SEC)
    try:
        await replay_on(engine, key, at, message=message, side_effects=side_effects, out=out)
    finally:
        await engine.close()
    return 0


async def replay_on(engine: Engine, key: str, at: str, *, message: str | None = None, side_effects: bool = False,
                    out: Callable[[str], Any] = print) -> ReplayReport:
    """Fork `key` at checkpoint `at` to a scratch session and run it; raises ForkError for a bad key or id."""
    saver = engine.graph.checkpointer
    scratch = f"{key}/replay/{secrets.token_hex(3)}"
    if saver is None or isinstance(saver, bool):
        raise ForkError("replay needs the engine's checkpointer")
    await fork_thread(saver, key, at, scratch, rerun=True)
    report = ReplayReport(scratch)
    snapshot = await engine.graph.aget_state(thread_config(scratch))
    before = list(snapshot.values.get("messages") or [])
    tools = {t.name for t in engine.services.sessions.executor(scratch).tools()}
    used = {c["name"] for m in before if isinstance(m, AIMessage) for c in m.tool_calls}
    report.removed_tools = sorted(used - tools)
    if not side_effects:
        engine.services.plan_mode.set(scratch, True)
    out(f"replaying {key} from checkpoint {at} in the scratch session {scratch} "
        f"({'side effects allowed' if side_effects else 'plan mode on: side-effect tools are blocked'}; "
        "approvals are denied)\n")
    for name in report.removed_tools:
        out(f"note: the tool {name!r}, used in this session, no longer exists; a call to it is answered "
            "as an unknown tool\n")
    inp: Any
    if message is not None:
        inp = {"messages": [user_message(key, REPLAY_USER, message)]}
    elif snapshot.next:
        inp = None  # the step that was pending at this checkpoint runs again
    else:
        inp = {"messages": [await _next_message(engine, key, before, at)]}
        out(f"message: {render(inp['messages'][0])}\n")

    async def show(text: str) -> None:
        out(f"[sent] {text}\n")

    engine.services.outboxes.attach("replay", lambda _s, text: _printed(out, text), lambda s: s == scratch)
    ctx = engine.context(scratch, REPLAY_USER, ChatBridge(show, engine.services.paths.data_dir / "outbox" / "replay"))
    try:
        async with asyncio.timeout(engine.services.settings.bot.msg_event_timeout_sec):
            state = await engine.drive(ctx, inp)
    except TimeoutError:
        state = dict((await engine.graph.aget_state(thread_config(scratch))).values)
        state["status"] = "timeout"
    known = {m.id for m in before}
    report.new_messages = [m for m in state.get("messages") or [] if m.id not in known]
    report.status = str(state.get("status", "ok"))
    for m in report.new_messages:
        out(render(m) + "\n")
    out(f"status: {report.status}; the original session {key} is unchanged; the replay is kept as {scratch}\n")
    return report


async def _printed(out: Callable[[str], Any], text: str) -> bool:
    out(f"[approval] {text}\n")
    return True


async def _next_message(engine: Engine, key: str, before: list[AnyMessage], at: str) -> HumanMessage:
    """The user message that followed the checkpoint in the original session (what a replay sends again):
    read from the checkpoints after it, so a later compaction does not hide it."""
    known = {m.id for m in before}
    saver = engine.graph.checkpointer
    steps = await session_history(saver, key) if isinstance(saver, BaseCheckpointSaver) else []
    for step in [s for s in steps if s.checkpoint_id > at][:MAX_LOOKAHEAD]:
        config: RunnableConfig = {"configurable": {"thread_id": key, "checkpoint_id": step.checkpoint_id}}
        for m in (await engine.graph.aget_state(config)).values.get("messages") or []:
            if isinstance(m, HumanMessage) and m.id not in known:
                return HumanMessage(content=m.content, response_metadata=dict(m.response_metadata))
    raise ForkError(f"no message follows checkpoint {at} in {key!r} (it is the end of the session): "
                    "give --message TEXT")
