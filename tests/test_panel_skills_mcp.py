"""The panel's skills and MCP pages (issue 24) over the API: uploads meet every check `skill_install` meets
(zip-slip, links, size), MCP servers are added only when they answer, and each change is an operation-log
row with the actor `panel`."""

from __future__ import annotations

import json
import sys

import pytest

from tests.mcp_servers.harness import DEMO
from tests.panel_helpers import open_panel
from tests.skill_helpers import BRAND_VOICE, collection_zip, make_zip, with_symlink, zip_slip

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

SKILLS = {"max_download_mb": 1}


def rows(p, kind: str) -> list[dict]:
    return [{"actor": o["actor"], **o["detail"]} for o in p.ops(kind)]


async def upload(p, name: str, data: bytes):
    return await p.client.post("/api/skills", files={"file": (name, data, "application/octet-stream")})


async def test_upload_a_zip_and_a_skill_md_then_remove_and_reload(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, skills=SKILLS) as p:
        shipped = {s["name"] for s in (await p.client.get("/api/skills?size=200")).json()["items"]}
        r = await upload(p, "skills-main.zip", collection_zip())
        assert r.status_code == 201, r.text
        assert r.json()["message"].startswith('Installed 3 skills (brand-voice, pdf-forms, ') 
        assert 'from the upload "skills-main.zip"' in r.json()["message"]
        listing = {s["name"]: s for s in (await p.client.get("/api/skills?size=200")).json()["items"]}
        assert listing["pdf-forms"]["origin"] == "installed" and "reference.md" in listing["pdf-forms"]["files"]
        assert (tmp_path / "data" / "skills" / "pdf-forms" / "SKILL.md").is_file()

        r = await upload(p, "SKILL.md", BRAND_VOICE.replace("brand-voice", "club-voice").encode())
        assert r.status_code == 201 and "club-voice" in r.json()["skills"]
        r = await p.client.post("/api/skills", data={"source": BRAND_VOICE.replace("brand-voice", "as-text")})
        assert r.status_code == 201 and "as-text" in r.json()["skills"]

        r = await p.client.delete("/api/skills/pdf-forms")
        assert r.status_code == 200 and r.json()["message"] == 'Removed skill "pdf-forms".'
        assert not (tmp_path / "data" / "skills" / "pdf-forms").exists()
        assert (await p.client.delete("/api/skills/pdf-forms")).status_code == 400
        for name in sorted(shipped)[:1]:
            r = await p.client.delete(f"/api/skills/{name}")
            assert r.status_code == 400 and "shipped" in r.json()["error"]
        (tmp_path / "data" / "skills" / "club-voice" / "SKILL.md").unlink()
        r = await p.client.post("/api/skills/reload")
        assert r.status_code == 200 and "club-voice" not in r.json()["skills"]
        logged = rows(p, "skill_manage")
        assert all(o["actor"] == "panel" for o in logged)
        assert [(o["action"], o["ok"]) for o in logged][:4] == [("install", True)] * 3 + [("remove", True)]
        assert logged[0]["source"] == "upload skills-main.zip"


@pytest.mark.parametrize(("name", "make", "words"), [
    ("slip.zip", zip_slip, 'climbs out of its folder with ".."'),
    ("link.zip", with_symlink, "is a symbolic link"),
    ("big.zip", lambda: make_zip({"good/SKILL.md": BRAND_VOICE, "good/noise.bin": __import__("os").urandom(1 << 20)}),
     "larger than 1 MB (skills.max_download_mb)"),
    ("notes.txt", lambda: b"\xff\xfe\x00binary", "the upload is neither a zip archive nor a UTF-8 SKILL.md"),
    ("SKILL.md", lambda: b"# no frontmatter", ""),
])
async def test_hostile_uploads_are_refused_and_leave_nothing(tmp_path, scripted_llm, name, make, words):
    async with open_panel(tmp_path, scripted_llm, skills=SKILLS) as p:
        before = (await p.client.get("/api/skills?size=200")).json()
        r = await upload(p, name, make())
        assert r.status_code == 400, r.text
        assert words in r.json()["error"]
        assert (await p.client.get("/api/skills?size=200")).json() == before
        root = tmp_path / "data" / "skills"
        assert not root.exists() or list(root.iterdir()) == []
        assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "data" / "evil.txt").exists()
        assert [(o["actor"], o["action"], o["ok"]) for o in rows(p, "skill_manage")] == [("panel", "install", False)]


