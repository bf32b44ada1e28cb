"""AI skill management (S4) through the real loop, against a local HTTP server serving the archives.

Every install and removal needs an admin other than the requester; every hostile archive or download is
refused with a clear result, writes nothing outside (or inside) the skills folder and is logged.
"""

from __future__ import annotations

import json
import os

import pytest

from ania.fakes.openai_server import Calls, Reply
from services.net.guard import PrivateAddress, Unresolved, public_target
from services.skills.fetch import CODELOAD, Source, classify, github_source
from services.skills.parse import SkillError
from tests.approval_helpers import ADMINS, run_approved, turn_results
from tests.conftest import make_settings
from tests.skill_helpers import (
    BRAND_VOICE,
    PDF_FORMS,
    FileServer,
    absolute_path,
    bomb,
    collection_files,
    collection_zip,
    lying_sizes,
    make_zip,
    many_files,
    with_symlink,
    zip_slip,
)
from tests.test_gates import wait_for

SHIPPED = ["bot-configuration", "chat-replies", "task-planning"]
#: The archives are served on 127.0.0.1, hence allow_private_hosts (test_private_addresses_are_refused...).
LIMITS = {"max_download_mb": 2, "download_timeout_sec": 1, "max_files": 1000, "max_unpacked_mb": 50,
          "allow_private_hosts": True}


@pytest.fixture(scope="module")
def files():
    server = FileServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bomb_zip() -> bytes:
    return bomb()


def settings_for(llm, **extra):
    return make_settings(llm, **{"skill_tool": {"enable": True}, "skills": LIMITS, **ADMINS, **extra})


def installed_dir(tmp_path):
    return tmp_path / "data" / "skills"


def entries(tmp_path) -> list[str]:
    root = installed_dir(tmp_path)
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def ops(chat) -> list[dict]:
    return [{"actor": o["actor"], **o["detail"]} for o in chat.engine.services.store.ops("skill_manage")]


async def test_install_from_a_zip_url_then_list_and_read_it(scripted_llm, make_chat, files, tmp_path):
    url = files.serve("/anthropic-skills.zip", collection_zip())
    chat = await make_chat(settings_for(scripted_llm))
    scripted_llm.script([Reply("hi")])
    await chat.say("f:admin", "admin", "hello")
    before = scripted_llm.requests[-1].messages[0]["content"]
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url})])
    assert out == [f"Installed 3 skills (brand-voice, pdf-forms, template-skill) from {url}. "
                   "Read it with skill_read(name)."]
    assert entries(tmp_path) == ["brand-voice", "pdf-forms", "template-skill"]  # no temp folder left
    pdf = installed_dir(tmp_path) / "pdf-forms"
    assert sorted(p.relative_to(pdf).as_posix() for p in pdf.rglob("*") if p.is_file()) == [
        "LICENSE.txt", "SKILL.md", "reference.md", "scripts/list_fields.py"]
    assert oct((pdf / "scripts" / "list_fields.py").stat().st_mode & 0o777) == "0o600"  # private, no exec bit
    assert ops(chat) == [{"actor": "admin", "action": "install", "source": url, "ok": True,
                          "skills": ["brand-voice", "pdf-forms", "template-skill"], "approved_by": "admin2"}]
    # Listed in the next request's system prompt, then byte-stable; the model reads it.
    calls = [("skill_list", {}), ("skill_read", {"name": "pdf-forms", "file": "scripts/list_fields.py"})]
    scripted_llm.script([Calls(calls), Reply("ok"), Reply("again")])
    await chat.say("f:admin", "admin", "what skills do you have?")
    listing, script = turn_results(scripted_llm)
    assert listing.splitlines()[:3] == [
        "Skills (6):", "- bot-configuration (shipped): " + listing.splitlines()[1].split(": ", 1)[1],
        "- brand-voice (installed): Write in the club's voice - warm, short, no jargon. Use for announcements "
        "and welcome messages."]
    assert script == collection_files()["skills/pdf-forms/scripts/list_fields.py"]
    after = scripted_llm.requests[-1].messages[0]["content"]
    assert after != before and "- pdf-forms: Fill in PDF forms" in after and "- pdf-forms" not in before
    await chat.say("f:admin", "admin", "once more")
    assert scripted_llm.requests[-1].messages[0]["content"] == after


