"""The panel in a real Chromium (Debian's `chromium`, driven by Playwright; Playwright's own browser download
is not used). A browser test module starts with

    pytestmark = BROWSER_MODULE

and opens a logged-in page with

    async with browser_panel(tmp_path, scripted_llm) as b:
        await b.page.goto(b.url("/config"))
        ...                                   # b.panel is the PanelHarness (tests/panel_helpers.py)

Without the browser the tests skip, except in CI (CI=true), where a missing browser fails them (.ci/run
installs it). All browser tests run on one xdist worker: one Chromium at a time on a small machine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from ania.fakes.openai_server import ScriptedOpenAI
from ania.panel.server import QuietServer
from tests.panel_helpers import PanelHarness, open_panel

CHROMIUM = os.environ.get("ANIA_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
BROWSER_MODULE = [pytest.mark.browser, pytest.mark.xdist_group("browser"), pytest.mark.timeout(180)]
#: A phone's screen (the layout test) and a laptop's.
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


def need_browser() -> None:
    """Skip without Chromium or Playwright; in CI that is a failure."""
    missing = ""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        missing = f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            import playwright.async_api  # noqa: F401
        except ImportError:
            missing = "the playwright package is not installed (pip install -e '.[dev]')"
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests need a browser in CI: {missing}")
        pytest.skip(missing)


@dataclass
class BrowserPanel:
    panel: PanelHarness
    page: Any  # playwright.async_api.Page
    base: str
    #: Console errors and failed requests the page had (a test asserts there are none).
    errors: list[str]

    def url(self, path: str) -> str:
        return self.base + path


@asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """`app` on a free 127.0.0.1 port in this event loop; its base URL."""
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = QuietServer(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
        if task.done():
            task.result()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def _script_error(message: Any) -> bool:
    """A console error other than Chromium's note on a refused request (the tests send bad input on purpose;
    `_broken` catches the answers that are really wrong)."""
    return bool(message.type == "error" and not message.text.startswith("Failed to load resource"))


def _broken(response: Any) -> bool:
    return bool(response.status >= 500 or (response.status == 404 and "/static/" in response.url))


@asynccontextmanager
async def browser_panel(tmp_path: Path, llm: ScriptedOpenAI, *, viewport: dict[str, int] | None = None,
                        locale: str = "en-US", login: bool = True,
                        **sections: dict[str, Any]) -> AsyncIterator[BrowserPanel]:
    need_browser()
    from playwright.async_api import async_playwright

    async with open_panel(tmp_path, llm, **sections) as panel, serve(panel.app) as base, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = await browser.new_context(viewport=viewport or DESKTOP, locale=locale)
            page = await context.new_page()
            page.set_default_timeout(15_000)
            errors: list[str] = []
            page.on("console", lambda m: errors.append(f"console: {m.text}") if _script_error(m) else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if _broken(r) else None)
            if login:
                await page.goto(f"{base}/login?token={panel.token}")
            yield BrowserPanel(panel, page, base, errors)
        finally:
            await browser.close()
