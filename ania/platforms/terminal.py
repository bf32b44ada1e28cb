"""The terminal platform: `ania chat`. Each input line is a message from the local user.

Texts for the session that arrive between turns (a scheduled task's reply, C5) are printed as they arrive.
At a TTY lines are read freely (so `/stop` works mid-turn). With piped stdin the next line is read
once the current turn has finished or is waiting for an approval, so a script like
`printf 'run ls\nallow\n' | ania chat` answers the approval the way a person would.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from ania.engine import Engine
from ania.entry import MessageEntry
from ania.platforms.bridge import ChatBridge


async def _stdin_lines() -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def run_terminal(engine: Engine, session_key: str, user_id: str, out: TextIO = sys.stdout) -> None:
    tty = sys.stdin.isatty()

    def emit(text: str) -> None:
        out.write(("ania> " if tty else "") + text + "\n")
        out.flush()

    async def send(text: str) -> None:
        emit(text)

    async def outbox(session: str, text: str) -> bool:
        emit(text if session == session_key else f"[to {session}] {text}")
        return True

    detach = engine.services.outboxes.attach("terminal", outbox)
    await engine.services.clock.start()  # scheduled tasks fire while the chat waits for input; replies print here
    bridge = ChatBridge(send, engine.services.paths.data_dir / "outbox" / session_key)
    entry = MessageEntry(engine, lambda _key: bridge)
    reader = await _stdin_lines()
    if tty:
        role = "an admin" if engine.services.admins.is_admin(user_id) else "not an admin"
        out.write(f"Ania chat, session {session_key} (you are {user_id}, {role}). "
                  "Type a message; /stop stops a turn, /plan on|off, Ctrl-D quits.\n")
        out.flush()
    while True:
        raw = await reader.readline()
        if not raw:
            break
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            continue
        task = await entry.submit(session_key, user_id, line)
        if task is not None and not tty:
            await _until_idle_or_asking(task, engine, session_key)
    await entry.drain()
    detach()


async def _until_idle_or_asking(task: asyncio.Task, engine: Engine, session_key: str) -> None:
    while not task.done() and not engine.services.approvals.is_waiting(session_key):  # noqa: ASYNC110 - two conditions
        await asyncio.sleep(0.02)
