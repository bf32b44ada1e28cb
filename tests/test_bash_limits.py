"""The bash tool's resource limits (issue 22, item 9), attacked through the real engine: a fork bomb,
memory bombs, a file size bomb and a CPU loop each fail inside the call, say which limit they hit,
and another chat is answered meanwhile. Unsandboxed and, where bubblewrap works, sandboxed.

Every bomb here is bounded on its own (at most 200 `sleep` processes, a timeout, a kill at the end):
the machine running the tests is shared.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from ania.fakes.openai_server import Calls, Reply
from services.sandbox import limits as rlimits
from services.sandbox.bwrap import SANDBOX_PATH
from tests.conftest import make_settings
from tests.test_bash import NEEDS_BWRAP, mode, mode_secs, procs_with, wait_no_procs  # noqa: F401 - the fixture

PY = shutil.which("python3", path=SANDBOX_PATH)  # the system's: the bot's virtualenv is hidden in the sandbox
NEEDS_PY = pytest.mark.skipif(PY is None, reason="no system python3 to write the bombs with")
NEEDS_NPROC = pytest.mark.skipif(bool(rlimits.unenforceable(rlimits.Limits(max_processes=16))[0]),
                                 reason="root without a writable pids cgroup: no process limit binds here")


def fork_bomb(sandbox: str) -> tuple[str, str]:
    """A command that tries to hold 200 sleeping processes, prints how many it got and why it stopped, and
    kills them at the end; and its `sleep` token (the mode's own, so other tests' sleeps are not counted)."""
    secs = mode_secs(sandbox, 5.221)
    return (f"{PY} -c 'import subprocess\nps = []\ntry:\n    for _ in range(200):\n"
            f"        ps.append(subprocess.Popen([\"sleep\", \"{secs}\"]))\n"
            "except OSError as e:\n    print(e)\nprint(\"started\", len(ps))\nfor p in ps:\n    p.kill()\n'"), f"sleep {secs}"


def responder(body: dict[str, Any]) -> Reply | Calls:
    """`run: CMD` calls bash with CMD, a tool result is echoed back as the answer, anything else is greeted."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply("result:\n" + str(last["content"]))
    text = str(last.get("content") or "")
    if "run: " in text:
        return Calls([("bash", {"command": text.split("run: ", 1)[1]})])
    return Reply("hi there")


async def chat_with_limits(scripted_llm, make_chat, tmp_path: Path, sandbox: str, data: str = "data", **limits: int):
    scripted_llm.respond_with(responder)
    bash = {"enable": True, "workdir": str(tmp_path / "ws"), "sandbox": sandbox, "timeout_sec": 60, **limits}
    return await make_chat(make_settings(scripted_llm, approval={"enable": False}, bash=bash), data=tmp_path / data)


async def run(chat, command: str, session: str = "g:1") -> str:
    out = await chat.say(session, "u1", f"run: {command}")
    assert out and out[-1].startswith("result:\n"), out
    return out[-1].removeprefix("result:\n")


async def test_the_defaults_apply(scripted_llm, make_chat, tmp_path: Path, mode: str) -> None:  # noqa: F811
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, mode)
    out = await run(chat, "ulimit -u; ulimit -v; ulimit -d; ulimit -f; ulimit -t; ulimit -c")
    nproc, vmem, data, fsize, cpu, core = out.split("\n")
    memory = (data, vmem) if rlimits.cgroup.find("memory") else (vmem, data)  # AS without a memory cgroup
    if not rlimits.unenforceable(rlimits.Limits(max_processes=64))[0]:  # else dropped with a warning (below)
        assert int(nproc) in (64, 65)
    assert memory == (str(512 * 1024), "unlimited") and fsize == str(64 * 1024)
    assert cpu == "30" and core == "0"


@NEEDS_PY
@NEEDS_NPROC
async def test_a_fork_bomb_is_bounded_and_another_chat_is_answered(scripted_llm, make_chat, tmp_path: Path,
                                                                   mode: str) -> None:  # noqa: F811
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, mode, max_processes=16)
    command, sleeps = fork_bomb(mode)
    bomb = asyncio.create_task(run(chat, command))
    try:
        for _ in range(500):  # until the bomb holds its processes (or has ended)
            if procs_with(sleeps) or bomb.done():
                break
            await asyncio.sleep(0.02)
        held = len(procs_with(sleeps))
        assert await chat.say("g:2", "u2", "hello") == ["hi there"]  # the bot answers meanwhile
        out = await asyncio.wait_for(bomb, 60)
    finally:
        bomb.cancel()
        assert wait_no_procs(sleeps)
    started = int(out.split("started ")[1].split()[0])
    assert 1 <= started < 16 and held < 16, out  # not 200
    assert "Resource temporarily unavailable" in out
    assert "[process limit reached (bash.max_processes = 16)" in out


