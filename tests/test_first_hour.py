"""A newcomer's first hour, as tests: what the README says runs as written, the paths it names exist,
its snippets are the shipped examples (config.example/), and `make demo` starts and stops cleanly.

The layout test builds what a fresh clone looks like after `make demo` and `cp -r config.example config`
(a `.venv` next to `config/`) in a temp dir and runs the examples from there, relative paths and all.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ania.cli import build_parser
from ania.fakes.openai_server import Calls, Reply, load_script
from core.settings import load_settings, registry
from services.hooks.config import parse_hooks
from services.mcp.config import load_specs
from tests.mcp_servers.harness import time_spec
from tests.terminal_helpers import ROOT, Pty

README = (ROOT / "README.md").read_text()
EXAMPLES = ROOT / "config.example"
#: Paths under data/ that the README names, and what creates them.
DATA_PATHS = {"data/ania.db": "the first start", "data/checkpoints.db": "the first start",
              "data/workspace": "the bash tool", "data/clock.lock": "a bot's clock (test_clock_restart.py)",
              "data/studio.json": "make studio, while it runs (test_studio_threads.py)",
              "data/panel.token": "the panel's first start (test_panel_cli.py)",
              "data/panel.password": "ania panel --set-password (test_panel_cli.py)",
              "data/keyword-index": "the knowledge base's first write (test_knowledge_index.py)"}


def code_spans() -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", README))


def code_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def named_paths() -> set[str]:
    """Repository-relative paths the README names: in code spans, links and code blocks."""
    candidates = code_spans() | set(re.findall(r"\]\(([^)#]+)\)", README))
    candidates |= set(re.findall(r"(?<![\w/.])\.?/?(?:config|config\.example|data|docs|\.venv)/[\w./-]*", README))
    return {c.removeprefix("./") for c in candidates
            if re.fullmatch(r"(\./)?[\w.-]+(/[\w.-]*)+", c) and not c.startswith("/")}


def commands() -> list[str]:
    """Every `make ...` and `.venv/bin/ania ...` command in the README, without comments and env prefixes."""
    lines = [line for block in code_blocks("sh") for line in block.splitlines()] + list(code_spans())
    out = []
    for line in lines:
        line = line.split(" #")[0].strip()
        line = re.sub(r"^(?:[A-Z_]+=\S+\s+)+", "", line)  # VAR=value make chat
        if re.match(r"make \w|\.venv/bin/ania( |$)", line) and not re.search(r"[\[<]|\.\.\.", line):
            out.append(line)
    return sorted(set(out))


def test_every_path_the_readme_names_exists():
    paths = named_paths()
    assert {"config/ania.toml", "config/hooks.json", "config/mcp.json", "config/check-tool.sh"} <= paths
    for path in sorted(paths):
        if path.rstrip("/") == "config" or path.startswith("config/"):  # made by `cp -r config.example config`
            assert (EXAMPLES / path.removeprefix("config").lstrip("/")).exists(), path
        elif path.startswith("data"):
            assert path.rstrip("/") in {*DATA_PATHS, "data"}, f"{path}: nothing says what creates it"
        else:
            assert (ROOT / path).exists(), path


def test_every_readme_command_runs_as_written():
    cmds = commands()
    assert {"make demo", "make chat", "make test", ".venv/bin/ania sessions list"} <= set(cmds), cmds
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.M))
    parser = build_parser()
    for cmd in cmds:
        words = shlex.split(cmd)
        if words[0] == "make":
            assert words[1] in targets, cmd
            args = [w.removeprefix("ARGS=") for w in words[2:] if w.startswith("ARGS=")]
            ania_args = [words[1], *shlex.split(args[0])] if args and words[1] in ("chat", "demo") else []
        else:
            assert (ROOT / words[0]).exists(), cmd
            ania_args = words[1:]
        if ania_args:
            try:
                parsed = parser.parse_args(ania_args)
            except SystemExit as e:  # --help and --version exit 0; a bad command line exits 2
                assert e.code == 0, cmd
                continue
            if getattr(parsed, "script", None):
                load_script(ROOT / parsed.script)


def test_readme_snippets_are_the_shipped_examples():
    (toml,) = code_blocks("toml")
    example = tomllib.loads((EXAMPLES / "ania.toml").read_text())
    for section, values in tomllib.loads(toml).items():
        assert values.items() <= example[section].items(), section
    json_blocks = code_blocks("json")
    files = {p.name: json.loads(p.read_text()) for p in EXAMPLES.glob("*.json")}
    for block in json_blocks:
        assert json.loads(block) in files.values(), block


def test_example_config_is_complete_and_loads_without_a_warning(caplog):
    text = (EXAMPLES / "ania.toml").read_text()
    for key in registry():
        section, name = key.key.split(".")
        assert f"[{section}]" in text and re.search(rf"^#? ?{name} = ", text, re.M), key.key
    with caplog.at_level(logging.WARNING):
        settings = load_settings(EXAMPLES)
    assert caplog.messages == []
    assert settings.llm.model == "deepseek-chat" and settings.bot.admins == ["10001"]
    specs, errors = load_specs(EXAMPLES / "mcp.json")
    assert errors == {} and specs["time"].command == ".venv/bin/python"
    http, errors = load_specs(EXAMPLES / "mcp.http-example.json")
    assert errors == {} and http["docs"].transport == "streamable_http"
    table, warnings = parse_hooks((EXAMPLES / "hooks.json").read_text(), "hooks.json")
    assert warnings == [] and table["PreToolUse"][0].matches("bash")
    for script in EXAMPLES.glob("*script.json"):
        assert load_script(script)


@pytest.mark.parametrize(("command", "code"), [("ls -la", 0), ("rm -rf /", 2)])
def test_example_hook_blocks_rm_rf(command, code):
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "bash", "tool_input": {"command": command}})
    done = subprocess.run([str(EXAMPLES / "check-tool.sh")], input=payload, capture_output=True, text=True, timeout=30)
    assert done.returncode == code
    assert (done.stderr != "") == (code == 2)


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    """The layout after `make demo` and `cp -r config.example config` (the venv is the repository's)."""
    clone = tmp_path / "ania"
    clone.mkdir()
    (clone / ".venv").symlink_to(ROOT / ".venv")
    shutil.copytree(EXAMPLES, clone / "config.example")
    shutil.copytree(EXAMPLES, clone / "config")
    return clone


def clone_env(clone: Path) -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}


