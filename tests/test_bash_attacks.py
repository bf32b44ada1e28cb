"""A hostile group member's probe of the bash tool, each hole first, then more of its family.

Policy of the probe: blacklist `^rm\\s`, `curl`, `shutdown`; whitelist `^ls\\b`, `^cat\\b`, `^echo\\b`.
A sentinel directory `x` in the workspace must survive every attack.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.errors import ToolError
from core.settings import ApprovalSettings, Settings
from tests.test_bash import make_ctx, run, tool  # noqa: F401 - make_ctx is a fixture
from tools.bash import BashParams, BashTool
from tools.bash_parse import MAX_SEGMENTS

BLACK = [r"^rm\s", "curl", "shutdown"]
WHITE = [r"^ls\b", r"^cat\b", r"^echo\b"]
APPROVAL_OFF = Settings(approval=ApprovalSettings(enable=False))


def probe_tool(tmp_path: Path, **kw) -> BashTool:
    t = tool(tmp_path, blacklist=BLACK, whitelist=WHITE, **kw)
    (t.workdir / "x").mkdir(parents=True, exist_ok=True)
    (t.workdir / "x" / "sentinel").write_text("keep")
    return t


def bash_deletes_sentinel(tmp_path: Path, line: str) -> bool:
    """Whether plain bash really runs the hidden `rm -rf x` of `line` (the attack is real)."""
    ws = tmp_path / "plain"
    (ws / "x").mkdir(parents=True)
    subprocess.run(["/bin/bash", "-c", line], cwd=ws, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    return not (ws / "x").exists()


async def assert_refused_with_approval_off(t: BashTool, make_ctx, line: str) -> str:  # noqa: F811
    with pytest.raises(ToolError) as e:
        await run(t, await make_ctx(APPROVAL_OFF), line)
    assert (t.workdir / "x" / "sentinel").exists()
    return str(e.value)


# --- 1. the whitelist walked around by quoting ------------------------------------------------

QUOTING = [
    "ls $'\\'' ; rm -rf x ; ls '\\'",
    "ls #'\nrm -rf x\n#'",
    "cat <<ls\nls '\nls\nrm -rf x\ncat <<ls\n'\nls",
]
QUOTING_FAMILY = [
    'ls #"\nrm -rf x\n#"', "ls # \\\nrm -rf x", "ls \\\n#'\nrm -rf x\n#'", "ls;#'\nrm -rf x\n#'",
    "cat <<-ls\n\tls '\n\tls\nrm -rf x\ncat <<ls\n'\nls", "cat <<'ls'\nls \"\nls\nrm -rf x\necho \"",
    "ls `echo '`; rm -rf x; echo '`'", "echo ${x:-'}'}; rm -rf x; echo '}'", "ls $'\\x27\\'' ; rm -rf x ; ls '\\'",
    "echo $(echo ')'); rm -rf x; echo ')'", "ls $\"\\\"\" ; rm -rf x",
]
#: Lines that look like those but are one harmless command for bash too: whitelisting them is right.
LOOKALIKES = ["ls '\\''; rm -rf x; ls '\\'", "ls \"'; rm -rf x; echo '\"", "echo '#'; echo \\#' rm -rf x '"]


@pytest.mark.parametrize("line", QUOTING + QUOTING_FAMILY)
async def test_quoting_tricks_are_never_whitelisted(tmp_path: Path, make_ctx, line: str) -> None:  # noqa: F811
    t = probe_tool(tmp_path)
    assert t.classify(line) != "allow"
    if t.classify(line) == "ask":  # a human sees it, told why
        assert "bash command not on the whitelist" in (t.approval_reason(BashParams(command=line), await make_ctx()) or "")


@pytest.mark.parametrize("line", QUOTING + QUOTING_FAMILY)
async def test_quoting_tricks_are_refused_without_approval(tmp_path: Path, make_ctx, line: str) -> None:  # noqa: F811
    t = probe_tool(tmp_path)
    await assert_refused_with_approval_off(t, make_ctx, line)


@pytest.mark.parametrize("line", QUOTING + QUOTING_FAMILY)
def test_the_quoting_attacks_are_real(tmp_path: Path, line: str) -> None:
    assert bash_deletes_sentinel(tmp_path, line)


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_are_one_command_as_for_bash(tmp_path: Path, line: str) -> None:
    assert probe_tool(tmp_path).classify(line) == "allow"
    assert not bash_deletes_sentinel(tmp_path, line)


# --- 2. too many simple commands --------------------------------------------------------------


async def test_a_long_list_of_commands_does_not_hide_the_last(tmp_path: Path, make_ctx) -> None:  # noqa: F811
    t = probe_tool(tmp_path)
    line = "true;" * 600 + "rm -rf x"
    assert t.check(line) == ("refuse", r"^rm\s")
    assert "^rm\\s" in await assert_refused_with_approval_off(t, make_ctx, line)


@pytest.mark.parametrize("line", [
    "true;" * 5000 + "rm -rf x",  # over 8 KB: not analysed, the blacklist still sees its pieces
    "true;" * 5000 + "/bin/r? -rf x",  # over 8 KB, nothing matches: refused as not checkable
    "true;" * 600 + "$X -rf x",
])
async def test_more_of_the_same_is_refused_without_approval(tmp_path: Path, make_ctx, line: str) -> None:  # noqa: F811
    await assert_refused_with_approval_off(probe_tool(tmp_path), make_ctx, line)


def test_many_whitelisted_commands_are_not_whitelisted_at_once(tmp_path: Path) -> None:
    t = probe_tool(tmp_path)
    assert t.classify("ls;" * (MAX_SEGMENTS - 1)) == "allow"
    assert t.classify("ls;" * (MAX_SEGMENTS + 1)) == "ask"


async def test_a_sure_line_without_blacklist_hits_still_runs_with_approval_off(tmp_path: Path, make_ctx) -> None:  # noqa: F811
    t = probe_tool(tmp_path)
    assert await run(t, await make_ctx(APPROVAL_OFF), "mkdir -p y && echo made") == "made"


# --- 3. one line freezing every session ----------------------------------------------------------


async def test_a_100kb_line_with_300_unclosed_substitutions_is_judged_once(tmp_path: Path, make_ctx) -> None:  # noqa: F811
    t, line = probe_tool(tmp_path), "echo " + "$(" * 300 + "a" * 100_000
    ctx = await make_ctx(APPROVAL_OFF)
    assert t.check(line) == ("ask", None)
    assert "longer than 8192" in (t.approval_reason(BashParams(command=line), await make_ctx()) or "")
    with pytest.raises(ToolError):
        await run(t, ctx, line)
    assert t.decide.cache_info().misses == 1


@pytest.mark.parametrize("line", [
    "$(" * 2000 + "ls", "$(" * 2000 + "ls" + ")" * 2000, "echo " + "\"$(" * 1300, "(" * 4000 + "ls" + ")" * 4000,
    "echo " + "${x:-" * 1500, "ls " + "`\\`" * 2000, "ls " + "<(" * 3000,
])
def test_deep_nesting_is_judged_without_recursion(tmp_path: Path, line: str) -> None:
    t = probe_tool(tmp_path)
    assert t.classify(line) == "ask"
    assert t.decide(line).doubt


async def test_the_verdict_is_computed_once_per_line(tmp_path: Path, make_ctx, monkeypatch) -> None:  # noqa: F811
    from tools import bash as bash_module
    calls: list[str] = []
    real = bash_module.parse_line
    monkeypatch.setattr(bash_module, "parse_line", lambda line: calls.append(line) or real(line))
    t, ctx = probe_tool(tmp_path), await make_ctx()
    for _ in range(3):
        t.approval_reason(BashParams(command="cat a"), ctx)
        t.check("cat a")
    assert calls == ["cat a"]


# --- 4. secrets one `cat` away (unsandboxed; tests/test_bash_sandbox.py runs them sandboxed) ---------

OUTSIDE = [
    "cat /proc/$PPID/environ", "cat ../../config/ania.toml", "cat /proc/self/environ", "cat /etc/passwd",
    "cat ~root/.bashrc", "cat ${PWD%/*}/config/ania.toml", "cat $(echo ..)/x", "cat -f/etc/passwd",
    "cat .*/config/ania.toml", "cat a/../../b", "cat `echo /`etc/passwd", "cat < /etc/passwd",
    "ls 2>/etc/x", "cat --file=/etc/passwd", "cat '/e'tc/passwd", "cat \\/etc/passwd", "cat $HOME/../x",
]


@pytest.mark.parametrize("line", OUTSIDE)
def test_unsandboxed_paths_outside_the_workspace_are_never_whitelisted(tmp_path: Path, line: str) -> None:
    assert probe_tool(tmp_path).classify(line) == "ask"


def test_unsandboxed_absolute_paths_inside_the_workspace_are_whitelisted(tmp_path: Path) -> None:
    t = probe_tool(tmp_path)
    assert t.classify(f"cat {t.workdir}/x/sentinel") == "allow"
    assert t.classify("cat x/sentinel 2>/dev/null") == "allow"


async def test_unsandboxed_secrets_are_not_in_the_environment(tmp_path: Path, make_ctx, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv("ANIA_LLM__API_KEY", "sk-attack-probe")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-attack-probe")
    out = await run(probe_tool(tmp_path), await make_ctx(), "env; cat /proc/$$/environ | tr '\\0' '\\n'")
    assert "attack-probe" not in out
