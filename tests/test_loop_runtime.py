"""The bot's runtime (ania/loop.py) in a real child process: the event loop it picks, the collector's
settings while the bot runs and after, the startup heap frozen once the engine is up, and the opt-outs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import asyncio, gc, json
from ania.loop import run, settle_heap
before = list(gc.get_threshold())
async def main():
    inside = list(gc.get_threshold())
    settle_heap()
    return {"loop": type(asyncio.get_running_loop()).__module__, "inside": inside,
            "frozen": gc.get_freeze_count()}
out = run(main())
out["after"], out["before"] = list(gc.get_threshold()), before
print(json.dumps(out))
"""


def probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANIA_")}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env={**clean, **env}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_bot_runs_with_the_tuned_collector_and_a_frozen_startup_heap() -> None:
    from ania.loop import GC_THRESHOLDS

    out = probe()
    assert out["inside"] == list(GC_THRESHOLDS)
    assert out["frozen"] > 1000  # modules, classes and whatever the startup built
    assert out["after"] == out["before"]  # CPython's own again once the bot's loop has ended


def test_ania_gc_default_keeps_cpythons_collector() -> None:
    out = probe(ANIA_GC="default")
    assert out["inside"] == out["before"]
    assert out["frozen"] == 0


def test_the_loop_is_uvloop_where_installed_and_asyncio_on_request() -> None:
    pytest.importorskip("uvloop")
    assert probe()["loop"] == "uvloop"
    assert probe(ANIA_EVENT_LOOP="asyncio")["loop"] == "asyncio.unix_events"
