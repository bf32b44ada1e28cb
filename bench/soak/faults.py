"""Faults the harness does from outside the bot: kill -9 and a restart, a second process holding a write lock
on the SQLite files, and the data directory refusing writes (its files made immutable for a few seconds,
`chattr +i`, which stops root too). Each returns what happened, for the report.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench.soak.bot import BotProcess

LOCK_SEC = 3.0
REFUSE_SEC = 3.0

_HOLD_LOCK = """
import sqlite3, sys, time
conns = []
for path in sys.argv[2:]:
    c = sqlite3.connect(path, isolation_level=None, timeout=5)
    c.execute("BEGIN EXCLUSIVE")
    conns.append(c)
print("locked", flush=True)
time.sleep(float(sys.argv[1]))
for c in conns:
    c.execute("ROLLBACK")
"""


def sqlite_files(data: Path) -> list[Path]:
    return sorted(p for p in data.glob("*.db") if p.is_file())


def kill_and_restart(bot: BotProcess) -> None:
    """kill -9, then start again at once (the fake keeps its side; the bot dials it again)."""
    bot.kill9()
    bot.start()


def hold_sqlite_lock(data: Path) -> str:
    """Another process takes an exclusive lock on every SQLite file of the data directory for LOCK_SEC."""
    files = sqlite_files(data)
    if not files:
        return "no SQLite file yet"
    done = subprocess.run([sys.executable, "-c", _HOLD_LOCK, str(LOCK_SEC), *map(str, files)],
                          capture_output=True, timeout=LOCK_SEC + 30, check=False)
    if done.returncode != 0:
        return "could not take the lock: " + done.stderr.decode(errors="replace").strip().splitlines()[-1]
    return f"held {len(files)} file(s) for {LOCK_SEC:g} s"


def refuse_writes(data: Path) -> str:
    """Make the data directory and its top-level files immutable for REFUSE_SEC, then writable again."""
    # SQLite's -shm index is mapped into memory; a disk that fills up leaves its pages in place, so it stays
    # writable (an immutable mapped page ends the process with SIGBUS, which no full disk does).
    targets = [data, *(p for p in data.iterdir() if p.is_file() and not p.name.endswith("-shm"))]
    names = [str(p) for p in targets]
    made = subprocess.run(["chattr", "+i", *names], capture_output=True, check=False)  # noqa: S607
    try:
        if made.returncode != 0:
            return "not available here: " + made.stderr.decode(errors="replace").strip()[:120]
        time.sleep(REFUSE_SEC)
        return f"{len(targets)} path(s) refused writes for {REFUSE_SEC:g} s"
    finally:
        subprocess.run(["chattr", "-i", *names], capture_output=True, check=False)  # noqa: S607
