"""Starting Ania's OneBot platform against the fake implementation (tests/onebot_fake.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ania.engine import Engine
from ania.fakes.openai_server import ScriptedOpenAI
from ania.platforms.onebot import OneBotAdapter
from services.hooks.types import NoHooks
from tests.conftest import make_settings
from tests.onebot_fake import FakeOneBot

BOT = 10000
ADMIN = "900"


@dataclass
class Bot:
    engine: Engine
    adapter: OneBotAdapter
    fake: FakeOneBot
    llm: ScriptedOpenAI

    async def close(self) -> None:
        await self.adapter.stop(grace=5)
        await self.fake.close()
        await self.engine.close()

    def user_texts(self) -> list[str]:
        """The last user message of each model request (what the model read)."""
        out = []
        for r in self.llm.requests:
            users = [m for m in r.messages if m["role"] == "user"]
            if users:
                content = users[-1]["content"]
                out.append(content if isinstance(content, str) else " ".join(
                    p.get("text", "") for p in content if isinstance(p, dict)))
        return out


async def make_engine(tmp_path: Path, model: Any, fake: FakeOneBot, *, mode: str = "forward",
                      approval_timeout_sec: float | None = None, **sections: dict[str, Any]) -> Engine:
    """An engine whose model is `model.base_url` (the scripted server) and whose OneBot link is `fake`."""
    onebot = dict(sections.pop("onebot", {}))
    if mode == "forward":
        if not fake.serving:
            await fake.serve()
        onebot.setdefault("ws_url", fake.url)
    else:
        onebot.setdefault("listen", "127.0.0.1:0")
    onebot.setdefault("api_timeout_sec", 5)
    bot = {"admins": [ADMIN], **sections.pop("bot", {})}
    settings = make_settings(model, onebot=onebot, bot=bot, **sections)
    (tmp_path / "config").mkdir(exist_ok=True)
    return await Engine.start(tmp_path / "config", tmp_path / "data", settings=settings, hooks=NoHooks(),
                              approval_timeout_sec=approval_timeout_sec)


async def start_bot(tmp_path: Path, model: ScriptedOpenAI, *, mode: str = "forward", fake: FakeOneBot | None = None,
                    wait: bool = True, **kw: Any) -> Bot:
    fake = fake or FakeOneBot(self_id=BOT)
    engine = await make_engine(tmp_path, model, fake, mode=mode, **kw)
    adapter = OneBotAdapter(engine)
    await adapter.start()
    if mode == "reverse":
        fake.dial(f"ws://127.0.0.1:{adapter.port}{engine.services.settings.onebot.path}")
    if wait:
        await fake.wait_for(lambda: fake.connected.is_set() and adapter.conn.connected and adapter.self_id)
    return Bot(engine, adapter, fake, model)
