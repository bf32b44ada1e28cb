"""`ania chat` as a user runs it: a real subprocess against the scripted server, with stdin from a pipe, a file
or /dev/null; settings that stop the start; a restart with an approval pending. On a pseudo-terminal:
tests/test_terminal_tty.py."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys

import pytest

from ania.fakes.openai_server import Calls, Fail, Reply
from tests.terminal_helpers import ROOT, ania, ania_here, env_for


def test_piped_chat_answers_and_an_approval_line(scripted_llm, tmp_path, monkeypatch, capsys):
    scripted_llm.script([Reply("hello human"), Calls([("time", {})]), Reply("it is time")])
    env = env_for(scripted_llm, tmp_path, ANIA_APPROVAL__TOOLS='["time"]')
    done = ania("chat", env=env, stdin="hi\nwhat time is it?\nallow\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "hello human"
    assert lines[1].startswith('Tool "time" wants to run with {}')
    assert any(line.startswith('Allowed: "time" (') for line in lines) and lines[-1] == "it is time"
    assert "\x1b" not in done.stdout and "ran time" not in done.stdout, "no status line when stdout is not a TTY"
    _, listed, _ = ania_here(monkeypatch, capsys, "sessions", "list", env=env)
    assert listed.startswith("f:local\t")
    shown = ania_here(monkeypatch, capsys, "sessions", "show", "f:local", env=env)[1].splitlines()
    assert shown[:2] == ["human: hi", "ai: hello human"] and shown[-1] == "ai: it is time"


def test_stdin_from_a_file(scripted_llm, tmp_path):
    """`ania chat < messages.txt` used to fail: asyncio's pipe transport refuses regular files."""
    scripted_llm.script([Reply("one"), Reply("two")])
    messages = tmp_path / "messages.txt"
    messages.write_text("first\n\nsecond")  # a blank line is skipped; the last line has no newline
    with messages.open() as stdin:
        done = subprocess.run([sys.executable, "-m", "ania.cli", "chat"], stdin=stdin, env=env_for(scripted_llm, tmp_path),
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "one\ntwo\n", "")
    assert [r.messages[-1]["content"] for r in scripted_llm.requests] == ["first", "second"]


def test_stdin_from_dev_null_and_closed_stdin_end_at_once(scripted_llm, tmp_path):
    """/dev/null used to log a PermissionError (epoll refuses it) and hang."""
    env = env_for(scripted_llm, tmp_path)
    with open(os.devnull) as null:
        done = subprocess.run([sys.executable, "-m", "ania.cli", "chat"], stdin=null, env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    closed = subprocess.run(f"{sys.executable} -m ania.cli chat <&-", shell=True, env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert (closed.returncode, closed.stderr) == (0, "")
    assert scripted_llm.requests == []


def test_quit_and_exit_end_the_chat(scripted_llm, tmp_path):
    scripted_llm.script([Reply("one")])
    env = env_for(scripted_llm, tmp_path)
    done = ania("chat", env=env, stdin="first\n/quit\nnever sent\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "one\n", "")
    done = ania("chat", "--session", "g:team", env=env, stdin="/EXIT\nnever sent\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert len(scripted_llm.requests) == 1


def test_missing_setting_is_one_line_and_non_zero(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update(ANIA_CONFIG_DIR=str(tmp_path), ANIA_DATA_DIR=str(tmp_path / "d"), PYTHONPATH=str(ROOT))
    done = ania("chat", env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"ania: missing setting llm.base_url: set it in {tmp_path / 'ania.toml'} (not there yet: "
        "config.example/ania.toml is a commented start) under [llm] or as ANIA_LLM__BASE_URL"
        " (or try `make demo`, an offline scripted model)"]
    (tmp_path / "ania.toml").write_text("[agent]\nmax_rounds = 'many'\n")
    bad = ania("chat", env=env)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        f"ania: invalid setting agent.max_rounds in {tmp_path / 'ania.toml'}:2 (env ANIA_AGENT__MAX_ROUNDS): "
        "Input should be a valid integer, unable to parse string as an integer (got 'many')"]
    (tmp_path / "ania.toml").write_text("[agent\n")
    broken = ania("chat", env=env)
    assert broken.returncode == 2 and "is not valid TOML" in broken.stderr and "Traceback" not in broken.stderr
    assert str(tmp_path / "ania.toml") in broken.stderr


def test_bad_json_list_in_the_environment_is_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update(ANIA_CONFIG_DIR=str(tmp_path), ANIA_DATA_DIR=str(tmp_path / "d"), PYTHONPATH=str(ROOT),
               ANIA_BASH__WHITELIST="[bad")
    done = ania("chat", env=env)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"ania: invalid setting bash.whitelist from ANIA_BASH__WHITELIST (overrides "
                           f"{tmp_path / 'ania.toml'}): not valid JSON")
    missing = ania("chat", env={**env, "ANIA_CONFIG_DIR": str(tmp_path / "typo")})
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        f"ania: the config dir {tmp_path / 'typo'} (ANIA_CONFIG_DIR={tmp_path / 'typo'}) does not exist or is not "
        "a directory; create it, or unset ANIA_CONFIG_DIR to use ./config"]


def test_an_endpoint_that_fails_is_named_with_its_url(tmp_path, scripted_llm):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    env = env_for(scripted_llm, tmp_path, ANIA_LLM__BASE_URL=dead)
    done = ania("chat", env=env, stdin="hi\n")
    assert done.stdout.startswith("Sorry, the model endpoint failed")
    assert f"ania: the model endpoint {dead} (model scripted-model) failed: " in done.stderr
    assert "Traceback" not in done.stderr
    # Every message failed: a script reading the exit status learns it (it used to exit 0).
    assert done.returncode == 1 and done.stderr.endswith("ania: 1 of 1 message(s) failed\n")


def test_a_piped_chat_with_a_failed_message_exits_1(scripted_llm, tmp_path):
    scripted_llm.script([Reply("fine"), Fail(500, "boom")])
    done = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="one\ntwo\n")
    assert done.stdout.startswith("fine\nSorry, the model endpoint failed")
    assert done.returncode == 1 and done.stderr.endswith("ania: 1 of 2 message(s) failed\n")
    scripted_llm.script([Reply("all good")])
    ok = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="three\n")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "all good\n", "")


