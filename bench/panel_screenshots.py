"""Screenshots of every page of the web panel with seeded data, into docs/panel/<page>.png (the README shows
them): `python -m bench.panel_screenshots [--out docs/panel]`. Needs Debian's chromium and the playwright
package (the dev extras), like the browser tests (tests/browser_helpers.py).

The data: a few chats' turns through the real engine and the scripted model (query log, today's tokens), one
failed turn, operation-log rows of several kinds, a question waiting for approval. A page of another concern
seeds its own data in `seed_more` (one function per page module, by name)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ania.fakes.openai_server import Calls, Reply, ScriptedOpenAI
from ania.panel.app import available_pages
from ania.panel.nav import NAV
from bench.panel_seed_edit import EDIT_SEEDS
from services.usage import Quota
from tests.browser_helpers import CHROMIUM, CHROMIUM_ARGS, DESKTOP, PHONE, serve
from tests.panel_helpers import PanelHarness, open_panel
from tests.test_gates import wait_for

ROOT = Path(__file__).resolve().parent.parent
CHATS = [("g:10001", "u1", "what can you do?", "I answer questions, run tools and keep notes for this group."),
         ("f:42", "42", "summarise yesterday's meeting", "Three decisions: ship on Friday, ..."),
         ("g:20002", "u7", "translate 你好 into English", "Hello.")]
#: A long page (every setting) is cut here: the README shows its top.
MAX_HEIGHT = 1400
#: Per page module: what its screenshot needs besides the common data (the other pages add theirs here).
seed_more: dict[str, Callable[[PanelHarness], Awaitable[None]]] = {**EDIT_SEEDS}


async def _knowledge(p: PanelHarness) -> None:
    knowledge = p.ctx.services.knowledge
    await knowledge.add_document("global", "House rules", "Be kind. No spam. 请友善发言，不要刷屏。")
    await knowledge.add_document("global", "Opening hours", "The club opens at 18:00 on Fridays and 10:00 on Sundays.")
    await knowledge.add_document("g:10001", "Group notes", "Meeting minutes of the group, kept by the bot.")


async def _memory(p: PanelHarness) -> None:
    for text in ("u1 prefers answers in Chinese", "The group meets on Fridays", "u7 is learning English"):
        await p.ctx.services.knowledge.save_memory("g:10001", text)


async def _usage(p: PanelHarness) -> None:
    """The 29 days before today, as the quota's day counters would hold them, so the chart has a month."""
    services = p.ctx.services
    now = time.time()
    for day in range(29, 0, -1):
        quota = Quota(services.quota.settings, services.store, lambda _user: False,
                      now=functools.partial(float, now - day * 86400))
        for n, chat in enumerate(("g:10001", "g:20002", "f:42")):
            quota.add(chat, 2000 + ((day * 7919 + n * 104729) % 9000))


seed_more.update(knowledge=_knowledge, memory=_memory, usage=_usage)


async def seed(p: PanelHarness, llm: ScriptedOpenAI) -> asyncio.Task[object]:
    """The common data; returns the turn left waiting for an approval (denied at the end)."""
    for session, user, text, reply in CHATS:
        llm.script([Reply(reply)])
        task = await p.entry.submit(session, user, text)
        if task is not None:
            await task
    llm.script([Reply("")])
    task = await p.entry.submit("g:10001", "u3", "this one fails")
    if task is not None:
        await task
    store = p.ctx.services.store
    newest = store.query("SELECT MAX(id) AS id FROM query_log")[0]["id"]
    store.write("UPDATE query_log SET status = 'error' WHERE id = ?", [newest])
    store.log_op("skill_manage", "f:admin", "admin", {"action": "install", "name": "weather"})
    store.log_op("mcp_manage", "f:admin", "admin", {"action": "add", "server": "time"})
    store.log_op("config_set", "", "panel", {"key": "quota.global_daily_tokens", "old": 0, "new": 200000,
                                             "approved_by": "panel"})
    store.log_op("reboot", "", "panel", {"stopped_turns": 0})
    llm.script([Calls([("time", {"timezone": "Asia/Shanghai"})]), Reply("It is 09:30 in Shanghai.")])
    waiting = await p.entry.submit("g:10001", "u1", "what time is it in Shanghai?")
    assert waiting is not None
    await wait_for(lambda: bool(p.ctx.services.approvals.open_questions()))
    for name, more in seed_more.items():
        if name in available_pages():
            await more(p)
    return waiting


async def shoot(out: Path) -> list[Path]:
    from playwright.async_api import async_playwright

    out.mkdir(parents=True, exist_ok=True)
    llm = ScriptedOpenAI().start()
    shots: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ania-panel-shots-") as tmp:
            async with open_panel(Path(tmp), llm, quota={"global_daily_tokens": 200_000,
                                                         "session_daily_tokens": 50_000},
                                  approval={"tools": ["time"]}) as p:
                waiting = await seed(p, llm)
                async with serve(p.app) as base, async_playwright() as pw:
                    browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                    for viewport, suffix, pages in ((DESKTOP, "", available_pages()), (PHONE, "-phone", ["overview"])):
                        context = await browser.new_context(viewport=viewport, locale="en-US")
                        page = await context.new_page()
                        await page.goto(f"{base}/login?token={p.token}")
                        for item in (i for i in NAV if i.concern in pages):
                            await page.goto(base + item.path)
                            await page.wait_for_load_state("networkidle")
                            path = out / f"{item.concern}{suffix}.png"
                            height = await page.evaluate("document.documentElement.scrollHeight")
                            clip = {"x": 0, "y": 0, "width": viewport["width"], "height": min(height, MAX_HEIGHT)}
                            await page.screenshot(path=str(path), full_page=True, clip=clip)
                            shots.append(path)
                        await context.close()
                    await browser.close()
                p.ctx.services.approvals.answer_as_operator(p.ctx.services.approvals.open_questions()[0].id,
                                                            "deny", "panel")
                await waiting
    finally:
        llm.stop()
    return shots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.panel_screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "panel", help="where the PNGs go")
    args = parser.parse_args(argv)
    for path in asyncio.run(shoot(args.out)):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
