"""A throwaway Postgres cluster from Debian's `postgresql` package: `initdb` in a directory of ours, the
server on a free loopback port with its socket in that directory, trust authentication for one role.

Postgres refuses to run as root; as root the cluster is made and run as the `postgres` system user the
package creates (`runuser`), so the directory is handed to that user first. The directory is a fresh one in
the system's temporary directory (a test's own tmp_path is private to root, so not reachable by that user);
`stop(remove=True)` deletes it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

ROLE = "ania"
DATABASE = "ania"


class PostgresUnavailable(RuntimeError):
    """No Postgres server binaries here (apt-get install postgresql)."""


def bindir() -> Path:
    """The directory of `initdb` and `pg_ctl`: `pg_config --bindir`, else the newest Debian version."""
    if config := shutil.which("pg_config"):
        out = subprocess.run([config, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()  # noqa: S603 - a fixed query
        if out and (Path(out) / "initdb").exists():
            return Path(out)
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not versions:
        raise PostgresUnavailable("Postgres is not installed (apt-get install postgresql)")
    return Path(versions[-1]).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    """`start()` it, use `url`, `stop()` it. `settings` are extra server settings (`-c name=value`)."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.root, self.port = Path(tempfile.mkdtemp(prefix="ania-pg-")), 0
        self.settings = {"listen_addresses": "127.0.0.1", "max_connections": "200", **(settings or {})}
        self._bin = bindir()
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("running as root needs the `postgres` user of Debian's package") from None
            self._as = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return self.database_url(DATABASE)

    def database_url(self, name: str) -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        """A new empty database (one per test keeps tests apart on one server); its URL."""
        self._run(str(self._bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE, name)
        return self.database_url(name)

    def _run(self, *argv: str) -> None:
        done = subprocess.run([*self._as, *argv], capture_output=True, text=True, check=False, cwd="/")  # noqa: S603 - Postgres' own tools
        if done.returncode:
            said = (done.stderr or done.stdout)[-800:]
            raise RuntimeError(f"{Path(argv[0]).name} failed ({done.returncode}): {said}")

    def start(self) -> LocalPostgres:
        if self._as:
            shutil.chown(self.root, "postgres", "postgres")
        data, sock = self.root / "data", self.root / "sock"
        if not (data / "PG_VERSION").exists():
            self._run(str(self._bin / "initdb"), "-D", str(data), "-U", ROLE, "--auth=trust", "-E", "UTF8",
                      "--no-locale", "--no-sync")
        self._run("mkdir", "-p", str(sock))
        self.port = self.port or free_port()  # a restart keeps its address
        options = " ".join([f"-p {self.port}", f"-k {sock}", *(f"-c {k}={v}" for k, v in self.settings.items())])
        self._run(str(self._bin / "pg_ctl"), "-D", str(data), "-l", str(self.root / "server.log"), "-w", "-t", "60",
                  "-o", options, "start")
        with contextlib.suppress(RuntimeError):  # there already after a restart of the same directory
            self.create_database(DATABASE)
        return self

    def stop(self, mode: str = "fast", *, remove: bool = True) -> None:
        """`fast` (clients disconnected, clean shutdown) or `immediate` (like a crash); `remove=False` keeps
        the directory, so `start()` brings the same cluster back."""
        with contextlib.suppress(RuntimeError):
            self._run(str(self._bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", mode, "-w", "stop")
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