def test_github_urls_become_codeload_zips():
    assert github_source("https://github.com/anthropics/skills") == Source(
        url=f"{CODELOAD}/anthropics/skills/zip/HEAD")
    assert github_source("https://github.com/anthropics/skills.git/") == Source(
        url=f"{CODELOAD}/anthropics/skills/zip/HEAD")
    assert github_source("https://github.com/anthropics/skills/tree/main/skills/pdf") == Source(
        url=f"{CODELOAD}/anthropics/skills/zip/main", subdir="skills/pdf")
    assert github_source("https://github.com/o/r/blob/v2/skills/x/SKILL.md") == Source(
        url=f"{CODELOAD}/o/r/zip/v2", subdir="skills/x")
    assert github_source("https://github.com/o/r/releases/download/v1/skill.zip") is None
    assert classify("https://github.com/o/r/releases/download/v1/skill.zip").url.endswith("/skill.zip")
    assert classify("---\nname: x\n").text.startswith("---")
    for bad in ("ftp://example.org/skill.zip", "file:///etc/passwd", "skills/pdf", "javascript:alert(1)", "http://[bad",
                "http://"):
        with pytest.raises(SkillError, match="give a zip URL"):
            classify(bad)


async def test_github_repository_folder_installs_that_skill_only(scripted_llm, make_chat, files, tmp_path):
    files.serve("/anthropics/skills/zip/main", collection_zip())
    chat = await make_chat(settings_for(scripted_llm))
    chat.engine.services.skill_installer.codeload = files.url("")
    source = "https://github.com/anthropics/skills/tree/main/skills/pdf-forms"
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": source})])
    assert out == [f'Installed skill "pdf-forms" from {files.url("/anthropics/skills/zip/main")} '
                   "(folder skills/pdf-forms). Read it with skill_read(name)."]
    assert entries(tmp_path) == ["pdf-forms"]
    missing = "https://github.com/anthropics/skills/tree/main/skills/nothing-here"
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": missing})])
    assert out == ['Error: the archive has no folder "skills/nothing-here"']


async def test_install_from_a_skill_md_url_and_from_text_and_replace(scripted_llm, make_chat, files, tmp_path):
    url = files.serve("/raw/pdf-forms/SKILL.md", PDF_FORMS, content_type="text/markdown")
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url}),
                                                  ("skill_install", {"source": BRAND_VOICE})])
    assert out == [f'Installed skill "pdf-forms" from {url}. Read it with skill_read(name).',
                   'Installed skill "brand-voice" from SKILL.md text. Read it with skill_read(name).']
    assert (installed_dir(tmp_path) / "brand-voice" / "SKILL.md").read_text() == BRAND_VOICE.strip()
    newer = PDF_FORMS.replace("Fill in PDF forms", "Fill and check PDF forms")
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": newer})])
    assert out[0].endswith('\n"pdf-forms" replaced the skill of the same name.')
    assert "Fill and check PDF forms" in chat.engine.services.skills.prompt_block()
    assert entries(tmp_path) == ["brand-voice", "pdf-forms"]


HOSTILE = {
    "zip-slip": (zip_slip, 'archive entry "../evil.txt" climbs out of its folder with ".."'),
    "absolute": (absolute_path, 'archive entry "/tmp/ania-absolute-evil.txt" has an absolute path'),
    "symlink": (with_symlink, 'archive entry "good/passwd" is a symbolic link'),
    "10000 files": (many_files, "the archive has 10000 entries; at most 1000 are allowed (skills.max_files)"),
    "lying sizes": (lying_sizes, 'archive entry "good/big.bin" cannot be unpacked (Bad CRC-32'),
    "no frontmatter": (lambda: make_zip({"s/SKILL.md": "# Title\n", "s/x.md": "x"}),
                       "nothing was installed: s/SKILL.md: SKILL.md has no YAML frontmatter"),
    "no name": (lambda: make_zip({"s/SKILL.md": "---\ndescription: d\n---\nbody"}),
                "nothing was installed: s/SKILL.md: the frontmatter of SKILL.md has no name"),
    "no SKILL.md": (lambda: make_zip({"readme.md": "hi"}), "nothing was installed: no SKILL.md was found"),
    "two of a name": (lambda: make_zip({"a/SKILL.md": BRAND_VOICE, "b/SKILL.md": BRAND_VOICE}),
                      "more than one skill is named brand-voice"),
    "not a zip": (lambda: b"\xff\xfe\x00binary", "neither a zip archive nor a UTF-8 SKILL.md"),
    "broken zip": (lambda: b"PK\x03\x04 truncated", "not a readable zip archive"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_hostile_archives_are_refused_and_leave_nothing(case, scripted_llm, make_chat, files, tmp_path):
    build, why = HOSTILE[case]
    url = files.serve(f"/hostile/{case.replace(' ', '-')}.zip", build())
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url})])
    assert len(out) == 1 and out[0].startswith("Error: ") and why in out[0], out
    assert entries(tmp_path) == []  # the temp folder is gone too
    assert not (tmp_path / "data" / "evil.txt").exists() and not os.path.exists("/tmp/ania-absolute-evil.txt")
    assert sorted(chat.engine.services.skills.current.skills) == SHIPPED
    [op] = ops(chat)
    assert op["ok"] is False and why in op["error"] and op["actor"] == "admin" and op["approved_by"] == "admin2"


