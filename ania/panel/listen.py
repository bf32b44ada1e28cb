"""Where the panel listens and the link that logs a browser in: kept apart from the server so that
`ania panel --link` prints it without importing the engine."""

from __future__ import annotations

import ipaddress

from core.errors import ConfigError
from core.settings.panel import PanelSettings


def split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.strip().rpartition(":")
    host = host.strip("[]")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not sep or not host or not 0 < number < 65536:
        raise ConfigError(f'panel.listen must be host:port, e.g. 127.0.0.1:6190 (got "{listen}")')
    return host, number


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def link_host(host: str) -> str:
    """The address a browser on this machine uses for a server listening on `host`."""
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - reading the setting, not binding
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def login_link(settings: PanelSettings, token: str) -> str:
    host, port = split_listen(settings.listen)
    base = settings.public_url.rstrip("/") or f"http://{link_host(host)}:{port}"
    return f"{base}/login?token={token}"
