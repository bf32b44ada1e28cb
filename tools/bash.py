"""The bash tool (G6): run a command line with bash in the workspace, behind a blacklist, a whitelist,
a human and (by default) a bubblewrap sandbox.

`check`: refuse when a `bash.blacklist` regex matches (re.search) the line or any simple command in
it; allow when every simple command matches some `bash.whitelist` regex; ask otherwise (the gate
pipeline reads `approval_reason` and asks a human, or runs it when `approval.enable` is off). The
verdict is computed once per command line (an LRU cache), so approval, routing and execute agree.

Fail closed where unsure: tools/bash_parse.py splits the line exactly where it can and records a
doubt where it cannot (here-documents, `$'...'`, backticks, comments with quotes, eval/source/sh -c,
computed command names, unbalanced input, more than 500 commands, deep nesting, lines over 8 KB). A
doubtful line is never whitelisted; with `approval.enable` off and a blacklist set it is refused,
since the blacklist cannot be sure it saw every command. Whitelist patterns match each simple
command as written (`^ls\\b` allows `ls -la`, not `ls; rm x` nor `PATH=/tmp ls`); anchor them at
both ends, `^ls\\b` also allows `ls > ~/.bashrc`. Without the sandbox, a line naming /proc, a `..`
component, a path outside the workspace, `~`, or a `$`/backtick expansion is never whitelisted.

Regexes cannot stop everything (code built at run time, scripts written then run, `python -c`,
`find -exec`, whatever a whitelisted program can do itself): the sandbox (services/sandbox.py) is
what bounds the damage to the workspace. Commands get a minimal environment, never the bot's, and
resource limits (`bash.max_*`, services/sandbox/limits.py): processes, memory, file size, CPU time.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from core.errors import ConfigError, ToolError
from core.settings import BashSettings, Settings
from core.tool import AnyTool, Tool
from services.context import RunContext
from services.sandbox import limits as rlimits
from services.sandbox.bwrap import bot_dirs, bwrap_args, probe
from services.sandbox.run import MAX_OUTPUT_CHARS, run_command
from tools.bash_parse import REDIR, analyse, parse_line, split_commands, words  # noqa: F401 - re-exported

log = logging.getLogger(__name__)

Verdict = Literal["refuse", "allow", "ask"]
SandboxMode = Literal["bwrap", "off", "broken"]

BASH_DESCRIPTION = (
    "Run a shell command line with bash in the bot's workspace directory and return its output "
    f"(stdout and stderr merged, at most {MAX_OUTPUT_CHARS} characters). Non-zero exit codes are reported. "
    "Commands have limits on time, processes, memory, file size and CPU time; background processes are "
    "stopped when the command finishes. "
    "It may run in a sandbox: only the workspace is writable and there may be no network. "
    "Some commands are refused by policy and others need a human's approval before they run; "
    "write plain simple commands (no here-documents, eval or backticks) so they can be checked."
)
REFUSED = (
    'bash command refused: it matches the blacklist pattern "{pattern}" (bash.blacklist). '
    "Do not try to work around the policy; tell the user what you wanted to run."
)
UNSURE_REFUSED = (
    "bash command refused: it could not be checked fully against bash.blacklist ({doubt}) and no human "
    "approves commands (approval.enable is off). Write it as plain simple commands, or tell the user."
)
LIMITS_BROKEN = "bash is unavailable: {why}. An admin must change this."
SANDBOX_BROKEN = (
    'bash is unavailable: bash.sandbox = "bwrap" requires bubblewrap, which does not work on this host '
    '({why}). An admin must install bubblewrap or change bash.sandbox.'
)
ASK_REASON = "bash command not on the whitelist: {command}"
ASK_NOTE = "\n(not whitelisted: {note})"
SHOWN_COMMAND = 300  # characters of the command shown in the reason (the gate shows the arguments)
CACHE_SIZE = 64

_SAFE_FILES = frozenset(("/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero"))
_RELATIVE = re.compile(r"[\w.@%+,][\w.@%+,-]*(/[\w.@%+,-]*)*")
_DOT_GLOB = re.compile(r"\.[*?\[]|[*?\]]\.")


class BashParams(BaseModel):
    command: str = Field(
        description="The command line to run, e.g. `ls -la` or `grep -rn TODO src | head -20`. "
        "It runs non-interactively (no stdin) in the workspace directory."
    )


class Decision(NamedTuple):
    verdict: Verdict
    pattern: str | None = None  # the blacklist pattern of a refusal
    doubt: str = ""  # why the line could not be checked fully ("" when it could)
    note: str = ""  # why a line that could be checked is not whitelisted anyway


def _compile(key: str, patterns: list[str]) -> list[re.Pattern[str]]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as e:
            raise ConfigError(f"invalid regex in {key}: {p!r} ({e})") from None
    return out


def sandbox_mode(setting: str) -> tuple[SandboxMode, str]:
    """What `bash.sandbox` comes to on this host, and why bwrap does not work; logs once per tool."""
    if setting == "off":
        return "off", ""
    works, _, why = probe()
    if works:
        return "bwrap", ""
    if setting == "auto":
        log.warning('bash runs UNSANDBOXED: bubblewrap does not work here (%s); install it, or set '
                    'bash.sandbox = "off" to accept this', why)
        return "off", why
    log.error('bash.sandbox = "bwrap" but bubblewrap does not work here (%s): every bash call is refused', why)
    return "broken", why


def outside_workspace(segments: tuple[str, ...], workdir: Path) -> str:
    """Why an unsandboxed line may reach beyond the workspace ("" when it stays inside, as far as
    its words show: a symlink in the workspace can still point out)."""
    root = os.path.realpath(workdir)
    for seg in segments:
        if "/proc" in seg or ".." in seg:
            return "it names /proc or a `..` path"
        for raw, val in words(seg):
            redirect = REDIR.fullmatch(raw)
            target = re.sub(r"['\"\\]", "", redirect.group(2)) if redirect else val
            if "$" in raw or "`" in raw:
                return "it expands variables or commands"
            if target.startswith("~") or _DOT_GLOB.search(raw):
                return "it names a home directory or a glob that may match `..`"
            if target.startswith("/"):
                real = os.path.realpath(target)
                if target not in _SAFE_FILES and real != root and not real.startswith(root + os.sep):
                    return f"it names {target[:80]}, outside the workspace"
            elif "/" in target and not _RELATIVE.fullmatch(target):
                return f"it names {target[:80]}, which may be a path outside the workspace"
    return ""


def resource_limits(settings: BashSettings) -> tuple[rlimits.Limits, str]:
    """The limits commands run with, and why every call is refused ("" when none is). Like
    `bash.sandbox = "auto"`: a default limit that cannot be applied here is dropped with one warning;
    one the operator set is required, and bash is refused without it (fail closed)."""
    limits = rlimits.Limits(settings.max_processes, settings.max_memory_mb, settings.max_file_mb,
                            settings.max_cpu_sec)
    names, why = rlimits.unenforceable(limits)
    if not names:
        return limits, ""
    if asked := [n for n in names if n in settings.model_fields_set]:
        log.error("bash: %s; every bash call is refused", why)
        return limits, f"{why}. Set {', '.join(f'bash.{n} = 0' for n in asked)} to run without it"
    log.warning("bash: %s; commands run WITHOUT it (set %s to require it, or 0 to accept this)", why,
                " and ".join(f"bash.{n}" for n in names))
    return dataclasses.replace(limits, **dict.fromkeys(names, 0)), ""


class BashTool(Tool[BashParams, RunContext]):
    name = "bash"
    description = BASH_DESCRIPTION
    params = BashParams
    side_effect = True

    def __init__(self, settings: BashSettings, default_workdir: Path, hide: Iterable[Path] = ()) -> None:
        """`hide`: the bot's data and config dirs, kept out of the sandbox should a system dir hold them."""
        self.settings = settings
        self.workdir = Path(settings.workdir).expanduser() if settings.workdir else default_workdir
        self.blacklist = _compile("bash.blacklist", settings.blacklist)
        self.whitelist = _compile("bash.whitelist", settings.whitelist)
        self.mode, self.sandbox_problem = sandbox_mode(settings.sandbox)
        self.limits, self.limits_problem = resource_limits(settings)
        #: The bot's own dirs the sandbox hides (bwrap's tmpfs over them).
        self.hidden = bot_dirs(default_workdir.parent, *hide)
        self.decide = functools.lru_cache(maxsize=CACHE_SIZE)(self._decide)

    @property
    def sandboxed(self) -> bool:
        return self.mode == "bwrap"

    def _decide(self, command: str) -> Decision:
        """The verdict on one line; cached by `decide`, so it is computed once per call."""
        a = parse_line(command)
        for pat in self.blacklist:
            if any(pat.search(v) for v in a.views):
                return Decision("refuse", pat.pattern)
        if a.doubts:
            return Decision("ask", doubt="; ".join(a.doubts))
        if not (self.whitelist and a.segments and all(any(p.search(s) for p in self.whitelist) for s in a.segments)):
            return Decision("ask")
        if not self.sandboxed and (note := outside_workspace(a.segments, self.workdir)):
            return Decision("ask", note=f"{note}, and bash runs unsandboxed")
        return Decision("allow")

    def check(self, command: str) -> tuple[Verdict, str | None]:
        """The verdict and, for a refusal, the blacklist pattern that matched."""
        d = self.decide(command)
        return d.verdict, d.pattern

    def classify(self, command: str) -> Verdict:
        return self.decide(command).verdict

    def approval_reason(self, args: BashParams, ctx: RunContext) -> str | None:
        d = self.decide(args.command)
        if d.verdict != "ask" or self.mode == "broken" or self.limits_problem:
            return None  # refused at execute, no human to bother
        shown = args.command if len(args.command) <= SHOWN_COMMAND else args.command[:SHOWN_COMMAND] + " …"
        note = f"it could not be checked fully: {d.doubt}" if d.doubt else d.note
        return ASK_REASON.format(command=shown) + (ASK_NOTE.format(note=note) if note else "")

    async def execute(self, args: BashParams, ctx: RunContext) -> str:
        if self.mode == "broken":
            raise ToolError(SANDBOX_BROKEN.format(why=self.sandbox_problem))
        if self.limits_problem:
            raise ToolError(LIMITS_BROKEN.format(why=self.limits_problem))
        d = self.decide(args.command)
        if d.verdict == "refuse":
            raise ToolError(REFUSED.format(pattern=d.pattern))
        if d.doubt and self.blacklist and not ctx.services.settings.approval.enable:
            raise ToolError(UNSURE_REFUSED.format(doubt=d.doubt[:200]))
        timeout = self.settings.timeout_sec
        remaining = ctx.remaining()
        if remaining is not None:
            timeout = max(0.1, min(timeout, remaining))
        sandbox = None
        if self.sandboxed:
            self.workdir.mkdir(parents=True, exist_ok=True)
            sandbox = bwrap_args(self.workdir, network=self.settings.network, hide=self.hidden,
                                 disable_userns=probe()[1], tmp_mb=self.settings.max_memory_mb // 2)
        return await run_command(args.command, self.workdir, timeout, sandbox, self.limits)


def bash_tools(settings: Settings, data_dir: Path, config_dir: Path | None = None) -> list[AnyTool]:
    """The bash tool when `bash.enable` is on, else nothing (it is then never offered)."""
    if not settings.bash.enable:
        return []
    return [BashTool(settings.bash, data_dir / "workspace", [data_dir, *([config_dir] if config_dir else [])])]
