"""The panel in a real Chromium: log in with the link, walk every page there is, change a setting and see the
reboot hint, answer an approval, and the phone layout. The pattern for every page's browser test."""

from __future__ import annotations

import asyncio

from playwright.async_api import expect

from ania.fakes.openai_server import Calls, Reply
from ania.panel.app import available_pages
from ania.panel.nav import NAV
from tests.browser_helpers import BROWSER_MODULE, PHONE, browser_panel
from tests.test_gates import wait_for

pytestmark = BROWSER_MODULE


async def test_login_link_then_every_page_from_the_sidebar(tmp_path, scripted_llm):
    async with browser_panel(tmp_path, scripted_llm) as b:
        page = b.page
        assert page.url == b.url("/")  # the token is gone from the address bar
        assert await page.locator("h1").inner_text() == "Overview"
        cookies = await page.context.cookies()
        session = next(c for c in cookies if c["name"] == "ania_panel")
        assert session["httpOnly"] and session["sameSite"] == "Strict"
        pages = [item for item in NAV if item.concern in available_pages()]
        links = page.locator("nav.sidebar a")
        assert await links.count() == len(pages)
        for item in pages:
            await page.locator(f'nav.sidebar a[href="{item.path}"]').click()
            await page.wait_for_url(b.url(item.path))
            assert await page.locator("nav.sidebar a.active").get_attribute("href") == item.path
            assert await page.locator("h1").inner_text() != ""
        assert b.errors == []


async def test_without_the_link_the_browser_lands_on_the_login_page(tmp_path, scripted_llm):
    async with browser_panel(tmp_path, scripted_llm, login=False) as b:
        await b.page.goto(b.url("/config"))
        assert b.page.url == b.url("/login")
        await b.page.goto(b.url("/login?token=wrong"))
        assert "not valid" in await b.page.locator("#login-error").inner_text()


async def test_change_a_setting_and_see_the_reboot_hint_then_reboot(tmp_path, scripted_llm):
    async with browser_panel(tmp_path, scripted_llm) as b:
        page = b.page
        await page.goto(b.url("/config"))
        assert await page.locator("#reboot-bar").is_hidden()
        row = page.locator('tr[data-key="quota.global_daily_tokens"]')
        await row.locator(".cfg-input").fill("2500")
        await row.locator(".cfg-save").click()
        await expect(page.locator("#flash")).to_contain_text("takes effect after")
        assert await row.locator(".cfg-pending").inner_text() == "After the reboot: 2500"
        assert await page.locator("#reboot-bar").is_visible()
        bad = page.locator('tr[data-key="quota.session_daily_tokens"]')
        await bad.locator(".cfg-input").fill("-3")
        await bad.locator(".cfg-save").click()
        await expect(page.locator("#flash")).to_have_class("flash bad")
        await expect(page.locator("#flash")).to_contain_text("greater than or equal to 0")
        ops = b.panel.ops("config_set")
        assert [(o["actor"], o["detail"]["key"]) for o in ops] == [("panel", "quota.global_daily_tokens")]
        await page.locator("#reboot").click()
        await expect(page.locator("#flash")).to_contain_text("estart")
        await page.wait_for_event("load")  # the page reloads itself after a reboot
        await expect(page.locator("#reboot-bar")).to_be_hidden()  # nothing pending any more
        assert b.panel.ctx.services.settings.quota.global_daily_tokens == 2500
        assert [o["actor"] for o in b.panel.ops("reboot")] == ["panel"]
        assert b.errors == []


async def test_answer_an_approval_in_the_browser(tmp_path, scripted_llm):
    async with browser_panel(tmp_path, scripted_llm, approval={"tools": ["time"]}) as b:
        scripted_llm.script([Calls([("time", {})]), Reply("done")])
        task = await b.panel.entry.submit("g:club", "u1", "time?")
        await wait_for(lambda: b.panel.ctx.services.approvals.is_waiting("g:club"))
        await b.page.goto(b.url("/approvals"))
        card = b.page.locator("section[data-id]")
        assert "time" in await card.inner_text()
        await card.locator('button[data-decision="allow"]').click()
        await card.wait_for(state="detached")
        await asyncio.wait_for(task, 10)
        assert [(o["actor"], o["detail"]["decision"]) for o in b.panel.ops("tool_approval")] == [("panel", "allow")]
        assert b.errors == []


async def test_phone_layout_and_chinese_labels(tmp_path, scripted_llm):
    async with browser_panel(tmp_path, scripted_llm, viewport=PHONE, locale="zh-CN") as b:
        page = b.page
        assert await page.locator("h1").inner_text() == "概览"
        await page.goto(b.url("/ops"))
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"]  # nothing wider than the screen: the sidebar scrolls on its own
        sidebar = await page.locator("nav.sidebar").bounding_box()
        main = await page.locator("main").bounding_box()
        assert sidebar is not None and main is not None and sidebar["y"] < main["y"]  # above, not beside
        await page.locator("a.lang").click()
        await page.wait_for_url(b.url("/ops"))
        assert await page.locator("h1").inner_text() == "Operation log"
        assert b.errors == []
