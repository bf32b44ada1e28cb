"""The data pages in a real Chromium (Debian's, driven by Playwright): log in with the link, walk the query log,
usage, sessions (into a compacted session's whole transcript), knowledge and memory, and run the knowledge
page's edit flow: add a global document, find it by search, delete it."""

from __future__ import annotations

import asyncio
import json

from tests.browser_helpers import BROWSER_MODULE, browser_panel
from tests.panel_data_helpers import COMPACTING, compacted, say

pytestmark = BROWSER_MODULE


async def test_walk_the_data_pages_and_manage_a_global_document(tmp_path, scripted_llm):
    async with browser_panel(tmp_path, scripted_llm, **COMPACTING) as b:
        from playwright.async_api import expect

        p, page, base = b.panel, b.page, b.base
        page.on("dialog", lambda d: asyncio.ensure_future(d.accept()))
        await compacted(p, scripted_llm, "f:u1", turns=3)
        await say(p, scripted_llm, "g:club", "alice", "hello club")
        await p.ctx.services.knowledge.save_memory("g:club", "Alice likes green tea")
        passage = {"source": "kb", "id": "d-1", "title": "Club rules", "scope": "global", "score": 0.9, "runes": 7}
        p.ctx.services.store.write("UPDATE query_log SET recalled = ? WHERE session = 'g:club'", [json.dumps([passage])])
        await page.goto(f"{base}/queries")
        await expect(page.locator("#rows tr[data-id]")).to_have_count(4)
        await page.fill('#filters input[name="session"]', "g:club")
        await page.click('#filters button[type="submit"]')
        await expect(page.locator("#rows tr[data-id]")).to_have_count(1)
        await page.click("#rows tr[data-id] a")
        await page.wait_for_selector("#detail:not([hidden]) h2")
        detail = await page.inner_text("#detail")
        assert "hello club" in detail and "Club rules" in detail and "Injected passages" in detail

        await page.goto(f"{base}/usage")
        assert await page.locator("#usage-chart rect.day").count() == 30
        assert "g:club" in await page.inner_text("#usage-today")

        await page.goto(f"{base}/sessions")
        await page.wait_for_selector("#rows a")
        await page.click("text=f:u1")
        await page.wait_for_selector("#transcript .compaction")
        text = await page.inner_text("#transcript")
        assert "question 0" in text and "question 2" in text and "Compacted here" in text

        await page.goto(f"{base}/memory?session=g:club")
        await page.wait_for_selector("#rows tr[data-id]")
        assert "green tea" in await page.inner_text("#rows")

        await page.goto(f"{base}/knowledge")
        await page.wait_for_selector("#rows .empty")
        await page.fill('#add input[name="title"]', "Harbour rules")
        await page.fill('#add textarea[name="content"]', "Boats dock at the east pier after sunset.")
        await page.click('#add button[type="submit"]')
        await page.wait_for_selector("#rows tr[data-id]")
        assert "Harbour rules" in await page.inner_text("#rows")
        await page.fill('#search input[name="q"]', "east pier")
        await page.click('#search button[type="submit"]')
        await page.wait_for_selector("#hits .hit")
        assert "Harbour rules" in await page.inner_text("#hits")
        await page.click("#rows tr[data-id] button.danger")
        await page.wait_for_selector("#rows .empty")
        assert sorted(op["kind"] for op in p.ops() if op["actor"] == "panel") == ["kb_add", "kb_delete"]
        assert (await p.client.get("/api/knowledge")).json()["total"] == 0
        assert b.errors == []
