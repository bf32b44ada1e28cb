"""Process figures in the log, for soak runs (`logs.stats_sec`): one line every few seconds with the number
of asyncio tasks, threads and open file descriptors of the bot.

psutil can read threads and files from outside the process, but only the process itself can count its asyncio
tasks; a leak of tasks (a turn, a retry or a link that never lets go) shows here first. Off by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

log = logging.getLogger(__name__)

#: The line's prefix; `bench/soak` reads the numbers after it.
STATS = "process stats:"


def stats_line() -> str:
    """`process stats: tasks=N threads=N fds=N` of this process now (fds -1 where /proc is missing)."""
    fds = Path(f"/proc/{os.getpid()}/fd")
    try:
        files = len(os.listdir(fds))
    except OSError:
        files = -1
    return f"{STATS} tasks={len(asyncio.all_tasks())} threads={threading.active_count()} fds={files}"


@contextlib.asynccontextmanager
async def process_stats(every_sec: float) -> AsyncIterator[None]:
    """Log `stats_line()` every `every_sec` seconds while the context is open (0: nothing)."""
    if every_sec <= 0:
        yield
        return

    async def beat() -> None:
        while True:
            log.info(stats_line())
            await asyncio.sleep(every_sec)

    task = asyncio.create_task(beat(), name="process-stats")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
