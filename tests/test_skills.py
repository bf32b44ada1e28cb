"""Skills S1-S3 through the real loop: the two roots, the available_skills block, skill_read, skill_reload."""

from __future__ import annotations

import json
import os

from ania.compose import SHIPPED_SKILLS
from ania.fakes.openai_server import Calls, Reply
from services.skills import Root, SkillRegistry, parse_skill_text
from services.skills.parse import SkillError
from tests.approval_helpers import turn_results
from tests.conftest import make_settings
from tests.skill_helpers import BRAND_VOICE, PDF_FORMS, PDF_REFERENCE, TEMPLATE

SHIPPED = ["bot-configuration", "chat-replies", "task-planning"]


def put(root, name: str, text: str, **extra: str) -> None:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    for rel, content in extra.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(content)


def system_of(request) -> str:
    return request.messages[0]["content"]


def test_the_shipped_skills_load_without_problems():
    registry = SkillRegistry([Root(SHIPPED_SKILLS, "shipped")])
    from services.skills.registry import scan

    current = scan(registry.roots, ())
    assert list(current.skills) == SHIPPED and current.problems == ()
    assert all(s.folder is not None and s.origin == "shipped" for s in current.skills.values())
    assert "reference/hooks-json.md" in SkillRegistry.files(current.skills["bot-configuration"])


def test_frontmatter_is_parsed_by_the_library_with_extra_keys():
    assert parse_skill_text(BRAND_VOICE)[0] == "brand-voice"  # nested `metadata` mapping is fine
    assert parse_skill_text("\ufeff" + PDF_FORMS)[0] == "pdf-forms"
    bad = {
        "# Just a title\n\nNo frontmatter.": "no YAML frontmatter",
        "---\ndescription: no name here\n---\nbody": "has no name",
        "---\nname: x\n---\nbody": 'skill "x" has no description',
        "---\nname: [oops\n---\nbody": "not valid YAML",
        "---\n- a list\n---\nbody": "empty or not a mapping",
        "---\nname: Bad Name\ndescription: d\n---\n": 'invalid skill name "Bad Name"',
        "---\nname: 12\ndescription: d\n---\n": "has no name",
        "---\nname: ../../etc\ndescription: d\n---\n": "invalid skill name",
    }
    for text, why in bad.items():
        try:
            parse_skill_text(text)
        except SkillError as e:
            assert why in str(e), (text, str(e))
        else:
            raise AssertionError(f"accepted: {text!r}")


async def test_available_skills_block_is_sorted_byte_stable_and_follows_the_skills(scripted_llm, make_chat, tmp_path):
    installed = tmp_path / "data" / "skills"
    put(installed, "pdf-forms", PDF_FORMS, **{"reference.md": PDF_REFERENCE})
    chat = await make_chat(make_settings(scripted_llm))
    for i in range(3):
        scripted_llm.script([Calls([("time", {})]), Reply(f"answer {i}")])
        await chat.say("f:u1", "u1", f"question {i}")
    systems = {json.dumps(r.messages[0]) for r in scripted_llm.requests}
    assert len(systems) == 1  # byte-identical in all six requests
    system = system_of(scripted_llm.requests[0])
    assert system.startswith(chat.engine.services.settings.bot.system_prompt + "\n\n<available_skills>\n")
    listed = [line[2:].split(":")[0] for line in system.splitlines() if line.startswith("- ")]
    assert listed == sorted(listed) == sorted([*SHIPPED, "pdf-forms"])
    assert "- pdf-forms: Fill in PDF forms and read their fields." in system
    # A new skill on disk changes nothing until a reload; the reload changes the block once.
    put(installed, "brand-voice", BRAND_VOICE)
    scripted_llm.script([Reply("same")])
    await chat.say("f:u1", "u1", "again")
    assert system_of(scripted_llm.requests[-1]) == system
    scripted_llm.script([Calls([("skill_reload", {})]), Reply("reloaded"), Reply("after")])
    await chat.say("f:u1", "u1", "reload skills")
    reloaded = turn_results(scripted_llm)[0]
    assert reloaded.startswith("Reloaded. Skills (5):\n- bot-configuration (shipped): How to change")
    assert "\n- brand-voice (installed): Write in the club's voice" in reloaded
    await chat.say("f:u1", "u1", "and now?")
    after = system_of(scripted_llm.requests[-1])
    assert after != system and "- brand-voice: Write in the club's voice" in after
    assert system_of(scripted_llm.requests[-2]) == after  # the reload's own next request already has it


