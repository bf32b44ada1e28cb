"""Shared fixtures: the scripted OpenAI-compatible server and engines built on temp dirs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator, Callable

import pytest

from ania.bridges import ChatBridge
from ania.engine import Engine
from ania.entry import MessageEntry
from ania.fakes.openai_server import ScriptedOpenAI
from services.config import Settings
from services.hook_types import NoHooks


@pytest.fixture
def scripted_llm() -> ScriptedOpenAI:
    server = ScriptedOpenAI().start()
    yield server
    server.stop()


def make_settings(server: ScriptedOpenAI, **sections: dict[str, Any]) -> Settings:
    base: dict[str, Any] = {"llm": {"base_url": server.base_url, "model": "scripted-model", "api_key": "k",
                                    "timeout_sec": 5, "max_retries": 0},
                            "bot": {"admins": ["admin"]}}
    for name, values in sections.items():
        base[name] = {**base.get(name, {}), **values}
    return Settings(**base)


class Chat:
    """An engine plus message entry whose chats are collected in memory."""

    def __init__(self, engine: Engine, out: dict[str, list[str]]) -> None:
        self.engine = engine
        self.out = out
        self.entry = MessageEntry(engine, self.bridge)
        engine.outbox = self._outbox

    def bridge(self, session_key: str) -> ChatBridge:
        async def send(text: str) -> None:
            self.out.setdefault(session_key, []).append(text)

        return ChatBridge(send, self.engine.services.paths.data_dir / "outbox" / session_key)

    async def _outbox(self, session_key: str, text: str) -> bool:
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
