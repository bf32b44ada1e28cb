"""The bash sandbox (bubblewrap) and the kill of escaped processes, with real subprocesses.

Tests that need a working bwrap skip with a reason where it is missing; the others run anywhere.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from core.errors import ToolError
from services.sandbox import bwrap as sandbox
from tests.test_bash import NEEDS_BWRAP, make_ctx, mode, mode_secs, procs_with, run, tool, wait_no_procs  # noqa: F401
from tools import bash as bash_module
from tools.bash import BashParams

SECRET = "sk-sandbox-secret-4711"


def workspace_and_config(tmp_path: Path) -> tuple[Path, Path]:
    """The bot's layout: <root>/data/workspace next to <root>/config/ania.toml holding an API key."""
    cfg = tmp_path / "config"
    cfg.mkdir()
    (cfg / "ania.toml").write_text(f'[llm]\napi_key = "{SECRET}"\n')
    return tmp_path / "data" / "workspace", cfg


# --- 4. secrets one `cat` away, sandboxed -----------------------------------------------------------


@NEEDS_BWRAP
async def test_sandboxed_parent_environ_has_no_secret(tmp_path: Path, make_ctx, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("ANIA_LLM__API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    t = tool(tmp_path, whitelist=[r"^cat\b", r"^tr\b"], sandbox="bwrap")
    assert t.classify("cat /proc/$PPID/environ") == "allow"  # whitelisted: the sandbox is the protection
    out = await run(t, await make_ctx(), "cat /proc/$PPID/environ /proc/1/environ /proc/self/environ | tr '\\0' '\\n'")
    assert SECRET not in out and "PATH=" in out
    out = await run(t, await make_ctx(), "echo $PPID; tr '\\0' ' ' < /proc/1/cmdline; echo; ls /proc | grep -c '^[0-9]'")
    ppid, init, count = out.split("\n")
    assert ppid == "1" and init.split()[0].endswith("bwrap") and int(count) <= 4  # the bot is not in there


@NEEDS_BWRAP
async def test_sandboxed_config_next_to_the_workspace_cannot_be_read(tmp_path: Path, make_ctx) -> None:  # noqa: F811
    ws, cfg = workspace_and_config(tmp_path)
    t = tool(tmp_path, workdir=str(ws), sandbox="bwrap")
    for line in ("cat ../../config/ania.toml", f"cat {cfg}/ania.toml", "cat ../../*/ania.toml"):
        out = await run(t, await make_ctx(), line)
        assert SECRET not in out and "No such file" in out and out.endswith("[exit code 1]")


@NEEDS_BWRAP
async def test_sandboxed_bot_files_are_invisible_and_the_system_read_only(tmp_path: Path, make_ctx) -> None:  # noqa: F811
    repo = Path(__file__).resolve().parents[1]
    t = tool(tmp_path, sandbox="bwrap")
    out = await run(t, await make_ctx(), f"ls {repo}/README.md {sys.prefix}")
    assert f"cannot access '{repo}/README.md'" in out and f"cannot access '{sys.prefix}'" in out
    top = set((await run(t, await make_ctx(), "ls /")).split())
    assert {"usr", "etc", "tmp", "proc", "dev"} <= top and not top & {"root", "home", "work", "var", "opt"}
    out = await run(t, await make_ctx(), "id -u; touch /usr/x /etc/x; echo ok")
    assert out.startswith("65534\n") and "Read-only file system" in out and out.endswith("ok")
    assert "root:" not in await run(t, await make_ctx(), "cat /etc/shadow")  # masked


@NEEDS_BWRAP
@pytest.mark.parametrize("network", [False, True])
async def test_sandboxed_network_only_when_enabled(tmp_path: Path, make_ctx, network: bool) -> None:  # noqa: F811
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(5)
    port, got = server.getsockname()[1], []

    def serve() -> None:
        try:
            got.append(server.accept()[0].recv(100))
        except OSError:  # timed out, or closed: nobody came
            pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        t = tool(tmp_path, sandbox="bwrap", network=network)
        out = await run(t, await make_ctx(), f"echo hello > /dev/tcp/127.0.0.1/{port} && echo sent")
    finally:
        time.sleep(0.1)
        server.close()
    if network:
        assert out == "sent" and got == [b"hello\n"]
    else:
        assert "sent" not in out and out.endswith("[exit code 1]") and got == []


# --- 5. setsid escapes the kill -------------------------------------------------------------------


async def test_setsid_background_job_does_not_hold_the_call(tmp_path: Path, make_ctx, mode: str) -> None:  # noqa: F811
    t, secs = tool(tmp_path, timeout_sec=20, sandbox=mode), mode_secs(mode, 301)
    out = await run(t, await make_ctx(), f"setsid sleep {secs} & echo started")
    assert out == "started"  # not "[timed out after 20 s]"
    assert wait_no_procs(f"sleep {secs}")


@pytest.mark.parametrize("line", [
    "setsid sleep 302.1 & echo started", "(setsid sleep 302.2 &) ; echo started",
    "set -m; sleep 302.3 & echo started", "setsid -f sleep 302.4; echo started",
    "nohup setsid sh -c 'sleep 302.5' >/dev/null 2>&1 & echo started",
    "setsid bash -c 'trap \"\" TERM HUP; exec sleep 302.6' & echo started",
])
async def test_escaped_descendants_are_killed(tmp_path: Path, make_ctx, mode: str, line: str) -> None:  # noqa: F811
    line = line.replace("sleep 302.", f"sleep {mode_secs(mode, 302)}.")
    token = "sleep " + line.split("sleep ")[1].split()[0].rstrip("'")
    out = await run(tool(tmp_path, timeout_sec=20, sandbox=mode), await make_ctx(), line)
    assert out == "started"
    assert wait_no_procs(token)


async def test_a_survivor_holding_the_pipe_does_not_hold_the_call(tmp_path: Path, make_ctx, mode: str) -> None:  # noqa: F811
    """`env -i` drops the marker and `setsid` the session: unsandboxed this one survives (documented);
    the call still returns at once. Sandboxed, the PID namespace takes it down too."""
    token = f"sleep {mode_secs(mode, 303.1)}"
    line = f"env -i setsid {token} & echo started"
    try:
        out = await run(tool(tmp_path, timeout_sec=20, sandbox=mode), await make_ctx(), line)
        assert out == "started"
        if mode == "bwrap":
            assert wait_no_procs(token)
    finally:
        for pid in procs_with(token):
            os.kill(pid, signal.SIGKILL)


@NEEDS_BWRAP
def test_a_crash_of_the_bot_kills_its_sandboxed_commands(tmp_path: Path) -> None:
    bot = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from pathlib import Path
        from services.sandbox.bwrap import bwrap_args
        from services.sandbox.run import run_command
        ws = Path({str(tmp_path / "ws")!r})
        ws.mkdir()
        asyncio.run(run_command("setsid sleep 304.1 & sleep 304.2", ws, 60, bwrap_args(ws)))
    """)
    proc = subprocess.Popen([sys.executable, "-c", bot], start_new_session=True)
    try:
        end = time.monotonic() + 10
        while not (procs_with("sleep 304.1") and procs_with("sleep 304.2")) and time.monotonic() < end:
            time.sleep(0.05)
        assert procs_with("sleep 304.1") and procs_with("sleep 304.2")
        proc.kill()  # the bot dies without cleaning up
        proc.wait()
        assert wait_no_procs("sleep 304.1") and wait_no_procs("sleep 304.2")
    finally:
        proc.kill()


# --- settings: auto, bwrap, off -------------------------------------------------------------------


def sandbox_records(caplog) -> list[logging.LogRecord]:
    """The log lines about the sandbox (not the one about a resource limit this host cannot apply)."""
    return [r for r in caplog.records if "bash.max_" not in r.getMessage()]


def broken_bwrap(monkeypatch) -> None:
    monkeypatch.setattr(bash_module, "probe", lambda: (False, False, "bwrap is not installed"))


async def test_required_sandbox_missing_refuses_every_call(tmp_path: Path, make_ctx, monkeypatch, caplog) -> None:  # noqa: F811
    broken_bwrap(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="tools.bash"):
        t = tool(tmp_path, whitelist=[r"^echo\b"], sandbox="bwrap")
    records = sandbox_records(caplog)
    assert [r.levelname for r in records] == ["ERROR"] and "bash.sandbox" in records[0].message
    assert t.approval_reason(BashParams(command="rm x"), await make_ctx()) is None  # no human to bother
    for line in ("echo hi", "rm x"):
        with pytest.raises(ToolError) as e:
            await run(t, await make_ctx(), line)
        assert 'bash.sandbox = "bwrap"' in str(e.value) and "bwrap is not installed" in str(e.value)
    assert not (tmp_path / "ws").exists()


async def test_auto_without_bwrap_warns_once_and_runs_unsandboxed(tmp_path: Path, make_ctx, monkeypatch, caplog) -> None:  # noqa: F811
    broken_bwrap(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="tools.bash"):
        t = tool(tmp_path, sandbox="auto")
    records = sandbox_records(caplog)
    assert [r.levelname for r in records] == ["WARNING"] and "UNSANDBOXED" in records[0].message
    assert not t.sandboxed
    assert "ANIA_BASH_RUN=" in await run(t, await make_ctx(), "env")  # the escape marker of unsandboxed runs
    assert len(sandbox_records(caplog)) == 1


def test_the_probe_runs_a_real_sandbox_once(monkeypatch) -> None:
    if not sandbox.bwrap_path():
        pytest.skip("bwrap is not installed")
    assert sandbox.probe() == sandbox.probe()
    assert sandbox.probe.cache_info().misses <= 1
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    assert sandbox.probe.__wrapped__() == (False, False, "bwrap is not installed (apt-get install bubblewrap)")


def test_bot_dirs_inside_system_dirs_are_hidden(tmp_path: Path) -> None:
    args = sandbox.bwrap_args(tmp_path, hide=[Path("/usr/share"), tmp_path / "elsewhere"])
    assert "--tmpfs /usr/share" in " ".join(args)  # an existing dir under a bound system dir
    assert str(tmp_path / "elsewhere") not in args  # never bound, so nothing to hide
    assert args[-5:] == ["--bind", str(tmp_path), str(tmp_path), "--chdir", str(tmp_path)]
    assert "--unshare-net" in args and "--unshare-net" not in sandbox.bwrap_args(tmp_path, network=True)


async def test_a_cancelled_call_leaves_nothing_running(tmp_path: Path, make_ctx, mode: str) -> None:  # noqa: F811
    first, second = f"sleep {mode_secs(mode, 305.1)}", f"sleep {mode_secs(mode, 305.2)}"
    call = asyncio.create_task(run(tool(tmp_path, sandbox=mode), await make_ctx(), f"{first} & setsid {second} & wait"))
    end = time.monotonic() + 30  # a loaded CI machine
    while not (procs_with(first) and procs_with(second)) and time.monotonic() < end:
        await asyncio.sleep(0.02)
    assert procs_with(first) and procs_with(second)
    call.cancel()  # /stop, or the turn's deadline
    with pytest.raises(asyncio.CancelledError):
        await call
    assert wait_no_procs(first) and wait_no_procs(second)


def test_the_escape_scan_waits_only_for_processes_inside_execve() -> None:
    """A process between execve's switch of memory and its arguments reads as an empty environment (so
    the marker is not seen yet): the scan looks again. Kernel threads, earlier processes and ordinary
    ones are not waited for."""
    from services.sandbox import run as sandbox_run

    me = str(os.getpid())
    assert not sandbox_run._mid_exec(me, 0)  # a command line
    assert not sandbox_run._mid_exec("2", 0)  # kthreadd
    assert not sandbox_run._mid_exec(me, 1 << 62)  # started before the command
    assert not sandbox_run._mid_exec("999999999", 0)  # gone