def test_the_mcp_example_runs_from_a_fresh_clone(fresh_clone):
    """The README's offline MCP demo: the example mcp.json (relative .venv path), the example hook on the
    MCP call, and the scripted model loading and calling the tool."""
    done = subprocess.run([".venv/bin/ania", "demo", "--script", "config.example/mcp-demo-script.json"],
                          input="what time is it?\n", cwd=fresh_clone, env=clone_env(fresh_clone),
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no warning, and the MCP server's own stderr is not on the terminal
    answer = done.stdout[done.stdout.index("The time MCP server says: {"):]
    assert '"timezone": "Etc/UTC"' in answer
    assert (fresh_clone / "data" / "checkpoints.db").exists() and (fresh_clone / "data" / "ania.db").exists()
    shown = subprocess.run([".venv/bin/ania", "sessions", "show", "f:local"], cwd=fresh_clone,
                           env=clone_env(fresh_clone), capture_output=True, text=True, timeout=60)
    assert "tool mcp__time__get_current_time: {" in shown.stdout


def test_mcp_server_stderr_goes_to_the_log_not_the_chat(fresh_clone):
    noisy = ("import runpy, sys; print('NOISE from the server', file=sys.stderr, flush=True); "
             f"sys.argv = ['demo', 'stdio']; runpy.run_path({str(ROOT / 'tests/mcp_servers/demo_server.py')!r}, "
             "run_name='__main__')")
    (fresh_clone / "config" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"noisy": {"command": sys.executable, "args": ["-c", noisy]}}}))
    quiet = subprocess.run([".venv/bin/ania", "demo"], input="hi\n", cwd=fresh_clone, env=clone_env(fresh_clone),
                           capture_output=True, text=True, timeout=90)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "echo: hi\n", "")
    logged = subprocess.run([".venv/bin/ania", "-v", "demo"], input="hi\n", cwd=fresh_clone, env=clone_env(fresh_clone),
                            capture_output=True, text=True, timeout=90)
    assert "ania: INFO services.mcp.transport: MCP server noisy (stderr): NOISE from the server" in logged.stderr


