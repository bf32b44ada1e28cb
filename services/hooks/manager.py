"""The hooks service (H1-H4): Python handlers, then shell hooks from `hooks.json`, per event.

The engine only sees the narrow HookRunner interface (services/hook_types.py). HookManager is the
real runner: handlers (plugins) run first, in order; then the shell hooks whose matcher accepts the
call, in file order. The first block short-circuits the rest. `hooks.json` is re-read at most every
`ttl_sec`, re-parsed only when its raw bytes changed, and a broken file is reported once while the
last good table keeps working. Parsing lives in hooks_config.py, running a process in hooks_shell.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from core.errors import ConfigError
from services.hooks.config import HookTable, ShellHook, parse_hooks
from services.hooks.shell import build_stdin, execute, failed, interpret
from services.hooks.types import EVENTS, HookEvent, HookEventName, HookOutcome
from services.processes import scrubbed_env

log = logging.getLogger(__name__)

HOOKS_FILE = "hooks.json"


class HookHandler(Protocol):
    """What a Python plugin implements. Return None (or a non-blocking outcome) to let the event pass."""

    async def on_hook(self, event: HookEvent) -> HookOutcome | None: ...


class HookManager:
    """Runs handlers and shell hooks for one event; implements HookRunner."""

    def __init__(
        self,
        config_dir: Path,
        handlers: Sequence[HookHandler] = (),
        *,
        ttl_sec: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        cwd: Path | None = None,
    ) -> None:
        self.path = Path(config_dir) / HOOKS_FILE
        self._handlers = tuple(handlers)
        self._ttl = ttl_sec
        self._clock = clock
        self._cwd = cwd  # None: the process cwd at call time
        self._raw: bytes | None = None  # last bytes read (None = file missing)
        self._table: HookTable = {}
        self._checked_at: float | None = None  # None: never read
        self._read_error = ""  # last reported I/O problem, so it is reported once
        self._lock = asyncio.Lock()

    async def run(self, event: HookEvent) -> HookOutcome:
        """Handlers first, then matching shell hooks; the first block wins, contexts are kept in order."""
        if event.name not in EVENTS:
            raise ValueError(f"unknown hook event {event.name!r}; expected one of {EVENTS}")
        return await self._decide(event, self._handlers, await self.table())

    async def trial(self, text: str, event: HookEvent) -> tuple[int, HookOutcome]:
        """Run the shell hooks of a draft `hooks.json` text (not saved) that match `event`, exactly as `run`
        runs saved ones (same environment, same verdicts), without the Python handlers: the panel's "try a
        hook against a sample payload". Returns how many hooks matched and the outcome; ConfigError when the
        text would not be accepted."""
        table, warnings = parse_hooks(text, self.path.name)
        if warnings:
            raise ConfigError("; ".join(warnings))
        return len(self.matching(table, event.name, event.tool_name)), await self._decide(event, (), table)

    async def _decide(self, event: HookEvent, handlers: Sequence[HookHandler], table: HookTable) -> HookOutcome:
        contexts: list[str] = []
        asks: list[str] = []  # "ask" answers: the call needs a human unless a later hook blocks it

        def fold(outcome: HookOutcome) -> HookOutcome | None:
            if outcome.blocked:
                return HookOutcome(blocked=True, reason=outcome.reason, context=tuple(contexts))
            if outcome.ask:
                asks.append(outcome.reason)
            contexts.extend(outcome.context)
            return None

        for handler in handlers:
            if (done := fold(await self._call_handler(handler, event))) is not None:
                return done
        hooks = self.matching(table, event.name, event.tool_name)
        if hooks:
            cwd = str(self._cwd or Path.cwd())
            # Hooks never see the bot's settings or credentials (services/processes.py).
            env = scrubbed_env(CLAUDE_PROJECT_DIR=os.environ.get("CLAUDE_PROJECT_DIR", cwd))
            for hook in hooks:
                if (done := fold(await _run_shell(hook, event, cwd, env))) is not None:
                    return done
        return HookOutcome(context=tuple(contexts), ask=bool(asks), reason=asks[0] if asks else "")

    async def wants(self, event: HookEventName, tool_name: str | None = None) -> bool:
        """Handlers see every event; shell hooks only when one matches."""
        return bool(self._handlers) or bool(self.matching(await self.table(), event, tool_name))

    @staticmethod
    def matching(table: HookTable, event: str, tool_name: str | None) -> list[ShellHook]:
        """The shell hooks of `event` whose matcher accepts `tool_name`, in file order."""
        return [hook for entry in table.get(event, ()) if entry.matches(tool_name) for hook in entry.hooks]

    async def table(self) -> HookTable:
        """The current hook table, re-reading the file at most once per TTL (off the event loop)."""
        if self._fresh():
            return self._table
        async with self._lock:
            if not self._fresh():
                now = self._clock()
                try:
                    raw = await asyncio.to_thread(self._read)
                except OSError as exc:
                    self._report_read_error(str(exc))
                else:
                    self._read_error = ""
                    self._apply(raw, first=self._checked_at is None)
                self._checked_at = now
        return self._table

    def _fresh(self) -> bool:
        return self._checked_at is not None and self._clock() - self._checked_at < self._ttl

    def _read(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None

    def _report_read_error(self, message: str) -> None:
        if message != self._read_error:
            log.warning("%s: cannot read hooks file: %s; keeping the last good hooks", self.path, message)
            self._read_error = message

    def _apply(self, raw: bytes | None, *, first: bool) -> None:
        """Re-parse (and recompile matchers) only when the raw bytes changed since the last read."""
        if raw == self._raw and not first:
            return
        self._raw = raw
        if raw is None:
            self._table = {}
            return
        try:
            table, warnings = parse_hooks(raw.decode("utf-8-sig"), str(self.path))
        except (UnicodeDecodeError, ConfigError) as exc:
            log.warning("%s: broken hooks file (%s); keeping the last good hooks", self.path, exc)
            return
        for warning in warnings:
            log.warning("%s", warning)
        self._table = table

    @staticmethod
    async def _call_handler(handler: HookHandler, event: HookEvent) -> HookOutcome:
        """A plugin bug must not break a run: a raising or misbehaving handler counts as a pass."""
        try:
            outcome = await handler.on_hook(event)
        except Exception:
            log.exception("hook handler %r raised on %s; ignored", handler, event.name)
            return HookOutcome()
        if outcome is None:
            return HookOutcome()
        if not isinstance(outcome, HookOutcome):
            log.warning("hook handler %r returned %r on %s, not a HookOutcome; ignored", handler, outcome, event.name)
            return HookOutcome()
        return outcome


async def _run_shell(hook: ShellHook, event: HookEvent, cwd: str, env: dict[str, str]) -> HookOutcome:
    """One shell hook's verdict. An unexpected error (the payload, the loop's pipes) is the hook's failure,
    logged by `failed`: it never replaces the tool's result or ends the round (issue 22, item 12)."""
    try:
        result = await execute(hook.command, build_stdin(event, cwd), hook.timeout, cwd=cwd, env=env)
        return interpret(event.name, hook.command, result, hook.timeout)
    except Exception as exc:  # noqa: BLE001 - an unexpected error is the hook's failure, never the tool's
        return failed(event.name, hook.command, exc)
