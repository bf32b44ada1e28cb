"""Shared fixtures: the scripted OpenAI-compatible server and engines built on temp dirs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from ania.compose import build_services
from ania.engine import Engine
from ania.entry import MessageEntry
from ania.fakes.openai_server import ScriptedOpenAI
from ania.platforms.bridge import ChatBridge
from core.settings import Paths, Settings
from services.container import Services
from services.context import RunContext
from services.hooks.types import NoHooks

#: The mode this run tests: `ANIA_ENGINE__STOCK=1 pytest ...` (`make test-stock`) runs on the libraries' own code
#: (engine.stock; every `Settings()` reads it), else on Ania's fast copies. Checks of the copies themselves
#: (their caches, their counters) run in the fast mode only.
STOCK = Settings().engine.stock


@pytest.fixture
def scripted_llm() -> ScriptedOpenAI:
    server = ScriptedOpenAI().start()
    yield server
    server.stop()


def make_settings(server: ScriptedOpenAI, **sections: dict[str, Any]) -> Settings:
    base: dict[str, Any] = {"llm": {"base_url": server.base_url, "model": "scripted-model", "api_key": "k",
                                    "timeout_sec": 5, "max_retries": 0},
                            "bot": {"admins": ["admin"]},
                            # Tests send many messages from one member in quick succession; the flow tests
                            # (tests/test_flow*.py) set the rate limit they test.
                            "flow": {"member_rate_per_min": 0}}
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return Settings(**base)


class Chat:
    """An engine plus message entry whose chats are collected in memory."""

    def __init__(self, engine: Engine, out: dict[str, list[str]]) -> None:
        self.engine = engine
        self.out = out
        self.entry = MessageEntry(engine, self.bridge)
        self.detach = engine.services.outboxes.attach("test chat", self.outbox)

    def bridge(self, session_key: str) -> ChatBridge:
        async def send(text: str) -> None:
            self.out.setdefault(session_key, []).append(text)

        return ChatBridge(send, self.engine.services.paths.data_dir / "outbox" / session_key)

    async def outbox(self, session_key: str, text: str) -> bool:
        """The chat's outbox (attached at start): a test may wrap it in another one."""
        self.out.setdefault(session_key, []).append(text)
        return True

    async def say(self, session_key: str, user_id: str, text: str) -> list[str]:
        """Send a message, wait for its turn, return what the chat received meanwhile."""
        before = len(self.out.get(session_key, []))
        task = await self.entry.submit(session_key, user_id, text)
        if task is not None:
            await task
        return self.out.get(session_key, [])[before:]


@pytest.fixture
async def make_services(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Services from the one composition root (ania/compose.py), on temp dirs, closed after the test."""
    stack = AsyncExitStack()

    async def factory(settings: Settings | None = None, **kw: Any) -> Services:
        paths = Paths(tmp_path / "config", tmp_path / "data")
        paths.config_dir.mkdir(parents=True, exist_ok=True)
        return await build_services(paths, settings or Settings(), stack, hooks=kw.pop("hooks", NoHooks()), **kw)

    yield factory
    await stack.aclose()


def run_context(services: Services, session_key: str = "f:u1", requester: str = "u1", **kw: Any) -> RunContext:
    """A run context on the session's own executor, for tools called outside a graph."""
    return RunContext(session_key=session_key, requester=requester, bridge=kw.pop("bridge", None),  # type: ignore[arg-type]
                      executor=services.sessions.executor(session_key), services=services, **kw)


@pytest.fixture
async def make_chat(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    engines: list[Engine] = []

    async def factory(settings: Settings, *, data: Path | None = None, hooks: Any = None, **kw: Any) -> Chat:
        cfg = tmp_path / "config"
        cfg.mkdir(exist_ok=True)
        engine = await Engine.start(cfg, data or tmp_path / "data", settings=settings,
                                    hooks=hooks if hooks is not None else NoHooks(), **kw)
        engines.append(engine)
        return Chat(engine, {})

    yield factory
    for e in engines:
        await e.close()


@pytest.fixture
async def bot(tmp_path: Path, scripted_llm: ScriptedOpenAI) -> AsyncIterator[Callable[..., Any]]:
    """Bots on the fake OneBot implementation (tests/onebot_helpers.py), closed after the test."""
    from tests.onebot_helpers import start_bot  # websockets and the fake: only for the tests that use them

    bots: list[Any] = []

    async def factory(**kw: Any) -> Any:
        b = await start_bot(tmp_path, scripted_llm, **kw)
        bots.append(b)
        return b

    yield factory
    for b in bots:
        await b.close()


@pytest.fixture
def web() -> Any:
    """A local web server (tests/web_fake.py) for images, pages and APIs; the MCP tests' own `web` fixtures
    (an MCP server over HTTP) override it in their modules."""
    from tests.web_fake import WebFake

    server = WebFake().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real `langgraph dev` server (tests/studio_helpers.py), one for the session: the test_studio*.py modules
    share it (module-scoped, each of them would start its own); it stops when the session ends."""
    from tests.studio_helpers import serve_studio

    with serve_studio(tmp_path_factory.mktemp("studio")) as server:
        yield server
