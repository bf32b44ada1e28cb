"""Running `ania chat` as a user does, for tests/test_terminal*.py and the other modules that start the CLI:
the environment for a temp config and data dir against the scripted server (`env_for`), one command run to the
end (`ania`), and a command on a pseudo-terminal (`Pty`) where a TTY matters (the status line, Ctrl-C). A read-only
command that only checks what a real `ania chat` stored runs in this process (`ania_here`): a second process start
would prove nothing more and costs seconds of CPU."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\r")
#: Run in the child after `setsid`: open the terminal by name (it becomes the controlling terminal),
#: make it stdin, stdout and stderr, and exec the command.
LAUNCH = ("import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); [os.dup2(fd, i) for i in (0, 1, 2)]; "
          "os.close(fd); os.execvp(sys.argv[2], sys.argv[2:])")


def env_for(server, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    (tmp_path / "config").mkdir(exist_ok=True)
    env.update({"ANIA_CONFIG_DIR": str(tmp_path / "config"), "ANIA_DATA_DIR": str(tmp_path / "data"),
                "ANIA_LLM__BASE_URL": server.base_url, "ANIA_LLM__MODEL": "scripted-model",
                "ANIA_LLM__MAX_RETRIES": "0", "ANIA_PANEL__ENABLE": "off",  # many bots at once: no panel port each
                "PYTHONPATH": str(ROOT), **extra})
    return env


def ania_here(monkeypatch, capsys, *args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """`ania ARGS` through `ania.cli.main` in this process, with `env`'s ANIA_ variables: (exit code, stdout,
    stderr). Only for commands that need no stdin (sessions list, show)."""
    for key, value in env.items():
        if key.startswith("ANIA_"):
            monkeypatch.setenv(key, value)
    from ania.cli import main

    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def ania(*args: str, env: dict[str, str], stdin: str = "", **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ania.cli", *args], input=stdin, env=env, cwd=kw.pop("cwd", ROOT),
                          capture_output=True, text=True, timeout=60, **kw)


class Pty:
    """A command on a fresh pseudo-terminal, which is its controlling terminal: typing \\x03 is Ctrl-C."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        self.master, self._slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, os.ttyname(self._slave), *cmd], env=env,
                                     cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL)
        self.raw = b""
        self._seen = 0

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace"))

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            self.raw += os.read(self.master, 65536)
        return bool(ready)

    def expect(self, needle: str, timeout: float = 30) -> str:
        """Wait until `needle` appears after the last match; returns the text up to it."""
        deadline = time.monotonic() + timeout
        while (at := self.text.find(needle, self._seen)) < 0:
            assert self.proc.poll() is None or self._read(0.2), f"exited ({self.proc.returncode}):\n{self.text}"
            assert time.monotonic() < deadline, f"no {needle!r} within {timeout} s:\n{self.text}"
            self._read(0.2)
        seen, self._seen = self.text[self._seen: at + len(needle)], at + len(needle)
        return seen

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 90) -> int:
        rc = self.proc.wait(timeout)
        while self._read(0.3):
            pass
        return rc

    def session_processes(self) -> list[str]:
        """Processes still alive in the command's session (its own process id is the session id)."""
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == self.proc.pid and fields[0] != "Z":
                out.append(stat.parent.name)
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        os.close(self.master)
        os.close(self._slave)