@pytest.mark.parametrize(("setting", "value", "message"), [
    ("api_key", "sk-...", "ania: llm.api_key {where} is a placeholder ('sk-...'), not a key: put your provider's API "
                          "key there (or set ANIA_LLM__API_KEY; `make demo` needs none)"),
    ("base_url", "api.deepseek.com", "ania: invalid setting llm.base_url {where}: 'api.deepseek.com' is not an "
                                     "http(s) URL with a host, e.g. https://api.deepseek.com or "
                                     "http://127.0.0.1:11434/v1"),
    ("base_url", "ftp://example.com", "ania: invalid setting llm.base_url {where}: 'ftp://example.com' is not an "
                                      "http(s) URL with a host, e.g. https://api.deepseek.com or "
                                      "http://127.0.0.1:11434/v1"),
])
def test_a_placeholder_key_or_a_bad_base_url_stops_the_start(scripted_llm, tmp_path, setting, value, message):
    """Checked at start with no request: one line naming the key and where it is set, exit 2."""
    env = env_for(scripted_llm, tmp_path)
    del env["ANIA_LLM__BASE_URL"]  # set in the file instead
    toml = tmp_path / "config" / "ania.toml"
    url = value if setting == "base_url" else scripted_llm.base_url
    toml.write_text(f'[llm]\nbase_url = "{url}"\n' + (f'api_key = "{value}"\n' if setting == "api_key" else ""))
    done = ania("chat", env=env, stdin="hi\n")
    line = 3 if setting == "api_key" else 2
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [message.format(where=f"in {toml}:{line}")]
    from_env = ania("chat", env={**env, f"ANIA_LLM__{setting.upper()}": value}, stdin="hi\n")
    assert from_env.returncode == 2
    assert from_env.stderr.splitlines() == [message.format(where=f"from ANIA_LLM__{setting.upper()}")]
    assert scripted_llm.requests == []
    demo = ania("demo", env=env, stdin="hi\n")  # the demo brings its own endpoint
    assert (demo.returncode, demo.stdout) == (0, "echo: hi\n"), demo.stderr


def test_no_prompt_and_no_colour_in_a_pipe(scripted_llm, tmp_path):
    scripted_llm.script([Reply("plain")])
    env = env_for(scripted_llm, tmp_path, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    done = ania("chat", env=env, stdin="hi\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "plain\n", "")


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
