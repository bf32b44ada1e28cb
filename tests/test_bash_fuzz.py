"""The splitter against bash itself: random lines built from quoting and operator fragments.

For every line the splitter is sure of, real bash (with `ls`, `cat` and `rm` replaced by stubs that
log their name) must run only what the verdict admits: no `rm` unless the blacklist refused the line,
and nothing but `ls`/`cat` when the whitelist allowed it. This is what keeps the splitter's idea of
"inside a quote" from drifting from bash's.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest

from tools.bash_parse import parse_line

FRAGMENTS = [
    "ls", "cat", "rm", " ", " ", " ", ";", "&&", "||", "|", "\n", "'", '"', "\\", "#", "$'", "$(", ")", "(", "`",
    "<<", "x", "\\'", "${", "}", ">", "&", "<", "2>&1", "$", "=", "{", "a", "-rf", "\t", "\\\n", "<<<", "!", "*",
    '$"', '\\"', "if ", "then ", "fi", "do ", "done", "((", "))", "case ", "esac", " in ", "function ", "{ ",
    "; }", ">|", "&>", "|&", ";;", "$((", "[[ ", " ]]", "<(", ">(", "~", "-", "x=rm ", "time ", "exec ",
    "command ", "\\\\", '"ls"', "r\\m", "\r",
]
WHITE = [re.compile(r"^ls\b"), re.compile(r"^cat\b")]
BLACK = [re.compile(r"^rm\b")]
LINES_PER_SEED = 1500


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "bin").mkdir()
    for name in ("ls", "cat", "rm"):
        stub = root / "bin" / name
        stub.write_text('#!/bin/sh\necho "${0##*/}" >> "$LOG"\n')
        stub.chmod(0o755)
    return root


def ran(stubs: Path, line: str) -> list[str]:
    """The stubbed commands bash runs for `line` (it waits for background ones: they hold the pipe)."""
    log = stubs / "log"
    log.write_text("")
    subprocess.run(["/bin/bash", "-c", line], cwd=stubs, env={"PATH": str(stubs / "bin"), "LOG": str(log)},
                   capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    return log.read_text().split()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sure_verdicts_match_what_bash_runs(stubs: Path, seed: int) -> None:
    rng, checked, wrong = random.Random(seed), 0, []
    for _ in range(LINES_PER_SEED):
        line = rng.choice(["ls ", "cat ", ""]) + "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14)))
        a = parse_line(line)
        if not a.sure:
            continue
        allowed = bool(a.segments) and all(any(p.search(s) for p in WHITE) for s in a.segments)
        refused = any(p.search(v) for p in BLACK for v in a.views)
        if refused and not allowed:
            continue  # nothing to check: it never runs without a human
        checked += 1
        names = ran(stubs, line)
        if "rm" in names or (allowed and set(names) - {"ls", "cat"}):
            wrong.append((line, a.segments, names))
    assert not wrong, wrong[:5]
    assert checked > LINES_PER_SEED // 10  # the sample really exercised bash


@pytest.mark.parametrize("line", [
    "ls $'\\'' ; rm x ; ls '\\'", "ls #'\nrm x\n#'", "cat <<ls\nls '\nls\nrm x\ncat <<ls\n'\nls",
    "ls \\\n#'\nrm x\n#'", "ls `echo '`; rm x; echo '`'", "ls ${x:-'}'}; rm x; ls '}'", "cat &&<()r\\m x",
])
def test_lines_bash_reads_otherwise_are_doubtful(stubs: Path, line: str) -> None:
    assert "rm" in ran(stubs, line)  # bash does run rm here ...
    a = parse_line(line)
    assert not a.sure or any(p.search(v) for p in BLACK for v in a.views)  # ... and the splitter knows it