def test_make_demo_answers_and_ctrl_c_leaves_nothing_running(tmp_path):
    script = tmp_path / "slow.json"
    script.write_text(json.dumps([{"reply": "first"}, {"reply": "never", "delay": 60}]))
    (tmp_path / "config").mkdir()
    env = {**clone_env(tmp_path), "ANIA_CONFIG_DIR": str(tmp_path / "config"), "ANIA_DATA_DIR": str(tmp_path / "data")}
    pty = Pty(["make", "-s", "demo", f"ARGS=--script {script}"], env)
    try:
        pty.expect("/quit or Ctrl-D quits.", timeout=60)
        pty.send("hi\n")
        pty.expect("ania> first")
        pty.send("and now?\n")
        pty.expect("thinking (")
        pty.send("\x03")
        pty.wait()
        tail = pty.text.split("thinking (")[-1]
        assert "ania: interrupted\n" in tail and "Traceback" not in pty.text
        assert pty.session_processes() == [], "something outlived Ctrl-C"
    finally:
        pty.close()


def test_two_demos_at_once_do_not_collide(tmp_path):
    """The demo model takes a free port inside the process: no leftover server, no 'Address already in use'."""
    procs = []
    for n in (1, 2):
        (tmp_path / f"c{n}").mkdir()
        env = {**clone_env(tmp_path), "ANIA_CONFIG_DIR": str(tmp_path / f"c{n}"), "ANIA_DATA_DIR": str(tmp_path / f"d{n}"),
               "PYTHONPATH": str(ROOT)}
        procs.append(subprocess.Popen([sys.executable, "-m", "ania.cli", "demo"], stdin=subprocess.PIPE, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT))
    outs = [p.communicate(f"hello {n}\n", timeout=90) for n, p in enumerate(procs)]
    assert outs == [("echo: hello 0\n", ""), ("echo: hello 1\n", "")]


async def test_loading_one_tool_says_tool(scripted_llm, make_chat, tmp_path):
    from tests.conftest import make_settings

    (tmp_path / "config").mkdir(exist_ok=True)
    (tmp_path / "config" / "mcp.json").write_text(json.dumps({"mcpServers": {"time": time_spec()}}))
    scripted_llm.script([Calls([("mcp_load", {"names": ["mcp__time__get_current_time"]})]), Reply("ok")])
    chat = await make_chat(make_settings(scripted_llm))
    await chat.say("f:u1", "u1", "load it")
    result = scripted_llm.requests[-1].messages[-1]["content"]
    assert result.startswith("Loaded 1 tool: mcp__time__get_current_time.")


def test_make_setup_says_what_it_installs_and_shows_pips_progress():
    """The first `make demo` was silent for 80-112 s (pip --quiet). Read from `make -n` (nothing installed)."""
    done = subprocess.run(["make", "-n", "-B", "setup", "PYTHON=python3.11"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    recipe = done.stdout
    assert 'echo "make setup: creating .venv with python3.11"' in recipe
    assert "installing Ania's dependencies into .venv (about 2 minutes the first time)" in recipe
    (install,) = [line for line in recipe.splitlines() if "-e '.[dev]'" in line]
    assert "--quiet" not in install and "--progress-bar $bar" in install  # pip's progress: bars at a terminal
    assert "if [ -t 1 ]; then bar=on; else bar=off; fi" in recipe  # ... one line per package in CI's log
    assert 'echo "make setup: ready (.venv/bin/ania)"' in recipe
