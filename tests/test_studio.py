"""`langgraph dev` serves the agent graph of langgraph.json and runs threads over its HTTP API (D4).

A real `langgraph dev` subprocess (in-memory runtime, loopback only, no analytics, no version check,
no tracing) against the scripted model. Its working directory is a temp dir: the in-memory runtime
writes `.langgraph_api/` into its cwd, and the CLI drops `disable_persistence` from the config, so a
repo-root cwd would leave test threads in the developer's Studio. The config is the repo's
langgraph.json with its graph paths made absolute (the repo root goes on PYTHONPATH).

The port asked for is taken on purpose: `langgraph dev` then serves elsewhere, and the tests find the
server through the one line Ania prints with the URL it really serves on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true", "LANGSMITH_TRACING": "false"}
READY_SEC = 60
#: Needs approval in these tests (a tool the other runs do not call, so one server serves all tests).
APPROVAL_TOOL = "todo_write"
TODO_ARGS = {"todos": [{"content": "Check the time", "status": "pending"}]}



def _studio_config(tmp: Path) -> Path:
    config = json.loads((ROOT / "langgraph.json").read_text())
    graphs = {}
    for name, spec in config["graphs"].items():
        path, _, var = spec.partition(":")
        assert (ROOT / path).is_file(), f"langgraph.json: {spec} does not exist relative to the repo root"
        graphs[name] = f"{(ROOT / path).resolve()}:{var}"
    checkpointer = config["checkpointer"]["path"]
    path, _, var = checkpointer.partition(":")
    assert (ROOT / path).is_file(), f"langgraph.json: {checkpointer} does not exist relative to the repo root"
    out = tmp / "langgraph.json"
    out.write_text(json.dumps({**config, "graphs": graphs,
                               "checkpointer": {"path": f"{(ROOT / path).resolve()}:{var}"}}))
    return out


class Studio:
    def __init__(self, url: str, llm: ScriptedOpenAI, proc: subprocess.Popen, log: Path) -> None:
        self.http = httpx.Client(base_url=url, timeout=60)
        self.llm = llm
        self.proc = proc
        self.log = log

    def served_url(self) -> str | None:
        m = re.search(r"^Ania: graphs agent, gate, subagent, team and clock served at (http://\S+) \(Studio: ", self.log.read_text(errors="replace"),
                      re.M)
        return m.group(1) if m else None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def thread(self) -> str:
        r = self.http.post("/threads", json={})
        r.raise_for_status()
        return r.json()["thread_id"]

    def wait(self, thread: str, assistant: str = "agent", **body: Any) -> dict[str, Any]:
        r = self.http.post(f"/threads/{thread}/runs/wait", json={"assistant_id": assistant, **body})
        assert r.status_code == 200, r.text
        out = r.json()
        assert "__error__" not in out, f"{out['__error__']}\n{self.log_tail()}"
        return out

    def say(self, thread: str, text: str) -> dict[str, Any]:
        return self.wait(thread, input={"messages": [{"role": "user", "content": text}]})

    def state(self, thread: str) -> dict[str, Any]:
        r = self.http.get(f"/threads/{thread}/state")
        r.raise_for_status()
        return r.json()


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    tmp = tmp_path_factory.mktemp("studio")
    llm = ScriptedOpenAI().start()
    taken = socket.socket()  # the port asked for is busy
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANIA_", "LANGSMITH_", "LANGCHAIN_"))}
    env.update(OFFLINE_ENV, PYTHONPATH=str(ROOT), ANIA_CONFIG_DIR=str(tmp / "config"), ANIA_DATA_DIR=str(tmp / "data"),
               ANIA_LLM__BASE_URL=llm.base_url, ANIA_LLM__MODEL="scripted-model", ANIA_LLM__API_KEY="k",
               ANIA_LLM__MAX_RETRIES="0", ANIA_APPROVAL__TOOLS=json.dumps([APPROVAL_TOOL]))
    log = tmp / "langgraph-dev.log"
    # --allow-blocking: the app store is synchronous SQLite (as in `make studio`).
    cmd = [str(LANGGRAPH), "dev", "--config", str(_studio_config(tmp)), "--no-browser", "--no-reload",
           "--allow-blocking", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    s = Studio(f"http://127.0.0.1:{port}", llm, proc, log)
    try:
        deadline = time.monotonic() + READY_SEC
        while True:
            assert proc.poll() is None, f"langgraph dev exited with {proc.returncode}:\n{s.log_tail()}"
            assert time.monotonic() < deadline, f"langgraph dev not ready in {READY_SEC} s:\n{s.log_tail()}"
            url = s.served_url()
            if url is None:
                time.sleep(0.3)
                continue
            s.http.base_url = httpx.URL(url)
            try:
                if s.http.get("/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        yield s
    finally:
        taken.close()
        s.http.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        llm.stop()


@pytest.fixture
def llm(studio: Studio) -> ScriptedOpenAI:
    studio.llm.reset()
    return studio.llm


def _last(values: dict[str, Any]) -> dict[str, Any]:
    return values["messages"][-1]


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
    assert _last(out)["content"] == "the subagent's answer"
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
    assert _last(out)["type"] == "ai" and _last(out)["content"] == "hello from the script"
    assert _last(studio.state(thread)["values"])["content"] == "hello from the script"


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
    assert _last(out)["content"] == "it is late"
    # A second message in the same thread continues the conversation.
    llm.script([Reply("still late")])
    out = studio.say(thread, "and now?")
    assert llm.requests[2].messages[: len(second)] == second
    assert _last(out)["content"] == "still late"


def test_approval_interrupts_and_resumes(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([(APPROVAL_TOOL, TODO_ARGS)]), Reply("planned")])
    thread = studio.thread()
    out = studio.say(thread, "make a plan")
    assert len(llm.requests) == 1
    (pending,) = out["__interrupt__"]
    assert pending["value"]["type"] == "tool_approval" and pending["value"]["tool"] == APPROVAL_TOOL
    assert studio.state(thread)["next"] == ["tool_call"]
    out = studio.wait(thread, command={"resume": "allow"})
    assert "__interrupt__" not in out and _last(out)["content"] == "planned"
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
    assert "__interrupt__" not in out and _last(out)["content"] == "planned after all"
    assert llm.requests[1].messages[-1]["content"].startswith("Todo list updated")


def test_denied_approval_becomes_the_tool_result(studio: Studio, llm: ScriptedOpenAI) -> None:
    llm.script([Calls([(APPROVAL_TOOL, TODO_ARGS)]), Reply("ok, no plan")])
    thread = studio.thread()
    assert studio.say(thread, "make a plan")["__interrupt__"]
    out = studio.wait(thread, command={"resume": {"decision": "deny", "by": "studio", "reason": "not now"}})
    result = llm.requests[1].messages[-1]
    assert result["role"] == "tool" and result["content"].startswith("Not run:") and "not now" in result["content"]
    assert _last(out)["content"] == "ok, no plan"


def test_thread_recovers_after_a_failed_run(studio: Studio, llm: ScriptedOpenAI) -> None:
    from ania.fakes.openai_server import Fail

    llm.script([Fail(500)])
    thread = studio.thread()
    studio.say(thread, "hi")
    llm.script([Reply("back")])
    assert _last(studio.say(thread, "again"))["content"] == "back"


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


def test_a_bot_session_opens_in_studio_and_the_original_stays(studio: Studio, llm: ScriptedOpenAI, monkeypatch,
                                                              capsys) -> None:
    """The server runs on the bot's own data/checkpoints.db; `ania sessions studio` copies a session keyed
    g:team to its UUID thread and registers it; a run there acts as g:team and leaves the bot's thread as it was."""
    import asyncio

    from ania.cli import main
    from ania.engine import Engine
    from ania.platforms.bridge import ChatBridge
    from ania.studio_checkpointer import studio_thread_id
    from checkpoints.sessions import session_messages
    from tests.conftest import make_settings

    tmp = studio.log.parent
    (tmp / "config").mkdir(exist_ok=True)

    async def bot_turn() -> list[str]:
        engine = await Engine.start(tmp / "config", tmp / "data", settings=make_settings(llm))
        try:
            llm.script([Reply("the bot's answer")])
            await engine.run_turn("g:team", "u1", "what happened at 14:00?", ChatBridge(_discard, tmp / "outbox"))
            return [m.content for m in await session_messages(engine.graph, "g:team")]
        finally:
            await engine.close()

    before = asyncio.run(bot_turn())
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp / "config"))
    url = str(studio.http.base_url).rstrip("/")
    assert main(["sessions", "studio", "g:team", "--url", url]) == 0
    thread = studio_thread_id("g:team")
    assert thread in capsys.readouterr().out
    shown = [m["content"] for m in studio.state(thread)["values"]["messages"]]
    assert shown == before
    llm.script([Reply("studio answer")])
    out = studio.say(thread, "and then?")
    assert _last(out)["content"] == "studio answer"
    assert "[u1] what happened at 14:00?" in str(llm.requests[-1].messages)  # the group's history, as g:team
    assert asyncio.run(_messages(tmp / "data", "g:team")) == before  # the bot's own thread is untouched
    assert main(["sessions", "studio", "g:nobody", "--url", url]) == 1


async def _discard(text: str) -> None:
    """What the bot sends in this test goes nowhere: the test reads the stored session instead."""


async def _messages(data: Path, key: str) -> list[str]:
    from checkpoints.factory import open_checkpointer
    from checkpoints.sessions import session_messages

    async with open_checkpointer(data) as saver:
        return [m.content for m in await session_messages(saver, key)]


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
