"""A cluster of real processes for the tests: one `ania serve --role gateway` on the OneBot fake and N
`--role worker`, sharing one Postgres database (tests/pg_helpers.py) and one config directory, each with its
own data directory (as on separate machines)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from tests.test_serve import ROOT, env_for

STALL_SEC = "2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    llm: Any
    tmp: Path
    pg_url: str
    onebot_url: str
    relay_port: int = field(default_factory=free_port)
    gateway: asyncio.subprocess.Process | None = None
    workers: list[asyncio.subprocess.Process] = field(default_factory=list)
    #: Each process its own config directory (as on separate machines); else one shared.
    own_config: bool = False

    def env(self, name: str, **extra: str) -> dict[str, str]:
        settings = {"ANIA_CLUSTER__POSTGRES_URL": self.pg_url, "ANIA_CLUSTER__RELAY_LISTEN": f"127.0.0.1:{self.relay_port}",
                    "ANIA_CLUSTER__RELAY_URL": f"ws://127.0.0.1:{self.relay_port}/relay",
                    "ANIA_CLUSTER__STALL_SEC": STALL_SEC, "ANIA_ONEBOT__WS_URL": self.onebot_url}
        env = env_for(self.llm, self.tmp, **(settings | extra))
        env["ANIA_DATA_DIR"] = str(self.tmp / f"data-{name}")
        if self.own_config:
            (self.tmp / f"config-{name}").mkdir(exist_ok=True)
            env["ANIA_CONFIG_DIR"] = str(self.tmp / f"config-{name}")
        return env

    async def spawn(self, role: str, name: str, **extra: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ania.cli", "serve", "--role", role, env=self.env(name, **extra), cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=open(self.tmp / f"{name}.log", "wb"))  # noqa: ASYNC230

    async def start(self, workers: int = 2, **extra: str) -> Cluster:
        self.gateway = await self.spawn("gateway", "gateway", **extra)
        for i in range(workers):
            self.workers.append(await self.spawn("worker", f"worker{i}", **extra))
        return self

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def rows(self, sql: str, args: list[Any] | None = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            return list(conn.execute(sql, args or []).fetchall())

    async def close(self) -> None:
        """The workers first, then the gateway (as an operator stops a cluster: a worker's last sends still
        reach QQ through the gateway); a process that does not stop within 30 s is killed."""
        for group in (self.workers, [self.gateway]):
            procs = [p for p in group if p is not None and p.returncode is None]
            for p in procs:
                with contextlib.suppress(ProcessLookupError):  # gone already (a test's own SIGKILL)
                    p.terminate()
            for p in procs:
                try:
                    await asyncio.wait_for(p.wait(), 30)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):  # it ended just now
                        p.kill()
                    await p.wait()
