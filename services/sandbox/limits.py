"""Resource limits of one bash command (processes, memory, file size, CPU time), and what the model
reads when one was hit.

Every command runs under `prlimit` (util-linux) with RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_CPU, RLIMIT_NPROC
and no core files. Inside bwrap `prlimit` runs after the sandbox's user namespace exists, so for a
normal user RLIMIT_NPROC counts the command's own processes only (the kernel counts per namespace);
unsandboxed it counts every task of the bot's user, the bot's threads included, so the limit is set to
what the user has when the command starts plus `max_processes`. The first three
bind root; RLIMIT_NPROC does not (the kernel exempts uid 0 and CAP_SYS_RESOURCE/CAP_SYS_ADMIN), and
RLIMIT_AS bounds each process, not the tree: a cgroup per command (services/sandbox/cgroup.py) does
both where the bot may make one. `unenforceable` says which limits cannot be applied here.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from services.sandbox import cgroup

MB = 1024 * 1024
_CAP_SYS_ADMIN, _CAP_SYS_RESOURCE = 21, 24
_FORK_FAILED = re.compile(r"fork: (retry: )?Resource temporarily unavailable|\[Errno 11\] Resource temporarily "
                          r"unavailable|Cannot fork|can't fork")
_ALLOC_FAILED = re.compile(r"MemoryError|Cannot allocate memory|cannot allocate|xmalloc|out of memory", re.IGNORECASE)


@dataclass(frozen=True)
class Limits:
    """Limits of one command; 0 means none."""

    max_processes: int = 0
    max_memory_mb: int = 0
    max_file_mb: int = 0
    max_cpu_sec: int = 0

    def prlimit_argv(self, prlimit: str, sandboxed: bool, memory_cgroup: bool = False,
                     nproc_base: int = 0) -> list[str]:
        """`prlimit ... --` that applies the limits to the command it execs (hard = soft, except CPU:
        SIGXCPU at the soft limit, SIGKILL a second later). Memory: RLIMIT_AS bounds everything a
        process maps, but a JVM or node cannot even start under 512 MB of it (they reserve address
        space); with a memory cgroup bounding the whole command, RLIMIT_DATA (private writable
        memory: malloc, the usual bomb) is enough per process and lets them run. `nproc_base`: the tasks
        the user already has, which an unsandboxed command's RLIMIT_NPROC counts too (`user_tasks`)."""
        argv = [prlimit, "--core=0"]
        if self.max_processes:  # + bwrap's init, which the namespace counts too
            argv.append(f"--nproc={self.max_processes + nproc_base + int(sandboxed)}")
        if self.max_memory_mb:
            argv.append(f"--{'data' if memory_cgroup else 'as'}={self.max_memory_mb * MB}")
        if self.max_file_mb:
            argv.append(f"--fsize={self.max_file_mb * MB}")
        if self.max_cpu_sec:
            argv.append(f"--cpu={self.max_cpu_sec}:{self.max_cpu_sec + 1}")
        return [*argv, "--"]

    def cgroup_limits(self, sandboxed: bool) -> dict[cgroup.Controller, int]:
        """The cgroup limit of each controller that works here (pids: + bwrap's two processes)."""
        out: dict[cgroup.Controller, int] = {}
        if self.max_processes and (c := cgroup.find("pids")):
            out[c] = self.max_processes + 2 * int(sandboxed)
        if self.max_memory_mb and (c := cgroup.find("memory")):
            out[c] = self.max_memory_mb * MB
        return out


def nproc_binds() -> bool:
    """Whether RLIMIT_NPROC binds this process's children: not for root nor with those capabilities."""
    if os.getuid() == 0:
        return False
    try:
        status = Path("/proc/self/status").read_text()
        found = re.search(r"^CapEff:\s*([0-9a-f]+)", status, re.M)
        if found is None:
            return True
        caps = int(found.group(1), 16)
    except (OSError, ValueError):
        return True
    return not caps & (1 << _CAP_SYS_ADMIN | 1 << _CAP_SYS_RESOURCE)


def user_tasks(uid: int) -> int:
    """How many tasks (threads) processes of real user `uid` have now: what RLIMIT_NPROC counts for an
    unsandboxed command. Without it, a bot whose user already runs 64 threads (a desktop session, the bot's
    own thread pools) could not start a single process under the default limit."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:  # gone meanwhile
            continue
        uid_line = re.search(r"^Uid:\s*(\d+)", text, re.M)
        threads = re.search(r"^Threads:\s*(\d+)", text, re.M)
        if uid_line and int(uid_line.group(1)) == uid:
            count += int(threads.group(1)) if threads else 1
    return count


def prlimit_path() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


def unenforceable(limits: Limits) -> tuple[list[str], str]:
    """The limits set (`max_*` names) that cannot be applied here, and why; ([], "") when all can."""
    names = [f for f in ("max_processes", "max_memory_mb", "max_file_mb", "max_cpu_sec") if getattr(limits, f)]
    if names and not prlimit_path():
        return names, "prlimit (util-linux) is not installed, so no bash.max_* limit can be applied"
    if limits.max_processes and not nproc_binds() and not cgroup.find("pids"):
        return ["max_processes"], (
            "bash.max_processes cannot be applied: the bot runs as root (or with CAP_SYS_RESOURCE), which the "
            "per-user process limit does not bind, and it cannot create a pids cgroup here (run it as a normal "
            "user, or give it a writable /sys/fs/cgroup/pids)")
    return [], ""


def notes(limits: Limits, returncode: int | None, output: str, pids_refused: int, oom_kills: int) -> list[str]:
    """What the model reads about a limit that was hit, where it can be known."""
    out = []
    sig = -returncode if returncode and returncode < 0 else (returncode - 128 if returncode and returncode > 128 else 0)
    if limits.max_processes and (pids_refused or _FORK_FAILED.search(output)):
        out.append(f"[process limit reached (bash.max_processes = {limits.max_processes}): "
                   "some processes could not be started]")
    if limits.max_memory_mb and oom_kills:
        out.append(f"[killed: the command used more memory than bash.max_memory_mb = {limits.max_memory_mb} MB]")
    elif limits.max_memory_mb and _ALLOC_FAILED.search(output):
        out.append(f"[an allocation failed: probably the memory limit (bash.max_memory_mb = {limits.max_memory_mb} "
                   "MB per process)]")
    if limits.max_file_mb and (sig == signal.SIGXFSZ or "File size limit exceeded" in output):
        out.append(f"[stopped by SIGXFSZ: a file reached the size limit (bash.max_file_mb = {limits.max_file_mb} MB)]")
    if limits.max_cpu_sec and (sig == signal.SIGXCPU or "CPU time limit exceeded" in output):
        out.append(f"[stopped by SIGXCPU: a process used its CPU time (bash.max_cpu_sec = {limits.max_cpu_sec} s)]")
    if sig == signal.SIGKILL and not oom_kills:
        out.append("[killed by SIGKILL: perhaps a resource limit (memory, or CPU time past bash.max_cpu_sec)]")
    return out
