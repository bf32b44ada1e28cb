"""Start-up costs a person waits for at the terminal: `python -m bench.bench_startup [--quick] [--runs N]`.

Absolute wall times of real `ania` processes (the installed `.venv/bin/ania` entry point), median
[min-max] over N runs, next to the bare interpreter's start as the floor nothing can beat:

- `ania --help` and `ania --version` (argparse only; no project module is imported);
- a missing setting (settings are read and checked before the engine is imported);
- `ania sessions list` on a stored session (opens the checkpointer, starts nothing else);
- time to first reply: `ania chat` started with "hi" on stdin, against the scripted model on 127.0.0.1,
  until the reply's line arrives on stdout (imports, settings, services, the graph, one model call).

These are start-up costs, not engine ratios; the engine against its peer is bench_loop and bench_gate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ania.fakes.openai_server import ScriptedOpenAI
from bench.common import spread, table

ANIA = Path(sys.executable).with_name("ania")


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    env.update({"ANIA_CONFIG_DIR": str(root / "config"), "ANIA_DATA_DIR": str(root / "data"), **extra})
    return env


def _timed(cmd: Sequence[str], env: dict[str, str], cwd: Path, stdin: str = "") -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    return time.perf_counter() - t0


def _first_reply(env: dict[str, str], cwd: Path) -> float:
    """From spawning `ania chat` to its first line on stdout (the reply to "hi")."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(ANIA), "chat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("hi\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(60)
    assert line.startswith("echo: hi"), line
    return elapsed


def run(runs: int) -> str:
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI() as llm:
        root = Path(tmp)
        (root / "config").mkdir()
        env = _env(root)
        chat_env = _env(root, ANIA_LLM__BASE_URL=llm.base_url, ANIA_LLM__MODEL="scripted-model",
                        ANIA_LLM__MAX_RETRIES="0")
        _timed([str(ANIA), "chat"], chat_env, root, "warm up\n")  # page cache, .pyc files, a stored session
        cases = {
            "python -c pass (floor)": lambda: _timed([sys.executable, "-c", "pass"], env, root),
            "ania --help": lambda: _timed([str(ANIA), "--help"], env, root),
            "ania --version": lambda: _timed([str(ANIA), "--version"], env, root),
            "ania chat, missing setting": lambda: _timed([str(ANIA), "chat"], env, root),
            "ania sessions list": lambda: _timed([str(ANIA), "sessions", "list"], env, root),
            "ania chat, time to first reply": lambda: _first_reply(chat_env, root),
        }
        rows = []
        for name, case in cases.items():
            times = [case() for _ in range(runs)]
            rows.append([name, spread(times)])
    return table(["start-up (wall time, ms)", f"median [min-max] of {runs}"], rows)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="bench.bench_startup", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 runs per case")
    p.add_argument("--runs", type=int, default=7, help="runs per case (default 7)")
    args, _ = p.parse_known_args(argv)
    print(run(3 if args.quick else max(1, min(args.runs, 50))))


if __name__ == "__main__":
    main()
