"""The skill registry (S1-S3): the skills of two roots, swapped as a whole on reload.

Roots, in order: the repository's `skills/` (shipped with the bot) and `<data>/skills` (installed); a
later root wins on a name clash. In a root, every folder `<name>/SKILL.md` is a skill (its other files
belong to it), and a lone `SKILL.md` at the root is a one-file skill. Folders starting with "." are the
installer's temp folders and are skipped. A broken skill is reported and skipped; the others load.

The registry holds one immutable `SkillSet`; `reload` builds a new one off the event loop and replaces
it in one assignment, so a turn that is reading the old set is never disturbed. The system prompt's
`available_skills` block is computed once per set: it is byte-identical until the skills change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from services.skills.parse import SKILL_FILE, Origin, Skill, SkillError, read_skill

MAX_READ = 100_000
MAX_LISTED_FILES = 50
PROMPT_HEAD = ("Skills hold instructions for particular tasks. When one fits the request, read it with "
               "skill_read(name) before you start, and follow it.")


@dataclass(frozen=True)
class Root:
    path: Path
    origin: Origin


@dataclass(frozen=True)
class SkillSet:
    skills: Mapping[str, Skill] = field(default_factory=dict)
    #: "<where>: <why>" for each skill that did not load, sorted.
    problems: tuple[str, ...] = ()
    prompt_block: str = ""


def scan(roots: Sequence[Root], allow: Sequence[str]) -> SkillSet:
    """Read every root (blocking I/O; run it in a thread)."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for root in roots:
        for file, folder in _candidates(root.path):
            try:
                skill = read_skill(file, folder, root.origin)
            except SkillError as e:
                problems.append(f"{file}: {e}")
                continue
            found[skill.name] = skill  # a later root wins
    if allow:
        problems += [f"skills.enabled lists {n}, which was not found" for n in sorted(set(allow) - set(found))]
        found = {n: s for n, s in found.items() if n in allow}
    skills = {n: found[n] for n in sorted(found)}
    return SkillSet(skills=skills, problems=tuple(sorted(problems)), prompt_block=_block(skills))


def _candidates(root: Path) -> list[tuple[Path, Path | None]]:
    out: list[tuple[Path, Path | None]] = []
    if (root / SKILL_FILE).is_file():
        out.append((root / SKILL_FILE, None))
    if root.is_dir():
        for sub in sorted(root.iterdir()):
            if sub.name.startswith(".") or not sub.is_dir() or sub.is_symlink():
                continue
            if (sub / SKILL_FILE).is_file():
                out.append((sub / SKILL_FILE, sub))
    return out


def _block(skills: Mapping[str, Skill]) -> str:
    if not skills:
        return ""
    lines = [f"- {s.name}: {s.line()}" for s in skills.values()]
    return "<available_skills>\n" + PROMPT_HEAD + "\n" + "\n".join(lines) + "\n</available_skills>"


class SkillRegistry:
    def __init__(self, roots: Sequence[Root], allow: Sequence[str] = ()) -> None:
        self.roots = tuple(roots)
        self.allow = tuple(allow)
        self.current = SkillSet()
        self._lock = asyncio.Lock()

    async def reload(self) -> SkillSet:
        """Re-read the same roots and allow-list; the new set replaces the old one in one step."""
        async with self._lock:
            self.current = await asyncio.to_thread(scan, self.roots, self.allow)
            return self.current

    def prompt_block(self) -> str:
        return self.current.prompt_block

    def get(self, name: str) -> Skill:
        skill = self.current.skills.get(name)
        if skill is None:
            names = ", ".join(self.current.skills) or "(none)"
            raise SkillError(f'no skill named "{name[:80]}". Skills: {names}')
        return skill

    def read(self, name: str, file: str | None = None) -> str:
        """SKILL.md, or one file of the skill's folder; paths never leave that folder."""
        skill = self.get(name)
        if file is None or file.strip() in ("", SKILL_FILE):
            text = _read_text(skill.file, SKILL_FILE)
            extra = self.files(skill)
            if not extra:
                return text
            more = f" and {len(extra) - MAX_LISTED_FILES} more" if len(extra) > MAX_LISTED_FILES else ""
            listing = ", ".join(extra[:MAX_LISTED_FILES]) + more
            return f"{text.rstrip()}\n\n[files of skill {name}, read one with skill_read(name, file): {listing}]"
        if skill.folder is None:
            raise SkillError(f'skill "{name}" is a single SKILL.md and has no other files')
        return _read_text(_inside(skill.folder, file), file)

    @staticmethod
    def files(skill: Skill) -> list[str]:
        """The skill's other files, relative and sorted (symlinks are not followed or listed)."""
        if skill.folder is None:
            return []
        out = []
        for p in skill.folder.rglob("*"):
            rel = p.relative_to(skill.folder)
            if p.is_symlink() or not p.is_file() or any(part.startswith(".") for part in rel.parts):
                continue
            if rel.as_posix() != SKILL_FILE:
                out.append(rel.as_posix())
        return sorted(out)

    def listing(self) -> str:
        """What skill_list and skill_reload tell the model: every skill, then what did not load."""
        current = self.current
        if current.skills:
            lines = [f"Skills ({len(current.skills)}):"]
            lines += [f"- {s.name} ({s.origin}): {s.line()}" for s in current.skills.values()]
        else:
            lines = ["No skills are available."]
        if current.problems:
            lines.append("Not loaded:")
            lines += [f"- {p}" for p in current.problems]
        return "\n".join(lines)


def _inside(folder: Path, file: str) -> Path:
    """The path of `file` inside `folder`, or a SkillError: no absolute path, no `..`, no way out by a link."""
    rel = PurePosixPath(file.replace("\\", "/"))
    if "\x00" in file or rel.is_absolute() or ".." in rel.parts or (rel.parts and ":" in rel.parts[0]):
        raise SkillError(f'"{file[:120]}" is not a path inside the skill\'s folder')
    path = folder / rel
    base = folder.resolve()
    if not path.resolve().is_relative_to(base):
        raise SkillError(f'"{file[:120]}" leads outside the skill\'s folder')
    return path


def _read_text(path: Path, shown: str) -> str:
    if not path.is_file():
        raise SkillError(f'the skill has no file "{shown[:120]}"')
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_READ + 1)
    except OSError as e:
        raise SkillError(f'cannot read "{shown[:120]}" ({e.strerror or e})') from None
    if b"\x00" in raw:
        raise SkillError(f'"{shown[:120]}" is not a text file')
    text = raw[:MAX_READ].decode("utf-8", errors="replace")
    return text if len(raw) <= MAX_READ else text + f"\n[truncated: the file is longer than {MAX_READ} bytes]"
