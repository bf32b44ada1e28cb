"""The terminal platform: `ania chat`. Each input line is a message from the local user.

Input: stdin may be a TTY, a pipe, a regular file or /dev/null. A daemon thread reads the descriptor
with plain `os.read` and hands lines to the loop; asyncio's pipe transports accept only pipes and
sockets, and epoll refuses regular files and /dev/null. At a TTY lines are taken as they come (so
`/stop` works mid-turn); otherwise the next line is taken once the current turn has finished or is
waiting for an approval, so `printf 'run ls\\nallow\\n' | ania chat` answers the approval the way a
person would. `/quit` and `/exit` end the chat (running turns are stopped), as does the end of input
(running turns finish first).

Output: replies go to stdout, and so do texts for the session that arrive between turns (a scheduled
task's reply, C5: the clock starts with the chat). When stdout is a TTY, a status line shows what the bot is doing now
("thinking", "running bash", with the seconds spent and, after a while, the model endpoint it waits for),
each tool call that finished gets a line, and a failed model call names the endpoint's URL. At a terminal
the `you> ` prompt shows when the bot waits for the person (idle, or an approval asked); colour where the
terminal takes it (ania/platforms/terminal_screen.py). A piped chat whose messages failed exits 1. The
steps come from a LangChain callback handler carried by a context variable (the way LangChain attaches
tracers), so the engine needs no hook for its terminal.

Ctrl-C: the running turns are stopped and settled before the engine closes (recorded as "interrupted by
Ctrl-C", not as /stop), then the CLI prints one line and exits 130.

`/as <user> <text>` sends one line as another user (e.g. a second admin answering a configuration
change's approval). Only the local operator may: with `--user`, the terminal has that user's rights
and nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from ania.engine import Engine, TurnResult
from ania.entry import MessageEntry
from ania.platforms.bridge import ChatBridge
from ania.platforms.terminal_screen import TICK_SEC, Screen, StatusLine
from ania.recovery import CTRL_C
from core.settings.sections import LLMSettings
from nodes.model import MODEL_FAILED

QUIT = ("/quit", "/exit")
READ_SIZE = 65536
#: Turn statuses that count as a failed message for the exit status of a piped chat.
FAILED = ("error", "timeout")
STEP_NAMES = {"prepare": "thinking", "model": "thinking", "compact": "compacting the conversation",
              "finish": "finishing"}

#: The status handler of the running chat, inherited by the turn tasks it starts (see module docstring).
_steps_var: contextvars.ContextVar[BaseCallbackHandler | None] = contextvars.ContextVar("ania_steps", default=None)
register_configure_hook(_steps_var, True)


class StdinLines:
    """Lines of a file descriptor, read by a daemon thread; `None` at the end of input."""

    def __init__(self, fd: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        threading.Thread(target=self._pump, args=(fd,), name="ania-stdin", daemon=True).start()

    def _put(self, item: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is reading any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _pump(self, fd: int) -> None:
        parts: list[bytes] = []  # the line so far, in pieces: a line of 100 MB is read in linear time
        try:
            while chunk := os.read(fd, READ_SIZE):
                *ends, tail = chunk.split(b"\n")
                for end in ends:
                    self._put(b"".join([*parts, end]).decode("utf-8", errors="replace"))
                    parts = []
                if tail:
                    parts.append(tail)
        except OSError:
            pass  # a closed or unreadable stdin is the end of input
        if parts:
            self._put(b"".join(parts).decode("utf-8", errors="replace"))
        self._put(None)

    async def readline(self) -> str | None:
        return await self._queue.get()


class StepWatcher(BaseCallbackHandler):
    """Turns LangGraph node events into the status line's step and a line per finished tool call."""

    run_inline = True  # called on the loop thread, in order

    def __init__(self, status: StatusLine, emit_note: Any) -> None:
        self.status = status
        self.emit_note = emit_note
        self._calls: dict[UUID, tuple[str, str, float]] = {}  # run id → (call id, tool, started)

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       metadata: dict[str, Any] | None = None, name: str | None = None, **kw: Any) -> None:
        node = (metadata or {}).get("langgraph_node")
        if name is None or name != node:
            return  # an edge or a runnable inside a node, not a node
        call = inputs.get("call") if isinstance(inputs, dict) else None
        if isinstance(call, dict) and call.get("name"):
            if all(c[0] != call.get("id") for c in self._calls.values()):  # the outermost node of this call
                self._calls[run_id] = (str(call.get("id")), str(call["name"]), time.monotonic())
            self._show_calls()
        elif name in STEP_NAMES:
            self.status.set(STEP_NAMES[name])

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        done = self._calls.pop(run_id, None)
        if done is not None:
            self.emit_note(f"  - ran {done[1]} ({time.monotonic() - done[2]:.1f} s)")
            self._show_calls()

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kw: Any) -> None:
        if self._calls.pop(run_id, None) is not None:  # paused for an approval (it runs again) or stopped
            self._show_calls()

    def _show_calls(self) -> None:
        names = sorted({c[1] for c in self._calls.values()})
        self.status.set("running " + ", ".join(names) if names else "thinking")


