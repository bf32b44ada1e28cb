"""The panel on a real engine (temporary data directory, the scripted model), driven over ASGI by httpx.

    async with open_panel(tmp_path, scripted_llm) as p:
        r = await p.client.get("/api/overview")          # bearer token: the API as a script calls it
        r = await p.anon.get("/api/overview")            # no credentials: refused (401)
        browser, csrf = await p.login()                  # a browser's session: cookie + CSRF token
        await browser.put("/api/config/x", json=..., headers={"X-CSRF-Token": csrf, "Origin": ORIGIN})
        p.ops("config_set")                              # the operation-log rows of a kind

Browser tests (a real Chromium) build on this: tests/browser_helpers.py.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from ania.engine import Engine
from ania.entry import MessageEntry
from ania.fakes.openai_server import ScriptedOpenAI
from ania.panel.app import build_app
from ania.panel.auth import PanelAuth
from ania.panel.context import PanelContext
from ania.panel.server import detached_entry
from core.settings import Settings
from services.hooks.types import NoHooks
from tests.conftest import make_settings

BASE_URL = "http://127.0.0.1:6190"
ORIGIN = BASE_URL
FOREIGN = "http://evil.example"


@dataclass
class PanelHarness:
    ctx: PanelContext
    app: Starlette
    #: Carries `Authorization: Bearer <token>` (a script's way in; needs no CSRF token).
    client: httpx.AsyncClient
    #: Carries nothing: every API route refuses it.
    anon: httpx.AsyncClient
    token: str
    tmp_path: Path
    #: Messages in, as a chat would send them (`await p.entry.submit("g:1", "u1", "hi")`); the panel's reboot
    #: goes through it. What the bot says lands in `out` (session → texts).
    entry: MessageEntry
    out: dict[str, list[str]]

    def new_client(self, **headers: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=BASE_URL, headers=headers)

    async def login(self) -> tuple[httpx.AsyncClient, str]:
        """A browser-like client logged in with the link: its session cookie, and the page's CSRF token."""
        browser = self.new_client()
        r = await browser.get(f"/login?token={self.token}")
        assert r.status_code == 303, r.text
        page = await browser.get("/")
        match = re.search(r'<meta name="csrf-token" content="([^"]+)">', page.text)
        assert match, page.text[:500]
        return browser, match.group(1)

    def ops(self, kind: str | None = None) -> list[dict[str, Any]]:
        return self.ctx.services.store.ops(kind)


@asynccontextmanager
async def open_panel(tmp_path: Path, llm: ScriptedOpenAI, *, settings: Settings | None = None,
                     **sections: dict[str, Any]) -> AsyncIterator[PanelHarness]:
    """A real engine on `tmp_path` (config/ and data/), the panel app over it, and the two clients."""
    config, data = tmp_path / "config", tmp_path / "data"
    config.mkdir(exist_ok=True)
    settings = settings or make_settings(llm, **sections)
    engine = await Engine.start(config, data, settings=settings, hooks=NoHooks())
    auth = PanelAuth(data, settings.panel)
    token, _ = auth.ensure_token()

    out: dict[str, list[str]] = {}

    async def send(session: str, text: str) -> None:
        out.setdefault(session, []).append(text)

    async def outbox(session: str, text: str) -> bool:
        await send(session, text)
        return True

    engine.services.outboxes.attach("panel test", outbox)
    entry = detached_entry(engine, send)
    ctx = PanelContext(engine=engine, reboot=lambda: entry.restart("", "panel"), auth=auth, mode="alone",
                       started=time.time())
    app = build_app(ctx)
    transport = httpx.ASGITransport(app=app)
    harness = PanelHarness(ctx, app, httpx.AsyncClient(transport=transport, base_url=BASE_URL,
                                                       headers={"Authorization": f"Bearer {token}"}),
                           httpx.AsyncClient(transport=transport, base_url=BASE_URL), token, tmp_path, entry, out)
    try:
        yield harness
    finally:
        await harness.client.aclose()
        await harness.anon.aclose()
        await engine.close()
