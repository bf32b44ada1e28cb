"""One skill: its SKILL.md (Anthropic's format) parsed with a YAML frontmatter library, never by hand.

A SKILL.md starts with a YAML frontmatter block holding at least `name` and `description`; other keys
(`license`, `allowed-tools`, `metadata` ...) are allowed and ignored, so the public skill collections
load unchanged. The name is also the skill's folder name once installed, so it is a safe path part.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from core.errors import ToolError

SKILL_FILE = "SKILL.md"
#: Lowercase letters, digits, `-` and `_`; 1-64 characters (Anthropic's limit), starting with a letter or digit.
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_SKILL_MD = 256 * 1024
MAX_DESCRIPTION = 1024
#: How much of the description the system prompt's one line carries.
PROMPT_LINE = 300

#: Where a skill comes from: the repository's `skills/` (shipped) or `<data>/skills` (installed).
Origin = Literal["shipped", "installed"]


class SkillError(ToolError):
    """A skill that cannot be read, installed or removed; the text says why."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    #: The SKILL.md file.
    file: Path
    #: The folder whose other files belong to the skill; None for a lone `skills/SKILL.md`.
    folder: Path | None
    origin: Origin

    def line(self) -> str:
        """The one line the system prompt shows: the description on one line, capped."""
        text = " ".join(self.description.split())
        return text if len(text) <= PROMPT_LINE else text[: PROMPT_LINE - 1].rstrip() + "…"


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise SkillError(f'invalid skill name "{name[:80]}": use 1-64 lowercase letters, digits, "-" or "_"')
    return name


def parse_skill_text(text: str) -> tuple[str, str]:
    """(name, description) of a SKILL.md text; SkillError says what is wrong."""
    if len(text) > MAX_SKILL_MD:
        raise SkillError(f"SKILL.md is larger than {MAX_SKILL_MD // 1024} KiB")
    if not text.lstrip("\ufeff \t\r\n").startswith("---"):
        raise SkillError("SKILL.md has no YAML frontmatter: it must start with a --- block holding name and "
                         "description")
    try:
        meta, _body = frontmatter.parse(text.lstrip("\ufeff"), handler=YAMLHandler())
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SkillError(f"the frontmatter of SKILL.md is not valid YAML ({first})") from None
    name, description = meta.get("name"), meta.get("description")
    if not meta:
        raise SkillError("the frontmatter of SKILL.md is empty or not a mapping: it needs name and description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError("the frontmatter of SKILL.md has no name")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f'the frontmatter of skill "{name[:80]}" has no description')
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f'the description of skill "{name[:80]}" is longer than {MAX_DESCRIPTION} characters')
    return check_name(name.strip()), description.strip()


def read_skill(file: Path, folder: Path | None, origin: Origin) -> Skill:
    """Read and parse one SKILL.md from disk."""
    try:
        if file.stat().st_size > MAX_SKILL_MD:
            raise SkillError(f"SKILL.md is larger than {MAX_SKILL_MD // 1024} KiB")
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillError("SKILL.md is not UTF-8 text") from None
    except OSError as e:
        raise SkillError(f"cannot read SKILL.md ({e.strerror or e})") from None
    name, description = parse_skill_text(text)
    return Skill(name=name, description=description, file=file, folder=folder, origin=origin)