@NEEDS_PY
async def test_memory_bombs_fail(scripted_llm, make_chat, tmp_path: Path, mode: str) -> None:  # noqa: F811
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, mode, max_memory_mb=256)
    out = await run(chat, f"{PY} -c 'x = bytearray(1200 * 1024 * 1024); print(len(x))'")
    assert "MemoryError" in out and "1258291200" not in out
    assert "memory limit (bash.max_memory_mb = 256 MB" in out
    out = await run(chat, "x=$(head -c 400M /dev/zero | tr '\\0' a); echo ${#x}")
    assert "419430400" not in out.split("\n") and "bash.max_memory_mb = 256" in out
    # refused by the per-process limit, or killed by the memory cgroup (copying the string takes twice)
    assert "cannot allocate" in out or "[killed: the command used more memory" in out, out


async def test_a_file_size_bomb_fails_at_the_limit(scripted_llm, make_chat, tmp_path: Path, mode: str) -> None:  # noqa: F811
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, mode, max_file_mb=8)
    out = await run(chat, "head -c 300M /dev/zero > big; dd if=/dev/zero of=big2 bs=1M count=300 2>/dev/null")
    assert "[stopped by SIGXFSZ: a file reached the size limit (bash.max_file_mb = 8 MB)]" in out
    sizes = [os.path.getsize(tmp_path / "ws" / f) for f in ("big", "big2")]
    assert sizes == [8 * 1024 * 1024] * 2


@NEEDS_PY
async def test_a_cpu_loop_ends_at_the_cpu_limit(scripted_llm, make_chat, tmp_path: Path, mode: str) -> None:  # noqa: F811
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, mode, max_cpu_sec=2)
    out = await run(chat, f"{PY} -c 'while True: pass'")
    assert "[stopped by SIGXCPU: a process used its CPU time (bash.max_cpu_sec = 2 s)]" in out
    assert "timed out" not in out


async def test_a_process_limit_that_cannot_be_applied_refuses_the_call(scripted_llm, make_chat, tmp_path: Path,
                                                                       monkeypatch, caplog) -> None:
    """Root with no pids cgroup: RLIMIT_NPROC would not bind. A limit the operator set refuses the call
    (fail closed); the default one is dropped with one warning, like bash.sandbox = "auto"."""
    if rlimits.nproc_binds():
        pytest.skip("RLIMIT_NPROC binds this user: the limit applies without a cgroup")
    monkeypatch.setattr(rlimits.cgroup, "find", lambda name: None)  # a host without a writable cgroup fs
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, "off", max_processes=16)
    out = await run(chat, "echo ran")
    assert "bash.max_processes cannot be applied" in out and "ran" not in out.split("\n")
    assert "Set bash.max_processes = 0 to run without it" in out
    assert any(r.levelno == logging.ERROR and "every bash call is refused" in r.message for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tools.bash"):
        chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, "off", data="data2")  # the defaults
    warnings = [r.message for r in caplog.records if r.name == "tools.bash"]
    assert len(warnings) == 1 and "commands run WITHOUT it" in warnings[0] and "bash.max_processes" in warnings[0]
    assert await run(chat, "echo ran; ulimit -f") == f"ran\n{64 * 1024}"  # the other limits still apply


@NEEDS_BWRAP
async def test_a_tmp_filler_in_the_sandbox_is_bounded(scripted_llm, make_chat, tmp_path: Path) -> None:
    """The sandbox's /tmp and /dev/shm are memory (tmpfs): each is capped at half of bash.max_memory_mb,
    and the rest of /dev is read-only."""
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, "bwrap", max_memory_mb=128, max_file_mb=8)
    for d in ("/tmp", "/dev/shm"):
        out = await run(chat, f"for i in $(seq 40); do head -c 8M /dev/zero > {d}/f$i || break; done; du -sm {d}")
        assert "No space left on device" in out and int(out.split("\n")[-1].split()[0]) <= 65, out  # du rounds up
    assert "Read-only file system" in await run(chat, "touch /dev/x")


NOBODY_CHILD = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from services.sandbox.bwrap import bwrap_args, probe
from services.sandbox.limits import Limits, nproc_binds, unenforceable
from services.sandbox.run import run_command
ws, limits = Path(sys.argv[2]), Limits(max_processes=16)
sandbox = bwrap_args(ws, disable_userns=probe()[1]) if sys.argv[3] == "bwrap" else None
print("binds", nproc_binds(), "problem", repr(unenforceable(limits)[1]))
print(asyncio.run(run_command(sys.argv[4], ws, 60, sandbox, limits)))
"""


@NEEDS_PY
@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as nobody")
@pytest.mark.xdist_group("nobody")  # RLIMIT_NPROC counts every process of the user: one at a time
def test_as_a_normal_user_the_per_user_process_limit_binds(mode: str) -> None:  # noqa: F811
    """No cgroup for a normal user: RLIMIT_NPROC bounds the bomb (inside bwrap, counted per namespace)."""
    command, sleeps = fork_bomb(mode)
    ws = Path(tempfile.mkdtemp(prefix="ania-nobody-"))
    leftover = settle_nobody()
    try:
        os.chown(ws, 65534, 65534)
        ws.chmod(0o755)
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", NOBODY_CHILD,
                str(Path(__file__).resolve().parents[1]), str(ws), mode, command]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=ws)
    finally:
        shutil.rmtree(ws, ignore_errors=True)
        assert wait_no_procs(sleeps)
    if "binds" not in done.stdout:
        pytest.skip(f"cannot run the bot's python as nobody here: {done.stderr[-300:]}")
    assert "binds True problem ''" in done.stdout, done.stdout + done.stderr
    started = int(done.stdout.split("started ")[1].split()[0])
    assert 1 <= started < 16 and "[process limit reached (bash.max_processes = 16)" in done.stdout, \
        f"{done.stdout}\nnobody's tasks before: {leftover}, after: {nobody_processes()}"


def nobody_processes() -> str:
    """`ps` of user nobody's processes (what a failure of the per-user limit needs to be read)."""
    return subprocess.run(["ps", "-u", "65534", "-o", "pid,stat,etime,cmd"], capture_output=True, text=True,
                          check=False).stdout