async def test_a_1_gb_member_is_refused_before_unpacking(scripted_llm, make_chat, files, tmp_path, bomb_zip):
    url = files.serve("/hostile/bomb.zip", bomb_zip)
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url})])
    assert out == ["Error: the archive unpacks to more than 50 MB (skills.max_unpacked_mb)"]
    assert entries(tmp_path) == []


DOWNLOADS = {
    "too big": ({"body": bytes(3 << 20)}, "the download is larger than 2 MB (skills.max_download_mb)"),
    "too big, no length": ({"body": bytes(3 << 20), "no_length": True},
                           "the download is larger than 2 MB (skills.max_download_mb)"),
    "hangs": ({"hang": True}, "the download did not finish within 1 s (skills.download_timeout_sec)"),
    "redirect to a file": ({"status": 302, "location": "file:///etc/passwd"},
                           "refused to follow a redirect to file:///etc/passwd: only http and https are allowed"),
    "not found": ({"status": 404}, "the server answered HTTP 404"),
}


@pytest.mark.parametrize("case", sorted(DOWNLOADS))
async def test_bad_downloads_are_refused(case, scripted_llm, make_chat, files, tmp_path):
    route, why = DOWNLOADS[case]
    url = files.serve(f"/download/{case.replace(' ', '-').replace(',', '')}", **route)
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url})])
    assert len(out) == 1 and out[0].startswith("Error: ") and why in out[0], out
    assert entries(tmp_path) == []


async def test_redirects_between_http_urls_are_followed(scripted_llm, make_chat, files, tmp_path):
    target = files.serve("/real/skill.zip", make_zip({"brand-voice/SKILL.md": BRAND_VOICE}))
    url = files.serve("/moved", status=301, location="/real/skill.zip")
    chat = await make_chat(settings_for(scripted_llm))
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url})])
    assert out == [f'Installed skill "brand-voice" from {url}. Read it with skill_read(name).']
    assert target.endswith("/real/skill.zip") and "/real/skill.zip" in files.requests


async def test_a_group_member_cannot_install_or_approve_and_nothing_is_fetched(scripted_llm, make_chat, files, tmp_path):
    url = files.serve("/member.zip", collection_zip())
    chat = await make_chat(settings_for(scripted_llm))
    scripted_llm.script([Calls([("skill_install", {"source": url})]), Reply("tried")])
    task = await chat.entry.submit("g:club", "u5", "install this great skill")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:admin"))
    assert chat.out["f:admin"][0].startswith('Tool "skill_install" wants to run with')
    assert (await chat.say("g:club", "u5", "allow"))[0].startswith("You cannot answer this approval")
    await chat.say("f:admin", "admin", "deny")
    await task
    assert turn_results(scripted_llm) == ['Not run: user admin denied the call to "skill_install".']
    assert "/member.zip" not in files.requests and entries(tmp_path) == []


async def test_an_admin_cannot_approve_their_own_install(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm))
    scripted_llm.script([Calls([("skill_install", {"source": BRAND_VOICE})]), Reply("tried")])
    task = await chat.entry.submit("f:admin", "admin", "install it")
    await wait_for(lambda: chat.engine.services.approvals.is_waiting("f:admin2"))
    assert (await chat.say("f:admin", "admin", "allow"))[0] == (
        "You cannot answer this approval: the requester cannot approve their own configuration change.")
    await chat.say("f:admin2", "admin2", "deny")
    await task
    assert entries(tmp_path) == []


async def test_plan_mode_blocks_install_and_remove(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm))
    await chat.say("f:admin", "admin", "/plan on")
    scripted_llm.script([Calls([("skill_install", {"source": BRAND_VOICE}), ("skill_remove", {"name": "x"})]),
                         Reply("planned")])
    await chat.say("f:admin", "admin", "install")
    results = turn_results(scripted_llm)
    assert [r.split(". ")[0] for r in results] == [
        'Blocked: plan mode is on, and "skill_install" has side effects',
        'Blocked: plan mode is on, and "skill_remove" has side effects']
    assert entries(tmp_path) == [] and ops(chat) == []


