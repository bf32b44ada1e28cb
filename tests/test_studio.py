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
#: A bot session made by a real turn before the server starts: Studio lists it when it starts.
EARLY_SESSION = "g:early"
#: Sessions written before it, oldest first: with it, two more than the 20 most recent that Studio lists.
OLDER_SESSIONS = tuple(f"g:old{i:02}" for i in range(21))



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
    if "http" in config:  # the app that guards the server (ania/studio_http.py)
        app_path, _, app_var = config["http"]["app"].partition(":")
        assert (ROOT / app_path).is_file(), f"langgraph.json: http.app {app_path} does not exist"
        config["http"] = {**config["http"], "app": f"{(ROOT / app_path).resolve()}:{app_var}"}
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
    _bot_turn(tmp, llm, EARLY_SESSION, "what did we decide yesterday?", "the early answer", before=OLDER_SESSIONS)
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


def _bot_turn(tmp: Path, llm: ScriptedOpenAI, key: str, text: str, reply: str, *,
              before: tuple[str, ...] = ()) -> list[str]:
    """A real turn of the bot on the data directory the server serves (after one turn in each session of
    `before`, oldest first); the session's messages after it."""
    import asyncio

    from ania.engine import Engine
    from ania.platforms.bridge import ChatBridge
    from checkpoints.sessions import session_messages
    from tests.conftest import make_settings

    (tmp / "config").mkdir(exist_ok=True)

    async def turn() -> list[str]:
        engine = await Engine.start(tmp / "config", tmp / "data", settings=make_settings(llm))
        try:
            llm.script([Reply("ok")] * len(before) + [Reply(reply)])
            for other in before:
                await engine.run_turn(other, "u1", "hello", ChatBridge(_discard, tmp / "outbox"))
            await engine.run_turn(key, "u1", text, ChatBridge(_discard, tmp / "outbox"))
            return [str(m.content) for m in await session_messages(engine.graph, key)]
        finally:
            await engine.close()
            llm.reset()

    return asyncio.run(turn())


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
    g:team to its UUID thread and registers it; a run there acts as g:team and leaves the bot's thread as it was.
    The server asked for a taken port and serves on another: the command finds it without --url (the URL the
    server recorded in the data directory), and GET /threads/{id} shows the session's messages at once."""
    import asyncio

    from ania.cli import main
    from ania.studio_checkpointer import studio_thread_id

    tmp = studio.log.parent
    before = _bot_turn(tmp, llm, "g:team", "what happened at 14:00?", "the bot's answer")
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp / "config"))
    url = str(studio.http.base_url).rstrip("/")
    assert main(["sessions", "studio", "g:team"]) == 0
    thread = studio_thread_id("g:team")
    out = capsys.readouterr().out
    assert thread in out and f"baseUrl={url}" in out
    shown = [m["content"] for m in studio.state(thread)["values"]["messages"]]
    assert shown == before
    listed = studio.http.get(f"/threads/{thread}").json()
    assert [m["content"] for m in listed["values"]["messages"]] == before and listed["metadata"]["session"] == "g:team"
    llm.script([Reply("studio answer")])
    out = studio.say(thread, "and then?")
    assert _last(out)["content"] == "studio answer"
    assert "[u1] what happened at 14:00?" in str(llm.requests[-1].messages)  # the group's history, as g:team
    assert asyncio.run(_messages(tmp / "data", "g:team")) == before  # the bot's own thread is untouched
    assert main(["sessions", "studio", "g:nobody", "--url", url]) == 1


