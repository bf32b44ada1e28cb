"""Who may use the panel: the secret token (the login link, `Authorization: Bearer`), an optional password
(a slow scrypt hash), browser sessions with their CSRF tokens, and the login rate limit.

The token and the password's hash are files in the data directory, created 0600 (the data directory itself
is private: services/datadir.py). Sessions live in this process only: a restart logs browsers out. With a
password set, the login link no longer logs a browser in (the token stays the API's bearer for scripts).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from core.settings import PanelSettings

TOKEN_FILE = "panel.token"  # noqa: S105 - a file name, not a secret
PASSWORD_FILE = "panel.password"  # noqa: S105 - a file name, not a secret
#: scrypt's cost: about 50 ms and 32 MB per check on a small server (the login rate limit does the rest).
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 1
SCRYPT_MAXMEM = 64 * 1024 * 1024
MIN_PASSWORD = 10
#: Browsers logged in at once; the oldest session goes first.
MAX_SESSIONS = 64
#: Clients whose failures are remembered at once (a flood of addresses cannot grow it without bound).
MAX_CLIENTS = 4096


def _write_private(path: Path, text: str) -> None:
    """Written 0600 from the first byte (never world-readable, even for a moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=SCRYPT_MAXMEM)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.strip().split("$")
        if scheme != "scrypt":
            return False
        got = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p),
                             maxmem=SCRYPT_MAXMEM)
    except ValueError:  # a damaged file: no password matches it
        return False
    return hmac.compare_digest(got, bytes.fromhex(digest))


@dataclass
class Session:
    sid: str
    csrf: str
    expires: float


class LoginLimiter:
    """Failed logins per client address in a sliding minute; over the limit, refused until the minute passes."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client, deque())
        while times and times[0] <= now - 60:
            times.popleft()
        return times

    def allowed(self, client: str) -> bool:
        return len(self._recent(client, time.monotonic())) < self.per_minute

    def failed(self, client: str) -> None:
        now = time.monotonic()
        times = self._recent(client, now)
        if client not in self._failures and len(self._failures) >= MAX_CLIENTS:
            self._failures.pop(next(iter(self._failures)))
        times.append(now)
        self._failures[client] = times

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)


class PanelAuth:
    def __init__(self, data_dir: Path, settings: PanelSettings) -> None:
        self.token_path = data_dir / TOKEN_FILE
        self.password_path = data_dir / PASSWORD_FILE
        self.session_sec = settings.session_hours * 3600
        self.limiter = LoginLimiter(settings.login_attempts_per_minute)
        self._sessions: dict[str, Session] = {}
        self._token = ""

    # --- the token ------------------------------------------------------------------------------
    def ensure_token(self) -> tuple[str, bool]:
        """The panel's token, made at first start: (token, whether it was just made)."""
        try:
            self._token = self.token_path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            self._token = ""
        if len(self._token) >= 32:
            return self._token, False
        self._token = secrets.token_urlsafe(32)
        _write_private(self.token_path, self._token + "\n")
        return self._token, True

    def new_token(self) -> str:
        """A fresh token (`ania panel --new-token`): the old link and bearer stop working."""
        self._token = secrets.token_urlsafe(32)
        _write_private(self.token_path, self._token + "\n")
        self._sessions.clear()
        return self._token

    def token_ok(self, candidate: str) -> bool:
        return bool(self._token) and hmac.compare_digest(candidate.encode(), self._token.encode())

    # --- the password ---------------------------------------------------------------------------
    def set_password(self, password: str) -> None:
        if len(password) < MIN_PASSWORD:
            raise ValueError(f"the password needs at least {MIN_PASSWORD} characters")
        _write_private(self.password_path, hash_password(password) + "\n")
        self._sessions.clear()

    @property
    def has_password(self) -> bool:
        return self.password_path.is_file()

    def password_ok(self, candidate: str) -> bool:
        try:
            stored = self.password_path.read_text(encoding="utf-8")
        except OSError:
            return False
        return verify_password(candidate, stored)

    # --- sessions -------------------------------------------------------------------------------
    def open_session(self) -> Session:
        now = time.time()
        for sid in [s for s, v in self._sessions.items() if v.expires < now]:
            del self._sessions[sid]
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + self.session_sec)
        self._sessions[session.sid] = session
        return session

    def session(self, sid: str) -> Session | None:
        """The live session of this cookie value (its expiry slides with use), or None."""
        found = self._sessions.get(sid)
        if found is None or not hmac.compare_digest(found.sid.encode(), sid.encode()):
            return None
        now = time.time()
        if found.expires < now:
            del self._sessions[sid]
            return None
        found.expires = now + self.session_sec
        return found

    def close_session(self, sid: str) -> None:
        self._sessions.pop(sid, None)
