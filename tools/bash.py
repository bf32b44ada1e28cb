"""The bash tool (G6): run a command line with bash in the workspace, behind a blacklist, a whitelist and a human.

`classify`: refuse when a `bash.blacklist` regex matches (re.search) the line or any simple command in
it; allow when every simple command matches some `bash.whitelist` regex; ask otherwise (the gate
pipeline reads `approval_reason` and asks a human, or runs it when `approval.enable` is off).

Blacklist: the line is split, quote-aware, at `;`, `&`, `&&`, `||`, `|`, newlines and `( )`, and the
bodies of `$(...)`, backticks, `<(...)`, `>(...)`, `bash -c '...'` (any shell's `-c`) and `eval` are
split again. Each simple command is matched as written and normalized: leading `VAR=value` and
redirections dropped, wrappers (`sudo`, `env`, `command`, `exec`, `nohup`, `nice`, `timeout`, `xargs`,
`time`, `if`, `do`, ...) dropped with their options, the command word unquoted (`\\rm`, `'rm'`,
`$'\\x72m'`) and without its directory (`/bin/rm`). So `ls; rm -rf x`, `ls && /bin/rm -rf x`,
`echo $(rm -rf x)`, `FOO=1 sudo -u root rm -rf x` and `bash -c "rm -rf x"` all meet `^rm\\s`. It errs
towards finding too much (text after `#` and here-documents are matched too).
Whitelist: each simple command is matched as written, so `^ls\\b` allows `ls -la` but not
`ls; rm -rf /`, `PATH=/tmp ls` or `ls $(rm x)`; a line that does not parse is never whitelisted.
Anchor whitelist patterns at both ends: `^ls\\b` also allows `ls > ~/.bashrc`.

What regexes cannot stop (the approval and an unprivileged, containerized bot are the protection):
code built at run time (`eval "$(echo cm0gLXJmIHg= | base64 -d)"`, `X=rm; $X -rf x`, globs such as
`/bin/r?`, `${IFS}` tricks); scripts written to a file and run later (`echo 'rm -rf x' > a.sh; bash a.sh`);
aliases and functions from sourced files, Makefiles, git hooks; other interpreters and programs that
run commands (`python -c`, `perl -e`, `node -e`, `awk 'BEGIN{system(..)}'`, `find -exec`, `env -S`,
`git -c core.pager=...`); whatever a whitelisted program can do by itself.

`ANIA_*` environment variables (the bot's settings, secrets included) are not passed to the command.
Background processes it starts are killed with its process group when it finishes.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from services.config import BashSettings, ConfigError, Settings
from services.processes import kill_group
from tools.base import Tool, ToolError
from tools.bash_parse import analyse, split_commands  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from tools.context import RunContext

Verdict = Literal["refuse", "allow", "ask"]

MAX_OUTPUT_CHARS = 8000
_READ_CHUNK = 65536

BASH_DESCRIPTION = (
    "Run a shell command line with bash in the bot's workspace directory and return its output "
    f"(stdout and stderr merged, at most {MAX_OUTPUT_CHARS} characters). Non-zero exit codes are reported. "
    "Commands have a time limit; background processes are stopped when the command finishes. "
    "Some commands are refused by policy and others need a human's approval before they run."
)
REFUSED = (
    'bash command refused: it matches the blacklist pattern "{pattern}" (bash.blacklist). '
    "Do not try to work around the policy; tell the user what you wanted to run."
)
ASK_REASON = "bash command not on the whitelist: {command}"


class BashParams(BaseModel):
    command: str = Field(
        description="The command line to run, e.g. `ls -la` or `grep -rn TODO src | head -20`. "
        "It runs non-interactively (no stdin) in the workspace directory."
    )


def _compile(key: str, patterns: list[str]) -> list[re.Pattern[str]]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as e:
            raise ConfigError(f"invalid regex in {key}: {p!r} ({e})") from None
    return out


class BashTool(Tool[BashParams]):
    name = "bash"
    description = BASH_DESCRIPTION
    params = BashParams
    side_effect = True

    def __init__(self, settings: BashSettings, default_workdir: Path) -> None:
        self.settings = settings
        self.workdir = Path(settings.workdir).expanduser() if settings.workdir else default_workdir
        self.blacklist = _compile("bash.blacklist", settings.blacklist)
        self.whitelist = _compile("bash.whitelist", settings.whitelist)

    def check(self, command: str) -> tuple[Verdict, str | None]:
        """The verdict and, for a refusal, the blacklist pattern that matched."""
        segs, views, ok = analyse(command)
        for pat in self.blacklist:
            if any(pat.search(v) for v in views):
                return "refuse", pat.pattern
        if self.whitelist and ok and segs and all(any(p.search(s) for p in self.whitelist) for s in segs):
            return "allow", None
        return "ask", None

    def classify(self, command: str) -> Verdict:
        return self.check(command)[0]

    def approval_reason(self, args: BashParams, ctx: "RunContext") -> str | None:
        return ASK_REASON.format(command=args.command) if self.classify(args.command) == "ask" else None

    async def execute(self, args: BashParams, ctx: "RunContext") -> str:
        verdict, pattern = self.check(args.command)
        if verdict == "refuse":
            raise ToolError(REFUSED.format(pattern=pattern))
        timeout = self.settings.timeout_sec
        remaining = ctx.remaining()
        if remaining is not None:
            timeout = max(0.1, min(timeout, remaining))
        return await run_command(args.command, self.workdir, timeout)


def bash_tools(settings: Settings, data_dir: Path) -> list[Tool]:
    """The bash tool when `bash.enable` is on, else nothing (it is then never offered)."""
    if not settings.bash.enable:
        return []
    return [BashTool(settings.bash, data_dir / "workspace")]


# --- running ----------------------------------------------------------------------------------


class _Output:
    """Decodes output as it arrives, keeps the first `limit` characters and counts them all."""

    def __init__(self, limit: int) -> None:
        self.limit, self.total, self._kept_len = limit, 0, 0
        self.kept: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self.limit - self._kept_len
        if room > 0 and text:
            self.kept.append(text[:room])
            self._kept_len += len(self.kept[-1])

    def text(self) -> str:
        body = "".join(self.kept)
        if self.total > self.limit:
            body += f"\n[output truncated: {self.limit} of {self.total} characters shown]"
        return body




async def run_command(command: str, cwd: Path, timeout: float) -> str:
    """Run `command` with bash in its own process group; the text the model reads."""
    cwd.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("ANIA_")}
    proc = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
        executable="/bin/bash" if os.path.exists("/bin/bash") else None,
    )
    assert proc.stdout is not None
    out = _Output(MAX_OUTPUT_CHARS)

    async def pump() -> None:
        while chunk := await proc.stdout.read(_READ_CHUNK):  # type: ignore[union-attr]
            out.feed(chunk)

    reader = asyncio.create_task(pump())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
        finally:
            kill_group(proc.pid)  # background jobs go too, on every path
        with contextlib.suppress(TimeoutError):  # EOF follows once the group is gone
            await asyncio.wait_for(reader, 2.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 5.0)
    finally:
        reader.cancel()
    out.feed(b"", final=True)
    lines = [out.text().rstrip("\n") or "(no output)"]
    if timed_out:
        lines.append(f"[timed out after {round(timeout, 1):g} s]")
    elif proc.returncode:
        lines.append(f"[exit code {proc.returncode}]")
    return "\n".join(lines)
