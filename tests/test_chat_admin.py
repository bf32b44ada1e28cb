"""The issue's "done when", as a person does it: `ania chat` (a real subprocess, piped stdin) as the local
admin installs a skill from a local URL, the model lists and reads it, a custom command is added and used,
a setting is changed with a second admin's approval (`/as admin2 allow`), and `/reboot` applies it."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from ania.fakes.openai_server import Calls, Reply
from tests.skill_helpers import FileServer, collection_zip
from tests.terminal_helpers import ania, env_for

pytestmark = pytest.mark.timeout(90)


def test_an_admin_extends_the_bot_from_ania_chat(scripted_llm, tmp_path):
    files = FileServer().start()
    try:
        url = files.serve("/skills.zip", collection_zip())
        cfg = tmp_path / "config"
        cfg.mkdir()
        (cfg / "ania.toml").write_text('# my bot\n[bot]\nadmins = ["admin2"]\n\n[skill_tool]\nenable = true\n'
                                     '[skills]\nallow_private_hosts = true  # the test serves skills on 127.0.0.1\n')
        scripted_llm.script([
            Calls([("skill_install", {"source": url})]), Reply("installed"),
            Calls([("skill_read", {"name": "pdf-forms", "file": "reference.md"})]), Reply("read it"),
            Reply("Hi Ann!"),
            Calls([("config_set", {"key": "agent.max_rounds", "value": "5"})]), Reply("asked"),
            Reply("welcome"),
            Calls([("config_get", {"key": "agent.max_rounds"})]), Reply("five"),
        ])
        lines = ["install the skills from " + url, "/as admin2 allow", "which skills do you have?",
                 "/cmd add hi Say hi to $args", "/hi Ann", "use fewer rounds", "/as admin2 allow", "thanks",
                 "/reboot", "how many rounds now?", "/as", "/help"]
        done = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="\n".join(lines) + "\n")
    finally:
        files.stop()
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    out = done.stdout.splitlines()
    prompts = [line for line in out if line.startswith('[to f:admin2] Tool "')]
    assert [p.split('"')[1] for p in prompts] == ["skill_install", "config_set"]
    replies = [line for line in out if not line.startswith("[to ") and not line.startswith(("Reply", "/"))]
    assert "installed" in replies and "read it" in replies and "Hi Ann!" in replies and "five" in replies
    assert any(line.startswith('Allowed: "skill_install"') for line in out)
    assert any(line.startswith('Allowed: "config_set"') for line in out)
    assert "Added /hi." in out
    assert any(line.startswith("Restarted with the settings in config/ (stopped 0 running message(s)).") for line in out)
    assert out[-11] == "Usage: /as <user> <text> (only the local operator, without --user)"
    assert out[-10] == "Commands:" and out[-1] == "/hi: Say hi to $args"
    bodies = [r.body for r in scripted_llm.requests]
    user_texts = [m["content"] for b in bodies for m in b["messages"] if m["role"] == "user"]
    assert "Say hi to Ann" in user_texts
    read = [m["content"] for m in bodies[3]["messages"] if m["role"] == "tool"][-1]
    assert read.startswith("# Field types")
    assert "- pdf-forms: Fill in PDF forms" in bodies[2]["messages"][0]["content"]
    assert "- pdf-forms" not in bodies[0]["messages"][0]["content"]
    after = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"][-1]
    assert after.startswith("agent.max_rounds = 5 —")  # the setting is live after /reboot
    assert "# my bot" in (cfg / "ania.toml").read_text()
    with closing(sqlite3.connect(tmp_path / "data" / "ania.db")) as db:
        kinds = [r[0] for r in db.execute("SELECT kind FROM op_log ORDER BY id")]
        details = [json.loads(r[0]) for r in db.execute("SELECT detail FROM op_log WHERE kind = 'config_set'")]
    assert kinds == ["tool_approval", "skill_manage", "command_manage", "tool_approval", "config_set", "reboot"]
    assert details == [{"key": "agent.max_rounds", "old": None, "new": 5, "approved_by": "admin2"}]


def test_only_the_local_operator_may_speak_as_someone_else(scripted_llm, tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "ania.toml").write_text('[bot]\nadmins = ["admin2"]\n')
    done = ania("chat", "--user", "u5", env=env_for(scripted_llm, tmp_path),
                stdin="/as admin2 /reboot\n/reboot\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Usage: /as <user> <text> (only the local operator, without --user)",
                                        "Only an admin can restart the bot."]
    assert scripted_llm.requests == []
