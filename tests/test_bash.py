"""The bash tool (G6): classification, real subprocesses in a temp workspace, limits and settings.

Shared helpers for tests/test_bash_*.py live here too (`tool`, `run`, `make_ctx`, `mode`, `procs_with`).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from core.errors import ConfigError, ToolError
from core.settings import BashSettings, Settings
from services.context import RunContext
from services.sandbox import bwrap as sandbox
from tests.conftest import run_context
from tools import bash as bash_module
from tools.bash import BashParams, BashTool, bash_tools

NEEDS_BWRAP = pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap (bwrap) does not work here")


@pytest.fixture
def make_ctx(make_services):
    async def make(settings: Settings | None = None, deadline: float | None = None) -> RunContext:
        return run_context(await make_services(settings or Settings()), "g:1", deadline=deadline)

    return make


@pytest.fixture(params=["off", pytest.param("bwrap", marks=NEEDS_BWRAP)])
def mode(request) -> str:
    """Run a test unsandboxed and, where bubblewrap works, sandboxed."""
    return request.param


@pytest.fixture
def fake_bwrap(monkeypatch) -> None:
    """Classification as with a working sandbox, without needing one (nothing is run)."""
    monkeypatch.setattr(bash_module, "probe", lambda: (True, True, ""))


def tool(tmp_path: Path, **kw) -> BashTool:
    kw.setdefault("sandbox", "off")
    return BashTool(BashSettings(**kw), tmp_path / "ws")


async def run(t: BashTool, ctx: RunContext, command: str) -> str:
    return await t.execute(t.parse({"command": command}), ctx)


def mode_secs(mode: str, secs: float) -> str:
    """A `sleep` length of the mode's own: the [off] and [bwrap] runs of one test may run at once on two
    xdist workers, and neither must see, or wait for, the other's processes."""
    return f"{secs + (1000 if mode == 'bwrap' else 0):g}"


