"""The event loop the bot runs on: uvloop where it is installed (Linux and macOS), else asyncio's own.

Why: a turn is mostly library code waiting on sockets and SQLite threads (the model's HTTP pool, the
platform's WebSocket, aiosqlite); uvloop's loop costs less CPU per wake-up: 7-15% less engine CPU per
turn over 200 in-process turns at 50 in flight. In `python -m bench.bench_throughput` (which prints both
loops) the difference is within that bench's run-to-run noise. Tests run on asyncio's loop
(pytest-asyncio), and `ANIA_EVENT_LOOP=asyncio` keeps the bot there too.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    if os.environ.get("ANIA_EVENT_LOOP", "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run` on the loop above (Ctrl-C cancels the main task, as with asyncio.run)."""
    _open_standard_fds()
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def _open_standard_fds() -> None:
    """A closed stdin, stdout or stderr (`ania chat <&-`) is opened on /dev/null: otherwise the next file
    the bot opens takes its number, and libuv aborts the process when it closes it. Reading /dev/null
    ends the terminal chat at once, as a closed stdin did."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