async def test_skill_read_returns_skill_md_and_files_and_never_leaves_the_folder(scripted_llm, make_chat, tmp_path):
    installed = tmp_path / "data" / "skills"
    put(installed, "pdf-forms", PDF_FORMS, **{"reference.md": PDF_REFERENCE, "scripts/list_fields.py": "print(1)\n"})
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", installed / "pdf-forms" / "link.md")
    (installed / "pdf-forms" / "blob.bin").write_bytes(b"\x00\x01binary")
    chat = await make_chat(make_settings(scripted_llm))
    calls = [
        ("skill_read", {"name": "pdf-forms"}),
        ("skill_read", {"name": "pdf-forms", "file": "reference.md"}),
        ("skill_read", {"name": "pdf-forms", "file": "../../secret.txt"}),
        ("skill_read", {"name": "pdf-forms", "file": str(tmp_path / "secret.txt")}),
        ("skill_read", {"name": "pdf-forms", "file": "link.md"}),
        ("skill_read", {"name": "pdf-forms", "file": "scripts/../../pdf-forms/reference.md"}),
        ("skill_read", {"name": "pdf-forms", "file": "blob.bin"}),
        ("skill_read", {"name": "pdf-forms", "file": "missing.md"}),
        ("skill_read", {"name": "nope"}),
        ("skill_read", {"name": "chat-replies", "file": "examples.md"}),
    ]
    scripted_llm.script([Calls(calls), Reply("read")])
    await chat.say("g:club", "u5", "fill my form")  # a group member: reading skills is for everyone
    out = turn_results(scripted_llm)
    assert out[0].startswith(PDF_FORMS.rstrip()) and out[0].endswith(
        "[files of skill pdf-forms, read one with skill_read(name, file): blob.bin, reference.md, "
        "scripts/list_fields.py]")
    assert out[1] == PDF_REFERENCE
    assert out[2] == 'Error: "../../secret.txt" is not a path inside the skill\'s folder'
    assert out[3] == f'Error: "{tmp_path / "secret.txt"}" is not a path inside the skill\'s folder'
    assert out[4] == 'Error: "link.md" leads outside the skill\'s folder'
    assert out[5] == 'Error: "scripts/../../pdf-forms/reference.md" is not a path inside the skill\'s folder'
    assert out[6] == 'Error: "blob.bin" is not a text file'
    assert out[7] == 'Error: the skill has no file "missing.md"'
    assert out[8] == f'Error: no skill named "nope". Skills: {", ".join(sorted([*SHIPPED, "pdf-forms"]))}'
    assert out[9].startswith("# Before and after")
    assert "top secret" not in json.dumps(scripted_llm.requests[-1].body)


async def test_installed_wins_broken_skipped_allow_list_and_a_lone_skill_md(make_services, tmp_path):
    installed = tmp_path / "data" / "skills"
    clash = BRAND_VOICE.replace("name: brand-voice", "name: chat-replies").replace("Write in", "Club rules for")
    put(installed, "chat-replies", clash)
    put(installed, "broken", "# no frontmatter\n")
    put(installed, "noname", "---\ndescription: nameless\n---\n")
    put(installed, ".install-tmp", BRAND_VOICE.replace("brand-voice", "half-done"))
    (installed / "SKILL.md").write_text(TEMPLATE)
    services = await make_services()
    current = services.skills.current
    assert sorted(current.skills) == sorted([*SHIPPED, "template-skill"])
    assert current.skills["chat-replies"].origin == "installed"
    assert "Club rules for" in services.skills.prompt_block()
    assert [p.split(": ", 1)[1] for p in current.problems] == [
        "SKILL.md has no YAML frontmatter: it must start with a --- block holding name and description",
        "the frontmatter of SKILL.md has no name"]
    assert services.skills.read("template-skill").startswith("---\nname: template-skill")
    assert "Error" not in services.skills.listing().split("Not loaded:")[0]
    try:
        services.skills.read("template-skill", "other.md")
    except SkillError as e:
        assert "is a single SKILL.md and has no other files" in str(e)
    only = await make_services(make_settings_plain(skills={"enabled": ["task-planning", "ghost"]}))
    assert list(only.skills.current.skills) == ["task-planning"]
    assert "skills.enabled lists ghost, which was not found" in only.skills.current.problems


def make_settings_plain(**sections):
    from core.settings import Settings

    return Settings(**sections)


async def test_reload_swaps_the_set_in_one_step_and_keeps_good_skills(make_services, tmp_path):
    installed = tmp_path / "data" / "skills"
    put(installed, "pdf-forms", PDF_FORMS)
    services = await make_services()
    before = services.skills.current
    (installed / "pdf-forms" / "SKILL.md").write_text("---\nname: [\n---\n")
    put(installed, "brand-voice", BRAND_VOICE)
    after = await services.skills.reload()
    assert before.skills["pdf-forms"].name == "pdf-forms"  # the old set is untouched (readers keep it)
    assert "pdf-forms" not in after.skills and "brand-voice" in after.skills
    assert any("pdf-forms/SKILL.md: the frontmatter of SKILL.md is not valid YAML" in p for p in after.problems)
    assert set(SHIPPED) <= set(after.skills)
