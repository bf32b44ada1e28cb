"""The runtime the bot runs on: uvloop where it is installed (Linux and macOS), else asyncio's own, and the
garbage collector tuned for a long-running server.

Why: a turn is mostly library code waiting on sockets and SQLite threads (the model's HTTP pool, the
platform's WebSocket, aiosqlite); uvloop's loop costs less CPU per wake-up: 7-15% less engine CPU per
turn over 200 in-process turns at 50 in flight. In `python -m bench.bench_throughput` (which prints both
loops) the difference is within that bench's run-to-run noise. Tests run on asyncio's loop
(pytest-asyncio), and `ANIA_EVENT_LOOP=asyncio` keeps the bot there too.

The collector: with CPython's default young-generation threshold (700 allocations), 50 turns in flight
trigger a collection every few hundred microseconds of work, and each older-generation collection rescans
everything imported and built at startup. Measured over 200 in-process turns at 50 in flight: 240 ms of
collections before, 40 ms with `GC_THRESHOLDS` and the startup heap frozen (about 1 ms of CPU per turn,
9% of it). Only reference cycles wait longer to be freed; the rest is freed when its last reference goes,
as before. `ANIA_GC=default` keeps CPython's settings.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: The collector's thresholds while the bot runs (CPython's are 700, 10, 10).
GC_THRESHOLDS = (10_000, 10, 10)


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
    before = gc.get_threshold()
    if _tune_gc():
        gc.set_threshold(*GC_THRESHOLDS)
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(main)
    finally:
        gc.set_threshold(*before)


def settle_heap() -> None:
    """Called once the engine has started: what startup built (modules, compiled graphs, settings, tool
    schemas) lives as long as the process, so it is moved out of the collector's sight (`gc.freeze`) and
    later collections scan only what turns allocate."""
    if _tune_gc():
        gc.collect()
        gc.freeze()


def _tune_gc() -> bool:
    return os.environ.get("ANIA_GC", "").strip().lower() != "default"


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
