"""Child processes that must leave nothing behind (hook commands, bash)."""

from __future__ import annotations

import contextlib
import os
import signal


def kill_group(pid: int) -> None:
    """SIGKILL the process group of a child started with `start_new_session=True` (its pgid is its pid),
    so whatever it spawned goes too."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
