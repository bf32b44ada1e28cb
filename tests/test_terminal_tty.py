"""`ania chat` on a pseudo-terminal (tests/terminal_helpers.py `Pty`), its controlling terminal: the status
line, the prompt and colours, approvals typed in, and Ctrl-C during a turn, at the prompt or at an approval."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from ania.fakes.openai_server import Calls, Reply
from tests.terminal_helpers import ROOT, Pty, ania, env_for


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
