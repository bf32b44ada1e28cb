"""Downloading a skill: what a source is, and a download that cannot grow past its cap or hang.

A source is the full SKILL.md text, a GitHub repository URL (turned into its codeload zip: the default
branch, or `/tree/<ref>/<subdir>`, or `/blob/<ref>/<dir>/SKILL.md` for that skill's folder), or any other
http(s) URL (a zip or a SKILL.md, told apart by the bytes). The download is the shared guarded one
(services/net/fetch.py: http(s) redirects only, a size cap, one deadline, every hop's host a public address
unless `skills.allow_private_hosts` is on): a URL from a chat must not reach the bot's own machine or network.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from services.net.fetch import FetchError, Guard, Refused, TimedOut, TooLarge, fetch
from services.skills.parse import SkillError

CODELOAD = "https://codeload.github.com"
GITHUB_HOSTS = ("github.com", "www.github.com")


@dataclass(frozen=True)
class Source:
    """What skill_install was given: SKILL.md text, or a URL to fetch (and a folder inside its archive)."""

    text: str = ""
    url: str = ""
    subdir: str = ""

    def shown(self) -> str:
        return self.url + (f" (folder {self.subdir})" if self.subdir else "") if self.url else "SKILL.md text"


def classify(source: str, codeload: str = CODELOAD) -> Source:
    source = source.strip()
    if source.startswith("---"):
        return Source(text=source)
    try:
        parts = urlsplit(source)
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SkillError("give a zip URL, a GitHub repository URL, a SKILL.md URL (http or https), "
                         "or the full SKILL.md text starting with ---")
    if parts.netloc.lower() in GITHUB_HOSTS:
        return github_source(source, codeload) or Source(url=source)
    return Source(url=source)


def github_source(url: str, codeload: str = CODELOAD) -> Source | None:
    """The codeload zip of a GitHub repository URL, or None for other GitHub URLs (e.g. a release asset)."""
    path = [p for p in urlsplit(url).path.split("/") if p]
    if len(path) < 2:
        return None
    owner, repo = path[0], path[1].removesuffix(".git")
    rest = path[2:]
    if not rest:
        return Source(url=f"{codeload}/{owner}/{repo}/zip/HEAD")
    if rest[0] in ("tree", "blob") and len(rest) >= 2:
        ref, sub = rest[1], rest[2:]
        if rest[0] == "blob":
            if not sub or sub[-1] != "SKILL.md":
                return None
            sub = sub[:-1]
        return Source(url=f"{codeload}/{owner}/{repo}/zip/{ref}", subdir="/".join(sub))
    return None


PRIVATE = ("refused to download from {url}: {why}. A skill comes from a public address unless an admin "
           "sets skills.allow_private_hosts")


async def download(url: str, *, max_bytes: int, timeout_sec: float, private_ok: bool = False) -> bytes:
    """The body of `url`, following http(s) redirects only; SkillError above `max_bytes`, after the deadline,
    or (unless `private_ok`) for a hop to a loopback or private-network address."""
    try:
        fetched = await fetch(url, Guard(max_bytes, timeout_sec, private_ok), ok_statuses=range(200, 201))
    except Refused as e:
        raise SkillError(PRIVATE.format(url=e.url, why=e.why)) from None
    except TooLarge as e:
        raise SkillError(f"{e} (skills.max_download_mb)") from None
    except TimedOut:
        raise SkillError(f"the download did not finish within {timeout_sec:g} s "
                         "(skills.download_timeout_sec)") from None
    except FetchError as e:
        raise SkillError(str(e)) from None
    return fetched.body
