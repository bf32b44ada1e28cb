"""The data directory is private to the bot's user (issue 22, item 5): a real `ania chat` on a fresh data
directory, a turn that writes the stores, the knowledge base and the todo list, then every entry is walked:
files without group/other bits, directories 0700. An older data directory (0755 / 0644 entries) is
tightened at start with one warning that names it. The child starts under umask 022 (the usual one), so
the test does not depend on the umask of the process running it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from ania.fakes.openai_server import Calls, Reply
from tests.conftest import make_settings
from tests.terminal_helpers import ania, env_for
from tests.test_bash import NEEDS_BWRAP

USUAL_UMASK = 0o022


def loose_entries(root: Path) -> list[str]:
    """Entries under `root` (and root itself) that another user could read, list or enter."""
    out = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        wanted_dir = stat.S_ISDIR(mode) and stat.S_IMODE(mode) != 0o700
        if mode & 0o077 or wanted_dir:
            out.append(f"{path.relative_to(root.parent)} {stat.S_IMODE(mode):o}")
    return out


def test_a_fresh_data_dir_is_private_after_a_turn(scripted_llm, tmp_path):
    scripted_llm.script([
        Calls([("kb_add", {"title": "rules", "content": "No ads in this group."}),
               ("memory_save", {"content": "the user likes tea"}),
               ("todo_write", {"todos": [{"content": "remember tea", "status": "pending"}]})]),
        Reply("noted"),
    ])
    done = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="remember: I like tea\n", umask=USUAL_UMASK)
    assert done.returncode == 0, done.stderr
    assert "noted" in done.stdout
    data = tmp_path / "data"
    names = {p.name for p in data.rglob("*")}
    assert {"ania.db", "checkpoints.db", "ania.db.migrate.lock", "clock.lock", "chroma"} <= names, names
    assert loose_entries(data) == []
    assert "data directory" not in done.stderr  # nothing to tighten on a directory this version made


def test_an_older_data_dir_is_tightened_with_one_warning(scripted_llm, tmp_path):
    old = os.umask(USUAL_UMASK)
    try:
        data = tmp_path / "data"
        (data / "workspace" / "notes").mkdir(parents=True)
        (data / "chroma").mkdir()
        with sqlite3.connect(data / "ania.db") as db:  # what an older version left: a real store, 0644
            db.execute("CREATE TABLE chat_notes (note TEXT)")
        (data / "workspace" / "notes" / "secret.txt").write_text("the admin's password")
        (data / "workspace" / "run.sh").write_text("#!/bin/sh\n")
        (data / "workspace" / "run.sh").chmod(0o755)
        (data / "link").symlink_to("/etc/hostname")  # not followed, not changed
    finally:
        os.umask(old)
    before = loose_entries(data)
    assert len(before) == 7, before
    scripted_llm.script([Reply("hello")])
    done = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="hi\n", umask=USUAL_UMASK)
    assert done.returncode == 0, done.stderr
    assert loose_entries(data) == []
    assert stat.S_IMODE((data / "workspace" / "run.sh").stat().st_mode) == 0o700  # still runnable by its owner
    assert stat.S_IMODE((data / "workspace" / "notes" / "secret.txt").stat().st_mode) == 0o600
    warnings = [line for line in done.stderr.splitlines() if "data directory" in line]
    assert warnings == [f"ania: WARNING services.datadir: the data directory {data} had 7 entries other users "
                        "could read: made them private to this user (files 0600, directories 0700)"]
    again = ania("chat", env=env_for(scripted_llm, tmp_path), stdin="", umask=USUAL_UMASK)
    assert "data directory" not in again.stderr  # said once; the next start finds nothing to tighten


async def test_the_stores_wal_and_shm_files_are_private_while_the_bot_runs(scripted_llm, make_chat, tmp_path):
    """SQLite makes -wal and -shm itself while a store is open (they are gone after a clean stop)."""
    old = os.umask(USUAL_UMASK)
    try:
        chat = await make_chat(make_settings(scripted_llm))
        scripted_llm.script([Calls([("todo_write", {"todos": [{"content": "x", "status": "pending"}]})]),
                             Reply("ok")])
        assert await chat.say("f:u1", "u1", "plan it") == ["ok"]
        data = tmp_path / "data"
        names = {p.name for p in data.iterdir()}
        assert {"ania.db-wal", "ania.db-shm", "checkpoints.db-wal", "checkpoints.db-shm"} <= names, names
        assert loose_entries(data) == []
    finally:
        os.umask(old)


@NEEDS_BWRAP
async def test_the_sandbox_still_uses_a_private_workspace(scripted_llm, make_chat, tmp_path):
    """The sandboxed command runs as another uid inside its user namespace, mapped to the bot's: a 0700
    workspace (tightened from an older 0755 one) stays readable and writable for it."""
    old = os.umask(USUAL_UMASK)
    try:
        ws = tmp_path / "data" / "workspace"
        ws.mkdir(parents=True)
        (ws / "old.txt").write_text("from before")
        settings = make_settings(scripted_llm, approval={"enable": False},
                                 bash={"enable": True, "sandbox": "bwrap", "whitelist": [r"^cat\b", r"^echo\b"]})
        chat = await make_chat(settings)
        scripted_llm.script([Calls([("bash", {"command": "cat old.txt"})]), Reply("read"),
                             Calls([("bash", {"command": "echo new > new.txt"})]), Reply("written")])
        assert await chat.say("f:u1", "u1", "read it") == ["read"]
        assert [m["content"] for m in scripted_llm.requests[-1].messages if m["role"] == "tool"] == ["from before"]
        assert await chat.say("f:u1", "u1", "write it") == ["written"]
        assert (ws / "new.txt").read_text() == "new\n"
        assert loose_entries(tmp_path / "data") == []
    finally:
        os.umask(old)


def test_the_walk_runs_only_while_the_data_dir_is_open_to_others(tmp_path, monkeypatch):
    """Each start, /reboot and `ania logs|sessions|kb` calls make_private: on a 0700 directory (nobody else
    can reach inside) it is one stat, not a walk of a big Chroma store and workspace."""
    from services.datadir import make_private

    data = tmp_path / "data"
    (data / "workspace").mkdir(parents=True)
    (data / "workspace" / "a.txt").write_text("x")
    for path, mode in ((data, 0o755), (data / "workspace", 0o755), (data / "workspace" / "a.txt", 0o644)):
        path.chmod(mode)
    old = os.umask(USUAL_UMASK)
    try:
        assert make_private(data) == 3
        assert loose_entries(data) == []

        def no_walk(*_a: object, **_k: object) -> None:
            raise AssertionError("walked a data directory that is already private")

        monkeypatch.setattr(os, "walk", no_walk)
        assert make_private(data) == 0
        assert make_private(data, create=False) == 0
    finally:
        os.umask(old)