def procs_with(token: str) -> list[int]:
    """Live (not zombie) `sleep` processes whose command line holds `token`, sandboxed ones included."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if args[0].rsplit(b"/", 1)[-1] == b"sleep" and token.encode() in b" ".join(args) and state != "Z":
            found.append(int(pid))
    return found


def wait_no_procs(token: str, within: float = 3.0) -> bool:
    end = time.monotonic() + within
    while procs_with(token) and time.monotonic() < end:
        time.sleep(0.05)
    return not procs_with(token)


# --- classification ---------------------------------------------------------------------------

SNEAKY = [
    "rm -rf x", "ls; rm -rf x", "ls && /bin/rm -rf x", "ls || rm -rf x", "ls | rm -rf x", "ls & rm -rf x",
    "ls\nrm -rf x", "echo $(rm -rf x)", 'echo "$(rm -rf x)"', "echo `rm -rf x`", "FOO=1 rm -rf x",
    "FOO='a b' BAR=2 rm -rf x", "(rm -rf x)", "sudo rm -rf x", "sudo -u root rm -rf x", "command rm -rf x",
    "exec rm -rf x", "env FOO=1 rm -rf x", "/usr/bin/env -i rm -rf x", "\\rm -rf x", "'rm' -rf x",
    "$'\\x72m' -rf x", "bash -c 'rm -rf x'", "sh -ec \"ls; rm -rf x\"", "eval 'rm -rf x'", "cat <(rm -rf x)",
    "if true; then rm -rf x; fi", "ls | xargs rm -f", "timeout 5 nice -n 3 rm -rf x", "2>/dev/null rm -rf x",
    "rm>out -rf x", "ls; 2>&1<<< y rm -rf x", "f() { rm -rf x; }", "function f { rm -rf x; }",
]


@pytest.mark.parametrize("command", SNEAKY)
def test_blacklist_catches_sneak_attempts(tmp_path: Path, command: str) -> None:
    t = tool(tmp_path, blacklist=[r"^rm\s"], whitelist=[r"^ls\b"])
    assert t.check(command) == ("refuse", r"^rm\s")


@pytest.mark.parametrize("command", ["echo rm -rf x", "grep 'a; rm -rf x' f", "echo \"rm -rf x\"", "rmdir x", "firm -rf"])
def test_blacklist_does_not_match_mere_mentions(tmp_path: Path, command: str) -> None:
    assert tool(tmp_path, blacklist=[r"^rm\s"]).classify(command) == "ask"


ALLOWED = ["ls", "ls -la", "ls -la sub 2>&1", "ls | ls -l", "(ls)", "ls # a comment", "ls >/dev/null", "ls 'a b'"]


@pytest.mark.parametrize("command", [*ALLOWED, "ls -la /tmp 2>&1", "ls $(ls)", "ls ~root", "ls /proc"])
def test_whitelist_allows_when_every_simple_command_matches(tmp_path: Path, fake_bwrap, command: str) -> None:
    assert tool(tmp_path, whitelist=[r"^ls\b"], sandbox="bwrap").classify(command) == "allow"


@pytest.mark.parametrize("command", ALLOWED)
def test_whitelist_allows_plain_workspace_commands_unsandboxed(tmp_path: Path, command: str) -> None:
    assert tool(tmp_path, whitelist=[r"^ls\b"]).classify(command) == "allow"


@pytest.mark.parametrize("command", [
    "ls; rm -rf /", "ls && cat x", "ls | sh", "ls $(cat x)", "ls `id`", "PATH=/tmp ls", "sudo ls",
    "ls 'unbalanced", "ls $(ls", "echo hi", "", "ls <<EOF\nx\nEOF", "ls $'a'", "ls \\\n-la", "ls # it's",
])
def test_whitelist_does_not_cover_other_commands(tmp_path: Path, fake_bwrap, command: str) -> None:
    assert tool(tmp_path, whitelist=[r"^ls\b"], sandbox="bwrap").classify(command) == "ask"


def test_blacklist_wins_over_whitelist_and_nothing_configured_asks(tmp_path: Path) -> None:
    assert tool(tmp_path, blacklist=[r"-rf"], whitelist=[r"^ls\b"]).classify("ls -rf") == "refuse"
    assert tool(tmp_path).classify("ls -la") == "ask"
    assert tool(tmp_path, blacklist=[r"^rm\s"]).classify("ls -la") == "ask"


async def test_approval_reason_only_when_asking(tmp_path: Path, make_ctx) -> None:
    t, ctx = tool(tmp_path, blacklist=[r"^rm\s"], whitelist=[r"^ls\b"]), await make_ctx()
    assert t.approval_reason(BashParams(command="cat a"), ctx) == "bash command not on the whitelist: cat a"
    assert t.approval_reason(BashParams(command="ls -la"), ctx) is None
    assert t.approval_reason(BashParams(command="rm -rf a"), ctx) is None  # refused at execute, no human


async def test_approval_reason_says_why_and_shows_a_bounded_command(tmp_path: Path, make_ctx) -> None:
    t, ctx = tool(tmp_path, whitelist=[r"^ls\b"]), await make_ctx()
    why = t.approval_reason(BashParams(command="ls <<EOF\nx\nEOF"), ctx)
    assert why and "could not be checked fully: a here-document (<<)" in why
    why = t.approval_reason(BashParams(command="ls ../config"), ctx)
    assert why and "`..`" in why and "unsandboxed" in why
    why = t.approval_reason(BashParams(command="ls " + "a" * 20000), ctx)
    assert why and len(why) < 600 and "longer than 8192 characters" in why


@pytest.mark.parametrize("key", ["blacklist", "whitelist"])
def test_invalid_regex_setting_names_the_setting_and_pattern(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        tool(tmp_path, **{key: [r"^ok$", "(unclosed"]})
    assert f"bash.{key}" in str(e.value) and "'(unclosed'" in str(e.value)


def test_bash_tools_only_when_enabled(tmp_path: Path) -> None:
    assert bash_tools(Settings(), tmp_path) == []
    [t] = bash_tools(Settings(bash=BashSettings(enable=True, sandbox="off")), tmp_path)
    assert isinstance(t, BashTool) and t.name == "bash" and t.side_effect
    assert t.workdir == tmp_path / "workspace"
    [t] = bash_tools(Settings(bash=BashSettings(enable=True, workdir=str(tmp_path / "elsewhere"))), tmp_path,
                     tmp_path / "config")
    assert t.workdir == tmp_path / "elsewhere" and tmp_path / "config" in t.hidden


# --- execution --------------------------------------------------------------------------------


async def test_runs_in_the_workdir_which_is_created(tmp_path: Path, make_ctx, mode: str) -> None:
    t = BashTool(BashSettings(sandbox=mode), tmp_path / "a" / "workspace")
    assert not t.workdir.exists()
    out = await run(t, await make_ctx(), "pwd; touch made")
    assert os.path.realpath(out) == os.path.realpath(tmp_path / "a" / "workspace")
    assert (t.workdir / "made").exists()


async def test_stdout_and_stderr_merged_in_order_and_exit_code(tmp_path: Path, make_ctx, mode: str) -> None:
    out = await run(tool(tmp_path, sandbox=mode), await make_ctx(), "echo a; echo b >&2; echo c; exit 3")
    assert out == "a\nb\nc\n[exit code 3]"
    assert await run(tool(tmp_path, sandbox=mode), await make_ctx(), "echo fine") == "fine"


async def test_no_output(tmp_path: Path, make_ctx) -> None:
    assert await run(tool(tmp_path), await make_ctx(), "true") == "(no output)"
    assert await run(tool(tmp_path), await make_ctx(), "false") == "(no output)\n[exit code 1]"


async def test_output_truncated_in_characters(tmp_path: Path, make_ctx) -> None:
    out = await run(tool(tmp_path), await make_ctx(), "printf 'é%.0s' {1..9000}; printf '\\xff'; exit 2")
    assert out == "é" * 8000 + "\n[output truncated: 8000 of 9001 characters shown]\n[exit code 2]"


async def test_invalid_utf8_is_replaced(tmp_path: Path, make_ctx) -> None:
    assert await run(tool(tmp_path), await make_ctx(), "printf 'a\\xffb'") == "a\ufffdb"


async def test_timeout_kills_the_process_group(tmp_path: Path, make_ctx, mode: str) -> None:
    t = tool(tmp_path, timeout_sec=0.5, sandbox=mode)
    out = await run(t, await make_ctx(), "echo started; sleep 30.101 & wait")
    assert out == "started\n[timed out after 0.5 s]"
    assert wait_no_procs("sleep 30.101")


async def test_run_deadline_shortens_the_timeout(tmp_path: Path, make_ctx) -> None:
    out = await run(tool(tmp_path, timeout_sec=30), await make_ctx(deadline=time.monotonic() + 0.5), "sleep 20")
    assert re.fullmatch(r"\(no output\)\n\[timed out after 0\.[3-5] s\]", out), out


async def test_background_jobs_do_not_outlive_the_command(tmp_path: Path, make_ctx, mode: str) -> None:
    out = await run(tool(tmp_path, sandbox=mode), await make_ctx(), "sleep 30.102 >/dev/null 2>&1 & echo done")
    assert out == "done"
    assert wait_no_procs("sleep 30.102")


async def test_refusal_names_the_pattern_and_runs_nothing(tmp_path: Path, make_ctx) -> None:
    t = tool(tmp_path, blacklist=[r"^rm\s"])
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep").write_text("x")
    with pytest.raises(ToolError) as e:
        await run(t, await make_ctx(), "ls && /bin/rm -f keep")
    assert 'blacklist pattern "^rm\\s"' in str(e.value) and "bash.blacklist" in str(e.value)
    assert (tmp_path / "ws" / "keep").exists()


async def test_the_command_gets_a_minimal_environment(tmp_path: Path, make_ctx, monkeypatch, mode: str) -> None:
    monkeypatch.setenv("ANIA_LLM__API_KEY", "sekrit-value")
    monkeypatch.setenv("OTHER_VAR", "other-value")
    monkeypatch.setenv("LANG", "C.UTF-8")
    out = await run(tool(tmp_path, sandbox=mode), await make_ctx(), "env")
    assert "sekrit-value" not in out and "other-value" not in out
    assert "LANG=C.UTF-8" in out and f"HOME={os.path.realpath(tmp_path / 'ws')}" in out
