"""One guarded GET for every download whose address the bot does not choose itself: a skill source, a meme
or image URL, a web page, and every redirect any of them answers.

Each hop must be http(s) and its host a public address (`netguard.public_target`, the connection pinned to
the address that was checked) unless the caller's feature allows private hosts; redirects are followed by
hand, at most `MAX_REDIRECTS`. An operator-configured endpoint (`trusted`: meme.url, web.reader_url) is
the operator's choice and may be on the LAN: its host is not checked, but a redirect to another host is.
The body is streamed and cut at `max_bytes` of what is kept (a Content-Length above it is refused before
reading; a compressed body is counted as decoded), and the whole download has one deadline, so a server
that trickles bytes is cut too. Every failure is a `FetchError` whose text names the URL or host and can
be shown to the model as it is.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpx

from services.net.guard import PrivateAddress, Target, Unresolved, public_target

MAX_REDIRECTS = 5


class FetchError(Exception):
    """A download failed; the text says why in words a user can act on."""


class Refused(FetchError):
    """A hop's host is on this machine or a private network, and the feature does not allow that."""

    def __init__(self, url: str, why: str, setting: str) -> None:
        self.url, self.why = url, why
        hint = f"; an admin can allow private hosts with {setting}" if setting else ""
        super().__init__(f"refused to download from {url}: {why}{hint}")


class TooLarge(FetchError):
    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"the download is larger than {max_bytes / 2**20:g} MB")


class TimedOut(FetchError):
    def __init__(self, timeout_sec: float, url: str) -> None:
        super().__init__(f"the download from {host_of(url)} did not finish within {timeout_sec:g} s")


class BadStatus(FetchError):
    def __init__(self, status: int, url: str) -> None:
        self.status = status
        super().__init__(f"the server answered HTTP {status} for {url[:200]}")


@dataclass(frozen=True)
class Fetched:
    url: str  # the last hop's URL
    status: int
    content_type: str
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Guard:
    """What a feature allows: `private_ok` (its allow_private_hosts setting, named in `setting` for the
    refusal's hint) and the size and time limits of one download."""

    max_bytes: int
    timeout_sec: float
    private_ok: bool = False
    setting: str = ""


def host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or url[:60]
    except ValueError:
        return url[:60]


async def fetch(url: str, guard: Guard, *, trusted: bool = False, headers: dict[str, str] | None = None,
                ok_statuses: range = range(200, 300)) -> Fetched:
    """GET `url` under `guard`; with `trusted`, hops on the first URL's host are not checked. A final
    status outside `ok_statuses` is a `BadStatus` (its body unread)."""
    try:
        async with asyncio.timeout(guard.timeout_sec):
            return await _fetch(url, guard, host_of(url) if trusted else None, headers or {}, ok_statuses)
    except TimeoutError:
        raise TimedOut(guard.timeout_sec, url) from None
    except Unresolved as e:
        raise FetchError(f"the download failed: {e}") from None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as e:
        raise FetchError(f"the download from {host_of(url)} failed ({type(e).__name__}: {e})") from None


async def _fetch(url: str, guard: Guard, trusted_host: str | None, headers: dict[str, str],
                 ok_statuses: range) -> Fetched:
    sent = {**headers, "Accept-Encoding": "identity"}
    first_host = host_of(url)
    async with httpx.AsyncClient(follow_redirects=False, timeout=guard.timeout_sec) as client:
        for hop in range(MAX_REDIRECTS + 1):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise FetchError(f"refused to follow a redirect to {url[:200]}: only http and https are allowed"
                                 if hop else f"not an http(s) URL: {url[:200]}")
            if host_of(url) != first_host:  # a key for the endpoint is not for the host it redirects to
                sent = {k: v for k, v in sent.items() if k.lower() not in ("authorization", "cookie")}
            to = await _target(url, guard, trusted_host)
            async with client.stream("GET", to.url, headers={**sent, **to.headers},
                                     extensions=to.extensions) as resp:
                if resp.is_redirect:
                    url = urljoin(url, resp.headers.get("location", ""))
                    continue
                if resp.status_code not in ok_statuses:
                    raise BadStatus(resp.status_code, url)
                return Fetched(url, resp.status_code, resp.headers.get("content-type", ""),
                               await _body(resp, guard.max_bytes))
    raise FetchError(f"more than {MAX_REDIRECTS} redirects")


async def _target(url: str, guard: Guard, trusted_host: str | None) -> Target:
    if guard.private_ok or (trusted_host is not None and host_of(url) == trusted_host):
        return Target(url)
    try:
        return await public_target(url)
    except PrivateAddress as e:
        raise Refused(url[:200], str(e), guard.setting) from None


async def _body(resp: httpx.Response, max_bytes: int) -> bytes:
    """The body, decoded (a server may compress although identity was asked) and cut at `max_bytes` of
    what is kept, so a small compressed bomb cannot grow past the cap either."""
    encoded = resp.headers.get("content-encoding", "identity").lower() not in ("identity", "")
    length = resp.headers.get("content-length", "")
    if not encoded and length.isdigit() and int(length) > max_bytes:
        raise TooLarge(max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)
