"""Run every benchmark: `python -m bench.run [--quick] [--stock]` (what `make bench` runs).

`--stock` runs them with `engine.stock = true` (ANIA_ENGINE__STOCK=1: LangGraph's own message reducer,
saver and serializer and the plain ChatOpenAI instead of Ania's copies of their internals), so "ours" is
the stock path; the README's performance section shows both modes. A benchmark run alone takes the same
environment variable; `--both` gives bench_loop a third side, Ania in the stock mode, in the same runs.

Flags are passed to each benchmark (each ignores the ones it does not know): `--quick`, and e.g.
`--turns 10 --sizes 2,20` for bench_loop, `--calls 500` for bench_gate, `--members 10 --runs 30` for
bench_team, `--tasks 1000 --due 200 --window 20` for bench_clock, `--ops-turns 300 --ops-long 1000` for
bench_ops, `--recall-sizes 1000,10000 --recall-turns 40` for bench_recall, `--panel-rows 100000
--panel-sessions 10000` for bench_panel_data, `--large` (adds 100,000 chunks, long to build) and
`--ingest-rounds 5` for bench_knowledge_scale, `--queue-jobs 2000 --queue-keys 50 --queue-repeats 3` for bench_queue.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import time
from collections.abc import Sequence

BENCHES = ("bench.bench_loop", "bench.bench_storage", "bench.bench_postgres", "bench.bench_queue", "bench.bench_gate",
           "bench.bench_throughput", "bench.bench_startup", "bench.bench_team", "bench.bench_clock", "bench.bench_ops")
OPTIONAL = ("bench.bench_mcp", "bench.bench_knowledge", "bench.bench_knowledge_scale", "bench.bench_recall",
            "bench.bench_onebot", "bench.bench_panel", "bench.bench_panel_data", "bench.bench_store",
            "bench.bench_signals", "bench.bench_cluster")


def _modules() -> list[str]:
    names = list(BENCHES)
    for name in OPTIONAL:
        if importlib.util.find_spec(name) is not None:
            names.append(name)
    return names


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--stock" in argv:
        argv.remove("--stock")
        os.environ["ANIA_ENGINE__STOCK"] = "1"  # every Settings() of the benches reads it
        print("== engine.stock = true: the libraries' own code (ours is the stock path)\n")
    failed = []
    for name in _modules():
        module = importlib.import_module(name)
        entry = getattr(module, "main", None)
        if entry is None:
            print(f"== {name}: no main(), skipped\n")
            continue
        print(f"== {name}")
        t0 = time.perf_counter()
        try:
            entry(argv) if inspect.signature(entry).parameters else entry()
        except Exception as e:
            failed.append(name)
            print(f"{name} failed: {type(e).__name__}: {e}")
        print(f"({time.perf_counter() - t0:.1f} s)\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
