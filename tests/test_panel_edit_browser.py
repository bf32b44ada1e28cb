"""The editing pages in a real Chromium (Debian's, driven by Playwright; issue 24): log in with the link,
walk the six pages, and run one full edit flow on each editable one: a team created and deleted, a skill
uploaded and removed, a hook edited and saved (a broken one refused), a scheduled task created, paused and
deleted, commands.json edited, an MCP server added and removed; a long list pages on the server. The panel
runs under uvicorn on 127.0.0.1 over a real engine (tests/browser_helpers.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ania.fakes.openai_server import Reply
from services.teams import make_team
from tests.browser_helpers import BROWSER_MODULE, browser_panel
from tests.mcp_servers.harness import DEMO
from tests.panel_helpers import PanelHarness
from tests.skill_helpers import BRAND_VOICE

pytestmark = [*BROWSER_MODULE, pytest.mark.asyncio]
PAGES = {"/clock": ("Scheduled tasks", "定时任务"), "/teams": ("Teams", "团队"), "/skills": ("Skills", "技能"),
         "/hooks": ("Hooks", "钩子"), "/mcp": ("MCP servers", "MCP 服务器"), "/commands": ("Commands and persona", "命令与人设")}


def expect(locator: Any) -> Any:
    """Playwright's waiting assertions (in Python: the page's CSP allows no eval, so no wait_for_function)."""
    from playwright.async_api import expect as playwright_expect

    return playwright_expect(locator)


@contextlib.asynccontextmanager
async def on_page(tmp_path: Path, llm: Any, path: str, **kw: Any) -> AsyncIterator[tuple[PanelHarness, Any, list[str]]]:
    """A logged-in page on `path` of a panel over a real engine (tests/browser_helpers.py); confirm dialogs are
    accepted."""
    async with browser_panel(tmp_path, llm, **kw) as b:
        b.page.on("dialog", lambda d: asyncio.ensure_future(d.accept()))
        await b.page.goto(b.url(path))
        yield b.panel, b.page, b.errors


async def fill(page: object, form: str, submit: str = "", **fields: str) -> None:
    """Fill the named fields of `form` and (with `submit`, a selector) press its button."""
    for name, value in fields.items():
        await page.fill(f"{form} [name={name}]", value)
    if submit:
        await page.click(submit)


async def test_walk_the_editing_pages_in_both_languages(tmp_path, scripted_llm):
    for locale, index in (("en-US", 0), ("zh-CN", 1)):
        (tmp_path / locale).mkdir()
        async with browser_panel(tmp_path / locale, scripted_llm, locale=locale) as b:
            for path, titles in PAGES.items():
                await b.page.goto(b.url(path))
                await b.page.wait_for_load_state("networkidle")
                assert (await b.page.locator("main h1").inner_text()).strip() == titles[index], path
                assert await b.page.locator(f'nav a[href="{path}"]').get_attribute("aria-current") == "page"
                assert await b.page.locator("#flash.bad").count() == 0, (path, await b.page.inner_text("#flash"))
            assert b.errors == []


async def test_create_a_team_and_delete_it(tmp_path, scripted_llm):
    async with on_page(tmp_path, scripted_llm, "/teams") as (p, page, errors):
        await fill(page, "#team-form", "#team-save", name="reviewers", purpose="Review a plan from two sides.",
                   members="critic: List the risks.\nfan: List the gains.")
        row = page.locator('tr[data-team="reviewers"]')
        await row.wait_for()
        assert "critic, fan" in await row.inner_text()
        assert [m.name for m in p.ctx.services.teams.find("g:1", "reviewers").members] == ["critic", "fan"]
        assert not await page.locator("#team-cancel").is_visible()
        await row.locator('[data-action="edit"]').click()
        assert await page.locator("#team-cancel").is_visible()
        await fill(page, "#team-form", "#team-save", purpose="Review a plan.")
        await expect(row).to_contain_text("Review a plan.")
        assert p.ctx.services.teams.find("g:1", "reviewers").purpose == "Review a plan."
        await fill(page, "#team-form", "#team-save", name="bad name!", purpose="x", members="a: b")
        await page.locator("#flash.bad").wait_for()
        assert 'invalid team name "bad name!"' in await page.inner_text("#flash")
        await row.locator('[data-action="delete"]').click()
        await row.wait_for(state="detached")
        assert p.ctx.services.teams.everywhere() == []
        assert [o["actor"] for o in p.ops("team_save") + p.ops("team_delete")] == ["panel"] * 3
        assert errors == []


async def test_upload_a_skill_and_remove_it(tmp_path, scripted_llm):
    async with on_page(tmp_path, scripted_llm, "/skills") as (p, page, errors):
        await page.set_input_files("#skill-upload [name=file]", files=[
            {"name": "SKILL.md", "mimeType": "text/markdown", "buffer": BRAND_VOICE.encode()}])
        await page.click("#skill-upload button[type=submit]")
        row = page.locator('tr[data-skill="brand-voice"]')
        await row.wait_for()
        assert 'Installed skill "brand-voice"' in await page.inner_text("#flash")
        assert (tmp_path / "data" / "skills" / "brand-voice" / "SKILL.md").is_file()
        await row.locator('[data-action="remove"]').click()
        await row.wait_for(state="detached")
        assert not (tmp_path / "data" / "skills" / "brand-voice").exists()
        assert [(o["actor"], o["detail"]["action"]) for o in p.ops("skill_manage")] == [
            ("panel", "install"), ("panel", "remove")]
        assert errors == []


async def test_edit_a_hook_try_it_and_save_it(tmp_path, scripted_llm):
    hooks = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo remember the rules"}]}]}}
    async with on_page(tmp_path, scripted_llm, "/hooks") as (p, page, errors):
        await expect(page.locator("#hooks-text")).to_have_value(re.compile("hooks"))
        await page.fill("#hooks-text", '{"hooks": {"PreToolUse": "oops"}}')
        await page.click("#hooks-save")
        await page.locator("#flash.bad").wait_for()
        assert "must be a list" in await page.inner_text("#flash")
        assert not (tmp_path / "config" / "hooks.json").exists()
        await page.fill("#hooks-text", json.dumps(hooks, indent=2))
        await page.select_option("#hooks-trial [name=event]", "UserPromptSubmit")
        await fill(page, "#hooks-trial", "#hooks-trial button[type=submit]", prompt="hello")
        await expect(page.locator("#hooks-result")).to_contain_text("remember the rules")
        assert "1" in await page.inner_text("#hooks-result")
        await page.click("#hooks-save")
        await expect(page.locator("#flash")).to_contain_text("Saved config/hooks.json")
        assert json.loads((tmp_path / "config" / "hooks.json").read_text()) == hooks
        assert [o["actor"] for o in p.ops("config_file_set")] == ["panel"]
        assert errors == []


async def test_create_a_scheduled_task_pause_it_and_delete_it(tmp_path, scripted_llm):
    async with on_page(tmp_path, scripted_llm, "/clock") as (p, page, errors):
        submit = "#clock-form button[type=submit]"
        await fill(page, "#clock-form", submit, session="g:42", schedule="every tuesday-ish",
                   prompt="Remind the club of practice.")
        await page.locator("#flash.bad").wait_for()
        assert p.ctx.services.clock.views() == []
        await fill(page, "#clock-form", submit, schedule="0 9 * * 2", name="practice")
        row = page.locator("tr[data-task]")
        await row.wait_for()
        assert "practice" in await row.inner_text()
        scripted_llm.script([Reply("Practice is tonight at 7!")])
        await row.locator('[data-action="run"]').click()
        # The run ends on its own; the page polls, and the run log shows it without a reload.
        await expect(page.locator("#clock-runs")).to_contain_text("Practice is tonight at 7!", timeout=20_000)
        await expect(page.locator("#clock-runs")).to_contain_text("success")
        await row.locator('[data-action="log"]').click()
        await expect(page.locator("#clock-log-of")).to_have_text("#1")
        await row.locator('[data-action="pause"]').click()
        await row.locator('[data-action="resume"]').wait_for()
        assert "paused" in await row.locator(".state").inner_text()
        assert p.ctx.services.clock.views()[0].task.enabled is False
        await row.locator('[data-action="delete"]').click()
        await page.locator("#clock-tasks td.empty").wait_for()
        assert p.ctx.services.clock.views() == []
        assert [o["kind"] for o in p.ops() if o["actor"] == "panel"] == [
            "clock_create", "clock_run", "clock_pause", "clock_delete"]
        assert errors == []


async def test_edit_commands_json(tmp_path, scripted_llm):
    commands = {"commands": {"tr": {"prompt": "Translate into English: $args", "description": "Translate a text"}}}
    async with on_page(tmp_path, scripted_llm, "/commands") as (p, page, errors):
        await expect(page.locator("#commands-text")).to_have_value(re.compile("commands"))
        await page.fill("#commands-text", json.dumps(commands, indent=2))
        await page.click("#commands-save")
        await page.locator("#command-list li", has_text="/tr: Translate a text").wait_for()
        assert json.loads((tmp_path / "config" / "commands.json").read_text()) == commands
        await page.fill("#commands-text", '{"commands": {"help": "x"}}')
        await page.click("#commands-save")
        await page.locator("#flash.bad").wait_for()
        assert "built-in" in await page.inner_text("#flash")
        assert json.loads((tmp_path / "config" / "commands.json").read_text()) == commands
        assert [o["actor"] for o in p.ops("config_file_set")] == ["panel"]
        assert errors == []


async def test_a_long_list_pages_on_the_server(tmp_path, scripted_llm):
    async with on_page(tmp_path, scripted_llm, "/") as (p, page, errors):
        for i in range(60):
            p.ctx.services.teams.save(make_team(f"t{i:02d}", "A team.", [("a", "Answer.")], f"g:{i % 2}", None, None, 60))
        await page.click('nav a[href="/teams"]')
        await expect(page.locator("#teams-pager span")).to_have_text("1 / 2")
        assert await page.locator("#team-rows tr").count() == 50
        await page.click('#teams-pager [aria-label="next page"]')
        await expect(page.locator("#teams-pager span")).to_have_text("2 / 2")
        assert await page.locator("#team-rows tr").count() == 10
        assert errors == []


async def test_add_an_mcp_server_reconnect_it_and_delete_it(tmp_path, scripted_llm):
    async with on_page(tmp_path, scripted_llm, "/mcp") as (p, page, errors):
        await fill(page, "#mcp-form", "#mcp-form button[type=submit]", name="ghost", command=str(tmp_path / "nothing"))
        await page.locator("#flash.bad").wait_for()
        assert p.ctx.services.mcp.servers == {}
        await fill(page, "#mcp-form", "#mcp-form button[type=submit]", name="demo", command=sys.executable,
                   args=f"{DEMO}\nstdio", env="DEMO_TOKEN=s3cret")
        row = page.locator('tr[data-server="demo"]')
        await expect(row).to_contain_text("connected")
        assert "s3cret" not in await page.content()
        await row.locator('[data-action="reconnect"]').click()
        await expect(page.locator("#flash")).to_contain_text('Reconnected MCP server "demo"')
        await row.locator('[data-action="delete"]').click()
        await row.wait_for(state="detached")
        assert json.loads((tmp_path / "config" / "mcp.json").read_text())["mcpServers"] == {}
        assert [(o["actor"], o["detail"]["action"], o["detail"]["ok"]) for o in p.ops("mcp_manage")] == [
            ("panel", "add", False), ("panel", "add", True), ("panel", "reconnect", True), ("panel", "remove", True)]
        assert errors == []
