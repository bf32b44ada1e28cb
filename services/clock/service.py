"""The clock service (C1-C6): tasks that the model and people create, fired by the clock's own scheduler.

Management goes through the task book (services/clock/book.py: checks and ownership); the service adds
the scheduler. A fire: the scheduler hands over (task id, due time); the service writes the `running`
row, runs the task through the runner seam (the clock graph, bound by the runtime: ania/clock/runner.py)
under the task's time budget, writes the outcome, deletes a run-once task, and tells the target when the
run timed out or failed. A fire that comes later than `clock.misfire_grace_sec`, or while the task's
previous run is still going, is logged as `missed`. The service never raises into the scheduler.

`start` (only a process that serves chats calls it: `ania chat`, `ania serve`, tests) first takes the
data directory's `clock.lock` (services/files.py `OwnerLock`): a second bot on the same data directory
is refused with a clear error instead of firing every task a second time and marking the first one's
runs `interrupted`. Then it marks rows left `running` as `interrupted`, settles fire times that passed
while the bot was down and registers every task again (services/clock/loading.py). A row that cannot be
read as a task is reported, not loaded. `stop` frees the lock.

On a Postgres store (`cluster.postgres_url`) several bots with data directories of their own share the tasks:
only the one holding the clock's advisory lock (services/clock/lease.py) fires them; the others stand by and
take over when it dies, starting as a restarted bot does. Any bot manages tasks (the tools, `/clock`): they
are rows, and the holder reads the scheduling columns of every task each `CHECK_SEC` and registers what
another bot created, changed or deleted (a poll rather than LISTEN/NOTIFY: it needs nothing from the writers,
so a task written by any process, or while the holder was reconnecting, is seen all the same).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from core.errors import RunError, ToolError
from core.settings import Settings
from services.clock.background import BackgroundSubagents
from services.clock.book import UNREADABLE, TaskBook, why
from services.clock.lease import CHECK_SEC, PgLease
from services.clock.loading import TAKEN, TaskLoader
from services.clock.model import ClockRun, ClockRunner, ClockTask, RunOutcome, RunSpec, new_run_id
from services.clock.scheduler import Scheduler
from services.clock.store import ClockStore
from services.clock.texts import FAILED, INTERRUPTED, TIMED_OUT, TaskView, next_words, show_ts
from services.clock.zones import local_zone
from services.files import OwnerLock
from services.outboxes import Outboxes
from services.store import AppStore
from services.subagents import Subagents

log = logging.getLogger(__name__)

NOT_BOUND = "scheduled tasks are not available in this process (no runner is bound)"
BUSY = "task {id} is running now (run {run}); wait for it to finish"
LATE = "due {late:.0f} s earlier (more than clock.misfire_grace_sec = {grace} s late, e.g. a blocked event loop)"
OVERLAP = "its previous run {run} was still going"
RAISED = "an error on the bot's side ({name}); it is in the log"
STOPPED = "the bot stopped during the run"
STOPPED_BY = "stopped with /stop by {user}"
CRASHED = "the bot stopped or crashed during the run"
ELSEWHERE = ("another Ania bot (process {pid}) is running on the data directory {dir} and fires its scheduled "
             "tasks; stop it first, or give this bot its own ANIA_DATA_DIR")


@dataclass
class LiveRun:
    run_id: str
    background: BackgroundSubagents
    session: str = ""
    created_by: str = ""
    #: The asyncio task doing the run (cancelled by `stop_runs`) and who stopped it.
    task: asyncio.Task[Any] | None = None
    stopped_by: str = ""


class ClockService:
    def __init__(self, store: AppStore, settings: Settings, outboxes: Outboxes, subagents: Subagents,
                 lock_path: Path | None = None) -> None:
        self.settings = settings.clock
        self._owner = OwnerLock(lock_path) if lock_path is not None else None
        #: On a Postgres store: the right to fire, shared with the other bots on it.
        self._lease = PgLease(settings.cluster.postgres_url) if store.dialect.postgres else None
        self._watch: asyncio.Task[None] | None = None
        self.tz = local_zone(self.settings.timezone)
        self.db = ClockStore(store)
        self._outboxes = outboxes
        self._subagents = subagents
        self._runner: ClockRunner | None = None
        self._scheduler: Scheduler | None = None
        self._live: dict[int, LiveRun] = {}  # task id → its run in progress
        self._by_run: dict[str, LiveRun] = {}
        self._spawned: set[asyncio.Task[None]] = set()
        self.book = TaskBook(self.db, self.settings, self.tz, self._running_of)
        self._tasks = TaskLoader(self.db, self.book, self.settings.misfire_grace_sec,
                                 lambda task_id, due: self._spawn(self._fire(task_id, due, late_ok=True)), self._tell)

    def bind(self, runner: ClockRunner) -> None:
        self._runner = runner

    @property
    def running(self) -> bool:
        """Started: firing, or standing by for another bot on the same Postgres store."""
        return self._scheduler is not None or self._watch is not None

    @property
    def firing(self) -> bool:
        """This process fires the tasks (on Postgres: it holds the clock's lock)."""
        return self._scheduler is not None

    @property
    def broken(self) -> dict[int, str]:
        """Rows that could not be loaded at start: task id → why."""
        return self.book.broken

    # --- management (the book's, plus the scheduler) ------------------------------------------------
    def create(self, session: str, by: str, schedule: str, prompt: str, name: str | None = None,
               run_once: bool = False, timeout_sec: int | None = None) -> TaskView:
        task = self.book.create(session, by, schedule, prompt, name, run_once, timeout_sec)
        self._tasks.register(task, self._scheduler)
        return self.book.view(task)

    def update(self, session: str | None, task_id: int, *, schedule: str | None = None, prompt: str | None = None,
               enabled: bool | None = None, timeout_sec: int | None = None) -> TaskView:
        task = self.book.update(session, task_id, schedule=schedule, prompt=prompt, enabled=enabled,
                                timeout_sec=timeout_sec)
        self._tasks.register(task, self._scheduler)
        return self.book.view(task)

    def delete(self, session: str | None, task_id: int) -> TaskView:
        view = self.book.delete(session, task_id)
        self._tasks.forget(task_id, self._scheduler)
        return view

    def views(self, session: str | None = None) -> list[TaskView]:
        return self.book.views(session)

    def log(self, session: str | None, task_id: int | None = None, limit: int = 10) -> list[ClockRun]:
        return self.book.log(session, task_id, limit)

    def clamp_timeout(self, seconds: int | None) -> int | None:
        return self.book.clamp_timeout(seconds)

    async def run_now(self, session: str | None, task_id: int, by: str) -> str:
        """Start a run now, outside the schedule (`/clock run`); returns its run id."""
        task = self.book.owned(session, task_id)
        if self._runner is None:
            raise ToolError(NOT_BOUND)
        if running := self._running_of(task.id):
            raise ToolError(BUSY.format(id=task.id, run=running))
        run_id = new_run_id()
        self._spawn(self._fire(task.id, datetime.now(self.tz), by=by, run_id=run_id))
        return run_id

    async def stop_runs(self, session: str, user_id: str, *, admin: bool) -> tuple[int, int]:
        """`/stop` in a chat: cancel the runs in progress of the chat's tasks that `user_id` may stop (an
        admin: all of them; anyone else: those of the tasks they created). A stopped run is logged
        `interrupted` with who stopped it; a repeating task fires again at its next time, a one-time task
        is done. Returns (stopped, left running because another person's task runs them)."""
        live = [run for run in self._live.values() if run.session == session and run.task is not None]
        mine = [run for run in live if admin or run.created_by == user_id]
        for run in mine:
            run.stopped_by = user_id
            assert run.task is not None  # noqa: S101 - narrows for mypy: `live` kept only runs with a task
            run.task.cancel()
        await asyncio.gather(*(run.task for run in mine if run.task is not None), return_exceptions=True)
        return len(mine), len(live) - len(mine)

    def bring_forward(self, task_id: int) -> bool:
        """Advance time for one task: its next fire happens now, handed over by the scheduler like any fire (the
        lateness, overlap and run-once rules apply; `/clock run` is the run outside the schedule), and its later
        fires count from this one. False when the clock is not started or the task has no next fire. The seam
        that lets a test see a fire, or the fire after it, without waiting out the interval in real time."""
        if self._scheduler is None:
            return False
        return self._scheduler.bring_forward(task_id, datetime.now(self.tz))

    def background(self, run_id: str) -> BackgroundSubagents | None:
        live = self._by_run.get(run_id)
        return live.background if live is not None else None

    def _running_of(self, task_id: int) -> str:
        """Its run in progress here, or (on a store other bots share) on any of them."""
        live = self._live.get(task_id)
        if live is not None:
            return live.run_id
        return self.db.running(task_id) if self._lease is not None else ""

    # --- the scheduler ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Take the data directory's lock; then fire (the clock's lock taken, on Postgres), or stand by."""
        if self.running:
            return
        if self._owner is not None and (holder := self._owner.acquire()) is not None:
            raise RunError(ELSEWHERE.format(pid=holder, dir=self._owner.path.parent))
        if self._lease is None:
            await self._begin()
            return
        if await self._lease.take():
            await self._begin()
        else:
            log.info("clock: another bot on the Postgres store fires the tasks; this one takes over if it stops")
        self._watch = asyncio.get_running_loop().create_task(self._keep())

    async def _keep(self) -> None:
        """Every CHECK_SEC: take the clock when it is free, stop firing when it was lost, and pick up the tasks
        other bots changed while holding it."""
        assert self._lease is not None  # noqa: S101 - narrows for mypy: only started on Postgres
        while True:
            await asyncio.sleep(CHECK_SEC)
            try:
                held = await self._lease.take()
                if held and self._scheduler is None:
                    log.warning("clock: took over firing the scheduled tasks (the bot that held it stopped)")
                    await self._begin()
                elif not held and self._scheduler is not None:
                    log.error("clock: lost the clock's lock on the Postgres store; this bot stops firing")
                    await self._halt()
                elif held and self._scheduler is not None:
                    await self._tasks.pick_up(self._scheduler, datetime.now(self.tz))
            except asyncio.CancelledError:
                raise
            except Exception:  # the store refused a read: logged, tried again at the next check
                log.exception("clock: the check of the clock's lock failed")

    async def _begin(self) -> None:
        """Mark crashed runs, settle overdue fire times, register every task, start firing."""
        scheduler = Scheduler(self.tz, self._due)
        for run in self.db.interrupt_all(CRASHED):
            log.warning("clock run %s of task %d was interrupted by a stop or crash", run.id, run.task_id)
            await self._tell_interrupted(run)
        self._tasks.clear()
        scheduler.start()
        self._scheduler = scheduler
        made_up = await self._tasks.pick_up(scheduler, datetime.now(self.tz))
        log.info("clock: %d task(s) scheduled, %d run(s) made up, %d broken", len(scheduler), made_up,
                 len(self.broken))

    async def stop(self) -> None:
        """Stop firing and cancel the runs in progress: their rows become `interrupted` and their chats are told
        (a platform that is still attached, as over a /reboot, shows it; a crash is told at the next start)."""
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
            self._watch = None
        await self._halt()
        if self._lease is not None:
            await self._lease.release()
        if self._owner is not None:
            self._owner.release()

    async def _halt(self) -> None:
        """Stop firing; the runs in progress are cancelled and logged `interrupted`."""
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        self._tasks.clear()
        live = {run.run_id: task_id for task_id, run in self._live.items()}
        spawned = list(self._spawned)
        for t in spawned:
            t.cancel()
        await asyncio.gather(*spawned, return_exceptions=True)
        for task_id in sorted(set(live.values())):
            for run in self.db.runs(task_id=task_id, limit=5):
                if run.id in live and run.status == "interrupted":
                    await self._tell_interrupted(run)

    def _due(self, job_id: str, scheduled: datetime) -> None:
        """From the scheduler (in the event loop): start the fire at once, as its own asyncio task."""
        self._spawn(self._fire(int(job_id), scheduled))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)

    async def _fire(self, task_id: int, scheduled: datetime, *, by: str = "", late_ok: bool = False,
                    run_id: str = "") -> None:
        started = time.time()
        try:
            await self._run(task_id, scheduled, started, by, late_ok or bool(by), run_id or new_run_id())
        except asyncio.CancelledError:
            raise
        except Exception:  # bookkeeping failed (the store?): logged, never raised into the scheduler
            log.exception("clock fire of task %d failed", task_id)

    async def _run(self, task_id: int, scheduled: datetime, started: float, by: str, late_ok: bool,
                   run_id: str) -> None:
        try:
            task = self.db.get(task_id)
        except UNREADABLE as e:
            log.error("clock task %d cannot be read at its fire (%s)", task_id, why(e))
            return
        if task is None or (not task.enabled and not by):
            return  # deleted or paused since the fire was due
        due = scheduled.timestamp()
        fired = not by
        if not late_ok and started - due > self.settings.misfire_grace_sec:
            return self._missed(task, due, LATE.format(late=started - due, grace=self.settings.misfire_grace_sec))
        if task.id in self._live:
            return self._missed(task, due, OVERLAP.format(run=self._live[task.id].run_id), fired)
        thread = f"clock:{task.id}:{run_id}"
        if not self.db.start_run(ClockRun(run_id, task.id, task.session, task.name, "running", due, started=started,
                                          thread=thread), fired=fired):
            log.info(TAKEN, task.label, show_ts(due, self.tz))
            return
        live = LiveRun(run_id, BackgroundSubagents(self._subagents, run_id), task.session, task.created_by,
                       asyncio.current_task())
        self._live[task.id] = self._by_run[run_id] = live
        budget = float(task.timeout_sec or self.settings.default_timeout_sec)
        try:
            if self._runner is None:
                raise ToolError(NOT_BOUND)
            outcome = await self._runner.run(task, RunSpec(run_id, scheduled, budget, live.background, by))
        except asyncio.CancelledError:
            self.db.interrupt(run_id, STOPPED_BY.format(user=live.stopped_by) if live.stopped_by else STOPPED)
            if live.stopped_by and task.run_once:  # stopped on purpose: it is not made up at the next start
                self.db.delete(task.id)
                if self._scheduler is not None:
                    self._scheduler.remove(task.id)
            raise
        except Exception as e:
            log.exception("clock run %s of %s raised", run_id, task.label)
            outcome = RunOutcome("error", detail=RAISED.format(name=type(e).__name__), thread=thread)
        finally:
            self._live.pop(task.id, None)
            self._by_run.pop(run_id, None)
            await live.background.close()
        self.db.finish_run(run_id, task.id, outcome, delete_task=task.run_once)
        if task.run_once and self._scheduler is not None:
            self._scheduler.remove(task.id)
        log.info("clock run %s of %s: %s", run_id, task.label, outcome.status)
        await self._report(task, outcome, budget)

    async def _report(self, task: ClockTask, outcome: RunOutcome, budget: float) -> None:
        """Tell the task's session that its run timed out or failed (unless the failure is a quiet one)."""
        if outcome.status == "timeout":
            key = "its timeout_sec" if task.timeout_sec else "clock.default_timeout_sec"
            await self._tell(task.session, TIMED_OUT.format(label=task.label, sec=f"{budget:g}", key=key,
                                                            next=next_words(self.book.maybe_view(task.id))))
        elif outcome.status == "error" and not outcome.quiet:
            await self._tell(task.session, FAILED.format(label=task.label, detail=_sentence(outcome.detail),
                                                         next=next_words(self.book.maybe_view(task.id))))

    def _missed(self, task: ClockTask, due: float, detail: str, fired: bool = True) -> None:
        log.warning("clock %s: a run due at %s was missed: %s", task.label, show_ts(due, self.tz), detail)
        run = ClockRun(new_run_id(), task.id, task.session, task.name, "missed", due, detail=detail)
        if not self.db.add_missed([run], last_fire=due if fired else None):
            log.info(TAKEN, task.label, show_ts(due, self.tz))

    async def _tell_interrupted(self, run: ClockRun) -> None:
        await self._tell(run.session, INTERRUPTED.format(label=f'task {run.task_id} "{run.task_name}"',
                                                        due=show_ts(run.scheduled, self.tz),
                                                        next=next_words(self.book.maybe_view(run.task_id))))

    async def _tell(self, session: str, text: str) -> None:
        try:
            await self._outboxes.send(session, text)
        except Exception:
            log.exception("could not tell %s: %s", session, text[:200])


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "。")) else text + "."
