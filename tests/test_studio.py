"""`langgraph dev` serves the graphs of langgraph.json and runs threads over its HTTP API (D4): the graphs
served, runs, tool results, approvals, and the URL printed. The server and how it is started: tests/studio_helpers.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from tests.studio_helpers import (
    APPROVAL_TOOL,
    OFFLINE_ENV,
    ROOT,
    STUDIO_MODULE,
    TODO_ARGS,
    Studio,
    last,
    studio_llm,  # noqa: F401  (the fixture `llm`)
)

pytestmark = STUDIO_MODULE


def test_studio_graph_is_served(studio: Studio) -> None:
    r = studio.http.post("/assistants/search", json={"graph_id": "agent"})
    r.raise_for_status()
    assert [a["graph_id"] for a in r.json()] == ["agent"]
    r = studio.http.post("/assistants/search", json={"limit": 20})
    r.raise_for_status()
    assert sorted(a["graph_id"] for a in r.json()) == ["agent", "clock", "gate", "subagent", "team"]


def test_subagent_graph_runs_a_task(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([("time", {})], text="looking"), Reply("the subagent's answer")])
    out = studio.wait(studio.thread(), "subagent", input={"messages": [{"role": "user", "content": "what time?"}],
                                                          "max_rounds": 3})
    assert last(out)["content"] == "the subagent's answer"
    offered = set(llm.requests[0].tool_names)
    assert "time" in offered and not offered & {"subagent_run", "team_run", "team_save", "todo_write"}


def test_clock_graph_runs_a_task_and_keeps_only_its_final_reply(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([("time", {})], text="thinking aloud"), Reply("the task's reply")])
    out = studio.wait(studio.thread(), "clock", input={"messages": [{"role": "user", "content": "what time?"}]})
    assert out["reply"] == "the task's reply" and out["delivered"] is False  # no platform in Studio: logged
    offered = set(llm.requests[0].tool_names)
    assert {"time", "clock_list", "subagent_run"} <= offered and "todo_write" not in offered


def test_team_graph_gathers_its_members(studio: Studio, llm: ScriptedOpenAI) -> None:
    team = {"name": "duo", "purpose": "Two views.", "members": [{"name": "a", "role": "ROLE-A"},
                                                                {"name": "b", "role": "ROLE-B"}]}
    out = studio.wait(studio.thread(), "team", input={"team": team, "task": "say hi", "budget_sec": 30})
    summary = out["summary"]  # the members echo their task (the script is empty), role included
    assert re.match(r'Team "duo": 2 members in [0-9.]+ s \(2 ok\)\.\n\n\[a ok, ', summary)
    assert summary.index("ROLE-A") < summary.index("\n\n[b ok, ") < summary.index("ROLE-B")


def test_the_real_url_is_printed_once_when_the_port_is_taken(studio: Studio) -> None:
    log = studio.log.read_text(errors="replace")
    asked = int(re.search(r"--port', '(\d+)'", str(studio.proc.args)).group(1))
    served = studio.served_url()
    assert served is not None and not served.endswith(f":{asked}"), "the taken port cannot be the one served"
    assert f"Port {asked} is already in use" in log  # langgraph dev's own warning, lost among the log lines
    assert len(re.findall(r"^Ania: graphs agent, gate, subagent, team and clock served at ", log, re.M)) == 1
    assert f"(Studio: https://smith.langchain.com/studio/?baseUrl={served})" in log


def test_run_answers_with_the_scripted_reply(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Reply("hello from the script")])
    thread = studio.thread()
    out = studio.say(thread, "hi")
    assert len(llm.requests) == 1
    sent = llm.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user"] and sent[-1]["content"] == "hi"
    assert last(out)["type"] == "ai" and last(out)["content"] == "hello from the script"
    assert last(studio.state(thread)["values"])["content"] == "hello from the script"


def test_tool_result_reaches_the_model(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([("time", {"timezone": "UTC"})]), Reply("it is late")])
    thread = studio.thread()
    out = studio.say(thread, "what time is it?")
    assert len(llm.requests) == 2
    assert "time" in llm.requests[0].tool_names
    first, second = llm.requests[0].messages, llm.requests[1].messages
    assert second[: len(first)] == first, "the second request must extend the first"
    call, result = second[-2], second[-1]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"]["name"] == "time"
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "UTC" in result["content"] and not result["content"].startswith("Error")
    assert last(out)["content"] == "it is late"
    # A second message in the same thread continues the conversation.
    llm.script([Reply("still late")])
    out = studio.say(thread, "and now?")
    assert llm.requests[2].messages[: len(second)] == second
    assert last(out)["content"] == "still late"


def test_approval_interrupts_and_resumes(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([(APPROVAL_TOOL, TODO_ARGS)]), Reply("planned")])
    thread = studio.thread()
    out = studio.say(thread, "make a plan")
    assert len(llm.requests) == 1
    (pending,) = out["__interrupt__"]
    assert pending["value"]["type"] == "tool_approval" and pending["value"]["tool"] == APPROVAL_TOOL
    assert studio.state(thread)["next"] == ["tool_call"]
    out = studio.wait(thread, command={"resume": "allow"})
    assert "__interrupt__" not in out and last(out)["content"] == "planned"
    result = llm.requests[1].messages[-1]
    assert result["role"] == "tool" and result["content"].startswith("Todo list updated")


def test_an_unknown_resume_word_is_refused_with_the_accepted_ones(studio: Studio, llm: ScriptedOpenAI) -> None:
    """"maybe" used to count as a deny; now the call keeps waiting and the prompt says what counts."""
    llm.script([Calls([(APPROVAL_TOOL, TODO_ARGS)]), Reply("planned after all")])
    thread = studio.thread()
    assert studio.say(thread, "make a plan")["__interrupt__"]
    out = studio.wait(thread, command={"resume": "maybe"})
    (pending,) = out["__interrupt__"]
    assert pending["value"]["tool"] == APPROVAL_TOOL and len(llm.requests) == 1
    assert pending["value"]["prompt"].startswith(
        "'maybe' is not an answer to this approval; resume with one of: \"allow\", \"yes\", \"允许\", \"同意\", "
        "\"deny\", \"no\", \"拒绝\"")
    out = studio.wait(thread, command={"resume": {"decision": "perhaps", "by": "studio"}})
    assert out["__interrupt__"], "a decision dict with an unknown word is refused too"
    out = studio.wait(thread, command={"resume": "allow"})
    assert "__interrupt__" not in out and last(out)["content"] == "planned after all"
    assert llm.requests[1].messages[-1]["content"].startswith("Todo list updated")


def test_denied_approval_becomes_the_tool_result(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([(APPROVAL_TOOL, TODO_ARGS)]), Reply("ok, no plan")])
    thread = studio.thread()
    assert studio.say(thread, "make a plan")["__interrupt__"]
    out = studio.wait(thread, command={"resume": {"decision": "deny", "by": "studio", "reason": "not now"}})
    result = llm.requests[1].messages[-1]
    assert result["role"] == "tool" and result["content"].startswith("Not run:") and "not now" in result["content"]
    assert last(out)["content"] == "ok, no plan"


def test_a_bare_deny_in_studio_is_logged_with_who_and_why(studio: Studio, llm: ScriptedOpenAI) -> None:
    from services.store import AppStore

    llm.script([Calls([(APPROVAL_TOOL, TODO_ARGS)]), Reply("fine, no plan")])
    thread = studio.thread()
    assert studio.say(thread, "make a plan")["__interrupt__"]
    studio.wait(thread, command={"resume": "deny"})
    result = llm.requests[1].messages[-1]["content"]
    assert result.startswith('Not run: user studio denied the call to "todo_write"') and "Studio" in result
    store = AppStore(studio.log.parent / "data" / "ania.db")
    try:
        last = store.ops("tool_approval")[-1]
    finally:
        store.close()
    assert last["actor"] == "studio" and last["detail"]["decision"] == "deny" and last["detail"]["reason"]


def test_thread_recovers_after_a_failed_run(studio: Studio, llm: ScriptedOpenAI) -> None:
    from ania.fakes.openai_server import Fail

    llm.script([Fail(500)])
    thread = studio.thread()
    studio.say(thread, "hi")
    llm.script([Reply("back")])
    assert last(studio.say(thread, "again"))["content"] == "back"


def test_make_studio_uses_the_flags_tested_here() -> None:
    """`make studio` must stay offline and allow the app store's synchronous SQLite (blockbuster)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = next(line for line in makefile.splitlines() if "langgraph dev" in line)
    assert "--allow-blocking" in recipe and "--no-browser" in recipe and "--tunnel" not in recipe
    env_line = next(line for line in makefile.splitlines() if line.startswith("STUDIO_ENV"))
    assert all(f"{k}={v}" in env_line for k, v in OFFLINE_ENV.items())


def test_importing_the_studio_module_needs_no_configuration(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env["PYTHONPATH"] = str(ROOT)
    code = "import ania.studio as s; print(type(s.agent).__name__)"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "CompiledStateGraph"
    assert list(tmp_path.iterdir()) == [], "importing must not create config or data dirs"
