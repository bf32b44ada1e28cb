"""Child processes (hook commands, bash, stdio MCP servers): what environment they get, and how they end.

No child ever sees the bot's secrets: `scrubbed_env` is the process environment without `ANIA_*`
settings and without variables whose names look like credentials; `minimal_env` is a small clean
environment for commands the model writes (bash).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import signal
from collections.abc import Awaitable, Mapping

#: Names that look like credentials (API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD ...).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.IGNORECASE)
#: What a model-written command may see of the bot's environment.
MINIMAL_KEYS = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
PR_SET_DUMPABLE = 4


def is_secret_name(name: str) -> bool:
    return name.upper().startswith("ANIA_") or bool(SECRET_NAME.search(name))


def scrubbed_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """`base` (default: this process's environment) without settings and credential-like variables."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not is_secret_name(k)}
    env.update(extra)
    return env


def minimal_env(home: str, **extra: str) -> dict[str, str]:
    """A clean environment for commands the model writes: PATH, locale, timezone, HOME and `extra`."""
    env = {k: os.environ[k] for k in MINIMAL_KEYS if k in os.environ}
    env.setdefault("PATH", DEFAULT_PATH)
    env.update(HOME=home, TERM="dumb", **extra)
    return env


def protect_process() -> None:
    """Make this process non-dumpable: other processes of the same (non-root) user can no longer read
    its memory or `/proc/<pid>/environ`, where the API key may sit. Children are not affected."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def kill_group(pid: int) -> None:
    """SIGKILL the process group of a child started with `start_new_session=True` (its pgid is its pid),
    so whatever it spawned goes too."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def spawn_group(start: Awaitable[asyncio.subprocess.Process]) -> asyncio.subprocess.Process:
    """Start a child that runs in its own process group (`start`: a `create_subprocess_*` call with
    `start_new_session=True`) so that a cancel (/stop) arriving while it starts cannot orphan it: the child
    runs before `create_subprocess_*` returns (its pipes are still being connected), and a cancel there used
    to leave it running with nobody holding its pid. The start finishes, the group is killed, the cancel goes on."""
    spawning = asyncio.ensure_future(start)
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            kill_group((await spawning).pid)
        raise
