"""The locks across processes (services/files.py): a real second process holds the lock, this one is kept
out until it lets go; the owner lock names the holder's pid; the lock files stay in place."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import Timeout

from services.files import OwnerLock, file_lock

ROOT = Path(__file__).resolve().parent.parent
# Takes the lock, says so, and holds it until its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from services.files import OwnerLock, file_lock
path = Path(sys.argv[2])
if sys.argv[1] == "owner":
    lock = OwnerLock(path)
    assert lock.acquire() is None
    print("held", flush=True)
    sys.stdin.read()
    lock.release()
else:
    with file_lock(path):
        print("held", flush=True)
        sys.stdin.read()
"""


def holder(kind: str, path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, kind, str(path)], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def let_go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(30) == 0


def test_two_processes_never_hold_the_file_lock_at_once(tmp_path):
    path = tmp_path / "data" / "x.setup.lock"
    other = holder("file", path)
    try:
        with pytest.raises(Timeout), file_lock(path, timeout=0):
            pass
    finally:
        let_go(other)
    # Free once the other let go; a second taker in this process is kept out too.
    with file_lock(path, timeout=0), pytest.raises(Timeout), file_lock(path, timeout=0):
        pass
    assert path.exists()


def test_the_owner_lock_is_refused_with_the_holders_pid_and_taken_after_it_ends(tmp_path):
    path = tmp_path / "data" / "clock.lock"
    other = holder("owner", path)
    try:
        assert OwnerLock(path).acquire() == str(other.pid)
    finally:
        let_go(other)
    assert path.read_text() == ""  # the holder cleared its pid on release
    mine = OwnerLock(path)
    assert mine.acquire() is None and mine.acquire() is None  # taking it again is a no-op
    assert path.read_text().strip() == str(os.getpid())
    assert OwnerLock(path).acquire() == path.read_text().strip()  # another taker, even in this process
    mine.release()
    assert path.exists() and path.read_text() == ""
    assert OwnerLock(path).acquire() is None


def test_a_killed_holder_frees_the_owner_lock(tmp_path):
    path = tmp_path / "clock.lock"
    other = holder("owner", path)
    other.kill()
    other.wait(30)
    assert OwnerLock(path).acquire() is None
