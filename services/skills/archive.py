"""Unpacking a skill archive without trusting it (S4).

Every entry is checked before anything is written: no absolute path or drive letter, no `..`, no
symlink, no encrypted entry, at most `max_files` entries and `max_bytes` unpacked in all (the sizes the
archive declares). Then each file is written with O_EXCL|O_NOFOLLOW under the target folder, counting the
bytes really unpacked against the same cap (a header that lies about a size is caught there), with no
permission bits from the archive. Blocking: run it in a thread.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from services.skills.parse import SkillError

CHUNK = 1 << 16
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Limits:
    max_files: int
    max_bytes: int


def is_zip(data: bytes) -> bool:
    return data.startswith((b"PK\x03\x04", b"PK\x05\x06"))


def unpack(data: bytes, target: Path, limits: Limits) -> None:
    """Check every entry of the zip `data`, then unpack it into the empty folder `target`."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise SkillError(f"the download is not a readable zip archive ({e})") from None
    with zf:
        entries = check_entries(zf.infolist(), limits)
        written = 0
        base = target.resolve()
        for info, rel in entries:
            dest = target.joinpath(*rel.parts)
            if not dest.resolve().is_relative_to(base):
                raise SkillError(f'archive entry "{info.filename[:120]}" leads outside the skill folder')
            try:
                if info.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                written = _write(zf, info, dest, written, limits.max_bytes)
            except (zipfile.BadZipFile, NotImplementedError, EOFError, zlib.error) as e:
                raise SkillError(f'archive entry "{info.filename[:120]}" cannot be unpacked ({e})') from None
            except OSError as e:
                raise SkillError(f'archive entry "{info.filename[:120]}" cannot be written '
                                 f"({e.strerror or e})") from None


def check_entries(infos: list[zipfile.ZipInfo], limits: Limits) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    if len(infos) > limits.max_files:
        raise SkillError(f"the archive has {len(infos)} entries; at most {limits.max_files} are allowed "
                         "(skills.max_files)")
    total = 0
    out = []
    for info in infos:
        name = info.filename
        shown = name[:120]
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise SkillError(f'archive entry "{shown}" is a symbolic link; links are not allowed in a skill')
        if "\x00" in name or name.startswith(("/", "\\")) or _DRIVE.match(name):
            raise SkillError(f'archive entry "{shown}" has an absolute path')
        rel = PurePosixPath(name.replace("\\", "/"))
        if ".." in rel.parts:
            raise SkillError(f'archive entry "{shown}" climbs out of its folder with ".."')
        if info.flag_bits & 0x1:
            raise SkillError(f'archive entry "{shown}" is encrypted')
        total += info.file_size
        if total > limits.max_bytes:
            raise SkillError(f"the archive unpacks to more than {limits.max_bytes / 2**20:g} MB "
                             "(skills.max_unpacked_mb)")
        if rel.parts:
            out.append((info, rel))
    return out


def _write(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, written: int, max_bytes: int) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(dest, flags, 0o600)  # no mode from the archive (no setuid, no exec); private like all data
    except FileExistsError:
        raise SkillError(f'archive entry "{info.filename[:120]}" appears twice') from None
    with os.fdopen(fd, "wb") as out, zf.open(info) as src:
        while chunk := src.read(CHUNK):
            written += len(chunk)
            if written > max_bytes:
                raise SkillError(f"the archive unpacks to more than {max_bytes / 2**20:g} MB (skills.max_unpacked_mb)")
            out.write(chunk)
    return written
