"""A throwaway Chroma server: `chroma run` from the installed `chromadb` package, its data in a directory of
ours, on a free loopback port; `start()` returns once it answers its heartbeat.

`stop(remove=False)` keeps the directory and the port, so `start()` brings the same server (and what it
holds) back at the same address: what a restarted server looks like to its clients. The child gets no
`ANIA_*` variable (they may carry the bot's secrets) and Chroma's telemetry is off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from ania.localservers.postgres import free_port

START_TIMEOUT_SEC = 60.0


class ChromaUnavailable(RuntimeError):
    """No `chroma` command here (it comes with the chromadb package: pip install chromadb)."""


def chroma_command() -> str:
    """The `chroma` command beside this interpreter (the virtualenv's), else the one on PATH."""
    here = Path(sys.executable).with_name("chroma")
    if here.exists():
        return str(here)
    if found := shutil.which("chroma"):
        return found
    raise ChromaUnavailable("the `chroma` command is not installed (it comes with the chromadb package)")


class LocalChroma:
    """`start()` it, use `url`, `stop()` it."""

    def __init__(self) -> None:
        self.command = chroma_command()  # before the directory: nothing is left behind when it is missing
        self.root, self.port = Path(tempfile.mkdtemp(prefix="ania-chroma-")), 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _argv(self) -> list[str]:
        return [self.command, "run", "--path", str(self.root / "data"), "--host", "127.0.0.1", "--port", str(self.port)]

    def start(self) -> LocalChroma:
        self.port = self.port or free_port()  # a restart keeps its address
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
        env["ANONYMIZED_TELEMETRY"] = "False"
        log = (self.root / "server.log").open("ab")
        try:
            self._proc = subprocess.Popen(self._argv(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,  # noqa: S603 - Chroma's own command
                                          env=env, cwd=self.root, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while not self.alive():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._kill()
                said = (self.root / "server.log").read_text(errors="replace")[-800:]
                rc = self._proc.returncode
                why = f"it exited with code {rc}" if rc is not None else f"no answer in {START_TIMEOUT_SEC:.0f} s"
                raise RuntimeError(f"`{' '.join(self._argv())}` did not answer {self.url}/api/v2/heartbeat "
                                   f"({why}): {said}")
            time.sleep(0.1)
        return self

    def alive(self) -> bool:
        """Whether the server answers its heartbeat now."""
        try:
            return httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)

    def stop(self, *, remove: bool = True) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 15 s); `remove=False` keeps its data and port."""
        self._kill()
        self._proc = None
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)
