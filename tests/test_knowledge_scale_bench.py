"""The knowledge scale benchmark's command line: `--help` prints its usage and exits 0 (it used to start the
whole benchmark), a bad `--sizes` is a clear error, flags of other benchmarks are ignored, and a tiny run
prints its table (the bench's plumbing, probes in their own processes included; no timing asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.bench_knowledge_scale import parse_args

ROOT = Path(__file__).resolve().parents[1]


def bench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench.bench_knowledge_scale", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_help_prints_the_usage_and_exits_0() -> None:
    done = bench("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m bench.bench_knowledge_scale")
    for flag in ("--quick", "--large", "--sizes"):
        assert flag in done.stdout
    assert "--probe" not in done.stdout  # internal: how the bench starts its own probes
    assert "Keyword search at scale" not in done.stdout  # nothing was run


def test_a_bad_size_list_is_a_clear_error() -> None:
    done = bench("--sizes", "10k")
    assert done.returncode == 2
    assert "not a list of chunk counts: '10k'" in done.stderr
    assert "Traceback" not in done.stderr
    assert "chunk counts are positive" in bench("--sizes", "0").stderr
    assert "rounds are a positive whole number: '0'" in bench("--ingest-rounds", "0").stderr


def test_the_sizes_each_flag_picks_and_other_benches_flags_ignored() -> None:
    assert parse_args([]).sizes == [1000, 10_000]
    assert parse_args(["--quick"]).sizes == [1000]
    assert parse_args(["--large"]).sizes == [1000, 10_000, 100_000]
    assert parse_args(["--large", "--sizes", "2000,100_000"]).sizes == [2000, 100_000]
    assert parse_args(["--turns", "10", "--recall-sizes", "5", "--quick"]).sizes == [1000]


def test_a_tiny_run_prints_its_table() -> None:
    done = bench("--sizes", "30", "--ingest-rounds", "2", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Keyword search at scale" in done.stdout
    rows = [line for line in done.stdout.splitlines() if " zh " in f" {line} " or " en " in f" {line} "]
    assert len(rows) == 2, done.stdout
