"""The bash attacks through the real loop (scripted model, gate pipeline, execute)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ania.fakes.openai_server import Calls, Reply
from tests.conftest import make_settings
from tests.test_bash import NEEDS_BWRAP
from tests.test_bash_attacks import BLACK, QUOTING, WHITE
from tools import bash as bash_module

ATTACKS = [*QUOTING, "true;" * 600 + "rm -rf x", "echo " + "$(" * 300 + "a" * 100_000, "$(" * 2000 + "ls"]


def tool_results(server) -> list[str]:
    return [m["content"] for m in server.requests[-1].messages if m["role"] == "tool"]


def bash_settings(server, tmp_path: Path, approval: bool, **bash):
    ws = tmp_path / "ws"
    (ws / "x").mkdir(parents=True)
    (ws / "x" / "sentinel").write_text("keep")
    return make_settings(server, approval={"enable": approval},
                         bash={"enable": True, "blacklist": BLACK, "whitelist": WHITE, "workdir": str(ws),
                               "sandbox": "off", **bash})


@pytest.fixture
def inspections(monkeypatch) -> list[str]:
    """Every line the bash tool analysed (the analysis is cached per line: once per call)."""
    seen: list[str] = []
    real = bash_module.parse_line
    monkeypatch.setattr(bash_module, "parse_line", lambda line: seen.append(line) or real(line))
    return seen


async def test_attacks_with_approval_off_and_a_blacklist_are_refused(scripted_llm, make_chat, tmp_path, inspections):
    chat = await make_chat(bash_settings(scripted_llm, tmp_path, approval=False))
    scripted_llm.script([Calls([("bash", {"command": a}) for a in ATTACKS]), Reply("done")])
    out = await chat.say("g:1", "u1", "run these")
    results = tool_results(scripted_llm)
    assert len(results) == len(ATTACKS) and out[-1] == "done"  # the turn survived (no RecursionError)
    assert all(r.startswith("Error: bash command refused") for r in results), results
    assert (tmp_path / "ws" / "x" / "sentinel").exists()
    assert sorted(inspections) == sorted(ATTACKS)  # one analysis per call, for the gate and execute


async def test_a_whitelisted_call_is_analysed_once_and_runs(scripted_llm, make_chat, tmp_path, inspections):
    chat = await make_chat(bash_settings(scripted_llm, tmp_path, approval=True))
    scripted_llm.script([Calls([("bash", {"command": "cat x/sentinel"})]), Reply("done")])
    await chat.say("f:u1", "u1", "read it")
    assert tool_results(scripted_llm) == ["keep"] and inspections == ["cat x/sentinel"]


async def test_a_doubtful_call_asks_a_human_with_the_reason(scripted_llm, make_chat, tmp_path, inspections):
    chat = await make_chat(bash_settings(scripted_llm, tmp_path, approval=True), approval_timeout_sec=0.3)
    line = "cat <<EOF\nhello\nEOF"
    scripted_llm.script([Calls([("bash", {"command": line})]), Reply("done")])
    out = await chat.say("f:admin", "admin", "try")
    assert any("could not be checked fully: a here-document (<<)" in t for t in out), out
    assert tool_results(scripted_llm) == ['Not run: no approval for "bash" (timed out after 0.3 s).']
    assert inspections == [line]


@NEEDS_BWRAP
async def test_sandboxed_through_the_loop(scripted_llm, make_chat, tmp_path, monkeypatch):
    monkeypatch.setenv("ANIA_LLM__API_KEY", "sk-loop-secret")
    settings = bash_settings(scripted_llm, tmp_path, approval=False, sandbox="bwrap")
    chat = await make_chat(settings)
    scripted_llm.script([Calls([("bash", {"command": "cat /proc/$PPID/environ"}),
                                ("bash", {"command": "cat ../config/ania.toml; ls ..; echo $HOME"})]), Reply("ok")])
    await chat.say("g:1", "u1", "peek")
    environ, config = tool_results(scripted_llm)
    assert "sk-loop-secret" not in environ and "PATH=" in environ
    missing, listing, home = config.split("\n")
    assert "No such file" in missing and listing == "ws" and home == str(tmp_path / "ws")  # only the workspace