async def test_an_upload_without_a_file_or_far_too_large_is_refused(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm, skills=SKILLS) as p:
        r = await upload(p, "huge.zip", bytes(3 << 20))
        assert r.status_code == 413 and "larger than 1 MB" in r.json()["error"]
        r = await p.client.post("/api/skills", data={"other": "x"})
        assert r.status_code == 400 and "send a file" in r.json()["error"]
        assert p.ops() == []


def demo(*extra: str) -> dict:
    return {"command": sys.executable, "args": [DEMO, "stdio", *extra]}


async def test_mcp_add_list_reconnect_delete_and_the_op_log(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        assert (await p.client.get("/api/mcp")).json() == {"items": [], "total": 0, "page": 1, "size": 50}
        r = await p.client.post("/api/mcp", json={"name": "demo", **demo(), "env": {"DEMO_TOKEN": "s3cret"}})
        assert r.status_code == 201, r.text
        assert r.json()["message"].startswith('Added MCP server "demo" (stdio, ')
        items = (await p.client.get("/api/mcp")).json()["items"]
        assert [(s["name"], s["connected"], s["saved"], s["error"]) for s in items] == [("demo", True, True, "")]
        assert items[0]["tools"] > 0 and "(env: DEMO_TOKEN)" in items[0]["target"]
        assert "s3cret" not in json.dumps(items)
        saved = json.loads((tmp_path / "config" / "mcp.json").read_text())["mcpServers"]
        assert saved["demo"]["env"] == {"DEMO_TOKEN": "s3cret"}
        r = await p.client.post("/api/mcp/demo/reconnect")
        assert r.status_code == 200 and r.json()["message"].startswith('Reconnected MCP server "demo"')
        r = await p.client.delete("/api/mcp/demo")
        assert r.status_code == 200 and r.json()["message"] == 'Removed MCP server "demo".'
        assert json.loads((tmp_path / "config" / "mcp.json").read_text())["mcpServers"] == {}
        assert (await p.client.get("/api/mcp")).json()["total"] == 0
        logged = rows(p, "mcp_manage")
        assert [(o["actor"], o["action"], o["ok"]) for o in logged] == [
            ("panel", "add", True), ("panel", "reconnect", True), ("panel", "remove", True)]
        assert "s3cret" not in json.dumps(p.ops())


async def test_mcp_bad_entries_are_refused_and_nothing_is_saved(tmp_path, scripted_llm):
    async with open_panel(tmp_path, scripted_llm) as p:
        cases = [
            ({"name": "ghost", "command": str(tmp_path / "no-such-binary")}, 400, "ghost"),
            ({"name": "web", "url": "ftp://example.org/mcp"}, 400, "must start with http:// or https://"),
            ({"name": "x", "command": "uvx", "transport": "sse"}, 400, "needs the stdio transport"),
            ({"name": "bad__name", **demo()}, 400, ""),
            ({"name": "leak", **demo(), "env": {"KEY": "${OPENAI_API_KEY}"}}, 400, "${...} reference"),
            ({"name": "x", "command": "uvx", "shell": True}, 400, "shell"),
            ({"name": "nothing"}, 400, 'give "command" (stdio) or "url"'),
        ]
        for body, status, words in cases:
            r = await p.client.post("/api/mcp", json=body)
            assert r.status_code == status, (body, r.text)
            assert words in r.json()["error"], (body, r.json())
        assert (await p.client.get("/api/mcp")).json()["total"] == 0
        path = tmp_path / "config" / "mcp.json"
        assert not path.exists() or json.loads(path.read_text())["mcpServers"] == {}
        assert (await p.client.delete("/api/mcp/nobody")).status_code == 400
        assert (await p.client.post("/api/mcp/nobody/reconnect")).status_code == 400
        assert all(o["actor"] == "panel" and o["ok"] is False for o in rows(p, "mcp_manage"))
