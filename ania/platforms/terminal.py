"""The terminal platform: `ania chat`. Each input line is a message from the local user.

At a TTY lines are read freely (so `/stop` works mid-turn). With piped stdin the next line is read
once the current turn has finished or is waiting for an approval, so a script like
`printf 'run ls\nallow\n' | ania chat` answers the approval the way a person would.

`/as <user> <text>` sends one line as another user (e.g. a second admin answering a configuration
change's approval). Only the local operator may: with `--user`, the terminal has that user's rights
and nothing more.
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


async def run_terminal(engine: Engine, session_key: str, user_id: str, out: TextIO = sys.stdout,
                       local: bool = False) -> None:
    """`local`: the person at the terminal is the bot's operator (no --user), who may speak `/as` others."""
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
    bridge = ChatBridge(send, engine.services.paths.data_dir / "outbox" / session_key)
    entry = MessageEntry(engine, lambda _key: bridge)
    reader = await _stdin_lines()
    if tty:
        role = "an admin" if engine.services.admins.is_admin(user_id) else "not an admin"
        out.write(f"Ania chat, session {session_key} (you are {user_id}, {role}). "
                  "Type a message; /help lists the commands, /stop stops a turn, Ctrl-D quits.\n")
        out.flush()
    while True:
        raw = await reader.readline()
        if not raw:
            break
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            continue
        speaker, line = _speaker(line, user_id, local)
        if not line:
            emit("Usage: /as <user> <text> (only the local operator, without --user)")
            continue
        task = await entry.submit(session_key, speaker, line)
        if task is not None and not tty:
            await _until_idle_or_asking(task, engine, session_key)
    await entry.drain()
    detach()


def _speaker(line: str, user_id: str, local: bool) -> tuple[str, str]:
    """(who says it, what) for one input line; an empty text means a misused /as."""
    if not line.startswith("/as ") and line != "/as":
        return user_id, line
    who, _, text = line[4:].strip().partition(" ")
    return (who, text.strip()) if local and who and text.strip() else (user_id, "")


async def _until_idle_or_asking(task: asyncio.Task, engine: Engine, session_key: str) -> None:
    while not task.done() and not engine.services.approvals.is_waiting(session_key):  # noqa: ASYNC110 - two conditions
        await asyncio.sleep(0.02)
