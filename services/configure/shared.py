"""The configuration files a cluster's processes share (issue 25, X3): what the chat or the panel writes on one
process reaches every other.

Each process reads its own `config/` directory, as a single bot does. On a Postgres store each file written
from the chat or the panel (`ania.toml` by config_set, mcp.json, hooks.json, commands.json, prompt.json) is
also upserted into the `config_files` table (migration `010_config_files`), and the cluster's processes
write what changed there into their own `config/` (ania/cluster/config_watch.py, every 2 s): hooks and
custom commands then apply within seconds as on one process, the rest at /reboot. A /reboot bumps the
generation counter in the KV, and every worker restarts its engine when it sees it change.

Hand edits: the gateway's `config/` is the cluster's, so a file edited by hand there is published (its watch
looks every 2 s; a /reboot looks first) and never overwritten by the table: a process remembers the digest of
each file as it last published or pulled it, and a file that differs from that was edited here. On a worker
the table wins (its `config/` is a copy), with a warning naming the file whose hand edit was replaced.

Only the known file names are ever written (a row with any other name is ignored: the table is not a way
to write elsewhere in `config/`). On SQLite nothing is shared and nothing here runs.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError
from core.settings import CONFIG_FILE, load_settings
from services.configure.files import CONFIG_FILES, checked_file
from services.files import atomic_write_text
from services.store import AppStore

log = logging.getLogger(__name__)

GENERATION_KEY = "cluster:config_generation"
#: The files the table may hold: what the chat and the panel can write.
SHARED_FILES = frozenset({CONFIG_FILE, *CONFIG_FILES.values()})
#: File name → its config_file_set name (what checked_file validates by).
_FILE_KEYS = {file: key for key, file in CONFIG_FILES.items()}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Stamp:
    """What the watch compares: the newest file change and the /reboot generation."""

    files: float
    generation: int


class SharedConfig:
    def __init__(self, store: AppStore, config_dir: Path) -> None:
        self._store = store
        self._dir = config_dir
        #: Each file's digest as this process last published or pulled it (None: not read yet, see _baseline).
        self._synced: dict[str, str] | None = None
        #: Digests of hand edits refused as invalid (each is logged once).
        self._refused: set[str] = set()

    @property
    def enabled(self) -> bool:
        return self._store.dialect.postgres

    def publish(self, name: str, text: str) -> None:
        """A file this process just wrote (from the chat or the panel) becomes the cluster's."""
        if not self.enabled or name not in SHARED_FILES:
            return
        sha = digest(text)
        self._store.write("INSERT INTO config_files (name, text, sha, updated) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (name) DO UPDATE SET text = excluded.text, sha = excluded.sha, "
                          "updated = excluded.updated", [name, text, sha, time.time()])
        self._baseline()[name] = sha

    def publish_all(self) -> list[str]:
        """This process's files become the cluster's (the gateway at its start: its `config/` is the cluster's)."""
        out = []
        for name in sorted(SHARED_FILES):
            path = self._dir / name
            if path.is_file():
                self.publish(name, path.read_text(encoding="utf-8"))
                out.append(name)
        return out

    def pull(self, *, local_wins: bool = False) -> list[str]:
        """Write into `config/` the shared files that differ from ours; their names. `local_wins` (the
        gateway): a file edited here by hand since it was last synced is published instead."""
        if not self.enabled:
            return []
        synced = self._baseline()
        changed = []
        for row in self._rows():
            name, sha = str(row["name"]), str(row["sha"])
            mine, text = self._local(name)
            if mine == sha:
                synced[name] = sha
                continue
            edited = name in synced and mine != synced[name]
            if edited and local_wins and text is not None:
                self._publish_edit(name, text)
                continue
            if edited:
                log.warning("config: %s was edited by hand in %s; replaced by the cluster's (edit it in the "
                            "gateway's config/ or from the chat)", name, self._dir)
            atomic_write_text(self._dir / name, str(row["text"]))
            synced[name] = sha
            changed.append(name)
        if changed:
            log.info("config: %s changed on another process of the cluster; written to %s", ", ".join(changed),
                     self._dir)
        return changed

    def publish_edits(self) -> list[str]:
        """The gateway's watch: files edited by hand here since they were last synced become the cluster's
        (the table's names, and a read of at most five small files)."""
        if not self.enabled:
            return []
        synced = self._baseline()
        tabled = {str(row["name"]) for row in self._store.query("SELECT name FROM config_files")}
        out = []
        for name in sorted(SHARED_FILES):
            mine, text = self._local(name)
            # A file the table holds that was never synced here is the table's to settle (pull): not an edit.
            if text is not None and mine != synced.get(name) and (name in synced or name not in tabled) \
                    and self._publish_edit(name, text):
                out.append(name)
        return out

    def _publish_edit(self, name: str, text: str) -> bool:
        """A hand edit becomes the cluster's when the code that reads the file accepts it: an invalid one
        would stop every worker at its next start, so it stays here (the gateway's /reboot names the error).
        An edit refused once is not read again (the watch looks every 2 s) until it changes."""
        if digest(text) in self._refused:
            return False
        try:
            if name == CONFIG_FILE:
                load_settings(self._dir)
            else:
                checked_file(_FILE_KEYS[name], text, self._dir)
        except ConfigError as e:
            self._refused.add(digest(text))
            log.warning("config: %s was edited by hand in %s but is not valid, so the workers keep the "
                        "previous one: %s", name, self._dir, e)
            return False
        log.info("config: %s was edited by hand in %s: it is now the cluster's", name, self._dir)
        self.publish(name, text)
        return True

    def carry_over(self, old: SharedConfig) -> None:
        """A /reboot rebuilt this object: what the old one knew was synced stays known, or a hand edit made
        around the rebuild would look like a stale copy (and be overwritten by the table's)."""
        self._synced = None if old._synced is None else dict(old._synced)
        self._refused = set(old._refused)

    def _baseline(self) -> dict[str, str]:
        """The synced digests, first taken (after a start or a /reboot rebuilt this object) as the files that
        equal the table's: a file that differs then is one the next pull settles."""
        if self._synced is None:
            self._synced = {}
            for row in self._rows():
                if self._local(str(row["name"]))[0] == row["sha"]:
                    self._synced[str(row["name"])] = str(row["sha"])
        return self._synced

    def _rows(self) -> list[dict[str, object]]:
        rows = []
        for row in self._store.query("SELECT name, text, sha FROM config_files ORDER BY name"):
            if str(row["name"]) in SHARED_FILES:
                rows.append(row)
            else:
                log.warning("config_files holds %r, which is not a configuration file (ignored)", row["name"])
        return rows

    def _local(self, name: str) -> tuple[str, str | None]:
        """(digest, text) of this process's copy; ("", None) when it is missing or unreadable."""
        path = self._dir / name
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else None
        except (OSError, UnicodeDecodeError):
            text = None
        return ("", None) if text is None else (digest(text), text)

    def stamp(self) -> Stamp:
        newest = self._store.query("SELECT MAX(updated) AS t FROM config_files")[0]["t"]
        return Stamp(float(newest or 0.0), int(self._store.kv_get(GENERATION_KEY, 0) or 0))

    def bump(self) -> int:
        """A /reboot: every worker restarts its engine when it sees the new generation."""
        generation = int(self._store.kv_get(GENERATION_KEY, 0) or 0) + 1
        self._store.kv_set(GENERATION_KEY, generation)
        return generation
