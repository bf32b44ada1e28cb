"""The data directory is private to the bot's user: it holds every chat's messages, the query log and
whatever secrets users typed (issue 22, item 5).

`make_private` sets the process umask to 0o077, so everything the bot creates from then on (the SQLite
stores and the -wal/-shm/lock files SQLite and we make next to them, Chroma's files, the workspace, the
installed skills, the outbox, the clock's lock, files a sandboxed command writes) is 0600 / 0700, whoever
creates it: SQLite and Chroma pick their own modes from the umask. It then tightens what an older start
left readable by others (files lose their group and other bits, directories become 0700) and says so in
one warning naming the directory. That walk runs only while the directory itself is open to others: once
it is 0700 nobody else can reach what is inside, so every later start (and /reboot, and each `ania logs`,
`sessions`, `kb`) costs one stat, not a walk of a big Chroma store and workspace. The directory itself is
tightened last, so a walk cut short is done again at the next start. Child processes inherit the umask
(a hook or an MCP server that must share a file sets its own); what the `ania` commands print goes to
stdout, so an export redirected to a file gets the shell's umask, not ours.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
#: The file whose lock a running bot holds (its clock's: services/files.py `OwnerLock`); `ania panel` alone and
#: `ania migrate` hold it too, so no bot starts meanwhile. On a Postgres store it still keeps one bot per data
#: directory; which of the bots sharing the database fires the tasks is an advisory lock (services/clock/lease.py).
BOT_LOCK = "clock.lock"


def make_private(data_dir: Path, *, create: bool = True) -> int:
    """umask 0o077 for this process; `data_dir` created 0700 (with `create`) and, when it is open to others,
    tightened with all it holds. Returns how many entries were tightened (0 on a directory this version made)."""
    os.umask(PRIVATE_UMASK)
    if create:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        st = data_dir.stat()  # a data directory that is a link to one is the directory it names
    except OSError:
        return 0
    if not stat.S_ISDIR(st.st_mode) or not st.st_mode & 0o077:
        return 0  # missing, or already closed to others: what is inside is out of their reach
    tightened = 0
    for root, dirs, files in os.walk(data_dir):
        for name in (*dirs, *files):
            tightened += _tighten(Path(root) / name)
    tightened += _tighten(data_dir.resolve())  # last: a walk cut short leaves it open, so the next start walks again
    if tightened:
        log.warning("the data directory %s had %d entries other users could read: made them private to this "
                    "user (files 0600, directories 0700)", data_dir, tightened)
    return tightened


def _tighten(path: Path) -> int:
    """1 when `path` (not followed if a link) had group or other bits and lost them, else 0."""
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
            return 0
        os.chmod(path, 0o700 if stat.S_ISDIR(st.st_mode) else stat.S_IMODE(st.st_mode) & 0o700)
    except OSError as e:  # gone meanwhile, or not ours (a file another user put there): say so, go on
        log.warning("could not make %s private: %s", path, e)
        return 0
    return 1
