"""Running one bash command line for the bash tool: sandboxed or not, bounded output, nothing left behind.

The command gets a minimal environment (never the bot's), its own session and process group, and a
pipe for stdout+stderr that we own. When the main process ends (or times out) its group is killed;
then, unsandboxed, processes that escaped the group (`setsid`, `set -m`, double forks) are found
and killed too: every child carries a unique marker variable (`ANIA_BASH_RUN`) in its environment,
so a scan of /proc/*/environ of our uid finds them, and processes still in the command's session are
found by their session id. A command that both clears its environment and starts a new session
escapes this scan: only the sandbox (a PID namespace, services/sandbox.py) or the command's cgroup
(services/sandbox/cgroup.py, where one can be made) stops that. Resource limits: sandbox/limits.py. We never wait
for pipe EOF after the end: whatever is left is read for a short grace, then the pipe is closed, so
a survivor holding it cannot stall the call.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

from core.errors import ToolError
from services.processes import kill_group, minimal_env, spawn_group
from services.sandbox import limits as rlimits
from services.sandbox.bwrap import sandbox_env
from services.sandbox.cgroup import Group

MAX_OUTPUT_CHARS = 8000
MARKER_VAR = "ANIA_BASH_RUN"
DRAIN_GRACE = 0.5  # seconds to read what is left once the command has ended
_READ_CHUNK = 65536
_SCAN_ROUNDS = 5
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


class _Output:
    """Decodes output as it arrives, keeps the first `limit` characters and counts them all."""

    def __init__(self, limit: int) -> None:
        self.limit, self.total, self._kept_len = limit, 0, 0
        self.kept: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self.limit - self._kept_len
        if room > 0 and text:
            self.kept.append(text[:room])
            self._kept_len += len(self.kept[-1])

    def text(self) -> str:
        body = "".join(self.kept)
        if self.total > self.limit:
            body += f"\n[output truncated: {self.limit} of {self.total} characters shown]"
        return body


_PF_KTHREAD = 0x00200000
_EXEC_WAIT, _EXEC_ROUNDS = 0.02, 25  # a process caught inside execve is looked at again, up to 0.5 s


def _stat(pid: str) -> tuple[int, int] | None:
    """(session id, start time) of a process, or None when it is gone."""
    fields = _fields(pid)
    return None if fields is None else (int(fields[3]), int(fields[19]))


def _fields(pid: str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        int(fields[3]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None
    return fields


def _mid_exec(pid: str, started: int) -> bool:
    """Whether a process started after the command looks caught inside execve: between the switch to its
    new memory and the setting up of its arguments, its environment and command line read as empty, so
    the marker cannot be seen yet (a `setsid` child exec'ing its program). Kernel threads, zombies and
    processes with a real command line are not."""
    fields = _fields(pid)
    if fields is None or fields[0] in "ZX" or int(fields[6]) & _PF_KTHREAD or int(fields[19]) < started:
        return False
    try:
        return not Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def kill_escapes(marker: bytes, leader: int, started: int) -> int:
    """SIGKILL our uid's processes that carry `marker` in their environment or are still in the
    leader's session (and started after it, so a reused pid is not taken); returns how many."""
    me, uid, killed, rounds, exec_rounds = os.getpid(), os.getuid(), 0, 0, 0
    while rounds < _SCAN_ROUNDS:  # again while something was found: it may have forked meanwhile
        found, unsure = 0, False
        for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != me):
            try:
                if os.stat(f"/proc/{pid}").st_uid != uid:
                    continue
                environ = b"\0" + Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            stat = _stat(pid)
            ours = marker in environ or (stat is not None and stat[0] == leader and stat[1] >= started)
            if ours:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)
                    found += 1
            elif environ == b"\0" and _mid_exec(pid, started):
                unsure = True
        killed += found
        if found:
            rounds += 1
        elif unsure and exec_rounds < _EXEC_ROUNDS:  # look again once its execve has finished
            exec_rounds += 1
            time.sleep(_EXEC_WAIT)
        else:
            break
    return killed


