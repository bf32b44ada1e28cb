"""Several processes opening one fresh data directory at once (two bots, bench workers, `ania sessions`
while the bot starts) all find the store migrated; none fails on a table another one just created."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from services.store import MIGRATIONS

ROOT = Path(__file__).resolve().parent.parent
OPEN_AT = """
import sys, time
from pathlib import Path
from services.store import AppStore
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time() - 0.01))  # asleep until just before the start (spinning cost seconds of CPU)
while time.time() < start:  # then together to the microsecond
    pass
AppStore(Path(sys.argv[1]))
print("ok")
"""


def test_processes_starting_together_all_find_the_store_migrated(tmp_path):
    import time

    for attempt in range(4):  # a few fresh files: the race needs the processes to meet in the migration
        db = tmp_path / f"try{attempt}" / "ania.db"
        start = time.time() + 1.5  # after the imports of every process
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, str(db), str(start)], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
        results = [p.communicate(timeout=60) for p in procs]
        assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, results, strict=True)] == [(0, "ok")] * 6, \
            [err for _, err in results]
        with sqlite3.connect(db) as conn:
            applied = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]
        assert applied == [name for name, _ in MIGRATIONS]


OPEN_CHECKPOINTS_AT = """
import asyncio, sys, time
from pathlib import Path
from checkpoints.factory import open_checkpointer
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time() - 0.01))  # asleep until just before the start (spinning cost seconds of CPU)
while time.time() < start:  # then together to the microsecond
    pass

async def main():
    async with open_checkpointer(Path(sys.argv[1])) as saver:
        await saver.conn.execute("SELECT 1")

asyncio.run(main())
print("ok")
"""


def test_processes_starting_together_all_open_the_checkpoints():
    """The same for data/checkpoints.db, whose setup also switches a new file to WAL (the store's crash
    came from that switch; here it did not reproduce, the lock file guards it the same way)."""
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as tmp:
        for attempt in range(4):
            data = Path(tmp) / f"try{attempt}"
            start = time.time() + 2.5
            procs = [subprocess.Popen([sys.executable, "-c", OPEN_CHECKPOINTS_AT, str(data), str(start)], cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
            results = [p.communicate(timeout=60) for p in procs]
            assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, results, strict=True)] == \
                [(0, "ok")] * 6, [err for _, err in results]
