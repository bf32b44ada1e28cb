"""The panel's editing API (issue 24): scheduled tasks, teams, hooks, commands and persona. Each route on a
real engine: the happy path, bad input refused with the service's own sentence (nothing changed), and the
operation-log row with the actor `panel`. Skills and MCP servers: tests/test_panel_skills_mcp.py."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from ania.fakes.openai_server import Reply
from services.hooks import EVENTS
from tests.panel_helpers import ORIGIN, open_panel

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

#: Every route of the six editing pages (method, path, JSON body or None).
ROUTES = [
    ("GET", "/clock", None), ("GET", "/api/clock", None), ("POST", "/api/clock", {}),
    ("POST", "/api/clock/1/pause", None), ("POST", "/api/clock/1/resume", None), ("POST", "/api/clock/1/run", None),
    ("DELETE", "/api/clock/1", None),
    ("GET", "/teams", None), ("GET", "/api/teams", None), ("POST", "/api/teams", {}), ("PUT", "/api/teams/x", {}),
    ("DELETE", "/api/teams/x", None),
    ("GET", "/skills", None), ("GET", "/api/skills", None), ("POST", "/api/skills", None),
    ("DELETE", "/api/skills/x", None), ("POST", "/api/skills/reload", None),
    ("GET", "/hooks", None), ("GET", "/api/hooks", None), ("PUT", "/api/hooks", {}), ("POST", "/api/hooks/try", {}),
    ("GET", "/mcp", None), ("GET", "/api/mcp", None), ("POST", "/api/mcp", {}), ("DELETE", "/api/mcp/x", None),
    ("POST", "/api/mcp/x/reconnect", None),
    ("GET", "/commands", None), ("GET", "/api/commands", None), ("PUT", "/api/commands", {}),
    ("GET", "/api/prompt", None), ("PUT", "/api/prompt", {}),
]
HOOKS = {"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [
    {"type": "command", "command": f"{sys.executable} -c \"import sys, json; d = json.load(sys.stdin); "
     "print('no rm please', file=sys.stderr) if 'rm' in d['tool_input']['command'] else None; "
     "sys.exit(2 if 'rm' in d['tool_input']['command'] else 0)\""}]}]}}


async def wait_for_runs(p, done, tries: int = 200) -> list[dict]:
    """The run log once `done(runs)` holds (a run started with "run now" ends on its own)."""
    for _ in range(tries):
        runs = (await p.client.get("/api/clock")).json()["runs"]
        if done(runs):
            return runs
        await asyncio.sleep(0.05)
    raise AssertionError(f"the run log never got there: {runs}")


def panel_ops(p, kind: str) -> list[dict]:
    return [{"actor": o["actor"], **o["detail"]} for o in p.ops(kind)]


async def test_every_route_refuses_without_credentials_and_a_browser_without_csrf(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        browser, csrf = await p.login()
        for method, path, body in ROUTES:
            r = await p.anon.request(method, path, json=body)
            assert r.status_code in (401, 303), (method, path, r.status_code)
            if path.startswith("/api/"):
                assert r.status_code == 401, (method, path)
            if method != "GET":
                r = await browser.request(method, path, json=body, headers={"Origin": ORIGIN})
                assert r.status_code == 403, (method, path, r.status_code)  # no CSRF token
                r = await browser.request(method, path, json=body, headers={"X-CSRF-Token": csrf,
                                                                           "Origin": "http://evil.example"})
                assert r.status_code == 403, (method, path, r.status_code)  # a foreign origin
        assert p.ops() == []
        for page in ("/clock", "/teams", "/skills", "/hooks", "/mcp", "/commands"):
            r = await browser.get(page)
            assert r.status_code == 200 and "<main" in r.text, page


async def test_clock_create_pause_resume_delete_and_the_op_log(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        r = await p.client.post("/api/clock", json={"session": "g:100", "schedule": "@every 2h", "prompt": "Say hi",
                                                    "name": "greeter"})
        assert r.status_code == 201, r.text
        task = r.json()
        assert (task["session"], task["name"], task["schedule"], task["enabled"], task["created_by"]) == (
            "g:100", "greeter", "@every 2h", True, "panel")
        assert task["next_fire"]
        tid = task["id"]
        r = await p.client.post(f"/api/clock/{tid}/pause")
        assert r.status_code == 200 and r.json()["enabled"] is False
        r = await p.client.post(f"/api/clock/{tid}/resume")
        assert r.status_code == 200 and r.json()["enabled"] is True
        listing = (await p.client.get("/api/clock")).json()
        assert (listing["total"], listing["page"], [t["id"] for t in listing["items"]]) == (1, 1, [tid])
        assert listing["runs"] == [] and listing["running"] is False
        assert (await p.client.get("/api/clock?session=g:999")).json()["items"] == []
        scripted_llm.script([Reply("Hi, everyone!")])
        r = await p.client.post(f"/api/clock/{tid}/run")
        assert r.status_code == 202, r.text
        run_id = r.json()["run"]
        runs = await wait_for_runs(p, lambda rs: any(x["id"] == run_id and x["status"] != "running" for x in rs))
        assert [(x["id"], x["status"], x["task_id"]) for x in runs] == [(run_id, "success", tid)]
        assert runs[0]["reply"] == "Hi, everyone!"
        assert [(o["actor"], o["run"]) for o in panel_ops(p, "clock_run")] == [("panel", run_id)]
        r = await p.client.delete(f"/api/clock/{tid}")
        assert r.status_code == 200 and r.json() == {"deleted": tid}
        assert (await p.client.get("/api/clock")).json()["total"] == 0
        assert [(o["actor"], o["task"]) for kind in ("clock_create", "clock_pause", "clock_resume", "clock_delete")
                for o in panel_ops(p, kind)] == [("panel", tid)] * 4
        assert panel_ops(p, "clock_create")[0]["session"] == "g:100"


async def test_clock_refuses_bad_input_and_changes_nothing(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        good = {"session": "g:100", "schedule": "@every 2h", "prompt": "Say hi"}
        cases = [
            ({**good, "schedule": "61 25 * * *"}, 400, "schedule"),
            ({**good, "schedule": "every now and then"}, 400, ""),
            ({**good, "session": "group 100"}, 400, "is not a chat"),
            ({**good, "session": "g: 100"}, 400, "is not a chat"),
            ({**good, "prompt": "   "}, 400, "the prompt is empty"),
            ({**good, "colour": "red"}, 400, "colour"),
            ({"schedule": "@every 2h", "prompt": "x"}, 400, "session"),
        ]
        for body, status, words in cases:
            r = await p.client.post("/api/clock", json=body)
            assert r.status_code == status, (body, r.text)
            assert words in r.json()["error"], (body, r.json())
        r = await p.client.post("/api/clock", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "JSON" in r.json()["error"]
        assert (await p.client.post("/api/clock/7/pause")).json()["error"].startswith("no task 7")
        assert (await p.client.post("/api/clock/7/explode")).status_code == 404
        assert (await p.client.delete("/api/clock/abc")).status_code == 400
        assert (await p.client.get("/api/clock")).json()["total"] == 0 and p.ops() == []


async def test_teams_create_edit_delete_and_the_op_log(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        team = {"name": "评审组", "purpose": "Review a plan from two sides.", "scope": "global", "timeout_sec": 99999,
                "members": [{"name": "critic", "role": "List the risks."}, {"name": "fan", "role": "List the gains."}]}
        r = await p.client.post("/api/teams", json=team)
        assert r.status_code == 201, r.text
        assert r.json()["timeout_sec"] == p.ctx.services.settings.subagent.max_timeout_sec  # clamped like team_save
        r = await p.client.post("/api/teams", json={**team, "scope": "g:5", "max_rounds": 500})
        assert r.status_code == 201 and r.json()["max_rounds"] == 50
        assert (await p.client.post("/api/teams", json=team)).status_code == 409
        listing = (await p.client.get("/api/teams")).json()
        assert [(t["name"], t["scope"]) for t in listing["items"]] == [("评审组", "global"), ("评审组", "g:5")]
        assert [t["scope"] for t in (await p.client.get("/api/teams?scope=g:5")).json()["items"]] == ["g:5"]
        second = (await p.client.get("/api/teams?size=1&page=2")).json()
        assert (second["total"], second["page"], second["size"], [t["scope"] for t in second["items"]]) == (
            2, 2, 1, ["g:5"])
        assert (await p.client.get("/api/teams?size=1000")).status_code == 400
        edited = {"purpose": "Review a plan.", "scope": "g:5", "members": [{"name": "critic", "role": "Be harsh."}]}
        r = await p.client.put("/api/teams/评审组", json=edited)
        assert r.status_code == 200 and [m["role"] for m in r.json()["members"]] == ["Be harsh."]
        assert p.ctx.services.teams.find("g:5", "评审组").purpose == "Review a plan."
        assert p.ctx.services.teams.find("g:6", "评审组").purpose == "Review a plan from two sides."  # global untouched
        assert (await p.client.put("/api/teams/nobody", json=edited)).status_code == 404
        r = await p.client.delete("/api/teams/评审组?scope=g:5")
        assert r.status_code == 200 and r.json() == {"deleted": "评审组", "scope": "g:5"}
        assert (await p.client.delete("/api/teams/评审组?scope=g:5")).status_code == 404
        assert (await p.client.get("/api/teams")).json()["total"] == 1
        assert [(o["actor"], o["scope"], o.get("replaced", False)) for o in panel_ops(p, "team_save")] == [
            ("panel", "global", False), ("panel", "g:5", False), ("panel", "g:5", True)]
        assert [(o["actor"], o["team"], o["scope"]) for o in panel_ops(p, "team_delete")] == [("panel", "评审组", "g:5")]


async def test_teams_refuse_bad_names_unknown_fields_and_bad_scopes(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        good = {"name": "crew", "purpose": "Help.", "members": [{"name": "a", "role": "Answer."}]}
        cases = [
            ({**good, "name": "bad name!"}, 'invalid team name "bad name!"'),
            ({**good, "members": [{"name": "a b", "role": "x"}]}, 'invalid member name "a b"'),
            ({**good, "members": [{"name": "a", "role": "x", "tools": ["rm_everything"]}]}, "tools"),
            ({**good, "tools": ["bash", "no_such_tool"]}, "tools: Extra inputs are not permitted"),
            ({**good, "members": []}, "at least one member"),
            ({**good, "members": [{"name": f"m{i}", "role": "x"} for i in range(11)]}, "at most 10 members"),
            ({**good, "scope": "everyone"}, '"everyone" is not a scope'),
            ({**good, "scope": "g:1 2"}, '"g:1 2" is not a scope'),
            ({**good, "purpose": "two\nlines"}, "one line"),
        ]
        for body, words in cases:
            r = await p.client.post("/api/teams", json=body)
            assert r.status_code == 400, (body, r.text)
            assert words in r.json()["error"], (body, r.json())
        assert (await p.client.delete("/api/teams/x%20y")).status_code == 400
        assert (await p.client.get("/api/teams")).json()["total"] == 0 and p.ops() == []


async def test_hooks_saved_only_when_valid_and_tried_through_the_runner(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        assert (await p.client.get("/api/hooks")).json() == {"content": "", "exists": False, "events": list(EVENTS)}
        text = json.dumps(HOOKS)
        r = await p.client.put("/api/hooks", json={"content": text})
        assert r.status_code == 200 and "takes effect within 5 s" in r.json()["message"]
        assert json.loads((await p.client.get("/api/hooks")).json()["content"]) == HOOKS
        for bad, words in [("{not json", "invalid JSON"), ('{"hooks": {"PreToolUse": {}}}', "must be a list"),
                           ('{"hooks": {"NoSuchEvent": []}}', "unknown hook event"),
                           ('{"hooks": {"PreToolUse": [{"hooks": [{"command": ""}]}]}}', "non-empty string")]:
            r = await p.client.put("/api/hooks", json={"content": bad})
            assert r.status_code == 400 and words in r.json()["error"], (bad, r.text)
        assert json.loads((tmp_path / "config" / "hooks.json").read_text()) == HOOKS  # the old file is kept
        rows = panel_ops(p, "config_file_set")
        assert [(o["actor"], o["file"]) for o in rows] == [("panel", "hooks.json")]

        trial = {"content": text, "event": "PreToolUse", "tool_name": "bash"}
        r = await p.client.post("/api/hooks/try", json={**trial, "tool_input": {"command": "rm -rf /"}})
        assert r.json() == {"matched": 1, "blocked": True, "ask": False, "reason": "no rm please", "context": []}
        r = await p.client.post("/api/hooks/try", json={**trial, "tool_input": {"command": "ls"}})
        assert (r.json()["matched"], r.json()["blocked"]) == (1, False)
        r = await p.client.post("/api/hooks/try", json={**trial, "tool_name": "web_fetch", "tool_input": {}})
        assert r.json()["matched"] == 0
        r = await p.client.post("/api/hooks/try", json={**trial, "content": "[]"})
        assert r.status_code == 400 and "top level must be a JSON object" in r.json()["error"]
        r = await p.client.post("/api/hooks/try", json={**trial, "event": "Whenever"})
        assert r.status_code == 400 and "event" in r.json()["error"]
        assert len(p.ops()) == 1  # a trial changes nothing


async def test_commands_and_prompt_saved_only_when_valid(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        first = (await p.client.get("/api/commands")).json()
        assert (first["content"], first["exists"], first["commands"]) == ("", False, [])
        commands = {"commands": {"tr": {"prompt": "Translate: $args", "description": "Translate a text"}}}
        r = await p.client.put("/api/commands", json={"content": json.dumps(commands)})
        assert r.status_code == 200, r.text
        shown = (await p.client.get("/api/commands")).json()
        assert json.loads(shown["content"]) == commands and shown["commands"] == ["/tr: Translate a text"]
        assert await p.ctx.services.commands.expand("/tr hallo") == "Translate: hallo"
        for bad, words in [('{"commands": {"help": "x"}}', "built-in"), ('{"commands": {"Bad Name": "x"}}', "invalid"),
                           ("nope", "")]:
            r = await p.client.put("/api/commands", json={"content": bad})
            assert r.status_code == 400 and words in r.json()["error"], (bad, r.text)
        assert (await p.client.put("/api/commands", json={"text": "x"})).status_code == 400
        assert json.loads((tmp_path / "config" / "commands.json").read_text()) == commands

        prompt = {"persona": "You are Ania, the Go club's helper.", "system_prompt": ["Answer briefly."]}
        r = await p.client.put("/api/prompt", json={"content": json.dumps(prompt, ensure_ascii=False)})
        assert r.status_code == 200 and "after an admin sends /reboot" in r.json()["message"]
        got = (await p.client.get("/api/prompt")).json()
        assert json.loads(got["content"]) == prompt and got["running_source"] == "bot.system_prompt"
        for bad in ('{"persona": ""}', '{"persona": "x", "mood": "happy"}', "[1]"):
            r = await p.client.put("/api/prompt", json={"content": bad})
            assert r.status_code == 400, bad
        assert [(o["actor"], o["file"]) for o in panel_ops(p, "config_file_set")] == [
            ("panel", "commands.json"), ("panel", "prompt.json")]