def _limited(command: str, limits: rlimits.Limits, sandboxed: bool, group: Group | None) -> list[str]:
    """The shell running `command`, under `prlimit` when there are limits."""
    if limits == rlimits.Limits():
        return [SHELL, "-c", command]
    prlimit = rlimits.prlimit_path()
    if not prlimit:
        raise ToolError(rlimits.unenforceable(limits)[1])
    memory_cgroup = group is not None and "memory" in group.dirs
    base = rlimits.user_tasks(os.getuid()) if limits.max_processes and not sandboxed and rlimits.nproc_binds() else 0
    return [*limits.prlimit_argv(prlimit, sandboxed, memory_cgroup, base), SHELL, "-c", command]


async def _group(token: str, limits: rlimits.Limits, sandboxed: bool) -> Group | None:
    """The command's cgroup where one can be made; an error (fail closed) when making it fails."""
    wanted = limits.cgroup_limits(sandboxed)
    if not wanted:
        return None
    try:
        return await asyncio.to_thread(Group, token, wanted)
    except OSError as e:
        why = f"cgroup {e.filename}: {e.strerror}"
        raise ToolError(f"bash could not set up the limits of this command ({why})") from None


async def run_command(command: str, cwd: Path, timeout: float, sandbox: list[str] | None = None,
                      limits: rlimits.Limits | None = None) -> str:
    """Run `command` with bash in `cwd` (under the bwrap command line `sandbox` when given, within
    `limits`); the text the model reads: output, then `[timed out ...]` or `[exit code N]`, and which
    limit was hit."""
    cwd.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - a stat call, no real I/O wait
    token, limits = secrets.token_hex(12), limits or rlimits.Limits()
    group = await _group(token, limits, bool(sandbox))
    try:
        shell = _limited(command, limits, bool(sandbox), group)
        if sandbox:
            argv, env, marker = [*sandbox, *shell], sandbox_env(cwd), b""
        else:
            argv, env = shell, minimal_env(str(cwd), **{MARKER_VAR: token})
            marker = f"\0{MARKER_VAR}={token}\0".encode()
        return await _run(argv, env, cwd, timeout, marker, group, limits)
    finally:
        if group is not None:
            await asyncio.shield(asyncio.to_thread(group.remove))


async def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float, marker: bytes, group: Group | None,
               limits: rlimits.Limits) -> str:
    if group is not None:
        argv = group.join_argv(argv)
    read_fd, write_fd = os.pipe()
    try:
        proc = await spawn_group(asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=write_fd, stderr=asyncio.subprocess.STDOUT,
            cwd=cwd, env=env, start_new_session=True))
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    started = (_stat(str(proc.pid)) or (0, 0))[1]
    pipe = os.fdopen(read_fd, "rb", 0)
    out, stream, transport, reader = _Output(MAX_OUTPUT_CHARS), asyncio.StreamReader(), None, None
    timed_out, stopped, scanned = False, False, not marker

    async def pump() -> None:
        while chunk := await stream.read(_READ_CHUNK):
            out.feed(chunk)

    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), pipe)
        reader = asyncio.create_task(pump())
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
        kill_group(proc.pid)  # background jobs go too
        stopped = True
        if not scanned:  # in a thread: a scan of /proc takes a few ms
            await asyncio.to_thread(kill_escapes, marker, proc.pid, started)
            scanned = True
        with contextlib.suppress(TimeoutError):  # never wait for EOF: a survivor may hold the pipe
            await asyncio.wait_for(reader, DRAIN_GRACE)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 5.0)
    finally:  # cancellation and errors too: nothing is left running
        if not stopped:
            kill_group(proc.pid)
        if not scanned:
            kill_escapes(marker, proc.pid, started)
        if reader is not None:
            reader.cancel()
        (transport or pipe).close()
    out.feed(b"", final=True)
    lines = [out.text().rstrip("\n") or "(no output)"]
    if timed_out:
        lines.append(f"[timed out after {round(timeout, 1):g} s]")
    elif proc.returncode:
        lines.append(f"[exit code {proc.returncode}]")
    refused, killed = (group.pids_refused(), group.oom_kills()) if group else (0, 0)
    code = None if timed_out else proc.returncode
    return "\n".join([*lines, *rlimits.notes(limits, code, "".join(out.kept), refused, killed)])
