"""The flow at the terminal (F1): lines typed while a turn runs are answered together by the next turn, at
once (the settle window is 0 in the terminal whatever `flow.settle_sec` says), and /stop still acts at
once. A real `ania chat` on a pseudo-terminal."""

from __future__ import annotations

import re
import sqlite3
import sys

from ania.fakes.openai_server import Reply
from tests.terminal_helpers import Pty, env_for


def test_lines_typed_during_a_turn_are_answered_together_at_the_terminal(scripted_llm, tmp_path):
    scripted_llm.script([Reply("first answer", delay=1.5), Reply("both answered")])
    env = env_for(scripted_llm, tmp_path, TERM="dumb", ANIA_FLOW__SETTLE_SEC="20")
    pty = Pty([sys.executable, "-m", "ania.cli", "chat"], env)
    try:
        pty.expect("/quit or Ctrl-D quits.")
        pty.send("hello\n")
        pty.expect("thinking")
        pty.send("two\n")
        pty.send("three\n")
        pty.expect("ania> first answer")
        pty.expect("ania> both answered", timeout=15)  # no 20 s settle window at the terminal
        pty.send("/quit\n")
        assert pty.wait() == 0
    finally:
        pty.close()
    users = [r.messages[-1]["content"] for r in scripted_llm.requests]
    assert users[0] == "hello"
    assert re.fullmatch(r"\[2 messages arrived for you since your last reply, oldest first; answer them together\]\n"
                        r"\[1\] \d\d:\d\d:\d\d UTC \[(\w+)\] two\n\[2\] \d\d:\d\d:\d\d UTC \[\1\] three", users[1]), users
    conn = sqlite3.connect(str(tmp_path / "data" / "ania.db"))
    try:
        rows = conn.execute("SELECT status, json_array_length(message_ids) FROM query_log ORDER BY id").fetchall()
    finally:
        conn.close()
    assert rows == [("success", 1), ("success", 2)]
