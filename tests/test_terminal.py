"""`ania chat` as a user runs it: a real subprocess against the scripted server, with stdin from a pipe,
a file, /dev/null, or a pseudo-terminal (`Pty`) where a TTY matters (the status line, Ctrl-C)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ania.fakes.openai_server import Calls, Fail, Reply

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\r")
#: Run in the child after `setsid`: open the terminal by name (it becomes the controlling terminal),
#: make it stdin, stdout and stderr, and exec the command.
LAUNCH = ("import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); [os.dup2(fd, i) for i in (0, 1, 2)]; "
          "os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])")


def env_for(server, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    (tmp_path / "config").mkdir(exist_ok=True)
    env.update({"ANIA_CONFIG_DIR": str(tmp_path / "config"), "ANIA_DATA_DIR": str(tmp_path / "data"),
                "ANIA_LLM__BASE_URL": server.base_url, "ANIA_LLM__MODEL": "scripted-model",
                "ANIA_LLM__MAX_RETRIES": "0", "PYTHONPATH": str(ROOT), **extra})
    return env


def ania(*args: str, env: dict[str, str], stdin: str = "", **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ania.cli", *args], input=stdin, env=env, cwd=kw.pop("cwd", ROOT),
                          capture_output=True, text=True, timeout=60, **kw)


class Pty:
    """A command on a fresh pseudo-terminal, which is its controlling terminal: typing \\x03 is Ctrl-C."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        self.master, self._slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, os.ttyname(self._slave), *cmd], env=env,
                                     cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL)
        self.raw = b""
        self._seen = 0

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            self.raw += os.read(self.master, 65536)
        return bool(ready)

    def expect(self, needle: str, timeout: float = 30) -> str:
        """Wait until `needle` appears after the last match; returns the text up to it."""
        deadline = time.monotonic() + timeout
        while (at := self.text.find(needle, self._seen)) < 0:
            assert self.proc.poll() is None or self._read(0.2), f"exited ({self.proc.returncode}):\n{self.text}"
            assert time.monotonic() < deadline, f"no {needle!r} within {timeout} s:\n{self.text}"
            self._read(0.2)
        seen, self._seen = self.text[self._seen: at + len(needle)], at + len(needle)
        return seen

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 90) -> int:
        rc = self.proc.wait(timeout)
        while self._read(0.3):
            pass
        return rc

    def session_processes(self) -> list[str]:
        """Processes still alive in the command's session (its own process id is the session id)."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid and fields[0] != "Z":
                out.append(stat.parent.name)
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        os.close(self.master)
        os.close(self._slave)


@pytest.fixture
def pty_run():
    started: list[Pty] = []

    def start(*args: str, env: dict[str, str], cwd: Path = ROOT) -> Pty:
        pty = Pty([sys.executable, "-m", "ania.cli", *args], env, cwd)
        started.append(pty)
        return pty

    yield start
    for p in started:
        p.close()


def test_piped_chat_answers_and_an_approval_line(scripted_llm, tmp_path):
    scripted_llm.script([Reply("hello human"), Calls([("time", {})]), Reply("it is time")])
    env = env_for(scripted_llm, tmp_path, ANIA_APPROVAL__TOOLS='["time"]')
    done = ania("chat", env=env, stdin="hi\nwhat time is it?\nallow\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "hello human"
    assert lines[1].startswith('Tool "time" wants to run with {}')
    assert any(line.startswith('Allowed: "time" (') for line in lines) and lines[-1] == "it is time"
    assert "\x1b" not in done.stdout and "ran time" not in done.stdout, "no status line when stdout is not a TTY"
    listed = ania("sessions", "list", env=env)
    assert listed.stdout.startswith("f:local\t")
    shown = ania("sessions", "show", "f:local", env=env).stdout.splitlines()
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


def test_tty_chat_shows_steps_tools_and_approvals(scripted_llm, tmp_path, pty_run):
    scripted_llm.script([Calls([("time", {"timezone": "UTC"})]), Reply("it is late"),
                         Calls([("todo_write", {"todos": [{"content": "x", "status": "pending"}]})]), Reply("planned")])
    env = env_for(scripted_llm, tmp_path, ANIA_APPROVAL__TOOLS='["todo_write"]')
    pty = pty_run("chat", env=env)
    pty.expect("/quit or Ctrl-D quits.")
    pty.send("what time is it?\n")
    steps = pty.expect("ania> it is late")
    assert "thinking (" in steps and "running time (" in steps and "  - ran time (" in steps
    pty.send("make a plan\n")
    asking = pty.expect('or "deny ')
    assert 'ania> Tool "todo_write" wants to run' in asking
    pty.expect("you> ")  # the bot waits for the person: the prompt, no status line over what they type
    pty.send("allow\n")
    assert "  - ran todo_write (" in pty.expect("ania> planned")
    pty.send("/quit\n")
    assert pty.wait() == 0
    assert "Traceback" not in pty.text


def test_ctrl_c_during_a_turn_is_one_line_and_exit_130(scripted_llm, tmp_path, pty_run):
    scripted_llm.script([Reply("too late", delay=30)])
    env = env_for(scripted_llm, tmp_path)
    pty = pty_run("chat", env=env)
    pty.expect("/quit or Ctrl-D quits.")
    pty.send("hi\n")
    pty.expect("thinking (")
    while not scripted_llm.requests:  # the model call is in flight
        time.sleep(0.05)
    pty.expect(f"thinking, waiting for {scripted_llm.base_url} (")  # a slow endpoint is named, not silent
    pty.send("\x03")
    assert pty.wait() == 130
    after = pty.text.split(f"{scripted_llm.base_url} (")[-1]
    assert after.count("\n") == 1 and "ania: interrupted\n" in after, pty.text
    assert "Traceback" not in pty.text and "Error" not in pty.text
    assert pty.session_processes() == []
    # The stopped turn was settled before exit: the next start continues the session.
    scripted_llm.script([Reply("back")])
    assert ania("chat", env=env, stdin="again\n").stdout == "back\n"
    with sqlite3.connect(tmp_path / "data" / "checkpoints.db") as db:
        assert db.execute("select count(*) from checkpoints").fetchone()[0] > 0
    with sqlite3.connect(tmp_path / "data" / "ania.db") as db:  # Ctrl-C, not /stop
        assert db.execute("select input, status from query_log order by id").fetchall() == [
            ("hi", "interrupted"), ("again", "success")]


def test_ctrl_c_at_the_prompt_and_eof_at_a_tty(scripted_llm, tmp_path, pty_run):
    env = env_for(scripted_llm, tmp_path)
    pty = pty_run("chat", env=env)
    pty.expect("/quit or Ctrl-D quits.")
    pty.send("\x03")
    assert pty.wait() == 130 and pty.text.endswith("ania: interrupted\n") and "Traceback" not in pty.text
    pty = pty_run("chat", env=env)
    pty.expect("/quit or Ctrl-D quits.")
    pty.send("\x04")
    assert pty.wait() == 0 and "Traceback" not in pty.text


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


def screen_lines(raw: bytes) -> list[str]:
    """What a terminal shows for `raw`: carriage returns, erase-to-end-of-line and colours applied."""
    lines, line, col = [], "", 0
    for token in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|\r|\n|[^\x1b\r\n]", raw.decode("utf-8", errors="replace")):
        if token == "\n":
            lines, line, col = [*lines, line], "", 0
        elif token == "\r":
            col = 0
        elif token == "\x1b[K":
            line = line[:col]
        elif not token.startswith("\x1b"):
            line, col = line[:col] + token + line[col + 1:], col + 1
    return [*lines, line]


SGR = re.compile(rb"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("no_color", ["", "1"])
def test_tty_prompt_clears_the_status_line_and_colours_unless_no_color(scripted_llm, tmp_path, pty_run, no_color):
    """The prompt shows when the bot waits for the person, on a line of its own (the status line cleared
    first); colour at a terminal unless NO_COLOR is set. (There was no prompt, and no colour.)"""
    scripted_llm.script([Reply("first answer", delay=0.5), Reply("second answer")])
    env = env_for(scripted_llm, tmp_path, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    if no_color:
        env["NO_COLOR"] = no_color
    pty = pty_run("chat", env=env)
    pty.expect("/quit or Ctrl-D quits.")
    pty.expect("you> ")
    pty.send("hello\n")
    pty.expect("thinking (")
    pty.expect("ania> first answer")
    pty.expect("you> ")
    pty.send("again\n")
    pty.expect("ania> second answer")
    pty.expect("you> ")
    pty.send("/quit\n")
    assert pty.wait() == 0
    shown = screen_lines(pty.raw)
    assert shown.count("you> hello") == 1 and shown.count("you> again") == 1, shown
    assert "ania> first answer" in shown and "ania> second answer" in shown, shown
    assert not [line for line in shown if "you> " in line and " s)" in line], shown  # the status line was cleared
    if no_color:
        assert not SGR.search(pty.raw), pty.raw
    else:
        assert b"\x1b[1;32myou> \x1b[0m" in pty.raw and b"\x1b[1;36mania> \x1b[0m" in pty.raw


def test_no_prompt_and_no_colour_in_a_pipe(scripted_llm, tmp_path):
    scripted_llm.script([Reply("plain")])
    env = env_for(scripted_llm, tmp_path, TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    done = ania("chat", env=env, stdin="hi\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "plain\n", "")


def test_ctrl_c_while_an_approval_is_pending_is_recorded_as_ctrl_c(scripted_llm, tmp_path, pty_run):
    """It used to be logged and recorded as "stopped with /stop"."""
    scripted_llm.script([Calls([("time", {})])])
    env = env_for(scripted_llm, tmp_path, ANIA_APPROVAL__TOOLS='["time"]')
    pty = pty_run("chat", env=env)
    pty.expect("/quit or Ctrl-D quits.")
    pty.send("what time is it?\n")
    pty.expect('or "deny ')
    pty.send("\x03")
    assert pty.wait() == 130 and "Traceback" not in pty.text
    with sqlite3.connect(tmp_path / "data" / "ania.db") as db:
        rows = db.execute("select input, status from query_log").fetchall()
        ops = [json.loads(d) for (d,) in db.execute("select detail from op_log where kind = 'tool_approval'")]
    assert rows == [("what time is it?", "interrupted")]
    assert [(o["tool"], o["decision"], o["reason"]) for o in ops] == [("time", "deny", "interrupted by Ctrl-C")]
    scripted_llm.script([Reply("back")])
    assert ania("chat", env=env, stdin="again\n").stdout == "back\n"
    tool_result = next(m for m in scripted_llm.requests[-1].messages if m["role"] == "tool")
    assert tool_result["content"] == "Not run: interrupted by Ctrl-C."
