"""The bot under soak: `ania serve` as a real process, its configuration, its restarts and its samples.

The bot's stderr (appended across restarts) is its log; with `logs.stats_sec` on it carries a line of asyncio
tasks, threads and open files every two seconds (ania/stats.py), which the sampler reads beside psutil's
resident memory.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil

from ania.stats import STATS

ROOT = Path(__file__).resolve().parents[2]
DEMO_MCP = ROOT / "tests" / "mcp_servers" / "demo_server.py"
STATS_LINE = re.compile(re.escape(STATS) + r" tasks=(\d+) threads=(\d+) fds=(-?\d+)")
LLM_TIMEOUT_SEC = 6.0


def write_config(config: Path, llm_url: str, onebot_url: str) -> None:
    """The bot's settings for a soak: short timeouts so faults end within seconds, every tool on."""
    config.mkdir(parents=True, exist_ok=True)
    (config / "ania.toml").write_text(f"""
[llm]
base_url = "{llm_url}"
model = "scripted-model"
timeout_sec = {LLM_TIMEOUT_SEC}
max_retries = 1

[bot]
admins = ["900"]
msg_event_timeout_sec = 60

[bash]
enable = true
whitelist = ["^echo "]
timeout_sec = 10

[approval]
timeout_sec = 10

[mcp]
lazy_load = false
call_timeout_sec = 5
connect_timeout_sec = 10

[clock]
min_interval_sec = 1
default_timeout_sec = 30
misfire_grace_sec = 5

[onebot]
ws_url = "{onebot_url}"
api_timeout_sec = 5

[logs]
stats_sec = 2
""")
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(DEMO_MCP), "stdio"]}}}))
    (config / "commands.json").write_text(json.dumps({"commands": {"soak": "Answer the soak check: $args"}}))


@dataclass
class Sample:
    at: float
    rss_mb: float
    fds: int
    threads: int
    tasks: int


@dataclass
class BotProcess:
    config: Path
    data: Path
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: list[float] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    _log: IO[bytes] | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
        env.update(ANIA_CONFIG_DIR=str(self.config), ANIA_DATA_DIR=str(self.data), PYTHONPATH=str(ROOT))
        return env

    def start(self) -> None:
        self._log = self._log or self.log_path.open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "ania.cli", "serve"], env=self.env(), cwd=ROOT,
                                     stdout=self._log, stderr=self._log, start_new_session=True)
        self.starts.append(time.time())

    def kill9(self) -> None:
        """SIGKILL the bot (its MCP children go with its session) and wait for it."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        with_children_gone(self.proc.pid)

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM and wait: the bot sends what it is finishing, then exits 0."""
        if self.proc is None:
            return None
        self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            with_children_gone(self.proc.pid)
            if self._log is not None:
                self._log.close()

    def sample(self) -> None:
        """Resident memory, open files and threads by psutil; asyncio tasks from the bot's last stats line."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            p = psutil.Process(self.proc.pid)
            rss, fds, threads = p.memory_info().rss / 2**20, p.num_fds(), p.num_threads()
        except psutil.Error:
            return
        tasks = last_tasks(self.log_path)
        self.samples.append(Sample(time.time(), round(rss, 1), fds, threads, tasks))


def last_tasks(log_path: Path) -> int:
    """The asyncio task count of the newest stats line in the log (-1: none yet)."""
    with log_path.open("rb") as f:
        f.seek(max(0, log_path.stat().st_size - 20_000))
        tail = f.read().decode(errors="replace")
    found = STATS_LINE.findall(tail)
    return int(found[-1][0]) if found else -1


def with_children_gone(pid: int) -> None:
    """Kill what is left of the bot's process group (MCP servers, bash commands) after it died."""
    try:
        os.killpg(pid, 9)
    except OSError:
        pass


def run_cli(bot: BotProcess, *args: str, timeout: float = 120) -> tuple[int, str]:
    """`ania ARGS` against the soak's data directory: (exit code, stdout and stderr)."""
    done = subprocess.run([sys.executable, "-m", "ania.cli", *args], env=bot.env(), cwd=ROOT,
                          capture_output=True, timeout=timeout, check=False)
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")

