"""The configuration files a cluster's processes share (issue 25, X3): what the chat or the panel writes on one
process reaches every other.

Each process reads its own `config/` directory, as a single bot does. On a Postgres store each file written
from the chat or the panel (`ania.toml` by config_set, mcp.json, hooks.json, commands.json, prompt.json) is
also upserted into the `config_files` table (migration `010_config_files`), and the cluster's processes
write what changed there into their own `config/` (ania/cluster/config_watch.py, every 2 s): hooks and
custom commands then apply within seconds as on one process, the rest at /reboot. A /reboot bumps the
generation counter in the KV, and every worker restarts its engine when it sees it change.

Only the known file names are ever written (a row with any other name is ignored: the table is not a way
to write elsewhere in `config/`). On SQLite nothing is shared and nothing here runs.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from core.settings import CONFIG_FILE
from services.configure.files import CONFIG_FILES
from services.files import atomic_write_text
from services.store import AppStore

log = logging.getLogger(__name__)

GENERATION_KEY = "cluster:config_generation"
#: The files the table may hold: what the chat and the panel can write.
SHARED_FILES = frozenset({CONFIG_FILE, *CONFIG_FILES.values()})


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

    @property
    def enabled(self) -> bool:
        return self._store.dialect.postgres

    def publish(self, name: str, text: str) -> None:
        """A file this process just wrote (from the chat or the panel) becomes the cluster's."""
        if not self.enabled or name not in SHARED_FILES:
            return
        self._store.write("INSERT INTO config_files (name, text, sha, updated) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (name) DO UPDATE SET text = excluded.text, sha = excluded.sha, "
                          "updated = excluded.updated", [name, text, digest(text), time.time()])

    def publish_all(self) -> list[str]:
        """This process's files become the cluster's (the gateway at its start: its `config/` is the cluster's)."""
        out = []
        for name in sorted(SHARED_FILES):
            path = self._dir / name
            if path.is_file():
                self.publish(name, path.read_text(encoding="utf-8"))
                out.append(name)
        return out

    def pull(self) -> list[str]:
        """Write into `config/` the shared files that differ from ours; their names."""
        if not self.enabled:
            return []
        changed = []
        for row in self._store.query("SELECT name, text, sha FROM config_files ORDER BY name"):
            name = str(row["name"])
            if name not in SHARED_FILES:
                log.warning("config_files holds %r, which is not a configuration file (ignored)", name)
                continue
            path = self._dir / name
            try:
                mine = digest(path.read_text(encoding="utf-8")) if path.is_file() else ""
            except (OSError, UnicodeDecodeError):
                mine = ""
            if mine != row["sha"]:
                atomic_write_text(path, str(row["text"]))
                changed.append(name)
        if changed:
            log.info("config: %s changed on another process of the cluster; written to %s", ", ".join(changed),
                     self._dir)
        return changed

    def stamp(self) -> Stamp:
        newest = self._store.query("SELECT MAX(updated) AS t FROM config_files")[0]["t"]
        return Stamp(float(newest or 0.0), int(self._store.kv_get(GENERATION_KEY, 0) or 0))

    def bump(self) -> int:
        """A /reboot: every worker restarts its engine when it sees the new generation."""
        generation = int(self._store.kv_get(GENERATION_KEY, 0) or 0) + 1
        self._store.kv_set(GENERATION_KEY, generation)
        return generation
