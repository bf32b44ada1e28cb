"""Secrets stay out of git: `config/` holds the API key (ania.toml) and MCP servers' env (mcp.json), `data/`
every chat. A `git add .` in a checkout must not pick them up (issue 22, item 13)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECRET_PATHS = ["config/ania.toml", "config/mcp.json", "config/hooks.json", "data/ania.db", "data/checkpoints.db",
                ".env"]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize("path", SECRET_PATHS)
def test_secret_paths_are_ignored(path: str) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if _git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git checkout (an unpacked archive): nothing can be committed")
    result = _git("check-ignore", "--no-index", "-q", path)
    assert result.returncode == 0, f"{path} is not ignored by .gitignore: `git add .` would commit it"


def test_the_shipped_examples_are_not_ignored() -> None:
    """config.example/ is what a newcomer copies: it must stay in the repository."""
    if shutil.which("git") is None or _git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git checkout")
    assert _git("check-ignore", "--no-index", "-q", "config.example/ania.toml").returncode == 1
