"""A cgroup per bash command: the process and memory limits that bind root too.

`RLIMIT_NPROC` does not bind root (the kernel exempts uid 0 and CAP_SYS_RESOURCE, also in a user
namespace root created), and `RLIMIT_AS` bounds one process, not a tree. A `pids` cgroup bounds the
tasks of the whole command (`pids.max`), a `memory` cgroup its memory, /tmp's tmpfs pages included.
Both work where the bot may create a child of its own cgroup: as root with a writable cgroup v1
hierarchy (controllers `pids`, `memory`) or a cgroup v2 subtree whose `cgroup.subtree_control`
enables them (a delegated one for a normal user). Elsewhere `find` answers None and the caller says
what is not bounded. The command joins the group before it execs (`join_argv`), so nothing it starts
is outside; afterwards the group tells which limit was hit, and whatever is left in it is killed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

#: Limit files per controller, (cgroup v1, cgroup v2); the first of each is the limit itself.
LIMIT_FILES = {"pids": (("pids.max",), ("pids.max",)),
               "memory": (("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"), ("memory.max", "memory.swap.max"))}
PREFIX = "ania-bash-"
REMOVE_WAIT = 3.0  # seconds to wait for the killed tasks to be reaped before the group is removed


@dataclass(frozen=True)
class Controller:
    """A cgroup controller we may use: the directory under which per-command groups are made."""

    name: str
    base: Path
    v2: bool


def _mounts() -> list[tuple[str, str, str, list[str]]]:
    """(root, mount point, fstype, super options) of each cgroup mount of this process."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            out.append((fields[3], fields[4].replace("\\040", " "), rest[0], rest[2].split(",")))
    return out


def _base(name: str) -> Controller | None:
    """Our own cgroup in the hierarchy that has controller `name`, or None."""
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            own[c] = path
    for root, point, fstype, options in _mounts():
        v2 = fstype == "cgroup2"
        if (v2 and "" not in own) or (not v2 and (name not in options or name not in own)):
            continue
        rel = os.path.relpath(own["" if v2 else name], root)
        if rel.startswith(".."):
            continue  # our cgroup is not visible through this mount
        base = Path(point) / rel
        if v2 and name not in _words(base / "cgroup.subtree_control"):
            continue
        return Controller(name, base, v2)
    return None


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


@functools.cache
def find(name: str) -> Controller | None:
    """Controller `name` when a child group with its limit file can really be made (tried once)."""
    try:
        c = _base(name)
    except (OSError, ValueError):
        return None
    if c is None:
        return None
    _remove_stale(c.base)
    probe = c.base / f"{PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return None
    works = (probe / LIMIT_FILES[name][c.v2][0]).exists()
    with contextlib.suppress(OSError):
        probe.rmdir()
    return c if works else None


def _remove_stale(base: Path) -> None:
    """Remove the empty groups a bot that was killed left behind (ania-bash-<its pid>-<token>)."""
    for d in base.glob(f"{PREFIX}*-*"):
        pid = d.name.removeprefix(PREFIX).split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                d.rmdir()  # fails while a process is still in it: left alone


class Group:
    """The groups (one per controller) of one command."""

    def __init__(self, token: str, limits: dict[Controller, int]) -> None:
        """`limits`: the value of each controller's limit (pids: tasks, memory: bytes). Raises OSError."""
        self.dirs: dict[str, tuple[Controller, Path]] = {}
        try:
            for c, value in limits.items():
                d = c.base / f"{PREFIX}{os.getpid()}-{token}"
                d.mkdir()
                self.dirs[c.name] = (c, d)
                for f in LIMIT_FILES[c.name][c.v2]:  # v1 memsw after the limit: it may not be below it
                    if (d / f).exists():
                        (d / f).write_text(str(0 if f == "memory.swap.max" else value))
        except OSError:
            self.remove()
            raise

    def join_argv(self, argv: list[str]) -> list[str]:
        """`argv` run by a shell that first moves itself into every group, then execs it."""
        script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
        procs = [str(d / "cgroup.procs") for _, d in self.dirs.values()]
        return ["/bin/sh", "-c", script, "ania-cgroup", *procs, "--", *argv]

    def _counter(self, name: str, v1_file: str, v2_file: str, key: str) -> int:
        """The number after `key` in the group's flat-keyed file (`max 3`, `oom_kill 1`); 0 without it."""
        if name not in self.dirs:
            return 0
        c, d = self.dirs[name]
        words = _words(d / (v2_file if c.v2 else v1_file))
        at = words.index(key) + 1 if key in words else len(words)
        return int(words[at]) if at < len(words) and words[at].isdigit() else 0

    def pids_refused(self) -> int:
        """How many forks the process limit refused."""
        return self._counter("pids", "pids.events", "pids.events", "max")

    def oom_kills(self) -> int:
        """How many processes the memory limit killed."""
        return self._counter("memory", "memory.oom_control", "memory.events", "oom_kill")

    def remove(self) -> None:
        """Kill what is left in the groups, then remove them (blocking: run it in a thread)."""
        end = time.monotonic() + REMOVE_WAIT
        for _, d in self.dirs.values():
            while d.exists():
                for pid in _words(d / "cgroup.procs"):
                    with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
                try:
                    d.rmdir()
                except OSError:
                    if time.monotonic() > end:
                        break  # left for the operator: named ania-bash-<pid>-<token>
                    time.sleep(0.02)
        self.dirs = {}
