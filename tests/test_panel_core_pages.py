"""The panel's overview, configuration, operation-log and approvals pages and their JSON APIs, on a real
engine: the happy path, bad input (nothing changes) and the operation-log rows the panel leaves."""

from __future__ import annotations

import asyncio
import tomllib

from ania.fakes.openai_server import Calls, Reply
from core.settings import registry
from tests.panel_helpers import open_panel
from tests.test_gates import wait_for

SECRET = "sekrit-jina-0123456789"


async def test_overview_shows_status_tokens_and_recent_failures(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, quota={"global_daily_tokens": 100_000}) as p:
        scripted_llm.script([Reply("hello")])
        task = await p.entry.submit("g:1", "u1", "hi")
        assert task is not None
        await task
        p.ctx.services.store.write("UPDATE query_log SET status = 'error' WHERE id = 1")
        data = (await p.client.get("/api/overview")).json()
        assert data["model"] == {"base_url": scripted_llm.base_url, "model": "scripted-model"}
        assert data["platform"] == {"connected": None} and data["clock"]["running"] is False
        assert data["tokens"]["total"] > 0 and data["tokens"]["global_quota"] == 100_000
        assert [e["session"] for e in data["recent_errors"]] == ["g:1"]
        assert "api_key" not in str(data) and "'k'" not in str(data)
        browser, _ = await p.login()
        page = (await browser.get("/")).text
        assert "scripted-model" in page and 'id="ov-tokens"' in page and "g:1" in page


async def test_config_lists_every_setting_with_descriptions_defaults_and_masked_secrets(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, web={"jina_api_key": SECRET}) as p:
        r = await p.client.get("/api/config")
        items = {i["key"]: i for i in r.json()["items"]}
        assert set(items) == {k.key for k in registry()}
        assert SECRET not in r.text
        jina = items["web.jina_api_key"]
        assert (jina["value"], jina["is_set"], jina["sensitive"]) == (None, True, True)
        assert items["meme.key"]["is_set"] is False
        quota = items["quota.global_daily_tokens"]
        assert (quota["value"], quota["default"], quota["kind"]) == (0, 0, "number")
        assert quota["description"].startswith("Tokens all sessions")
        assert items["panel.enable"]["kind"] == "choice" and items["panel.enable"]["choices"] == ["auto", "on", "off"]
        assert items["approval.enable"]["kind"] == "bool" and items["approval.tools"]["kind"] == "json"
        browser, _ = await p.login()
        page = (await browser.get("/config")).text
        assert SECRET not in page and "quota.global_daily_tokens" in page and "Tokens all sessions" in page


