"""Async subagents of one clock run (C7): started in the background, listed, cancelled, then drained.

Inside a clock run `subagent_run` returns an id at once (tools/clock_subagents.py); the subagent runs
through the same seam as a blocking one (`services.subagents`, graphs/subagent.py). When the run's
agent stops calling tools, the drain step (nodes/clock.py) waits for them up to the run's deadline
less the reserve kept for the synthesis, cancels the stragglers, and hands every result not yet
reported back to the agent. The tokens they spend are added to this registry's meter, which the drain
folds into the run's usage once.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass, replace
from typing import Any

from core.errors import ToolError
from services.subagents import STATUS_WORDS, SubagentRequest, SubagentResult, Subagents, cut
from services.usage import UsageMeter

log = logging.getLogger(__name__)

#: Background subagents one clock run may have running at once.
MAX_RUNNING = 10
#: A background subagent's budget ends this long before the drain stops waiting, so it times out on its own
#: (its progress comes back) instead of being cancelled there; the drain cancels only one that overruns.
OWN_TIMEOUT_MARGIN_SEC = 2.0
TOO_MANY = "{n} subagents are already running in this run (at most {max}); wait for the results or cancel one"
UNKNOWN = "no subagent {id} in this run. {listing}"
NOT_RUNNING = "subagent {id} is not running any more ({status}); its result comes back when you stop calling tools"
BY_THE_AGENT = "cancelled with subagent_cancel"
AT_THE_DRAIN = "still running when the run kept its last {reserve} s for the final answer"
AT_THE_END = "the clock run ended first"
TASK_SHOWN = 120


@dataclass
class BackgroundJob:
    id: str
    task: str
    budget_sec: float
    started: float
    handle: asyncio.Task[SubagentResult]
    #: Why it was cancelled ("" while it was not).
    cancelled: str = ""
    ended: float | None = None
    #: Its result was handed to the agent by a drain.
    reported: bool = False

    @property
    def running(self) -> bool:
        return not self.handle.done()

    @property
    def result(self) -> SubagentResult | None:
        if self.handle.done() and not self.handle.cancelled() and self.handle.exception() is None:
            return self.handle.result()
        return None

    def status(self) -> str:
        """One word or phrase: running, ok, failed, timed out after N s, cancelled …"""
        if self.running:
            return "running"
        result = self.result
        if result is not None:
            return STATUS_WORDS[result.status].format(budget=round(result.budget_sec, 1))
        return "cancelled" if self.cancelled else "failed"

    def line(self, now: float) -> str:
        took = (self.ended or now) - self.started
        return f"- {self.id}: {self.status()}, {took:.1f} s: {shown(self.task)}"

    def render(self, limit: int) -> str:
        """What the synthesis reads: a head line with status and cost, the task, then the answer."""
        head = f"task: {shown(self.task)}"
        result = self.result
        if result is not None:
            return f"[subagent {self.id} {result.meta()}] {head}\n{cut(result.text, limit)}"
        took = (self.ended or time.monotonic()) - self.started
        why = self.cancelled or "it failed; the error is in the log"
        return f"[subagent {self.id} cancelled after {took:.1f} s: {why}] {head}\n(no answer)"


def shown(task: str) -> str:
    one_line = " ".join(task.split())
    return one_line if len(one_line) <= TASK_SHOWN else one_line[:TASK_SHOWN] + "…"


class BackgroundSubagents:
    def __init__(self, subagents: Subagents, run_id: str) -> None:
        self._subagents = subagents
        self.run_id = run_id
        self.meter = UsageMeter()
        self._folded: dict[str, int] = {}
        self._jobs: dict[str, BackgroundJob] = {}

    def start(self, parent: Any, request: SubagentRequest) -> BackgroundJob:
        """Start a subagent for `parent` (the clock run's RunContext) and return at once."""
        running = sum(1 for j in self._jobs.values() if j.running)
        if running >= MAX_RUNNING:
            raise ToolError(TOO_MANY.format(n=running, max=MAX_RUNNING))
        job_id = f"s{len(self._jobs) + 1}"
        request = replace(request, run_id=f"{self.run_id}-{job_id}", label=f"subagent {job_id}")
        # The meter is this registry's, not the tool call's: the call returns long before the subagent ends.
        coro = self._subagents.run(replace(parent, usage=self.meter), request)
        handle = asyncio.create_task(coro, name=f"clock-subagent-{self.run_id}-{job_id}", context=contextvars.Context())
        job = BackgroundJob(job_id, request.task, request.budget_sec, time.monotonic(), handle)
        handle.add_done_callback(lambda _t: setattr(job, "ended", time.monotonic()))
        self._jobs[job_id] = job
        return job

    def jobs(self) -> list[BackgroundJob]:
        return list(self._jobs.values())

    def get(self, job_id: str) -> BackgroundJob:
        job = self._jobs.get(job_id.strip())
        if job is None:
            listing = ("Its subagents: " + ", ".join(self._jobs) + ".") if self._jobs else "It has started none."
            raise ToolError(UNKNOWN.format(id=job_id.strip()[:20], listing=listing))
        return job

    async def cancel(self, job_id: str, why: str = BY_THE_AGENT) -> BackgroundJob:
        job = self.get(job_id)
        if not job.running:
            raise ToolError(NOT_RUNNING.format(id=job.id, status=job.status()))
        await self._cancel([job], why)
        return job

    def waiting(self) -> bool:
        """Whether a drain has something to wait for or report."""
        return any(not j.reported for j in self._jobs.values())

    async def drain(self, wait_sec: float | None, reserve_sec: float) -> list[BackgroundJob]:
        """Wait for the running ones (at most `wait_sec`), cancel the stragglers, and return every job whose
        result the agent has not seen yet (marked as seen now), in the order they were started."""
        running = [j.handle for j in self._jobs.values() if j.running]
        if running and (wait_sec is None or wait_sec > 0):
            await asyncio.wait(running, timeout=wait_sec)
        stragglers = [j for j in self._jobs.values() if j.running]
        if stragglers:
            log.info("clock run %s: %d subagent(s) cancelled at the drain", self.run_id, len(stragglers))
            await self._cancel(stragglers, AT_THE_DRAIN.format(reserve=reserve_sec))
        fresh = [j for j in self._jobs.values() if not j.reported]
        for job in fresh:
            job.reported = True
        return fresh

    def spent_since_last(self) -> dict[str, int]:
        """Tokens the subagents spent since the previous call: the drain folds each token into the run once."""
        total = self.meter.total()
        delta = {k: v - self._folded.get(k, 0) for k, v in total.items() if v - self._folded.get(k, 0)}
        self._folded = total
        return delta

    async def close(self) -> None:
        """Cancel whatever still runs (the clock run ended: timeout, error, stop)."""
        await self._cancel([j for j in self._jobs.values() if j.running], AT_THE_END)

    async def _cancel(self, jobs: list[BackgroundJob], why: str) -> None:
        for job in jobs:
            if job.handle.cancel():
                job.cancelled = why
        await asyncio.gather(*(j.handle for j in jobs), return_exceptions=True)