def test_sessions_studio_names_the_server_it_could_not_reach(tmp_path: Path, monkeypatch, capsys) -> None:
    """A studio.json left by a server that is gone is ignored (its pid is dead): the default port is tried and the
    error says no running server is recorded; --port names another."""
    from ania.cli import main

    llm = ScriptedOpenAI().start()
    try:
        _bot_turn(tmp_path, llm, "g:gone", "hello", "hi")
    finally:
        llm.stop()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(30)
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nothing listens there
    (tmp_path / "data" / "studio.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}", "pid": dead.pid}))
    monkeypatch.setenv("ANIA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ANIA_CONFIG_DIR", str(tmp_path / "config"))
    assert main(["sessions", "studio", "g:gone", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"the Studio server at http://127.0.0.1:{port} did not take it" in err and "--url/--port" in err
    assert main(["sessions", "studio", "g:gone"]) == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" not in err, "a stale studio.json must be ignored"
    assert "no running Studio server recorded in" in err


def test_the_bot_s_recent_sessions_are_listed_when_studio_starts(studio: Studio) -> None:
    """g:early had a real turn before the server started: it is a thread at once, with its messages, and the
    server recorded its real URL (and pid) in the data directory for `ania sessions studio`."""
    from ania.studio_checkpointer import studio_thread_id

    r = studio.http.post("/threads/search", json={"metadata": {"session": EARLY_SESSION}})
    r.raise_for_status()
    (thread,) = r.json()
    assert thread["thread_id"] == studio_thread_id(EARLY_SESSION)
    assert [m["content"] for m in thread["values"]["messages"]][-2:] == ["[u1] what did we decide yesterday?",
                                                                          "the early answer"]
    assert studio.http.get(f"/threads/{thread['thread_id']}").json()["values"] == thread["values"]
    r = studio.http.post("/threads/search", json={"limit": 100})
    r.raise_for_status()
    listed = {t["metadata"].get("session") for t in r.json()} - {None}
    assert {EARLY_SESSION, *OLDER_SESSIONS[2:]} <= listed and not listed & set(OLDER_SESSIONS[:2])
    recorded = json.loads((studio.log.parent / "data" / "studio.json").read_text())
    assert recorded == {"url": studio.served_url(), "pid": recorded["pid"]} and recorded["pid"] != os.getpid()


#: A simple request a web page may send without a preflight: `text/plain`, and the body is still JSON.
SIMPLE = {"Content-Type": "text/plain"}
EVIL = "https://evil.example"


def test_a_foreign_web_page_cannot_drive_studio(studio: Studio, llm: ScriptedOpenAI) -> None:
    """Studio runs as the local admin: a page from another origin is refused (403) before anything runs, its
    preflight too, with no CORS or private-network grant; Studio's web app, local pages and clients without an
    Origin still work. A page that rebinds its own DNS name to 127.0.0.1 (Host: its name) is refused as well."""
    llm.script([Reply("admin answer")] * 5)
    run = json.dumps({"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "bot.admins?"}]}})
    thread = studio.thread()
    for path in ("/runs/wait", f"/threads/{thread}/runs/wait", "/runs"):
        r = studio.http.post(path, content=run, headers={**SIMPLE, "Origin": EVIL})
        assert r.status_code == 403 and EVIL in r.json()["detail"], (path, r.status_code, r.text)
        assert "access-control-allow-origin" not in r.headers
    for origin in (EVIL, "null", "http://localhost.evil.example:2024", "http://127.0.0.1.nip.io"):
        r = studio.http.request("OPTIONS", "/runs/wait", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type", "Access-Control-Request-Private-Network": "true"})
        assert r.status_code == 403, origin
        assert not {"access-control-allow-origin", "access-control-allow-private-network"} & set(r.headers), origin
    r = studio.http.get(f"/threads/{thread}", headers={"Host": f"rebound.evil.example:{studio.http.base_url.port}"})
    assert r.status_code == 403
    assert llm.requests == [], "no run may have started"
    assert studio.state(thread)["values"] == {}
    for origin in ("https://smith.langchain.com", "http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000"):
        r = studio.http.request("OPTIONS", "/runs/wait", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type", "Access-Control-Request-Private-Network": "true"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin, origin
        assert r.headers["access-control-allow-private-network"] == "true"
    for origin in ("https://smith.langchain.com", "http://localhost:5173"):
        r = studio.http.post("/runs/wait", content=run, headers={"Content-Type": "application/json", "Origin": origin})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin
        assert _last(r.json())["content"] == "admin answer"
    assert len(llm.requests) == 2
    assert studio.http.post("/runs/wait", content=run, headers={"Content-Type": "application/json"}).status_code == 200


def test_langgraph_json_allows_the_origins_the_guard_allows() -> None:
    """The CORS headers langgraph-api sends and the guard in front of it agree (langgraph.json http.cors)."""
    import re as re_

    from ania.studio_http import STUDIO_ORIGINS, allowed_origin

    cors = json.loads((ROOT / "langgraph.json").read_text())["http"]["cors"]
    assert tuple(cors["allow_origins"]) == STUDIO_ORIGINS
    for origin in ("http://localhost", "http://localhost:2024", "https://127.0.0.1:1", "http://[::1]:3000",
                   "http://localhost.evil.example", "https://evil.example", "null", "http://127.0.0.1:80/x"):
        assert bool(re_.fullmatch(cors["allow_origin_regex"], origin)) == allowed_origin(origin) or \
            origin in STUDIO_ORIGINS, origin


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
