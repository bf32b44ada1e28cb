"""`ania serve` as a user runs it: a real subprocess pointed at the fake OneBot implementation, forward and
reverse, answering a group @-mention, and exiting cleanly on SIGTERM with the running reply sent."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from ania.fakes.openai_server import Reply
from tests.onebot_fake import FakeOneBot, at, text

ROOT = Path(__file__).resolve().parent.parent
BOT = 10000


def env_for(llm, tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    (tmp_path / "config").mkdir(exist_ok=True)  # a named config dir must exist
    env.update(ANIA_CONFIG_DIR=str(tmp_path / "config"), ANIA_DATA_DIR=str(tmp_path / "data"),
               ANIA_LLM__BASE_URL=llm.base_url, ANIA_LLM__MODEL="scripted-model", ANIA_LLM__MAX_RETRIES="0",
               ANIA_PANEL__ENABLE="off", PYTHONPATH=str(ROOT), **extra)  # many bots at once: no panel port each
    return env


async def start(env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "ania.cli", "serve", env=env, cwd=ROOT,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_serve_forward_answers_a_group_and_stops_cleanly_on_sigterm(scripted_llm, tmp_path):
    fake = await FakeOneBot(self_id=BOT, token="tok").serve()
    proc = await start(env_for(scripted_llm, tmp_path, ANIA_ONEBOT__WS_URL=fake.url, ANIA_ONEBOT__ACCESS_TOKEN="tok"))
    try:
        await fake.wait_for(fake.connected.is_set, timeout=30)
        await fake.group_message(555, 42, [at(BOT), text(" hello from QQ")], card="Alice")
        await fake.wait_for(lambda: fake.sent, timeout=30)
        assert fake.texts() == ["echo: [42] Alice: hello from QQ"]
        scripted_llm.script([Reply("sent before exiting", delay=1.0)])
        await fake.private_message(42, "one more")
        await fake.wait_for(lambda: len(scripted_llm.requests) == 2, timeout=30)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        stderr = (await proc.stderr.read()).decode()
        assert code == 0, stderr
        assert fake.texts()[-1] == "sent before exiting"
        assert "Traceback" not in stderr and "shutting down" in stderr
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await fake.close()


async def test_serve_reverse_listens_and_the_implementation_dials_in(scripted_llm, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = await start(env_for(scripted_llm, tmp_path, ANIA_ONEBOT__LISTEN=f"127.0.0.1:{port}"))
    fake = FakeOneBot(self_id=BOT)
    try:
        fake.dial(f"ws://127.0.0.1:{port}/onebot/v11/ws")
        await fake.wait_for(fake.connected.is_set, timeout=30)
        await fake.private_message(42, "hi over reverse")
        await fake.wait_for(lambda: fake.sent, timeout=30)
        assert fake.texts() == ["echo: hi over reverse"]
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await fake.close()


def test_serve_without_a_onebot_setting_is_one_clear_line(scripted_llm, tmp_path):
    done = subprocess.run([sys.executable, "-m", "ania.cli", "serve"], env=env_for(scripted_llm, tmp_path), cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("ania: set onebot.ws_url (forward WebSocket: Ania dials the implementation) or "
                                  "onebot.listen")
    assert "Traceback" not in done.stderr


def test_serve_with_a_bad_listen_address_is_one_clear_line(scripted_llm, tmp_path):
    done = subprocess.run([sys.executable, "-m", "ania.cli", "serve"], cwd=ROOT, capture_output=True, text=True,
                          env=env_for(scripted_llm, tmp_path, ANIA_ONEBOT__LISTEN="8080"), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == ("ania: onebot.listen '8080': onebot.listen must be host:port, e.g. "
                                   "127.0.0.1:8080 (got '8080')")
