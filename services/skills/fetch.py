"""Downloading a skill: what a source is, and a download that cannot grow past its cap or hang.

A source is the full SKILL.md text, a GitHub repository URL (turned into its codeload zip: the default
branch, or `/tree/<ref>/<subdir>`, or `/blob/<ref>/<dir>/SKILL.md` for that skill's folder), or any other
http(s) URL (a zip or a SKILL.md, told apart by the bytes). Redirects are followed by hand, at most
`MAX_REDIRECTS`, and only to http(s). The body is streamed and cut at the cap (a Content-Length above it
is refused before reading); the whole download has one deadline, so a server that trickles bytes is cut
too. Every hop's host must be a public address (services/netguard.py), unless `skills.allow_private_hosts`
is on: a URL from a chat must not reach the bot's own machine or network.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from services.netguard import PrivateAddress, Target, public_target
from services.skills.parse import SkillError

MAX_REDIRECTS = 5
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
        async with asyncio.timeout(timeout_sec):
            return await _download(url, max_bytes, timeout_sec, private_ok)
    except TimeoutError:
        raise SkillError(f"the download did not finish within {timeout_sec:g} s "
                         "(skills.download_timeout_sec)") from None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as e:
        raise SkillError(f"the download failed ({type(e).__name__}: {e})") from None


async def _download(url: str, max_bytes: int, timeout_sec: float, private_ok: bool) -> bytes:
    headers = {"Accept-Encoding": "identity"}  # the bytes counted are the bytes kept: no decoding on the fly
    async with httpx.AsyncClient(follow_redirects=False, timeout=timeout_sec, headers=headers) as client:
        for _ in range(MAX_REDIRECTS + 1):
            if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
                raise SkillError(f"refused to follow a redirect to {url[:200]}: only http and https are allowed")
            try:
                to = Target(url) if private_ok else await public_target(url)
            except PrivateAddress as e:
                raise SkillError(PRIVATE.format(url=url[:200], why=e)) from None
            async with client.stream("GET", to.url, headers=to.headers, extensions=to.extensions) as resp:
                if resp.is_redirect:
                    url = urljoin(url, resp.headers.get("location", ""))
                    continue
                if resp.status_code != 200:
                    raise SkillError(f"the server answered HTTP {resp.status_code} for {url[:200]}")
                return await _body(resp, max_bytes)
    raise SkillError(f"more than {MAX_REDIRECTS} redirects")


async def _body(resp: httpx.Response, max_bytes: int) -> bytes:
    too_big = f"the download is larger than {max_bytes / 2**20:g} MB (skills.max_download_mb)"
    if resp.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
        raise SkillError("the server sent a compressed body although none was asked for")
    length = resp.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise SkillError(too_big)
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_raw():
        size += len(chunk)
        if size > max_bytes:
            raise SkillError(too_big)
        chunks.append(chunk)
    return b"".join(chunks)