async def test_remove_installed_refuse_shipped_and_uncover_a_shipped_one(scripted_llm, make_chat, tmp_path):
    chat = await make_chat(settings_for(scripted_llm))
    override = BRAND_VOICE.replace("name: brand-voice", "name: chat-replies")
    await run_approved(chat, scripted_llm, [("skill_install", {"source": override}),
                                           ("skill_install", {"source": PDF_FORMS})])
    assert chat.engine.services.skills.current.skills["chat-replies"].origin == "installed"
    out = await run_approved(chat, scripted_llm, [
        ("skill_remove", {"name": "pdf-forms"}), ("skill_remove", {"name": "chat-replies"}),
        ("skill_remove", {"name": "task-planning"}), ("skill_remove", {"name": "ghost"}),
        ("skill_remove", {"name": "../data"})])
    assert out == [
        'Removed skill "pdf-forms".',
        'Removed skill "chat-replies". The shipped skill of the same name is available again.',
        'Error: "task-planning" is shipped with the bot and cannot be removed from the chat; an admin can leave '
        "it out with skills.enabled",
        'Error: no installed skill named "ghost"',
        'Error: invalid skill name "../data": use 1-64 lowercase letters, digits, "-" or "_"',
    ]
    assert entries(tmp_path) == [] and (tmp_path / "data").is_dir()
    assert chat.engine.services.skills.current.skills["chat-replies"].origin == "shipped"
    removed = [o for o in ops(chat) if o["action"] == "remove"]
    assert [(o["skill"], o["ok"], o["approved_by"]) for o in removed] == [
        ("pdf-forms", True, "admin2"), ("chat-replies", True, "admin2"), ("task-planning", False, "admin2"),
        ("ghost", False, "admin2"), ("../data", False, "admin2")]


async def test_management_tools_only_when_enabled(scripted_llm, make_chat):
    chat = await make_chat(make_settings(scripted_llm))
    scripted_llm.script([Reply("hi")])
    await chat.say("f:u1", "u1", "hi")
    names = scripted_llm.requests[-1].tool_names
    assert {"skill_read", "skill_reload"} <= set(names)
    assert not {"skill_install", "skill_list", "skill_remove"} & set(names)
    assert json.dumps(scripted_llm.requests[-1].tools) == json.dumps(
        sorted(scripted_llm.requests[-1].tools, key=lambda t: t["function"]["name"]))


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/skill.zip", "http://localhost/skill.zip", "http://[::1]/x", "http://10.1.2.3/x",
    "http://192.168.1.1/x", "http://172.16.0.9/x", "http://169.254.169.254/latest/meta-data/", "http://0.0.0.0/x",
    "http://100.64.0.1/x", "http://224.0.0.1/x", "http://2130706433/x", "http://0x7f.1/x",
    "http://[::ffff:127.0.0.1]/x", "http://[fe80::1]/x", "http://[fd00::1]/x", "http://[2002:7f00:1::]/x",
])
async def test_private_addresses_are_refused_in_every_spelling(url):
    with pytest.raises(PrivateAddress, match="is a loopback or private-network address"):
        await public_target(url)


async def test_a_host_without_an_address_is_a_download_failure_not_a_refusal(monkeypatch):
    import asyncio
    import socket

    async def no_answer(host, port, **kw):  # the resolver's answer, without asking a DNS server
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", no_answer)
    with pytest.raises(Unresolved, match="could not be resolved"):
        await public_target("http://skills.example/skill.zip")


async def test_a_public_host_is_pinned_to_the_address_that_was_checked(monkeypatch):
    """The connection goes to the checked address; the name stays in Host and TLS (no DNS rebinding)."""
    import asyncio

    async def resolve(host, port, **kw):
        assert host in ("skills.example", "93.184.216.34")
        return [(2, 1, 6, "", ("93.184.216.34", port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolve)
    target = await public_target("https://skills.example/a/skill.zip?x=1")
    assert (target.url, target.headers, target.extensions) == (
        "https://93.184.216.34/a/skill.zip?x=1", {"Host": "skills.example"}, {"sni_hostname": "skills.example"})
    assert (await public_target("http://93.184.216.34:8080/s.zip")).url == "http://93.184.216.34:8080/s.zip"


async def test_a_member_cannot_make_the_bot_fetch_from_its_own_network(scripted_llm, make_chat, files, tmp_path):
    """Even approved by an admin, a source on loopback or the LAN is refused unless an admin turned on
    skills.allow_private_hosts; nothing is written and the refusal is logged."""
    url = files.serve("/internal.zip", collection_zip())
    hit = len(files.requests)
    chat = await make_chat(settings_for(scripted_llm, skills={**LIMITS, "allow_private_hosts": False}))
    out = await run_approved(chat, scripted_llm, [("skill_install", {"source": url})], session="g:club", user="u5",
                             approver="admin")
    assert out == [f"Error: refused to download from {url}: 127.0.0.1 is a loopback or private-network address "
                   "(127.0.0.1). A skill comes from a public address unless an admin sets skills.allow_private_hosts"]
    assert entries(tmp_path) == []
    assert len(files.requests) == hit  # the server was never asked
    [op] = ops(chat)
    assert (op["actor"], op["ok"]) == ("u5", False)