@dataclass
class Outcome:
    """How the chat's messages ended: a piped chat whose messages failed exits 1 (cli.py)."""

    turns: int = 0
    failed: int = 0


async def run_terminal(engine: Engine, session_key: str, user_id: str, out: TextIO = sys.stdout, *,
                       note: str = "", stdin_fd: int = 0, local: bool = False,
                       ready: Callable[[MessageEntry, None], None] | None = None) -> Outcome:
    """`local`: the person at the terminal is the bot's operator (no --user), who may speak `/as` others."""
    tty_in = os.isatty(stdin_fd)
    llm = engine.services.settings.llm
    chat = _Chat(engine, session_key, Screen(out, llm.base_url, tty_in=tty_in), llm)
    screen, status = chat.screen, chat.screen.status
    detach = engine.services.outboxes.attach("terminal", chat.outbox)
    try:  # scheduled tasks fire while the chat waits for input; replies print here
        await engine.services.clock.start()  # refused when another bot runs on the data directory
    except BaseException:
        detach()
        raise
    if status is not None:
        _steps_var.set(StepWatcher(status, screen.note))
        unfilter = _clear_before_logs(status)
    bridge = ChatBridge(chat.send, engine.services.paths.data_dir / "outbox" / session_key)
    entry = MessageEntry(engine, lambda _key: bridge)
    if ready is not None:  # the web panel (ania/panel/server.py): a reboot from it stops this entry's turns
        ready(entry, None)
    lines = StdinLines(stdin_fd)
    if tty_in:
        _greet(out, engine, session_key, user_id, llm, note)
    try:
        await chat.converse(entry, lines, user_id, local=local, tty_in=tty_in)
    except asyncio.CancelledError:  # Ctrl-C: stop and settle the turns before the engine closes
        if status is not None:
            await status.stop()
        if out.isatty():
            out.write("\r\x1b[K")
            out.flush()
        await entry.stop(session_key, reason=CTRL_C)
        raise
    finally:
        if status is not None:
            await status.stop()
            _steps_var.set(None)
            unfilter()
        detach()
    return chat.outcome


def _greet(out: TextIO, engine: Engine, session_key: str, user_id: str, llm: LLMSettings, note: str) -> None:
    role = "an admin" if engine.services.admins.is_admin(user_id) else "not an admin"
    out.write(f"Ania chat, session {session_key} (you are {user_id}, {role}); model {llm.model} at "
              f"{llm.base_url}{f', an {note}' if note else ''}.\n"
              "Type a message; /help lists the commands, /stop stops a turn, /quit or Ctrl-D quits.\n")
    out.flush()