def settle_nobody(within: float = 10.0) -> int:
    """Wait (bounded) until no task of user nobody is left from an earlier test, whose exit could still be
    counted against this one's RLIMIT_NPROC (the variant before it ran a fork bomb as nobody); the count
    left, for a failure's message."""
    end = time.monotonic() + within
    while rlimits.user_tasks(65534) and time.monotonic() < end:
        time.sleep(0.05)
    return rlimits.user_tasks(65534)


THREADED_CHILD = """
import asyncio, sys, threading
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from services.sandbox.limits import Limits
from services.sandbox.run import run_command
stop = threading.Event()
for _ in range(80):  # a user (and a bot) that already runs more threads than the limit
    threading.Thread(target=stop.wait, daemon=True).start()
print(asyncio.run(run_command("echo one; echo two | wc -l", Path(sys.argv[2]), 60, None, Limits(max_processes=16))))
stop.set()
"""


@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to act as nobody")
@pytest.mark.xdist_group("nobody")  # RLIMIT_NPROC counts every process of the user: one at a time
def test_unsandboxed_the_process_limit_counts_from_what_the_user_already_runs() -> None:
    """RLIMIT_NPROC counts every task of the user: with 80 threads already running, a limit of 16 taken as it
    is would refuse the command's first fork."""
    ws = Path(tempfile.mkdtemp(prefix="ania-nobody-"))
    settle_nobody()
    try:
        os.chown(ws, 65534, 65534)
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", THREADED_CHILD,
                str(Path(__file__).resolve().parents[1]), str(ws)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=ws)
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    if "one" not in done.stdout and "Traceback" in done.stderr:
        pytest.skip(f"cannot run the bot's python as nobody here: {done.stderr[-300:]}")
    assert done.stdout.split("\n")[:2] == ["one", "1"], done.stdout + done.stderr
    assert "process limit" not in done.stdout


def test_the_groups_counters_are_read_from_their_files(tmp_path: Path) -> None:
    """pids.events and memory.oom_control / memory.events: the number after the key, 0 when absent."""
    group = object.__new__(rlimits.cgroup.Group)  # no real cgroup: its files written here
    v1, v2 = (rlimits.cgroup.Controller(n, tmp_path, v) for n, v in (("pids", False), ("memory", True)))
    group.dirs = {"pids": (v1, tmp_path / "p"), "memory": (v2, tmp_path / "m")}
    assert (group.pids_refused(), group.oom_kills()) == (0, 0)  # no files
    (tmp_path / "p").mkdir()
    (tmp_path / "m").mkdir()
    (tmp_path / "p" / "pids.events").write_text("max 3\n")
    (tmp_path / "m" / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 2\noom_kill 1\noom_group_kill 0\n")
    assert (group.pids_refused(), group.oom_kills()) == (3, 1)
    (tmp_path / "p" / "pids.events").write_text("max\n")
    assert group.pids_refused() == 0


def test_groups_a_killed_bot_left_behind_are_removed() -> None:
    pids = rlimits.cgroup.find("pids")
    if pids is None:
        pytest.skip("no pids cgroup can be made here")
    stale, live = pids.base / "ania-bash-999999999-0badc0de", pids.base / f"ania-bash-{os.getpid()}-0badc0de"
    stale.mkdir()
    live.mkdir()
    try:
        rlimits.cgroup.find.__wrapped__("pids")  # the next bot's first look
        assert not stale.exists() and live.exists()  # ours (a live pid) stays
    finally:
        for d in (stale, live):
            if d.exists():
                d.rmdir()


async def test_the_cgroup_also_ends_what_escaped_unsandboxed(scripted_llm, make_chat, tmp_path: Path) -> None:
    """`env -i setsid` escapes the unsandboxed scan (no marker, a new session); not the command's cgroup."""
    if rlimits.cgroup.find("pids") is None:
        pytest.skip("no pids cgroup can be made here")
    chat = await chat_with_limits(scripted_llm, make_chat, tmp_path, "off")
    try:
        assert await run(chat, "env -i setsid sleep 303.7 & echo started") == "started"
        assert wait_no_procs("sleep 303.7")
    finally:
        for pid in procs_with("sleep 303.7"):
            os.kill(pid, 9)