async def test_a_setting_changed_from_the_panel_is_validated_saved_logged_and_needs_a_reboot(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        toml = tmp_path / "config" / "ania.toml"
        toml.write_text("# my comment\n[quota]\ntimezone = \"UTC\"\n")
        r = await p.client.put("/api/config/quota.global_daily_tokens", json={"value": 5000})
        assert r.status_code == 200, r.text
        body = r.json()
        assert "takes effect after" in body["message"]
        assert body["item"]["needs_reboot"] is True and body["item"]["pending"] == 5000
        assert body["item"]["value"] == 0  # still running with the old value
        text = toml.read_text()
        assert text.startswith("# my comment") and tomllib.loads(text)["quota"]["global_daily_tokens"] == 5000
        ops = p.ops("config_set")
        assert [(o["actor"], o["session"], o["detail"]["key"], o["detail"]["new"], o["detail"]["approved_by"])
                for o in ops] == [("panel", "", "quota.global_daily_tokens", 5000, "panel")]
        listing = (await p.client.get("/api/config")).json()
        assert listing["needs_reboot"] is True
        r = await p.client.post("/api/reboot")
        assert r.status_code == 200 and "estart" in r.json()["message"], r.text
        assert p.ctx.services.settings.quota.global_daily_tokens == 5000  # the new engine's settings
        item = next(i for i in (await p.client.get("/api/config")).json()["items"]
                    if i["key"] == "quota.global_daily_tokens")
        assert (item["value"], item["needs_reboot"]) == (5000, False)
        assert [(o["actor"], o["session"]) for o in p.ops("reboot")] == [("panel", "")]


async def test_a_secret_set_from_the_panel_never_comes_back(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        r = await p.client.put("/api/config/web.jina_api_key", json={"value": SECRET})
        assert r.status_code == 200 and SECRET not in r.text
        assert r.json()["item"]["pending_set"] is True
        assert SECRET not in str(p.ops()) and SECRET in (tmp_path / "config" / "ania.toml").read_text()
        assert SECRET not in (await p.client.get("/api/config")).text


async def test_bad_config_input_is_refused_and_changes_nothing(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        toml = tmp_path / "config" / "ania.toml"
        cases = [
            ("quota.global_daily_tokens", {"value": "lots"}, 400, "invalid value for quota.global_daily_tokens"),
            ("quota.global_daily_tokens", {"value": -5}, 400, "greater than or equal to 0"),
            ("approval.enable", {"value": [1, 2]}, 400, "invalid value"),
            ("panel.enable", {"value": "sometimes"}, 400, "invalid value"),
            ("quota.no_such_key", {"value": 1}, 404, 'unknown setting "quota.no_such_key"'),
            ("quota.global_daily_tokens", {"val": 1}, 400, 'send {"value"'),
            ("quota.global_daily_tokens", [1], 400, "JSON object"),
        ]
        for key, body, status, error in cases:
            r = await p.client.put(f"/api/config/{key}", json=body)
            assert (r.status_code, error in r.json()["error"]) == (status, True), (key, body, r.text)
        r = await p.client.put("/api/config/quota.global_daily_tokens", content=b"{not json")
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
        assert not toml.exists() and p.ops() == []


async def test_the_ops_page_pages_and_filters_on_the_server(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        store = p.ctx.services.store
        for n in range(7):
            store.log_op("skill_manage", "g:1", "u1", {"n": n})
        store.log_op("config_set", "", "panel", {"key": "x"})
        r = await p.client.get("/api/ops?size=3&page=2")
        data = r.json()
        assert (data["total"], data["page"], data["size"]) == (8, 2, 3)
        assert [i["detail"].get("n") for i in data["items"]] == [4, 3, 2]  # newest first
        data = (await p.client.get("/api/ops?actor=panel")).json()
        assert data["total"] == 1 and data["items"][0]["kind"] == "config_set"
        data = (await p.client.get("/api/ops?kind=skill_manage&session=g:1&size=200")).json()
        assert data["total"] == 7
        assert (await p.client.get("/api/ops?since=2999-01-01")).json()["total"] == 0
        assert (await p.client.get("/api/ops?until=2999-01-01")).json()["total"] == 8
        for bad, error in (("size=0", "size must be between"), ("page=x", "page must be a whole number"),
                           ("since=yesterday", "since must be Unix seconds")):
            r = await p.client.get(f"/api/ops?{bad}")
            assert r.status_code == 400 and error in r.json()["error"], bad
        browser, _ = await p.login()
        page = (await browser.get("/ops?kind=config_set")).text
        assert "config_set" in page and "Page 1 of 1 (1 in all)" in page


async def test_an_approval_answered_from_the_panel_counts_as_the_panels(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, approval={"tools": ["time"]}) as p:
        scripted_llm.script([Calls([("time", {})]), Reply("done")])
        task = await p.entry.submit("g:club", "u1", "time?")
        approvals = p.ctx.services.approvals
        await wait_for(lambda: approvals.is_waiting("g:club"))
        items = (await p.client.get("/api/approvals")).json()["items"]
        assert [(i["tool"], i["session"], i["requester"], i["kind"]) for i in items] == [("time", "g:club", "u1", "human")]
        rid = items[0]["id"]
        r = await p.client.post(f"/api/approvals/{rid}", json={"decision": "maybe"})
        assert r.status_code == 400 and approvals.is_waiting("g:club")
        r = await p.client.post(f"/api/approvals/{rid}", json={"decision": "allow"})
        assert r.json() == {"id": rid, "decision": "allow", "by": "panel"}
        await asyncio.wait_for(task, 10)
        assert [(o["actor"], o["detail"]["decision"]) for o in p.ops("tool_approval")] == [("panel", "allow")]
        assert any(f'Allowed from the web panel: "time" ({rid})' in t for t in p.out["g:club"])
        assert p.out["g:club"][-1] == "done"
        r = await p.client.post(f"/api/approvals/{rid}", json={"decision": "deny"})
        assert r.status_code == 404  # answered already
        assert (await p.client.get("/api/approvals")).json() == {"items": [], "total": 0}


async def test_a_denial_from_the_panel_stops_the_call(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, approval={"tools": ["time"]}) as p:
        scripted_llm.script([Calls([("time", {})]), Reply("ok, not then")])
        task = await p.entry.submit("f:u1", "u1", "time?")
        approvals = p.ctx.services.approvals
        await wait_for(lambda: bool(approvals.open_questions()))
        rid = approvals.open_questions()[0].id
        browser, csrf = await p.login()
        page = (await browser.get("/approvals")).text
        assert rid in page and "time" in page
        r = await browser.post(f"/api/approvals/{rid}", json={"decision": "拒绝"},
                               headers={"X-CSRF-Token": csrf, "Origin": "http://127.0.0.1:6190"})
        assert r.json()["decision"] == "deny"
        await asyncio.wait_for(task, 10)
        assert [(o["actor"], o["detail"]["decision"]) for o in p.ops("tool_approval")] == [("panel", "deny")]


async def test_labels_follow_the_browser_language_and_the_lang_cookie(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        browser, _ = await p.login()
        zh = (await browser.get("/config", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})).text
        assert "<title>配置 · Ania</title>" in zh and "操作日志" in zh and 'lang="zh-CN"' in zh
        en = (await browser.get("/config", headers={"Accept-Language": "fr, en;q=0.5"})).text
        assert "<title>Configuration · Ania</title>" in en and "Operation log" in en
        r = await browser.get("/lang?set=zh&next=/ops")
        assert (r.status_code, r.headers["location"]) == (303, "/ops")
        assert "操作日志" in (await browser.get("/ops", headers={"Accept-Language": "en"})).text
        r = await browser.get("/lang?set=en&next=//evil.example")
        assert r.headers["location"] == "/"


async def test_a_reboot_where_none_is_possible_is_refused_and_a_broken_file_changes_nothing(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        (tmp_path / "config" / "ania.toml").write_text("[quota]\nglobal_daily_tokens = -1\n")
        r = await p.client.post("/api/reboot")
        assert r.status_code == 409 and r.json()["error"].startswith("Not restarted:"), r.text
        assert p.ctx.services.settings.quota.global_daily_tokens == 0  # the running engine goes on
        p.ctx.reboot = None
        r = await p.client.post("/api/reboot")
        assert r.status_code == 409 and "not possible" in r.json()["error"]
