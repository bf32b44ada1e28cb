"""The `langgraph dev` server the test_studio*.py modules drive, and their helpers.

A real `langgraph dev` subprocess (in-memory runtime, loopback only, no analytics, no version check,
no tracing) against the scripted model. Its working directory is a temp dir: the in-memory runtime
writes `.langgraph_api/` into its cwd, and the CLI drops `disable_persistence` from the config, so a
repo-root cwd would leave test threads in the developer's Studio. The config is the repo's
langgraph.json with its graph paths made absolute (the repo root goes on PYTHONPATH).

The port asked for is taken on purpose: `langgraph dev` then serves elsewhere, and the tests find the
server through the one line Ania prints with the URL it really serves on.

One server for all those modules: the `studio` fixture is session-scoped and lives in tests/conftest.py (a
fixture imported into each module is a fixture per module, each starting its own server); it stops when the
session ends. The modules import `studio_llm`, the fixture `llm`: the server's scripted model, reset per test.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ania.fakes.openai_server import Reply, ScriptedOpenAI

ROOT = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"
#: The marks of every module that uses the session fixture `studio`: one `langgraph dev` serves them all, so
#: under xdist they share one worker; a Studio start is slow, hence the long timeout.
STUDIO_MODULE = [pytest.mark.timeout(180), pytest.mark.xdist_group("studio")]
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


@contextmanager
def serve_studio(tmp: Path) -> Iterator[Studio]:
    """The server on `tmp` (its config, data, log and cwd) until the block ends: the `studio` fixture of
    tests/conftest.py."""
    llm = ScriptedOpenAI().start()
    taken = socket.socket()  # the port asked for is busy
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANIA_", "LANGSMITH_", "LANGCHAIN_"))}
    env.update(OFFLINE_ENV, PYTHONPATH=str(ROOT), ANIA_CONFIG_DIR=str(tmp / "config"), ANIA_DATA_DIR=str(tmp / "data"),
               ANIA_LLM__BASE_URL=llm.base_url, ANIA_LLM__MODEL="scripted-model", ANIA_LLM__API_KEY="k",
               ANIA_LLM__MAX_RETRIES="0", ANIA_APPROVAL__TOOLS=json.dumps([APPROVAL_TOOL]))
    bot_turn(tmp, llm, EARLY_SESSION, "what did we decide yesterday?", "the early answer", before=OLDER_SESSIONS)
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


def bot_turn(tmp: Path, llm: ScriptedOpenAI, key: str, text: str, reply: str, *,
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


async def _discard(text: str) -> None:
    """What the bot sends in these turns goes nowhere: the tests read the stored session instead."""


@pytest.fixture(name="llm")
def studio_llm(studio: Studio) -> ScriptedOpenAI:
    """The server's scripted model, reset: a module imports `studio_llm` and its tests take `llm`."""
    studio.llm.reset()
    return studio.llm


def last(values: dict[str, Any]) -> dict[str, Any]:
    return values["messages"][-1]
