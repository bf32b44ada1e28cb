"""Skill tools (S2-S4): read and reload always; list, install and remove behind `skill_tool.enable`.

Install and remove change what every session's model reads (the `available_skills` block), so like
config_set they need an admin other than the requester (G3) and plan mode blocks them. skill_read's
`file` never leaves the skill's folder (services/skills/registry.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.config import Settings
from services.context import RunContext
from tools.base import NoParams, Tool

READ_DESCRIPTION = (
    "Read a skill listed in available_skills: its SKILL.md (with the list of its other files), or one of "
    "those files when `file` is given."
)
RELOAD_DESCRIPTION = "Read the skill folders again (after skill files were edited) and list the skills."
LIST_DESCRIPTION = "List the skills with where they come from (shipped or installed), and skills that failed to load."
INSTALL_DESCRIPTION = (
    "Install a skill (or every skill of a repository): `source` is a zip URL, a GitHub repository URL "
    "(https://github.com/<owner>/<repo>, optionally /tree/<ref>/<folder>), a SKILL.md URL, or the full text of a "
    "SKILL.md starting with a --- frontmatter block holding name and description. Needs an admin's approval."
)
REMOVE_DESCRIPTION = "Remove an installed skill. Needs an admin's approval."
SKILL_NAME = "Skill name as listed in available_skills"


class ReadParams(BaseModel):
    name: str = Field(description=SKILL_NAME)
    file: str | None = Field(None, description="A file of the skill, relative to its folder, e.g. reference.md")


class SkillRead(Tool[ReadParams]):
    name = "skill_read"
    description = READ_DESCRIPTION
    params = ReadParams

    async def execute(self, args: ReadParams, ctx: RunContext) -> str:
        return ctx.services.skills.read(args.name, args.file)


class SkillReload(Tool[NoParams]):
    name = "skill_reload"
    description = RELOAD_DESCRIPTION

    async def execute(self, args: NoParams, ctx: RunContext) -> str:
        await ctx.services.skills.reload()
        return "Reloaded. " + ctx.services.skills.listing()


class SkillList(Tool[NoParams]):
    name = "skill_list"
    description = LIST_DESCRIPTION

    async def execute(self, args: NoParams, ctx: RunContext) -> str:
        return ctx.services.skills.listing()


class InstallParams(BaseModel):
    source: str = Field(description="zip URL, GitHub repository URL, SKILL.md URL, or the full SKILL.md text")


class SkillInstall(Tool[InstallParams]):
    name = "skill_install"
    description = INSTALL_DESCRIPTION
    params = InstallParams
    side_effect = True
    changes_config = True

    async def execute(self, args: InstallParams, ctx: RunContext) -> str:
        return await ctx.services.skill_installer.install(
            args.source, session=ctx.session_key, actor=ctx.requester, approved_by=ctx.approved_by)


class RemoveParams(BaseModel):
    name: str = Field(description=SKILL_NAME)


class SkillRemove(Tool[RemoveParams]):
    name = "skill_remove"
    description = REMOVE_DESCRIPTION
    params = RemoveParams
    side_effect = True
    changes_config = True

    async def execute(self, args: RemoveParams, ctx: RunContext) -> str:
        return await ctx.services.skill_installer.remove(
            args.name, session=ctx.session_key, actor=ctx.requester, approved_by=ctx.approved_by)


def skill_tools(settings: Settings) -> list[Tool[Any]]:
    tools: list[Tool[Any]] = [SkillRead(), SkillReload()]
    if settings.skill_tool.enable:
        tools += [SkillInstall(), SkillList(), SkillRemove()]
    return tools