@dataclass
class _Chat:
    """One `ania chat`: its screen, the turns running and how the messages ended. `llm` is the model
    settings at the start, which a failed model call's note names."""

    engine: Engine
    session_key: str
    screen: Screen
    llm: LLMSettings
    outcome: Outcome = field(default_factory=Outcome)
    active: set[asyncio.Task[TurnResult]] = field(default_factory=set)

    def emit(self, text: str) -> None:  # the status line comes back at its next tick if the turn goes on
        self.screen.line(text, reply=True)

    async def send(self, text: str) -> None:
        self.emit(text)

    async def outbox(self, session: str, text: str) -> bool:
        self.emit(text if session == self.session_key else f"[to {session}] {text}")
        return True

    def turn_done(self, task: asyncio.Task[TurnResult]) -> None:
        self.active.discard(task)
        if task.cancelled():
            return
        failed = task.exception() is not None or task.result().status in FAILED
        self.outcome.turns, self.outcome.failed = self.outcome.turns + 1, self.outcome.failed + failed
        if task.exception() is None and _endpoint_failed(task.result()):
            llm = self.llm
            line = f"ania: the model endpoint {llm.base_url} (model {llm.model}) failed: {_detail(task.result())}"
            if self.screen.status is not None:
                self.screen.note(line)
            else:
                sys.stderr.write(line + "\n")

    async def converse(self, entry: MessageEntry, lines: StdinLines, user_id: str, *, local: bool,
                       tty_in: bool) -> None:
        """Read and submit lines until the end of input (turns finish first) or /quit (turns are stopped)."""
        while True:
            line = await _next_line(lines, self.screen, self.engine, self.session_key, self.active)
            if line is None:
                await entry.drain()
                return
            if line.lower() in QUIT:
                await entry.stop(self.session_key)
                return
            speaker, line = _speaker(line, user_id, local)
            if not line:
                self.emit("Usage: /as <user> <text> (only the local operator, without --user)")
                continue
            task = await entry.submit(self.session_key, speaker, line)
            if task is None:
                continue
            self.active.add(task)
            task.add_done_callback(self.turn_done)
            if self.screen.status is not None:
                self.screen.status.start()
            if not tty_in:
                await _until_idle_or_asking(task, self.engine, self.session_key)


async def _next_line(lines: StdinLines, screen: Screen, engine: Engine, session_key: str,
                     active: set[asyncio.Task[TurnResult]]) -> str | None:
    """The next non-empty line (None at the end of input). At a terminal, while it waits: the status line
    runs while a turn works, and the prompt is shown (the status line cleared first) when the bot waits
    for the person: no turn running, or a turn asking for an approval."""
    status = screen.status
    while True:
        reader = asyncio.ensure_future(lines.readline())
        while status is not None and not reader.done():
            if not active or engine.services.approvals.is_waiting(session_key):
                await status.stop()
                screen.prompt()
            elif not status.running:  # a turn works (again): its status line replaces the prompt
                screen.drop_prompt()
                status.start()
            await asyncio.wait([reader, *active], timeout=TICK_SEC if active else None,
                               return_when=asyncio.FIRST_COMPLETED)
        raw = await reader
        screen.typed()
        if raw is None:
            return None
        if raw.strip():
            return raw.strip()


def _clear_before_logs(status: StatusLine) -> Callable[[], None]:
    """Log lines (stderr, same terminal) start on a clean line instead of after the status text."""

    def clear(record: logging.LogRecord) -> bool:
        status.clear()
        return True

    handlers = list(logging.getLogger().handlers)
    for h in handlers:
        h.addFilter(clear)

    def undo() -> None:
        for h in handlers:
            h.removeFilter(clear)

    return undo


def _endpoint_failed(result: TurnResult) -> bool:
    return result.status == "error" and result.reply.startswith(MODEL_FAILED.split("(")[0])


def _detail(result: TurnResult) -> str:
    m = re.search(r"\(([^)]*)\)", result.reply)
    return m.group(1) if m else "see the log (-v)"


def _speaker(line: str, user_id: str, local: bool) -> tuple[str, str]:
    """(who says it, what) for one input line; an empty text means a misused /as."""
    if not line.startswith("/as ") and line != "/as":
        return user_id, line
    who, _, text = line[4:].strip().partition(" ")
    return (who, text.strip()) if local and who and text.strip() else (user_id, "")


async def _until_idle_or_asking(task: asyncio.Task[TurnResult], engine: Engine, session_key: str) -> None:
    while not task.done() and not engine.services.approvals.is_waiting(session_key):  # noqa: ASYNC110 - two conditions
        await asyncio.sleep(0.02)
