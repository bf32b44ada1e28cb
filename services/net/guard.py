"""Requests to URLs the model chose, kept off the bot's own machine and network (server-side request forgery).

A URL from a chat (skill_install's source) could name the bot's loopback services, the LAN router or the
cloud's metadata address. `public_target` resolves the host once, refuses it when any of its addresses
is not a public one (loopback, private, link-local, shared, reserved, multicast, unspecified, and IPv6
forms of those), and returns the URL pinned to the address it checked: the request connects there, with
the host name kept for the Host header and TLS (SNI and certificate), so a DNS answer that changes
between the check and the connection (rebinding) cannot move the request.

Hand-written on purpose: `advocate` wraps only `requests` and had its last release in 2020, and `ssrfguard`
(the same pinning for httpx) is a young 0.x release whose policy is set per client, while services/net/fetch.py
decides per hop (an operator's LAN endpoint, a feature that allows private hosts); this check is ~90 lines on
`ipaddress`, with its own tests.
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


#: IPv6 forms whose last 32 bits are an IPv4 address a gateway may deliver to (Python counts them global):
#: IPv4-compatible (::/96), SIIT-translated (::ffff:0:0:0/96) and NAT64's well-known prefix (64:ff9b::/96,
#: so on an IPv6-only host behind NAT64 a DNS answer of 64:ff9b::a00:5 is 10.0.0.5). A NAT64 prefix of the
#: operator's own choosing cannot be told from a public address.
EMBEDS_IPV4 = tuple(ipaddress.IPv6Network(n) for n in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96"))
#: NAT64's local-use prefix (RFC 8215): never a public address.
LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address in LOCAL_NAT64:
            return False
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is None and any(address in net for net in EMBEDS_IPV4):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
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
