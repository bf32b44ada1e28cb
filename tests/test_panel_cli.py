"""`ania panel` as an operator runs it (real processes): the login link, the password, the panel alone on a
data directory (the bot's lock held, so a bot cannot start beside it), refused while a bot runs there."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from services.files import OwnerLock
from tests.terminal_helpers import ROOT, env_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def running(env: dict[str, str], *args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """`ania ARGS` as a process; killed at the end if the test did not stop it (the test stops it with a signal
    and checks its exit status)."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "ania.cli", *args, env=env, cwd=ROOT,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def stopped(proc: asyncio.subprocess.Process) -> int:
    proc.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(proc.wait(), 30)


def _ania(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ania.cli", "panel", *args], env=env, cwd=ROOT, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_link_password_and_new_token(scripted_llm, tmp_path):
    port = _free_port()
    env = env_for(scripted_llm, tmp_path, ANIA_PANEL__LISTEN=f"127.0.0.1:{port}")
    first = _ania(env, "--link")
    assert first.returncode == 0, first.stderr
    link = first.stdout.strip()
    assert link.startswith(f"http://127.0.0.1:{port}/login?token=") and len(link.split("token=")[1]) >= 40
    token_file = tmp_path / "data" / "panel.token"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    assert _ania(env, "--link").stdout.strip() == link  # the same token until renewed
    renewed = _ania(env, "--new-token").stdout.strip()
    assert renewed != link and renewed.startswith(f"http://127.0.0.1:{port}/login?token=")
    short = _ania(env, "--set-password", stdin="short\n")
    assert short.returncode == 2 and "at least 10 characters" in short.stderr and "Traceback" not in short.stderr
    done = _ania(env, "--set-password", stdin="a long enough password\n")
    assert done.returncode == 0 and "Password set" in done.stdout
    assert "a long enough password" not in (tmp_path / "data" / "panel.password").read_text()


def test_alone_is_refused_while_a_bot_holds_the_data_directory(scripted_llm, tmp_path):
    env = env_for(scripted_llm, tmp_path, ANIA_PANEL__LISTEN=f"127.0.0.1:{_free_port()}")
    lock = OwnerLock(tmp_path / "data" / "clock.lock")
    assert lock.acquire() is None  # this process plays the running bot
    try:
        done = _ania(env)
    finally:
        lock.release()
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"ania: a bot (process {os.getpid()}) runs on the data "
                                                           "directory")
    assert "Traceback" not in done.stderr


async def test_alone_serves_the_panel_and_keeps_a_bot_out_until_it_stops(scripted_llm, tmp_path):
    port = _free_port()
    env = env_for(scripted_llm, tmp_path, ANIA_PANEL__LISTEN=f"127.0.0.1:{port}")
    async with running(env, "panel") as proc:
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line.startswith(f"ania panel: open http://127.0.0.1:{port}/login?token="), line
        token = line.split("token=")[1].split()[0]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            r = await client.get("/api/overview", headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200 and r.json()["mode"] == "alone"
            r = await client.get(f"/login?token={token}")
            assert r.status_code == 303 and "HttpOnly" in r.headers["set-cookie"]
        assert OwnerLock(tmp_path / "data" / "clock.lock").acquire() == str(proc.pid)  # a bot would be refused
        assert await stopped(proc) == 0
    lock = OwnerLock(tmp_path / "data" / "clock.lock")
    assert lock.acquire() is None  # released at exit
    lock.release()


async def test_serve_starts_its_panel_which_sees_the_platform_and_reboots_the_bot(scripted_llm, tmp_path):
    from tests.onebot_fake import FakeOneBot

    fake = await FakeOneBot(self_id=10000).serve()
    port = _free_port()
    env = env_for(scripted_llm, tmp_path, ANIA_ONEBOT__WS_URL=fake.url, ANIA_PANEL__ENABLE="auto",
                  ANIA_PANEL__LISTEN=f"127.0.0.1:{port}")
    try:
        async with running(env, "serve") as proc:
            await _serve_with_panel(proc, fake, port)
    finally:
        await fake.close()


async def _serve_with_panel(proc: asyncio.subprocess.Process, fake: Any, port: int) -> None:
    """The link on stderr, the platform seen as connected, a reboot from the panel, then SIGTERM."""
    token = ""
    while not token:
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line, "serve ended before printing the panel's link"
        if line.startswith("ania panel: open "):
            token = line.split("token=")[1].split()[0]
    await fake.wait_for(fake.connected.is_set, timeout=30)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                 headers={"Authorization": f"Bearer {token}"}) as client:
        data = (await client.get("/api/overview")).json()
        assert (data["mode"], data["platform"]["connected"]) == ("serve", True)
        r = await client.post("/api/reboot")
        assert r.status_code == 200 and "estart" in r.json()["message"], r.text
        ops = (await client.get("/api/ops?kind=reboot")).json()["items"]
        assert [(o["actor"], o["session"]) for o in ops] == [("panel", "")]
    assert await stopped(proc) == 0


def test_chat_starts_the_panel_only_when_enable_is_on(scripted_llm, tmp_path):
    from ania.fakes.openai_server import Reply
    from tests.terminal_helpers import ania

    port = _free_port()
    scripted_llm.script([Reply("hello"), Reply("again")])
    env = env_for(scripted_llm, tmp_path, ANIA_PANEL__LISTEN=f"127.0.0.1:{port}", ANIA_PANEL__ENABLE="auto")
    done = ania("chat", env=env, stdin="hi\n")
    assert done.returncode == 0 and "ania panel" not in done.stderr, done.stderr  # auto: serve only
    assert not (tmp_path / "data" / "panel.token").exists()
    done = ania("chat", env={**env, "ANIA_PANEL__ENABLE": "on"}, stdin="hi\n")
    assert done.returncode == 0, done.stderr
    assert f"ania panel: open http://127.0.0.1:{port}/login?token=" in done.stderr
    with socket.socket() as taken:  # "on" and the port taken: the bot does not start
        taken.bind(("127.0.0.1", port))
        taken.listen()
        refused = ania("chat", env={**env, "ANIA_PANEL__ENABLE": "on"}, stdin="hi\n")
        assert refused.returncode == 2 and "the panel cannot listen" in refused.stderr, refused.stderr
