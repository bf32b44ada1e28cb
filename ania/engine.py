"""The engine: the services (built by ania/compose.py), the agent graph on its checkpointer, and turns.

`run_turn` runs one message through the graph, answering approval interrupts through the approvals
service until the turn ends. Message entry (approval replies, slash commands, the per-session queue) is
ania/entry.py; platforms attach to `services.outboxes`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from ania.compose import bind_clock, bind_subagents, build_services
from ania.engine_mode import engine_mode
from ania.operations import TurnRecord, close_turn, open_turn, state_after
from ania.recovery import cancel_reason, settle
from ania.stats import process_stats
from checkpoints.factory import open_checkpointer, thread_config
from core.errors import RunError
from core.settings import Paths, Settings, load_settings
from graphs.agent import build_agent_graph
from nodes.prompt import text_of
from nodes.state import TurnStatus
from services.container import Services
from services.context import AgentKind, CallbackBridge, RunContext
from services.gates.approval_types import ApprovalRequest, Decision
from services.hooks import HookRunner
from services.retry import STORE_OPEN
from services.store import WRITE_REFUSED
from services.usage import EMPTY, Batch, MessageLimits

log = logging.getLogger(__name__)

TURN_TIMEOUT = "Sorry, this took longer than {sec:g} s (bot.msg_event_timeout_sec) and was stopped."
TURN_FAILED = "Sorry, something went wrong on my side ({detail}); the error is in the log. Please try again."
AgentGraph = CompiledStateGraph[Any, Any, Any, Any]
#: How a message ended, as the runtime reports it (the graph's statuses, plus the runtime's own).
ReplyStatus = TurnStatus | Literal["timeout", "quota"]


@dataclass
class TurnResult:
    reply: str
    status: ReplyStatus
    usage: dict[str, int] = field(default_factory=dict)
    #: The history at the end of the turn (the query log reads the turn's tool calls from it).
    messages: list[Any] = field(default_factory=list, repr=False)


class Engine:
    def __init__(self, services: Services, graph: AgentGraph, stack: AsyncExitStack,
                 options: dict[str, Any] | None = None) -> None:
        self.services = services
        self.graph = graph
        self._stack = stack
        #: What `start` was given besides the paths and settings; /reboot builds with the same.
        self._options = options or {}

    @classmethod
    async def start(
        cls,
        config_dir: Path | None = None,
        data_dir: Path | None = None,
        *,
        settings: Settings | None = None,
        hooks: HookRunner | None = None,
        hook_handlers: Sequence[Any] = (),
        approval_timeout_sec: float | None = None,
        local_admins: Iterable[str] = (),
        checkpoint_url: str | None = None,
        role: str = "all",
    ) -> Engine:
        """Build the services and the graph; `local_admins` act as admins without being in bot.admins;
        `checkpoint_url` (postgresql://...) keeps the checkpoints on Postgres instead of data/checkpoints.db;
        `role` "gateway" or "worker": a process of a cluster (ania/cluster/), which leaves the rows of other
        processes to the gateway's sweep."""
        paths = Paths.from_env()
        paths = Paths(config_dir=Path(config_dir or paths.config_dir), data_dir=Path(data_dir or paths.data_dir))
        settings = settings or load_settings(paths.config_dir)
        options = {"local_admins": tuple(local_admins), "hooks": hooks, "hook_handlers": hook_handlers,
                   "approval_timeout_sec": approval_timeout_sec, "checkpoint_url": checkpoint_url, "role": role}

        def again(e: BaseException) -> None:
            log.warning("the data directory %s refuses writes (%s); trying again", paths.data_dir, e)

        try:
            built = await STORE_OPEN.call(lambda: _build(paths, settings, options), retry_on=refused_at_start,
                                          on_retry=again)
        except WRITE_REFUSED as e:
            if not refused_at_start(e):  # not the directory's refusal: raised as it is
                raise
            raise RunError(f"could not open the data directory {paths.data_dir}: {e}") from None
        return cls(*built, options)

    async def close(self) -> None:
        await self._stack.aclose()

    async def reboot(self, settings: Settings | None = None) -> None:
        """Close everything (MCP sessions included) and build it again in this process, from the config
        files as they are now. The attached platforms (outboxes) stay. Stop the running turns first
        (ania/entry.py does). If the new build fails, the old settings are built again and the error raised.
        A started clock stops with the old services (runs in progress are logged `interrupted`) and the new
        one starts, so scheduled tasks go on firing."""
        old = self.services
        settings = settings or load_settings(old.paths.config_dir)
        clock_was_running = old.clock.running  # closing the stack stops it; the new one starts if it ran
        await self._stack.aclose()
        options = {**self._options, "outboxes": old.outboxes}
        try:
            self.services, self.graph, self._stack = await _build(old.paths, settings, options)
        except Exception:
            log.exception("reboot failed; starting again with the previous settings")
            self.services, self.graph, self._stack = await _build(old.paths, old.settings, options)
            self.services.config.shared.carry_over(old.config.shared)
            if clock_was_running:
                await self.services.clock.start()
            raise
        self.services.config.shared.carry_over(old.config.shared)  # which config files this process synced
        if clock_was_running:
            await self.services.clock.start()

    def context(self, session_key: str, user_id: str, bridge: CallbackBridge, kind: AgentKind = "main",
                limits: MessageLimits | None = None) -> RunContext:
        """`limits`: the message's (open_turn makes them); a run nobody records (Studio, replay) gets limits
        that are checked but leave nothing in the quota's in-flight tally."""
        budget = self.services.settings.bot.msg_event_timeout_sec
        limits = limits if limits is not None else self.services.quota.open(session_key, user_id, tally=False)
        return RunContext(session_key=session_key, requester=user_id, bridge=bridge,
                          executor=self.services.sessions.executor(session_key), services=self.services,
                          agent_kind=kind, deadline=time.monotonic() + budget, limits=limits)

    async def run_turn(self, session_key: str, user_id: str, text: str, bridge: CallbackBridge,
                       trigger: str = "message", batch: Batch = EMPTY) -> TurnResult:
        """One message (or a batch of them, ania/flow/) → one reply (sent through the bridge). Never raises
        for endpoint or tool errors. `trigger` is what the query log calls it: a message, a custom command,
        a clock run; `batch` names the messages the turn answers (their ids, senders, inbox rows)."""
        store = self.services.store
        record = await open_turn(self.services, self.graph, session_key, user_id, text, trigger, batch)
        if record.refusal is not None:  # over the quota: one reply, no model call (Q1)
            self._close(record, "quota", record.refusal, {}, [])
            await bridge.send_text(record.refusal)
            return TurnResult(record.refusal, "quota")
        state = self.services.sessions.state(session_key)
        budget = self.services.settings.bot.msg_event_timeout_sec
        settled = True
        try:  # from here on every way out closes the row, a /stop during the settling below included
            if not state.clean:
                await settle(self.graph, session_key, store, "the previous turn did not finish (restart or stop)")
            state.clean = False
            ctx = self.context(session_key, user_id, bridge, limits=record.limits)
            async with asyncio.timeout(budget):  # no extra task per turn, as wait_for would make
                result = await self._drive(ctx, record.message)
        except TimeoutError:
            settled = await self._settle(session_key, "the message's time budget ran out")
            result = TurnResult(TURN_TIMEOUT.format(sec=budget), "timeout")
        except asyncio.CancelledError as e:
            reason, status = cancel_reason(e)  # /stop, or Ctrl-C at the terminal
            await asyncio.shield(self._settle(session_key, reason))  # refused: the next turn settles it
            after = await asyncio.shield(state_after(self.graph, record))
            self._close(record, status, "", after.get("usage", {}), after.get("messages", []))
            raise
        except Exception as e:
            log.exception("turn of %s failed", session_key)
            settled = await self._settle(session_key, f"the turn failed ({type(e).__name__})")
            result = TurnResult(TURN_FAILED.format(detail=type(e).__name__), "error")
        self.services.sessions.state(session_key).clean = settled  # else the next turn settles it
        if result.status in ("timeout", "error") and not result.messages:
            after = await state_after(self.graph, record)
            result.usage, result.messages = after.get("usage", {}), after.get("messages", [])
        self._close(record, result.status, result.reply, result.usage, result.messages, forget_calls=True)
        if result.reply:
            await bridge.send_text(result.reply)
        return result

    async def _settle(self, session_key: str, reason: str) -> bool:
        """`settle` after a failed turn; False when the store refused it too (a full disk: the failure that
        brought us here), so the reply still goes out and the next turn settles (found by the soak harness)."""
        try:
            await settle(self.graph, session_key, self.services.store, reason)
        except WRITE_REFUSED as e:
            log.error("could not settle the turn of %s (the next turn will): %s", session_key, e)
            return False
        return True

    def _close(self, record: TurnRecord, status: str, reply: str, usage: dict[str, int], messages: list[Any], *,
               forget_calls: bool = False) -> None:
        """`close_turn` (and, for a turn that ended, forget its started calls); a store that refuses the write
        (disk full, locked past its busy timeout) costs the row and the usage count, never the reply (found by
        the soak harness: the reply was not sent)."""
        try:
            if forget_calls:
                self.services.store.forget_started_calls(record.session)
            close_turn(self.services, record, status, reply, usage, messages)
        except WRITE_REFUSED as e:
            log.error("could not record the turn of %s (query log, usage): %s", record.session, e)

    async def _drive(self, ctx: RunContext, message: Any) -> TurnResult:
        out = await self.drive(ctx, {"messages": [message]})
        return TurnResult(reply=_reply_of(out), status=out.get("status", "ok"), usage=dict(out.get("turn_usage") or {}),
                          messages=list(out.get("messages") or []))

    async def drive(self, ctx: RunContext, inp: Any) -> dict[str, Any]:
        """Run the graph on the session's thread until it ends, answering approvals; `None` input resumes
        from the stored checkpoint (`ania sessions replay`)."""
        config = thread_config(ctx.session_key)
        while True:
            out = await self.graph.ainvoke(inp, config, context=ctx, durability="sync")
            interrupts = out.get("__interrupt__") or []
            if not interrupts:
                break
            answers: dict[str, Decision] = {}
            for intr in interrupts:  # one question at a time (Approvals also serializes per session)
                request = cast(ApprovalRequest, intr.value)  # the approval gates are the graph's only interrupts
                answers[intr.id] = await self.services.approvals.ask(request, here=ctx.bridge.request_approval)
            inp = Command(resume=answers)
        return dict(out)


def refused_at_start(e: BaseException) -> bool:
    """A refusal that may pass: SQLite's (locked, an I/O error while writes are refused), or the file system's
    (permission, full disk, read-only). A Postgres URL that does not answer is a ConfigError, not retried."""
    return isinstance(e, (sqlite3.OperationalError, PermissionError)) or (
        isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES))


async def _build(paths: Paths, settings: Settings,
                 options: dict[str, Any]) -> tuple[Services, AgentGraph, AsyncExitStack]:
    stack = AsyncExitStack()
    try:
        stock = engine_mode(settings)
        options = dict(options)
        url = options.pop("checkpoint_url", None) or settings.cluster.postgres_url or None  # the store's database
        services = await build_services(paths, settings, stack, **options)
        saver = await stack.enter_async_context(open_checkpointer(paths.data_dir, url, stock=stock))
        graph = build_agent_graph(lambda: settings.agent.context_tokens, checkpointer=saver, stock=stock)
        bind_subagents(services, saver, stack)
        bind_clock(services, saver, stack)
        await stack.enter_async_context(process_stats(settings.logs.stats_sec))
    except BaseException:
        await stack.aclose()
        raise
    return services, graph, stack


def _reply_of(state: dict[str, Any]) -> str:
    if state.get("reply"):
        reply: str = state["reply"]
        return reply
    last = (state.get("messages") or [None])[-1]
    return text_of(last) if isinstance(last, AIMessage) else ""
