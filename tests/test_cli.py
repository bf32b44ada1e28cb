"""The `ania` command line as a user meets it: real subprocesses (help, version, argument checks, start-up
order, `sessions` starting nothing, `fake-llm --script`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ania.fakes.openai_server import Reply
from tests.terminal_helpers import ROOT, ania, env_for


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update({"ANIA_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT), **extra})
    return env


def test_version_and_bare_ania(tmp_path):
    from importlib.metadata import version

    done = ania("--version", env=clean_env(tmp_path))
    assert (done.returncode, done.stdout) == (0, f"ania {version('ania-engine')}\n")
    bare = ania(env=clean_env(tmp_path))
    assert bare.returncode == 0 and bare.stderr == ""
    assert bare.stdout.startswith("usage: ania") and "chat" in bare.stdout and "sessions" in bare.stdout


def test_help_texts_say_where_settings_live_and_how_to_stop(tmp_path):
    env = clean_env(tmp_path)
    chat = ania("chat", "--help", env=env).stdout
    for needed in ("config/ania.toml", "ANIA_CONFIG_DIR", "config.example/", "/stop", "/plan on|off", "/quit",
                   "Ctrl-D", "Ctrl-C", "f:<user id>", "g:<group id>"):
        assert needed in chat, needed
    show = ania("sessions", "show", "--help", env=env).stdout
    assert "the session key, e.g. f:local or g:team" in show
    assert "none starts an MCP server" in " ".join(ania("sessions", "--help", env=env).stdout.split())
    assert "--script FILE" in ania("demo", "--help", env=env).stdout
    assert "--script FILE" in ania("fake-llm", "--help", env=env).stdout


@pytest.mark.parametrize("args", [("chat", "--session", "foo"), ("demo", "--session", "local"),
                                  ("sessions", "show", "x:1"), ("chat", "--session", "f:")])
def test_session_keys_must_be_f_or_g(tmp_path, args):
    done = ania(*args, env=clean_env(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not a session key: use f:<user id> or g:<group id>" in done.stderr.splitlines()[-1]
    assert not (tmp_path / "data").exists()


def test_settings_are_checked_before_the_heavy_imports(tmp_path):
    """A missing setting used to take 3.3 s: the engine was imported before the settings were read."""
    code = ("import sys\nfrom ania.cli import main\nrc = main(sys.argv[1:])\n"
            "heavy = sorted(m for m in ('langgraph', 'langchain_core', 'langchain_openai', 'mcp', 'ania.engine') "
            "if m in sys.modules)\nprint(rc, heavy)\n")
    env = clean_env(tmp_path, ANIA_CONFIG_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code, "chat"], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout == "2 []\n" and done.stderr.startswith("ania: missing setting llm.base_url")
    helped = subprocess.run([sys.executable, "-c", "import sys\nfrom ania.cli import main\ntry:\n main(['--help'])\n"
                             "except SystemExit:\n print(sorted(m for m in ('asyncio', 'pydantic', 'core.settings') "
                             "if m in sys.modules))"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert helped.stdout.splitlines()[-1] == "[]"


def test_sessions_list_and_show_start_nothing(scripted_llm, tmp_path):
    scripted_llm.script([Reply("stored")])
    env = env_for(scripted_llm, tmp_path)
    assert ania("chat", env=env, stdin="keep this\n").stdout == "stored\n"
    marker = tmp_path / "server-started"
    server = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    (tmp_path / "config" / "mcp.json").write_text(json.dumps({"mcpServers": {"probe": server}}))
    (tmp_path / "config" / "ania.toml").write_text("[broken\n")  # settings are not even read
    listed = ania("sessions", "list", env=env)
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, "f:local\t" + listed.stdout.split("\t")[1], "")
    shown = ania("sessions", "show", "f:local", env=env)
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, "human: keep this\nai: stored\n", "")
    missing = ania("sessions", "show", "g:nobody", env=env)
    assert (missing.returncode, missing.stderr) == (1, "ania: no session 'g:nobody'\n")
    assert not marker.exists(), "a read-only command started an MCP server"
    (tmp_path / "config" / "ania.toml").unlink()
    ania("chat", env=env, stdin="")
    assert marker.exists(), "the probe server must start with the chat, or the check above proves nothing"


def test_sessions_on_a_fresh_data_dir_create_nothing(tmp_path):
    env = clean_env(tmp_path)
    listed = ania("sessions", "list", env=env)
    assert (listed.returncode, listed.stdout) == (0, "")
    assert listed.stderr == f"ania: no stored sessions yet ({tmp_path / 'data' / 'checkpoints.db'} does not exist)\n"
    assert ania("sessions", "show", "f:local", env=env).returncode == 1
    assert not (tmp_path / "data").exists()


def test_fake_llm_serves_a_script_of_replies_and_tool_calls(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [{"name": "time", "args": {"timezone": "UTC"}}], "note": "why"},
                                  {"reply": "you asked {user}; the tool said {tool_result}"}]))
    proc = subprocess.Popen([sys.executable, "-m", "ania.cli", "fake-llm", "--port", "0", "--script", str(script)],
                            env=clean_env(tmp_path), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("scripted model at http://127.0.0.1:") and "2 scripted steps, then it echoes" in first
        url = first.split()[3]
        body = {"model": "scripted-model", "messages": [{"role": "user", "content": "what time?"}]}
        calls = httpx.post(f"{url}/chat/completions", json=body, timeout=10).json()["choices"][0]["message"]
        assert calls["tool_calls"][0]["function"] == {"name": "time", "arguments": '{"timezone": "UTC"}'}
        body["messages"] += [calls, {"role": "tool", "tool_call_id": calls["tool_calls"][0]["id"], "content": "noon"}]
        reply = httpx.post(f"{url}/chat/completions", json=body, timeout=10).json()["choices"][0]["message"]
        assert reply["content"] == "you asked what time?; the tool said noon"
        echo = httpx.post(f"{url}/chat/completions", json=body, timeout=10).json()["choices"][0]["message"]
        assert echo["content"] == "echo: what time?"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130 and err == "ania: interrupted\n"


def test_fake_llm_on_a_busy_port_is_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = ania("fake-llm", "--port", str(port), env=clean_env(tmp_path))
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"ania: cannot serve on 127.0.0.1:{port}: Address already in use")


@pytest.mark.parametrize(("content", "problem"), [
    ("not json", "is not valid JSON"),
    ('{"reply": "x"}', "expected a JSON list of steps"),
    ('[{"reply": "x"}, {"say": "y"}]', "step 2: give exactly one of reply, calls, fail, stall (unknown: say)"),
    ('[{"calls": [{"args": {}}]}]', 'step 1: each call is {"name": "tool", "args": {...}}'),
])
def test_a_bad_script_is_one_line_naming_the_step(tmp_path, content, problem):
    script = tmp_path / "script.json"
    script.write_text(content)
    for cmd in (("fake-llm", "--script", str(script)), ("demo", "--script", str(script))):
        done = ania(*cmd, env=clean_env(tmp_path))
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(f"ania: script {script}") and problem in done.stderr
    gone = ania("demo", "--script", str(tmp_path / "nope.json"), env=clean_env(tmp_path))
    assert gone.returncode == 2 and gone.stderr.startswith(f"ania: cannot read script {tmp_path / 'nope.json'}")


def test_sigint_stops_it_even_when_started_as_a_background_job(tmp_path):
    """A shell starts `cmd &` with SIGINT ignored; `kill -INT` must still end it with its one line."""
    ignoring = ["sh", "-c", 'trap "" INT; exec "$0" "$@"']  # what `cmd &` in a script does to SIGINT
    proc = subprocess.Popen([*ignoring, sys.executable, "-m", "ania.cli", "fake-llm", "--port", "0"],
                            env=clean_env(tmp_path), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().startswith("scripted model at http://127.0.0.1:")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 130 and err == "ania: interrupted\n"


def test_serve_help_lists_the_onebot_settings_from_their_descriptions(tmp_path):
    """`serve --help` named none of the settings it uses; now each [onebot] key, its variable and its
    description (read from core/settings/platform.py, so it cannot drift)."""
    from core.settings.platform import OneBotSettings

    done = ania("serve", "--help", env=clean_env(tmp_path))
    assert done.returncode == 0 and done.stderr == ""
    shown = done.stdout.splitlines()
    for name, field in OneBotSettings.model_fields.items():
        at = next(i for i, line in enumerate(shown) if line.startswith(f"  onebot.{name}, ANIA_ONEBOT__{name.upper()}"))
        assert shown[at + 1].strip() == field.description, name
    assert "onebot.ws_url: Ania dials it" in done.stdout and "onebot.listen: it" in done.stdout  # both directions
    assert "  onebot.path, ANIA_ONEBOT__PATH (default '/onebot/v11/ws')" in shown


async def test_serve_logs_its_start_up_at_info_and_shows_it_without_v(scripted_llm, tmp_path):
    """Its normal start-up and shutdown lines were WARNINGs; now INFO, and INFO is shown for serve."""
    import asyncio

    from tests.onebot_fake import FakeOneBot

    fake = await FakeOneBot(self_id=10000).serve()
    url = fake.url
    env = env_for(scripted_llm, tmp_path, ANIA_ONEBOT__WS_URL=url)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "ania.cli", "serve", env=env, cwd=ROOT,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await fake.wait_for(fake.connected.is_set, timeout=30)
        await fake.private_message(42, "hi")
        await fake.wait_for(lambda: fake.sent, timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        lines = (await proc.stderr.read()).decode().splitlines()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await fake.close()
    serve = [line for line in lines if "ania.platforms.onebot.serve" in line]
    assert serve == [f"ania: INFO ania.platforms.onebot.serve: ania serve: OneBot v11 on {url}; Ctrl-C or "
                     "SIGTERM stops",
                     "ania: INFO ania.platforms.onebot.serve: ania serve: shutting down (running messages get 30 s "
                     "to finish)"], lines
    assert any(line.startswith("ania: INFO ania.turn: turn session=f:42 status=success") for line in lines), lines
    assert not [line for line in lines if "INFO httpx" in line or "DEBUG" in line], lines  # libraries: warnings only
