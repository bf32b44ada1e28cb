"""`ania chat` as a user runs it: a real subprocess with piped stdin, against the scripted server."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from ania.fakes.openai_server import Calls, Reply

ROOT = Path(__file__).resolve().parent.parent


def env_for(server, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update(ANIA_CONFIG_DIR=str(tmp_path / "config"), ANIA_DATA_DIR=str(tmp_path / "data"),
               ANIA_LLM__BASE_URL=server.base_url, ANIA_LLM__MODEL="scripted-model", ANIA_LLM__MAX_RETRIES="0",
               PYTHONPATH=str(ROOT), **extra)
    return env


def ania(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ania.cli", *args], input=stdin, env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_piped_chat_answers_and_an_approval_line(scripted_llm, tmp_path):
    scripted_llm.script([Reply("hello human"), Calls([("time", {})]), Reply("it is time")])
    env = env_for(scripted_llm, tmp_path, ANIA_APPROVAL__TOOLS='["time"]')
    done = ania("chat", env=env, stdin="hi\nwhat time is it?\nallow\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "hello human"
    assert lines[1].startswith('Tool "time" wants to run with {}')
    assert any(line.startswith('Allowed: "time" (') for line in lines) and lines[-1] == "it is time"
    listed = ania("sessions", "list", env=env)
    assert listed.stdout.startswith("f:local\t")
    shown = ania("sessions", "show", "f:local", env=env).stdout.splitlines()
    assert shown[:2] == ["human: hi", "ai: hello human"] and shown[-1] == "ai: it is time"


def test_missing_setting_is_one_line_and_non_zero(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update(ANIA_CONFIG_DIR=str(tmp_path), ANIA_DATA_DIR=str(tmp_path / "d"), PYTHONPATH=str(ROOT))
    done = ania("chat", env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "ania: missing setting llm.base_url: set it in ania.toml under [llm] or as ANIA_LLM__BASE_URL"
        " (or try `make demo`, an offline scripted model)"]
    (tmp_path / "ania.toml").write_text("[agent]\nmax_rounds = 'many'\n")
    bad = ania("chat", env=env)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "agent.max_rounds (ANIA_AGENT__MAX_ROUNDS)" in bad.stderr
    (tmp_path / "ania.toml").write_text("[agent\n")
    broken = ania("chat", env=env)
    assert broken.returncode == 2 and "is not valid TOML" in broken.stderr and "Traceback" not in broken.stderr


async def test_restart_with_a_pending_approval(scripted_llm, tmp_path, make_chat):
    from tests.conftest import make_settings

    scripted_llm.script([Calls([("time", {})])])
    env = env_for(scripted_llm, tmp_path, ANIA_APPROVAL__TOOLS='["time"]')
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ania.cli", "chat", env=env, cwd=ROOT, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    proc.stdin.write(b"what time is it?\n")
    await proc.stdin.drain()
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line.startswith(b'Tool "time" wants to run')
    os.killpg(proc.pid, signal.SIGKILL)  # a crash while the approval is pending
    await proc.wait()
    settings = make_settings(scripted_llm, approval={"tools": ["time"]})
    chat = await make_chat(settings, data=tmp_path / "data")
    scripted_llm.script([Reply("back again")])
    assert await chat.say("f:local", "local", "are you there?") == ["back again"]
    msgs = scripted_llm.requests[-1].messages
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "user"]
    assert msgs[3]["content"] == "Not run: the previous turn did not finish (restart or stop)."
    ops = chat.engine.services.store.ops("tool_approval")
    assert [(o["detail"]["tool"], o["detail"]["decision"]) for o in ops] == [("time", "deny")]
    with sqlite3.connect(tmp_path / "data" / "checkpoints.db") as db:
        assert db.execute("select count(*) from checkpoints").fetchone()[0] > 0
