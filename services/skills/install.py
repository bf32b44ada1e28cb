"""Installing and removing skills in `<data>/skills` (S4), one operation at a time.

Install: fetch (services/skills/fetch.py) into a temp folder `<data>/skills/.install-<id>/` beside the
installed skills, unpack with every check (services/skills/archive.py), find the skills (each folder
holding a SKILL.md; a SKILL.md inside another skill's folder belongs to that skill), parse each, and
only then rename each skill folder into place (same filesystem: one step; an older version is moved
aside first and deleted after). Nothing half-unpacked is ever visible to the registry, which skips
folders starting with ".". The registry reloads at once. Remove: rename aside, delete, reload. Shipped
skills (the repository's `skills/`) cannot be removed from the chat. Every operation, failed ones too,
goes to the operation log as `skill_manage`, with who asked and who approved.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import Any

from core.settings import SkillsSettings
from services.skills.archive import Limits, is_zip, unpack
from services.skills.fetch import CODELOAD, Source, classify, download
from services.skills.parse import SKILL_FILE, Skill, SkillError, check_name, parse_skill_text, read_skill
from services.skills.registry import SkillRegistry
from services.store import AppStore

MAX_SKILLS_PER_INSTALL = 50
#: Fills the empty staging folder it is given; returns the folder to look for skills in and where they came from.
Unpacker = Callable[[Path], Awaitable[tuple[Path, str]]]


class SkillInstaller:
    def __init__(self, registry: SkillRegistry, root: Path, settings: SkillsSettings, store: AppStore,
                 codeload: str = CODELOAD) -> None:
        self.registry = registry
        self.root = root
        self.settings = settings
        self.store = store
        #: Where GitHub repository URLs are fetched from (a test points it at its local server).
        self.codeload = codeload
        self._lock = asyncio.Lock()

    def _log(self, action: str, session: str, actor: str, detail: dict[str, Any]) -> None:
        self.store.log_op("skill_manage", session, actor, {"action": action, **detail})

    async def install(self, source: str, *, session: str = "", actor: str = "", approved_by: str = "") -> str:
        """Install from a URL or the text of a SKILL.md (skill_install)."""
        shown = "SKILL.md text" if source.strip().startswith("---") else source.strip()[:300]

        async def unpack_into(unpacked: Path) -> tuple[Path, str]:
            src = classify(source, self.codeload)
            base = _write_text_skill(unpacked, src.text) if src.text else await self._fetch(src, unpacked)
            return base, src.shown()

        return await self._installing(shown, unpack_into, session, actor, approved_by)

    async def install_upload(self, data: bytes, filename: str, *, session: str = "", actor: str = "",
                             approved_by: str = "") -> str:
        """Install an uploaded zip archive or SKILL.md (the panel): the same checks as a download, the same cap."""
        shown = f"upload {filename[:120]}"

        async def unpack_into(unpacked: Path) -> tuple[Path, str]:
            cap = int(self.settings.max_download_mb * 2**20)
            if len(data) > cap:
                raise SkillError(f"the upload is larger than {self.settings.max_download_mb:g} MB "
                                 "(skills.max_download_mb)")
            return await self._unpack(data, unpacked, "", "the upload"), f'the upload "{filename[:120]}"'

        return await self._installing(shown, unpack_into, session, actor, approved_by)

    async def _installing(self, shown: str, unpack_into: Unpacker, session: str, actor: str,
                          approved_by: str) -> str:
        """One install, under the lock, logged whether it worked or not."""
        try:
            async with self._lock:
                try:
                    names, notes, origin = await self._install(unpack_into)
                except OSError as e:
                    raise SkillError(f"the skill could not be written ({e.strerror or e})") from None
        except SkillError as e:
            self._log("install", session, actor, {"source": shown, "ok": False, "error": str(e),
                                                  "approved_by": approved_by})
            raise
        self._log("install", session, actor, {"source": shown, "ok": True, "skills": names,
                                              "approved_by": approved_by})
        what = f'skill "{names[0]}"' if len(names) == 1 else f"{len(names)} skills ({', '.join(names)})"
        lines = [f"Installed {what} from {origin}. Read it with skill_read(name).", *notes]
        return "\n".join(lines)

    async def _install(self, unpack_into: Unpacker) -> tuple[list[str], list[str], str]:
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f".install-{secrets.token_hex(6)}"
        staging.mkdir()
        try:
            unpacked = staging / "unpacked"
            unpacked.mkdir()
            base, origin = await unpack_into(unpacked)
            skills, problems = _find_skills(base)
            names = [s.name for s in skills]
            previous = set(self.registry.current.skills)
            await asyncio.to_thread(_move_into_place, skills, self.root, staging)
        finally:
            await asyncio.to_thread(shutil.rmtree, staging, True)
        current = await self.registry.reload()
        notes = [f"Skipped: {p}" for p in problems]
        notes += [f'"{n}" replaced the skill of the same name.' for n in names if n in previous]
        notes += [f'"{n}" is installed but not enabled: skills.enabled does not list it.'
                  for n in names if n not in current.skills]
        return names, notes, origin

    async def _fetch(self, src: Source, unpacked: Path) -> Path:
        data = await download(src.url, max_bytes=int(self.settings.max_download_mb * 2**20),
                              timeout_sec=self.settings.download_timeout_sec,
                              private_ok=self.settings.allow_private_hosts)
        if not is_zip(data) and src.subdir:
            raise SkillError(f"{src.url[:200]} did not answer with a zip archive")
        return await self._unpack(data, unpacked, src.subdir, "the download")

    async def _unpack(self, data: bytes, unpacked: Path, subdir: str, what: str) -> Path:
        """A zip archive (every check of services/skills/archive.py) or the text of one SKILL.md."""
        if is_zip(data):
            limits = Limits(self.settings.max_files, int(self.settings.max_unpacked_mb * 2**20))
            await asyncio.to_thread(unpack, data, unpacked, limits)
            return _subdir(unpacked, subdir)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"{what} is neither a zip archive nor a UTF-8 SKILL.md") from None
        return _write_text_skill(unpacked, text)

    async def remove(self, name: str, *, session: str = "", actor: str = "", approved_by: str = "") -> str:
        try:
            async with self._lock:
                check_name(name)
                try:
                    note = await self._remove(name)
                except OSError as e:
                    raise SkillError(f"the skill could not be removed ({e.strerror or e})") from None
        except SkillError as e:
            self._log("remove", session, actor, {"skill": name[:80], "ok": False, "error": str(e),
                                                 "approved_by": approved_by})
            raise
        self._log("remove", session, actor, {"skill": name, "ok": True, "approved_by": approved_by})
        return f'Removed skill "{name}".{note}'

    async def _remove(self, name: str) -> str:
        folder = self.root / name
        if folder.is_symlink():
            folder.unlink()
        elif folder.is_dir():
            trash = self.root / f".remove-{secrets.token_hex(6)}"
            os.rename(folder, trash)
            await asyncio.to_thread(shutil.rmtree, trash, True)
        else:
            skill = self.registry.current.skills.get(name)
            if skill is not None and skill.origin == "shipped":
                raise SkillError(f'"{name}" is shipped with the bot and cannot be removed from the chat; '
                                 "an admin can leave it out with skills.enabled")
            raise SkillError(f'no installed skill named "{name}"')
        current = await self.registry.reload()
        back = current.skills.get(name)
        return " The shipped skill of the same name is available again." if back is not None else ""


def _write_text_skill(unpacked: Path, text: str) -> Path:
    name, _ = parse_skill_text(text)
    folder = unpacked / name
    folder.mkdir()
    (folder / SKILL_FILE).write_text(text, encoding="utf-8")
    return unpacked


def _subdir(base: Path, subdir: str) -> Path:
    """The folder the URL pointed at, inside the archive's single top folder (codeload's `<repo>-<ref>/`)."""
    if not subdir:
        return base
    rel = PurePosixPath(subdir)
    if rel.is_absolute() or ".." in rel.parts:
        raise SkillError(f'"{subdir[:120]}" is not a folder inside the repository')
    tops = list(base.iterdir())
    root = tops[0] if len(tops) == 1 and tops[0].is_dir() else base
    folder = root.joinpath(*rel.parts)
    if not folder.is_dir():
        raise SkillError(f'the archive has no folder "{subdir[:120]}"')
    return folder


def _find_skills(base: Path) -> tuple[list[Skill], list[str]]:
    """Every skill folder under `base` (outermost SKILL.md wins), parsed; problems for the broken ones."""
    files = sorted((p for p in base.rglob(SKILL_FILE) if p.is_file() and not p.is_symlink()),
                   key=lambda p: (len(p.parts), p.as_posix()))
    folders: list[Path] = []
    for f in files:
        rel = f.parent.relative_to(base)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if not any(f.parent.is_relative_to(kept) for kept in folders):
            folders.append(f.parent)
    if len(folders) > MAX_SKILLS_PER_INSTALL:
        raise SkillError(f"the archive holds {len(folders)} skills; install at most {MAX_SKILLS_PER_INSTALL} at once "
                         "(point at one folder with /tree/<ref>/<folder>)")
    skills: list[Skill] = []
    problems: list[str] = []
    for folder in folders:
        where = (folder.relative_to(base) / SKILL_FILE).as_posix()
        try:
            skills.append(read_skill(folder / SKILL_FILE, folder, "installed"))
        except SkillError as e:
            problems.append(f"{where}: {e}")
    if not skills:
        why = "; ".join(problems) if problems else "no SKILL.md was found"
        raise SkillError(f"nothing was installed: {why}")
    names = [s.name for s in skills]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise SkillError(f"nothing was installed: more than one skill is named {', '.join(twice)}")
    return sorted(skills, key=lambda s: s.name), problems


def _move_into_place(skills: list[Skill], root: Path, staging: Path) -> None:
    """Rename each unpacked skill folder to `<root>/<name>`; an older version is moved aside first."""
    for skill in skills:
        assert skill.folder is not None  # noqa: S101 - narrows for mypy: unpacked skills always have a folder
        target = root / skill.name
        if target.is_symlink():
            target.unlink()
        elif target.exists():
            os.rename(target, staging / f"old-{skill.name}")
        os.rename(skill.folder, target)
