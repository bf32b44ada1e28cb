"""Requests to URLs the model chose, kept off the bot's own machine and network (server-side request forgery).

A URL from a chat (skill_install's source) could name the bot's loopback services, the LAN router or the
cloud's metadata address. `public_target` resolves the host once, refuses it when any of its addresses
is not a public one (loopback, private, link-local, shared, reserved, multicast, unspecified, and IPv6
forms of those), and returns the URL pinned to the address it checked: the request connects there, with
the host name kept for the Host header and TLS (SNI and certificate), so a DNS answer that changes
between the check and the connection (rebinding) cannot move the request.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class PrivateAddress(ValueError):
    """The URL's host is (or resolves to) an address on this machine or a private network."""


class Unresolved(ValueError):
    """The URL's host has no address (a DNS failure: not a refusal)."""


@dataclass(frozen=True)
class Target:
    """Where to connect (`url`, its host an IP address) and what to send as the host (`headers`, `extensions`)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is not None and not is_public(embedded):
            return False
    return address.is_global and not address.is_multicast


async def public_target(url: str) -> Target:
    """`url` pinned to its host's one checked address; PrivateAddress when the host is not public,
    Unresolved when it has no address."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise Unresolved(f"the host {host!r} could not be resolved ({e})") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        raise Unresolved(f"the host {host!r} has no address")
    refused = next((a for a in addresses if not is_public(a)), None)
    if refused is not None:
        raise PrivateAddress(f"{host} is a loopback or private-network address ({refused})")
    if _is_literal(host):
        return Target(url)
    pinned = addresses[0]
    literal = f"[{pinned}]" if pinned.version == 6 else str(pinned)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + (literal if parts.port is None else f"{literal}:{parts.port}")
    host_header = host if parts.port is None else f"{host}:{parts.port}"
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    return Target(urlunsplit(parts._replace(netloc=netloc)), {"Host": host_header}, extensions)


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
